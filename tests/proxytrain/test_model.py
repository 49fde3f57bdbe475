"""Model: presets, deterministic meta-device init, document masking, per-token loss, optimizer, schedule."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F

from proxytrain.flops import flops_per_token, mfu
from proxytrain.loss import evaluate, per_token_loss, target_mask
from proxytrain.lr_schedule import lr_at
from proxytrain.model import ModelConfig, build_model, count_params
from proxytrain.optim import make_optimizer

CFG = ModelConfig(vocab_size=64, d_model=32, n_layers=2, n_heads=4, max_seq_len=32)


def test_presets_sizes():
    tiny = build_model(ModelConfig.preset("tiny", vocab_size=4096), materialize=False)
    assert 0.9e6 < count_params(tiny) < 1.1e6
    assert all(p.device.type == "meta" for p in tiny.parameters())
    m125 = build_model(ModelConfig.preset("125m", vocab_size=50304), materialize=False)
    assert 80e6 < count_params(m125) < 90e6
    assert 120e6 < count_params(m125, non_embedding=False) < 130e6  # tied embedding counted once
    untied = build_model(ModelConfig.preset("tiny", vocab_size=4096, tie_embeddings=False), materialize=False)
    assert count_params(untied) == count_params(tiny)
    assert count_params(untied, non_embedding=False) == count_params(tiny, non_embedding=False) + 4096 * 128
    with pytest.raises(ValueError, match="unknown model preset"):
        ModelConfig.preset("huge")


def test_init_is_deterministic_and_seeded():
    a, b, c = build_model(CFG, seed=1), build_model(CFG, seed=1), build_model(CFG, seed=2)
    for (n, pa), pb, pc in zip(a.named_parameters(), b.parameters(), c.parameters(), strict=True):
        assert torch.equal(pa, pb), n
        if "norm" in n:
            assert torch.equal(pa, torch.ones_like(pa))
        else:
            assert not torch.equal(pa, pc), n
            assert pa.abs().max() <= 3 * CFG.init_std + 1e-6
    wo = a.layers[0].attn.wo.weight
    assert wo.std().item() == pytest.approx(CFG.init_std / math.sqrt(2 * CFG.n_layers), rel=0.2)


def test_packed_documents_do_not_see_each_other():
    """Logits of a document packed after another equal those of the document alone (RoPE is relative)."""
    model = build_model(CFG, seed=0)
    g = torch.Generator().manual_seed(0)
    doc_a, doc_b = torch.randint(0, 64, (10,), generator=g), torch.randint(0, 64, (14,), generator=g)
    packed = torch.cat([doc_a, doc_b, torch.zeros(8, dtype=torch.long)])[None]
    seg = torch.tensor([[0] * 10 + [1] * 14 + [-1] * 8], dtype=torch.int32)
    with torch.no_grad():
        out = model(packed, seg)
        alone_b = model(doc_b[None], torch.zeros(1, 14, dtype=torch.int32))
        alone_a = model(doc_a[None], torch.zeros(1, 10, dtype=torch.int32))
    torch.testing.assert_close(out[0, 10:24], alone_b[0], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(out[0, :10], alone_a[0], atol=1e-5, rtol=1e-5)
    assert torch.isfinite(out).all()  # padding rows attend among themselves: no NaN


def test_per_token_loss_and_mask():
    seg = torch.tensor([[0, 0, 0, 1, 1, -1, -1]], dtype=torch.int32)
    mask = target_mask(seg)
    assert mask.tolist() == [[True, True, False, True, False, False]]
    logits = torch.randn(1, 7, 11)
    tokens = torch.randint(0, 11, (1, 7))
    loss, m = per_token_loss(logits, tokens, seg)
    ref = F.cross_entropy(logits[0, :-1], tokens[0, 1:], reduction="none")
    torch.testing.assert_close(loss[0], ref * mask[0])
    assert torch.equal(m, mask)


def test_bf16_head_tracks_the_fp32_model():
    """head_dtype bf16: the output projection reads bf16 inputs (fp32 accumulation), its logits are bf16 and
    the loss fp32; losses and gradients stay within bf16 rounding of the fp32 model's, the rest of the model
    keeps fp32 parameters and gradients, and two runs agree to the bit."""
    import dataclasses

    g = torch.Generator().manual_seed(5)
    tokens = torch.randint(0, 64, (4, 32), generator=g)
    seg = torch.zeros_like(tokens, dtype=torch.int32)

    def run(head: str):
        model = build_model(dataclasses.replace(CFG, head_dtype=head), "cpu", seed=2)
        logits = model(tokens, seg)
        loss, mask = per_token_loss(logits, tokens, seg)
        (loss.sum() / mask.sum()).backward()
        return logits.dtype, loss.detach(), {n: p.grad for n, p in model.named_parameters()}

    dt32, loss32, grads32 = run("fp32")
    dt16, loss16, grads16 = run("bf16")
    assert dt32 == torch.float32 and dt16 == torch.bfloat16 and loss16.dtype == torch.float32
    assert abs(loss16.mean().item() - loss32.mean().item()) < 2e-3
    torch.testing.assert_close(loss16, loss32, atol=3e-2, rtol=1e-2)
    for n, grad in grads32.items():
        assert grads16[n].dtype == torch.float32
        cos = F.cosine_similarity(grads16[n].flatten(), grad.flatten(), dim=0).item()
        assert cos > 0.99, (n, cos)
    again = run("bf16")
    assert torch.equal(again[1], loss16) and all(torch.equal(again[2][n], grads16[n]) for n in grads16)


def test_evaluate_per_domain_matches_manual():
    model = build_model(CFG, seed=0)
    g = torch.Generator().manual_seed(3)
    tokens = torch.randint(0, 64, (4, 16), generator=g)
    seg = torch.zeros(4, 16, dtype=torch.int32)
    seg[1, 12:] = -1
    dom = torch.tensor([0, 1, 0, 1])
    res = evaluate(model, [{"tokens": tokens, "segment_ids": seg, "domain_id": dom}], ["x", "y"])
    with torch.no_grad():
        loss, mask = per_token_loss(model(tokens, seg), tokens, seg)
    want_x = (loss[[0, 2]].sum() / mask[[0, 2]].sum()).item()
    want_y = (loss[[1, 3]].sum() / mask[[1, 3]].sum()).item()
    assert res["x"] == pytest.approx(want_x, rel=1e-6)
    assert res["y"] == pytest.approx(want_y, rel=1e-6)
    assert res["all"] == pytest.approx((loss.sum() / mask.sum()).item(), rel=1e-6)
    assert model.training  # evaluate restores the mode


def test_optimizer_groups_and_schedule():
    cfg = SimpleNamespace(lr=1e-3, min_lr=1e-4, warmup_steps=10, steps=110, weight_decay=0.1, beta1=0.9,
                          beta2=0.95)
    model = build_model(CFG)
    opt = make_optimizer(model, cfg)
    decay, no_decay = opt.param_groups
    assert decay["weight_decay"] == 0.1 and no_decay["weight_decay"] == 0.0
    assert all(p.dim() == 2 for p in decay["params"]) and all(p.dim() == 1 for p in no_decay["params"])
    assert len(no_decay["params"]) == 2 * CFG.n_layers + 1  # the RMSNorm weights
    assert lr_at(0, cfg) == pytest.approx(1e-4)
    assert lr_at(9, cfg) == pytest.approx(1e-3)
    assert lr_at(60, cfg) == pytest.approx(0.55e-3)  # half way down the cosine
    assert lr_at(110, cfg) == pytest.approx(1e-4) and lr_at(500, cfg) == pytest.approx(1e-4)


def test_flops_per_token_formula():
    model = build_model(CFG)
    n = count_params(model) + CFG.d_model * CFG.vocab_size
    want = 6 * n + 12 * CFG.n_layers * CFG.d_model * 32
    assert flops_per_token(CFG, model, seq_len=32) == want
    assert flops_per_token(CFG, seq_len=32) == want  # the closed form agrees with the built model
    assert mfu(1000.0, want, peak=want * 4000.0) == pytest.approx(0.25)
    assert mfu(1000.0, want, peak=None) is None


def test_blocks_trace_as_one_graph_under_compile():
    """torch.compile sees each block whole (fullgraph: no break around RoPE/RMSNorm, GQA + document
    mask included) and gives the eager model's logits and gradients. Dynamo only (backend="eager"):
    the tracing is what is checked, inductor's codegen is not needed for it."""
    from proxytrain.train_cli import SyntheticSource

    cfg = ModelConfig(vocab_size=64, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, max_seq_len=32)
    eager, compiled = build_model(cfg, seed=0), build_model(cfg, seed=0)
    for blk in compiled.layers:
        blk.compile(backend="eager", fullgraph=True)
    b = SyntheticSource(vocab_size=64, seq_len=32).next_batch(2)
    for m in (eager, compiled):
        loss, mask = per_token_loss(m(b["tokens"], b["segment_ids"]), b["tokens"], b["segment_ids"])
        (loss.sum() / mask.sum()).backward()
    for (n, p), q in zip(eager.named_parameters(), compiled.parameters(), strict=True):
        torch.testing.assert_close(q.grad, p.grad, atol=1e-5, rtol=1e-4, msg=n)


