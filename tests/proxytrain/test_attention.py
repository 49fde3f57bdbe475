"""Attention backends agree with a naive document-masked reference (and with each other)."""

from __future__ import annotations

import math

import pytest
import torch

from proxytrain.attention import (
    attend,
    auto_reason,
    cu_seqlens_from_segments,
    flash_available,
    prepare_attention,
    resolve_backend,
)


def _segments() -> torch.Tensor:
    return torch.tensor([[0] * 5 + [1] * 7 + [2] * 3 + [-1] * 1,
                         [0] * 16,
                         [0] * 9 + [-1] * 7], dtype=torch.int32)


def _reference(q, k, v, seg):
    h, hk = q.shape[1], k.shape[1]
    k, v = k.repeat_interleave(h // hk, 1), v.repeat_interleave(h // hk, 1)
    s = q.shape[2]
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    allowed = (seg[:, :, None] == seg[:, None, :]) & torch.ones(s, s, dtype=torch.bool).tril()
    scores = scores.masked_fill(~allowed[:, None], float("-inf"))
    return scores.softmax(-1) @ v


@pytest.mark.parametrize("backend", ["sdpa", "flex"])
@pytest.mark.parametrize("kv_heads", [4, 2])
def test_backend_matches_reference(backend, kv_heads):
    g = torch.Generator().manual_seed(0)
    seg = _segments()
    q = torch.randn(3, 4, 16, 8, generator=g)
    k, v = torch.randn(3, kv_heads, 16, 8, generator=g), torch.randn(3, kv_heads, 16, 8, generator=g)
    out = attend(q, k, v, prepare_attention(seg, backend))
    torch.testing.assert_close(out, _reference(q, k, v, seg), atol=1e-5, rtol=1e-5)


def test_sdpa_single_document_takes_causal_path():
    seg = torch.zeros(2, 8, dtype=torch.int32)
    ctx = prepare_attention(seg, "sdpa")
    assert ctx.mask is None
    assert prepare_attention(_segments(), "sdpa").mask.shape == (3, 1, 16, 16)


def test_cu_seqlens():
    cu = cu_seqlens_from_segments(_segments())
    assert cu.dtype == torch.int32
    assert cu.tolist() == [0, 5, 12, 15, 16, 32, 41, 48]


def test_resolve_backend():
    assert resolve_backend("auto", "cpu") == "sdpa"
    assert resolve_backend("flex", "cpu") == "flex"
    with pytest.raises(ValueError, match="needs a CUDA device"):
        resolve_backend("flash", "cpu")
    with pytest.raises(ValueError, match="attn_backend must be one of"):
        resolve_backend("xformers", "cpu")


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available() or not flash_available(), reason="needs CUDA + a FlashAttention varlen kernel")
@pytest.mark.parametrize("kv_heads", [4, 2])
def test_flash_matches_sdpa_on_cuda(kv_heads):
    g = torch.Generator(device="cuda").manual_seed(0)
    seg = _segments().cuda()
    q = torch.randn(3, 4, 16, 64, generator=g, device="cuda", dtype=torch.bfloat16)
    k, v = (torch.randn(3, kv_heads, 16, 64, generator=g, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    flash = attend(q, k, v, prepare_attention(seg, "flash"))
    sdpa = attend(q, k, v, prepare_attention(seg, "sdpa", torch.bfloat16))
    keep = (seg >= 0)[:, None, :, None].expand_as(flash)  # padding outputs are unused
    torch.testing.assert_close(flash[keep].float(), sdpa[keep].float(), atol=2e-2, rtol=2e-2)


def test_gqa_with_document_mask_repeats_kv_instead_of_enable_gqa(monkeypatch):
    """Fused CUDA SDPA kernels refuse enable_gqa with an explicit mask (silent math fallback): the
    masked GQA path must hand SDPA full-head k/v and no enable_gqa; the causal path keeps enable_gqa."""
    import torch.nn.functional as F

    calls = []
    real = F.scaled_dot_product_attention

    def spy(q, k, v, **kw):
        calls.append((q.shape[1], k.shape[1], kw.get("enable_gqa", False), kw.get("attn_mask") is not None))
        return real(q, k, v, **kw)

    monkeypatch.setattr(F, "scaled_dot_product_attention", spy)
    g = torch.Generator().manual_seed(1)
    q = torch.randn(3, 4, 16, 8, generator=g)
    k, v = torch.randn(3, 2, 16, 8, generator=g), torch.randn(3, 2, 16, 8, generator=g)
    seg = _segments()
    out = attend(q, k, v, prepare_attention(seg, "sdpa", torch.float32))
    torch.testing.assert_close(out, _reference(q, k, v, seg), atol=1e-5, rtol=1e-5)
    assert calls[-1] == (4, 4, False, True)
    attend(q, k, v, prepare_attention(torch.zeros(3, 16, dtype=torch.int32), "sdpa"))
    assert calls[-1] == (4, 2, True, False)


def test_additive_mask_in_the_compute_dtype():
    seg = _segments()
    ctx = prepare_attention(seg, "sdpa", torch.bfloat16)
    assert ctx.mask.dtype == torch.bfloat16
    allowed = prepare_attention(seg, "sdpa").mask
    assert torch.equal(ctx.mask == 0, allowed) and bool(torch.isinf(ctx.mask[~allowed]).all())


def test_auto_reason_says_why():
    assert auto_reason("cpu").startswith("sdpa: FlashAttention needs CUDA")
