"""Benchmark: the content steps of the curation chain, per core, before/after the auto profile.

Run: ``python bench/bench_curate_chain.py --raw RAW_DIR [--rounds 2] [--docs N]`` where
``RAW_DIR`` is the output of ``corpusmix demo-data --output RAW_DIR`` (or any folder with a
``docs/`` of Parquet documents). In one process (one core), alternately, on the same documents:

* ``before``: normalize -> language ID (per-document rule, ``skip_domains``/``domain_thresholds``
  of the old params) -> the fused datatrove-parity filters (``web`` profile) with the old
  hand-written ``per_domain`` overrides;
* ``auto``: normalize -> language ID (per-domain) -> the ``auto`` filter, the calibration
  (sampling, word-order model, thresholds) INCLUDED in its time;
* ``datatrove``: normalize -> language ID (per document) -> datatrove's own four filters chained
  (Gopher repetition, Gopher quality, C4, FineWeb quality), the web profile's anchor.

Prints MB/s per round and the ratios; the other steps of the chain (dedup, PII, quality) are the
same objects before and after, see BENCHMARKS.md for the whole-chain figure.
"""

from __future__ import annotations

import argparse
import copy
import json
import tempfile
import time
from pathlib import Path

import harness
import pyarrow as pa
import pyarrow.parquet as pq
from datatrove.data import Document

from curate import docio as cio
from curate.calibrate import calibrate_steps
from curate.steps.filters import FilterConfig, HeuristicFilter, datatrove_chain, make_filter
from curate.steps.langid import LangIdConfig, LanguageFilter, LanguageID
from curate.steps.normalize import NormalizeConfig, Normalizer

# the params.yaml overrides of the chain before the auto profile (commit 515b5a7)
OLD_LANGID = {"keep_languages": ["en"], "threshold": 0.65, "skip_domains": ["code"], "per_domain": False,
              "domain_thresholds": {"reference": 0.3, "quotes": 0.4}}
OLD_FILTERS = {
    "profile": "web",
    "per_domain": {
        "code": {"gopher_quality": False, "c4": False, "fineweb": False, "rep_dup_line_frac": 0.6,
                 "rep_dup_line_char_frac": 0.4},
        "quotes": {"quality_min_doc_words": 3, "quality_max_non_alpha_words_ratio": 0.6, "quality_min_stop_words": 1,
                   "quality_max_ellipsis_lines_ratio": 0.5, "rep_top_n_grams": {2: 0.5, 3: 0.45, 4: 0.4},
                   "c4": False, "fineweb": False},
        "reference": {"quality_min_doc_words": 5, "quality_max_non_alpha_words_ratio": 0.5, "quality_min_stop_words": 1,
                      "rep_top_n_grams": {2: 0.5, 3: 0.45, 4: 0.4}, "c4": False, "fineweb": False},
        "techdocs": {"quality_max_non_alpha_words_ratio": 0.6, "c4": False},
        "news": {"c4_min_num_sentences": 2},
        "literature": {"fineweb_line_punct_thr": 0.05},
    }}


def run(steps: list, docs: list[Document]) -> tuple[float, int]:
    t0 = time.perf_counter()
    kept = 0
    for d in docs:
        d = copy.copy(d)
        d.metadata = dict(d.metadata)
        for s in steps:
            res = s.filter(d)
            if res is not True and not (isinstance(res, tuple) and res[0]):
                break
        else:
            kept += 1
    return time.perf_counter() - t0, kept


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--raw", required=True, help="folder with docs/ (corpusmix demo-data output)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--docs", type=int, default=0, help="use only the first N documents (0 = all)")
    args = ap.parse_args()
    raw = Path(args.raw)
    rows = pq.read_table(raw / "docs", columns=["id", "text", "domain"]).to_pylist()
    if args.docs:
        rows = rows[:args.docs]
    docs = [Document(text=r["text"], id=r["id"], metadata={"domain": r["domain"]}) for r in rows]
    # calibration reads exactly the benchmarked documents (its cost is charged to auto)
    sub = Path(tempfile.mkdtemp(prefix="bench_chain_"))
    pq.write_table(pa.Table.from_pylist(rows), sub / "docs.parquet")
    mb = sum(len(d.text.encode()) for d in docs) / 1e6
    lid = LanguageID()
    lid.predict("warm up")

    def before() -> list:
        return [Normalizer(NormalizeConfig()), lid, LanguageFilter(LangIdConfig(**OLD_LANGID)),
                HeuristicFilter(FilterConfig(**OLD_FILTERS))]

    def datatrove() -> list:
        return [Normalizer(NormalizeConfig()), lid, LanguageFilter(LangIdConfig(**OLD_LANGID)),
                *datatrove_chain(FilterConfig())]

    def auto() -> tuple[list, float]:
        t0 = time.perf_counter()
        steps = [Normalizer(NormalizeConfig()), lid, LanguageFilter(LangIdConfig()), make_filter(FilterConfig())]
        calibrate_steps(steps, inputs=[str(sub / "docs.parquet")], read_cfg=cio.ReadConfig())
        return steps, time.perf_counter() - t0

    res: dict[str, list[float]] = {"before": [], "auto": [], "datatrove": [], "calibration": []}
    kept: dict[str, int] = {}
    warm = docs[: max(1, len(docs) // 10)]  # untimed: model and tokenizer loading, first-touch caches
    for steps in (before(), auto()[0], datatrove()):
        run(steps, warm)
    for r in range(args.rounds):
        for name in ("before", "auto", "datatrove"):
            if name == "auto":
                steps, cal = auto()
                res["calibration"].append(cal)
            else:
                steps, cal = (before() if name == "before" else datatrove()), 0.0
            t, k = run(steps, docs)
            res[name].append(t + cal)
            kept[name] = k
            print(f"round {r} {name:10s} {mb / (t + cal):.3f} MB/s ({t + cal:.1f} s, calibration {cal:.1f} s, kept {k})",
                  flush=True)
    tot = {k: sum(v) for k, v in res.items()}
    out = {"mb": round(mb, 3), "docs": len(docs), "rounds": args.rounds, "loadavg": harness.loadavg(),
           "mb_per_s": {k: round(mb * args.rounds / tot[k], 4) for k in ("before", "auto", "datatrove")},
           "calibration_seconds": [round(x, 2) for x in res["calibration"]], "kept": kept,
           "auto_without_calibration_vs_before": round(tot["before"] / (tot["auto"] - tot["calibration"]), 3),
           "auto_vs_before": round(tot["before"] / tot["auto"], 3),
           "auto_vs_datatrove": round(tot["datatrove"] / tot["auto"], 3)}
    print(json.dumps(out))
    Path("bench/out").mkdir(parents=True, exist_ok=True)
    harness.write_record("curate_chain", out, "bench/out/bench_curate_chain.json")


if __name__ == "__main__":
    main()
