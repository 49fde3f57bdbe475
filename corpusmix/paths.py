"""Where the optional full corpora live, for tests and benchmarks only (never the pipeline).

``CORPUSMIX_SHARED`` wins; otherwise a ``shared/`` folder next to the repository, then
``/work/shared``. When none exists, tests that need the corpora skip.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def shared_dir() -> Path:
    candidates = [os.environ.get("CORPUSMIX_SHARED"), ROOT.parent / "shared", "/work/shared"]
    for c in candidates:
        if c and (Path(c) / "corpora").is_dir():
            return Path(c)
    return ROOT.parent / "shared"


SHARED_CORPORA = shared_dir() / "corpora"
