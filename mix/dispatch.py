"""Where proxy runs execute: parallel processes on this machine, or job files for a cluster.

A *job* is one proxy run described as JSON (``kind``: ``proxy`` for a mixture proxy, ``reference``
and ``doremi`` for DoReMi's reference and Group-DRO proxies; ``runner``: the ``module:function``
that runs it; ``key`` names its result file ``<cache>/<key>.json``, or ``.pt`` for a reference). :func:`run_jobs` skips finished keys and runs
the rest:

- ``workers <= 1``: in this process (under torchrun: every rank of this process group, FSDP2);
- on CPU: ``workers`` spawned processes, one torch thread each, so ``workers`` proxies share the
  cores; on CUDA: one process per GPU (``CUDA_VISIBLE_DEVICES`` pinned per worker).

Cluster fan-out (docs/mix.md): ``corpusmix mix plan <method> <the method's arguments>`` writes the
job files of every missing key under ``<cache>/jobs/`` and prints one command per key, without
training::

    corpusmix mix plan regmix --input POOLS --output OUT/regmix.json > jobs.txt
    # a Slurm array: sed -n "${SLURM_ARRAY_TASK_ID}p" jobs.txt | sh
    corpusmix mix proxy-run --cache OUT/proxies --key proxy-0123abcd...     # one proxy by key
    corpusmix mix proxy-run --cache OUT/proxies --key doremi-... --nproc 8  # under torchrun (FSDP2)

then the same ``corpusmix mix regmix ...`` reads every result back and fits. DoReMi's proxies need
its reference first: the plan lists the reference alone, and lists the DRO proxies once it is done.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from corpusmix.config import ConfigError
from corpusmix.logging import get_logger

log = get_logger("mix.dispatch")

_PLAN: list[list[str]] | None = None  # set while `corpusmix mix plan` runs: commands collected here


class ProxiesPending(RuntimeError):
    """Raised in plan mode: the search cannot go on before these jobs are run."""


@contextlib.contextmanager
def plan_mode() -> Iterator[list[list[str]]]:
    global _PLAN
    _PLAN = []
    try:
        yield _PLAN
    finally:
        _PLAN = None


def result_path(cache: Path, job: dict[str, Any]) -> Path:
    return cache / f"{job['key']}{'.pt' if job['kind'] == 'reference' else '.json'}"


def run_job(job: dict[str, Any], cache: str | Path) -> None:
    """Run one job in this process (every rank under torchrun); its result lands in the cache.

    The job names its runner (``runner``: ``module:function``, set by the method that submits it),
    so this module knows no method."""
    import importlib

    runner = job.get("runner")
    if not isinstance(runner, str) or ":" not in runner:
        raise ConfigError(f"proxy job {job.get('key')!r} names no runner (a job file of an older version?); "
                          "plan it again with `corpusmix mix plan`")
    module, func = runner.split(":", 1)
    getattr(importlib.import_module(module), func)(job, Path(cache))


def _run_spawned(args: tuple[dict[str, Any], str]) -> None:
    run_job(*args)


def _pin_device(counter: Any, n_gpus: int) -> None:
    """Process-pool initializer: each worker takes the next GPU (before torch touches CUDA), and
    logs its warnings as the parent does (structured JSONL on stderr and ``$CORPUSMIX_LOG``; its
    info records stay quiet: the parent reports progress)."""
    from corpusmix.logging import configure

    configure("WARNING")
    with counter.get_lock():
        i = counter.value
        counter.value += 1
    if n_gpus:
        os.environ["CUDA_VISIBLE_DEVICES"] = str(i % n_gpus)


def run_jobs(jobs: list[dict[str, Any]], cache: Path, *, workers: int, progress: bool = True,
             device: str = "auto", desc: str = "proxies") -> list[Path]:
    """Run the jobs whose result is missing; return every job's result path (in order).

    ``progress``: a bar redrawn every 10 s (elapsed time, even while one long run trains) and a log
    line per finished run."""
    paths = [result_path(cache, j) for j in jobs]
    todo = [j for j, p in zip(jobs, paths, strict=True) if not p.exists()]
    log.info("proxy runs", extra={"data": {"total": len(jobs), "cached": len(jobs) - len(todo),
                                            "to_train": len(todo), "workers": workers}})
    if not todo:
        return paths
    if _PLAN is not None:
        (cache / "jobs").mkdir(parents=True, exist_ok=True)
        for j in todo:
            (cache / "jobs" / f"{j['key']}.json").write_text(json.dumps(j, indent=1, sort_keys=True))
            _PLAN.append(["corpusmix", "mix", "proxy-run", "--cache", str(cache), "--key", j["key"]])
        raise ProxiesPending(f"{len(todo)} proxy run(s) to do before this search can go on")
    bar = None
    t0 = time.perf_counter()
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=len(todo), desc=desc, unit="run", mininterval=0)
    stop = _heartbeat(bar)

    def done() -> None:
        if bar is not None:
            bar.update(1)
            log.info(f"{desc}: run finished", extra={"data": {"done": bar.n, "of": len(todo),
                                                              "elapsed_s": round(time.perf_counter() - t0, 1)}})
    n_gpus = _gpu_count(device)
    workers = min(workers, n_gpus) if n_gpus else workers
    if workers <= 1 or len(todo) == 1:
        for j in todo:
            run_job(j, cache)
            done()
    else:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        ctx = mp.get_context("spawn")
        with ProcessPoolExecutor(max_workers=min(workers, len(todo)), mp_context=ctx, initializer=_pin_device,
                                 initargs=(ctx.Value("i", 0), n_gpus)) as ex:
            for _ in ex.map(_run_spawned, [(j, str(cache)) for j in todo]):
                done()
    stop.set()
    bar and bar.close()
    return paths


def _heartbeat(bar: Any, every: float = 10.0) -> threading.Event:
    """Redraw ``bar`` every ``every`` seconds (its elapsed time) until the returned event is set."""
    stop = threading.Event()
    if bar is not None:
        def beat() -> None:
            while not stop.wait(every):
                bar.refresh()

        threading.Thread(target=beat, daemon=True, name="progress").start()
    return stop


def _gpu_count(device: str) -> int:
    if device == "cpu":
        return 0
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


# ----------------------------------------------------------------------------- CLI


def register(msub: argparse._SubParsersAction) -> None:
    """``corpusmix mix plan`` and ``corpusmix mix proxy-run`` (under ``corpusmix mix``)."""
    p = msub.add_parser("plan", help="print one `corpusmix mix proxy-run` command per missing proxy of a search",
                        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("method", choices=("doremi", "regmix", "ablation"))
    p.add_argument("args", nargs=argparse.REMAINDER, help="the method's own arguments")
    p.set_defaults(func=cmd_plan)
    r = msub.add_parser("proxy-run", help="run one proxy job by key (from `corpusmix mix plan`)")
    r.add_argument("--cache", required=True, help="the search's proxy cache folder")
    r.add_argument("--key", required=True, help="job key (a file <cache>/jobs/<key>.json)")
    r.add_argument("--nproc", type=int, default=1, help="ranks; > 1 relaunches under torchrun (FSDP2)")
    r.set_defaults(func=cmd_proxy_run)


def cmd_plan(args: argparse.Namespace) -> int:
    from corpusmix.cli import main

    with plan_mode() as commands:
        try:
            rc = main(["mix", args.method, *args.args])
        except ProxiesPending as exc:
            for c in commands:
                print(shlex.join(c))
            print(f"corpusmix mix plan: {exc}; run the commands above (any order, any machine sharing "
                  "the cache folder), then this plan again", file=sys.stderr)
            return 0
    if rc == 0:
        print("corpusmix mix plan: every proxy run is cached; the search finished", file=sys.stderr)
    return rc


def cmd_proxy_run(args: argparse.Namespace) -> int:
    cache = Path(args.cache)
    spec = cache / "jobs" / f"{args.key}.json"
    if not spec.is_file():
        raise ConfigError(f"no job {spec}: write it with `corpusmix mix plan <method> ...` (same --cache)")
    job = json.loads(spec.read_text())
    if result_path(cache, job).exists():
        print(f"{args.key}: already done", file=sys.stderr)
        return 0
    if args.nproc > 1 and "LOCAL_RANK" not in os.environ:
        argv = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={args.nproc}",
                "-m", "corpusmix.cli", "mix", "proxy-run", "--cache", str(cache), "--key", args.key]
        return subprocess.call(argv)
    try:
        run_job(job, cache)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    return 0
