"""``corpusmix.numerics``: the ISA caps set before torch/numpy load, and bad settings (unsupported or
below the reference ISA) met with a message and the safe path. Environments are plain dicts; the CPU
is described by ``CORPUSMIX_CPU_FLAGS`` (the flags of an AVX-512 + bf16 CPU, an AVX2 one, an old one)."""

from __future__ import annotations

import logging
import sys

import pytest

from corpusmix import numerics

V4_BF16 = "sse4_2 avx avx2 fma bmi1 bmi2 f16c movbe abm avx512f avx512bw avx512vl avx512dq avx512_bf16"
V3 = "sse4_2 avx avx2 fma bmi1 bmi2 f16c movbe abm"
OLD = "sse2 sse4_2 avx"  # no AVX2 / FMA: below the reference


@pytest.fixture(autouse=True)
def _clean(monkeypatch):
    # the session's numerics state (tests/conftest.py) is restored afterwards: other tests record it
    monkeypatch.setattr(numerics, "_STATE", dict(numerics._STATE))
    monkeypatch.delenv(numerics.MODE_ENV, raising=False)
    monkeypatch.setattr(numerics, "is_x86_64", lambda: True)
    # this process loaded torch before any configure(): state() would report its real (uncapped) dispatch
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    numerics._MESSAGES.clear()
    yield
    numerics._MESSAGES.clear()


def _run(monkeypatch, flags: str, env: dict[str, str], mode: str = "") -> tuple[dict, dict, list[str]]:
    monkeypatch.setenv("CORPUSMIX_CPU_FLAGS", flags)
    if mode:
        env = {**env, numerics.MODE_ENV: mode}
        monkeypatch.setenv(numerics.MODE_ENV, mode)
    st = numerics.configure(env)
    msgs = [m for _, m, _ in numerics._MESSAGES]
    return env, st, msgs


def test_reference_caps_on_an_avx512_bf16_cpu(monkeypatch):
    env, st, msgs = _run(monkeypatch, V4_BF16, {})
    assert env["ATEN_CPU_CAPABILITY"] == "avx2" and env["ONEDNN_MAX_CPU_ISA"] == "AVX2"
    assert env["MKL_CBWR"] == "AVX2,STRICT" and env["OPENBLAS_CORETYPE"] == "Haswell"
    assert "AVX512_ICL" in env["NPY_DISABLE_CPU_FEATURES"]
    assert st["mode"] == "reproducible" and st["at_reference"] and not msgs


def test_a_setting_above_the_reference_is_lowered_one_at_it_kept(monkeypatch):
    env, st, msgs = _run(monkeypatch, V4_BF16, {"ATEN_CPU_CAPABILITY": "avx512", "ONEDNN_MAX_CPU_ISA": "AVX2",
                                                 "NPY_DISABLE_CPU_FEATURES": "AVX512_SPR"})
    assert env["ATEN_CPU_CAPABILITY"] == "avx2" and env["ONEDNN_MAX_CPU_ISA"] == "AVX2" and st["at_reference"]
    assert env["NPY_DISABLE_CPU_FEATURES"].split().count("AVX512_SPR") == 1
    assert len(msgs) == 1 and "ATEN_CPU_CAPABILITY=avx512 lowered to avx2" in msgs[0]


def test_mkl_runs_its_strict_mode(monkeypatch):
    # MKL_CBWR=AVX2 without STRICT gives other bits on an Intel CPU than on an AMD one
    env, st, msgs = _run(monkeypatch, V4_BF16, {"MKL_CBWR": "AVX2"})
    assert env["MKL_CBWR"] == "AVX2,STRICT" and st["at_reference"] and any("strict mode" in m for m in msgs)
    numerics._MESSAGES.clear()
    env, st, msgs = _run(monkeypatch, V4_BF16, {"MKL_CBWR": "AVX512"})
    assert env["MKL_CBWR"] == "AVX2,STRICT" and st["at_reference"]
    numerics._MESSAGES.clear()
    env, st, msgs = _run(monkeypatch, V4_BF16, {"MKL_CBWR": "avx2,strict"})
    assert env["MKL_CBWR"] == "avx2,strict" and not msgs


def test_a_setting_below_the_reference_is_kept_and_the_run_marked(monkeypatch):
    env, st, msgs = _run(monkeypatch, V3, {"ATEN_CPU_CAPABILITY": "default"})
    assert env["ATEN_CPU_CAPABILITY"] == "default" and not st["at_reference"]
    assert any("below the reference" in m for m in msgs)


def test_an_isa_the_cpu_lacks_is_removed_with_a_message(monkeypatch):
    # forcing AVX-512 kernels on an AVX2 CPU would end the process with an illegal instruction
    env, st, msgs = _run(monkeypatch, V3, {"ATEN_CPU_CAPABILITY": "avx512", "MKL_CBWR": "AVX512"}, mode="fast")
    assert "ATEN_CPU_CAPABILITY" not in env and "MKL_CBWR" not in env
    assert sum("asks for instructions this CPU lacks" in m for m in msgs) == 2
    env, st, msgs = _run(monkeypatch, V3, {"ATEN_CPU_CAPABILITY": "avx9000"})
    assert env["ATEN_CPU_CAPABILITY"] == "avx2" and any("not a known level" in m for m in msgs)


def test_a_cpu_below_the_reference_runs_uncapped_and_marked(monkeypatch):
    env, st, msgs = _run(monkeypatch, OLD, {})
    assert "ATEN_CPU_CAPABILITY" not in env and not st["at_reference"]
    assert any("below the reference ISA x86-64-v3" in m for m in msgs)


def test_fast_mode_caps_nothing_and_says_so(monkeypatch, caplog):
    env, st, msgs = _run(monkeypatch, V4_BF16, {}, mode="fast")
    assert env == {numerics.MODE_ENV: "fast"} and st["mode"] == "fast" and not st["at_reference"]
    env, st, msgs = _run(monkeypatch, V4_BF16, {numerics.MODE_ENV: "quick"})
    assert st["mode"] == "reproducible" and any("not one of" in m for m in msgs)
    caplog.set_level(logging.INFO, logger="corpusmix.numerics")
    numerics.log_messages()
    assert any("not one of" in r.getMessage() for r in caplog.records) and not numerics._MESSAGES
