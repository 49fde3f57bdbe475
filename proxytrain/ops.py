"""Hand-written forward/backward pairs for the model's elementwise parts (RMSNorm, RoPE, cross-entropy).

Why: on CPU a proxy-sized model spends about half of a step outside the matmuls, and there the cost
is the number of kernels and full-size temporaries, not FLOPs. Autograd of the composite versions
records every intermediate op: RMSNorm's ``pow/mean/rsqrt/mul`` chain has ~15 backward kernels,
RoPE's slices and ``cat`` allocate a zero-filled tensor per slice in backward, and the loss on
``logits[:, :-1]`` copies the [B, S, V] logits and zero-fills them again in backward. Each function
here saves only what its backward needs and writes each result once. Numerics follow the composite
versions (statistics and rotations in fp32, results in the input dtype); ``tests/proxytrain/test_ops.py``
checks values and gradients against them.

Under ``torch.compile`` the composite forms are used instead: inductor fuses them into a few
generated kernels by itself, and a graph made of plain ops has no break around a custom function.
"""

from __future__ import annotations

import torch
from torch.autograd import Function


def _wide(t: torch.Tensor) -> torch.Tensor:
    """``t`` in at least fp32 (bf16/fp16 widened, fp32/fp64 as they are)."""
    return t.to(torch.promote_types(t.dtype, torch.float32))


class _RMSNorm(Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:  # noqa: ANN001
        xf = _wide(x)
        rstd = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True).add_(eps))
        ctx.save_for_backward(x, weight, rstd)
        return (xf * rstd).mul_(_wide(weight)).to(x.dtype)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):  # noqa: ANN001, ANN205
        x, weight, rstd = ctx.saved_tensors
        xhat = _wide(x) * rstd
        g = _wide(grad)
        gw = (g * xhat).reshape(-1, xhat.shape[-1]).sum(0)
        gxhat = g * _wide(weight)
        dot = (gxhat * xhat).mean(-1, keepdim=True)
        gx = gxhat.sub_(xhat.mul_(dot)).mul_(rstd)
        return gx.to(x.dtype), gw.to(weight.dtype), None


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """``x / sqrt(mean(x^2) + eps) * weight`` over the last dim, statistics in fp32."""
    if torch.compiler.is_compiling():
        return torch.nn.functional.rms_norm(_wide(x), (x.shape[-1],), _wide(weight), eps).to(x.dtype)
    return _RMSNorm.apply(x, weight, eps)


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, out: torch.Tensor) -> None:
    """out = x rotated by (cos, sin), half-split convention; arithmetic in fp32, one rounding."""
    half = x.shape[-1] // 2
    wide = torch.promote_types(out.dtype, torch.float32)
    tgt = out if out.dtype == wide else torch.empty(out.shape, dtype=wide, device=out.device)
    x1, x2 = x[..., :half], x[..., half:]
    o1, o2 = tgt[..., :half], tgt[..., half:]
    torch.mul(x1, cos, out=o1)
    o1.addcmul_(x2, sin, value=-1.0)
    torch.mul(x1, sin, out=o2)
    o2.addcmul_(x2, cos)
    if tgt is not out:
        out.copy_(tgt)


class _RopeHeads(Function):
    @staticmethod
    def forward(ctx, qkv: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, n_rot: int) -> torch.Tensor:  # noqa: ANN001
        out = torch.empty_like(qkv, memory_format=torch.contiguous_format)
        _rotate(qkv[:, :, :n_rot], cos, sin, out[:, :, :n_rot])
        out[:, :, n_rot:] = qkv[:, :, n_rot:]
        ctx.save_for_backward(cos, sin)
        ctx.n_rot = n_rot
        return out

    @staticmethod
    def backward(ctx, grad: torch.Tensor):  # noqa: ANN001, ANN205
        cos, sin = ctx.saved_tensors
        n = ctx.n_rot
        gin = torch.empty_like(grad, memory_format=torch.contiguous_format)
        _rotate(grad[:, :, :n], cos, -sin, gin[:, :, :n])  # the inverse rotation is the transpose
        gin[:, :, n:] = grad[:, :, n:]
        return gin, None, None, None


def rope_heads(qkv: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, n_rot: int) -> torch.Tensor:
    """RoPE on the first ``n_rot`` heads of ``qkv`` [B, S, H, D] (q and k), the rest copied (v).

    ``cos``/``sin`` are the fp32 tables [S, D/2]; the rotation is computed in fp32 whatever the
    dtype of ``qkv`` (as with autocast), so bf16 runs see exact angles.
    """
    cos, sin = cos[:, None, :], sin[:, None, :]
    if torch.compiler.is_compiling():
        half = qkv.shape[-1] // 2
        x = _wide(qkv[:, :, :n_rot])
        x1, x2 = x[..., :half], x[..., half:]
        rot = torch.cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).to(qkv.dtype)
        return torch.cat((rot, qkv[:, :, n_rot:]), dim=2)
    return _RopeHeads.apply(qkv, cos, sin, n_rot)


class _CrossEntropy(Function):
    @staticmethod
    def forward(ctx, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:  # noqa: ANN001
        logp = torch.log_softmax(_wide(logits), dim=-1)
        valid = targets >= 0
        tgt = targets.clamp_min(0)
        loss = logp.gather(1, tgt[:, None]).squeeze(1).neg_().mul_(valid)
        ctx.save_for_backward(logp, tgt, valid)
        ctx.in_dtype = logits.dtype
        return loss

    @staticmethod
    def backward(ctx, grad: torch.Tensor):  # noqa: ANN001, ANN205
        logp, tgt, valid = ctx.saved_tensors
        g = grad * valid
        # d/dlogits = (softmax - onehot) * g, written over the saved log-probabilities: they are not
        # needed afterwards, and a [N, V] allocation less matters on CPU (fresh pages fault in). A
        # second backward through this graph (retain_graph) fails loudly on the version check.
        out = logp.exp_().mul_(g[:, None])
        out.scatter_add_(1, tgt[:, None], -g[:, None])
        return out.to(ctx.in_dtype), None


def cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Per-row cross-entropy of ``logits`` [N, V] (fp32 result); rows with a negative target give 0."""
    if torch.compiler.is_compiling():
        return torch.nn.functional.cross_entropy(_wide(logits), targets, reduction="none", ignore_index=-1)
    return _CrossEntropy.apply(logits, targets)
