"""Fused single-thread CPU kernels for RMSNorm and RoPE (fp32), built with the system C++ compiler.

Why: on CPU the model's elementwise chains cost memory passes, not FLOPs. Composed from torch ops,
RMSNorm forward reads and writes the activations three times (norm, scale, gain) and its backward
about a dozen; RoPE writes its output once and then rewrites each half. Each kernel here is one
pass per row with the row in L1: RMSNorm forward reads x once and writes y once, its backward
reads the gradient and x once, writes dx once and accumulates the gain gradient in fp64; RoPE reads
each input element once and writes each output element once, with arbitrary token/head strides so
q/k can be read from the fused qkv projection and their gradients written straight into its
gradient.

The kernels are plain C functions (no torch headers: the build takes about a second) compiled with
``g++ -O3 -march=native`` into ``$CORPUSMIX_KERNEL_CACHE`` (default ``~/.cache/corpusmix/kernels``)
on first use, keyed by a hash of the source, the flags and the CPU model, and loaded with ctypes.
No compiler, a failed build or ``CORPUSMIX_CPU_KERNELS=0`` -> one log line and ``lib()`` returns
None; ``proxytrain.ops`` then uses its torch-op versions (same numbers within fp32 rounding).
The kernels are single-threaded loops in a fixed order (deterministic); ``proxytrain.ops`` calls
them only when torch runs one intra-op thread (``train.threads: 1``, the proxy setting), where
they replace single-threaded torch kernels.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import torch

from corpusmix.logging import get_logger

log = get_logger(__name__)

_SOURCE = r"""
#include <math.h>
#include <stdint.h>
#include <string.h>

#define LANES 8

#ifndef CM_NO_MVEC
/* glibc's vector expf (libmvec): lets the SwiGLU loop vectorise without -ffast-math */
extern "C" float expf(float) __attribute__((simd("notinbranch")));
#endif

static inline float dot8(const float* a, const float* b, int64_t d) {
    float acc[LANES] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t j = 0;
    for (; j + LANES <= d; j += LANES)
        for (int l = 0; l < LANES; ++l) acc[l] += a[j + l] * b[j + l];
    float s = 0.0f;
    for (int l = 0; l < LANES; ++l) s += acc[l];
    for (; j < d; ++j) s += a[j] * b[j];
    return s;
}


/* Cross-entropy over rows of logits [n, v] (fp32 or bf16, row-contiguous), one row in L1 at a time.
   Forward: lse[i] = log sum_j exp(x_ij), loss[i] = lse[i] - x_i,t (0 where t < 0). Backward: out_ij =
   g_i (exp(x_ij - lse_i) - [j == t_i]), written in the logits' dtype (bf16: round to nearest even). */
static inline float ld(const float* x, int64_t j) { return x[j]; }
static inline float ld(const uint16_t* x, int64_t j) {
    uint32_t u = (uint32_t)x[j] << 16; float f; memcpy(&f, &u, 4); return f;
}
static inline void st(float* o, int64_t j, float f) { o[j] = f; }
static inline void st(uint16_t* o, int64_t j, float f) {
    uint32_t u; memcpy(&u, &f, 4); u += 0x7FFFu + ((u >> 16) & 1u); o[j] = (uint16_t)(u >> 16);
}

template <typename T>
static void ce_fwd(const T* __restrict x, const int64_t* __restrict t, float* __restrict loss,
                   float* __restrict lse, int64_t n, int64_t v) {
    for (int64_t i = 0; i < n; ++i) {
        const T* xr = x + i * v;
        float m = -INFINITY;
#pragma omp simd reduction(max : m)
        for (int64_t j = 0; j < v; ++j) m = m > ld(xr, j) ? m : ld(xr, j);
        float acc[LANES] = {0, 0, 0, 0, 0, 0, 0, 0};
        int64_t j = 0;
        for (; j + LANES <= v; j += LANES)
#pragma omp simd
            for (int l = 0; l < LANES; ++l) acc[l] += expf(ld(xr, j + l) - m);
        float s = 0.0f;
        for (int l = 0; l < LANES; ++l) s += acc[l];
        for (; j < v; ++j) s += expf(ld(xr, j) - m);
        const float z = m + logf(s);
        lse[i] = z;
        loss[i] = t[i] >= 0 ? z - ld(xr, t[i]) : 0.0f;
    }
}

