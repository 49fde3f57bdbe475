"""Where the optional full corpora live, for tests and benchmarks only (never the pipeline).

``CORPUSMIX_SHARED`` wins (set it to a folder without ``corpora/``, e.g. ``/nonexistent``, to
hide them); otherwise a ``shared/`` folder next to the repository. The corpora only ADD coverage:
every test runs on the shipped ``data/demo/`` without them, and benchmarks that need more text
than the demo say so.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "data" / "demo"


def shared_dir() -> Path:
    env = os.environ.get("CORPUSMIX_SHARED")
    if env is not None:  # an explicit setting is final, also when it names nothing (hides the corpora)
        return Path(env)
    return ROOT.parent / "shared"


SHARED_CORPORA = shared_dir() / "corpora"


def have_shared_corpora() -> bool:
    return SHARED_CORPORA.is_dir()
