"""Real SIGKILLs of ``corpusmix pack`` in the middle of writing a shard, then a re-run.

The pools (docs/formats.md) hold lognormal-length documents whose tokens are a running counter, so
that any mixed-up or half-written row would change the bytes. An uninterrupted run is the
reference. Each trial starts the CLI in its own process group and SIGKILLs it while a shard's temp
file (``.shard-NNNNN.arrow.tmp``) exists — the write is in progress — at a seeded random shard
(``CORPUSMIX_PHASE_HOLD`` keeps each shard's temp file 0.3 s before its rename, so the kill cannot
arrive after it on a busy machine); the
manifest left behind must list only complete shards whose sha256 matches, and the re-run must give
the reference's manifest and byte-identical shards, without rewriting the shards already listed.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
SEED = 20261201
TRIALS = 2
TIMEOUT = 300
HOLD_S = 0.3  # CORPUSMIX_PHASE_HOLD: seconds each shard of a killed run waits before its rename

pytestmark = pytest.mark.slow


def _write_pools(root: Path) -> Path:
    rng = np.random.default_rng(SEED)
    root.mkdir(parents=True)
    nxt, domains = 3, {}
    for d, n in (("a", 6000), ("b", 3000), ("c", 1500)):
        lens = (rng.lognormal(5.5, 1.0, size=n).astype(np.int64) + 2)
        total = int(lens.sum())
        ((np.arange(nxt, nxt + total, dtype=np.uint64) % 60000) + 3).astype(np.uint32).tofile(root / f"{d}.bin")
        np.save(root / f"{d}.idx.npy", np.concatenate([[0], np.cumsum(lens)]).astype(np.int64))
        nxt += total
        domains[d] = {"tokens": total, "docs": n, "val_docs": 0}
    (root / "pools.json").write_text(json.dumps({
        "version": 1, "tokenizer_sha256": "cd" * 32, "vocab_size": 60003, "dtype": "uint32", "bos_id": 0,
        "eos_id": 1, "pad_id": 2, "val_fraction": 0.0, "domains": domains}))
    return root


def _cmd(tmp: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "corpusmix.cli", "pack", "--params", str(tmp / "params.yaml"), "--pools",
            str(tmp / "pools"), "--mixture", str(tmp / "mixture.json"), "--tokens", "4e6", "--seq-len", "1024",
            "--shard-max-bytes", "1500000", "--output", str(out)]


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT))


def _shards(out: Path) -> dict[str, str]:
    return {f.name: hashlib.sha256(f.read_bytes()).hexdigest() for f in sorted(out.glob("shard-*.arrow"))}


def test_sigkill_mid_shard_then_rerun_is_byte_identical(tmp_path: Path) -> None:
    _write_pools(tmp_path / "pools")
    (tmp_path / "params.yaml").write_text("pack: {}\n")
    (tmp_path / "mixture.json").write_text(json.dumps({"weights": {"a": 0.5, "b": 0.3, "c": 0.2},
                                                      "method": "manual"}))
    ref = tmp_path / "ref"
    subprocess.run(_cmd(tmp_path, ref), cwd=tmp_path, env=_env(), check=True, capture_output=True, timeout=TIMEOUT)
    want = json.loads((ref / "manifest.json").read_text())
    n = len(want["shards"])
    assert want["complete"] and n >= 6
    rng = random.Random(SEED)
    for trial in range(TRIALS):
        out = tmp_path / f"trial{trial}"
        victim = rng.randrange(1, n - 1)  # a shard in the middle: some are done, some are not
        tmp_file = out / f".shard-{victim:05d}.arrow.tmp"
        # each shard pauses between its write and its rename: the kill lands mid-shard on a busy machine too
        env = dict(_env(), CORPUSMIX_PHASE_HOLD=f"pack shard={HOLD_S}")
        proc = subprocess.Popen(_cmd(tmp_path, out), cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + TIMEOUT
        while not tmp_file.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.0005)
        assert proc.poll() is None, f"pack ended before shard {victim} was being written"
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        # killed mid-shard: the temp file is there, the shard itself is not, and nothing partial is listed
        assert tmp_file.exists() and not (out / f"shard-{victim:05d}.arrow").exists()
        left = json.loads((out / "manifest.json").read_text()) if (out / "manifest.json").exists() else {"shards": []}
        assert not left.get("complete", False)
        listed = [s["file"] for s in left["shards"]]
        assert listed == [f"shard-{k:05d}.arrow" for k in range(len(listed))] and len(listed) <= victim
        for s in left["shards"]:
            assert hashlib.sha256((out / s["file"]).read_bytes()).hexdigest() == s["sha256"] == \
                want["shards"][int(s["file"][6:11])]["sha256"]
        before = {s["file"]: os.stat(out / s["file"]).st_mtime_ns for s in left["shards"]}
        subprocess.run(_cmd(tmp_path, out), cwd=tmp_path, env=_env(), check=True, capture_output=True,
                       timeout=TIMEOUT)
        got = json.loads((out / "manifest.json").read_text())
        assert got == want
        assert _shards(out) == _shards(ref)
        assert not list(out.glob(".*.tmp"))
        # finished shards were kept, not rewritten
        assert all(os.stat(out / f).st_mtime_ns == t for f, t in before.items())
