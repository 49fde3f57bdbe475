"""Hand-written forward/backward pairs for the model's non-matmul parts (RMSNorm, RoPE, SwiGLU,
RoPE + attention on CPU, cross-entropy).

Why: on CPU a proxy-sized model spends about half of a step outside the matmuls, and there the cost
is the number of kernels and full-size temporaries, not FLOPs. Autograd of the composite versions
records every intermediate op: RMSNorm's ``pow/mean/rsqrt/mul`` chain has ~15 backward kernels,
RoPE's slices and ``cat`` allocate a zero-filled tensor per slice in backward, and the loss on
``logits[:, :-1]`` copies the [B, S, V] logits and zero-fills them again in backward, ``chunk`` and
``split`` concatenate fresh gradient tensors in backward. Each function
here saves only what its backward needs and writes each result once. Numerics follow the composite
versions (statistics and rotations in fp32, results in the input dtype); ``tests/proxytrain/test_ops.py``
checks values and gradients against them.

On one CPU thread with fp32 tensors, RMSNorm, RoPE and SwiGLU run fused C kernels
(``proxytrain.cpu_kernels``: one pass per row instead of one per op, built on first use); without a
compiler, or with more threads, the torch-op versions below run (same numbers within fp32 rounding).
The cross-entropy kernel also takes bf16 logits (the ``head_dtype: bf16`` output projection): it
reads each row once into L1 for its logsumexp and once more in backward to write the gradient in
the logits' dtype, instead of torch's log-softmax, exp and scatter passes over a [N, V] fp32 copy.

Under ``torch.compile`` the composite forms are used instead: inductor fuses them into a few
generated kernels by itself, and a graph made of plain ops has no break around a custom function.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.autograd import Function

from proxytrain import cpu_kernels


def _wide(t: torch.Tensor) -> torch.Tensor:
    """``t`` in at least fp32 (bf16/fp16 widened, fp32/fp64 as they are)."""
    return t.to(torch.promote_types(t.dtype, torch.float32))


class _RMSNorm(Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:  # noqa: ANN001
        if x.is_contiguous() and weight.is_contiguous() and cpu_kernels.usable(x, weight):
            y, rstd = cpu_kernels.rms_forward(x, weight, eps)  # one fused pass per row
            ctx.save_for_backward(x, weight, rstd)
            return y
        xf = _wide(x)
        # one reduction pass (no x**2 temporary): mean(x^2) = |x|^2 / d
        rstd = torch.linalg.vector_norm(xf, dim=-1, keepdim=True).square_().div_(x.shape[-1]).add_(eps).rsqrt_()
        ctx.save_for_backward(x, weight, rstd)
        return torch.mul(xf, rstd).mul_(_wide(weight)).to(x.dtype)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):  # noqa: ANN001, ANN205
        # y = x r w with r = (mean(x^2) + eps)^-1/2:
        #   dx = r (g w) - x r^3 / d * sum_j(g x w),   dw = sum_rows(r g x)
        # both row/column sums are matrix-vector products of p = g x (BLAS, one read each)
        x, weight, rstd = ctx.saved_tensors
        if x.is_contiguous() and weight.is_contiguous() and cpu_kernels.usable(grad, x, weight):
            return (*cpu_kernels.rms_backward(grad, x, weight, rstd), None)
        xf, g, w = _wide(x), _wide(grad), _wide(weight)
        d = x.shape[-1]
        p = (g * xf).view(-1, d)
        gw = p.t().mv(rstd.view(-1))
        c = p.mv(w).view(rstd.shape).mul_(rstd.square()).div_(-d)  # -r^2 / d * sum_j(g x w)
        gx = torch.mul(g, w).addcmul_(xf, c).mul_(rstd)
        return gx.to(x.dtype), gw.to(weight.dtype), None


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """``x / sqrt(mean(x^2) + eps) * weight`` over the last dim, statistics in fp32."""
    if torch.compiler.is_compiling():
        return torch.nn.functional.rms_norm(_wide(x), (x.shape[-1],), _wide(weight), eps).to(x.dtype)
    return _RMSNorm.apply(x, weight, eps)


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, out: torch.Tensor) -> None:
    """out = x rotated by (cos, sin), half-split convention; arithmetic in fp32, one rounding.

    ``x``/``out`` are [B, S, H, D], ``cos``/``sin`` [S, 1, D/2]. The cosine term is one pass over
    whole heads (a [S, 1, D] table: inner loops of D, not D/2); only the two sine terms work on halves.
    """
    if cpu_kernels.rope_supported(x, out):  # one fused pass, strided views read/written in place
        cpu_kernels.rope(x, cos[:, 0], sin[:, 0], out)
        return
    half = x.shape[-1] // 2
    wide = torch.promote_types(out.dtype, torch.float32)
    tgt = out if out.dtype == wide else torch.empty(out.shape, dtype=wide, device=out.device)
    torch.mul(x, torch.cat((cos, cos), dim=-1), out=tgt)
    tgt[..., :half].addcmul_(x[..., half:], sin, value=-1.0)
    tgt[..., half:].addcmul_(x[..., :half], sin)
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


class _RopeAttention(Function):
    """RoPE on q and k, then the CPU flash-attention kernel, from the fused qkv projection output.

    The composite path writes a rotated copy of all of qkv (v included), and in backward the split
    into q/k/v concatenates the three SDPA gradients into one tensor before the rotation is undone
    in a second full-size pass. Here v is read in place and the inverse rotation writes the q/k
    gradients straight into the qkv gradient: one full-size copy less each way. The kernel is the
    one ``scaled_dot_product_attention`` dispatches to on CPU, called with the same arguments.
    """

    @staticmethod
    def forward(ctx, qkv: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, n_heads: int,  # noqa: ANN001
                mask: torch.Tensor | None) -> torch.Tensor:
        b, s, _, d = qkv.shape
        n_rot = 2 * n_heads
        qk = torch.empty((b, s, n_rot, d), dtype=qkv.dtype, device=qkv.device)
        _rotate(qkv[:, :, :n_rot], cos, sin, qk)
        q, k = qk.transpose(1, 2).split(n_heads, dim=1)
        v = qkv[:, :, n_rot:].transpose(1, 2)
        out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
            q, k, v, 0.0, mask is None, attn_mask=mask)
        ctx.save_for_backward(qk, qkv, out, lse, cos, sin, mask)
        ctx.n_heads = n_heads
        return out

    @staticmethod
    def backward(ctx, grad: torch.Tensor):  # noqa: ANN001, ANN205
        qk, qkv, out, lse, cos, sin, mask = ctx.saved_tensors
        h = ctx.n_heads
        q, k = qk.transpose(1, 2).split(h, dim=1)
        v = qkv[:, :, 2 * h:].transpose(1, 2)
        gq, gk, gv = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward(
            grad, q, k, v, out, lse, 0.0, mask is None, attn_mask=mask)
        gin = torch.empty_like(qkv, memory_format=torch.contiguous_format)
        _rotate(gq.transpose(1, 2), cos, -sin, gin[:, :, :h])
        _rotate(gk.transpose(1, 2), cos, -sin, gin[:, :, h:2 * h])
        gin[:, :, 2 * h:] = gv.transpose(1, 2)
        return gin, None, None, None, None


def rope_attention_supported(qkv: torch.Tensor, n_heads: int, mask: torch.Tensor | None) -> bool:
    """Whether ``rope_attention`` applies: eager CPU, no grouped-query heads, an additive mask (or
    none) in the dtype of ``qkv``, no autocast (under it the composite path casts as autocast does)."""
    return (qkv.device.type == "cpu" and qkv.shape[2] == 3 * n_heads and not torch.compiler.is_compiling()
            and not torch.is_autocast_enabled("cpu") and (mask is None or mask.dtype == qkv.dtype)
            and hasattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu_backward"))


def rope_attention(qkv: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, n_heads: int,
                   mask: torch.Tensor | None) -> torch.Tensor:
    """Causal attention of ``qkv`` [B, S, 3H, D] (q, k, v heads) with RoPE on q and k; [B, H, S, D].

    ``mask``: additive [B, 1, S, S] document mask, or None for plain causal rows. Same numbers as
    ``rope_heads`` followed by ``scaled_dot_product_attention`` (check ``rope_attention_supported``).
    """
    return _RopeAttention.apply(qkv, cos[:, None, :], sin[:, None, :], n_heads, mask)


class _SwiGLU(Function):
    @staticmethod
    def forward(ctx, h: torch.Tensor) -> torch.Tensor:  # noqa: ANN001
        ctx.fused = h.is_contiguous() and cpu_kernels.usable(h)
        if ctx.fused:  # one pass; saves sigmoid(gate) so the backward needs no exp
            out, sig = cpu_kernels.swiglu_forward(h)
            ctx.save_for_backward(h, sig)
            return out
        gate, up = h.chunk(2, dim=-1)
        act = F.silu(gate)
        ctx.save_for_backward(h, act)
        return act.mul(up)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):  # noqa: ANN001, ANN205
        h, act = ctx.saved_tensors
        if ctx.fused and cpu_kernels.usable(grad):
            return cpu_kernels.swiglu_backward(grad, h, act)
        if ctx.fused:  # saved sigmoid(gate), not silu(gate)
            act = act * h.chunk(2, dim=-1)[0]
        gate, up = h.chunk(2, dim=-1)
        # both halves written into one buffer: autograd of chunk() would concatenate two fresh ones
        gh = torch.empty_like(h, memory_format=torch.contiguous_format)
        g_gate, g_up = gh.chunk(2, dim=-1)
        torch.mul(grad, act, out=g_up)
        torch.mul(grad, up, out=g_gate)
        torch.ops.aten.silu_backward.grad_input(g_gate, gate, grad_input=g_gate)
        return gh


def swiglu(h: torch.Tensor) -> torch.Tensor:
    """``silu(gate) * up`` of ``h = [gate | up]`` (last dim split in two halves)."""
    if torch.compiler.is_compiling():
        gate, up = h.chunk(2, dim=-1)
        return F.silu(gate) * up
    return _SwiGLU.apply(h)


class _CrossEntropy(Function):
    @staticmethod
    def forward(ctx, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:  # noqa: ANN001
        ctx.in_dtype = logits.dtype
        ctx.fused = cpu_kernels.ce_usable(logits, targets)
        if ctx.fused:
            # one pass per row with the row in L1 (fp32 or bf16 logits read as they are); saves the
            # row's logsumexp, not an [N, V] tensor of log-probabilities
            if targets.numel() and int(targets.max()) >= logits.shape[1]:
                raise IndexError(f"target {int(targets.max())} out of range for {logits.shape[1]} classes")
            loss, lse = cpu_kernels.ce_forward(logits, targets)
            ctx.save_for_backward(logits, targets, lse)
            return loss
        logp = torch.log_softmax(_wide(logits), dim=-1)
        valid = targets >= 0
        tgt = targets.clamp_min(0)
        loss = logp.gather(1, tgt[:, None]).squeeze(1).neg_().mul_(valid)
        ctx.save_for_backward(logp, tgt, valid)
        return loss

    @staticmethod
    def backward(ctx, grad: torch.Tensor):  # noqa: ANN001, ANN205
        if ctx.fused:
            logits, targets, lse = ctx.saved_tensors
            return cpu_kernels.ce_backward(logits, targets, lse, grad), None
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