template <typename T>
static void ce_bwd(const T* __restrict x, const int64_t* __restrict t, const float* __restrict lse,
                   const float* __restrict g, T* __restrict out, int64_t n, int64_t v) {
    for (int64_t i = 0; i < n; ++i) {
        const T* xr = x + i * v;
        T* orow = out + i * v;
        const float gi = t[i] >= 0 ? g[i] : 0.0f, z = lse[i];
#pragma omp simd
        for (int64_t j = 0; j < v; ++j) st(orow, j, gi * expf(ld(xr, j) - z));
        if (t[i] >= 0) st(orow, t[i], gi * (expf(ld(xr, t[i]) - z) - 1.0f));
    }
}

extern "C" {

void cm_ce_fwd_f32(const float* x, const int64_t* t, float* loss, float* lse, int64_t n, int64_t v) {
    ce_fwd(x, t, loss, lse, n, v);
}
void cm_ce_fwd_bf16(const uint16_t* x, const int64_t* t, float* loss, float* lse, int64_t n, int64_t v) {
    ce_fwd(x, t, loss, lse, n, v);
}
void cm_ce_bwd_f32(const float* x, const int64_t* t, const float* lse, const float* g, float* out, int64_t n,
                   int64_t v) {
    ce_bwd(x, t, lse, g, out, n, v);
}
void cm_ce_bwd_bf16(const uint16_t* x, const int64_t* t, const float* lse, const float* g, uint16_t* out,
                    int64_t n, int64_t v) {
    ce_bwd(x, t, lse, g, out, n, v);
}

/* y = x * r * w per row, r = (mean(x^2) + eps)^-1/2 stored in rstd[row]. */
void cm_rms_fwd(const float* __restrict x, const float* __restrict w, float* __restrict y,
                float* __restrict rstd, int64_t n, int64_t d, float eps) {
    for (int64_t i = 0; i < n; ++i) {
        const float* xr = x + i * d;
        float* yr = y + i * d;
        const float r = 1.0f / sqrtf(dot8(xr, xr, d) / (float)d + eps);
        rstd[i] = r;
        for (int64_t j = 0; j < d; ++j) yr[j] = xr[j] * r * w[j];
    }
}

/* dx = r (g w) - x r^3 / d * sum_j(g w x);  dw += sum_rows(g x r) (fp64 accumulator, zeroed here). */
void cm_rms_bwd(const float* __restrict g, const float* __restrict x, const float* __restrict w,
                const float* __restrict rstd, float* __restrict dx, double* __restrict dw,
                int64_t n, int64_t d) {
    for (int64_t j = 0; j < d; ++j) dw[j] = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        const float* gr = g + i * d;
        const float* xr = x + i * d;
        float* dr = dx + i * d;
        const float r = rstd[i];
        float acc[LANES] = {0, 0, 0, 0, 0, 0, 0, 0};
        int64_t j = 0;
        for (; j + LANES <= d; j += LANES)
            for (int l = 0; l < LANES; ++l) acc[l] += gr[j + l] * w[j + l] * xr[j + l];
        float s = 0.0f;
        for (int l = 0; l < LANES; ++l) s += acc[l];
        for (; j < d; ++j) s += gr[j] * w[j] * xr[j];
        const float c = -r * r * r * s / (float)d;
        for (j = 0; j < d; ++j) {
            dr[j] = gr[j] * w[j] * r + xr[j] * c;
            dw[j] += (double)(gr[j] * xr[j] * r);
        }
    }
}

/* SwiGLU on rows h = [gate | up] of width 2f: sig = sigmoid(gate), out = gate * sig * up. */
void cm_swiglu_fwd(const float* __restrict h, float* __restrict sig, float* __restrict out,
                   int64_t n, int64_t f) {
    for (int64_t i = 0; i < n; ++i) {
        const float* a = h + i * 2 * f;
        const float* u = a + f;
        float* sr = sig + i * f;
        float* orow = out + i * f;
#pragma omp simd
        for (int64_t j = 0; j < f; ++j) {
            const float s = 1.0f / (1.0f + expf(-a[j]));
            sr[j] = s;
            orow[j] = a[j] * s * u[j];
        }
    }
}

