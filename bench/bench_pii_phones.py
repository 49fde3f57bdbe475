"""Phones and cards in prose, this tree against a git revision in the same run, split by context.

Run: ``python bench/bench_pii_phones.py [--baseline main] [--mb 0.6] [--seed 5]``. Plants one to
three values of ``curate.evaluation.planters.IndependentPIISet`` (Faker's phone_number()/msisdn() of 14
locales, numbering-plan formats, every card type; 75 % next to a word saying what they are) into
every demo prose document and scores both revisions' ``detect`` (secrets off) on the same texts:
recall per type, and for phones and cards with and without a context word.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lib.pii_sets import SETS, load, split_scores
from lib.pii_workers import Worker, export_revision

from curate.evaluation.pii_metrics import score_pii
from curate.evaluation.planters import IndependentPIISet

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--baseline", default="main")
    ap.add_argument("--mb", type=float, default=0.6)
    ap.add_argument("--seed", type=int, default=5)
    args = ap.parse_args()
    planted, true = IndependentPIISet(seed=args.seed).plant_corpus(load(SETS["prose"], args.mb, 0), rate=1.0)
    for name, path in (("this tree", ROOT), (args.baseline, export_revision(args.baseline))):
        w = Worker(path, name)
        try:
            w.load(planted)
            pred = [[{"start": s, "end": e, "type": t} for s, e, t in doc] for doc in w.spans(secrets=False)]
        finally:
            w.close()
        sc = score_pii(pred, true)
        print(f"{name}: recall " + ", ".join(f"{k} {v['recall']:.4f} (n={int(v['tp'] + v['fn'])})"
                                            for k, v in sc.items()),
              f"| with context {split_scores(pred, true, True)} | bare {split_scores(pred, true, False)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
