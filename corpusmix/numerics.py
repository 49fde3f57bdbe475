"""The same bytes on every x86-64 CPU: which kernels the numeric libraries may pick (docs/reproducibility.md).

PyTorch (ATen), oneDNN, MKL, OpenBLAS and NumPy each choose their kernels by the CPU they run on;
an AVX-512 kernel sums in another order than an AVX2 one, and a bf16 matrix product is computed
natively on some CPUs and emulated on others. So a run on another CPU gives other bytes, unless
every library is held at one level. ``CORPUSMIX_NUMERICS`` says which:

- ``reproducible`` (the default): every library is capped at the reference level ``x86-64-v3``
  (AVX2 + FMA, x86 CPUs since 2013-2015) through its own setting, set here before it is loaded:
  ``ATEN_CPU_CAPABILITY=avx2``, ``ONEDNN_MAX_CPU_ISA=AVX2``, ``MKL_CBWR=AVX2,STRICT`` (MKL's conditional
  numerical reproducibility in its strict mode: without ``STRICT`` MKL's AVX2 branch gives other bits on
  an Intel CPU than on an AMD one), ``OPENBLAS_CORETYPE=Haswell`` and NumPy's AVX-512 loops off
  (``NPY_DISABLE_CPU_FEATURES``). The fused kernels of ``proxytrain.cpu_kernels`` are built without
  FMA contraction and without the C library's math, so their results do not depend on the ISA they
  are built for. A setting the user made at or below the reference is kept (it is that machine's
  limit); one above it is lowered to the reference, with a log line. On a CPU below the reference,
  or with a setting below it, the run goes on at the lower level with a warning, and
  ``state()["at_reference"]`` is false in the run's outputs: its numbers differ from the
  reference's.
- ``fast``: nothing is capped; each library uses the best kernels of this CPU and the fused
  kernels are built with ``-march=native``. Faster, but another CPU gives other bytes. ``state()``
  says so in every output that records the environment.

A setting naming an ISA this CPU lacks (``ATEN_CPU_CAPABILITY=avx512`` on an AVX2 CPU would stop the
process with an illegal instruction) is removed with a warning, in both modes.

``configure()`` must run before torch and numpy are imported: ``corpusmix.cli.main`` calls it first.
Processes it starts (proxy workers, torchrun ranks) inherit the settings through the environment.
"""

from __future__ import annotations

import os
import platform
import sys
from functools import cache
from pathlib import Path
from typing import Any

MODE_ENV = "CORPUSMIX_NUMERICS"
MODES = ("reproducible", "fast")
REFERENCE = "x86-64-v3"
# /proc/cpuinfo flags a CPU of the reference level has (x86-64-v3: AVX2, FMA, BMI1/2, F16C, MOVBE, LZCNT)
REFERENCE_FLAGS = frozenset({"avx", "avx2", "fma", "bmi1", "bmi2", "f16c", "movbe", "abm", "sse4_2"})

# variable -> (value at the reference, levels lowest first, /proc/cpuinfo flags each level needs)
_LEVELS: dict[str, tuple[str, tuple[str, ...], dict[str, frozenset[str]]]] = {
    "ATEN_CPU_CAPABILITY": ("avx2", ("default", "avx2", "avx512"), {
        "avx2": frozenset({"avx2", "fma"}), "avx512": frozenset({"avx512f", "avx512bw", "avx512vl", "avx512dq"})}),
    "ONEDNN_MAX_CPU_ISA": ("AVX2", ("SSE41", "AVX", "AVX2", "AVX2_VNNI", "AVX2_VNNI_2", "AVX512_CORE",
                                    "AVX512_CORE_VNNI", "AVX512_CORE_BF16", "AVX10_1_512", "AVX512_CORE_FP16",
                                    "AVX10_1_512_AMX", "AVX512_CORE_AMX", "AVX10_1_512_AMX_FP16",
                                    "AVX512_CORE_AMX_FP16", "ALL"), {}),
    "MKL_CBWR": ("AVX2,STRICT", ("COMPATIBLE", "SSE2", "SSE3", "SSSE3", "SSE4_1", "SSE4_2", "AVX", "AVX2", "AVX512",
                          "AVX512_E1", "AVX512_E2", "AVX512_E3", "AVX512_E4", "AUTO"), {
        "AVX2": frozenset({"avx2", "fma"}), "AVX512": frozenset({"avx512f"})}),
}
# MKL's own cap (a machine's limit; CBWR above picks the code path); checked like the levels above
_MKL_CAP = "MKL_ENABLE_INSTRUCTIONS"
_MKL_CAP_LEVELS = ("SSE4_2", "AVX", "AVX2", "AVX512", "AVX512_E1", "AVX512_E2", "AVX512_E3", "AVX512_E4",
                   "AVX10")
