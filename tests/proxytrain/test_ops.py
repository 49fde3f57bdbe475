"""Hand-written RMSNorm / RoPE / attention / SwiGLU / cross-entropy: values and gradients equal the composite versions."""

from __future__ import annotations

import shutil

import pytest
import torch
import torch.nn.functional as F

from proxytrain import cpu_kernels
from proxytrain import model as model_mod
from proxytrain.attention import attend, prepare_attention
from proxytrain.model import ModelConfig, apply_rope, build_model
from proxytrain.ops import (
    cross_entropy,
    rms_norm,
    rope_attention,
    rope_attention_supported,
    rope_heads,
    swiglu,
)


@pytest.fixture(params=["kernels", "torch-ops"])
def path(request, monkeypatch):
    """Each op test runs twice: through the fused C kernels (one thread, fp32; built here if need be)
    and through the torch-op versions they replace where no compiler is found."""
    if request.param == "torch-ops":
        monkeypatch.setattr(cpu_kernels, "usable", lambda *t: False)
        monkeypatch.setattr(cpu_kernels, "ce_usable", lambda *t: False)
    elif shutil.which("g++") or shutil.which("c++"):
        assert cpu_kernels.lib() is not None  # a compiler is here: the kernels must build, not fall back
    return request.param


def _grads(fn, *inputs):
    inputs = [t.detach().clone().requires_grad_(t.is_floating_point()) for t in inputs]
    out = fn(*inputs)
    g = torch.randn(out.shape, generator=torch.Generator().manual_seed(7), dtype=torch.float32).to(out.dtype)
    out.backward(g)
    return out.detach(), [t.grad for t in inputs if t.requires_grad]


def test_gradcheck_float64():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 5, 16, dtype=torch.float64, generator=g, requires_grad=True)
    w = torch.randn(16, dtype=torch.float64, generator=g, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b: rms_norm(a, b, 1e-5), (x, w))
    qkv = torch.randn(2, 5, 6, 8, dtype=torch.float64, generator=g, requires_grad=True)
    cos, sin = torch.randn(5, 4, dtype=torch.float64, generator=g), torch.randn(5, 4, dtype=torch.float64, generator=g)
    assert torch.autograd.gradcheck(lambda a: rope_heads(a, cos, sin, 4), (qkv,))
    # cross_entropy's backward reuses its saved buffer (no gradcheck: that runs backward repeatedly);
    # in fp64 it must equal torch's own loss and gradient to rounding
    logits = torch.randn(7, 11, dtype=torch.float64, generator=g)
    targets = torch.tensor([1, -1, 3, 4, 0, -1, 10])
    out, (grad,) = _grads(lambda t: cross_entropy(t, targets), logits)
    out_ref, (grad_ref,) = _grads(lambda t: F.cross_entropy(t, targets, reduction="none", ignore_index=-1), logits)
    torch.testing.assert_close(out, out_ref, atol=1e-12, rtol=1e-12)
    torch.testing.assert_close(grad, grad_ref, atol=1e-12, rtol=1e-12)
    x = logits.clone().requires_grad_()
    loss = cross_entropy(x, targets).sum()
    loss.backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()  # a second pass cannot silently read the overwritten buffer


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_rms_norm_matches_composite(dtype, path):
    g = torch.Generator().manual_seed(1)
    x = (3 * torch.randn(4, 9, 48, generator=g)).to(dtype)
    w = torch.rand(48, generator=g) + 0.5

    def ref(a, b):
        return F.rms_norm(a.float(), (48,), b.float(), 1e-5).type_as(a)

    out, grads = _grads(lambda a, b: rms_norm(a, b, 1e-5), x, w)
    out_ref, grads_ref = _grads(ref, x, w)
    assert out.dtype == dtype and grads[0].dtype == dtype and grads[1].dtype == torch.float32
    tol = {"atol": 1e-5, "rtol": 1e-5} if dtype == torch.float32 else {"atol": 2e-2, "rtol": 2e-2}
    torch.testing.assert_close(out, out_ref, **tol)
    for a, b in zip(grads, grads_ref, strict=True):
        torch.testing.assert_close(a, b, **tol)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_rope_heads_matches_composite(dtype, path):
    """q/k heads rotated as ``apply_rope`` does on [B, H, S, D]; the v heads pass through untouched."""
    g = torch.Generator().manual_seed(2)
    b, s, hq, hk, d = 2, 12, 4, 2, 16
    qkv = torch.randn(b, s, hq + 2 * hk, d, generator=g).to(dtype)
    ang = torch.outer(torch.arange(s, dtype=torch.float64), 1.0 / 10000 ** (torch.arange(0, d, 2) / d))
    cos, sin = ang.cos().float(), ang.sin().float()

    def ref(t):
        x = t.transpose(1, 2)
        rot = apply_rope(x[:, : hq + hk], cos, sin)
        return torch.cat([rot, x[:, hq + hk:]], dim=1).transpose(1, 2)

    out, (grad,) = _grads(lambda t: rope_heads(t, cos, sin, hq + hk), qkv)
    out_ref, (grad_ref,) = _grads(ref, qkv)
    assert out.dtype == dtype and grad.dtype == dtype
    tol = {"atol": 1e-6, "rtol": 1e-5} if dtype == torch.float32 else {"atol": 1e-2, "rtol": 1e-2}
    torch.testing.assert_close(out, out_ref, **tol)
    torch.testing.assert_close(grad, grad_ref, **tol)
    assert torch.equal(out[:, :, hq + hk:], qkv[:, :, hq + hk:])


