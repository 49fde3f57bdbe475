"""Real SIGKILLs of ``corpusmix train`` under torchrun (2 ranks, gloo, FSDP2), then resumption.

Two scenarios, both compared with one uninterrupted 2-rank run (every step's loss and gradient norm
must be bitwise equal; the log keeps the later record of a step that was redone):

- the whole job (CLI, torchrun agent and both ranks) is killed with SIGKILL to its process group,
  once at a seeded random step and once while a checkpoint is being written (``.tmp-step-N``
  present, ``step-N`` not yet renamed), and started again by hand each time;
- elasticity: torchrun with ``--max-restarts`` runs the job; one rank is SIGKILLed at a random step
  and, after the agent restarted the workers, the other rank is SIGKILLed in the middle of a
  checkpoint write. The agent restarts the workers, which resume from the last COMPLETE checkpoint,
  and the job finishes with exit code 0 without a human.

A tiny model (2 layers, width 32, 64-token vocabulary) and a few dozen steps keep this short; the
kill points are steered by what the job writes (its JSONL step log and checkpoint folders); in the
runs aimed at a checkpoint write, ``CORPUSMIX_PHASE_HOLD=checkpoint=0.5`` keeps each write open for
half a second before its rename, so the kill lands inside it however busy the machine is.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

ROOT = Path(__file__).resolve().parents[2]
STEPS = 24
CKPT_EVERY = 4
SEED = 20261201
ARGS = ["--model", "tiny", "--d-model", "32", "--n-layers", "2", "--n-heads", "2", "--vocab-size", "64",
        "--seq-len", "32", "--micro-batch-size", "2", "--steps", str(STEPS), "--warmup-steps", "3",
        "--ckpt-every", str(CKPT_EVERY), "--keep-checkpoints", "0", "--eval-every", "0", "--dvclive", "false",
        "--progress", "false", "--threads", "1"]
TIMEOUT = 600
HOLD_S = 0.5  # each checkpoint of a run aimed at mid-write pauses this long before its rename

pytestmark = pytest.mark.slow


def _env(hold: float = 0.0) -> dict[str, str]:
    """``hold`` > 0: each checkpoint pauses that long between its write and its rename
    (``CORPUSMIX_PHASE_HOLD``), so a kill aimed at the write cannot arrive after it on a busy machine."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    if hold > 0:
        env["CORPUSMIX_PHASE_HOLD"] = f"checkpoint={hold}"
    return env


def _params(tmp: Path) -> Path:
    p = tmp / "params.yaml"
    p.write_text("train: {}\n")
    return p


def _cli(params: Path, out: Path) -> list[str]:
    """The user's command: ``corpusmix train --nproc 2`` (it relaunches itself under torchrun)."""
    return [sys.executable, "-m", "corpusmix.cli", "train", "--params", str(params), "--nproc", "2",
            *ARGS, "--out-dir", str(out)]


def _torchrun(params: Path, out: Path, max_restarts: int) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
            f"--max-restarts={max_restarts}", "-m", "corpusmix.cli", "train", "--params", str(params),
            *ARGS, "--out-dir", str(out)]


def _log(out: Path) -> dict[int, tuple[float, float]]:
    """step -> (loss, grad_norm); a step logged twice (redone after a resume) keeps its later record."""
    got: dict[int, tuple[float, float]] = {}
    f = out / "train_log.jsonl"
    for line in f.read_text().splitlines() if f.exists() else []:
        r = json.loads(line)  # a torn line would be a bug of the logger: it must not happen
        if "event" not in r:
            got[r["step"]] = (r["loss"], r["grad_norm"])
    return got