_OPENBLAS = ("OPENBLAS_CORETYPE", "Haswell")
_NUMPY = "NPY_DISABLE_CPU_FEATURES"
# NumPy's dispatch targets above x86-64-v3: named as groups from NumPy 2.4, one by one before
_NUMPY_ABOVE_V3 = {"new": ("X86_V4", "AVX512_ICL", "AVX512_SPR"),
                   "old": ("AVX512F", "AVX512CD", "AVX512_KNL", "AVX512_KNM", "AVX512_SKX", "AVX512_CLX",
                           "AVX512_CNL", "AVX512_ICL", "AVX512_SPR")}

_STATE: dict[str, Any] = {}
_COMPONENTS: dict[str, Any] = {}
_MESSAGES: list[tuple[str, str, dict[str, Any]]] = []  # (level, message, data) logged once logging is set up


def cpu_flags() -> frozenset[str] | None:
    """The CPU's feature flags (``/proc/cpuinfo``), or None where they cannot be read (not Linux)."""
    override = os.environ.get("CORPUSMIX_CPU_FLAGS")  # tests: pretend to be another CPU
    if override is not None:
        return frozenset(override.replace(",", " ").split())
    return _proc_flags()


@cache
def _proc_flags() -> frozenset[str] | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return None


def is_x86_64() -> bool:
    return platform.machine().lower() in ("x86_64", "amd64")


def mode(environ: dict[str, str] | None = None) -> str:
    """``reproducible`` or ``fast`` (``CORPUSMIX_NUMERICS``); anything else is reproducible, with a warning."""
    env = os.environ if environ is None else environ
    value = env.get(MODE_ENV, "reproducible").strip().lower() or "reproducible"
    return value if value in MODES else "reproducible"


def _rank(levels: tuple[str, ...], value: str) -> int | None:
    head = value.split(",")[0].strip().upper()
    upper = [lv.upper() for lv in levels]
    return upper.index(head) if head in upper else None


def _supported(var: str, value: str, flags: frozenset[str] | None) -> bool:
    need = _LEVELS[var][2].get(value.split(",")[0].strip().lower() if var == "ATEN_CPU_CAPABILITY"
                               else value.split(",")[0].strip().upper(), frozenset())
    return flags is None or need <= flags


def configure(environ: dict[str, str] | None = None) -> dict[str, Any]:
    """Set the libraries' ISA settings in ``environ`` (default ``os.environ``) for this process and its
    children, as the module docstring says; returns :func:`state`. Call before torch/numpy load."""
    env = os.environ if environ is None else environ
    raw = env.get(MODE_ENV, "")
    if raw and raw.strip().lower() not in MODES:
        _note("warning", f"{MODE_ENV}={raw!r} is not one of {list(MODES)}; using reproducible", {})
    flags = cpu_flags() if is_x86_64() else None
    at_reference = is_x86_64() and flags is not None and REFERENCE_FLAGS <= flags
    for var in _LEVELS:
        _check_var(env, var, flags)
    if mode(env) == "reproducible" and is_x86_64():
        if not at_reference:
            _note("warning", f"this CPU is below the reference ISA {REFERENCE} (AVX2 + FMA) or its flags are "
                  "unreadable: numbers computed here differ from runs on reference CPUs (e.g. the committed "
                  "dvc.lock); the run goes on with this CPU's own kernels", {"missing": sorted(
                      REFERENCE_FLAGS - (flags or frozenset()))})
        else:
            for var, (ref, levels, _) in _LEVELS.items():
                at_reference &= _cap(env, var, ref, levels)
            _mkl_strict(env)
            at_reference &= _cap(env, _MKL_CAP, "AVX2", _MKL_CAP_LEVELS, set_default=False)
            if env.get(_OPENBLAS[0], _OPENBLAS[1]) != _OPENBLAS[1]:
                _note("info", f"{_OPENBLAS[0]}={env[_OPENBLAS[0]]} replaced by {_OPENBLAS[1]} (reproducible numerics)",
                      {})
            env[_OPENBLAS[0]] = _OPENBLAS[1]
            _numpy_cap(env)
    _STATE.clear()
    _STATE.update({"mode": mode(env), "reference": REFERENCE if is_x86_64() else None,
                   "at_reference": bool(at_reference and mode(env) == "reproducible"),
                   "settings": {k: env[k] for k in (*_LEVELS, _MKL_CAP, _OPENBLAS[0], _NUMPY) if k in env}})
    if "torch" in sys.modules or "numpy" in sys.modules:
        _STATE["late"] = sorted(m for m in ("torch", "numpy") if m in sys.modules)
    return state()


