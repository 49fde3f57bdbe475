"""Resuming with another world size and worker count: exactly-once rows, the same global order, the
mixture's per-domain plan at every checkpoint, and bad input refused before any step.

What a run consumed is checked against the shards as pyarrow reads them (not through the loader):
each row handed to the trainer carries the manifest row the reader decoded, and its tokens'
fingerprint must equal that row's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from corpusmix.config import ConfigError
from proxytrain.elastic import batch_plan
from proxytrain.shards import ShardBatchSource, ShardError
from proxytrain.train import TrainConfig, train
from proxytrain.train_cli import preflight
from tests.helpers.elastic import fingerprint, recording
from tests.helpers.pack import make_pack

ROOT = Path(__file__).resolve().parents[2]
SHA = "ab" * 32


def shard_rows(shards: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """(domain id, document tokens, token fingerprint) of every manifest row, read with pyarrow."""
    m = json.loads((shards / "manifest.json").read_text())
    t = pa.concat_tables([pa.ipc.open_file(pa.memory_map(str(shards / s["file"]))).read_all() for s in m["shards"]])
    dom = np.array([m["domains"].index(d) for d in t.column("domain").to_pylist()])
    tok = np.array([sum(x) for x in t.column("doc_lens").to_pylist()])
    return dom, tok, fingerprint(np.array(t.column("tokens").to_pylist())), m["domains"]


def global_steps(lines: list[dict]) -> dict[int, list[tuple[int, int]]]:
    """step -> the step's (row, fingerprint) in global stream order (rank r's j-th row is at r + j * world)."""
    by_step: dict[int, dict[int, dict]] = {}
    for r in lines:
        by_step.setdefault(r["step"], {})[r["rank"]] = r
    out = {}
    for step, ranks in by_step.items():
        world = next(iter(ranks.values()))["world"]
        assert sorted(ranks) == list(range(world)), f"step {step}: ranks {sorted(ranks)} of {world}"
        seq = [None] * sum(len(r["rows"]) for r in ranks.values())
        for rank, r in ranks.items():
            for j, (row, fp) in enumerate(zip(r["rows"], r["fp"], strict=True)):
                seq[rank + j * world] = (row, fp)
        out[step] = seq
    return out


# --------------------------------------------------------------------------- in-process


def test_batch_plan_keeps_the_global_batch_and_refuses_uneven_shares():
    assert batch_plan(0, 8, 1, 2).as_dict() == {"global": 16, "micro": 8, "accum": 1, "world": 2}
    # resumed on 4 ranks: the checkpoint's 16 rows, 4 per rank in one micro-batch of at most 8
    assert batch_plan(0, 8, 1, 4, {"world": 2, "global": 16}).as_dict() == {"global": 16, "micro": 4, "accum": 1,
                                                                              "world": 4}
    assert batch_plan(0, 8, 1, 1, {"world": 2, "global": 16}).as_dict() == {"global": 16, "micro": 8, "accum": 2,
                                                                              "world": 1}
    assert batch_plan(36, 8, 1, 3).as_dict() == {"global": 36, "micro": 6, "accum": 2, "world": 3}
    with pytest.raises(ConfigError, match="global_batch_size of 30 rows is not divisible by 4 ranks"):
        batch_plan(30, 8, 1, 4)
    with pytest.raises(ConfigError, match="the checkpoint's global batch of 18 rows is not divisible by 4 ranks"):
        batch_plan(0, 8, 1, 4, {"world": 2, "global": 18})


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> Path:
    return make_pack(tmp_path_factory.mktemp("elastic"), tokens=4_000, shard_max_bytes=12_000)


def _take(srcs: list[ShardBatchSource], steps: int, per_rank: int) -> list[list[int]]:
    """``steps`` global batches from ranks reading ``per_rank`` rows each, in global stream order."""
    out = []
    for _ in range(steps):
        seq = [0] * (per_rank * len(srcs))
        for r, s in enumerate(srcs):
            s.next_batch(per_rank)
            seq[r::len(srcs)] = s.last_rows.tolist()
        out.append(seq)
    return out


def test_resume_with_other_ranks_and_workers_in_process(small):
    """2 ranks (no workers) -> 1 rank (2 workers) -> 3 ranks (1 worker), 12 rows per step, then a
    change of the global batch: the same rows at every step as one uninterrupted reader, no repeat."""
    ref = _take([ShardBatchSource(small, expect_tokenizer_sha256=SHA)], 25, 12)
    ref_stream = [r for step in ref for r in step] + _take([ShardBatchSource(small)], 1, 12 * 25 + 10)[0][12 * 25:]
    got, state = [], None
    for world, workers, steps, g in ((2, 0, 7, 12), (1, 2, 6, 12), (3, 1, 12, 12), (2, 1, 1, 10)):
        srcs = [ShardBatchSource(small, rank=r, world_size=world, num_workers=workers) for r in range(world)]
        for s in srcs:
            if state is not None:
                s.load_state_dict(json.loads(json.dumps(state)))
        got += _take(srcs, steps, g // world)
        states = [s.state_dict() for s in srcs]
        assert len({s["cursor"] for s in states}) == 1  # one global cursor on every rank
        state = states[0]
    assert got[:25] == ref  # the global order, step by step, while the global batch is kept
    stream = [r for step in got for r in step]
    assert stream == ref_stream  # and the same stream after the global batch changed
    rows = ShardBatchSource(small).dataset.reader.rows
    assert len(stream) > rows and sorted(stream[:rows]) == list(range(rows))  # an epoch: each row once
    assert state["epoch"] == 1 and state["cursor"] == len(stream)


def test_a_cursor_of_other_shards_mixture_or_order_is_refused(small, tmp_path):
    src = ShardBatchSource(small, seed=5)
    src.next_batch(4)
    state = src.state_dict()
    other = make_pack(tmp_path / "other", weights={"a": 0.2, "b": 0.5, "c": 0.3}, tokens=20_000,
                      shard_max_bytes=12_000)
    with pytest.raises(ShardError, match="shards of another mixture"):
        ShardBatchSource(other, seed=5).load_state_dict(state)
    with pytest.raises(ShardError, match="mixed order of seed 5.*seed is 6"):
        ShardBatchSource(small, seed=6).load_state_dict(state)
    with pytest.raises(ShardError, match="resume with data_order: mixed"):
        ShardBatchSource(small, order="manifest").load_state_dict(state)
    old = {k: state[k] for k in ("cursor", "world_size", "rank", "manifest", "rows")} | {"version": 1}
    with pytest.raises(ShardError, match="resume with data_order: manifest"):  # a cursor of the earlier loader
        ShardBatchSource(small).load_state_dict(old)
    ShardBatchSource(small, order="manifest").load_state_dict(old)
    forged = {**state, "tokens": {d: {**v, "consumed": v["consumed"] + 1} for d, v in state["tokens"].items()}}
    with pytest.raises(ShardError, match="data order differs"):
        ShardBatchSource(small, seed=5).load_state_dict(forged)
    with pytest.raises(ShardError, match="data order differs"):  # e.g. a numpy whose permutations changed
        ShardBatchSource(small, seed=5).load_state_dict({**state, "order_sha256": "0" * 64})
    (other / json.loads((other / "manifest.json").read_text())["shards"][1]["file"]).unlink()
    with pytest.raises(ShardError, match=r"1 of the \d+ shards listed in .* are missing \(first: shard-00001"):
        ShardBatchSource(other)


def test_trainer_refuses_a_checkpoint_of_another_order_before_any_step(small, tmp_path):
    cfg = dict(model="tiny", d_model=16, n_layers=1, n_heads=2, vocab_size=64, seq_len=16, micro_batch_size=4,
               steps=2, warmup_steps=1, ckpt_every=1, eval_every=0, dvclive=False, progress=False,
               out_dir=str(tmp_path / "run"))
    train(TrainConfig(**cfg), source=ShardBatchSource(small, order="manifest"))
    log = tmp_path / "run" / "train_log.jsonl"
    before = log.read_text()
    with pytest.raises(ShardError, match="resume with data_order: manifest"):
        train(TrainConfig(**{**cfg, "steps": 4}), source=ShardBatchSource(small))
    assert log.read_text() == before
    # the per-domain accounting is in the checkpoint and in the log of checkpoint steps
    extra = json.loads((tmp_path / "run" / "checkpoints" / "step-2" / "extra-rank0.json").read_text())
    last = json.loads(before.splitlines()[-1])
    assert extra["data"]["tokens"]["a"]["consumed"] == last["data_tokens/a"] > 0
    assert extra["batch"] == {"global": 4, "micro": 4, "accum": 1, "world": 1}


# --------------------------------------------------------------------------- torchrun

TRAIN = dict(model="tiny", d_model=16, n_layers=1, n_heads=2, vocab_size=64, seq_len=16, micro_batch_size=512,
             grad_accum=3, steps=6, warmup_steps=1, lr=3e-3, ckpt_every=1, keep_checkpoints=0, eval_every=0,
             dvclive=False, progress=False, spike_factor=0.0, threads=1, tokenizer_sha256=SHA)
# rows per step: 512 x 3 micro-batches x 2 ranks, then kept from the checkpoints: 512 x 6 x 1 rank, 384 x 2 x 4
GLOBAL = 3072

WORKER = textwrap.dedent('''
    import json, sys
    from proxytrain.parallel import setup_distributed
    from proxytrain.shards import ShardBatchSource
    from proxytrain.train import TrainConfig, train
    from tests.helpers.elastic import recording

    out, shards, cfg = sys.argv[1], sys.argv[2], TrainConfig(**json.loads(sys.argv[3]))
    stop, hang = (int(a) if int(a) >= 0 else None for a in sys.argv[4:6])
    rank, world, _ = setup_distributed("cpu")
    src = ShardBatchSource(shards, rank=rank, world_size=world, order=cfg.data_order, seed=cfg.seed,
                           num_workers=cfg.loader_workers, expect_tokenizer_sha256=cfg.tokenizer_sha256)
    train(cfg, source=src, on_step=recording(src, f"{out}/rows.jsonl", rank, world, stop, hang))
''')


def _torchrun(tmp: Path, nproc: int, args: list[str]) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}", *args]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, cwd=tmp)


def _reference(tmp: Path, shards: Path, out: Path, steps: int):
    """The uninterrupted run (one process, no workers, the same global batch) and both runs' row logs."""
    ref_out = tmp / "ref"
    ref_out.mkdir()
    src = ShardBatchSource(shards, expect_tokenizer_sha256=SHA)
    ref = train(TrainConfig(**{**TRAIN, "steps": steps, "global_batch_size": GLOBAL, "out_dir": str(ref_out)}),
                source=src, on_step=recording(src, str(ref_out / "rows.jsonl"), 0, 1))
    runs = {name: [json.loads(x) for x in (d / "rows.jsonl").read_text().splitlines()]
            for name, d in (("resumed", out), ("ref", ref_out))}
    return ref, runs


