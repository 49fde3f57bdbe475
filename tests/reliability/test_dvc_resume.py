"""A killed ``dvc repro`` continues with ``dvc repro``, and two fresh projects hash the same.

A small DVC project in a temporary folder runs the real commands of the pipeline's data stages
(``corpusmix curate run`` -> ``corpusmix tokenize train`` -> ``corpusmix tokenize pools``) on a
slice of the shipped demo corpus. Project A runs ``dvc repro`` uninterrupted. Project B's
``dvc repro`` is killed with SIGKILL (its whole process group, as a crash would) while the curation
stage is running, then ``dvc repro`` is run again: it must finish (DVC clears the dead process's
locks), resume the curation from its work folder, and leave ``dvc status`` clean. Both projects'
``dvc.lock`` files must record the same output hashes for every stage.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.helpers.curate_input import PARAMS, make_input

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

DVC_YAML = """
stages:
  curate:
    cmd: corpusmix curate run --input in --output out/curate
    deps: [in]
    params: [curate, dedup]
    outs: [out/curate/curated, out/curate/drops.parquet]
    metrics:
      - out/curate/stats.json: {cache: false}
  tokenizer:
    cmd: corpusmix tokenize train --curated out/curate/curated --output out/tokenizer/tokenizer.json --vocab-size 300
    deps: [out/curate/curated]
    outs: [out/tokenizer]
  pools:
    cmd: corpusmix tokenize pools --curated out/curate/curated --tokenizer out/tokenizer/tokenizer.json --output out/pools
    deps: [out/curate/curated, out/tokenizer]
    outs: [out/pools]
"""

pytestmark = pytest.mark.slow


def _project(root: Path) -> Path:
    root.mkdir()
    make_input(root)
    # the engine keeps its work folder (the default): it is what a re-run resumes from
    (root / "params.yaml").write_text(PARAMS.replace("    keep_work: false\n", ""))
    (root / "dvc.yaml").write_text(DVC_YAML)
    _dvc(root, "init", "--no-scm", "-q")
    _dvc(root, "config", "core.analytics", "false")
    return root


def _env() -> dict[str, str]:
    return dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", PYTHONPATH=str(ROOT),
                DVC_NO_ANALYTICS="1")


def _dvc(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "dvc"), *args], cwd=cwd, env=_env(), check=check, capture_output=True,
                          text=True)


def _outs(lock: Path) -> dict[str, dict[str, str]]:
    """Output hashes per stage (stats.json too: its timings are in the untracked stats.timing.json)."""
    stages = yaml.safe_load(lock.read_text())["stages"]
    return {name: {o["path"]: o["md5"] for o in st.get("outs", [])} for name, st in stages.items()}


def _stats(root: Path) -> dict:
    doc = json.loads((root / "out" / "curate" / "stats.json").read_text())
    for s in doc["steps"].values():
        s.pop("seconds", None)
    return doc


def test_killed_dvc_repro_continues_and_fresh_projects_hash_the_same(tmp_path: Path) -> None:
    if not (BIN / "dvc").exists():
        pytest.skip("dvc is not installed in this environment")
    a = _project(tmp_path / "a")
    _dvc(a, "repro")
    want = _outs(a / "dvc.lock")
    assert set(want) == {"curate", "tokenizer", "pools"}

    b = _project(tmp_path / "b")
    proc = subprocess.Popen([str(BIN / "dvc"), "repro"], cwd=b, env=_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    marker = b / "out" / "curate" / "work" / "logs" / "a" / "completions"
    deadline = time.monotonic() + 300
    while proc.poll() is None and time.monotonic() < deadline and not (marker.exists() and any(marker.iterdir())):
        time.sleep(0.05)
    killed = proc.poll() is None
    if killed:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert killed, "dvc repro finished before the kill point"
    assert not (b / "out" / "curate" / "stats.json").exists()  # killed inside the curation stage

    again = _dvc(b, "repro", check=False)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "already completed" in again.stdout + again.stderr  # datatrove skipped the finished task
    status = _dvc(b, "status")
    assert "up to date" in status.stdout, status.stdout
    assert _outs(b / "dvc.lock") == want
    assert _stats(b) == _stats(a)
