"""The scaling sweep: a grid of small training runs (model sizes x token counts, an lr sweep per size),
each one a real ``corpusmix train`` run, cached by config hash, resumable, run in parallel processes.

Library module behind ``corpusmix scale sweep`` (:mod:`proxytrain.scale_cli`)::

    from proxytrain.scaling_sweep import SweepConfig, run_sweep
    result = run_sweep(SweepConfig(data="out/pools", tokenizer="out/tokenizer/tokenizer.json",
                                   mixture="out/mix/mixture.json", out="out/scale"))

Two phases. 1: every size trains at ``lr_tokens`` tokens (and at each of ``lr_sweep_tokens``) with
lr = ``lr`` x each of ``lr_factors``; while a size's best lr is at the edge of what was tried, one more
point beyond it is added (at most ``lr_extend`` times), so the optimum is bracketed. 2: every size
trains at each remaining token count with its best lr (see :func:`proxytrain.scaling_fit.lr_law.lr_optima`),
interpolated in log lr vs log D between the swept token counts (held constant outside them), and
between two swept counts also at the shorter one's optimum (:func:`phase2_lrs`): the best lr falls with
the training horizon, so one lr sweep at a short D over-states the lr of long runs.

A run is ``python -m corpusmix.cli train --params <run>/params.yaml``: the trainer of
:mod:`proxytrain.train` with the pools + mixture data source, so the laws are fitted on exactly what
the full run trains on. Its folder is ``out/cache/<key>`` where the key hashes the train config and the
data's fingerprint; ``result.json`` marks it finished (a re-run reads it back), an unfinished run resumes
from its checkpoint. A run's D (tokens) is steps x batch x seq_len; its N is the non-embedding
parameter count by default (``params_count``: total = with the embedding table, see docs/scaling.md), and
every run records both counts (``N_total``, ``N_non_embedding``). Every run has its own warmup + cosine
schedule ending at its own D (Hoffmann et al. 2022: a schedule longer than the run biases its loss up),
and only its final validation loss, on the fixed evaluation windows of the pools' val split, is used.
Runs with N >= ``torchrun_above`` train under torchrun with ``nproc`` ranks (FSDP2).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from corpusmix.config import ConfigError
from corpusmix.logging import get_logger

log = get_logger("proxytrain.scaling_sweep")


@dataclass
class SweepConfig:
    """``corpusmix scale sweep`` (``params.yaml``: ``scale.sweep``)."""

    data: str = field(default="", metadata={"help": "token pools folder (pools.json) the runs sample from"})
    mixture: str = field(default="", metadata={"help": "mixture.json the runs train on (empty = token shares)"})
    tokenizer: str = field(default="", metadata={"help": "tokenizer.json the pools were made with"})
    out: str = field(default="out/scale", metadata={"help": "sweep folder: cache/<key>/ (one per run) and sweep.json"})
    sizes: list[str] = field(default_factory=lambda: ["32x2", "48x2", "64x2", "96x2"],
                             metadata={"help": "model sizes as d_model x n_layers"})
    head_dim: int = field(default=16, metadata={"help": "attention head width (n_heads = d_model / head_dim)"})
    tokens: list[int] = field(default_factory=lambda: [65536, 131072, 262144],
                              metadata={"help": "training tokens D of each size's runs"})
    lr: float = field(default=3e-3, metadata={"help": "centre of every size's lr sweep"})
    lr_factors: list[float] = field(default_factory=lambda: [0.5, 1.0, 2.0],
                                    metadata={"help": "lr sweep points as multiples of lr"})
    lr_extend: int = field(default=2, metadata={"help": "points added past an edge optimum (x2 or /2 steps)"})
    lr_tokens: int = field(default=0, metadata={"help": "D of the lr sweep (0 = the middle of tokens)"})
    lr_sweep_tokens: list[int] = field(default_factory=list, metadata={
        "help": "more token counts with their own lr sweep (the best lr falls with D); the other D take the "
                "lr interpolated in log-log between the swept ones"})
    batch_size: int = field(default=8, metadata={"help": "rows per optimizer step"})
    seq_len: int = field(default=128, metadata={"help": "tokens per row"})
    warmup_frac: float = field(default=0.1, metadata={"help": "warmup steps as a fraction of the run"})
    min_lr_frac: float = field(default=0.1, metadata={"help": "cosine floor as a fraction of the peak lr"})
    eval_batches: int = field(default=8, metadata={"help": "validation batches per domain (final eval only)"})
    eval_batch_size: int = field(default=8, metadata={"help": "rows per validation batch"})
    target: str = field(default="all", metadata={"help": "validation loss a run is scored by: all or a domain"})
    seed: int = field(default=0, metadata={"help": "init and data seed of every run"})
    workers: int = field(default=2, metadata={"help": "runs in parallel (one CPU thread each)"})
    torchrun_above: int = field(default=0, metadata={"help": "N from which a run uses torchrun (0 = never)"})
    nproc: int = field(default=2, metadata={"help": "ranks of a torchrun run"})
    params_count: str = field(default="total", metadata={
        "help": "N of the law: total (embedding table included) or non_embedding (Kaplan et al.)"})

    def validate(self) -> None:
        if not self.data:
            raise ConfigError("scale sweep needs --data: a token pools folder (`corpusmix tokenize pools`)")
        if not (Path(self.data) / "pools.json").is_file():
            raise ConfigError(f"--data {self.data}: no pools.json there; build it with `corpusmix tokenize pools`")
        if not self.sizes or not self.tokens:
            raise ConfigError("scale sweep needs at least one size and one token count")
        for s in self.sizes:
            parse_size(s, self.head_dim)
        if any(t not in self.tokens for t in self.lr_sweep_tokens):
            raise ConfigError(f"lr_sweep_tokens {self.lr_sweep_tokens} must be among tokens {self.tokens}")
        if any(t < self.batch_size * self.seq_len for t in self.tokens):
            raise ConfigError(f"every token count must be >= batch_size x seq_len = {self.batch_size * self.seq_len}")
        if self.lr <= 0 or not self.lr_factors or min(self.lr_factors) <= 0:
            raise ConfigError("lr and every lr_factor must be > 0")
        if self.params_count not in PARAM_COUNTS:
            raise ConfigError(f"params_count must be one of {PARAM_COUNTS}, got {self.params_count!r}")


PARAM_COUNTS = ("total", "non_embedding")


def parse_size(size: str, head_dim: int) -> tuple[int, int, int]:
    """``"64x2"`` -> (d_model 64, 2 layers, 4 heads)."""
    try:
        d, n_layers = (int(x) for x in size.lower().split("x"))
    except ValueError as exc:
        raise ConfigError(f"model size {size!r}: write it as D_MODELxN_LAYERS, e.g. 64x2") from exc
    if d % head_dim or (head_dim % 2) or d <= 0 or n_layers <= 0:
        raise ConfigError(f"model size {size!r}: d_model must be a positive multiple of head_dim={head_dim} "
                          "(even, for RoPE)")
    return d, n_layers, d // head_dim


def model_params(size: str, head_dim: int, vocab_size: int, seq_len: int) -> dict[str, int]:
    """``{"non_embedding": ..., "total": ...}`` parameters of a size, counted on a meta-device model."""
    from proxytrain.model import ModelConfig, build_model, count_params

    d, n_layers, heads = parse_size(size, head_dim)
    mcfg = ModelConfig.preset("tiny", vocab_size=vocab_size, max_seq_len=seq_len, d_model=d, n_layers=n_layers,
                              n_heads=heads)
    model = build_model(mcfg, materialize=False)
    return {"non_embedding": count_params(model, non_embedding=True),
            "total": count_params(model, non_embedding=False)}


def non_embedding_params(size: str, head_dim: int, vocab_size: int, seq_len: int) -> int:
    """Non-embedding N of a size, counted on a meta-device model (no memory, no init)."""
    return model_params(size, head_dim, vocab_size, seq_len)["non_embedding"]


def data_fingerprint(cfg: SweepConfig) -> str:
    h = hashlib.sha256((Path(cfg.data) / "pools.json").read_bytes())
    if cfg.mixture:
        h.update(Path(cfg.mixture).read_bytes())
    return h.hexdigest()[:16]


def train_params(cfg: SweepConfig, size: str, tokens: int, lr: float) -> dict[str, Any]:
    """The ``train:`` section of one run (everything explicit: the run does not read params.yaml)."""
    d, n_layers, heads = parse_size(size, cfg.head_dim)
    steps = max(1, tokens // (cfg.batch_size * cfg.seq_len))
    return {"model": "tiny", "d_model": d, "n_layers": n_layers, "n_heads": heads, "seq_len": cfg.seq_len,
            "steps": steps, "micro_batch_size": cfg.batch_size, "grad_accum": 1, "lr": float(lr),
            "min_lr": float(lr) * cfg.min_lr_frac, "warmup_steps": max(1, round(cfg.warmup_frac * steps)),
            "threads": 1, "seed": cfg.seed, "ckpt_every": max(1, steps // 2), "keep_checkpoints": 1,
            "eval_every": steps, "eval_batches": cfg.eval_batches, "eval_batch_size": cfg.eval_batch_size,
            "data": str(cfg.data), "mixture": str(cfg.mixture), "tokenizer": str(cfg.tokenizer),
            "dvclive": False, "progress": False}


def run_key(params: dict[str, Any], fingerprint: str) -> str:
    body = {k: v for k, v in params.items() if k not in ("out_dir", "data", "mixture", "tokenizer", "progress")}
    return hashlib.sha256(json.dumps({"train": body, "data": fingerprint}, sort_keys=True).encode()).hexdigest()[:16]


def run_one(cfg: SweepConfig, size: str, tokens: int, lr: float, *, n_params: int, fingerprint: str
            ) -> dict[str, Any]:
    """Train one run (or read its result back); never raises for a run that fails or diverges."""
    params = train_params(cfg, size, tokens, lr)
    key = run_key(params, fingerprint)
    rdir = Path(cfg.out) / "cache" / key  # "cache": the report does not walk into it
    done = rdir / "result.json"
    if done.is_file():
        return json.loads(done.read_text())
    rdir.mkdir(parents=True, exist_ok=True)
    nproc = cfg.nproc if cfg.torchrun_above and n_params >= cfg.torchrun_above else 1
    if nproc > 1:  # same global batch: each rank takes its share of the rows
        params["micro_batch_size"] = max(1, cfg.batch_size // nproc)
    params["out_dir"] = str(rdir)
    (rdir / "params.yaml").write_text(yaml.safe_dump({"train": params}, sort_keys=True))
    argv = [sys.executable, "-m", "corpusmix.cli", "--log-level", "WARNING", "train",
            "--params", str(rdir / "params.yaml"), "--nproc", str(nproc)]
    t0 = time.perf_counter()
    with open(rdir / "stdout.log", "w") as out, open(rdir / "stderr.log", "w") as err:
        proc = subprocess.Popen(argv, stdout=out, stderr=err, env={**os.environ, "OMP_NUM_THREADS": "1"})
        _, status, usage = os.wait4(proc.pid, 0)  # wait4: this run's own CPU time, not the whole sweep's
    rc = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    result = {"key": key, "size": size, "N": n_params, "D": params["steps"] * cfg.batch_size * cfg.seq_len,
              "lr": float(lr), "batch_size": cfg.batch_size, "seq_len": cfg.seq_len, "steps": params["steps"],
              "nproc": nproc, "wall_s": round(wall, 2), "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
              "tokenizer_sha256": json.loads((Path(cfg.data) / "pools.json").read_text()).get("tokenizer_sha256"),
              **_outcome(rc, rdir, cfg.target)}
    log.info("scale run", extra={"data": {k: result[k] for k in ("key", "size", "N", "D", "lr", "status",
                                                                  "loss", "wall_s", "cpu_s")}})
    if result["status"] in ("ok", "diverged"):  # deterministic outcomes; a failed run (killed...) reruns
        shutil.rmtree(rdir / "checkpoints", ignore_errors=True)  # finished: result.json is the cache
        tmp = done.with_suffix(".tmp")
        tmp.write_text(json.dumps(result, indent=1, sort_keys=True))
        os.replace(tmp, done)
    return result


def _outcome(rc: int, rdir: Path, target: str) -> dict[str, Any]:
    """status ok | diverged | failed, the target loss and per-domain losses, from the run's output."""
    err = (rdir / "stderr.log").read_text(errors="replace")
    summary = None
    for line in reversed((rdir / "stdout.log").read_text(errors="replace").splitlines()):
        if line.startswith("{"):
            summary = json.loads(line)
            break
    if rc != 0 or summary is None:
        diverged = "spike" in err or "non_finite" in err or "rollback" in err
        return {"status": "diverged" if diverged else "failed", "loss": None, "val": {},
                "error": err.strip().splitlines()[-1][:300] if err.strip() else f"exit code {rc}"}
    val = summary.get("val") or {}
    if target not in val:
        return {"status": "failed", "loss": None, "val": val,
                "error": f"no validation loss {target!r} (have {sorted(val)}): check scale.sweep.target"}
    loss = float(val[target])
    return {"status": "ok" if math.isfinite(loss) else "diverged", "loss": loss if math.isfinite(loss) else None,
            "val": val, "train_loss_last": summary.get("last_loss")}


