"""Checkpoints: kill-and-resume gives bitwise-identical losses; partial, corrupt, missing and unsafe ones are refused."""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path

import pytest
import torch

from proxytrain.checkpoint import (
    CheckpointError,
    latest_checkpoint,
    list_checkpoints,
    load_checkpoint,
    save_checkpoint,
    verify_checkpoint,
)
from proxytrain.model import ModelConfig, build_model
from proxytrain.optim import make_optimizer
from proxytrain.train import TrainConfig, train
from proxytrain.train_cli import SyntheticSource


def _cfg(out: Path, **kw) -> TrainConfig:
    base = dict(model="tiny", d_model=32, n_layers=2, n_heads=2, seq_len=32, micro_batch_size=4, grad_accum=2,
                steps=8, warmup_steps=2, lr=3e-3, ckpt_every=3, eval_every=4, eval_batches=1, out_dir=str(out),
                dvclive=False, progress=False, spike_min_history=2, spike_factor=1.5)
    base.update(kw)
    return TrainConfig(**base)


def _run(cfg: TrainConfig, **kw):
    src = SyntheticSource(vocab_size=64, seq_len=32, seed=cfg.seed)
    return train(cfg, source=src, val_source=SyntheticSource(vocab_size=64, seq_len=32), **kw)


def _losses(history):
    return {r["step"]: r["loss"] for r in history if "event" not in r}


def test_kill_and_resume_is_bitwise_identical(tmp_path):
    full = _run(_cfg(tmp_path / "a"))

    class Killed(Exception):
        pass

    def kill_at_7(step, rec, model):
        if step == 7:  # step 7 finished, its work after the step-6 checkpoint is lost
            raise Killed

    with pytest.raises(Killed):
        _run(_cfg(tmp_path / "b"), on_step=kill_at_7)
    assert [p.name for p in list_checkpoints(tmp_path / "b" / "checkpoints")] == ["step-3", "step-6"]
    resumed = _run(_cfg(tmp_path / "b"))
    a, b = _losses(full.history), _losses(resumed.history)
    assert sorted(b) == [6, 7]  # it resumed at step 6
    for step in b:
        assert a[step] == b[step], (step, a[step], b[step])  # bitwise, not approximately
    for pa, pb in zip(full.model.parameters(), resumed.model.parameters(), strict=True):
        assert torch.equal(pa, pb)
    assert full.val == resumed.val
    # the log continues after the resume: steps 6 and 7 appear again (the later records win)
    log = [json.loads(line) for line in (tmp_path / "b" / "train_log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in log] == [0, 1, 2, 3, 4, 5, 6, 6, 7]


def _saved(tmp_path: Path) -> tuple[Path, torch.nn.Module, torch.optim.Optimizer]:
    cfg = ModelConfig(vocab_size=64, d_model=32, n_layers=1, n_heads=2, max_seq_len=16)
    model = build_model(cfg, seed=0)
    opt = make_optimizer(model, _cfg(tmp_path))
    path = save_checkpoint(tmp_path / "ck", 5, model, opt, {"data": {"row": 3}})
    return path, model, opt


def test_partial_checkpoints_are_never_picked(tmp_path):
    path, model, opt = _saved(tmp_path)
    root = path.parent
    (root / ".tmp-step-9").mkdir()  # killed while writing
    (root / ".tmp-step-9" / "__0_0.distcp").write_bytes(b"partial")
    (root / "step-12").mkdir()  # complete-looking name but no marker
    assert latest_checkpoint(root) == path
    with pytest.raises(CheckpointError, match="incomplete"):
        load_checkpoint(root / "step-12", model, opt)
    extra = load_checkpoint(path, model, opt)
    assert extra == {"step": 5, "data": {"row": 3}}
    # a later save of the same step replaces it atomically and old ones are pruned
    for s in (6, 7, 8):
        save_checkpoint(root, s, model, opt, {}, keep=2)
    assert [p.name for p in list_checkpoints(root)] == ["step-7", "step-8"]


def test_missing_and_corrupt_checkpoints_are_clear_errors(tmp_path):
    path, model, opt = _saved(tmp_path)
    with pytest.raises(CheckpointError, match="does not exist"):
        load_checkpoint(tmp_path / "nope" / "step-1", model, opt)
    shard = next(path.glob("*.distcp"))
    data = shard.read_bytes()
    shard.write_bytes(data[: len(data) // 2])  # truncated by a full disk
    with pytest.raises(CheckpointError, match="corrupt"):
        load_checkpoint(path, model, opt)
    shard.write_bytes(b"\0" * len(data))  # same size, garbage content
    with pytest.raises(CheckpointError, match="could not be loaded"):
        load_checkpoint(path, model, opt)


def test_metadata_with_foreign_objects_is_refused(tmp_path):
    path, model, opt = _saved(tmp_path)
    flag = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {flag}",))

    meta = path / ".metadata"
    meta.write_bytes(pickle.dumps(Evil()))
    marker = json.loads((path / "COMPLETE").read_text())
    marker["files"][".metadata"] = meta.stat().st_size
    (path / "COMPLETE").write_text(json.dumps(marker))
    assert verify_checkpoint(path)["step"] == 5
    with pytest.raises(CheckpointError):
        load_checkpoint(path, model, opt)
    assert not flag.exists()


def test_world_size_mismatch(tmp_path):
    path, model, opt = _saved(tmp_path)
    marker = json.loads((path / "COMPLETE").read_text())
    marker["world_size"] = 4
    (path / "COMPLETE").write_text(json.dumps(marker))
    with pytest.raises(CheckpointError, match="resume with --nproc 4"):
        load_checkpoint(path, model, opt)
    # allowed (a source with a global cursor): rank 0's JSON state, marked with the old world size
    extra = load_checkpoint(path, model, opt, any_world=True)
    assert extra["step"] == 5 and extra["resharded_from"] == 4


def test_two_saves_of_the_same_state_are_the_same_bytes(tmp_path, monkeypatch):
    """Every file of a checkpoint (a DVC output of the train stage) is a function of the state: DCP's
    random save id is replaced by the step (``.metadata`` differed between otherwise identical runs)."""
    monkeypatch.chdir(tmp_path)  # DCP records the checkpoint path as given: the same relative path twice
    files = []
    for run in ("a", "b"):
        model = build_model(ModelConfig(vocab_size=64, d_model=32, n_layers=1, n_heads=2, max_seq_len=16), seed=0)
        path = save_checkpoint(Path("ck"), 5, model, make_optimizer(model, _cfg(tmp_path)), {"data": {"row": 3}})
        files.append({p.name: p.read_bytes() for p in sorted(path.iterdir())})
        os.rename("ck", f"ck-{run}")
    assert set(files[0]) == set(files[1]) and ".metadata" in files[0]
    assert [n for n in files[0] if files[0][n] != files[1][n]] == []
