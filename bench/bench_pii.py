"""PII benchmark: PIIRedactor (prefilter + presidio on windows) vs presidio's AnalyzerEngine.

Run: ``python bench/bench_pii.py [--mb 0.4] [--rate 0.3] [--chunks 8] [--out bench/out/pii.json]``.

Data (real text, nothing from the project's own PII planter):

* ``prose``: the demo's literature, news, legal, reference and quotes documents (``data/demo/en``)
  and ``code``: its code and techdocs documents, about ``--mb`` MB each, plus the same domains of
  the shared corpora when present (``--shared-mb``);
* planted values from ``curate.evaluation.planters.IndependentPIISet``: Faker's phone_number()/msisdn()
  of 14 locales (the 10 most populous countries' locales and four large European ones), phone
  formats written from national numbering plans, every Faker card type and spec issuer prefixes
  of 12-19 digits (plain, space- or dash-grouped), e-mails, IBANs, SSNs, IPs; 75 % of phones and
  cards next to a word saying what they are, the rest bare;
* clean paragraphs: every blank-line paragraph (>= 40 chars) of the UNPLANTED demo documents of
  all seven domains (code, tables, ids, licence headers): any detection there is counted;
* secrets: ``SecretPlanter`` values (AWS, GitHub, Slack, PEM private keys, JWTs, passwords in
  URLs and assignments) planted as code lines into the demo code documents.

``--baseline REV`` (e.g. ``main``) adds the same-run speed comparison of this tree against REV's
code: each runs in its own worker process (``bench/pii_detect_worker.py``, REV exported with
``git archive``) on the same planted prose and code texts, chunk by chunk, alternating which goes
first; both time ``PIIRedactor(PIIConfig()).detect`` with default settings (secrets on) and with
secrets off. ``--speed-only`` skips the rest.

Engines run ALTERNATELY chunk by chunk on the same texts (timings on these machines drift):
anchor = presidio ``AnalyzerEngine`` with exactly our recognizers (``build_analyzer(part="all")``)
on every whole text; ours = ``PIIRedactor.detect`` with secrets off (like for like); the secrets
pass is timed on its own. Prints MB/s, the speed ratio per set, recall per type (phones and cards
also split by context / bare), the false-positive rate on clean paragraphs and secrets recall.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

import harness
from lib.pii_sets import SETS, load, split_scores
from lib.pii_workers import Worker, export_revision

from curate.evaluation.pii_metrics import score_pii
from curate.evaluation.planters import IndependentPIISet, SecretPlanter
from curate.steps.pii import PATTERN_TYPES, PIIConfig, PIIRedactor, resolve_overlaps

ROOT = Path(__file__).resolve().parents[1]

DIGIT_TYPES = ("PHONE_NUMBER", "CREDIT_CARD", "US_SSN", "IBAN_CODE")


def paragraphs(texts: list[str]) -> list[str]:
    return [p for t in texts for p in re.split(r"\n\s*\n", t) if len(p.strip()) >= 40]


def timed_alternating(texts: list[str], engines: dict, chunks: int) -> tuple[dict, dict]:
    secs = dict.fromkeys(engines, 0.0)
    out: dict[str, list] = {k: [None] * len(texts) for k in engines}
    bounds = [len(texts) * i // chunks for i in range(chunks + 1)]
    order = list(engines)
    for c in range(chunks):
        lo, hi = bounds[c], bounds[c + 1]
        for name in harness.rotate(c, order):
            t0 = time.perf_counter()
            out[name][lo:hi] = [engines[name](t) for t in texts[lo:hi]]
            secs[name] += time.perf_counter() - t0
    return secs, out


def run_set(name: str, texts: list[str], rate: float, chunks: int, ours: PIIRedactor, anchor) -> dict:
    planted, true = IndependentPIISet(seed=0).plant_corpus(texts, rate=rate)
    ents = list(ours._types)

    def run_anchor(t: str) -> list:
        return resolve_overlaps([(r.start, r.end, r.entity_type, r.score)
                                 for r in anchor.analyze(t, language="en", entities=ents) if r.score >= 0.3])

    engines = {"presidio_same_recognizers": run_anchor, "ours": ours.detect, "secrets": ours.secrets.detect}
    # warm up on other planted texts: libphonenumber compiles its per-region regexes on first use
    for t in IndependentPIISet(seed=1).plant_corpus(texts[:40], rate=1.0)[0]:
        for fn in engines.values():
            fn(t)
    secs, out = timed_alternating(planted, engines, chunks)
    nbytes = sum(len(t.encode()) for t in planted)
    rep: dict = {"docs": len(planted), "mb": round(nbytes / 1e6, 3), "planted": sum(map(len, true)),
                 "seconds": {k: round(v, 2) for k, v in secs.items()},
                 "mb_per_s": {k: round(nbytes / 1e6 / v, 3) for k, v in secs.items()},
                 "speedup_ours_vs_presidio": round(secs["presidio_same_recognizers"] / secs["ours"], 2),
                 "ours_plus_secrets_speedup": round(secs["presidio_same_recognizers"]
                                                    / (secs["ours"] + secs["secrets"]), 2)}
    for eng in ("ours", "presidio_same_recognizers"):
        pred = [[{"start": s, "end": e, "type": t} for s, e, t in p] for p in out[eng]]
        rep[f"scores_{eng}"] = {k: {m: round(v, 4) for m, v in d.items() if m in ("tp", "fn", "fp", "recall",
                                                                                  "precision")}
                                for k, d in score_pii(pred, true, types=PATTERN_TYPES).items()}
        rep[f"recall_with_context_{eng}"] = split_scores(pred, true, True)
        rep[f"recall_bare_{eng}"] = split_scores(pred, true, False)
    # misses of ours, for the report (values are synthetic)
    pred = out["ours"]
    rep["missed_examples"] = [
        (s["type"], planted[i][max(0, s["start"] - 30):s["end"] + 5])
        for i, spans in enumerate(true) for s in spans
        if not any(a < s["end"] and s["start"] < b for a, b, _ in pred[i])][:25]
    agree = sum(set(a) == set(b) for a, b in zip(out["ours"], out["presidio_same_recognizers"], strict=True))
    rep["docs_identical_spans_vs_anchor"] = f"{agree}/{len(planted)}"
    return rep


def clean_fp(texts: list[str], ours: PIIRedactor) -> dict:
    paras = paragraphs(texts)
    hit_types: dict[str, int] = {}
    examples = []
    n_hit = n_hit_digits = 0
    for p in paras:
        spans = ours.detect(p)
        types = {t for _, _, t in spans}
        for t in types:
            hit_types[t] = hit_types.get(t, 0) + 1
        n_hit += bool(types - {"EMAIL_ADDRESS"})
        n_hit_digits += bool(types & set(DIGIT_TYPES))
        examples += [(t, p[max(0, s - 25):e + 5]) for s, e, t in spans if t != "EMAIL_ADDRESS"][:2]
    return {"paragraphs": len(paras), "paragraphs_with_detection_by_type": hit_types,
            "fp_rate_any_type_but_email": round(n_hit / len(paras), 4),
            "fp_rate_digit_types": round(n_hit_digits / len(paras), 4), "examples": examples[:30]}


def secrets_eval(code_texts: list[str], ours: PIIRedactor) -> dict:
    planter = SecretPlanter(seed=0)
    planted, truth = planter.plant_corpus(code_texts)
    per: dict[str, list[int]] = {}
    for text, values in zip(planted, truth, strict=True):
        spans = ours.secrets.detect(text)
        from curate.steps.pii import redact
        red = redact(text, resolve_overlaps([(s, e, t, 1.0) for s, e, t in spans]))
        for kind, value in values:
            gone = all(part not in red for part in SecretPlanter.material(value))
            per.setdefault(kind, [0, 0])[0] += gone
            per[kind][1] += 1
    fp = {}
    for t in code_texts:
        for _, _, kind in ours.secrets.detect(t):
            fp[kind] = fp.get(kind, 0) + 1
    found = sum(v[0] for v in per.values())
    total = sum(v[1] for v in per.values())
    return {"recall": round(found / total, 4), "planted": total,
            "recall_by_kind": {k: round(v[0] / v[1], 4) for k, v in sorted(per.items())},
            "detections_on_unplanted_code_docs": fp, "code_docs": len(code_texts)}


def same_run(sets: dict[str, list[str]], baseline: str, chunks: int) -> dict:
    """Seconds of this tree's and ``baseline``'s ``detect`` on the same texts, alternating per chunk."""
    workers = {"this tree": Worker(ROOT, "this tree"), baseline: Worker(export_revision(baseline), baseline)}
    out: dict = {}
    try:
        for name, texts in sets.items():
            for w in workers.values():
                w.load(texts)
            nbytes = sum(len(t.encode()) for t in texts)
            bounds = [len(texts) * i // chunks for i in range(chunks + 1)]
            for secrets in (True, False):
                secs = dict.fromkeys(workers, 0.0)
                order = list(workers)
                for c in range(chunks):
                    for k in harness.order(c, order):
                        secs[k] += workers[k].ask(op="time", lo=bounds[c], hi=bounds[c + 1], secrets=secrets)["seconds"]
                key = f"{name}_{'with' if secrets else 'without'}_secrets"
                out[key] = {"mb": round(nbytes / 1e6, 3),
                            "mb_per_s_per_core": {k: round(nbytes / 1e6 / v, 3) for k, v in secs.items()},
                            "speed_ratio_this_tree_vs_baseline": round(secs[baseline] / secs["this tree"], 3)}
    finally:
        for w in workers.values():
            w.close()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=float, default=0.4, help="MB of demo text per set")
    ap.add_argument("--shared-mb", type=float, default=0.0, help="MB of shared-corpora text per set (if present)")
    ap.add_argument("--rate", type=float, default=0.3, help="share of documents given PII")
    ap.add_argument("--chunks", type=int, default=8)
    ap.add_argument("--out", default=str(ROOT / "bench" / "out" / "pii.json"))
    ap.add_argument("--baseline", default="", help="git revision to time in the same run (e.g. main)")
    ap.add_argument("--speed-only", action="store_true", help="only the same-run speed comparison")
    args = ap.parse_args()
    if args.baseline:
        sets = {name: IndependentPIISet(seed=0).plant_corpus(load(domains, args.mb, args.shared_mb), rate=args.rate)[0]
                for name, domains in SETS.items()}
        speed = same_run(sets, args.baseline, args.chunks)
        for k, v in speed.items():
            print(f"{k}: {v['mb']} MB; MB/s per core {v['mb_per_s_per_core']}; "
                  f"this tree / {args.baseline}: {v['speed_ratio_this_tree_vs_baseline']}x")
        if args.speed_only:
            harness.write_record("pii_same_run", {"same_run": speed, "loadavg_1min": harness.load1()}, args.out)
            return 0
    ours = PIIRedactor(PIIConfig(secrets=True))
    anchor = ours.engine("all")
    ours_pii = PIIRedactor(PIIConfig(secrets=False))
    ours_pii._analyzers = ours._analyzers  # same recognizer objects, built once
    ours_pii._secrets = ours.secrets
    for t in ["Warm up: call 020 7946 0958 or x@y.org, card 4111 1111 1111 1111."] * 3:
        ours.detect(t)
        anchor.analyze(t, language="en")
    load1 = harness.load1()
    results: dict = {}
    for name, domains in SETS.items():
        results[name] = run_set(name, load(domains, args.mb, args.shared_mb), args.rate, args.chunks,
                                ours_pii, anchor)
    all_demo = load(SETS["prose"] + SETS["code"], args.mb * 2, args.shared_mb)
    results["clean_paragraphs"] = clean_fp(all_demo, ours)
    results["secrets"] = secrets_eval(load(("code",), args.mb * 2, 0.0), ours)
    results["loadavg_1min"] = [round(load1, 2), round(harness.load1(), 2)]
    if args.baseline:
        results["same_run"] = speed
    harness.write_record("pii", results, args.out)
    for name in SETS:
        r = results[name]
        print(f"\n## {name}: {r['docs']} docs, {r['mb']} MB, {r['planted']} planted values")
        print(f"MB/s {r['mb_per_s']}; speedup ours vs presidio (same recognizers): "
              f"{r['speedup_ours_vs_presidio']}x (with secrets pass: {r['ours_plus_secrets_speedup']}x)")
        print("| type | ours recall | ours precision | presidio recall | presidio precision |")
        print("|---|---:|---:|---:|---:|")
        for t in [*PATTERN_TYPES, "ALL"]:
            o, a = r["scores_ours"].get(t), r["scores_presidio_same_recognizers"].get(t)
            if o and a:
                print(f"| {t} | {o['recall']:.4f} | {o['precision']:.4f} | {a['recall']:.4f} | {a['precision']:.4f} |")
        print(f"recall with context: {r['recall_with_context_ours']}; bare: {r['recall_bare_ours']}; "
              f"identical spans vs anchor: {r['docs_identical_spans_vs_anchor']}")
    c = results["clean_paragraphs"]
    print(f"\n## clean paragraphs: {c['paragraphs']}; FP rate (any type but e-mail) {c['fp_rate_any_type_but_email']}, "
          f"digit types {c['fp_rate_digit_types']}; by type {c['paragraphs_with_detection_by_type']}")
    s = results["secrets"]
    print(f"## secrets: recall {s['recall']} of {s['planted']} ({s['recall_by_kind']}); detections on "
          f"{s['code_docs']} unplanted code docs: {s['detections_on_unplanted_code_docs']}")
    print(f"load average (1 min) at start/end: {results['loadavg_1min']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
