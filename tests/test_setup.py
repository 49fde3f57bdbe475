"""What ``make setup`` installs (requirements/*.lock, scripts/install.sh) and the committed dvc.lock.

- The CPU lock pins every dependency of pyproject.toml (and of the spark and dev extras) with hashes,
  takes torch's CPU build and no CUDA package: resolving the setup on a CPU machine installs no
  ``nvidia-*`` runtime and no triton (``nvidia-ml-py``, dvclive's pure-Python NVML binding, is the one
  package of that name, and holds no CUDA library). The CUDA lock takes torch's CUDA build.
- install.sh picks the lock that fits, and on a platform without one says so and uses the ranges.
- The committed dvc.lock was produced from the code and params in the tree (``dvc status``: no stage
  has a changed code dependency or parameter), so a fresh clone's ``dvc repro`` reproduces it.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from corpusmix.environment import lock_pins, norm_name

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

ROOT = Path(__file__).resolve().parents[1]
CPU = ROOT / "requirements" / "cpu-py311.lock"
CUDA = ROOT / "requirements" / "cuda-py311.lock"


def _requirements() -> set[str]:
    proj = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = [*proj["dependencies"], *proj["optional-dependencies"]["spark"], *proj["optional-dependencies"]["dev"]]
    return {norm_name(re.match(r"[A-Za-z0-9._-]+", r).group(0)) for r in reqs}


def test_the_cpu_lock_pins_everything_with_hashes_and_no_cuda():
    pins = lock_pins(CPU)
    assert not _requirements() - set(pins), "pyproject dependencies missing from the CPU lock"
    assert pins["torch"].endswith("+cpu")
    cuda = sorted(n for n in pins if (n.startswith(("nvidia-", "cuda-")) and n != "nvidia-ml-py") or n == "triton")
    assert not cuda, f"CUDA packages in the CPU lock: {cuda}"
    blocks = re.split(r"\n(?=[A-Za-z0-9])", CPU.read_text().split("\n", 3)[3])
    unhashed = [b.split("==")[0] for b in blocks if "==" in b and "--hash=sha256:" not in b]
    assert not unhashed and len(blocks) >= len(pins)


def test_the_cuda_lock_takes_the_cuda_build():
    pins = lock_pins(CUDA)
    assert not _requirements() - set(pins)
    assert "+" not in pins["torch"] and "nvidia-cublas" in pins
    assert pins["torch"] == lock_pins(CPU)["torch"].split("+")[0]


def _install(env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "scripts/install.sh", sys.executable], cwd=ROOT, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "DRY_RUN": "1", "TORCH": "cpu", **env}, timeout=60)


def test_setup_takes_the_lock_that_fits_or_says_why_not(tmp_path):
    ok = _install({})
    if sys.version_info[:2] == (3, 11):
        assert ok.returncode == 0 and "pinned packages from requirements/cpu-py311.lock (hash-checked)" in ok.stdout
        assert "torch==2.13.0+cpu from https://download.pytorch.org/whl/cpu" in ok.stdout
    miss = _install({"LOCK_DIR": str(tmp_path)})  # as on a Python or platform without a lock
    assert miss.returncode == 0 and "WARNING: no lock fits this machine" in miss.stderr
    assert "from the ranges of pyproject.toml" in miss.stdout
    bad = _install({"LOCK": str(tmp_path / "none.lock")})
    assert bad.returncode == 2 and "no such file" in bad.stderr


def test_the_committed_dvc_lock_matches_the_code():
    """No stage of dvc.lock has a changed code dependency or parameter (outputs may be absent: a fresh
    clone). Regenerate with `dvc repro` and commit dvc.lock when this fails."""
    proc = subprocess.run([sys.executable, "-m", "dvc", "status", "--json", "dvc.yaml"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    if proc.returncode != 0 and "Unable to acquire lock" in proc.stderr:
        pytest.skip("another dvc command holds the repository lock")
    assert proc.returncode == 0, proc.stderr[-2000:]
    tracked = set(subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True).stdout.split())
    stale = []
    for stage, changes in json.loads(proc.stdout or "{}").items():
        for change in changes:
            if not isinstance(change, dict):
                stale.append(f"{stage}: {change}")  # e.g. "changed command"
                continue
            for path, what in (change.get("changed deps") or {}).items():
                if what != "deleted" and (path in tracked or any(t.startswith(path.rstrip("/") + "/")
                                                                  for t in tracked)):
                    stale.append(f"{stage}: {path} {what}")
            if change.get("changed params"):
                stale.append(f"{stage}: params {change['changed params']}")
    assert not stale, f"dvc.lock does not match the code: {stale}"