def test_cross_entropy_matches_torch_and_ignores_negative_targets(path):
    g = torch.Generator().manual_seed(3)
    logits = 4 * torch.randn(10, 37, generator=g)
    targets = torch.randint(0, 37, (10,), generator=g)
    targets[[2, 7]] = -1
    out, (grad,) = _grads(lambda t: cross_entropy(t, targets), logits)
    out_ref, (grad_ref,) = _grads(lambda t: F.cross_entropy(t, targets, reduction="none", ignore_index=-1), logits)
    torch.testing.assert_close(out, out_ref, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(grad, grad_ref, atol=1e-6, rtol=1e-5)
    assert out[2] == 0 and out[7] == 0 and torch.count_nonzero(grad[[2, 7]]) == 0
    bf = logits.to(torch.bfloat16).requires_grad_()
    loss = cross_entropy(bf, targets)
    loss.sum().backward()
    assert loss.dtype == torch.float32 and bf.grad.dtype == torch.bfloat16  # fp32 loss, grads in the input dtype
    # bf16 logits are read as they are: the loss is that of their fp32 widening, the gradient that
    # gradient rounded to bf16
    out, (grad,) = _grads(lambda t: cross_entropy(t, targets), logits.to(torch.bfloat16))
    wide = logits.to(torch.bfloat16).float()
    out_ref, (grad_ref,) = _grads(lambda t: F.cross_entropy(t, targets, reduction="none", ignore_index=-1), wide)
    torch.testing.assert_close(out, out_ref, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(grad.float(), grad_ref.to(torch.bfloat16).float(), atol=2e-3, rtol=1e-2)
    assert torch.count_nonzero(grad[[2, 7]]) == 0


def test_fused_cross_entropy_takes_a_vocabulary_sized_row_and_rejects_bad_targets():
    if cpu_kernels.lib() is None:
        pytest.skip("no C++ compiler: the fused kernels cannot be built here")
    g = torch.Generator().manual_seed(4)
    logits = 6 * torch.randn(33, 4099, generator=g)  # a row far beyond L1, not a multiple of the vector width
    targets = torch.randint(0, 4099, (33,), generator=g)
    targets[0] = -1
    assert cpu_kernels.ce_usable(logits, targets)
    out, (grad,) = _grads(lambda t: cross_entropy(t, targets), logits)
    out_ref, (grad_ref,) = _grads(lambda t: F.cross_entropy(t, targets, reduction="none", ignore_index=-1), logits)
    torch.testing.assert_close(out, out_ref, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(grad, grad_ref, atol=1e-7, rtol=1e-4)
    assert torch.equal(cross_entropy(logits, targets), out)  # deterministic
    with pytest.raises(IndexError, match="out of range"):
        cross_entropy(logits, torch.full((33,), 4099))
    assert not cpu_kernels.ce_usable(logits.double(), targets)
    assert not cpu_kernels.ce_usable(logits[:, ::2], targets)  # not contiguous: torch's version


def test_compiled_graphs_get_the_composite_forms_with_the_same_numbers(monkeypatch):
    """Under torch.compile the plain-op forms are traced (inductor fuses them); same values and grads."""
    g = torch.Generator().manual_seed(4)
    x, w = torch.randn(3, 7, 32, generator=g), torch.rand(32, generator=g) + 0.5
    qkv = torch.randn(2, 7, 5, 16, generator=g)
    cos, sin = torch.randn(7, 8, generator=g), torch.randn(7, 8, generator=g)
    logits, targets = torch.randn(9, 13, generator=g), torch.tensor([0, 3, -1, 12, 5, 5, -1, 1, 2])
    h = torch.randn(3, 7, 20, generator=g)
    cases = [(lambda a, b: rms_norm(a, b, 1e-5), (x, w)), (lambda a: rope_heads(a, cos, sin, 3), (qkv,)),
             (lambda a: cross_entropy(a, targets), (logits,)), (swiglu, (h,))]
    eager = [_grads(fn, *args) for fn, args in cases]
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
    for (fn, args), (out, grads) in zip(cases, eager, strict=True):
        out_c, grads_c = _grads(fn, *args)
        torch.testing.assert_close(out_c, out, atol=1e-5, rtol=1e-5)
        for a, b in zip(grads_c, grads, strict=True):
            torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
@pytest.mark.parametrize("packed", [True, False])
def test_rope_attention_equals_rope_then_sdpa(dtype, packed, path):
    """The fused CPU path gives the composite path's numbers (rope_heads, split, SDPA) to the bit,
    with a document mask (packed rows) and on plain causal rows (no mask)."""
    g = torch.Generator().manual_seed(5)
    b, s, h, d = 3, 16, 4, 8
    seg = torch.tensor([[0] * 5 + [1] * 7 + [2] * 3 + [-1], [0] * 16, [0] * 9 + [-1] * 7], dtype=torch.int32)
    ctx = prepare_attention(seg if packed else torch.zeros_like(seg), "sdpa", dtype)
    assert (ctx.mask is None) != packed
    qkv = torch.randn(b, s, 3 * h, d, generator=g).to(dtype)
    ang = torch.outer(torch.arange(s, dtype=torch.float64), 1.0 / 10000 ** (torch.arange(0, d, 2) / d))
    cos, sin = ang.cos().float(), ang.sin().float()
    assert rope_attention_supported(qkv, h, ctx.mask)

    def composite(t):
        q, k, v = rope_heads(t, cos, sin, 2 * h).transpose(1, 2).split([h, h, h], dim=1)
        return attend(q, k, v, ctx)

    out, (grad,) = _grads(lambda t: rope_attention(t, cos, sin, h, ctx.mask), qkv)
    out_ref, (grad_ref,) = _grads(composite, qkv)
    assert out.shape == (b, h, s, d) and grad.dtype == dtype
    assert torch.equal(out, out_ref) and torch.equal(grad, grad_ref)


def test_rope_attention_is_refused_where_the_composite_path_must_run():
    qkv = torch.zeros(1, 4, 12, 8)
    assert rope_attention_supported(qkv, 4, None)
    assert not rope_attention_supported(qkv[:, :, :8], 4, None)  # 4 q + 2 k + 2 v heads: grouped-query
    assert not rope_attention_supported(qkv, 4, torch.zeros(1, 1, 4, 4, dtype=torch.bool))  # boolean mask
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert not rope_attention_supported(qkv, 4, None)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
def test_swiglu_equals_silu_times_up(dtype, path):
    g = torch.Generator().manual_seed(6)
    h = (2 * torch.randn(2, 5, 2 * 24, generator=g)).to(dtype)

    def composite(t):
        gate, up = t.chunk(2, dim=-1)
        return F.silu(gate) * up

    out, (grad,) = _grads(swiglu, h)
    out_ref, (grad_ref,) = _grads(composite, h)
    assert out.shape == (2, 5, 24) and grad.dtype == dtype
    # torch ops: the same kernels as the composite (bit-equal forward); the fused fp32 kernel
    # computes silu as gate * sigmoid(gate) with glibc's vector expf: equal within fp32 rounding
    fused = path == "kernels" and dtype == torch.float32
    torch.testing.assert_close(out, out_ref, atol=2e-6 if fused else 0, rtol=2e-6 if fused else 0)
    torch.testing.assert_close(grad, grad_ref, atol=1e-6, rtol=1e-6)
    if dtype == torch.float64:
        assert torch.autograd.gradcheck(swiglu, (h[:1, :2].detach().requires_grad_(),))


def test_fused_kernels_fall_back_to_torch_ops_without_a_compiler(monkeypatch, tmp_path):
    """No compiler (or kernels switched off) -> lib() is None, the ops take the torch-op path."""
    monkeypatch.setenv("CORPUSMIX_KERNEL_CACHE", str(tmp_path))
    monkeypatch.setenv("CXX", str(tmp_path / "no-such-compiler"))
    cpu_kernels.lib.cache_clear()
    try:
        assert cpu_kernels.lib() is None and not cpu_kernels.usable(torch.zeros(2))
        x = torch.randn(4, 16, generator=torch.Generator().manual_seed(8))
        torch.testing.assert_close(rms_norm(x, torch.ones(16), 1e-5), F.rms_norm(x, (16,), None, 1e-5))
        cpu_kernels.lib.cache_clear()
        monkeypatch.delenv("CXX")
        monkeypatch.setenv("CORPUSMIX_CPU_KERNELS", "0")
        assert cpu_kernels.lib() is None
    finally:
        cpu_kernels.lib.cache_clear()


def test_kernels_apply_only_to_one_thread_fp32_cpu_tensors():
    x = torch.zeros(2, 4)
    assert cpu_kernels.usable(x) == (cpu_kernels.lib() is not None)
    assert not cpu_kernels.usable(x.double()) and not cpu_kernels.usable(x.bfloat16())
    torch.set_num_threads(2)  # the conftest fixture restores one thread
    assert not cpu_kernels.usable(x)


def test_model_with_fused_kernels_matches_torch_ops(monkeypatch):
    """Whole model (fused kernels, residual adds inside addmm) vs torch ops and plain adds: logits and every
    parameter gradient equal within fp32 rounding; two runs of the fused path equal to the bit."""
    if cpu_kernels.lib() is None:
        pytest.skip("no C++ compiler: the fused kernels cannot be built here")
    cfg = ModelConfig.preset("tiny", vocab_size=97, max_seq_len=32, attn_backend="sdpa")
    g = torch.Generator().manual_seed(9)
    tokens = torch.randint(0, 97, (2, 32), generator=g)
    seg = torch.tensor([[0] * 20 + [1] * 12, [0] * 32], dtype=torch.int32)

    def run():
        model = build_model(cfg, "cpu", seed=3)
        logits = model(tokens, seg)
        logits.square().mean().backward()
        return logits.detach(), {n: p.grad for n, p in model.named_parameters()}

    calls = []
    for name in ("rms_forward", "rms_backward", "swiglu_forward", "swiglu_backward", "rope"):
        fn = getattr(cpu_kernels, name)
        monkeypatch.setattr(cpu_kernels, name, lambda *a, _fn=fn, _n=name, **k: calls.append(_n) or _fn(*a, **k))
    fused, again = run(), run()
    # every norm (2 per block + the final one), SwiGLU and q/k rotation went through the kernels
    n = cfg.n_layers
    assert {c: calls.count(c) for c in set(calls)} == {
        "rms_forward": 2 * (2 * n + 1), "rms_backward": 2 * (2 * n + 1), "swiglu_forward": 2 * n,
        "swiglu_backward": 2 * n, "rope": 2 * 3 * n}
    assert torch.equal(fused[0], again[0])
    assert all(torch.equal(fused[1][n], again[1][n]) for n in fused[1])
    monkeypatch.setattr(cpu_kernels, "usable", lambda *t: False)
    monkeypatch.setattr(model_mod, "_fuse_residual", lambda x: False)
    ref = run()
    torch.testing.assert_close(fused[0], ref[0], atol=1e-5, rtol=1e-5)
    for n in ref[1]:
        torch.testing.assert_close(fused[1][n], ref[1][n], atol=1e-6, rtol=1e-4, msg=n)


def test_bf16_head_on_a_cpu_without_native_bf16_warns_once(monkeypatch, caplog):
    import logging

    caplog.set_level(logging.WARNING, logger=cpu_kernels.log.name)
    monkeypatch.setattr(cpu_kernels, "native_bf16", lambda: False)
    cpu_kernels.warn_without_native_bf16.cache_clear()
    try:
        cpu_kernels.warn_without_native_bf16()
        cpu_kernels.warn_without_native_bf16()
        hits = [r for r in caplog.records if "without avx512_bf16" in r.getMessage()]
        assert len(hits) == 1 and "head_dtype: fp32" in hits[0].getMessage()
        cpu_kernels.warn_without_native_bf16.cache_clear()
        monkeypatch.setattr(cpu_kernels, "native_bf16", lambda: True)
        caplog.clear()
        cpu_kernels.warn_without_native_bf16()
        assert not caplog.records
    finally:
        cpu_kernels.warn_without_native_bf16.cache_clear()
