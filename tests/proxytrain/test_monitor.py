"""Training monitor: per-layer statistics equal a manual computation; the trainer logs them at the
interval, with peak memory; spike events go to events.jsonl; bf16 evaluation runs under autocast."""

from __future__ import annotations

import json

import pytest
import torch

from proxytrain.loss import per_token_loss
from proxytrain.model import ModelConfig, build_model
from proxytrain.monitor import EventLog, LayerMonitor, peak_memory_gb
from proxytrain.train import TrainConfig, train
from proxytrain.train_cli import SyntheticSource

CFG = ModelConfig(vocab_size=64, d_model=32, n_layers=2, n_heads=2, max_seq_len=32)
SMALL = dict(model="tiny", d_model=32, n_layers=2, n_heads=2, seq_len=32, micro_batch_size=4, dvclive=False,
             progress=False, eval_every=0, ckpt_every=0)


def test_layer_stats_equal_manual_values():
    model = build_model(CFG, seed=0)
    b = SyntheticSource(vocab_size=64, seq_len=32).next_batch(4)
    outs = []
    hooks = [layer.register_forward_hook(lambda m, a, o: outs.append(o.detach())) for layer in model.layers]
    mon = LayerMonitor(model, every=2)
    mon.begin(4)
    loss, mask = per_token_loss(model(b["tokens"], b["segment_ids"]), b["tokens"], b["segment_ids"])
    (loss.sum() / mask.sum()).backward()
    stats = mon.end(4)
    for h in hooks:
        h.remove()
    for i, o in enumerate(outs):
        assert stats[f"act_rms/layer_{i}"] == pytest.approx(o.pow(2).mean().sqrt().item(), rel=1e-5)
        assert stats[f"act_absmax/layer_{i}"] == pytest.approx(o.abs().max().item(), rel=1e-6)
        want = torch.cat([p.grad.flatten() for p in model.layers[i].parameters()]).norm().item()
        assert stats[f"grad_norm/layer_{i}"] == pytest.approx(want, rel=1e-5)
    assert stats["grad_norm/tok_emb"] == pytest.approx(model.tok_emb.weight.grad.norm().item(), rel=1e-5)
    # off-interval steps: no hooks, no statistics
    mon.begin(5)
    model(b["tokens"], b["segment_ids"])
    assert mon.end(5) == {} and not any(layer._forward_hooks for layer in model.layers)
    assert peak_memory_gb(torch.device("cpu")) > 0.01


def test_trainer_logs_layer_stats_at_the_interval_and_spike_events(tmp_path):
    cfg = TrainConfig(**{**SMALL, "out_dir": str(tmp_path), "steps": 8, "warmup_steps": 1, "lr": 3e-3,
                         "monitor_every": 3, "spike_min_history": 2, "spike_factor": 2.0,
                         "spike_max_consecutive": 2, "ckpt_every": 4})
    poisoned = []

    def corrupt(step, rec, model):
        if step == 5 and not poisoned:
            poisoned.append(step)
            with torch.no_grad():
                model.tok_emb.weight.mul_(1000.0)

    res = train(cfg, source=SyntheticSource(vocab_size=64, seq_len=32), on_step=corrupt)
    steps = [r for r in res.history if "event" not in r]
    sampled = [r["step"] for r in steps if "grad_norm/layer_1" in r]
    assert sampled == [0, 3, 6]  # steps 4, 5 run twice (rollback to step 4): sampled by step number
    for r in steps:
        assert r["peak_mem_gb"] > 0
    r0 = steps[0]
    assert {"act_rms/layer_0", "act_absmax/layer_1", "grad_norm/tok_emb"} <= set(r0)
    events = [json.loads(x) for x in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert [e["event"] for e in events] == ["skip", "skip", "rollback"]
    assert events == [e for e in res.history if "event" in e]


def test_bf16_evaluation_runs_under_autocast(tmp_path, monkeypatch):
    import proxytrain.trainer as trainer_mod

    seen = []
    real = trainer_mod.evaluate

    def spy(*args, **kw):
        seen.append(torch.is_autocast_enabled("cpu") and torch.get_autocast_dtype("cpu") == torch.bfloat16)
        return real(*args, **kw)

    monkeypatch.setattr(trainer_mod, "evaluate", spy)
    cfg = TrainConfig(**{**SMALL, "out_dir": str(tmp_path), "steps": 2, "dtype": "bf16", "eval_every": 2,
                         "eval_batches": 1, "monitor_every": 0})
    res = train(cfg, source=SyntheticSource(vocab_size=64, seq_len=32),
                val_source=SyntheticSource(vocab_size=64, seq_len=32))
    assert seen == [True] and res.val["all"] > 0


def test_event_log_appends(tmp_path):
    log = EventLog(tmp_path / "e.jsonl")
    log.write({"step": 1, "event": "skip"})
    log.write({"step": 2, "event": "rollback"})
    assert [json.loads(x)["step"] for x in (tmp_path / "e.jsonl").read_text().splitlines()] == [1, 2]
    EventLog(None).write({"step": 3})  # ranks other than 0 write nothing