/* d gate = g up s (1 + gate (1 - s)),  d up = g gate s; written into gh = [d gate | d up]. */
void cm_swiglu_bwd(const float* __restrict g, const float* __restrict h, const float* __restrict sig,
                   float* __restrict gh, int64_t n, int64_t f) {
    for (int64_t i = 0; i < n; ++i) {
        const float* gr = g + i * f;
        const float* a = h + i * 2 * f;
        const float* u = a + f;
        const float* sr = sig + i * f;
        float* dg = gh + i * 2 * f;
        float* du = dg + f;
        for (int64_t j = 0; j < f; ++j) {
            const float s = sr[j], act = a[j] * s;
            du[j] = gr[j] * act;
            dg[j] = gr[j] * u[j] * (s * (1.0f + a[j] * (1.0f - s)));
        }
    }
}

/* RoPE, half-split convention, on [B, S, H, D] views with element strides (D contiguous):
   out1 = x1 cos - sign * x2 sin,  out2 = x2 cos + sign * x1 sin;  cos/sin are [S, D/2]. */
void cm_rope(const float* __restrict x, int64_t xb, int64_t xs, int64_t xh,
             float* __restrict out, int64_t ob, int64_t os, int64_t oh,
             const float* __restrict cs, const float* __restrict sn,
             int64_t B, int64_t S, int64_t H, int64_t D, float sign) {
    const int64_t half = D / 2;
    for (int64_t b = 0; b < B; ++b)
        for (int64_t s = 0; s < S; ++s) {
            const float* c = cs + s * half;
            const float* si = sn + s * half;
            for (int64_t h = 0; h < H; ++h) {
                const float* xr = x + b * xb + s * xs + h * xh;
                float* orow = out + b * ob + s * os + h * oh;
                for (int64_t j = 0; j < half; ++j) {
                    const float x1 = xr[j], x2 = xr[j + half], sv = sign * si[j];
                    orow[j] = x1 * c[j] - x2 * sv;
                    orow[j + half] = x2 * c[j] + x1 * sv;
                }
            }
        }
}

}
"""

_FLAGS = ["-O3", "-march=native", "-fno-math-errno", "-fopenmp-simd", "-shared", "-fPIC", "-std=c++17"]
# first choice links glibc's vector math library; the second builds without it (scalar expf)
_VARIANTS = (["-lmvec"], ["-DCM_NO_MVEC"])
_I64, _F32, _PTR = ctypes.c_int64, ctypes.c_float, ctypes.c_void_p


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("model name", "flags")):
                return line
    except OSError:
        pass
    return os.uname().machine


@functools.cache
def native_bf16() -> bool | None:
    """Whether this CPU computes bf16 dot products natively (avx512_bf16 or AMX); None where unknown."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                return bool(flags & {"avx512_bf16", "amx_bf16"})
    except OSError:
        pass
    return None


@functools.cache
def warn_without_native_bf16() -> None:
    """One warning per process where a bf16 output projection was asked for on a CPU without native
    bf16: the results agree within rounding, but the step gets slower instead of about twice as fast."""
    if native_bf16() is False:
        log.warning("head_dtype bf16 on a CPU without avx512_bf16 / AMX: results agree within rounding, but it is "
                    "slower than fp32 here; set head_dtype: fp32 (mix.proxy.head_dtype / train.head_dtype) on this "
                    "machine")


def _cache_dir() -> Path:
    env = os.environ.get("CORPUSMIX_KERNEL_CACHE")
    base = Path(env) if env else Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "corpusmix" / "kernels"
    return base


def _build(compiler: str, extra: list[str]) -> Path:
    flags = [*_FLAGS, *extra]
    key = hashlib.sha256("\n".join([_SOURCE, compiler, *flags, _cpu_model()]).encode()).hexdigest()[:16]
    out = _cache_dir() / f"cm_kernels_{key}.so"
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
        src = Path(tmp) / "cm_kernels.cpp"
        src.write_text(_SOURCE)
        so = Path(tmp) / "cm_kernels.so"
        subprocess.run([compiler, *_FLAGS, str(src), "-o", str(so), *extra], check=True, capture_output=True,
                       text=True, timeout=300)
        os.replace(so, out)  # atomic: concurrent builders (ranks, workers) never see a partial file
    log.info("cpu kernels built", extra={"data": {"path": str(out), "build_s": round(time.perf_counter() - t0, 2)}})
    return out