def _run_many(cfg: SweepConfig, jobs: list[tuple[str, int, float]], counts: dict[str, dict[str, int]], fp: str
              ) -> list[dict[str, Any]]:
    def one(job: tuple[str, int, float]) -> dict[str, Any]:
        c = counts[job[0]]
        r = run_one(cfg, *job, n_params=c[cfg.params_count], fingerprint=fp)
        # a cached result may predate (or differ in) the count: N always follows this sweep's params_count
        return {**r, "N": c[cfg.params_count], "N_total": c["total"], "N_non_embedding": c["non_embedding"],
                "params_count": cfg.params_count}

    with ThreadPoolExecutor(max_workers=max(1, cfg.workers)) as ex:
        return list(ex.map(one, jobs))


def interpolate_lr(best: dict[int, float], d: int, default: float) -> float:
    """A size's lr at D tokens from its lr-sweep optima ``{D: lr}``: linear in log lr vs log D between the
    swept D, the nearest optimum outside them, ``default`` without any."""
    if not best:
        return default
    ds = sorted(best)
    if d <= ds[0]:
        return best[ds[0]]
    if d >= ds[-1]:
        return best[ds[-1]]
    hi = next(i for i, x in enumerate(ds) if x >= d)
    d0, d1 = ds[hi - 1], ds[hi]
    w = math.log(d / d0) / math.log(d1 / d0)
    return math.exp((1 - w) * math.log(best[d0]) + w * math.log(best[d1]))


