"""Benchmark: fused heuristic filters vs datatrove's four filters chained, same docs, same thresholds.

Run: ``python bench/bench_filters.py [--mb N] [--rounds R]``. Real English documents from
/work/shared/corpora (round robin over domains) are filtered alternately by the anchor
(GopherRepetition -> GopherQuality -> C4QualityFilter(filter_no_terminal_punct=False) ->
FineWebQuality, each a datatrove pipeline step) and by ``HeuristicFilter`` (a fresh instance each
round, so its word cache starts cold), after one warm-up pass of both on other documents.
Decisions and rewritten texts are checked identical. Prints MB/s of both and the ratio; writes
``bench/out/bench_filters.json``.
"""

from __future__ import annotations

import argparse
import copy
import json
import platform
import time
from pathlib import Path

import pyarrow.parquet as pq
from datatrove.data import Document

from corpusmix.paths import SHARED_CORPORA as _SHARED_CORPORA
from curate.steps.filters import FilterConfig, HeuristicFilter, datatrove_chain

CORPORA = _SHARED_CORPORA
DOMAINS = ("literature", "reference", "techdocs", "code", "legal", "news", "quotes")


def load_docs(mb: float, skip: int = 0) -> list[Document]:
    per = {d: pq.read_table(CORPORA / f"{d}.parquet", columns=["id", "text"]).to_pylist()[skip:] for d in DOMAINS}
    out, size, i = [], 0, 0
    while size < mb * 1e6:
        for d in DOMAINS:
            rows = per[d]
            if i < len(rows) and len(rows[i]["text"]) <= 50_000:
                out.append(Document(text=rows[i]["text"], id=rows[i]["id"], metadata={"domain": d}))
                size += len(rows[i]["text"].encode())
        i += 1
    return out


def run_chain(steps: list, docs: list[Document]) -> tuple[float, dict[str, str]]:
    docs = copy.deepcopy(docs)
    t0 = time.perf_counter()
    stream = iter(docs)
    for s in steps:
        stream = s.run(stream, 0, 1)
    kept = {d.id: d.text for d in stream}
    return time.perf_counter() - t0, kept


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=1.0, help="MB of text per round")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    cfg = FilterConfig()
    docs = load_docs(args.mb, skip=200)
    nbytes = sum(len(d.text.encode()) for d in docs)
    warm = load_docs(0.1)
    run_chain(datatrove_chain(cfg), warm)
    run_chain([HeuristicFilter(cfg)], warm)
    t_anchor, t_ours = [], []
    for r in range(args.rounds):
        ta, kept_a = run_chain(datatrove_chain(cfg), docs)
        to, kept_o = run_chain([HeuristicFilter(cfg)], docs)
        assert kept_a == kept_o, "decisions differ from datatrove's"
        t_anchor.append(ta)
        t_ours.append(to)
        print(f"round {r}: datatrove {nbytes / 1e6 / ta:.3f} MB/s  fused {nbytes / 1e6 / to:.3f} MB/s  "
              f"ratio {ta / to:.2f}x")
    ta, to = sum(t_anchor), sum(t_ours)
    res = {"bench": "filters", "machine": platform.node(), "python": platform.python_version(),
           "docs": len(docs), "mb": round(nbytes / 1e6, 3), "rounds": args.rounds, "kept": len(kept_o),
           "datatrove_mb_s": round(args.rounds * nbytes / 1e6 / ta, 4), "fused_mb_s": round(args.rounds * nbytes / 1e6 / to, 4),
           "ratio": round(ta / to, 3), "identical": True}
    print(json.dumps(res))
    out = Path(__file__).resolve().parent / "out"
    out.mkdir(exist_ok=True)
    (out / "bench_filters.json").write_text(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
