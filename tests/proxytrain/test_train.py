"""Training loop: overfit one batch, spike guard (skip, rollback, lr cut), bad input, logs and CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from corpusmix.cli import main
from corpusmix.config import ConfigError
from proxytrain.spike_guard import SpikeGuard, TrainingAborted
from proxytrain.train import TrainConfig, train
from proxytrain.train_cli import SyntheticSource, open_source, torchrun_argv

SMALL = dict(model="tiny", d_model=32, n_layers=2, n_heads=2, seq_len=32, micro_batch_size=4, dvclive=False,
             progress=False, eval_every=0, ckpt_every=0)


def _cfg(out: Path, **kw) -> TrainConfig:
    return TrainConfig(**{**SMALL, "out_dir": str(out), **kw})


def test_overfit_one_batch_reaches_near_zero(tmp_path):
    cfg = _cfg(tmp_path, steps=60, warmup_steps=5, lr=1e-2, min_lr=1e-3, overfit_one_batch=True,
               spike_factor=0.0, d_model=64)
    res = train(cfg, source=SyntheticSource(vocab_size=64, seq_len=32))
    losses = [r["loss"] for r in res.history]
    assert losses[0] > 3.5  # ~ln(64) at init
    assert losses[-1] < 0.1, losses[-5:]


def test_spike_guard_decisions():
    g = SpikeGuard(_cfg(Path("."), spike_factor=2.0, spike_min_history=3, spike_window=4))
    assert g.check(float("nan")) == "non_finite"
    assert g.check(1.0, grad_norm=float("inf")) == "non_finite"
    assert g.check(100.0) is None  # no history yet: the factor test is off
    for loss in (3.0, 2.0, 2.5, 2.2, 2.1):
        g.accept(loss)
    assert g.recent == [2.0, 2.5, 2.2, 2.1]  # window of 4
    assert g.check(4.3) is None and g.check(4.4) == "spike"  # 2 x median 2.15


def test_spikes_skip_then_roll_back_and_lower_lr(tmp_path):
    cfg = _cfg(tmp_path, steps=12, warmup_steps=1, lr=3e-3, min_lr=3e-3, ckpt_every=4, spike_min_history=2,
               spike_factor=2.0, spike_max_consecutive=2, spike_lr_factor=0.5)
    corrupted = []

    def corrupt_once(step, rec, model):
        if step == 6 and not corrupted:  # weights blow up after 6 steps (e.g. a bad update)
            corrupted.append(step)
            with torch.no_grad():
                model.tok_emb.weight.mul_(1000.0)

    res = train(cfg, source=SyntheticSource(vocab_size=64, seq_len=32), on_step=corrupt_once)
    events = [r for r in res.history if "event" in r]
    assert [e["event"] for e in events] == ["skip", "skip", "rollback"]
    assert all(e["reason"] == "spike" for e in events[:2])
    assert events[2]["to_step"] == 4 and events[2]["lr_scale"] == 0.5
    steps = [r for r in res.history if "event" not in r]
    assert [r["step"] for r in steps] == [0, 1, 2, 3, 4, 5, 4, 5, 6, 7, 8, 9, 10, 11]
    assert steps[-1]["lr"] == pytest.approx(1.5e-3)  # halved after the rollback
    assert math.isfinite(steps[-1]["loss"]) and steps[-1]["loss"] < steps[0]["loss"]
    log = [json.loads(x) for x in (tmp_path / "train_log.jsonl").read_text().splitlines()]
    assert sum(1 for r in log if r.get("event") == "rollback") == 1


def test_nonfinite_without_checkpoint_is_a_clear_error(tmp_path):
    cfg = _cfg(tmp_path, steps=6, spike_max_consecutive=1)
    src = SyntheticSource(vocab_size=64, seq_len=32)

    def poison(step, rec, model):
        if step == 2:
            with torch.no_grad():
                for p in model.parameters():
                    p.fill_(float("nan"))

    with pytest.raises(TrainingAborted, match="no checkpoint to roll back to"):
        train(cfg, source=src, on_step=poison)


def test_log_records_have_the_contract_fields(tmp_path):
    cfg = _cfg(tmp_path, steps=3, eval_every=3, eval_batches=1, dvclive=True, grad_accum=2)
    train(cfg, source=SyntheticSource(vocab_size=64, seq_len=32), val_source=SyntheticSource(vocab_size=64,
                                                                                           seq_len=32))
    recs = [json.loads(x) for x in (tmp_path / "train_log.jsonl").read_text().splitlines()]
    timing = [json.loads(x) for x in (tmp_path / "train_timing.jsonl").read_text().splitlines()]
    assert [r["step"] for r in recs] == [0, 1, 2] == [r["step"] for r in timing]
    for r, t in zip(recs, timing, strict=True):
        for k in ("loss", "lr", "grad_norm", "param_norm", "loss/a", "loss/b", "loss/c"):
            assert isinstance(r[k], float) and math.isfinite(r[k]), k
        assert not {"tokens_per_s", "mfu", "step_s", "peak_mem_gb"} & set(r)  # wall-clock: beside the log
        assert t["tokens_per_s"] > 0 and 0 < t["mfu"] < 1
    assert {"val_loss/a", "val_loss/b", "val_loss/c", "val_loss/all"} <= set(recs[-1])
    assert (tmp_path / "dvclive" / "metrics.json").exists()
    metrics = json.loads((tmp_path / "dvclive" / "metrics.json").read_text())
    assert metrics["step"] == 2 and metrics["loss"] == pytest.approx(recs[-1]["loss"])


def test_bad_input_is_refused(tmp_path):
    cfg = _cfg(tmp_path, steps=2, vocab_size=32)
    with pytest.raises(ConfigError, match="vocab_size=32 is smaller"):
        train(cfg, source=SyntheticSource(vocab_size=64, seq_len=32))
    shards = tmp_path / "shards"
    shards.mkdir()
    (shards / "manifest.json").write_text(json.dumps({"version": 1, "seq_len": 32, "pad_id": 0,
                                                     "tokenizer_sha256": "a" * 64, "shards": [], "domains": []}))
    with pytest.raises(ConfigError, match="needs the tokenizer"):
        open_source(_cfg(tmp_path, data=str(shards)), rank=0, world=1)
    with pytest.raises(ConfigError, match="re-pack them"):
        open_source(_cfg(tmp_path, data=str(shards), tokenizer_sha256="b" * 64), rank=0, world=1)
    with pytest.raises(ConfigError, match="neither manifest.json"):
        open_source(_cfg(tmp_path, data=str(tmp_path), tokenizer_sha256="b" * 64), rank=0, world=1)


def test_cli_overfit_one_batch_and_torchrun_argv(tmp_path, capsys):
    rc = main(["train", "--params", str(tmp_path / "none.yaml"), "--overfit-one-batch", "--steps", "40",
               "--d-model", "64", "--n-layers", "2", "--n-heads", "2", "--seq-len", "32", "--vocab-size", "64",
               "--micro-batch-size", "4", "--lr", "0.01", "--warmup-steps", "4", "--dvclive", "false",
               "--progress", "false", "--out-dir", str(tmp_path / "run")])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "overfit-one-batch" in out and "PASS" in out
    import argparse

    args = argparse.Namespace(params="p.yaml", steps="5", compile=True, lr=None)
    argv = torchrun_argv(args, 2)
    assert argv[1:5] == ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]
    assert argv[-6:] == ["--params", "p.yaml", "--steps", "5", "--compile", "True"]


def _pools(root: Path, vocab: int = 64) -> Path:
    """A tiny pools folder (docs/formats.md) with two domains of arithmetic-sequence documents."""
    import numpy as np

    root.mkdir(parents=True)
    rng = np.random.default_rng(0)
    domains = {}
    for k, d in enumerate(("code", "legal")):
        lens = rng.integers(5, 40, size=60)
        docs = [(rng.integers(3, vocab) + (k + 1) * np.arange(n)) % (vocab - 3) + 3 for n in lens]
        np.concatenate(docs).astype(np.uint16).tofile(root / f"{d}.bin")
        np.save(root / f"{d}.idx.npy", np.concatenate([[0], np.cumsum(lens)]).astype(np.int64))
        domains[d] = {"tokens": int(lens.sum()), "docs": len(lens), "val_docs": 6}
    (root / "pools.json").write_text(json.dumps({
        "version": 1, "tokenizer_sha256": "ab" * 32, "vocab_size": vocab, "dtype": "uint16", "bos_id": 0,
        "eos_id": 1, "pad_id": 2, "val_fraction": 0.1, "domains": domains}))
    return root


def test_train_on_real_pools_and_shards(tmp_path, capsys):
    from proxytrain.pack import PackConfig, pack

    pools = _pools(tmp_path / "pools")
    shards = tmp_path / "shards"
    pack(pools, {"weights": {"code": 0.5, "legal": 0.5}, "method": "test"}, shards,
         PackConfig(seq_len=32, tokens=3000))
    common = ["--params", str(tmp_path / "none.yaml"), "--steps", "3", "--d-model", "32", "--n-layers", "1",
              "--n-heads", "2", "--seq-len", "32", "--micro-batch-size", "4", "--dvclive", "false",
              "--progress", "false", "--eval-every", "3", "--eval-batches", "1", "--eval-batch-size", "4"]
    # shards: tokenizer hash checked, domains from the manifest
    assert main(["train", "--data", str(shards), "--tokenizer-sha256", "ab" * 32, "--val-data", str(shards),
                 "--out-dir", str(tmp_path / "s"), *common]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["steps"] == 3 and set(summary["val"]) == {"code", "legal", "all"}
    rec = json.loads((tmp_path / "s" / "train_log.jsonl").read_text().splitlines()[0])
    assert {"loss/code", "loss/legal"} & set(rec)
    # the shards' cursor is in the checkpoint
    extra = json.loads((tmp_path / "s" / "checkpoints" / "step-3" / "extra-rank0.json").read_text())
    assert extra["data"]["cursor"] == 12
    # shards with validation on the pools' held-out split (the DVC pipeline's setup)
    assert main(["train", "--data", str(shards), "--tokenizer-sha256", "ab" * 32, "--val-data", str(pools),
                 "--out-dir", str(tmp_path / "sp"), *common]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert set(summary["val"]) == {"code", "legal", "all"}
    # pools: mixture weights, validation from the held-out split
    assert main(["train", "--data", str(pools), "--tokenizer-sha256", "ab" * 32, "--out-dir", str(tmp_path / "p"),
                 *common]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert set(summary["val"]) == {"code", "legal", "all"}
    # another tokenizer's shards are refused with the fix in the message
    assert main(["train", "--data", str(shards), "--tokenizer-sha256", "cd" * 32, "--out-dir", str(tmp_path / "x"),
                 *common]) == 2
    assert "re-pack them with the trainer's tokenizer" in capsys.readouterr().err


def test_cli_refuses_a_corrupt_checkpoint(tmp_path, capsys):
    ck = tmp_path / "run" / "checkpoints" / "step-3"
    ck.mkdir(parents=True)
    (ck / "COMPLETE").write_text(json.dumps({"step": 3, "world_size": 1, "files": {"__0_0.distcp": 1234}}))
    rc = main(["train", "--params", str(tmp_path / "none.yaml"), "--steps", "5", "--d-model", "32",
               "--n-layers", "1", "--n-heads", "2", "--seq-len", "32", "--vocab-size", "64", "--dvclive", "false",
               "--progress", "false", "--out-dir", str(tmp_path / "run")])
    assert rc == 2
    err = capsys.readouterr().err
    assert "is corrupt" in err and "delete this folder" in err
