"""``corpusmix train``: train (or resume) a Llama-style model on shards, pools or synthetic data.

    corpusmix train --params params.yaml                       # train: section of params.yaml
    corpusmix train --data OUT/shards --tokenizer OUT/tokenizer.json --steps 2000
    corpusmix train --data OUT/pools --mixture OUT/mixture.json --model tiny
    corpusmix train --overfit-one-batch                        # sanity check: loss goes to ~0
    corpusmix train --nproc 2 ...                              # relaunches itself under torchrun (FSDP2)

Data sources (all yield the trainer-batch dict of docs/formats.md and have an exact cursor):

- a shards folder (``manifest.json``): ``proxytrain.shards`` reader, this rank's slice of one
  global stream (``--data-order mixed``: seeded, the pack's domain shares in every prefix), batches
  assembled in ``--loader-workers`` processes; the cursor is global, so a run resumes with any
  number of ranks; validation from ``--val-data``: other shards, or a pools folder (its held-out split);
- a pools folder (``pools.json``): random windows drawn by mixture weight (``--mixture`` or token
  shares), validation from the pools' held-out split;
- nothing: ``SyntheticSource``, deterministic generated documents (smoke tests, benchmarks).

Shards and pools record the sha256 of their tokenizer; the trainer refuses them unless
``--tokenizer`` (or ``--tokenizer-sha256``) matches.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from corpusmix.config import ConfigError, add_config_args, config_from, load_params
from corpusmix.logging import get_logger

if TYPE_CHECKING:  # torch loads in the handlers: every other corpusmix command starts without it
    import torch

log = get_logger("proxytrain.train_cli")


# --------------------------------------------------------------------------- data sources


class SyntheticSource:
    """Deterministic synthetic documents: row ``i`` depends only on (seed, split, i).

    Each domain ``d`` writes arithmetic token sequences with stride ``d + 1`` (mod vocab) with 10 %
    random tokens, several documents per row and some end padding, so document masking and
    per-domain losses matter and a model can learn them. Rank ``r`` of ``w`` takes rows r, r+w, ...
    of one global stream, so a cursor resumes with another number of ranks when ranks share it evenly.
    """

    resumes_across_world_sizes = True

    def __init__(self, *, vocab_size: int = 512, seq_len: int = 128, domains: tuple[str, ...] = ("a", "b", "c"),
                 seed: int = 0, rank: int = 0, world: int = 1, split: str = "train") -> None:
        self.vocab_size, self.seq_len, self.domains = vocab_size, seq_len, list(domains)
        self.seed, self.rank, self.world, self.split = seed, rank, world, split
        self.row = 0

    def make_row(self, i: int) -> dict[str, np.ndarray]:
        rng = np.random.default_rng([self.seed, 1 if self.split == "val" else 0, i])
        s, v = self.seq_len, self.vocab_size
        d = i % len(self.domains)
        n = s - int(rng.integers(0, s // 4)) if rng.random() < 0.3 else s
        cuts = np.sort(rng.choice(np.arange(8, max(n, 9)), size=min(3, max(n - 9, 0)), replace=False))
        seg = np.full(s, -1, dtype=np.int32)
        toks = np.zeros(s, dtype=np.int64)
        bounds = [0, *[int(c) for c in cuts if c < n], n]
        for k, (a, b) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
            seg[a:b] = k
            toks[a:b] = (rng.integers(0, v) + (d + 1) * np.arange(b - a)) % v
        noise = rng.random(n) < 0.1
        toks[:n][noise] = rng.integers(0, v, size=int(noise.sum()))
        return {"tokens": toks, "segment_ids": seg, "domain_id": np.int64(d)}

    def _batch(self, rows: list[int]) -> dict[str, torch.Tensor]:
        import torch

        made = [self.make_row(i) for i in rows]
        return {"tokens": torch.from_numpy(np.stack([r["tokens"] for r in made])),
                "segment_ids": torch.from_numpy(np.stack([r["segment_ids"] for r in made])),
                "domain_id": torch.tensor([int(r["domain_id"]) for r in made], dtype=torch.int64)}

    def next_batch(self, n: int) -> dict[str, torch.Tensor]:
        rows = [(self.row + k) * self.world + self.rank for k in range(n)]
        self.row += n
        return self._batch(rows)

    def eval_batches(self, n: int, count: int) -> list[dict[str, torch.Tensor]]:
        val = SyntheticSource(vocab_size=self.vocab_size, seq_len=self.seq_len, domains=tuple(self.domains),
                              seed=self.seed, split="val")
        return [val._batch(list(range(k * n, (k + 1) * n))) for k in range(count)]

    def state_dict(self) -> dict[str, Any]:
        return {"row": self.row, "rank": self.rank, "world": self.world}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        consumed = int(state["row"]) * int(state.get("world", self.world))  # global rows consumed
        if consumed % self.world:
            raise ConfigError(f"the synthetic data cursor is at global row {consumed}, which {self.world} ranks "
                              "cannot share evenly; resume with a number of ranks that divides it")
        self.row = consumed // self.world


class PoolSource:
    """Random windows from token pools, domain drawn per row by mixture weight (one seed per rank)."""

    def __init__(self, pools_dir: str, *, seq_len: int, seed: int, rank: int, weights: dict[str, float] | None,
                 expect_sha256: str | None, split: str = "train", domain_order: list[str] | None = None) -> None:
        import torch

        from proxytrain.pools import PoolSampler

        self.sampler = PoolSampler(pools_dir, seq_len=seq_len, split=split, seed=seed * 1000 + rank,
                                   expect_tokenizer_sha256=expect_sha256)
        # domain_order: name the domains as the training data does (validation pools for shards)
        self.domains = list(domain_order) if domain_order else self.sampler.domains
        missing = [d for d in self.domains if d not in self.sampler.domains]
        if missing:
            raise ConfigError(f"pools in {pools_dir} have no domain(s) {missing}; the training data has "
                              f"{self.domains}")
        self._remap = torch.tensor([self.domains.index(d) if d in self.domains else -1
                                    for d in self.sampler.domains], dtype=torch.int64)
        self.vocab_size = int(self.sampler.meta["vocab_size"])
        self.weights = weights or {d: float(self.sampler._ranges[d][1] - self.sampler._ranges[d][0])
                                   for d in self.domains}
        total = sum(self.weights.values())
        self.weights = {d: w / total for d, w in self.weights.items()}

    def next_batch(self, n: int) -> dict[str, torch.Tensor]:
        b = self.sampler.sample_weighted(self.weights, n)
        return {**b, "domain_id": self._remap[b["domain_id"]]}

    def eval_batches(self, n: int, count: int) -> list[dict[str, torch.Tensor]]:
        out = []
        for d in self.domains:
            for b in self.sampler.eval_batches(d, n, max_rows=n * count):
                out.append({**b, "domain_id": self._remap[b["domain_id"]]})
        return out

    def state_dict(self) -> dict[str, Any]:
        return self.sampler.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.sampler.load_state_dict(state)


def _expected_sha(cfg: Any) -> str:
    if cfg.tokenizer:
        from proxytrain.tokenizer import tokenizer_sha256

        if not Path(cfg.tokenizer).is_file():
            raise ConfigError(f"--tokenizer {cfg.tokenizer} does not exist")
        sha = tokenizer_sha256(cfg.tokenizer)
        if cfg.tokenizer_sha256 and cfg.tokenizer_sha256 != sha:
            raise ConfigError(f"--tokenizer-sha256 {cfg.tokenizer_sha256[:12]}... does not match the sha256 of "
                              f"{cfg.tokenizer} ({sha[:12]}...); give only one of them")
        return sha
    if cfg.tokenizer_sha256:
        return cfg.tokenizer_sha256
    raise ConfigError("training on real data needs the tokenizer it was made with: pass --tokenizer "
                      "PATH/tokenizer.json (or --tokenizer-sha256), so shards of another tokenizer are refused")


def open_source(cfg: Any, *, rank: int, world: int) -> tuple[Any, Any]:
    """(train source, validation source or None) for ``cfg.data`` (shards, pools or synthetic)."""
    if not cfg.data:
        vocab = cfg.vocab_size or 512
        return (SyntheticSource(vocab_size=vocab, seq_len=cfg.seq_len, seed=cfg.seed, rank=rank, world=world),
                SyntheticSource(vocab_size=vocab, seq_len=cfg.seq_len, seed=cfg.seed))
    data = Path(cfg.data)
    sha = _expected_sha(cfg)
    if (data / "pools.json").is_file():
        weights = None
        if cfg.mixture:
            weights = json.loads(Path(cfg.mixture).read_text())["weights"]
        src = PoolSource(str(data), seq_len=cfg.seq_len, seed=cfg.seed, rank=rank, weights=weights,
                         expect_sha256=sha)
        val_dir = cfg.val_data or str(data)
        val = PoolSource(val_dir, seq_len=cfg.seq_len, seed=cfg.seed, rank=0, weights=None, expect_sha256=sha,
                         split="val")
        return src, val
    if (data / "manifest.json").is_file():
        return _open_shards(cfg, data, sha, rank=rank, world=world)
    raise ConfigError(f"--data {data}: neither manifest.json (shards) nor pools.json (pools) found there; "
                      "build them with `corpusmix pack` / `corpusmix tokenize pools`")


def _open_shards(cfg: Any, data: Path, sha: str, *, rank: int, world: int) -> tuple[Any, Any]:
    from proxytrain.shards import ShardBatchSource

    src = ShardBatchSource(str(data), rank=rank, world_size=world, expect_tokenizer_sha256=sha,
                           order=cfg.data_order, seed=cfg.seed, num_workers=cfg.loader_workers)
    seq_len = int(src.dataset.manifest["seq_len"])
    if seq_len != cfg.seq_len:
        raise ConfigError(f"shards in {data} have seq_len {seq_len}, the config says {cfg.seq_len}: "
                          f"set seq_len: {seq_len} in the train: params (or --seq-len {seq_len})")
    if src.vocab_size is None:
        if cfg.tokenizer:
            from proxytrain.tokenizer import load_tokenizer

            src.vocab_size = int(load_tokenizer(cfg.tokenizer).get_vocab_size())
        elif cfg.vocab_size:
            src.vocab_size = int(cfg.vocab_size)
        else:
            raise ConfigError("the shard manifest does not record vocab_size: pass --tokenizer or --vocab-size")
    val = None
    if cfg.val_data and (Path(cfg.val_data) / "pools.json").is_file():  # the pools' held-out split
        val = PoolSource(cfg.val_data, seq_len=seq_len, seed=cfg.seed, rank=0, weights=None, expect_sha256=sha,
                         split="val", domain_order=list(src.domains))
    elif cfg.val_data:
        val = ShardBatchSource(cfg.val_data, expect_tokenizer_sha256=sha)
        if val.domains != src.domains:
            raise ConfigError(f"validation shards {cfg.val_data} have domains {val.domains}, training shards "
                              f"{src.domains}: pack both with the same domains")
    else:
        log.info("no --val-data: per-domain validation loss is off for shards")
    return src, val


# --------------------------------------------------------------------------- CLI


def _bool_flags_as_switches(parser: argparse.ArgumentParser) -> None:
    """``--compile`` alone means true; ``--compile false`` still works."""
    for action in parser._actions:
        if action.metavar == "BOOL":
            action.nargs, action.const = "?", True


def register(sub: argparse._SubParsersAction) -> None:
    from proxytrain.train_config import TrainConfig

    p = sub.add_parser("train", help="train a Llama-style model (FSDP2 under torchrun)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--params", default="params.yaml", help="params file; its train: section is read")
    p.add_argument("--nproc", type=int, default=1, help="processes (ranks); > 1 relaunches under torchrun")
    add_config_args(p, TrainConfig)
    _bool_flags_as_switches(p)
    p.set_defaults(func=run)


def torchrun_argv(args: argparse.Namespace, nproc: int) -> list[str]:
    """The torchrun command line that reruns this command with ``nproc`` ranks (a list, no shell)."""
    from proxytrain.train_config import TrainConfig

    argv = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}",
            "-m", "corpusmix.cli", "train", "--params", str(args.params)]
    for f in dataclasses.fields(TrainConfig):
        v = getattr(args, f.name, None)
        if v is not None:
            argv += ["--" + f.name.replace("_", "-"), str(v)]
    return argv


def preflight(cfg: Any, nproc: int) -> None:
    """Refuse, in one line and before torchrun starts ``nproc`` ranks, what each rank would refuse:
    unreadable or missing data, a global batch the ranks cannot share, a checkpoint whose data cursor
    belongs to other shards, mixture or order, or a per-rank cursor resumed with other ranks."""
    from proxytrain import checkpoint as ckpt
    from proxytrain import elastic

    latest = ckpt.latest_checkpoint(Path(cfg.out_dir) / "checkpoints") if cfg.resume else None
    prev = elastic.previous_run(latest)
    elastic.batch_plan(cfg.global_batch_size, cfg.micro_batch_size, cfg.grad_accum, nproc, prev)
    source, _ = open_source(cfg, rank=0, world=nproc)
    if latest is None or prev is None:
        return
    if prev["world"] != nproc and not elastic.resumes_across_world_sizes(source, None):
        raise ConfigError(f"checkpoint {latest} was written by {prev['world']} ranks and its {type(source).__name__} "
                          f"data keeps a per-rank state; resume with --nproc {prev['world']}")
    source.load_state_dict(json.loads((latest / "extra-rank0.json").read_text())["data"])


def run(args: argparse.Namespace) -> int:
    from proxytrain.checkpoint import CheckpointError
    from proxytrain.spike_guard import TrainingAborted
    from proxytrain.train import TrainConfig, train

    if args.nproc > 1 and "LOCAL_RANK" not in os.environ:
        preflight(config_from(TrainConfig, params=load_params(args.params, "train"), args=args, where="train"),
                  args.nproc)
        argv = torchrun_argv(args, args.nproc)
        log.info("launching torchrun", extra={"data": {"argv": argv}})
        return subprocess.call(argv)
    cfg = config_from(TrainConfig, params=load_params(args.params, "train"), args=args, where="train")
    if cfg.overfit_one_batch:
        # one repeated batch: no checkpoints, no validation, and a loss near 0 is not a "spike"
        cfg = dataclasses.replace(cfg, resume=False, ckpt_every=0, eval_every=0, spike_factor=0.0)
    from proxytrain.parallel import setup_distributed

    rank, world, _ = setup_distributed(cfg.device)
    source, val_source = open_source(cfg, rank=rank, world=world)
    try:
        result = train(cfg, source=source, val_source=val_source)
    except (CheckpointError, TrainingAborted) as exc:
        print(f"corpusmix train: error: {exc}", file=sys.stderr)
        return 2
    losses = [r["loss"] for r in result.history if "event" not in r]
    summary = {"steps": result.step, "first_loss": losses[0] if losses else None,
               "last_loss": losses[-1] if losses else None, "val": result.val, "out_dir": cfg.out_dir}
    if rank == 0:
        print(json.dumps(summary))
    if cfg.overfit_one_batch and losses:
        ok = losses[-1] < 0.1 * losses[0]
        if rank == 0:
            print(f"overfit-one-batch: loss {losses[0]:.4f} -> {losses[-1]:.4f}: {'PASS' if ok else 'FAIL'}")
        return 0 if ok else 1
    return 0