def phase2_lrs(best: dict[int, float], d: int, default: float) -> list[float]:
    """The lrs a size trains at D without its own lr sweep: the interpolated one (:func:`interpolate_lr`)
    and, between two swept D, also the shorter one's optimum (no horizon correction); the fit keeps the
    better of the two. Two points because a 3-4 point sweep's optimum moves by up to 2x between
    neighbours (measured on the demo: 48x2 lost 1.1 % at 576 steps with the interpolated lr alone)."""
    lrs = [interpolate_lr(best, d, default)]
    below = [x for x in best if x < d]
    if below and d < max(best):
        lrs.append(best[max(below)])
    return sorted(set(lrs))


def run_sweep(cfg: SweepConfig) -> dict[str, Any]:
    """Both phases; returns (and writes to ``out/sweep.json``) every run's result and the sweep's cost."""
    from proxytrain.scaling_fit.lr_law import lr_optima

    cfg.validate()
    vocab = int(json.loads((Path(cfg.data) / "pools.json").read_text())["vocab_size"])
    fp = data_fingerprint(cfg)
    counts = {s: model_params(s, cfg.head_dim, vocab, cfg.seq_len) for s in cfg.sizes}
    sizes_n = {s: c[cfg.params_count] for s, c in counts.items()}
    tokens = sorted(set(cfg.tokens))
    d_lr = cfg.lr_tokens or tokens[len(tokens) // 2]
    d_lrs = sorted({d_lr, *cfg.lr_sweep_tokens})
    t0 = time.perf_counter()
    runs: list[dict[str, Any]] = []
    lrs = {(s, d): sorted(cfg.lr * f for f in cfg.lr_factors) for s in cfg.sizes for d in d_lrs}
    tried: dict[tuple[str, int], set[float]] = {k: set() for k in lrs}
    for _ in range(cfg.lr_extend + 1):  # phase 1: lr sweeps, extended past edge optima
        jobs = [(s, d, lr) for (s, d), grid in lrs.items() for lr in grid if lr not in tried[(s, d)]]
        if not jobs:
            break
        runs += _run_many(cfg, jobs, counts, fp)
        for s, d, lr in jobs:
            tried[(s, d)].add(lr)
        for (s, d), done in tried.items():
            ok = {r["lr"]: r["loss"] for r in runs if r["size"] == s and r["D"] == d and r["status"] == "ok"}
            if len(ok) < 2:
                continue
            best = min(ok, key=ok.get)
            if best == min(done):
                lrs[(s, d)] = sorted(done | {best / 2})
            elif best == max(done):
                lrs[(s, d)] = sorted(done | {best * 2})
    by_n = {n: s for s, n in sizes_n.items()}
    best_lr: dict[str, dict[int, float]] = {}
    for o in lr_optima(runs):
        best_lr.setdefault(by_n[o["N"]], {})[o["D"]] = o["lr"]
    missing = [s for s in cfg.sizes if s not in best_lr]
    if missing:
        log.warning("no usable lr sweep (fewer than 3 finished runs): phase 2 uses the centre lr",
                    extra={"data": {"sizes": missing}})
    jobs = [(s, d, lr) for s in cfg.sizes for d in tokens if d not in d_lrs
            for lr in phase2_lrs(best_lr.get(s, {}), d, cfg.lr)]
    runs += _run_many(cfg, jobs, counts, fp)
    cost = {"runs": len(runs), "wall_s": round(time.perf_counter() - t0, 1),
            "cpu_s_runs": round(sum(r["cpu_s"] for r in runs if "cpu_s" in r), 1),
            "run_wall_s": round(sum(r["wall_s"] for r in runs), 1), "workers": cfg.workers,
            "status": {st: sum(r["status"] == st for r in runs) for st in ("ok", "diverged", "failed")},
            "loadavg_end": list(os.getloadavg())}
    result = {"config": asdict(cfg), "params_count": cfg.params_count,
              "sizes": {s: {"N": sizes_n[s], "N_total": c["total"], "N_non_embedding": c["non_embedding"],
                            "best_lr": best_lr.get(s, {}).get(d_lr),
                            "best_lr_by_tokens": {str(d): v for d, v in sorted(best_lr.get(s, {}).items())}}
                        for s, c in counts.items()},
              "lr_tokens": d_lr, "lr_sweep_tokens": d_lrs, "runs": runs, "cost": cost}
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "sweep.json").write_text(json.dumps(result, indent=1, sort_keys=True))
    log.info("scale sweep done", extra={"data": cost})
    return result
