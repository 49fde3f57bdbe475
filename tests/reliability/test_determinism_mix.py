"""Two runs of the mixture-search and ablation stages give the same bytes (apart from timings), also
under two different instruction-set limits.

Pools are built once from the shipped demo text (a 320-token BPE trained on four domains, real
``corpusmix tokenize`` commands). Then the stages of dvc.yaml (``mix doremi``, ``mix regmix``,
``mix select``, ``mix ablation``) run twice, each time in fresh processes and a fresh output folder,
with tiny proxies (the ``micro`` preset cut to a few steps, with the bf16 output projection, whose
arithmetic is native on CPUs with avx512_bf16 and emulated elsewhere). The second run uses another
``OMP_NUM_THREADS``, another working directory and kernel cache, and every library's own limit set
to an AVX2 CPU without AVX-512 or native bf16 (``ISA_LIMITS``: ATen, oneDNN, MKL, NumPy, OpenBLAS,
glibc's ifuncs and corpusmix's own CPU detection), as another machine would be; the first runs
unlimited on this CPU. Under reproducible numerics (``corpusmix.numerics``, the default) every
file the stages write (doremi.json, regmix.json, mixture.json, regmix_report.json, the trajectory,
ablation.json, every cached proxy run) must be byte-identical: wall-clock values (creation time,
seconds) live only in the untracked ``*.timing.json`` sidecars and the logs. On an AVX-512 CPU with
bf16 the limits change the kernels the libraries pick (measured: ATEN_CPU_CAPABILITY=avx2 alone, or
ONEDNN_MAX_CPU_ISA=AVX2 alone, changes every output when nothing is capped), so this compares two
instruction sets, not one twice.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from corpusmix.paths import DEMO

ROOT = Path(__file__).resolve().parents[2]
DOMAINS = ("legal", "literature", "news", "techdocs")
PROXY = ["--preset", "micro", "--proxy-steps", "10", "--proxy-batch-size", "4", "--proxy-seq-len", "32",
         "--proxy-val-batches", "1", "--proxy-head-dtype", "bf16"]
# an AVX2 CPU without AVX-512 or native bf16 (x86-64-v3, the reference), as each library lets one cap it
ISA_LIMITS = {
    "ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_ENABLE_INSTRUCTIONS": "AVX2",
    "NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR", "OPENBLAS_CORETYPE": "Haswell",
    "GLIBC_TUNABLES": "glibc.cpu.hwcaps=-AVX512F,-AVX512VL,-AVX512BW,-AVX512DQ,-AVX512CD",
    "CORPUSMIX_CPU_FLAGS": "sse2 sse4_1 sse4_2 avx avx2 fma bmi1 bmi2 f16c movbe abm",
}

pytestmark = pytest.mark.slow


def _corpusmix(args: list[str], cwd: Path, threads: str, limits: dict[str, str] | None = None) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS=threads, MKL_NUM_THREADS=threads,
               CORPUSMIX_KERNEL_CACHE=str(cwd / ".kernels"), **(limits or {}))
    for var in (*ISA_LIMITS, "CORPUSMIX_NUMERICS"):
        if limits is None or var not in limits:
            env.pop(var, None)
    proc = subprocess.run([sys.executable, "-m", "corpusmix.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, f"corpusmix {' '.join(args)}: {proc.stderr[-2000:]}"


def _pools(root: Path) -> Path:
    curated = root / "curated"
    curated.mkdir(parents=True)
    for d in DOMAINS:
        t = pq.read_table(DEMO / "en" / f"{d}.parquet", columns=["id", "text", "domain", "source"]).slice(0, 30)
        pq.write_table(t, curated / f"{d}.parquet")
    (root / "params.yaml").write_text("tokenizer:\n  vocab_size: 320\n  max_chars_per_doc: 4000\n"
                                      "pools:\n  val_fraction: 0.2\n  workers: 1\n")
    _corpusmix(["tokenize", "train", "--params", "params.yaml", "--curated", "curated", "--output", "tok.json"],
               root, "1")
    _corpusmix(["tokenize", "pools", "--params", "params.yaml", "--curated", "curated", "--tokenizer", "tok.json",
                "--output", "pools"], root, "1")
    return root / "pools"


def _stages(pools: Path, work: Path, threads: str, limits: dict[str, str] | None = None) -> None:
    work.mkdir()
    (work / "params.yaml").write_text("mix:\n  method: regmix\n")
    p = ["--params", "params.yaml"]
    _corpusmix(["mix", "doremi", "--input", str(pools), "--output", "mix/doremi.json", "--cache",
                "mix/cache_doremi", *p, *PROXY, "--steps", "10", "--seeds", "2", "--reference-factor", "1",
                "--workers", "1"], work, threads, limits)
    _corpusmix(["mix", "regmix", "--input", str(pools), "--output", "mix/regmix.json", "--cache",
                "mix/cache_regmix", *p, *PROXY, "--num-proxies", "8", "--workers", "1", "--candidates", "2000",
                "--top-k", "20", "--final-tokens", "20000", "--max-epochs", "50"], work, threads, limits)
    _corpusmix(["mix", "select", "--input", str(pools), "--output", "mix/mixture.json", "--doremi",
                "mix/doremi.json", "--regmix", "mix/regmix.json", *p], work, threads, limits)
    _corpusmix(["mix", "ablation", "--input", str(pools), "--output", "ablation/ablation.json", "--cache",
                "ablation/cache", *p, *PROXY, "--seeds", "2", "--workers", "1", "--mixture", "uniform",
                "--mixture", "doremi=mix/doremi.json", "--mixture", "regmix=mix/regmix.json"], work, threads, limits)


def _hashed_outputs(work: Path) -> dict[str, bytes]:
    files = sorted(p for p in work.rglob("*") if p.is_file() and p.name != "params.yaml"
                   and not p.name.endswith(".timing.json") and ".kernels" not in p.parts)
    return {f.relative_to(work).as_posix(): f.read_bytes() for f in files}


def test_two_runs_of_the_mixture_stages_are_identical(tmp_path: Path) -> None:
    pools = _pools(tmp_path / "data")
    _stages(pools, tmp_path / "a", "1")
    _stages(pools, tmp_path / "b", "2", ISA_LIMITS)
    a, b = _hashed_outputs(tmp_path / "a"), _hashed_outputs(tmp_path / "b")
    assert set(a) == set(b)
    assert {"mix/doremi.json", "mix/regmix.json", "mix/mixture.json", "mix/regmix_report.json",
            "ablation/ablation.json"} <= set(a)
    assert len([k for k in a if k.startswith("mix/cache_regmix/")]) >= 8
    differ = sorted(k for k in a if a[k] != b[k])
    assert not differ, f"outputs that differ between the two runs: {differ}"
    for name in ("doremi", "regmix", "mixture"):
        assert b'"created"' not in a[f"mix/{name}.json"] and b'"seconds"' not in a[f"mix/{name}.json"]
    assert "created" in json.loads((tmp_path / "a" / "mix" / "doremi.timing.json").read_text())
    env = json.loads(a["mix/doremi.json"])["provenance"]["environment"]["numerics"]
    assert env["mode"] == "reproducible" and env["at_reference"] and env["kernels"].startswith("cm-reproducible")
