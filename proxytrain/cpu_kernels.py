"""Fused single-thread CPU kernels for RMSNorm and RoPE (fp32), built with the system C++ compiler.

Why: on CPU the model's elementwise chains cost memory passes, not FLOPs. Composed from torch ops,
RMSNorm forward reads and writes the activations three times (norm, scale, gain) and its backward
about a dozen; RoPE writes its output once and then rewrites each half. Each kernel here is one
pass per row with the row in L1: RMSNorm forward reads x once and writes y once, its backward
reads the gradient and x once, writes dx once and accumulates the gain gradient in fp64; RoPE reads
each input element once and writes each output element once, with arbitrary token/head strides so
q/k can be read from the fused qkv projection and their gradients written straight into its
gradient.

The kernels are plain C functions (``proxytrain.cpu_kernels_source``; no torch headers: the build
takes about a second) compiled with the system ``g++`` into ``$CORPUSMIX_KERNEL_CACHE`` (default
``~/.cache/corpusmix/kernels``) on first use, keyed by a hash of the source, the compiler and the
flags, and loaded with ctypes. Under reproducible numerics (the default, ``corpusmix.numerics``)
they are built without FMA contraction and compute exp and log themselves from IEEE operations, so
the x86-64-v3 build (AVX2 CPUs) and the baseline x86-64 build (older CPUs) give the same bits;
``CORPUSMIX_NUMERICS=fast`` builds them with ``-march=native`` and the C library's vector ``expf``
instead (another CPU, other bits).
A cached build whose recorded CPU needs this CPU does not meet (a copied cache) is rebuilt, never
loaded.
No compiler, a failed build or ``CORPUSMIX_CPU_KERNELS=0`` -> one log line and ``lib()`` returns
None; ``proxytrain.ops`` then uses its torch-op versions (same numbers within fp32 rounding, not the
same bits), and the run's recorded environment says so.
The kernels are single-threaded loops in a fixed order (deterministic); ``proxytrain.ops`` calls
them only when torch runs one intra-op thread (``train.threads: 1``, the proxy setting), where
they replace single-threaded torch kernels.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import torch

from corpusmix import numerics
from corpusmix.logging import get_logger
from proxytrain.cpu_kernels_source import SOURCE as _SOURCE

log = get_logger(__name__)

# Reproducible builds (the default, ``corpusmix.numerics``): no FMA contraction, no C library math, one
# target per CPU level (x86-64-v3 where the CPU has it, else the x86-64 baseline); the results are the same
# bits for both targets (tests/proxytrain/test_cpu_kernels_isa.py). Fast builds: -march=native, contraction
# and glibc's expf (vector libmvec when it links): faster, other bits on other CPUs.
_COMMON = ["-O3", "-fno-math-errno", "-fno-trapping-math", "-fopenmp-simd", "-shared", "-fPIC", "-std=c++17"]
_TARGETS = {"x86-64-v3": ["-march=x86-64-v3", "-mtune=generic"], "x86-64": ["-march=x86-64", "-mtune=generic"]}
_REPRO = ["-ffp-contract=off"]
_FAST_VARIANTS = (["-march=native", "-ffp-contract=fast", "-DCM_FAST", "-lmvec"],
                  ["-march=native", "-ffp-contract=fast", "-DCM_FAST", "-DCM_NO_MVEC"])
_I64, _F32, _PTR = ctypes.c_int64, ctypes.c_float, ctypes.c_void_p
_LOADED: dict[str, str] = {}


def _cpu_id() -> str:
    """This CPU as the fast (-march=native) build sees it: model name and the full flags line."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
        return "\n".join(next((ln for ln in lines if ln.startswith(k)), "") for k in ("model name", "flags"))
    except OSError:
        return os.uname().machine


@functools.cache
def native_bf16() -> bool | None:
    """Whether this CPU computes bf16 dot products natively (avx512_bf16 or AMX); None where unknown."""
    flags = numerics.cpu_flags()
    return None if flags is None else bool(flags & {"avx512_bf16", "amx_bf16"})


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


def reproducible_target(flags: frozenset[str] | None = None) -> str:
    """The build target of the reproducible kernels on this CPU (same bits for every target)."""
    flags = numerics.cpu_flags() if flags is None else flags
    return "x86-64-v3" if flags is not None and numerics.REFERENCE_FLAGS <= flags else "x86-64"


