"""Garbage the rules never saw, mixed inside real domains and as domains of its own; real text kept.

Sources and their two halves (``dev``: what the detectors were developed on; ``heldout``: what
they are judged on) are described in ``bench/lib/garbage_sources.py``; the later rounds
(``heldout2``-``heldout9``) in ``bench/lib/garbage_sources.py`` and ``garbage_sources3-9.py``
(``heldout6``-``heldout9`` hold OCR noise alone; ``heldout12``-``heldout14``: manuals with their menus and
their page chrome, ``garbage_sources12.py``). One set per half::

    real domains (150 documents each), each with garbage of every kind mixed in at a rate of
    5-30 % of the domain (rates cycle 5, 10, 15, 20, 25, 30, 30 %), kinds assigned round-robin;
    `scraped`: a domain made only of garbage (every kind);
    `mostly_junk`: 70 % garbage, 30 % real documents of the half's first real domain;
    `one_doc`: a domain of one real document.

The chain is ``corpusmix curate run`` with the repository's ``params.yaml`` (default parameters, no
per-domain override) and the steps of ``--steps`` (default ``normalize,langid,filters``). Scores:

* garbage mixed inside real domains: share handled per kind and overall (dropped by any step; a
  mojibake document also counts as handled when it is kept with its original text restored);
* real documents kept per domain, mean and minimum;
* the domain verdicts of ``calibration.json`` (``junk_share``, ``verdict``) for every domain;
* garbage of the ``scraped`` domain dropped.

Run (each half a few minutes on 2 cores)::

    .venv/bin/python bench/bench_garbage_heldout.py --split heldout --work /tmp/garbage

Results go to WORK/<split>/result-<out-name>.json and are printed. ``--tree /work/main --out-name
main`` runs another checkout's chain (its code and params.yaml) on the same set, for a comparison.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import unicodedata
from collections import defaultdict
from pathlib import Path

import harness

ROOT = Path(__file__).resolve().parents[1]

RATES = (0.05, 0.10, 0.15, 0.20, 0.25, 0.30, 0.30)


def build(work: Path, split: str, *, per_domain: int, seed: int, own_per_kind: int) -> dict:
    if split == "heldout3":
        from lib.garbage_sources3 import KINDS, garbage_doc, real_domains
    elif split == "heldout4":
        from lib.garbage_sources4 import KINDS, garbage_doc, real_domains
    elif split == "heldout5":
        from lib.garbage_sources5 import KINDS, garbage_doc, real_domains
    elif split == "heldout6":  # OCR noise only (a real OCR engine's output), see its module
        from lib.garbage_sources6 import KINDS, garbage_doc, real_domains
    elif split == "heldout7":  # OCR noise only, other fonts and real domains, see its module
        from lib.garbage_sources7 import KINDS, garbage_doc, real_domains
    elif split == "heldout8":  # OCR noise only, other fonts and real domains, see its module
        from lib.garbage_sources8 import KINDS, garbage_doc, real_domains
    elif split == "heldout9":  # OCR noise only, other fonts and real domains, see its module
        from lib.garbage_sources9 import KINDS, garbage_doc, real_domains
    elif split == "heldout10":
        from lib.garbage_sources10 import KINDS, garbage_doc, real_domains
    elif split == "heldout11":
        from lib.garbage_sources11 import KINDS, garbage_doc, real_domains
    elif split in ("heldout12", "heldout13", "heldout14"):  # manuals with their menus: see its module
        from lib.garbage_sources12 import KINDS, garbage_doc, real_domains
    else:
        from lib.garbage_sources import KINDS, garbage_doc, real_domains

    rng = random.Random(seed)
    real = real_domains(split)
    rows: list[dict] = []
    truth: dict[str, dict] = {}

    def add(i: str, text: str, dom: str, label: str, original: str | None = None) -> None:
        rows.append({"id": i, "text": text, "domain": dom})
        truth[i] = {"label": label, "domain": dom, **({"original": original} if original else {})}

    k = 0
    for j, dom in enumerate(sorted(real)):
        docs = list(real[dom])
        rng.shuffle(docs)
        for n, (text, _src) in enumerate(docs[:per_domain]):
            add(f"{dom}/{n:05d}", text, dom, f"real:{dom}")
        rate = RATES[j % len(RATES)]
        for n in range(round(len(docs[:per_domain]) * rate / (1 - rate))):
            kind = KINDS[k % len(KINDS)]
            k += 1
            text, orig = garbage_doc(kind, split, rng)
            add(f"{dom}/garbage/{kind}/{n:04d}", text, dom, f"garbage:{kind}", orig)
    for kind in KINDS:
        for n in range(own_per_kind):
            text, orig = garbage_doc(kind, split, rng)
            add(f"scraped/{kind}/{n:04d}", text, "scraped", f"own:{kind}", orig)
    # the first domain with documents to spare (heldout7's first, of 120 documents, had none: no mostly_junk)
    first = next((d for d in sorted(real) if len(real[d]) >= per_domain + 3 * own_per_kind), sorted(real)[0])
    extra = real[first][per_domain:per_domain + 3 * own_per_kind]
    for n, (text, _src) in enumerate(extra):
        add(f"mostly_junk/real/{n:05d}", text, "mostly_junk", "mostly_junk:real")
    for n in range(round(len(extra) * 7 / 3)):
        kind = KINDS[n % len(KINDS)]
        text, orig = garbage_doc(kind, split, rng)
        add(f"mostly_junk/{kind}/{n:04d}", text, "mostly_junk", f"mostly_junk:{kind}", orig)
    add("one_doc/00000", real[first][-1][0], "one_doc", "one_doc:real")
    rng.shuffle(rows)
    return write_set(work, rows, truth)


def write_set(work: Path, rows: list[dict], truth: dict) -> dict:
    """A built set: ``WORK/docs/part-0.parquet`` (the rows, replacing what was there) and ``WORK/truth.json``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    d = work / "docs"
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows), d / "part-0.parquet", row_group_size=500)
    (work / "truth.json").write_text(json.dumps(truth))
    return truth


