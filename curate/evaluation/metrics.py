"""Scores of a curation run against the demo ground truth (DVC metrics).

``curation_metrics(run_dir, ground_truth)`` reads ``OUT/curated/*.parquet`` and ``OUT/drops.parquet``
of ``corpusmix curate run`` and ``ground_truth.parquet`` (schema in docs/formats.md) and returns:

* ``lid``: accuracy of ``lang`` against the true language over documents that reached language ID
  (kept documents plus those the language filter dropped, whose code is in the drop reason);
* ``junk``: precision/recall of the heuristic filters' drops against planted ``junk:*`` documents
  (``junk_any_content_step``: the same for drops by language ID, filters or quality thresholds);
  documents of the planted ``noise`` domain are garbage too, so their drops do not count against
  precision (they are reported under ``noise``, and ``garbage`` scores junk and noise together);
* ``foreign``: recall of planted ``foreign:*`` documents among language-ID drops;
* ``kept_real``: share of real (no planted defect) documents kept, per domain and overall;
* ``toxicity`` / ``decontam``: precision/recall of planted ``toxic:*`` / ``contaminated:*``
  documents, share of each real domain flagged (``loud`` lists domains over 5 %), contamination per
  benchmark and domain (``curate.evaluation.safety_metrics``);
* ``pii``: per-type precision/recall of ``pii_spans`` (``curate.evaluation.pii_metrics.score_pii``) on kept
  documents, when the run has that column.

Run: ``corpusmix curate metrics --run OUT --ground-truth data/raw/ground_truth.parquet --output M.json``.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

JUNK_STEPS = ("filters",)
CONTENT_STEPS = ("langid_filter", "filters", "quality_ft_min", "ppl_max")
LID_STEPS = ("langid_filter",)


def _ratio(a: int, b: int) -> float | None:
    return round(a / b, 6) if b else None


def curation_metrics(run_dir: str | Path, ground_truth: str | Path, *,
                     pii_types: list[str] | None = None) -> dict[str, Any]:
    run = Path(run_dir)
    gt = {r["id"]: r for r in pq.read_table(ground_truth).to_pylist()}
    kept: dict[str, dict[str, Any]] = {}
    has_pii = False
    for f in sorted((run / "curated").glob("*.parquet")):
        names = pq.read_schema(f).names
        cols = [c for c in ("id", "lang", "pii_spans", "contam_benchmarks") if c in names]
        has_pii = has_pii or "pii_spans" in names
        for r in pq.read_table(f, columns=cols).to_pylist():
            kept[r["id"]] = r
    drops = {r["id"]: r for r in pq.read_table(run / "drops.parquet").to_pylist()} if (run / "drops.parquet").exists() else {}

    # language ID
    lid_ok = lid_n = 0
    for i, g in gt.items():
        pred = None
        if i in kept and kept[i].get("lang"):
            pred = kept[i]["lang"]
        elif i in drops and drops[i]["step"] in LID_STEPS and drops[i]["reason"].startswith("lang:"):
            pred = drops[i]["reason"].split(":", 1)[1]
        if pred is not None and g.get("lang"):
            lid_n += 1
            lid_ok += pred == g["lang"]

    def defects(i: str) -> list[str]:
        return list(gt[i].get("defects") or [])

    junk = {i for i in gt if any(d.startswith("junk:") for d in defects(i))}
    noise = {i for i in gt if "noise" in defects(i)}
    foreign = {i for i in gt if any(d.startswith("foreign:") for d in defects(i))}
    filt = {i for i, d in drops.items() if d["step"] in JUNK_STEPS}
    lid_drops = {i for i, d in drops.items() if d["step"] in LID_STEPS}
    content = {i for i, d in drops.items() if d["step"] in CONTENT_STEPS}
    real_by_dom: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for i, g in gt.items():
        if not defects(i):
            real_by_dom[g.get("domain") or "unknown"][1] += 1
            real_by_dom[g.get("domain") or "unknown"][0] += i in kept
    out: dict[str, Any] = {
        "lid": {"accuracy": _ratio(lid_ok, lid_n), "docs": lid_n},
        "junk": {"precision": _ratio(len(filt & junk), len(filt - noise)),
                 "recall": _ratio(len(filt & junk), len(junk)),
                 "planted": len(junk), "dropped_by_filters": len(filt)},
        "junk_any_content_step": {"precision": _ratio(len(content & junk), len(content - noise)),
                                  "recall": _ratio(len(content & junk), len(junk))},
        "garbage": {"precision": _ratio(len(filt & (junk | noise)), len(filt)),
                    "recall": _ratio(len(filt & (junk | noise)), len(junk | noise))},
        "noise": {"docs": len(noise), "dropped_by_filters": len(filt & noise),
                  "dropped_any_step": sum(1 for i in noise if i in drops),
                  "kept": sum(1 for i in noise if i in kept)},
        "foreign": {"recall": _ratio(len(lid_drops & foreign), len(foreign)), "planted": len(foreign)},
        "kept_real": {"overall": _ratio(sum(v[0] for v in real_by_dom.values()), sum(v[1] for v in real_by_dom.values())),
                      "per_domain": {d: _ratio(k, n) for d, (k, n) in sorted(real_by_dom.items())}},
    }
    from curate.evaluation.safety_metrics import safety_metrics

    out.update(safety_metrics(run, gt, kept, drops))
    if has_pii:
        from curate.evaluation.pii_metrics import score_pii

        ids = [i for i in kept if i in gt]
        pred = [list(kept[i].get("pii_spans") or []) for i in ids]
        true = [list(gt[i].get("pii_spans") or []) for i in ids]
        # PERSON is planted too, but is only detectable with an optional spaCy NER model; score the
        # pattern types the redactor is configured for (params `pii.entities`)
        if pii_types is None:
            from curate.steps.pii import PIIConfig

            pii_types = list(PIIConfig().entities)
        out["pii"] = score_pii(pred, true, types=list(pii_types))
    return out


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("metrics", help="score a curate run against the demo ground truth (DVC metrics)",
                       description=__doc__.split("\n\n")[0])
    p.add_argument("--run", required=True, help="output folder of `corpusmix curate run`")
    p.add_argument("--ground-truth", required=True, help="ground_truth.parquet")
    p.add_argument("--output", required=True, help="metrics JSON file")
    p.add_argument("--params", default="params.yaml", help="params file (section `pii`: entities scored)")

    def _cmd(args: argparse.Namespace) -> int:
        from corpusmix.config import load_params

        entities = load_params(args.params, "pii").get("entities")
        m = curation_metrics(args.run, args.ground_truth, pii_types=list(entities) if entities else None)
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        from corpusmix.environment import environment

        Path(args.output).write_text(json.dumps({**m, "environment": environment()}, indent=2, default=str))
        print(json.dumps({k: v for k, v in m.items() if k != "pii"}, default=str))
        return 0

    p.set_defaults(func=_cmd)
