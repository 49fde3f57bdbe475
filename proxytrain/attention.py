"""Document-masked causal attention backends behind one switch (``attn_backend``).

- ``flash``: FlashAttention varlen on CUDA; packed documents become separate sequences through
  ``cu_seqlens`` computed from ``segment_ids``. The kernel is flash-attn's ``flash_attn_varlen_func``
  when that package is installed, else PyTorch's own ``torch.nn.attention.varlen.varlen_attn``
  (torch >= 2.10), which calls the FlashAttention-2 kernels compiled into PyTorch's CUDA build
  (``flash_impl`` says which; both are imported only when used).
- ``sdpa``: PyTorch ``scaled_dot_product_attention`` with a block-diagonal causal boolean mask built
  from ``segment_ids`` (rows of one document and no padding take the plain ``is_causal`` path).
- ``flex``: PyTorch FlexAttention with a ``create_block_mask`` document mask. It runs on CPU in
  torch 2.13, but unfused (it materialises the scores) unless compiled, and compiling it costs
  ~25 s here, so it is an explicit choice, not the CPU default.
- ``auto``: ``flash`` when either FlashAttention varlen kernel is there and the tensors are on CUDA, else ``sdpa``
  (``auto_reason`` says which and why; the trainer logs it at start).

Grouped-query attention with a document mask repeats k/v to all heads instead of passing
``enable_gqa``: PyTorch's fused CUDA kernels (flash, memory-efficient) do not take ``enable_gqa``
together with an explicit mask and SDPA then silently falls back to the math kernel, which
materialises [B, H, S, S] scores. ``enable_gqa`` is kept where it is fused (plain causal rows).
Given the compute dtype, ``prepare_attention`` turns the boolean mask into an additive one once per
forward; SDPA would convert a boolean mask again in every layer.

Padding positions (segment id -1) attend among themselves (never to a document), so no row of the
mask is empty and no NaN appears; their outputs are ignored by the loss.

``prepare_attention(segment_ids, backend)`` runs once per forward (outside any compiled block) and
``attend(q, k, v, ctx)`` once per layer with q/k/v as [B, H, S, D].
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

BACKENDS = ("auto", "sdpa", "flex", "flash")


@functools.cache
def flash_impl() -> str | None:
    """Which FlashAttention varlen kernel ``flash`` uses: ``flash-attn`` (the package), ``torch``
    (PyTorch's built-in ``varlen_attn``, CUDA builds of torch >= 2.10) or None (neither)."""
    try:
        import flash_attn  # noqa: F401
        return "flash-attn"
    except ImportError:
        pass
    if torch.version.cuda is None:
        return None
    try:
        from torch.nn.attention.varlen import varlen_attn  # noqa: F401
    except ImportError:
        return None
    return "torch"


def flash_available() -> bool:
    return flash_impl() is not None


def auto_reason(device: torch.device | str) -> str:
    """Why ``auto`` picks what it picks on ``device`` (for the training log)."""
    dev = torch.device(device).type
    if dev != "cuda":
        return f"sdpa: FlashAttention needs CUDA (device is {dev})"
    if flash_impl() == "flash-attn":
        return "flash: flash-attn is installed and the device is CUDA"
    if flash_impl() == "torch":
        return f"flash: PyTorch {torch.__version__}'s built-in FlashAttention varlen kernel (flash-attn not installed)"
    return ("sdpa: neither flash-attn nor torch>=2.10's varlen_attn is here, so FlashAttention is OFF on this CUDA "
            "machine; install flash-attn with `pip install 'corpusmix[gpu]'` or use torch >= 2.10")


def resolve_backend(name: str, device: torch.device | str) -> str:
    """Turn ``auto`` into a concrete backend for ``device``; refuse impossible choices clearly."""
    if name not in BACKENDS:
        raise ValueError(f"attn_backend must be one of {BACKENDS}, got {name!r}")
    dev = torch.device(device).type
    if name == "auto":
        return "flash" if dev == "cuda" and flash_available() else "sdpa"
    if name == "flash":
        if dev != "cuda":
            raise ValueError("attn_backend=flash needs a CUDA device; use sdpa (or auto) on CPU")
        if not flash_available():
            raise ValueError("attn_backend=flash but neither flash-attn nor torch>=2.10's varlen_attn is here: "
                             "pip install 'corpusmix[gpu]', or use attn_backend=sdpa")
    return name


@dataclass
class AttnContext:
    """Per-batch attention inputs shared by every layer."""

    backend: str
    mask: torch.Tensor | None = None  # sdpa: [B, 1, S, S] bool or additive (0/-inf), None with is_causal
    block_mask: Any = None  # flex: BlockMask
    cu_seqlens: torch.Tensor | None = None  # flash: int32 [n_seqs + 1]
    max_seqlen: int = 0


def document_mask(segment_ids: torch.Tensor) -> torch.Tensor:
    """[B, S, S] bool: query i may see key j iff j <= i and both are in the same segment."""
    s = segment_ids.shape[1]
    causal = torch.ones(s, s, dtype=torch.bool, device=segment_ids.device).tril()
    return (segment_ids[:, :, None] == segment_ids[:, None, :]) & causal


def cu_seqlens_from_segments(segment_ids: torch.Tensor) -> torch.Tensor:
    """int32 boundaries of the runs of equal segment ids, row by row, in the flattened [B*S] batch."""
    b, s = segment_ids.shape
    starts = torch.ones_like(segment_ids, dtype=torch.bool)
    starts[:, 1:] = segment_ids[:, 1:] != segment_ids[:, :-1]
    idx = torch.nonzero(starts.reshape(-1), as_tuple=False).flatten()
    end = torch.tensor([b * s], device=segment_ids.device, dtype=idx.dtype)
    return torch.cat([idx, end]).to(torch.int32)


def prepare_attention(segment_ids: torch.Tensor, backend: str, dtype: torch.dtype | None = None) -> AttnContext:
    """Per-batch attention inputs; ``dtype`` is the dtype q/k/v will have (None: keep a bool mask)."""
    backend = resolve_backend(backend, segment_ids.device)
    b, s = segment_ids.shape
    if backend == "flash":
        return AttnContext("flash", cu_seqlens=cu_seqlens_from_segments(segment_ids), max_seqlen=s)
    if backend == "flex":
        from torch.nn.attention.flex_attention import create_block_mask

        seg = segment_ids

        def doc_causal(bi, h, qi, ki):  # noqa: ANN001 - flex's mask_mod signature
            return (seg[bi, qi] == seg[bi, ki]) & (qi >= ki)

        return AttnContext("flex", block_mask=create_block_mask(doc_causal, b, None, s, s,
                                                                device=str(segment_ids.device)))
    # sdpa: one document per row and no padding is plain causal attention (fast kernel path)
    if bool((segment_ids == segment_ids[:, :1]).all()) and bool((segment_ids >= 0).all()):
        return AttnContext("sdpa")
    mask = document_mask(segment_ids)[:, None]
    if dtype is not None and dtype.is_floating_point:
        mask = torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill_(~mask, float("-inf"))
    return AttnContext("sdpa", mask=mask)


def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, ctx: AttnContext) -> torch.Tensor:
    """Attention of q [B, H, S, D] over k/v [B, Hkv, S, D] (Hkv divides H); returns [B, H, S, D]."""
    gqa = k.shape[1] != q.shape[1]
    if ctx.backend == "flash":
        b, h, s, d = q.shape
        # FlashAttention computes in fp16/bf16 only; fp32 runs get bf16 attention
        half = q.dtype if q.dtype in (torch.float16, torch.bfloat16) else torch.bfloat16
        if gqa and flash_impl() == "torch" and not _torch_varlen_takes("enable_gqa"):
            rep = q.shape[1] // k.shape[1]
            k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        q_, k_, v_ = (t.transpose(1, 2).reshape(b * s, t.shape[1], d).to(half) for t in (q, k, v))
        out = _flash_varlen(q_, k_, v_, ctx.cu_seqlens, ctx.max_seqlen, gqa=k_.shape[1] != h)
        return out.view(b, s, h, d).transpose(1, 2).to(q.dtype)
    if ctx.backend == "flex":
        from torch.nn.attention.flex_attention import flex_attention

        return flex_attention(q, k, v, block_mask=ctx.block_mask, enable_gqa=gqa)
    if ctx.mask is None:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=gqa)
    if gqa:  # see the module docstring: enable_gqa + a mask is not fused on CUDA
        rep = q.shape[1] // k.shape[1]
        k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
    mask = ctx.mask if ctx.mask.dtype in (torch.bool, q.dtype) else ctx.mask.to(q.dtype)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


@functools.cache
def _torch_varlen_takes(name: str) -> bool:
    from torch.nn.attention.varlen import varlen_attn

    return name in inspect.signature(varlen_attn).parameters


def _flash_varlen(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu: torch.Tensor, max_len: int,
                  gqa: bool) -> torch.Tensor:
    """Causal FlashAttention over [T, H, D] packed sequences delimited by ``cu`` (int32 [n + 1])."""
    if flash_impl() == "flash-attn":
        from flash_attn import flash_attn_varlen_func

        return flash_attn_varlen_func(q, k, v, cu, cu, max_len, max_len, causal=True)
    from torch.nn.attention.varlen import varlen_attn

    extra = {"enable_gqa": True} if gqa else {}
    if _torch_varlen_takes("is_causal"):  # torch 2.9's signature
        return varlen_attn(q, k, v, cu, cu, max_len, max_len, is_causal=True, **extra)
    # torch >= 2.10: causal is the window (-1, 0) (all keys before the query, none after)
    return varlen_attn(q, k, v, cu, cu, max_len, max_len, window_size=(-1, 0), **extra)