def _check_var(env: dict[str, str], var: str, flags: frozenset[str] | None) -> None:
    """Remove a setting that forces an ISA this CPU lacks (it would crash or be ignored)."""
    value = env.get(var)
    if value is None or not is_x86_64():
        return
    if _rank(_LEVELS[var][1], value) is None:
        _note("warning", f"{var}={value!r} is not a known level ({', '.join(_LEVELS[var][1])}); removed", {})
        del env[var]
    elif not _supported(var, value, flags):
        _note("warning", f"{var}={value!r} asks for instructions this CPU lacks; removed, the library picks what "
              "this CPU has", {})
        del env[var]


def _cap(env: dict[str, str], var: str, ref: str, levels: tuple[str, ...], set_default: bool = True) -> bool:
    """Cap ``var`` at ``ref``; True when the result is the reference level (not below it)."""
    value = env.get(var)
    if value is None:
        if set_default:
            env[var] = ref
        return True
    rank, ref_rank = _rank(levels, value), _rank(levels, ref)
    if rank is None or ref_rank is None:
        return True
    if rank > ref_rank:
        _note("info", f"{var}={value} lowered to {ref}: reproducible numerics ({MODE_ENV}=fast keeps it)", {})
        env[var] = ref
        return True
    if rank < ref_rank:
        _note("warning", f"{var}={value} is below the reference {ref}: numbers computed here differ from runs at "
              f"the reference {REFERENCE} (e.g. the committed dvc.lock)", {})
        return False
    return True


def _mkl_strict(env: dict[str, str]) -> None:
    """Add ``STRICT`` to a known ``MKL_CBWR`` branch: the non-strict AVX2 branch is not bitwise the same on
    Intel and AMD CPUs (docs/reproducibility.md)."""
    value = env.get("MKL_CBWR")
    if not value or _rank(_LEVELS["MKL_CBWR"][1], value) is None:
        return
    parts = [p.strip().upper() for p in value.split(",")]
    if "STRICT" not in parts and parts[0] not in ("AUTO", "COMPATIBLE"):
        _note("info", f"MKL_CBWR={value} run in MKL's strict mode ({value},STRICT): reproducible numerics", {})
        env["MKL_CBWR"] = ",".join([value, "STRICT"])


def _numpy_cap(env: dict[str, str]) -> None:
    try:
        from importlib.metadata import version

        major, minor = (int(x) for x in version("numpy").split(".")[:2])
    except Exception:  # noqa: BLE001 - numpy missing or an odd version string: the old names are harmless
        major, minor = 1, 0
    names = _NUMPY_ABOVE_V3["new" if (major, minor) >= (2, 4) else "old"]
    have = env.get(_NUMPY, "").replace(",", " ").split()
    env[_NUMPY] = " ".join(dict.fromkeys([*have, *names]))


def _note(level: str, msg: str, data: dict[str, Any]) -> None:
    _MESSAGES.append((level, msg, data))


def log_messages() -> None:
    """Log what :func:`configure` changed or found (once logging is configured)."""
    from corpusmix.logging import get_logger

    log = get_logger("numerics")
    while _MESSAGES:
        level, msg, data = _MESSAGES.pop(0)
        getattr(log, level)(msg, extra={"data": data})


def state() -> dict[str, Any]:
    """What governs this process's numbers: the mode, whether it runs at the reference level, the
    ISA each loaded library uses (recorded in the outputs: ``corpusmix.environment``)."""
    out = dict(_STATE) if _STATE else {"mode": mode(), "reference": REFERENCE if is_x86_64() else None,
                                        "at_reference": False, "settings": {}, "configured": False}
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            out["aten"] = str(torch.backends.cpu.get_cpu_capability()).lower()
        except Exception:  # noqa: BLE001 - very old torch
            pass
        if mode() == "reproducible" and out.get("at_reference") and out.get("aten") not in (None, "avx2"):
            out["at_reference"] = False  # torch was loaded before configure(): its dispatch is not capped
    out.update(_COMPONENTS)
    return out


def record(name: str, value: Any) -> None:
    """A component that chose its own code path says which (the fused CPU kernels: their build), for :func:`state`."""
    _COMPONENTS[name] = value
