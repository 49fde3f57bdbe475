"""PII benchmark: our PIIRedactor vs presidio's AnalyzerEngine (pattern recognizers) vs datatrove.

Run: ``python bench/bench_pii.py [--mb 2.0] [--rate 0.2] [--chunks 12] [--out bench/out/pii.json]``.

Data: real documents from ``../shared/corpora`` (all English domains, about ``--mb`` MB) with PII
planted by ``PIIPlanter`` (Faker, seed 0) into a ``--rate`` share of them; plus, when present, the
demo data ``data/raw`` with its ``ground_truth.parquet``. Engines run ALTERNATELY chunk by chunk
(timings on these machines drift), each on the same texts:

* anchor: presidio ``AnalyzerEngine`` with ``NoOpNlpEngine`` and its default (pattern) registry,
  restricted to our six types, on every whole text;
* ours: ``PIIRedactor`` (prefilter + presidio on candidate windows + redaction);
* ceiling: datatrove's ``PIIFormatter`` (regexes for e-mails and IPv4 only).

Prints throughput (MB/s), the ours/anchor speed ratio, recall/precision per type for ours and the
anchor, detections per MB on the documents without planted PII, and the span agreement with the
anchor. Writes everything as JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq

from corpusmix.paths import SHARED_CORPORA as _SHARED_CORPORA

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from curate.pii_metrics import PIIPlanter, score_pii  # noqa: E402
from curate.steps.pii import PATTERN_TYPES, PIIConfig, PIIRedactor, resolve_overlaps  # noqa: E402

SHARED = _SHARED_CORPORA
DOMAINS = ("literature", "reference", "techdocs", "code", "legal", "news", "quotes")


def load_planted(mb: float, rate: float) -> tuple[list[str], list[list[dict]]]:
    texts: list[str] = []
    per = mb * 1e6 / len(DOMAINS)
    for d in DOMAINS:
        got = 0
        for t in pq.read_table(SHARED / f"{d}.parquet", columns=["text"]).column("text").to_pylist():
            if got >= per:
                break
            texts.append(t)
            got += len(t.encode())
    return PIIPlanter(seed=0).plant_corpus(texts, rate=rate)


def load_demo() -> tuple[list[str], list[list[dict]]] | None:
    gt_path = ROOT / "data" / "raw" / "ground_truth.parquet"
    if not gt_path.exists():
        return None
    gt = {r["id"]: r["pii_spans"] or [] for r in pq.read_table(gt_path, columns=["id", "pii_spans"]).to_pylist()}
    texts, spans = [], []
    for f in sorted((ROOT / "data" / "raw" / "docs").glob("*.parquet")):
        for r in pq.read_table(f, columns=["id", "text"]).to_pylist():
            if isinstance(r["text"], str):
                texts.append(r["text"])
                # PERSON is not among the pattern types; it is scored only when a NER model is set
                spans.append([s for s in gt.get(r["id"], []) if s["type"] in PATTERN_TYPES])
    return texts, spans


def make_engines() -> dict:
    import logging

    from datatrove.data import Document
    from datatrove.pipeline.formatters import PIIFormatter
    from presidio_analyzer import AnalyzerEngine
    from presidio_analyzer.nlp_engine import NoOpNlpEngine

    # presidio's default e-mail recognizer asks tldextract for the suffix list over the network; here
    # it fails (no network), falls back to the bundled snapshot and logs a traceback: keep it quiet
    logging.getLogger("tldextract").setLevel(logging.CRITICAL)
    anchor = AnalyzerEngine(nlp_engine=NoOpNlpEngine(models=[{"lang_code": "en", "model_name": "noop"}]),
                            supported_languages=["en"])
    ents = list(PATTERN_TYPES)
    ours = PIIRedactor(PIIConfig())
    dt = PIIFormatter()

    def run_anchor(t: str) -> list[tuple[int, int, str]]:
        # default score threshold 0: presidio keeps even its 0.05 "very weak" SSN guesses; apply
        # the same 0.3 threshold and overlap resolution as ours so precision compares like for like
        return resolve_overlaps([(r.start, r.end, r.entity_type, r.score)
                                 for r in anchor.analyze(t, language="en", entities=ents) if r.score >= 0.3])

    def run_ours(t: str) -> list[tuple[int, int, str]]:
        doc = Document(text=t, id="b")
        ours.filter(doc)  # detection + redaction, as in the pipeline
        return [(s["start"], s["end"], s["type"]) for s in doc.metadata["pii_spans"]]

    def run_dt(t: str) -> str:
        return dt.format(t)

    return {"presidio_full": run_anchor, "ours": run_ours, "datatrove_regex": run_dt}


def bench(texts: list[str], true: list[list[dict]], engines: dict, chunks: int) -> dict:
    n = len(texts)
    nbytes = sum(len(t.encode()) for t in texts)
    secs = dict.fromkeys(engines, 0.0)
    out: dict[str, list] = {k: [None] * n for k in engines}
    bounds = [n * i // chunks for i in range(chunks + 1)]
    order = list(engines)
    for c in range(chunks):  # alternate engines chunk by chunk, rotating who goes first
        lo, hi = bounds[c], bounds[c + 1]
        for name in order[c % len(order):] + order[:c % len(order)]:
            fn = engines[name]
            t0 = time.perf_counter()
            res = [fn(t) for t in texts[lo:hi]]
            secs[name] += time.perf_counter() - t0
            out[name][lo:hi] = res
    report: dict = {"docs": n, "mb": round(nbytes / 1e6, 3), "planted": sum(len(s) for s in true),
                    "seconds": {k: round(v, 2) for k, v in secs.items()},
                    "mb_per_s": {k: round(nbytes / 1e6 / v, 3) for k, v in secs.items()}}
    report["speedup_ours_vs_presidio"] = round(secs["presidio_full"] / secs["ours"], 2)
    report["datatrove_vs_ours"] = round(secs["ours"] / secs["datatrove_regex"], 2)
    clean_idx = [i for i in range(n) if not true[i]]
    clean_mb = sum(len(texts[i].encode()) for i in clean_idx) / 1e6
    for name in ("ours", "presidio_full"):
        pred = [[{"start": s, "end": e, "type": t} for s, e, t in p] for p in out[name]]
        report[f"scores_{name}"] = {k: {m: round(v, 4) for m, v in d.items()}
                                    for k, d in score_pii(pred, true, total_bytes=nbytes).items()}
        report[f"detections_per_mb_clean_{name}"] = round(sum(len(out[name][i]) for i in clean_idx) / clean_mb, 2) \
            if clean_mb else None
    # datatrove: a planted e-mail/IP is "found" when its value no longer appears in the output
    found = total = 0
    for i, spans in enumerate(true):
        for s in spans:
            if s["type"] in ("EMAIL_ADDRESS", "IP_ADDRESS") and ":" not in s["value"]:
                total += 1
                found += s["value"] not in out["datatrove_regex"][i]
    report["datatrove_recall_email_ipv4"] = round(found / total, 4) if total else None
    # agreement with the anchor
    only_anchor = only_ours = short_phones = 0
    for i in range(n):
        a, o = set(out["presidio_full"][i]), set(out["ours"][i])
        for s, e, t in a - o:
            only_anchor += 1
            short_phones += t == "PHONE_NUMBER" and sum(c.isdigit() for c in texts[i][s:e]) < 7
        only_ours += len(o - a)
    report["agreement"] = {"spans_only_presidio": only_anchor, "of_which_phones_under_7_digits": short_phones,
                           "spans_only_ours": only_ours}
    return report


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=float, default=2.0, help="MB of real text for the planted set")
    ap.add_argument("--rate", type=float, default=0.2, help="share of documents given PII")
    ap.add_argument("--chunks", type=int, default=12)
    ap.add_argument("--no-demo", action="store_true", help="skip the demo data set")
    ap.add_argument("--out", default=str(ROOT / "bench" / "out" / "pii.json"))
    args = ap.parse_args()
    if not SHARED.is_dir():
        print(f"shared corpora not found at {SHARED}", file=sys.stderr)
        return 2
    engines = make_engines()
    warm, _ = PIIPlanter(seed=99).plant_corpus(["Warm up: call 020 7946 0958 or x@y.org."] * 4, rate=1.0)
    for fn in engines.values():
        for t in warm:
            fn(t)
    results = {"planted": bench(*load_planted(args.mb, args.rate), engines, args.chunks)}
    demo = None if args.no_demo else load_demo()
    if demo:
        results["demo"] = bench(*demo, engines, args.chunks)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=1))
    for name, r in results.items():
        print(f"\n## {name}: {r['docs']} docs, {r['mb']} MB, {r['planted']} planted values")
        print(f"MB/s: {r['mb_per_s']}  seconds: {r['seconds']}")
        print(f"speedup ours vs presidio: {r['speedup_ours_vs_presidio']}x; datatrove regex vs ours: "
              f"{r['datatrove_vs_ours']}x; datatrove recall (e-mail + IPv4): {r['datatrove_recall_email_ipv4']}")
        print("| type | ours recall | ours precision | presidio recall | presidio precision | ours FP/MB |")
        print("|---|---:|---:|---:|---:|---:|")
        for t in [*PATTERN_TYPES, "ALL"]:
            o, a = r["scores_ours"].get(t), r["scores_presidio_full"].get(t)
            if o and a:
                print(f"| {t} | {o['recall']:.4f} | {o['precision']:.4f} | {a['recall']:.4f} | {a['precision']:.4f} "
                      f"| {o.get('fp_per_mb', 0):.1f} |")
        print(f"detections/MB on documents without planted PII: ours {r['detections_per_mb_clean_ours']}, "
              f"presidio {r['detections_per_mb_clean_presidio_full']}; agreement: {r['agreement']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
