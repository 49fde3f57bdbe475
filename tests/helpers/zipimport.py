"""Run Python code against the project shipped as one zip (``spark-submit --py-files``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def run_from_zip(tmp_path: Path, code: str) -> str:
    """Build the project zip in ``tmp_path``, run ``code`` in a fresh interpreter with the zip first
    on ``sys.path`` (as ``sys.argv[1]``; PYTHONPATH cleared) and return its stdout; fails the test
    with the child's stderr when it exits non-zero."""
    from curate.spark.submit import build_zip

    zip_path = build_zip(tmp_path / "corpusmix.zip")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    res = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); " + code,
                          str(zip_path)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    return res.stdout
