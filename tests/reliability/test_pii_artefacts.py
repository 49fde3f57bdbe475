"""PII never leaves the raw input: the whole demo chain, every artefact grepped for every planted value.

The chain is the one ``dvc repro`` runs (dvc.yaml), command for command, on a slice of the shipped
demo text with a high PII share (``demo_data.pii_frac`` 0.5): demo-data -> train-quality -> curate
run -> curate metrics -> dedup-eval -> tokenize train/pools -> mix doremi -> mix select -> pack ->
train -> report, with the repository's params.yaml cut to tiny sizes. Every command's stdout and
stderr and the structured log (``CORPUSMIX_LOG``) are kept. A second set of commands fails on
purpose, or drops records, with PII in its input (broken JSON lines, a non-string text, invalid
UTF-8, a file that is not Parquet) so that error messages and drop records are covered too.

The planted values (``ground_truth.parquet``'s ``pii_spans``; Faker emails, phones, cards, IBANs,
SSNs, IPs, names) must not occur in any text artefact: logs, stdout/stderr, ``stats.json``,
``drops.parquet``, calibration, metrics, mixtures, manifests, the tokenizer, the report (HTML +
Markdown), checkpoint side files, quality models. Parquet files are read cell by cell. Not grepped,
with reasons: the raw input and ground truth (they hold the values by design), document text — the
curated Parquet, the engine's intermediate parts in its work folder and the inspection samples
(``inspect.json``, redacted like the curated output; redaction recall is a measured figure,
``out/metrics/curation.json``, not a guarantee; names are not redacted unless a spaCy model is
configured) — and binary token files (pools, shards, DCP tensors: token ids, not text).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from corpusmix.paths import DEMO

ROOT = Path(__file__).resolve().parents[2]
MIN_LEN = 6  # shorter planted values (e.g. a bare first name) occur in ordinary text

pytestmark = pytest.mark.slow

# params.yaml sections cut to tiny sizes (keys that exist in the repository's params only)
SMALL = {
    "demo_data": {"pii_frac": 0.5, "junk_docs": 10, "foreign_docs": 10, "noise_docs": 20, "toxic_docs": 4,
                  "contaminated_docs": 0, "parts": 2},
    "tokenizer": {"vocab_size": 400},
    "pools": {"workers": 1, "val_fraction": 0.2},
    "dedup_labelled": {"originals": 20, "distractors": 40, "variants": 2},
    "quality": {"max_reference_docs": 200, "negative_docs": 200, "ft_bucket": 200000, "ft_dim": 16,
                "ft_epoch": 2},
    "pack": {"seq_len": 64, "tokens": 20000, "shard_max_bytes": 200000},
    "train": {"seq_len": 64, "steps": 4, "micro_batch_size": 2, "warmup_steps": 1, "ckpt_every": 2,
              "eval_every": 2, "eval_batches": 1, "d_model": 32, "n_layers": 1, "n_heads": 2},
}


def _slice_demo(src: Path) -> None:
    for sub, n in (("en", 20), ("foreign", 6)):
        (src / sub).mkdir(parents=True)
        for f in sorted((DEMO / sub).glob("*.parquet")):
            t = pq.read_table(f).slice(0, n)
            texts = [s[:4000] for s in t.column("text").to_pylist()]
            pq.write_table(t.set_column(t.schema.get_field_index("text"), "text", pa.array(texts)), src / sub / f.name)


def _params(work: Path) -> None:
    params = yaml.safe_load((ROOT / "params.yaml").read_text())

    def absolute(x):  # repository-relative paths (models, eval sets) resolved against the repository
        if isinstance(x, dict):
            return {k: absolute(v) for k, v in x.items()}
        if isinstance(x, list):
            return [absolute(v) for v in x]
        if isinstance(x, str) and x.startswith("data/demo") and (ROOT / x).exists():
            return str(ROOT / x)
        return x

    params = absolute(params)
    for section, values in SMALL.items():
        sec = params.setdefault(section, {})
        sec.update({k: v for k, v in values.items() if k in sec or section in ("train", "pack", "pools")})
    params["demo_data"].update(source_dir=str(work / "src"), output="data/raw")
    mix = params.setdefault("mix", {})
    mix.update(method="doremi", preset="tiny")
    # explicit keys win over the preset (mix/presets.py): a very small proxy
    mix["proxy"] = {"model_preset": "tiny", "d_model": 32, "n_layers": 1, "n_heads": 2, "steps": 4, "batch_size": 2,
                    "seq_len": 32, "warmup": 1, "val_batches": 1}
    mix.setdefault("doremi", {})["steps"] = 4
    mix.setdefault("regmix", {})["num_proxies"] = 24  # the demo's M (96) costs CI minutes and tests nothing more
    (work / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))


def _run(work: Path, args: list[str], *, ok: bool | None = True) -> None:
    """Run one command; ``ok``: must succeed (True), must fail (False), either (None)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), CORPUSMIX_LOG=str(work / "logs" / "corpusmix.jsonl"),
               OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-m", "corpusmix.cli", *args], cwd=work, env=env, capture_output=True,
                          text=True, timeout=900)
    n = len(list((work / "logs").glob("cmd-*")))
    (work / "logs" / f"cmd-{n:02d}.txt").write_text(" ".join(args) + "\n" + proc.stdout + "\n" + proc.stderr)
    if ok:
        assert proc.returncode == 0, f"corpusmix {' '.join(args)}: {proc.stderr[-3000:]}"
    elif ok is False:
        assert proc.returncode != 0, f"corpusmix {' '.join(args)} was expected to fail"