def _cli(tmp: Path, nproc: int, args: list[str]) -> subprocess.CompletedProcess:
    (tmp / "params.yaml").write_text("train: {}\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "corpusmix.cli", "train", "--params", str(tmp / "params.yaml"), "--nproc", str(nproc),
           *args]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, cwd=tmp)


@pytest.mark.slow
def test_torchrun_resume_at_other_world_sizes_consumes_the_uninterrupted_stream(tmp_path):
    shards = make_pack(tmp_path / "data", tokens=190_000, shard_max_bytes=400_000)  # ~11.9k rows: 2 epochs in 6 steps
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    out = tmp_path / "run"
    out.mkdir()
    phases = [(2, 0, 2), (1, 2, 4), (4, 1, 6)]  # (ranks, loader workers per rank, stop after step)
    for nproc, workers, stop in phases[:2]:
        cfg = {**TRAIN, "loader_workers": workers, "out_dir": str(out)}
        p = _torchrun(tmp_path, nproc, [str(script), str(out), str(shards), json.dumps(cfg), str(stop), "-1"])
        assert p.returncode == 0, p.stderr[-3000:]

    # bad input, before torchrun starts a rank: through the CLI (`corpusmix train --nproc 4`, one line),
    # and through the same preflight in-process
    log_before = (out / "train_log.jsonl").read_text()
    p = _cli(tmp_path, 4, [*[f"--{k.replace('_', '-')}={v}" for k, v in TRAIN.items()], "--data", str(shards),
                           "--out-dir", str(out), "--global-batch-size", "3070"])
    errors = [x for x in p.stderr.splitlines() if not x.startswith("{")]  # JSON lines are the structured log
    assert p.returncode == 2 and errors == [
        "corpusmix: error: global_batch_size of 3070 rows is not divisible by 4 ranks: resume with a number of "
        "ranks that divides 3070, or set global_batch_size to a multiple of 4 (the rows per step then change)"
    ], p.stderr
    other = make_pack(tmp_path / "other", weights={"a": 0.2, "b": 0.5, "c": 0.3}, tokens=20_000)
    missing = tmp_path / "missing"
    missing.mkdir()
    for f in shards.iterdir():
        if f.name != "shard-00002.arrow":
            (missing / f.name).symlink_to(f)
    for data, line in ((other, "this cursor belongs to shards of another mixture"),
                       (missing, "1 of the 4 shards listed in")):
        with pytest.raises(ShardError, match=line):
            preflight(TrainConfig(**{**TRAIN, "data": str(data), "out_dir": str(out)}), 4)
    assert (out / "train_log.jsonl").read_text() == log_before and not (out / "checkpoints" / "step-5").exists()

    nproc, workers, stop = phases[2]
    cfg = {**TRAIN, "loader_workers": workers, "out_dir": str(out)}
    p = _torchrun(tmp_path, nproc, [str(script), str(out), str(shards), json.dumps(cfg), str(stop), "-1"])
    assert p.returncode == 0, p.stderr[-3000:]

    ref, runs = _reference(tmp_path, shards, out, 6)
    got, want = global_steps(runs["resumed"]), global_steps(runs["ref"])
    assert sorted(got) == sorted(want) == list(range(6))
    assert {r["world"] for r in runs["resumed"]} == {1, 2, 4}

    # the same global order step by step (the global batch is kept), so the same multiset: no repeat, no skip
    for s in range(6):
        assert len(got[s]) == GLOBAL and got[s] == want[s], f"step {s}"
    dom, tok, fp, domains = shard_rows(shards)
    stream = np.array([row for s in range(6) for row, _ in got[s]])
    fps = np.array([f for s in range(6) for _, f in got[s]])
    assert (fp[stream] == fps).all()  # every row's tokens are those of the shard row it claims
    n = dom.size
    assert sorted(stream[:n].tolist()) == list(range(n))  # first epoch: every row exactly once
    assert np.bincount(stream, minlength=n).max() == 2 and stream.size < 2 * n  # second epoch partly read

    # the mixture's plan at every checkpoint (shares from the manifest, tokens from the rows consumed)
    manifest = json.loads((shards / "manifest.json").read_text())
    share = np.array([manifest["tokens_per_domain"][d] for d in domains], dtype=float)
    share /= share.sum()
    for step in range(1, 7):
        ck = out / "checkpoints" / f"step-{step}"
        extras = [json.loads(f.read_text()) for f in sorted(ck.glob("extra-rank*.json"))]
        assert len({e["data"]["cursor"] for e in extras}) == 1 and extras[0]["data"]["cursor"] == step * GLOBAL
        rows = stream[: step * GLOBAL]
        consumed = np.bincount(dom[rows], weights=tok[rows], minlength=len(domains))
        planned = consumed.sum() * share
        assert (np.abs(consumed - planned) <= 1e-3 * planned).all(), (step, consumed, planned)
        acct = extras[0]["data"]["tokens"]
        assert [acct[d]["consumed"] for d in domains] == consumed.astype(int).tolist()
    assert [json.loads((out / "checkpoints" / f"step-{s}" / "extra-rank0.json").read_text())["batch"]["world"]
            for s in (2, 4, 6)] == [2, 1, 4]

    # model and optimizer were resharded at each change: the losses of the uninterrupted run
    losses = {r["step"]: r["loss"] for r in runs["resumed"]}
    for rec in ref.history:
        assert losses[rec["step"]] == pytest.approx(rec["loss"], rel=1e-5)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_torchrun_elastic_restart_continues_on_fewer_ranks_after_a_node_is_lost(tmp_path):
    """Two torchrun agents (``--nnodes=1:2 --max-restarts=2``, c10d rendezvous) train on one rank each;
    after step 2 the second "node" (its agent and worker) is SIGKILLed. The first agent restarts its
    worker, which resumes from the 2-rank checkpoint on 1 rank with the same global batch: the rows
    and losses of every step are those of an uninterrupted run."""
    import psutil

    shards = make_pack(tmp_path / "data", tokens=60_000, shard_max_bytes=400_000)
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    out = tmp_path / "run"
    out.mkdir()
    cfg = json.dumps({**TRAIN, "steps": 4, "out_dir": str(out)})
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    common = [sys.executable, "-m", "torch.distributed.run", "--nnodes=1:2", "--nproc_per_node=1",
              "--rdzv-backend=c10d", f"--rdzv-endpoint=127.0.0.1:{_free_port()}", "--rdzv-id=elastic",
              "--max-restarts=2", "--monitor-interval=0.2"]
    args = [str(script), str(out), str(shards), cfg, "-1", "2"]
    logs = [open(tmp_path / f"agent{i}.log", "w") for i in range(2)]  # noqa: SIM115  (closed below)
    # agent 0 hosts the rendezvous store; both join the first round within its last call (10 s)
    agents = [subprocess.Popen([*common, "--rdzv-conf=is_host=1,last_call_timeout=10", *args], env=env,
                               stdout=logs[0], stderr=subprocess.STDOUT, cwd=tmp_path)]
    time.sleep(0.5)
    agents.append(subprocess.Popen([*common, "--rdzv-conf=is_host=0,last_call_timeout=10", *args], env=env,
                                   stdout=logs[1], stderr=subprocess.STDOUT, cwd=tmp_path))
    try:
        deadline = time.monotonic() + 240
        while not (out / "rows.jsonl.hung").exists():
            assert agents[0].poll() is None and time.monotonic() < deadline, (tmp_path / "agent0.log").read_text()[-3000:]
            time.sleep(0.1)
        lost = psutil.Process(agents[1].pid)
        for proc in [lost, *lost.children(recursive=True)]:  # the node: its agent and its worker
            proc.kill()
        assert agents[0].wait(timeout=240) == 0, (tmp_path / "agent0.log").read_text()[-3000:]
    finally:
        for a in agents:
            if a.poll() is None:
                a.kill()
        for f in logs:
            f.close()

    ref, runs = _reference(tmp_path, shards, out, 4)
    got, want = global_steps(runs["resumed"]), global_steps(runs["ref"])
    assert [(s, r["world"]) for s in range(4) for r in runs["resumed"] if r["step"] == s and r["rank"] == 0] == \
        [(0, 2), (1, 2), (2, 1), (3, 1)]
    assert got == want  # the same rows in the same global order, step by step
    assert json.loads((out / "checkpoints" / "step-4" / "extra-rank0.json").read_text())["batch"] == \
        {"global": GLOBAL, "micro": 512, "accum": 6, "world": 1}
    losses = {r["step"]: r["loss"] for r in runs["resumed"]}
    for rec in ref.history:
        assert losses[rec["step"]] == pytest.approx(rec["loss"], rel=1e-5)