def test_head_dtype_is_validated_and_keys_bf16_proxies_apart():
    from corpusmix.config import ConfigError
    from mix.proxy import ProxyConfig
    from mix.proxy_cache import proxy_key
    from proxytrain.train_config import TrainConfig, model_config

    with pytest.raises(ConfigError, match="head_dtype must be fp32 or bf16"):
        model_config(TrainConfig(head_dtype="fp16"), 64)
    with pytest.raises(ValueError, match="proxy head_dtype must be fp32 or bf16"):
        ProxyConfig(head_dtype="half").validate()
    assert model_config(TrainConfig(head_dtype="bf16"), 64).head_dtype == "bf16"
    fp32, bf16 = ProxyConfig(device="cpu"), ProxyConfig(device="cpu", head_dtype="bf16")
    assert proxy_key("fp", [0.5, 0.5], fp32, 0) != proxy_key("fp", [0.5, 0.5], bf16, 0)


def test_proxy_key_changes_with_the_numeric_libraries_settings(monkeypatch):
    """A cached proxy computed under other library settings (e.g. MKL_CBWR without STRICT) is not read back."""
    from corpusmix import numerics
    from mix.proxy import ProxyConfig
    from mix.proxy_cache import proxy_key

    cfg = ProxyConfig(device="cpu")
    settings = dict(numerics._STATE.get("settings", {}))
    base = proxy_key("fp", [0.5, 0.5], cfg, 0)
    monkeypatch.setitem(numerics._STATE, "settings", {**settings, "MKL_CBWR": "AVX2"})
    assert proxy_key("fp", [0.5, 0.5], cfg, 0) != base
    monkeypatch.setitem(numerics._STATE, "settings", settings)
    assert proxy_key("fp", [0.5, 0.5], cfg, 0) == base