def run_chain(work: Path, steps: list[str], params: Path, name: str = "out") -> Path:
    from curate.engine_local import EngineConfig, run_local

    out = work / name
    if out.exists():
        shutil.rmtree(out)
    run_local(inputs=work / "docs", output=out, params_path=str(params),
              cfg=EngineConfig(steps=steps, tasks=2, workers=2, keep_work=False))
    return out


def _nfc(t: str) -> str:
    return unicodedata.normalize("NFC", t).replace("\r\n", "\n")


def score(truth: dict, out: Path) -> dict:
    import pyarrow.parquet as pq

    kept: dict[str, str] = {}
    for f in (out / "curated").glob("*.parquet"):
        t = pq.read_table(f, columns=["id", "text"])
        kept.update(zip(t.column("id").to_pylist(), t.column("text").to_pylist(), strict=True))
    drops = {r["id"]: f"{r['step']}:{r['reason']}" for r in pq.read_table(out / "drops.parquet").to_pylist()}
    groups: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    missed: dict[str, list[str]] = defaultdict(list)
    reasons: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for i, t in truth.items():
        label = t["label"]
        handled = i not in kept
        if not handled and t.get("original") is not None:
            handled = kept[i].strip() == _nfc(t["original"]).strip()  # repaired to the original text
        if label.startswith("real:") or label.endswith(":real"):
            handled = i in kept
        g = groups[label]
        g[0] += handled
        g[1] += 1
        if i in drops:
            reasons[label][drops[i]] += 1
        if not handled and len(missed[label]) < 5:
            missed[label].append(i)
    real = {k[5:]: round(v[0] / v[1], 4) for k, v in sorted(groups.items()) if k.startswith("real:")}
    mixed = {k[8:]: round(v[0] / v[1], 4) for k, v in sorted(groups.items()) if k.startswith("garbage:")}
    own = {k[4:]: round(v[0] / v[1], 4) for k, v in sorted(groups.items()) if k.startswith("own:")}
    g_all = [v for k, v in groups.items() if k.startswith("garbage:")]
    g8 = [v for k, v in groups.items() if k.startswith("garbage:") and k != "garbage:shuffled_sentences"]
    cal = json.loads((out / "calibration.json").read_text())
    verdicts = {d: {k: v.get(k) for k in ("junk_share", "verdict", "docs")}
                for d, v in cal["steps"].get("filters", {}).get("domains", {}).items()}  # no verdict: older trees
    return {
        "garbage_mixed_handled": mixed,
        "garbage_mixed_all": round(sum(v[0] for v in g_all) / max(1, sum(v[1] for v in g_all)), 4),
        # the eight kinds of the curation's acceptance table (shuffled sentences have no detector)
        "garbage_mixed_eight_kinds": round(sum(v[0] for v in g8) / max(1, sum(v[1] for v in g8)), 4),
        "real_kept": real, "real_kept_mean": round(sum(real.values()) / max(1, len(real)), 4),
        "real_kept_min": min(real.values()) if real else None,
        "own_domain_handled": own,
        "mostly_junk_real_kept": round(groups["mostly_junk:real"][0] / max(1, groups["mostly_junk:real"][1]), 4),
        "one_doc_kept": groups["one_doc:real"][0],
        "verdicts": verdicts,
        "counts": {k: v[1] for k, v in sorted(groups.items())},
        "drop_reasons": {k: dict(sorted(v.items(), key=lambda x: -x[1])[:6]) for k, v in sorted(reasons.items())},
        "missed_examples": dict(missed),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--split", choices=("dev", "heldout", "heldout2", "heldout3", "heldout4", "heldout5", "heldout6", "heldout7",
                                            "heldout8", "heldout9", "heldout10", "heldout11", "heldout12", "heldout13", "heldout14"),
                    required=True)
    ap.add_argument("--work", default="/tmp/garbage_bench")
    ap.add_argument("--per-domain", type=int, default=150)
    ap.add_argument("--own-per-kind", type=int, default=12)
    ap.add_argument("--seed", type=int, default=44)
    ap.add_argument("--steps", default="normalize,langid,filters")
    ap.add_argument("--params", default=str(ROOT / "params.yaml"))
    ap.add_argument("--rebuild", action="store_true")
    ap.add_argument("--score-only", action="store_true", help="score the last run again")
    ap.add_argument("--tree", default="", help="run the chain of another checkout (e.g. main) on the same set: "
                    "its curate package and its params.yaml; the set is read from --work")
    ap.add_argument("--out-name", default="out", help="output folder name under WORK/SPLIT")
    args = ap.parse_args()
    if os.environ.get("PYTHONHASHSEED") != "0":  # generators that iterate sets (ipsum's models) build the same set
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, "PYTHONHASHSEED": "0"})
    if args.tree:
        tree = str(Path(args.tree).resolve())
        if os.environ.get("PYTHONPATH", "").split(os.pathsep)[0] != tree:  # this run again, the tree's code first
            path = os.pathsep.join(p for p in (tree, os.environ.get("PYTHONPATH", "")) if p)
            os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, "PYTHONPATH": path})
        if args.params == str(ROOT / "params.yaml"):
            args.params = str(Path(args.tree) / "params.yaml")
    work = Path(args.work) / args.split
    work.mkdir(parents=True, exist_ok=True)
    tfile = work / "truth.json"
    if args.score_only:
        res = score(json.loads(tfile.read_text()), work / args.out_name)
        print(json.dumps(res, indent=1))
        return 0
    if tfile.exists() and not args.rebuild:
        truth = json.loads(tfile.read_text())
    else:
        truth = build(work, args.split, per_domain=args.per_domain, seed=args.seed,
                      own_per_kind=args.own_per_kind)
    out = run_chain(work, args.steps.split(","), Path(args.params), args.out_name)
    res = score(truth, out)
    harness.write_record("garbage_heldout", res, work / f"result-{args.out_name}.json")
    print(json.dumps({k: res[k] for k in ("garbage_mixed_handled", "garbage_mixed_all", "garbage_mixed_eight_kinds",
                                          "real_kept",
                                          "real_kept_mean", "real_kept_min", "own_domain_handled",
                                          "mostly_junk_real_kept", "one_doc_kept")}, indent=1))
    print("verdicts:", json.dumps({d: (v["junk_share"], v["verdict"]) for d, v in res["verdicts"].items()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
