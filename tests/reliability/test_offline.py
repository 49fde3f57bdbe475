"""``scripts/offline.sh`` (used by ``make test`` / ``make demo``) enforces the offline run.

Where a network namespace can be made, the command inside sees only loopback and cannot reach
another address; where none can be made (``unshare`` failing, simulated by an ``unshare`` that
exits 1 placed first on PATH), the script fails with the fix in its message unless the explicit
opt-out ``CORPUSMIX_ALLOW_NETWORK=1`` is set.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "offline.sh"

PROBE = ("import socket, sys\n"
         "s = socket.socket(); s.settimeout(3)\n"
         "try:\n"
         "    s.connect(('192.0.2.1', 80))\n"  # TEST-NET-1: unroutable; inside the namespace: no route
         "except OSError as exc:\n"
         "    print('blocked', exc.errno)\n"
         "    sys.exit(0)\n"
         "print('connected'); sys.exit(1)\n")


def _namespaces_work() -> bool:
    if shutil.which("unshare") is None:
        return False
    cmd = ["unshare", "-n", "true"] if os.geteuid() == 0 else ["unshare", "-rn", "true"]
    return subprocess.run(cmd, capture_output=True).returncode == 0


def test_inside_only_loopback_and_no_route(tmp_path: Path) -> None:
    if not _namespaces_work():
        pytest.skip("no network namespaces on this machine (the next test covers the refusal)")
    proc = subprocess.run([str(SCRIPT), sys.executable, "-c", PROBE], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0 and proc.stdout.startswith("blocked"), proc.stdout + proc.stderr
    links = subprocess.run([str(SCRIPT), "cat", "/proc/net/dev"], capture_output=True, text=True, timeout=60)
    names = [line.split(":")[0].strip() for line in links.stdout.splitlines()[2:]]
    assert names == ["lo"], links.stdout


def test_no_namespace_is_an_error_unless_opted_out(tmp_path: Path) -> None:
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "unshare").write_text("#!/bin/sh\necho 'unshare: unshare failed: Operation not permitted' >&2\nexit 1\n")
    (fake / "unshare").chmod(0o755)
    env = dict(os.environ, PATH=f"{fake}:{os.environ['PATH']}")
    env.pop("CORPUSMIX_ALLOW_NETWORK", None)
    proc = subprocess.run([str(SCRIPT), "echo", "ran"], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 3 and "ran" not in proc.stdout
    msg = proc.stderr.strip()
    assert len(msg.splitlines()) == 1 and "CORPUSMIX_ALLOW_NETWORK=1" in msg and "ALLOW_NETWORK=1" in msg
    opted = subprocess.run([str(SCRIPT), "echo", "ran"], capture_output=True, text=True, timeout=60,
                           env={**env, "CORPUSMIX_ALLOW_NETWORK": "1"})
    assert opted.returncode == 0 and opted.stdout.strip() == "ran" and "WARNING" in opted.stderr
    # the Makefile passes its opt-out variable through to the script
    make = (ROOT / "Makefile").read_text()
    runs = [line for line in make.splitlines() if "scripts/offline.sh" in line and not line.startswith("#")]
    assert len(runs) >= 2 and all("CORPUSMIX_ALLOW_NETWORK=$(ALLOW_NETWORK) scripts/offline.sh" in r for r in runs)