def build(compiler: str, flags: list[str], *, key_extra: str = "", needs: frozenset[str] = frozenset()) -> Path:
    """Build (or find) the kernel library for these flags in the kernel cache; returns its path.

    The file name hashes the source, the compiler, the flags and ``key_extra`` (the CPU, for native
    builds). A sidecar ``.json`` records the CPU flags the build needs; a cached file whose needs this
    CPU does not meet (a cache copied from another machine) is rebuilt, never loaded."""
    key = hashlib.sha256("\n".join([_SOURCE, compiler, *flags, key_extra]).encode()).hexdigest()[:16]
    out = _cache_dir() / f"cm_kernels_{key}.so"
    meta = out.with_suffix(".json")
    have = numerics.cpu_flags()
    if out.exists() and meta.exists():
        try:
            recorded = frozenset(json.loads(meta.read_text()).get("needs", []))
        except (OSError, ValueError):
            recorded = None
        if recorded is not None and (have is None or recorded <= have):
            return out
        log.warning("cpu kernel cache built for another CPU; rebuilding", extra={"data": {
            "path": str(out), "missing_flags": sorted((recorded or frozenset()) - (have or frozenset()))}})
    out.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
        src = Path(tmp) / "cm_kernels.cpp"
        src.write_text(_SOURCE)
        so = Path(tmp) / "cm_kernels.so"
        subprocess.run([compiler, *[f for f in flags if not f.startswith("-l")], str(src), "-o", str(so),
                        *[f for f in flags if f.startswith("-l")]], check=True, capture_output=True, text=True,
                       timeout=300)
        (Path(tmp) / "meta.json").write_text(json.dumps({"flags": flags, "needs": sorted(needs)}))
        os.replace(Path(tmp) / "meta.json", meta)
        os.replace(so, out)  # atomic: concurrent builders (ranks, workers) never see a partial file
    log.info("cpu kernels built", extra={"data": {"path": str(out), "build_s": round(time.perf_counter() - t0, 2)}})
    return out


def _candidates() -> list[tuple[str, list[str], str, frozenset[str]]]:
    """(name, flags, key_extra, needed CPU flags) to try in order, by the numerics mode."""
    if numerics.mode() == "fast":
        have = numerics.cpu_flags() or frozenset()
        return [("native" + ("" if "-lmvec" in v else "-nomvec"), [*_COMMON, *v], _cpu_id(), have)
                for v in _FAST_VARIANTS]
    target = reproducible_target()
    needs = numerics.REFERENCE_FLAGS if target == "x86-64-v3" else frozenset()
    return [(target, [*_COMMON, *_TARGETS[target], *_REPRO], "", needs)]


@functools.cache
def lib() -> ctypes.CDLL | None:
    """The loaded kernel library, built on first use; None (logged once) when it cannot be had."""
    if os.environ.get("CORPUSMIX_CPU_KERNELS", "1") == "0":
        log.info("cpu kernels disabled by CORPUSMIX_CPU_KERNELS=0; torch-op versions used")
        numerics.record("kernels", "torch-ops (CORPUSMIX_CPU_KERNELS=0)")
        return None
    compiler = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++")
    if compiler is None:
        log.warning("no C++ compiler found; fused cpu kernels unavailable, torch-op versions used: numbers differ "
                    "from runs with the kernels")
        numerics.record("kernels", "torch-ops (no compiler)")
        return None
    handle, error, built = None, "", ""
    for name, flags, key_extra, needs in _candidates():
        try:
            handle, built = ctypes.CDLL(str(build(compiler, flags, key_extra=key_extra, needs=needs))), name
            break
        except (OSError, subprocess.SubprocessError) as exc:
            detail = getattr(exc, "stderr", None) or str(exc)
            error = (str(detail).strip().splitlines() or [""])[-1]
    if handle is None:
        log.warning("fused cpu kernels could not be built; torch-op versions used: numbers differ from runs with "
                    "the kernels", extra={"data": {"error": error}})
        numerics.record("kernels", "torch-ops (build failed)")
        return None
    numerics.record("kernels", f"cm-{numerics.mode()}-{built}")
    _declare(handle)
    return handle


def _declare(handle: ctypes.CDLL) -> None:
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
