"""Model FLOPs per token and MFU (model FLOPs utilisation) for the training logs and benchmarks.

Training FLOPs per token = 6·N + 12·L·d·S (PaLM appendix B): N is the number of parameters that
take part in matmuls (non-embedding parameters plus the output head, which is a real d×V matmul
even when tied to the embedding), L layers, d model width, S sequence length (the attention term
counts full causal-free attention, as is conventional, also for document-masked batches).

MFU = achieved model FLOPs/s ÷ peak FLOPs/s of the device for the compute dtype. Peaks are dense
(no sparsity) vendor figures; CPU peaks are estimated from cores × clock × SIMD FLOPs per cycle.
"""

from __future__ import annotations

import os
from functools import cache

import torch

from proxytrain.model import ModelConfig, Transformer, count_params

# dense peak FLOP/s by (device family, dtype)
PEAK_FLOPS: dict[tuple[str, str], float] = {
    ("a100", "bf16"): 312e12,
    ("a100", "fp32"): 19.5e12,   # no TF32 (we do not enable it)
    ("h100", "bf16"): 989e12,    # SXM; PCIe is 756e12
    ("h100", "fp32"): 67e12,
    ("h100-pcie", "bf16"): 756e12,
    ("h100-pcie", "fp32"): 51e12,
    ("h200", "bf16"): 989e12,
    ("h200", "fp32"): 67e12,
}


def flops_per_token(cfg: ModelConfig, model: Transformer | None = None, *, seq_len: int) -> float:
    """6·N + 12·L·d·S training FLOPs per token (forward + backward)."""
    if model is not None:
        n = count_params(model, non_embedding=True)
    else:
        d, h = cfg.d_model, cfg.ffn_hidden
        attn = d * (cfg.n_heads + 2 * cfg.kv_heads) * cfg.head_dim + cfg.n_heads * cfg.head_dim * d
        n = cfg.n_layers * (attn + 3 * d * h + 2 * d) + d
    n += cfg.d_model * cfg.vocab_size  # the output head matmul
    return 6.0 * n + 12.0 * cfg.n_layers * cfg.d_model * seq_len


@cache
def cpu_peak_flops(dtype: str = "fp32") -> float:
    """cores × GHz × FLOPs/cycle (2 FMA units × SIMD lanes × 2); bf16 counts as fp32 (emulated)."""
    flags = ""
    ghz = 2.5
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("flags") and not flags:
                    flags = line
                if line.startswith("cpu MHz"):
                    ghz = float(line.split(":")[1]) / 1000.0
    except OSError:
        pass
    lanes = 16 if "avx512f" in flags else 8 if "avx2" in flags else 4
    per_cycle = 2 * lanes * 2  # two FMA pipes, an FMA is 2 FLOPs
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return cores * ghz * 1e9 * per_cycle


def device_family(device: torch.device | str) -> str:
    dev = torch.device(device)
    if dev.type != "cuda":
        return "cpu"
    name = torch.cuda.get_device_name(dev).lower()
    for fam in ("h200", "a100"):
        if fam in name:
            return fam
    if "h100" in name:
        return "h100-pcie" if "pcie" in name else "h100"
    return name


def peak_flops(device: torch.device | str, dtype: str) -> float | None:
    """Peak FLOP/s for ``device`` and ``dtype`` (``bf16``/``fp32``), or None when unknown."""
    fam = device_family(device)
    if fam == "cpu":
        return cpu_peak_flops(dtype)
    return PEAK_FLOPS.get((fam, dtype))


def mfu(tokens_per_s: float, flops_tok: float, peak: float | None, n_devices: int = 1) -> float | None:
    if not peak:
        return None
    return tokens_per_s * flops_tok / (peak * n_devices)