def _texts(path: Path) -> str:
    if path.suffix == ".parquet":
        t = pq.read_table(path)
        return "\n".join(json.dumps(r, default=str, ensure_ascii=False) for r in t.to_pylist())
    return path.read_bytes().decode("utf-8", "replace")


def test_no_planted_pii_value_in_any_artefact(tmp_path: Path) -> None:
    work = tmp_path / "w"
    (work / "logs").mkdir(parents=True)
    _slice_demo(work / "src")
    _params(work)
    chain = [
        ["demo-data"],
        ["curate", "train-quality", "--reference", "data/raw/docs", "--raw", "data/raw/docs", "--output", "out/models"],
        ["curate", "run", "--input", "data/raw/docs", "--output", "out/curate", "--quality-models-dir", "out/models",
         "--workers", "2"],
        ["curate", "metrics", "--run", "out/curate", "--ground-truth", "data/raw/ground_truth.parquet", "--output",
         "out/metrics/curation.json"],
        ["curate", "dedup-eval", "--ground-truth", "data/raw", "--metrics", "out/metrics/dedup.json"],
        ["tokenize", "train", "--curated", "out/curate/curated", "--output", "out/tokenizer/tokenizer.json"],
        ["tokenize", "pools", "--curated", "out/curate/curated", "--tokenizer", "out/tokenizer/tokenizer.json",
         "--output", "out/pools"],
        ["mix", "doremi", "--input", "out/pools", "--output", "out/mix/doremi.json", "--cache", "out/mix/cache_doremi"],
        ["mix", "select", "--input", "out/pools", "--output", "out/mix/mixture.json", "--doremi",
         "out/mix/doremi.json"],
        ["pack", "--pools", "out/pools", "--mixture", "out/mix/mixture.json", "--output", "out/shards"],
        ["train", "--data", "out/shards", "--val-data", "out/pools", "--tokenizer", "out/tokenizer/tokenizer.json",
         "--out-dir", "out/train", "--dvclive", "false", "--progress", "false"],
        ["report", "--output", "out/report/report.html", "--inputs", "out", "data/raw/ground_truth.parquet"],
    ]
    for args in chain:
        _run(work, args)

    truth = pq.read_table(work / "data" / "raw" / "ground_truth.parquet", columns=["id", "pii_spans"]).to_pylist()
    values = sorted({s["value"] for r in truth for s in (r["pii_spans"] or []) if len(s["value"]) >= MIN_LEN})
    assert len(values) >= 40, f"too few planted values to test: {len(values)}"

    # error messages and drop records of bad input whose text carries PII: a broken JSON line, a
    # non-string text, an invalid UTF-8 line, and a file that is no JSON at all (a clear error)
    bad = work / "bad"
    bad.mkdir()
    (bad / "docs.jsonl").write_bytes(
        f'{{"id": "b1", "text": "call {values[0]} or'.encode() + b"\n"
        + json.dumps({"id": "b2", "text": [values[1]]}).encode() + b"\n"
        + f'{{"id": "b3", "text": "{values[2]} '.encode() + b"\xff\xfe" + b' x"}\n')
    _run(work, ["curate", "run", "--input", "bad/docs.jsonl", "--output", "out/bad_curate"])
    (bad / "table.parquet").write_bytes(f"not parquet {values[3]}".encode())
    _run(work, ["curate", "run", "--input", "bad/table.parquet", "--output", "out/bad_curate2"], ok=None)

    # document text (the input, the engine's intermediate parts and its curated output) is not an
    # artefact to grep: redaction recall there is a measured figure, not a guarantee
    skip_dirs = {work / "data", work / "src", work / "bad", work / "out" / "pools", work / "out" / "shards"}
    skip_dirs |= {work / "out" / run / sub for run in ("curate", "bad_curate", "bad_curate2")
                  for sub in ("curated", "work/a/out", "work/b/out", "work/a/inspect", "work/b/inspect")
                  }  # the work folder's logs ARE grepped; work/*/inspect: the tasks' samples, text as read
    # inspect.json holds samples of document text, redacted by the run's PII step like the curated
    # output (names stay unless a spaCy model is set): document text, graded by tests/curate/test_inspect.py
    skip_files = {work / "out" / run / "inspect.json" for run in ("curate", "bad_curate", "bad_curate2")}
    binary = {".bin", ".npy", ".arrow", ".distcp", ".ftz", ".png", ".klm"}
    scanned, leaks = [], []
    for f in sorted(p for p in work.rglob("*") if p.is_file()):
        if any(d in f.parents for d in skip_dirs) or f in skip_files or f.suffix in binary or f.name == ".metadata":
            continue
        text = _texts(f)
        scanned.append(f.relative_to(work).as_posix())
        leaks += [(f.relative_to(work).as_posix(), v) for v in values if v in text]
    print(json.dumps({"planted_values": len(values), "files_scanned": len(scanned)}))
    assert any(s.startswith("logs/") for s in scanned) and "out/curate/stats.json" in scanned
    assert "out/curate/drops.parquet" in scanned and "out/report/report.html" in scanned
    assert not leaks, f"planted PII found in artefacts: {leaks[:20]} ({len(leaks)} in all)"
