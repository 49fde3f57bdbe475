"""Llama-style decoder for proxy and full training runs.

The model is RMSNorm + RoPE + SwiGLU with optional grouped-query attention and tied or untied
embeddings. It is built on the meta device and then materialised and initialised deterministically:
every parameter's initial value depends only on ``seed`` and the parameter's name, so a model that
is sharded before it is materialised (FSDP2) holds exactly the values of an unsharded one.

The model knows nothing about parallelism; ``proxytrain.parallel.parallelize`` wraps it from the
outside. Mixture search (DoReMi, RegMix) uses the model with the loss, optimizer and schedule modules
directly::

    model = build_model(ModelConfig.preset("tiny", vocab_size=4096), "cpu", seed=0)
    opt = make_optimizer(model, cfg)            # proxytrain.optim; cfg: a TrainConfig (or its fields)
    losses, mask = per_token_loss(model(tokens, segment_ids), tokens, segment_ids)  # proxytrain.loss
    evaluate(model, batches, domains)           # proxytrain.loss -> {domain: mean loss per target token}

"""

from __future__ import annotations

import dataclasses
import math
import zlib
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from proxytrain.attention import attend, prepare_attention
from proxytrain.ops import (
    rms_norm,
    rope_attention,
    rope_attention_supported,
    rope_heads,
    swiglu,
)

# name -> (d_model, n_layers, n_heads); vocabulary and sequence length come from the data.
PRESETS: dict[str, tuple[int, int, int]] = {
    "tiny": (128, 5, 4),      # ~1.0M non-embedding parameters (RegMix-style proxy)
    "small": (256, 8, 8),     # ~6.4M
    "medium": (512, 8, 8),    # ~25M
    "125m": (768, 12, 12),    # ~85M non-embedding, ~124M with a 50k tied vocabulary
    "350m": (1024, 24, 16),   # ~302M non-embedding
}