def _logged_steps(out: Path) -> int:
    f = out / "train_log.jsonl"
    try:
        return f.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def _wait(cond, proc: subprocess.Popen, what: str, poll: float = 0.02) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not cond():
        if proc.poll() is not None:
            raise AssertionError(f"the job ended (rc {proc.returncode}) before {what}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(poll)


def _max_step(out: Path) -> int:
    return max(_log(out), default=-1)


def _tmp_folders(out: Path) -> set[tuple[str, int, int]]:
    """(name, inode, mtime in ns) of every ``.tmp-step-N`` folder now present."""
    found = set()
    try:
        with os.scandir(out / "checkpoints") as it:
            for e in it:
                if e.name.startswith(".tmp-step-"):
                    try:
                        found.add((e.name, e.inode(), e.stat().st_mtime_ns))
                    except FileNotFoundError:  # renamed or removed meanwhile
                        pass
    except FileNotFoundError:
        pass
    return found


def _fs_now(folder: Path) -> int:
    """The file system's clock now: the mtime of a file touched in ``folder`` (a file written later
    is stamped after it; the kernel stamps files from a coarser clock than ``time.time_ns``)."""
    marker = folder / ".kill-test-clock"
    marker.touch()
    try:
        return marker.stat().st_mtime_ns
    finally:
        marker.unlink()


def _written_since(folder: Path, since_ns: int) -> bool:
    """Does ``folder`` hold a file written after ``since_ns`` (file system clock)?"""
    try:
        with os.scandir(folder) as it:
            for e in it:
                try:
                    if e.stat().st_mtime_ns > since_ns:
                        return True
                except FileNotFoundError:  # removed meanwhile
                    pass
    except FileNotFoundError:
        pass
    return False


def _tmp_checkpoint(out: Path, after: int, leftovers: frozenset = frozenset(), since_ns: int = 0) -> Path | None:
    """A checkpoint being written for a step past ``after``, not a leftover of an earlier kill: a
    folder in ``leftovers`` (name, inode, mtime) is one; the job removes and recreates a leftover of
    the step it saves, so the same name with another inode or mtime may be a fresh write, or the
    leftover while it is being removed (its mtime changes as its files go): a fresh write is one
    holding a file written after ``since_ns``."""
    tmp = [f[0] for f in _tmp_folders(out)
           if int(f[0].removeprefix(".tmp-step-")) > after and f not in leftovers
           and _written_since(out / "checkpoints" / f[0], since_ns)]
    return out / "checkpoints" / tmp[0] if tmp else None


def _wait_for_checkpoint_write(out: Path, after: int, proc: subprocess.Popen,
                               leftovers: frozenset = frozenset(), since_ns: int = 0) -> Path:
    """Poll (1 ms) until a checkpoint past step ``after`` is being written (a file in it written after
    ``since_ns``); returns its .tmp folder."""
    deadline = time.monotonic() + TIMEOUT
    while (tmp := _tmp_checkpoint(out, after, leftovers, since_ns)) is None:
        if proc.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"no checkpoint write past step {after} seen (rc {proc.poll()})")
        time.sleep(0.001)
    return tmp


def _workers(agent: int) -> dict[int, psutil.Process]:
    """Rank -> worker process of a torchrun agent (read from each child's LOCAL_RANK)."""
    found = {}
    for p in psutil.Process(agent).children(recursive=True):
        try:
            rank = p.environ().get("LOCAL_RANK")
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        if rank is not None and p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
            found[int(rank)] = p
    return found


