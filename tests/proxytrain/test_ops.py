"""Hand-written RMSNorm / RoPE / attention / SwiGLU / cross-entropy: values and gradients equal the composite versions."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from proxytrain.attention import attend, prepare_attention
from proxytrain.model import apply_rope
from proxytrain.ops import (
    cross_entropy,
    rms_norm,
    rope_attention,
    rope_attention_supported,
    rope_heads,
    swiglu,
)


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
def test_rms_norm_matches_composite(dtype):
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
def test_rope_heads_matches_composite(dtype):
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


def test_cross_entropy_matches_torch_and_ignores_negative_targets():
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
def test_rope_attention_equals_rope_then_sdpa(dtype, packed):
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
def test_swiglu_equals_silu_times_up(dtype):
    g = torch.Generator().manual_seed(6)
    h = (2 * torch.randn(2, 5, 2 * 24, generator=g)).to(dtype)

    def composite(t):
        gate, up = t.chunk(2, dim=-1)
        return F.silu(gate) * up

    out, (grad,) = _grads(swiglu, h)
    out_ref, (grad_ref,) = _grads(composite, h)
    assert out.shape == (2, 5, 24) and grad.dtype == dtype
    torch.testing.assert_close(out, out_ref, atol=0, rtol=0)
    torch.testing.assert_close(grad, grad_ref, atol=1e-6, rtol=1e-6)
    if dtype == torch.float64:
        assert torch.autograd.gradcheck(swiglu, (h[:1, :2].detach().requires_grad_(),))
