"""Shard loader throughput: the loader of a baseline commit against this one, in the same run.

The baseline is ``proxytrain/shards.py`` as of ``--baseline`` (default ``3bf8344``, the loader
before the global mixed order), loaded from git into this process, so both read the same shards
with the same Python, torch and page cache. Arms, each read ``--rows`` rows per round in batches
of ``--batch-size``, continuing its own stream from round to round:

- ``base/source`` and ``new/source-manifest`` / ``new/source-mixed``: ``ShardBatchSource.next_batch``
  in-process (the trainer's path; ``--data-order manifest`` and ``mixed``);
- ``base/loader-wW`` and ``new/loader-mixed-wW``: ``ShardLoader`` with ``--workers`` W dataloader
  workers (a fresh DataLoader per round, so worker start-up is included, as in bench_reader.py).

Rounds alternate the arms (machine load drifts); the summary gives each arm's median tokens/s and
the per-round ratio new/base (median and worst). Construction time (the new loader reads every
shard's ``domain`` and ``doc_lens`` columns to build the per-row index) is reported separately.
Shards: the shared corpora packed with the natural mixture (``lib.pools.prepare_pools``), or
``--synthetic`` random pools (no shared data needed). Run as::

    python bench/bench_loader.py [--tokens 8000000] [--seq-len 512] [--rounds 5] [--json out.json]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import harness
import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def baseline_module(ref: str) -> Any:
    """``proxytrain/shards.py`` at git ``ref``, imported as a separate module."""
    src = subprocess.run(["git", "-C", str(ROOT), "show", f"{ref}:proxytrain/shards.py"], check=True,
                         capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp()) / "baseline_shards.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("baseline_shards", path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def synthetic_pools(work: Path, tokens: int, vocab: int = 4096) -> Path:
    """Three domains of random documents (1..600 tokens), ~1.2x ``tokens`` in all."""
    pools = work / f"synthetic-pools-{tokens}"
    if (pools / "pools.json").exists():
        return pools
    pools.mkdir(parents=True)
    rng = np.random.default_rng(0)
    meta = {}
    for d, w in (("code", 0.2), ("news", 0.5), ("web", 0.3)):
        lens = rng.integers(1, 601, size=int(1.2 * w * tokens / 300) + 1)
        rng.integers(3, vocab, size=int(lens.sum())).astype(np.uint16).tofile(pools / f"{d}.bin")
        np.save(pools / f"{d}.idx.npy", np.concatenate([[0], np.cumsum(lens)]).astype(np.int64))
        meta[d] = {"tokens": int(lens.sum()), "docs": int(lens.size), "val_docs": 0}
    (pools / "pools.json").write_text(json.dumps({"tokenizer_sha256": "0" * 64, "vocab_size": vocab, "dtype": "uint16",
                                                  "bos_id": 0, "eos_id": 1, "pad_id": 2, "domains": meta}))
    return pools


def source_arm(src: Any, rows: int, batch: int) -> float:
    n, t0 = 0, time.perf_counter()
    while n < rows:
        n += src.next_batch(batch)["tokens"].numel() // src.dataset.reader.seq_len
    return n * src.dataset.reader.seq_len / (time.perf_counter() - t0)


def loader_arm(make: Any, state: dict[str, int], rows: int) -> float:
    loader = make()
    loader.cursor = state["cursor"]
    n, t0 = 0, time.perf_counter()
    for b in loader:
        n += len(b["tokens"])
        if n >= rows:
            break
    tps = n * b["tokens"].shape[1] / (time.perf_counter() - t0)
    state["cursor"] = loader.cursor
    return tps


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", default="/tmp/corpusmix-bench")
    ap.add_argument("--baseline", default="3bf8344", help="git ref of the baseline loader")
    ap.add_argument("--synthetic", action="store_true", help="random pools instead of the shared corpora")
    ap.add_argument("--seq-len", type=int, default=512)
    ap.add_argument("--tokens", type=int, default=8_000_000, help="token budget of the packed shards")
    ap.add_argument("--shard-mb", type=float, default=8.0, help="shard_max_bytes in MiB")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--rows", type=int, default=4000, help="rows read per arm and round")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json")
    args = ap.parse_args(argv)

    import torch

    from corpusmix.mixture import natural_mixture
    from proxytrain import shards as new
    from proxytrain.pack import PackConfig, pack

    torch.set_num_threads(1)
    work = Path(args.work)
    if args.synthetic:
        pools = synthetic_pools(work, args.tokens)
    else:
        from lib.pools import prepare_pools

        pools = prepare_pools(work)
    out = work / f"loader-shards-{pools.name}-{args.seq_len}-{args.tokens}-{args.shard_mb}"
    manifest = pack(pools, {"weights": natural_mixture(pools), "method": "natural"}, out,
                    PackConfig(seq_len=args.seq_len, tokens=args.tokens, shard_max_bytes=int(args.shard_mb * 2**20)))
    print(f"shards: {len(manifest['shards'])} files, {manifest['rows']} rows of {args.seq_len}")
    base = baseline_module(args.baseline)

    ctor: dict[str, float] = {}

    def built(name: str, make: Any) -> Any:
        t0 = time.perf_counter()
        obj = make()
        ctor[name] = time.perf_counter() - t0
        return obj

    sources = {"base/source": built("base", lambda: base.ShardBatchSource(out)),
               "new/source-manifest": built("new-manifest", lambda: new.ShardBatchSource(out, order="manifest")),
               "new/source-mixed": built("new-mixed", lambda: new.ShardBatchSource(out, order="mixed"))}
    w, bs = args.workers, args.batch_size
    loaders = {f"base/loader-w{w}": lambda: base.ShardLoader(base.ShardDataset(out, batch_size=bs, epochs=None),
                                                             num_workers=w),
               f"new/loader-mixed-w{w}": lambda: new.ShardLoader(new.ShardDataset(out, batch_size=bs, epochs=None),
                                                                 num_workers=w)}
    cursors = {k: {"cursor": 0} for k in loaders}
    for s in sources.values():  # warm-up: first shard decoded, page cache filled
        source_arm(s, bs, bs)
    tps: dict[str, list[float]] = {k: [] for k in [*sources, *loaders]}
    for r in range(args.rounds):
        arms = [*sources, *loaders]
        for k in harness.rotate(r, arms):  # each arm goes first in turn
            tps[k].append(source_arm(sources[k], args.rows, bs) if k in sources
                          else loader_arm(loaders[k], cursors[k], args.rows))
        print(f"round {r}: " + ", ".join(f"{k} {v[-1]:,.0f}" for k, v in tps.items()) + " tokens/s")

    print(f"\nconstruction (s): {', '.join(f'{k} {v:.3f}' for k, v in ctor.items())}")
    summary = {}
    for k, v in tps.items():
        summary[k] = statistics.median(v)
        print(f"{k:24s} median {summary[k]:>14,.0f} tokens/s")
    pairs = [("new/source-manifest", "base/source"), ("new/source-mixed", "base/source"),
             (f"new/loader-mixed-w{w}", f"base/loader-w{w}")]
    ratios = {}
    for a, b in pairs:
        rr = [x / y for x, y in zip(tps[a], tps[b], strict=True)]
        ratios[f"{a} / {b}"] = {"median": statistics.median(rr), "min": min(rr)}
        print(f"{a} / {b}: median {statistics.median(rr):.3f}, worst round {min(rr):.3f}")
    if args.json:
        harness.write_record("loader", {"tokens_per_s": tps, "median": summary, "ratios": ratios,
                                        "construction_s": ctor, "shards": len(manifest["shards"]),
                                        "rows": manifest["rows"], "args": vars(args)}, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