def _kill_job(proc: subprocess.Popen) -> list[int]:
    """SIGKILL the job's process group; returns the pids of its processes (CLI, agent, workers) still
    alive 10 s later. torchrun starts the workers in sessions of their own, outside the group: they
    must die with their agent, not train on beside the next run."""
    family = [proc.pid] + [c.pid for c in psutil.Process(proc.pid).children(recursive=True)]
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 10
    alive = family
    while alive and time.monotonic() < deadline:
        alive = [p for p in alive if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
        time.sleep(0.05)
    return alive


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> dict[int, tuple[float, float]]:
    tmp = tmp_path_factory.mktemp("ref")
    out = tmp / "run"
    proc = subprocess.run(_torchrun(_params(tmp), out, 0), cwd=tmp, env=_env(), capture_output=True, text=True,
                          timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ref = _log(out)
    assert sorted(ref) == list(range(STEPS))
    return ref


def test_sigkill_of_the_whole_job_then_restart_equals_uninterrupted(reference, tmp_path: Path) -> None:
    params, out = _params(tmp_path), tmp_path / "run"
    rng = random.Random(SEED)
    kills = []
    # kill 1: at a random step; kill 2: in the middle of a checkpoint write
    for mode in ("step", "checkpoint"):
        leftovers = frozenset(_tmp_folders(out))  # a .tmp folder the first kill left is not a write of this run
        since = _fs_now(tmp_path)  # a file of this run's checkpoint write is stamped after this
        proc = subprocess.Popen(_cli(params, out), cwd=tmp_path, env=_env(HOLD_S if mode == "checkpoint" else 0.0),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            if mode == "step":
                at = rng.randint(CKPT_EVERY + 1, STEPS // 2)
                _wait(lambda at=at: _logged_steps(out) >= at, proc, f"step {at}")
                survivors = _kill_job(proc)
                kills.append({"mode": mode, "after_logged_steps": _logged_steps(out), "survivors": survivors})
            else:
                start = _max_step(out)
                # only a checkpoint this run writes (not one left by the first kill)
                tmp = _wait_for_checkpoint_write(out, start, proc, leftovers, since)
                survivors = _kill_job(proc)
                step = tmp.name.removeprefix(".tmp-step-")
                # judged after every process of the job is gone: nothing can rename it later
                landed = tmp.exists() and not (out / "checkpoints" / f"step-{step}").exists()
                kills.append({"mode": mode, "checkpoint": step, "mid_write": landed, "survivors": survivors})
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    print(json.dumps(kills))
    assert not kills[0]["survivors"] and not kills[1]["survivors"], f"processes outlived the kill: {kills}"
    assert kills[1]["mid_write"], f"the second kill missed the checkpoint write: {kills}"
    proc = subprocess.run(_cli(params, out), cwd=tmp_path, env=_env(), capture_output=True, text=True,
                          timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "resumed" in proc.stderr
    got = _log(out)
    assert got == reference, {s: (got.get(s), reference[s]) for s in reference if got.get(s) != reference[s]}
    # the half-written checkpoint was replaced by a complete one, nothing partial is left
    assert not list((out / "checkpoints").glob(".tmp-step-*"))
    assert all((p / "COMPLETE").is_file() for p in (out / "checkpoints").glob("step-*"))


def test_torchrun_max_restarts_resumes_after_a_rank_dies(reference, tmp_path: Path) -> None:
    params, out = _params(tmp_path), tmp_path / "run"
    rng = random.Random(SEED + 1)
    log = tmp_path / "torchrun.log"  # a file, not a pipe: a full pipe would block the job
    with open(log, "w") as fh:
        proc = subprocess.Popen(_torchrun(params, out, 3), cwd=tmp_path, env=_env(HOLD_S), stdout=fh,
                                stderr=subprocess.STDOUT, start_new_session=True)
    kills = []
    try:
        # rank 1 dies at a random step
        at = rng.randint(CKPT_EVERY + 1, STEPS // 2)
        _wait(lambda: _logged_steps(out) >= at, proc, f"step {at}")
        first = _workers(proc.pid)
        assert sorted(first) == [0, 1]
        first[1].send_signal(signal.SIGKILL)
        kills.append({"rank": 1, "after_logged_steps": _logged_steps(out)})
        # the agent restarts both workers; then rank 0 dies in the middle of a checkpoint write
        _wait(lambda: (w := _workers(proc.pid)) and sorted(w) == [0, 1]
              and not ({p.pid for p in w.values()} & {p.pid for p in first.values()}), proc, "the restart")
        second = _workers(proc.pid)
        # the restarted workers have resumed (rank 0 said so) before the second kill is aimed: a
        # .tmp folder the first kill left behind is not the write to kill in
        _wait(lambda: log.read_text(errors="replace").count('"msg": "resumed"') >= 1, proc, "the first resume")
        leftovers = frozenset(_tmp_folders(out))
        since = _fs_now(tmp_path)
        seen = _max_step(out)
        tmp = _wait_for_checkpoint_write(out, seen, proc, leftovers, since)
        second[0].send_signal(signal.SIGKILL)
        second[0].wait(10)
        step = tmp.name.removeprefix(".tmp-step-")
        # rank 0 alone renames a finished checkpoint: with it dead, step-N must not exist
        kills.append({"rank": 0, "checkpoint": step,
                      "mid_write": not (out / "checkpoints" / f"step-{step}").exists()})
        proc.wait(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    print(json.dumps(kills))
    stdout = log.read_text(errors="replace")
    assert proc.returncode == 0, stdout[-3000:]
    assert kills[1]["mid_write"], f"the second kill missed the checkpoint write: {kills}"
    assert stdout.count('"msg": "resumed"') >= 2, stdout[-3000:]  # once per restart, from rank 0
    got = _log(out)
    assert got == reference, {s: (got.get(s), reference[s]) for s in reference if got.get(s) != reference[s]}
    assert not list((out / "checkpoints").glob(".tmp-step-*"))
