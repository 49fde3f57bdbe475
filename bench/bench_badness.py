"""Benchmark: ftfy's mojibake measure as the curation chain calls it, ftfy's full scan against
``curate.badness``'s windowed scan, on the same texts in one run.

    python bench/gen_corpus.py --out /tmp/gen100 --mb 100
    ../shared/tools/quiet-bench python bench/bench_badness.py --input /tmp/gen100/docs [--rounds 3]

The texts are what the chain scans: the first 32,768 characters (``MOJIBAKE_PREFIX``) of every
document, and of every document decoded the wrong way (its UTF-8 bytes read as cp1252, Latin-1,
mac_roman and cp1251, undecodable bytes replaced), which is mojibake everywhere. Only texts that the
chain would hand to ftfy are timed (non-ASCII, with a character of ``MOJIBAKE_CHARS``). For
``is_bad`` (the normaliser's test) and ``badness`` (the garbage statistic) it checks that both
give the same answer on every text, then times each side (alternating, ``--rounds``) and prints
CPU seconds per MB of scanned text and the ratio full / windowed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path

import harness
import pyarrow.parquet as pq
from ftfy import badness as ftfy_badness

from curate import badness as windowed
from curate.junkstats import MOJIBAKE_CHARS, MOJIBAKE_PREFIX

CODECS = ("cp1252", "latin-1", "mac_roman", "cp1251")


def load_texts(src: Path, max_docs: int) -> tuple[list[str], list[str]]:
    """(clean prefixes, broken prefixes) that the chain would scan."""
    files = sorted(src.glob("*.parquet")) if src.is_dir() else [src]
    docs: list[str] = []
    for f in files:
        docs += pq.read_table(f, columns=["text"]).column("text").to_pylist()
        if len(docs) >= max_docs:
            break
    docs = docs[:max_docs]
    clean = [t[:MOJIBAKE_PREFIX] for t in docs]
    broken = [t.encode("utf-8").decode(CODECS[i % len(CODECS)], errors="replace")[:MOJIBAKE_PREFIX]
              for i, t in enumerate(docs[: max_docs // 4])]

    def scanned(texts: list[str]) -> list[str]:
        return [t for t in texts if not t.isascii() and MOJIBAKE_CHARS.search(t) is not None]

    return scanned(clean), scanned(broken)


def list_map(fn: Callable[[str], object], texts: list[str]) -> list[object]:
    return [fn(t) for t in texts]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--input", required=True, type=Path, help="Parquet file or folder with a `text` column")
    ap.add_argument("--max-docs", type=int, default=20_000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    clean, broken = load_texts(args.input, args.max_docs)
    if windowed.anchor_plan(ftfy_badness.BADNESS_RE) is None:
        print("this ftfy's pattern cannot be windowed: curate.badness falls back to the full scan", file=sys.stderr)
        return 1
    result: dict = {}
    for set_name, texts in (("clean", clean), ("broken", broken)):
        mb = sum(len(t.encode("utf-8", "surrogatepass")) for t in texts) / 1e6
        for fn in ("is_bad", "badness"):
            full, ours = getattr(ftfy_badness, fn), getattr(windowed, fn)
            differ = sum(full(t) != ours(t) for t in texts)
            if differ:
                print(f"{set_name} {fn}: {differ} texts differ", file=sys.stderr)
                return 1
            rows = harness.alternate(args.rounds, {"ftfy": partial(list_map, full, texts),
                                                   "windowed": partial(list_map, ours, texts)})
            cpu = {v: sum(r["cpu_s_self"] for r in rows if r["variant"] == v) / args.rounds for v in ("ftfy", "windowed")}
            key = f"{set_name}_{fn}"
            result[key] = {"texts": len(texts), "mb": round(mb, 2), "ftfy_s_per_mb": round(cpu["ftfy"] / mb, 4),
                           "windowed_s_per_mb": round(cpu["windowed"] / mb, 4),
                           "ratio": round(cpu["ftfy"] / max(cpu["windowed"], 1e-9), 2), "identical": True}
            print(f"{key:16s} {len(texts):6d} texts {mb:7.2f} MB  ftfy {result[key]['ftfy_s_per_mb']:.4f} s/MB  "
                  f"windowed {result[key]['windowed_s_per_mb']:.4f} s/MB  x{result[key]['ratio']}  identical",
                  flush=True)
    harness.emit("badness", result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