@dataclass
class ModelConfig:
    """Shape of the decoder. Use ``ModelConfig.preset(name, ...)`` for the named sizes."""

    vocab_size: int = 4096
    d_model: int = 128
    n_layers: int = 5
    n_heads: int = 4
    n_kv_heads: int = 0  # 0 = same as n_heads (no grouped-query attention)
    ffn_multiple_of: int = 32
    max_seq_len: int = 512
    rope_theta: float = 10000.0
    norm_eps: float = 1e-5
    tie_embeddings: bool = True
    init_std: float = 0.02
    attn_backend: str = "auto"  # auto | sdpa | flex | flash
    head_dtype: str = "fp32"  # fp32 | bf16: the output projection's inputs (fp32 accumulation, bf16 logits)

    @classmethod
    def preset(cls, name: str, **overrides: Any) -> ModelConfig:
        if name not in PRESETS:
            raise ValueError(f"unknown model preset {name!r}; choose one of {sorted(PRESETS)}")
        d, n_layers, n_heads = PRESETS[name]
        return dataclasses.replace(cls(d_model=d, n_layers=n_layers, n_heads=n_heads), **overrides)

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    @property
    def kv_heads(self) -> int:
        return self.n_kv_heads or self.n_heads

    @property
    def ffn_hidden(self) -> int:
        hidden = int(8 * self.d_model / 3)
        m = self.ffn_multiple_of
        return m * ((hidden + m - 1) // m)

    def validate(self) -> None:
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} must be a multiple of n_heads={self.n_heads}")
        if self.head_dim % 2:
            raise ValueError(f"head_dim={self.head_dim} must be even for RoPE; change d_model or n_heads")
        if self.n_heads % self.kv_heads:
            raise ValueError(f"n_heads={self.n_heads} must be a multiple of n_kv_heads={self.kv_heads}")


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.empty(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # statistics in fp32 so bf16 runs keep them exact enough; one hand-written backward
        return rms_norm(x, self.weight, self.eps)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate ``x`` [B, H, S, D] by RoPE, half-split convention; cos/sin are [S, D/2] fp32.

    Real arithmetic (not complex numbers): inductor does not generate code for complex ops.
    """
    half = x.shape[-1] // 2
    xf = x.float()
    x1, x2 = xf[..., :half], xf[..., half:]
    return torch.cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).type_as(x)


class Attention(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.n_heads, self.n_kv, self.head_dim = cfg.n_heads, cfg.kv_heads, cfg.head_dim
        # one fused projection for q, k and v: one matmul instead of three (matters on CPU)
        self.wqkv = nn.Linear(cfg.d_model, (cfg.n_heads + 2 * cfg.kv_heads) * cfg.head_dim, bias=False)
        self.wo = nn.Linear(cfg.n_heads * cfg.head_dim, cfg.d_model, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, ctx: Any,
                residual: torch.Tensor | None = None) -> torch.Tensor:
        """Attention output [B, S, d_model]; plus ``residual`` when given (added inside the matmul)."""
        b, s, _ = x.shape
        qkv = self.wqkv(x).view(b, s, self.n_heads + 2 * self.n_kv, self.head_dim)
        if ctx.backend == "sdpa" and rope_attention_supported(qkv, self.n_heads, ctx.mask):
            # eager CPU: RoPE and the flash kernel in one function (fewer full-size copies)
            out = rope_attention(qkv, cos, sin, self.n_heads, ctx.mask)
        else:
            # q and k rotated in one pass, v copied along: one output, one backward, no slice copies
            qkv = rope_heads(qkv, cos, sin, self.n_heads + self.n_kv).transpose(1, 2)
            q, k, v = qkv.split([self.n_heads, self.n_kv, self.n_kv], dim=1)
            out = attend(q, k, v, ctx)  # [B, H, S, D]
        return _project(out.transpose(1, 2).reshape(b, s, -1), self.wo.weight, residual)


class FeedForward(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.hidden = cfg.ffn_hidden
        self.w13 = nn.Linear(cfg.d_model, 2 * self.hidden, bias=False)  # gate and up, fused
        self.w2 = nn.Linear(self.hidden, cfg.d_model, bias=False)

    def forward(self, x: torch.Tensor, residual: torch.Tensor | None = None) -> torch.Tensor:
        """silu(gate) * up, projected back; plus ``residual`` when given (added inside the matmul)."""
        return _project(swiglu(self.w13(x)), self.w2.weight, residual)


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.attn_norm = RMSNorm(cfg.d_model, cfg.norm_eps)
        self.attn = Attention(cfg)
        self.ffn_norm = RMSNorm(cfg.d_model, cfg.norm_eps)
        self.ffn = FeedForward(cfg)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, ctx: Any) -> torch.Tensor:
        if _fuse_residual(x):
            # eager fp32 CPU: each residual add is the beta=1 term of its projection's GEMM (addmm),
            # one full-size pass less each (the gradient passes through to x unchanged either way)
            x = self.attn(self.attn_norm(x), cos, sin, ctx, residual=x)
            return self.ffn(self.ffn_norm(x), residual=x)
        x = x + self.attn(self.attn_norm(x), cos, sin, ctx)
        return x + self.ffn(self.ffn_norm(x))


def _fuse_residual(x: torch.Tensor) -> bool:
    """Residual adds go into the projections' addmm: eager CPU, fp32, no autocast (under autocast
    addmm would round the residual stream to the autocast dtype; compiled graphs fuse the add)."""
    return (x.device.type == "cpu" and x.dtype == torch.float32 and type(x) is torch.Tensor
            and not torch.is_autocast_enabled("cpu") and not torch.compiler.is_compiling())


def _project(y: torch.Tensor, weight: torch.Tensor, residual: torch.Tensor | None) -> torch.Tensor:
    """``y @ weight.T`` (+ ``residual``, as the GEMM's accumulate term: same sum, one pass less)."""
    if residual is None:
        return F.linear(y, weight)
    out = torch.addmm(residual.reshape(-1, residual.shape[-1]), y.reshape(-1, y.shape[-1]), weight.t())
    return out.view(residual.shape)


class Transformer(nn.Module):
    """Decoder: ``forward(tokens [B,S] int64, segment_ids [B,S] int32) -> logits [B,S,V]``."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        cfg.validate()
        self.cfg = cfg
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.layers = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.norm = RMSNorm(cfg.d_model, cfg.norm_eps)
        self.output = None if cfg.tie_embeddings else nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        self.register_buffer("rope_cos", torch.empty(cfg.max_seq_len, cfg.head_dim // 2), persistent=False)
        self.register_buffer("rope_sin", torch.empty(cfg.max_seq_len, cfg.head_dim // 2), persistent=False)

    def forward(self, tokens: torch.Tensor, segment_ids: torch.Tensor) -> torch.Tensor:
        s = tokens.shape[1]
        if s > self.cfg.max_seq_len:
            raise ValueError(f"sequence length {s} > max_seq_len {self.cfg.max_seq_len}; raise max_seq_len")
        h = self.tok_emb(tokens)
        # the dtype attention will compute in: autocast's, else the (FSDP-cast) parameters'
        dev = h.device.type
        dtype = torch.get_autocast_dtype(dev) if torch.is_autocast_enabled(dev) else h.dtype
        ctx = prepare_attention(segment_ids, self.cfg.attn_backend, dtype)
        cos, sin = self.rope_cos[:s], self.rope_sin[:s]
        for layer in self.layers:
            h = layer(h, cos, sin, ctx)
        h = self.norm(h)
        weight = self.tok_emb.weight if self.output is None else self.output.weight
        if self.cfg.head_dtype == "bf16" and h.dtype != torch.bfloat16:
            # the [tokens, vocab] projection is most of a small model's step; bf16 inputs with fp32
            # accumulation (as GPU mixed precision computes it), logits bf16, the loss in fp32
            return F.linear(h.to(torch.bfloat16), weight.to(torch.bfloat16))
        return F.linear(h, weight)

    @torch.no_grad()
    def init_weights(self, seed: int = 0) -> None:
        """Deterministic init: each parameter from its own generator seeded by (seed, name).

        Works on plain tensors and on FSDP2 DTensor shards (the full value is built and the local
        shard copied), so every sharding of the model starts from the same numbers.
        """
        cfg = self.cfg
        inv = 1.0 / (cfg.rope_theta ** (torch.arange(0, cfg.head_dim, 2, dtype=torch.float64) / cfg.head_dim))
        freqs = torch.outer(torch.arange(cfg.max_seq_len, dtype=torch.float64), inv)
        self.rope_cos.copy_(freqs.cos().float())
        self.rope_sin.copy_(freqs.sin().float())
        # GPT-2/OLMo style: output projections of residual branches scaled by 1/sqrt(2 * n_layers)
        out_std = cfg.init_std / math.sqrt(2 * cfg.n_layers)
        for name, p in self.named_parameters():
            clean = name.replace("_checkpoint_wrapped_module.", "").replace("_orig_mod.", "")
            gen = torch.Generator().manual_seed((seed * 1_000_003 + zlib.crc32(clean.encode())) % 2**63)
            if clean.endswith("norm.weight"):
                full = torch.ones(p.shape)
            else:
                std = out_std if clean.endswith(("wo.weight", "w2.weight")) else cfg.init_std
                full = torch.nn.init.trunc_normal_(torch.empty(p.shape), std=std, a=-3 * std, b=3 * std,
                                                   generator=gen)
            _copy_full(p, full)


def _copy_full(p: torch.Tensor, full: torch.Tensor) -> None:
    from torch.distributed.tensor import DTensor, distribute_tensor

    if isinstance(p, DTensor):
        local = distribute_tensor(full.to(p.device), p.device_mesh, p.placements).to_local()
        p.to_local().copy_(local)
    else:
        p.copy_(full.to(device=p.device, dtype=p.dtype))


def count_params(model: nn.Module, *, non_embedding: bool = True) -> int:
    """Parameters of the model; ``non_embedding`` drops the embedding table and an untied head."""
    total = sum(p.numel() for p in model.parameters())  # tied weights are counted once
    if non_embedding:
        total -= model.tok_emb.weight.numel()
        if model.output is not None:
            total -= model.output.weight.numel()
    return total


def build_model(cfg: ModelConfig, device: str | torch.device = "cpu", *, seed: int = 0,
                materialize: bool = True) -> Transformer:
    """Build on the meta device, then (unless ``materialize=False``) move to ``device`` and init."""
    with torch.device("meta"):
        model = Transformer(cfg)
    if materialize:
        model.to_empty(device=device)
        model.init_weights(seed)
    return model
