"""Reader benchmark: shard reader tokens/s vs what the trainer consumes on CPU.

Packs the shared corpora (pools cached by ``lib.pools.prepare_pools``) into shards with the
natural mixture, then ALTERNATELY, ``--rounds`` times: (a) streams ``--rows`` rows through
``ShardLoader`` (batches of ``--batch-size``, ``--workers`` dataloader workers) and (b) runs the
trainer's step on the same batch shape: forward + backward + AdamW of the Llama-style proxy from
``proxytrain.model`` (``--model`` preset, fp32 on CPU). It prints both tokens/s and the ratio
(target: reader >= 50x trainer). Run as::

    python bench/bench_reader.py [--seq-len 512] [--model tiny] [--workers 0] [--json out.json]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import harness
import torch


def reader_tokens_per_s(shards: Path, *, rows: int, batch_size: int, workers: int, start: int) -> float:
    from proxytrain.shards import ShardDataset, ShardLoader

    ds = ShardDataset(shards, batch_size=batch_size, epochs=None)
    loader = ShardLoader(ds, num_workers=workers)
    loader.cursor = start  # a fresh part of the stream each round (no warm page cache advantage)
    n = 0
    t0 = time.perf_counter()
    for batch in loader:
        n += batch["tokens"].numel()
        if n >= rows * ds.reader.seq_len:
            break
    return n / (time.perf_counter() - t0)


def trainer_tokens_per_s(batch: dict[str, torch.Tensor], model: torch.nn.Module, opt: torch.optim.Optimizer,
                         steps: int) -> float:
    from proxytrain.loss import per_token_loss

    t0 = time.perf_counter()
    for _ in range(steps):
        logits = model(batch["tokens"], batch["segment_ids"])
        loss, mask = per_token_loss(logits, batch["tokens"], batch["segment_ids"])
        (loss.sum() / mask.sum()).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    return steps * batch["tokens"].numel() / (time.perf_counter() - t0)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", default="/tmp/corpusmix-bench")
    ap.add_argument("--seq-len", type=int, default=512)
    ap.add_argument("--tokens", type=int, default=8_000_000, help="token budget of the packed shards")
    ap.add_argument("--model", default="tiny", help="proxytrain.model preset of the trainer side")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--workers", type=int, default=0)
    ap.add_argument("--rows", type=int, default=4000, help="rows read per reader round")
    ap.add_argument("--steps", type=int, default=3, help="trainer steps per round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json")
    args = ap.parse_args(argv)

    from lib.pools import prepare_pools

    from corpusmix.mixture import natural_mixture
    from proxytrain.model import ModelConfig, build_model
    from proxytrain.pack import PackConfig, pack
    from proxytrain.shards import ShardDataset

    torch.manual_seed(0)
    torch.set_num_threads(2)
    pools = prepare_pools(Path(args.work))
    shards = Path(args.work) / f"shards-{args.seq_len}-{args.tokens}"
    manifest = pack(pools, {"weights": natural_mixture(pools), "method": "natural"}, shards,
                    PackConfig(seq_len=args.seq_len, tokens=args.tokens, shard_max_bytes=32 * 2**20))
    print(f"shards: {len(manifest['shards'])} files, {manifest['rows']} rows of {args.seq_len}, "
          f"padding {100 * manifest['pad_fraction']:.3f} %")
    cfg = ModelConfig.preset(args.model, vocab_size=int(manifest["vocab_size"]), max_seq_len=args.seq_len)
    model = build_model(cfg, "cpu", seed=0)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ds = ShardDataset(shards, batch_size=args.batch_size)
    batch = next(iter(torch.utils.data.DataLoader(ds, batch_size=args.batch_size)))
    trainer_tokens_per_s(batch, model, opt, 1)  # warm-up

    reader, trainer = [], []
    for r in range(args.rounds):  # alternate: machine load drifts, so compare within one run
        reader.append(reader_tokens_per_s(shards, rows=args.rows, batch_size=args.batch_size,
                                          workers=args.workers, start=r * args.rows))
        trainer.append(trainer_tokens_per_s(batch, model, opt, args.steps))
        print(f"round {r}: reader {reader[-1]:,.0f} tokens/s, trainer {trainer[-1]:,.0f} tokens/s, "
              f"ratio {reader[-1] / trainer[-1]:.0f}x")
    ratio = statistics.median(reader) / statistics.median(trainer)
    params = sum(p.numel() for p in model.parameters())
    print(f"\nreader (workers={args.workers}, batch {args.batch_size}x{args.seq_len}): "
          f"{statistics.median(reader):,.0f} tokens/s; trainer ({args.model}, {params / 1e6:.1f}M params, fp32 CPU "
          f"fwd+bwd+AdamW): {statistics.median(trainer):,.0f} tokens/s; ratio {ratio:.0f}x (target >= 50x)")
    if args.json:
        harness.write_record("reader", {"reader_tokens_per_s": reader, "trainer_tokens_per_s": trainer,
                                        "ratio": ratio, "args": vars(args)}, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
