"""FSDP2 over 2 gloo ranks (torchrun) gives the gradients and losses of a single-process run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from proxytrain.loss import per_token_loss, target_mask
from proxytrain.model import ModelConfig, build_model
from proxytrain.train import TrainConfig, train
from proxytrain.train_cli import SyntheticSource

ROOT = Path(__file__).resolve().parents[2]
MODEL = ModelConfig(vocab_size=64, d_model=32, n_layers=2, n_heads=2, max_seq_len=32)
TRAIN = dict(model="tiny", d_model=32, n_layers=2, n_heads=2, seq_len=32, steps=3, warmup_steps=1, lr=3e-3,
             ckpt_every=2, eval_every=3, eval_batches=1, dvclive=False, progress=False)

WORKER = textwrap.dedent('''
    import json, sys
    from types import SimpleNamespace
    import torch
    from proxytrain.loss import per_token_loss, target_mask
    from proxytrain.model import ModelConfig, build_model
    from proxytrain.parallel import all_reduce_sum, parallelize, setup_distributed
    from proxytrain.train import TrainConfig, train
    from proxytrain.train_cli import SyntheticSource

    out = sys.argv[1]
    rank, world, dev = setup_distributed("cpu")
    cfg = ModelConfig(**json.loads(sys.argv[2]))
    model = build_model(cfg, dev, materialize=False)
    parallelize(model, SimpleNamespace(activation_checkpointing=True, compile=False, dtype="fp32"))
    model.to_empty(device=dev)
    model.init_weights(0)
    b = SyntheticSource(vocab_size=cfg.vocab_size, seq_len=cfg.max_seq_len, rank=rank, world=world).next_batch(2)
    n = all_reduce_sum(target_mask(b["segment_ids"]).sum().double())
    loss, _ = per_token_loss(model(b["tokens"], b["segment_ids"]), b["tokens"], b["segment_ids"])
    (loss.sum() / n).backward()
    grads = {k.replace("_checkpoint_wrapped_module.", ""): p.grad.full_tensor() for k, p in model.named_parameters()}
    if rank == 0:
        torch.save(grads, out + "/grads.pt")
    tcfg = TrainConfig(**json.loads(sys.argv[3]), micro_batch_size=2, out_dir=out + "/run")
    src = SyntheticSource(vocab_size=cfg.vocab_size, seq_len=cfg.max_seq_len, rank=rank, world=world)
    res = train(tcfg, source=src, val_source=SyntheticSource(vocab_size=cfg.vocab_size, seq_len=cfg.max_seq_len))
    if rank == 0:
        json.dump({"history": res.history, "val": res.val}, open(out + "/train.json", "w"))
''')


@pytest.mark.slow
def test_fsdp_two_ranks_equal_single_process(tmp_path):
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", str(script),
           str(tmp_path), json.dumps({k: getattr(MODEL, k) for k in ("vocab_size", "d_model", "n_layers",
                                                                    "n_heads", "max_seq_len")}),
           json.dumps(TRAIN)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]

    # gradients: one process over the 4 rows the two ranks shared
    model = build_model(MODEL, seed=0)
    b = SyntheticSource(vocab_size=64, seq_len=32).next_batch(4)
    loss, _ = per_token_loss(model(b["tokens"], b["segment_ids"]), b["tokens"], b["segment_ids"])
    (loss.sum() / target_mask(b["segment_ids"]).sum()).backward()
    fsdp = torch.load(tmp_path / "grads.pt")
    assert set(fsdp) == {k for k, _ in model.named_parameters()}
    for k, p in model.named_parameters():
        torch.testing.assert_close(fsdp[k], p.grad, rtol=1e-5, atol=1e-7, msg=k)

    # training: 3 steps, a 2-rank DCP checkpoint, validation: the same numbers as one process
    dist = json.loads((tmp_path / "train.json").read_text())
    single = train(TrainConfig(**TRAIN, micro_batch_size=4, out_dir=str(tmp_path / "single")),
                   source=SyntheticSource(vocab_size=64, seq_len=32),
                   val_source=SyntheticSource(vocab_size=64, seq_len=32))
    for a, b_ in zip(dist["history"], single.history, strict=True):
        assert a["loss"] == pytest.approx(b_["loss"], rel=1e-5)
        assert a["grad_norm"] == pytest.approx(b_["grad_norm"], rel=1e-4)
        assert a["param_norm"] == pytest.approx(b_["param_norm"], rel=1e-5)
        assert a["loss/a"] == pytest.approx(b_["loss/a"], rel=1e-5)
    assert dist["val"]["all"] == pytest.approx(single.val["all"], rel=1e-5)
    ck = tmp_path / "run" / "checkpoints" / "step-2"
    assert json.loads((ck / "COMPLETE").read_text())["world_size"] == 2
    assert (ck / "extra-rank0.json").exists() and (ck / "extra-rank1.json").exists()


BF16_WORKER = textwrap.dedent('''
    import json, sys
    import torch
    from proxytrain.train import TrainConfig, train
    from proxytrain.train_cli import SyntheticSource
    from proxytrain.parallel import setup_distributed

    out = sys.argv[1]
    rank, world, dev = setup_distributed("cpu")
    seen = set()

    def spy(step, rec, model):  # after the first step: hook the blocks, record what they are given
        if step == 1:
            for layer in model.layers:
                layer.register_forward_pre_hook(
                    lambda m, args: seen.update(f"{i}:{a.dtype}" for i, a in enumerate(args[:3])))

    tcfg = TrainConfig(**json.loads(sys.argv[2]), micro_batch_size=2, out_dir=out + "/run")
    src = SyntheticSource(vocab_size=64, seq_len=32, rank=rank, world=world)
    res = train(tcfg, source=src, val_source=SyntheticSource(vocab_size=64, seq_len=32), on_step=spy)
    if rank == 0:
        json.dump({"history": res.history, "val": res.val, "block_inputs": sorted(seen)}, open(out + "/bf16.json", "w"))
''')


@pytest.mark.slow
def test_fsdp_bf16_keeps_rope_fp32_and_matches_single_process(tmp_path):
    """bf16 params under FSDP2 (2 gloo ranks): blocks get bf16 hidden states but fp32 RoPE tables,
    and the losses match a single process under bf16 autocast within bf16 tolerance."""
    script = tmp_path / "worker.py"
    script.write_text(BF16_WORKER)
    cfg = {**TRAIN, "dtype": "bf16", "eval_every": 2, "ckpt_every": 0, "steps": 4}
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", str(script),
           str(tmp_path), json.dumps(cfg)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    dist = json.loads((tmp_path / "bf16.json").read_text())
    # hidden states bf16 (FSDP's param dtype), cos and sin still fp32
    assert dist["block_inputs"] == ["0:torch.bfloat16", "1:torch.float32", "2:torch.float32"]
    single = train(TrainConfig(**cfg, micro_batch_size=4, out_dir=str(tmp_path / "single")),
                   source=SyntheticSource(vocab_size=64, seq_len=32),
                   val_source=SyntheticSource(vocab_size=64, seq_len=32))
    for a, b_ in zip(dist["history"], single.history, strict=True):
        assert a["loss"] == pytest.approx(b_["loss"], rel=2e-2)
    assert dist["val"]["all"] == pytest.approx(single.val["all"], rel=2e-2)


def test_fsdp_policy_and_version_guard(monkeypatch):
    from torch.distributed.fsdp import FSDPModule

    from proxytrain.parallel import mixed_precision, require_fsdp_api

    mp = mixed_precision("bf16")
    assert mp.param_dtype == torch.bfloat16 and mp.reduce_dtype == torch.float32 and not mp.cast_forward_inputs
    assert mixed_precision("fp32").param_dtype is None
    require_fsdp_api()  # the installed torch has what multi-rank training needs
    monkeypatch.delattr(FSDPModule, "set_force_sum_reduction_for_comms")
    with pytest.raises(RuntimeError, match="needs torch >= 2.8"):
        require_fsdp_api()