@functools.cache
def lib() -> ctypes.CDLL | None:
    """The loaded kernel library, built on first use; None (logged once) when it cannot be had."""
    if os.environ.get("CORPUSMIX_CPU_KERNELS", "1") == "0":
        log.info("cpu kernels disabled by CORPUSMIX_CPU_KERNELS=0; torch-op versions used")
        return None
    compiler = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++")
    if compiler is None:
        log.warning("no C++ compiler found; fused cpu kernels unavailable, torch-op versions used")
        return None
    handle, error = None, ""
    for extra in _VARIANTS:
        try:
            handle = ctypes.CDLL(str(_build(compiler, extra)))
            break
        except (OSError, subprocess.SubprocessError) as exc:
            detail = getattr(exc, "stderr", None) or str(exc)
            error = (str(detail).strip().splitlines() or [""])[-1]
    if handle is None:
        log.warning("fused cpu kernels could not be built; torch-op versions used", extra={"data": {"error": error}})
        return None
    handle.cm_rms_fwd.argtypes = [_PTR, _PTR, _PTR, _PTR, _I64, _I64, _F32]
    handle.cm_rms_bwd.argtypes = [_PTR, _PTR, _PTR, _PTR, _PTR, _PTR, _I64, _I64]
    handle.cm_rope.argtypes = [_PTR, _I64, _I64, _I64, _PTR, _I64, _I64, _I64, _PTR, _PTR,
                               _I64, _I64, _I64, _I64, _F32]
    handle.cm_swiglu_fwd.argtypes = [_PTR, _PTR, _PTR, _I64, _I64]
    handle.cm_swiglu_bwd.argtypes = [_PTR, _PTR, _PTR, _PTR, _I64, _I64]
    for name in ("cm_ce_fwd_f32", "cm_ce_fwd_bf16"):
        getattr(handle, name).argtypes = [_PTR, _PTR, _PTR, _PTR, _I64, _I64]
    for name in ("cm_ce_bwd_f32", "cm_ce_bwd_bf16"):
        getattr(handle, name).argtypes = [_PTR, _PTR, _PTR, _PTR, _PTR, _I64, _I64]
    for fn in (handle.cm_ce_fwd_f32, handle.cm_ce_fwd_bf16, handle.cm_ce_bwd_f32, handle.cm_ce_bwd_bf16,
               handle.cm_rms_fwd, handle.cm_rms_bwd, handle.cm_rope, handle.cm_swiglu_fwd, handle.cm_swiglu_bwd):
        fn.restype = None
    return handle


_PLAIN = (torch.Tensor, torch.nn.Parameter)  # not DTensor, FakeTensor or other subclasses


def usable(*tensors: torch.Tensor) -> bool:
    """Whether the kernels apply: one torch thread, all tensors fp32 on CPU, plain (not subclass/meta)."""
    return (torch.get_num_threads() == 1
            and all(type(t) in _PLAIN and t.device.type == "cpu" and t.dtype == torch.float32
                    for t in tensors)
            and lib() is not None)


def ce_usable(logits: torch.Tensor, targets: torch.Tensor) -> bool:
    """Whether the fused cross-entropy takes these: one thread, plain contiguous CPU tensors, logits
    fp32 or bf16 [N, V], int64 targets [N]."""
    return (torch.get_num_threads() == 1 and logits.dim() == 2 and logits.dtype in (torch.float32, torch.bfloat16)
            and targets.dtype == torch.int64 and targets.shape == logits.shape[:1]
            and all(type(t) in _PLAIN and t.device.type == "cpu" and t.is_contiguous() for t in (logits, targets))
            and lib() is not None)


def _ce_suffix(logits: torch.Tensor) -> str:
    return "bf16" if logits.dtype == torch.bfloat16 else "f32"


