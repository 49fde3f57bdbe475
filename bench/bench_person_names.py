"""The name-list PERSON detector (curate.steps.person_names) on text it was not built from.

Prints, for ``../shared/corpora``' English domains (first ``--docs`` documents each): documents with
a name, spans, and speed; then ``--sample`` spans drawn with a fixed seed, with 25 characters of
context, for judging precision by hand; then recall on Faker names of three locales planted in a
sentence (en_US is *not* independent of the lists: Faker's US names and the Census lists share an
origin; en_GB and de_DE are names the lists were never meant to cover).

Usage: ``../shared/tools/quiet-bench .venv/bin/python bench/bench_person_names.py``
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

import pyarrow.parquet as pq

from curate.steps.person_names import person_spans

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "corpora"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=400)
    ap.add_argument("--sample", type=int, default=60)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    spans: list[tuple[str, str]] = []
    for d in ("news", "literature", "legal", "techdocs", "reference", "code"):
        texts = pq.read_table(SHARED / f"{d}.parquet", columns=["text"]).column("text").to_pylist()[:a.docs]
        t0, n, docs, chars = time.process_time(), 0, 0, 0
        for x in texts:
            sp = person_spans(x)
            n, docs, chars = n + len(sp), docs + bool(sp), chars + len(x)
            spans += [(d, x[max(0, s - 25):s] + "[[" + x[s:e] + "]]" + x[e:e + 15]) for s, e in sp]
        dt = time.process_time() - t0
        print(f"{d:11s} docs {len(texts)} with a name {docs} spans {n} MB/s/core {chars / 1e6 / dt:.1f}")
    print(f"\n{a.sample} spans for judging by hand (seed {a.seed}):")
    for d, s in rng.sample(spans, min(a.sample, len(spans))):
        print(d, repr(s))
    from faker import Faker

    print("\nrecall on Faker names, 'Signed, NAME. Thanks.' (2,000 each):")
    for loc in ("en_US", "en_GB", "de_DE"):
        f = Faker(loc)
        f.seed_instance(123)
        hit = 0
        for _ in range(2000):
            v = f.name()
            hit += any(s <= 8 and e >= 8 + len(v) for s, e in person_spans(f"Signed, {v}. Thanks."))
        print(f"{loc} {hit / 2000:.4f}")


if __name__ == "__main__":
    main()
