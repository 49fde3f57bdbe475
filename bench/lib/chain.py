"""Set-up shared by the curation chain benches."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path


def warm_toxicity_cache(trees: Iterable[Path]) -> None:
    """A tree that scores toxicity from cached linear weights builds the cache once, untimed (the one-off
    sklearn load, ~3-4 CPU-s, that any later process on the machine skips)."""
    for tree in trees:
        if (tree / "curate/steps/toxicity_linear.py").exists():
            subprocess.run([sys.executable, "-c", "from curate.steps.toxicity_linear import load_packaged; "
                            "load_packaged()"], cwd=tree, env={**os.environ, "PYTHONPATH": str(tree)}, check=True)