def ce_forward(logits: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(loss [N], logsumexp [N]) in fp32; rows with a negative target have loss 0."""
    n, v = logits.shape
    loss = torch.empty(n, dtype=torch.float32)
    lse = torch.empty(n, dtype=torch.float32)
    getattr(lib(), f"cm_ce_fwd_{_ce_suffix(logits)}")(logits.data_ptr(), targets.data_ptr(), loss.data_ptr(),
                                                       lse.data_ptr(), n, v)
    return loss, lse


def ce_backward(logits: torch.Tensor, targets: torch.Tensor, lse: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
    """d loss / d logits = grad_i (softmax_ij - [j = t_i]), in the logits' dtype (0 rows where t < 0)."""
    n, v = logits.shape
    grad = grad.to(torch.float32).contiguous()
    out = torch.empty_like(logits)
    getattr(lib(), f"cm_ce_bwd_{_ce_suffix(logits)}")(logits.data_ptr(), targets.data_ptr(), lse.data_ptr(),
                                                       grad.data_ptr(), out.data_ptr(), n, v)
    return out


def rms_forward(x: torch.Tensor, weight: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(y, rstd[..., 1]) of RMSNorm over the last dim; ``x`` and ``weight`` contiguous fp32."""
    d = x.shape[-1]
    y = torch.empty_like(x)
    rstd = torch.empty((*x.shape[:-1], 1), dtype=torch.float32)
    lib().cm_rms_fwd(x.data_ptr(), weight.data_ptr(), y.data_ptr(), rstd.data_ptr(), x.numel() // d, d, eps)
    return y, rstd


def rms_backward(grad: torch.Tensor, x: torch.Tensor, weight: torch.Tensor,
                 rstd: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(dx, dweight) of RMSNorm; all fp32, ``x``/``weight``/``rstd`` contiguous."""
    grad = grad.contiguous()
    d = x.shape[-1]
    dx = torch.empty_like(x)
    dw = torch.empty(d, dtype=torch.float64)
    lib().cm_rms_bwd(grad.data_ptr(), x.data_ptr(), weight.data_ptr(), rstd.data_ptr(), dx.data_ptr(),
                     dw.data_ptr(), x.numel() // d, d)
    return dx, dw.to(torch.float32)


def swiglu_forward(h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(out, sigmoid(gate)) of SwiGLU for contiguous fp32 ``h = [gate | up]`` (last dim 2f)."""
    f = h.shape[-1] // 2
    out = torch.empty((*h.shape[:-1], f), dtype=h.dtype)
    sig = torch.empty_like(out)
    lib().cm_swiglu_fwd(h.data_ptr(), sig.data_ptr(), out.data_ptr(), h.numel() // (2 * f), f)
    return out, sig


def swiglu_backward(grad: torch.Tensor, h: torch.Tensor, sig: torch.Tensor) -> torch.Tensor:
    """Gradient of SwiGLU with respect to ``h`` ([d gate | d up]), from the saved sigmoid."""
    grad = grad.contiguous()
    f = sig.shape[-1]
    gh = torch.empty_like(h)
    lib().cm_swiglu_bwd(grad.data_ptr(), h.data_ptr(), sig.data_ptr(), gh.data_ptr(), h.numel() // (2 * f), f)
    return gh


def rope_supported(x: torch.Tensor, out: torch.Tensor) -> bool:
    """Whether ``rope`` takes these [B, S, H, D] views: last dim contiguous, fp32, one thread."""
    return x.dim() == 4 and x.stride(-1) == 1 and out.stride(-1) == 1 and usable(x, out)


def rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, out: torch.Tensor, sign: float = 1.0) -> None:
    """out = x rotated by (cos, sign * sin); ``x``/``out`` [B, S, H, D] views, ``cos``/``sin`` [S, D/2]."""
    b, s, h, d = x.shape
    cos, sin = cos.contiguous(), sin.contiguous()
    lib().cm_rope(x.data_ptr(), x.stride(0), x.stride(1), x.stride(2),
                  out.data_ptr(), out.stride(0), out.stride(1), out.stride(2),
                  cos.data_ptr(), sin.data_ptr(), b, s, h, d, sign)
