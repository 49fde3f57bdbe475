"""The fused CPU kernels give the same bits whatever ISA they are built for (reproducible numerics), and
a kernel cache copied from another CPU is rebuilt, never loaded.

Each kernel runs on the same random inputs in a build for the x86-64 baseline (SSE2, scalar math) and
one for x86-64-v3 (AVX2, 8-wide loops); every output must be byte-identical. The fast build
(``-march=native``, FMA contraction, the C library's expf) is only required to agree within rounding.
"""

from __future__ import annotations

import ctypes
import json
import shutil

import numpy as np
import pytest
import torch

from corpusmix import numerics
from proxytrain import cpu_kernels as K

pytestmark = pytest.mark.skipif(shutil.which("g++") is None or not numerics.is_x86_64(),
                                reason="needs g++ on x86-64")


def _lib(flags: list[str], cache, monkeypatch, needs=frozenset()) -> ctypes.CDLL:
    monkeypatch.setenv("CORPUSMIX_KERNEL_CACHE", str(cache))
    handle = ctypes.CDLL(str(K.build(shutil.which("g++"), flags, needs=needs)))
    K._declare(handle)
    return handle


def _outputs(lib: ctypes.CDLL) -> dict[str, np.ndarray]:
    g = torch.Generator().manual_seed(0)
    n, v, d, f = 37, 515, 72, 45  # odd sizes: the vector loops' remainders too
    out: dict[str, torch.Tensor] = {}
    x = torch.randn(n, v, generator=g) * 6
    t = torch.randint(0, v, (n,), generator=g)
    t[3] = -1
    for dt, name in ((torch.float32, "f32"), (torch.bfloat16, "bf16")):
        xs = x.to(dt).contiguous()
        loss, lse = torch.empty(n), torch.empty(n)
        getattr(lib, f"cm_ce_fwd_{name}")(xs.data_ptr(), t.data_ptr(), loss.data_ptr(), lse.data_ptr(), n, v)
        gin, gout = torch.rand(n, generator=g), torch.empty_like(xs)
        getattr(lib, f"cm_ce_bwd_{name}")(xs.data_ptr(), t.data_ptr(), lse.data_ptr(), gin.data_ptr(),
                                          gout.data_ptr(), n, v)
        out |= {f"ce_loss_{name}": loss, f"ce_lse_{name}": lse, f"ce_grad_{name}": gout.view(torch.int16)}
    h = torch.randn(n, 2 * f, generator=g) * 8
    sig, sw = torch.empty(n, f), torch.empty(n, f)
    lib.cm_swiglu_fwd(h.data_ptr(), sig.data_ptr(), sw.data_ptr(), n, f)
    gh = torch.empty_like(h)
    gsw = torch.randn(n, f, generator=g)
    lib.cm_swiglu_bwd(gsw.data_ptr(), h.data_ptr(), sig.data_ptr(), gh.data_ptr(), n, f)
    xr, w = torch.randn(n, d, generator=g), torch.randn(d, generator=g)
    y, rstd = torch.empty(n, d), torch.empty(n)
    lib.cm_rms_fwd(xr.data_ptr(), w.data_ptr(), y.data_ptr(), rstd.data_ptr(), n, d, 1e-5)
    dx, dw = torch.empty(n, d), torch.empty(d, dtype=torch.float64)
    grms = torch.randn(n, d, generator=g)
    lib.cm_rms_bwd(grms.data_ptr(), xr.data_ptr(), w.data_ptr(), rstd.data_ptr(), dx.data_ptr(), dw.data_ptr(), n, d)
    out |= {"swiglu_sig": sig, "swiglu": sw, "swiglu_grad": gh, "rms": y, "rstd": rstd, "rms_dx": dx, "rms_dw": dw}
    return {k: v.numpy().copy() for k, v in out.items()}


def test_baseline_and_v3_builds_give_the_same_bits(tmp_path, monkeypatch):
    if not numerics.REFERENCE_FLAGS <= (numerics.cpu_flags() or frozenset()):
        pytest.skip("this CPU cannot run the x86-64-v3 build")
    common = [*K._COMMON, *K._REPRO]
    base = _outputs(_lib([*common, *K._TARGETS["x86-64"]], tmp_path / "a", monkeypatch))
    v3 = _outputs(_lib([*common, *K._TARGETS["x86-64-v3"]], tmp_path / "b", monkeypatch))
    differ = [k for k in base if base[k].tobytes() != v3[k].tobytes()]
    assert not differ, f"kernel outputs that differ between the x86-64 and x86-64-v3 builds: {differ}"
    fast = _outputs(_lib([*K._COMMON, *K._FAST_VARIANTS[1]], tmp_path / "c", monkeypatch))
    for k in ("ce_loss_f32", "ce_lse_f32", "swiglu", "rms"):  # fast: the same numbers within rounding
        np.testing.assert_allclose(fast[k], v3[k], rtol=2e-5, atol=1e-5, err_msg=k)
    # the reproducible exp is about as exact as the C library's
    x = torch.linspace(-87, 88, 4099)
    h = torch.cat([-x.view(1, -1), torch.zeros(1, x.numel())], 1).contiguous()
    sig, out = torch.empty(1, x.numel()), torch.empty(1, x.numel())
    lib = _lib([*common, *K._TARGETS["x86-64-v3"]], tmp_path / "b", monkeypatch)
    lib.cm_swiglu_fwd(h.data_ptr(), sig.data_ptr(), out.data_ptr(), 1, x.numel())
    ref = 1.0 / (1.0 + torch.exp(x.double()))  # sigmoid(-x) from 1 / (1 + exp(x))
    assert float(((sig[0].double() - ref).abs() / ref.clamp_min(1e-37)).max()) < 5e-7


def test_a_kernel_cache_from_another_cpu_is_rebuilt(tmp_path, monkeypatch, caplog):
    flags = [*K._COMMON, *K._REPRO, *K._TARGETS["x86-64"]]
    monkeypatch.setenv("CORPUSMIX_KERNEL_CACHE", str(tmp_path))
    path = K.build(shutil.which("g++"), flags, needs=frozenset())
    meta = path.with_suffix(".json")
    # as a home folder copied from a machine whose build needed AVX-512: the sidecar names flags we lack
    monkeypatch.setenv("CORPUSMIX_CPU_FLAGS", "sse2 sse4_2")
    meta.write_text(json.dumps({"flags": flags, "needs": ["avx512f"]}))
    path.write_bytes(b"not a library built here")
    caplog.set_level("WARNING", logger=K.log.name)
    again = K.build(shutil.which("g++"), flags, needs=frozenset())
    assert again == path and any("another CPU" in r.getMessage() for r in caplog.records)
    assert json.loads(meta.read_text())["needs"] == [] and ctypes.CDLL(str(again)) is not None
