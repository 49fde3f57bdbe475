"""The local curation engine on datatrove's ``LocalPipelineExecutor`` (``corpusmix curate run``).

The command (``curate.run_cli``) reads ``params.yaml`` once into a ``curate.chain.ChainConfig`` and
runs :func:`run_local` here, or the Spark engine with the same chain. Chain (built
by ``curate.chain.build_steps``; each part switchable in ``params.yaml`` ``curate.engine.steps``)::

    read -> normalize -> decontam -> langid (+ keep/threshold) -> filters -> toxicity -> quality
         -> [global] dedup -> pii -> [global] merge

Stage ``a`` and stage ``b`` are datatrove pipelines of ``tasks`` tasks run by ``workers`` processes;
each task streams its share of the input (Parquet row groups; JSONL files, an uncompressed one over
``curate.read.jsonl_split_bytes`` in pieces cut at line starts) through the steps
(``curate.runner.run_steps``, the runner of both engines) and
writes ``OUT/work/<stage>/out/<rank>-<part>.parquet`` plus its drops (streamed, ``batch_docs`` rows
at a time) and per-step stats. dedup is global: it streams stage a's output (``id``, ``text``,
``quality_ft``; ``curate.dedup.stream``) and writes per-task verdicts, applied in stage b (which
reads its verdicts as a stream in step with its documents). The merge writes

* ``OUT/curated/<domain>.parquet`` (all input columns plus annotations, zstd),
* ``OUT/drops.parquet`` (``id, step, reason, domain``), ``OUT/stats.json`` (DVC metric).

Resumable: datatrove's completion markers skip finished tasks, outputs are renamed into place,
and global stages write a ``.done`` marker; re-running after a kill continues where it stopped.
On a Slurm cluster the same ``ChainTask`` could run under datatrove's ``SlurmPipelineExecutor``
(``pipeline=[ChainTask(...)]``, ``tasks``, ``partition``, ``time``, ``logging_dir``) followed by the
global stages; that path is not wired or tested (docs/full-scale.md).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import time
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from datatrove.data import Document
from datatrove.pipeline.base import PipelineStep

from corpusmix import timing
from corpusmix.config import ConfigError, config_from, load_params
from corpusmix.environment import environment, source_digest
from corpusmix.holds import hold
from corpusmix.logging import get_logger
from corpusmix.stats import StepStats, merge_stats, read_stats, stats_document
from corpusmix.stats import write_stats as write_task_stats
from curate import docio as cio
from curate import docwrite
from curate.chain import ChainConfig, DedupApply, EngineConfig, build_steps
from curate.inspection.collect import Collector, InspectConfig
from curate.inspection.finish import write_local as write_inspection
from curate.inspection.finish import write_state
from curate.runner import Outcome, run_steps
from curate.stats import count_read, drop_row
from curate.steps.base import CurationStep

log = get_logger("curate.engine_local")


# -- one datatrove task --------------------------------------------------------------------------

class ChainTask(PipelineStep):
    """One task: read its share of the input, run the steps, write parts, drops and stats atomically."""

    name = "curation chain"
    type = "corpusmix"

    def __init__(self, *, stage: str, work: str, inputs: list[str], read_cfg: cio.ReadConfig,
                 steps: list[CurationStep], batch_docs: int, verdicts_dir: str = "",
                 units: list[cio.Unit] | None = None, inspect: InspectConfig | None = None) -> None:
        super().__init__()
        self.stage, self.work, self.inputs = stage, work, inputs
        self.read_cfg, self.steps, self.batch_docs = read_cfg, steps, batch_docs
        self.verdicts_dir = verdicts_dir
        self.units = units  # stage a: the input's units, listed once by run_local (None: list them here)
        self.inspect = inspect  # what OUT/inspect.json needs is collected per task (curate.inspection)

    def _source(self, rank: int, world_size: int, st: StepStats) -> Iterator[Document | Outcome]:
        """This task's records: documents, and ``read`` outcomes for records that are none."""
        if self.stage == "a":
            units = (self.units if self.units is not None else
                     cio.list_units([Path(p) for p in self.inputs], self.read_cfg.jsonl_split_bytes))[rank::world_size]
        else:
            units = [cio.Unit(p, rg) for p in self.inputs if Path(p).name.startswith(f"{rank:05d}-")
                     for rg in range(pq.ParquetFile(p).metadata.num_row_groups)]
        reader = cio.RecordReader(self.read_cfg)
        for unit in units:
            for rec in reader.read_unit(unit):
                yield count_read(st, rec)

    def run(self, data: Any = None, rank: int = 0, world_size: int = 1):
        work = Path(self.work) / self.stage
        out_dir = work / "out"
        for old in out_dir.glob(f"{rank:05d}-*.parquet"):
            old.unlink()  # leftovers of a killed attempt of this task
        drops: list[tuple[str, str, str, str]] = []  # flushed every batch_docs rows: memory per task is bounded
        drop_writer = docwrite.AtomicParquetWriter(work / "drops" / f"{rank:05d}.parquet", docwrite.DROP_SCHEMA)
        stats: dict[str, StepStats] = {}
        t0 = time.perf_counter()
        read_name = cio.READ_STEP if self.stage == "a" else "reread"
        stats[read_name] = StepStats()
        steps = list(self.steps)
        if self.verdicts_dir:
            vfile = Path(self.verdicts_dir) / f"{rank:05d}.parquet"
            # one verdict row per document of this task, in the order its parts are re-read
            steps.insert(0, DedupApply(stream=_verdict_rows(vfile)) if vfile.exists() else DedupApply())
        collector = (Collector(self.inspect, count_entries=self.stage == "a")
                     if self.inspect is not None and self.inspect.enabled else None)
        try:
            part = 0
            batch: list[Document] = []
            for res in run_steps(steps, self._source(rank, world_size, stats[read_name]), stats=stats,
                                 observer=collector):
                if not res.kept:
                    drops.append(drop_row(res))
                    if len(drops) >= self.batch_docs:
                        drop_writer.write_table(docwrite.drops_table(drops))
                        drops = []
                    continue
                batch.append(res.doc)
                if len(batch) >= self.batch_docs:
                    docwrite.atomic_write_table(docwrite.docs_to_table(batch), out_dir / f"{rank:05d}-{part:05d}.parquet")
                    part += 1
                    batch = []
            if batch:
                docwrite.atomic_write_table(docwrite.docs_to_table(batch), out_dir / f"{rank:05d}-{part:05d}.parquet")
            stats[read_name].seconds = max(0.0, time.perf_counter() - t0 - sum(
                s.seconds for k, s in stats.items() if k != read_name))
            for name, s in stats.items():
                s.check(name)
            if read_name == "reread":
                stats.pop(read_name)
            drop_writer.write_table(docwrite.drops_table(drops))
            drop_writer.close()
        except BaseException:
            drop_writer.abort()  # no half-written drops file under a temporary name
            raise
        if collector is not None:
            write_state(work / "inspect" / f"{rank:05d}.json", collector)
        write_task_stats(work / "stats" / f"{rank:05d}.json", stats)
        return
        yield  # a generator, as datatrove expects


def _verdict_rows(path: Path) -> Iterator[tuple[str, str, bool, str | None]]:
    """``(id, dup_cluster, is_duplicate, dup_kind)`` rows of a verdict file, 65,536 at a time."""
    for b in pq.ParquetFile(path, pre_buffer=False).iter_batches(batch_size=65_536,
                                                columns=["id", "dup_cluster", "is_duplicate", "dup_kind"]):
        yield from zip(*(b.column(i).to_pylist() for i in range(4)), strict=True)


# -- global stages -------------------------------------------------------------------------------

def _parts(work: Path, stage: str) -> list[Path]:
    return sorted((work / stage / "out").glob("*.parquet"))


def run_dedup(work: Path, params_path: str) -> None:
    """Global dedup over stage a's kept documents; writes verdicts per task and its stats.

    Bounded memory (``curate.dedup.stream``): texts are streamed from the parts, never held."""
    from curate.dedup import DedupConfig
    from curate.dedup.stream import write_verdicts

    done = work / "dedup" / ".done"
    if done.exists():
        return
    dcfg = config_from(DedupConfig, params=load_params(params_path, "dedup"), where="dedup")
    t0 = time.perf_counter()
    res = write_verdicts(_parts(work, "a"), work / "dedup" / "verdicts", dcfg)
    st = StepStats(docs_in=res["docs_in"], bytes_in=res["bytes_in"])
    st.dropped.update(res["dropped"])
    st.kept = st.docs_in - sum(st.dropped.values())
    st.seconds = time.perf_counter() - t0
    write_task_stats(work / "dedup" / "stats.json", {"dedup_global": st})
    done.touch()


_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def run_merge(work: Path, out: Path, last_stage: str, step_order: list[str],
              calibration: dict[str, Any] | None = None, guard_share: float = 0.3) -> dict[str, Any]:
    """Per-domain curated Parquet, drops.parquet, stats.json (streamed part by part)."""
    parts = _parts(work, last_stage)
    schema = docwrite.unified_schema(parts)
    curated = out / "curated"
    if curated.exists():
        shutil.rmtree(curated)
    writers: dict[str, docwrite.AtomicParquetWriter] = {}
    kept = 0
    for p in parts:
        t = docwrite.conform(pq.read_table(p), schema)
        kept += t.num_rows
        doms = t.column("domain").to_pylist()
        for dom in dict.fromkeys(doms):
            name = _SAFE.sub("_", dom or "unknown")
            w = writers.get(name)
            if w is None:
                w = writers[name] = docwrite.AtomicParquetWriter(curated / f"{name}.parquet", schema)
            w.write_table(t.filter(pa.array([d == dom for d in doms])))
    for w in writers.values():
        w.close()
    drop_files = sorted((work / "a" / "drops").glob("*.parquet")) + sorted((work / "b" / "drops").glob("*.parquet"))
    with docwrite.AtomicParquetWriter(out / "drops.parquet", docwrite.DROP_SCHEMA) as dw:
        for f in drop_files:
            for b in pq.ParquetFile(f, pre_buffer=False).iter_batches(batch_size=65_536):
                dw.write_table(pa.Table.from_batches([b]))
    stat_files = sorted((work / "a" / "stats").glob("*.json")) + sorted((work / "b" / "stats").glob("*.json"))
    steps = merge_stats((read_stats(f) for f in stat_files), order=step_order)
    gd = work / "dedup" / "stats.json"
    if gd.exists() and "dedup" in steps:
        steps["dedup"]["seconds"] = round(steps["dedup"]["seconds"] + json.loads(gd.read_text())
                                          ["dedup_global"]["seconds"], 4)
    doc = stats_document(steps, kept=kept)
    if calibration is not None:  # per-domain kept shares and the loud guard (curate.calibrate)
        from curate.calibrate import local_guard, verdicts_of, write_verdicts

        doc.update(local_guard(out, calibration, guard_share))
        doc.update(verdicts_of(calibration))
        write_verdicts(curated, calibration)
    doc["environment"] = environment()
    # per-step seconds go to the untracked stats.timing.json: stats.json is a DVC output (pure)
    timing.write_json(out / "stats.json", doc)
    return doc


# -- the command ---------------------------------------------------------------------------------

def _phase(name: str) -> None:
    """A phase marker in the structured log: where a run was when it stopped (the kill tests steer by it).

    ``CORPUSMIX_PHASE_HOLD=<phase>=seconds`` pauses the run right after the marker
    (:mod:`corpusmix.holds`): the clean-up of a small run lasts a few ms, too short for a kill that
    reacts to its marker."""
    log.info("phase", extra={"data": {"phase": name}})
    hold(name)


def _claim_work(out: Path, work: Path, fingerprint: str, restart_stale: bool) -> None:
    """Mark ``work`` as this run's; the work of a run with another fingerprint stops the command, or
    with ``restart_stale`` is discarded (renamed, then deleted: a kill leaves the old work or none)."""
    fp_file = work / "fingerprint"
    if fp_file.exists() and fp_file.read_text() != fingerprint:
        if not restart_stale:
            raise ConfigError(f"{str(out)!r} holds a run with other inputs, params or code; use a new --output, "
                              f"delete {str(work)!r} or pass --restart-stale true")
        log.info("discarding the work of a run with other inputs, params or code", extra={"data": {"work": str(work)}})
        stale = out / f".work-trash-{os.getpid()}"
        work.rename(stale)
        shutil.rmtree(stale, ignore_errors=True)  # a kill here: run_local sweeps .work-trash-* later
        work.mkdir(parents=True)
    fp_file.write_text(fingerprint)


def run_local(*, inputs: str | Path, output: str | Path, params_path: str | Path = "params.yaml",
              cfg: EngineConfig | None = None, read_cfg: cio.ReadConfig | None = None,
              chain: ChainConfig | None = None) -> dict[str, Any]:
    """Run the whole chain; returns the stats document. Safe to re-run after a kill.

    ``chain`` holds the params read once by the command; without it ``params_path`` is read here
    (``cfg``/``read_cfg`` override its ``curate.engine``/``curate.read`` sections).
    """
    from datatrove.executor import LocalPipelineExecutor

    chain = chain or ChainConfig.load(params_path, engine=cfg, read=read_cfg)
    cfg, read_cfg = chain.engine, chain.read
    files = cio.list_input_files(inputs)
    cio.check_inputs(files, read_cfg, folder=Path(inputs).is_dir())
    steps_a = build_steps(chain, stage="a")  # builds (and validates) every step up front
    steps_b = build_steps(chain, stage="b")
    out, work = Path(output), Path(output) / "work"
    work.mkdir(parents=True, exist_ok=True)
    engine_fp = {k: v for k, v in asdict(cfg).items() if k != "restart_stale"}  # how to treat a stale run
    params_fp = json.loads(json.dumps(chain.params, default=str))  # the same, as written in params.yaml
    ((params_fp.get("curate") or {}).get("engine") or {}).pop("restart_stale", None)
    fingerprint = hashlib.sha256(json.dumps({
        "inputs": [str(f) for f in files], "engine": engine_fp, "read": asdict(read_cfg),
        "params": params_fp, "decontam_index": [getattr(s, "index_path", "") for s in steps_a],
        "code": source_digest("curate", "corpusmix"), "packages": environment()["packages"]},
        sort_keys=True, default=str).encode()).hexdigest()[:16]
    _claim_work(out, work, fingerprint, cfg.restart_stale)
    # listed once (a big JSONL file is cut into pieces by counting its lines): calibration and every
    # stage-a task read these units
    units = cio.list_units(files, read_cfg.jsonl_split_bytes)
    calibration = _calibrate(steps_a, files, read_cfg, chain.calibrate, out, units, min(cfg.workers, cfg.tasks))
    # stats.json marks a finished run: it goes first and is written last, so a run killed anywhere
    # never leaves a stale marker next to half-rewritten outputs
    (out / "stats.json").unlink(missing_ok=True)
    (out / "inspect.json").unlink(missing_ok=True)  # written just before stats.json, for this run only
    for trash in out.glob(".work-trash-*"):  # a kill during the clean-up of an earlier run
        shutil.rmtree(trash, ignore_errors=True)
    t0 = time.perf_counter()
    tasks = cfg.tasks

    def execute(stage: str, inp: list[str], steps: list[CurationStep], verdicts: str = "") -> None:
        LocalPipelineExecutor(
            pipeline=[ChainTask(stage=stage, work=str(work), inputs=inp, read_cfg=read_cfg, steps=steps,
                                batch_docs=cfg.batch_docs, verdicts_dir=verdicts,
                                units=units if stage == "a" else None, inspect=chain.inspect)],
            tasks=tasks, workers=min(cfg.workers, tasks), logging_dir=str(work / "logs" / stage),
            skip_completed=True).run()

    log.info("stage a", extra={"data": {"tasks": tasks, "steps": [s.step_name for s in steps_a]}})
    _phase("stage a")
    execute("a", [str(f) for f in files], steps_a)
    order = [cio.READ_STEP] + [s.step_name for s in steps_a]
    last = "a"
    dedup_on = "dedup" in cfg.steps
    if dedup_on:
        _phase("dedup")
        run_dedup(work, _frozen_params(work, chain))
    if dedup_on or steps_b:
        _phase("stage b")
        execute("b", [str(p) for p in _parts(work, "a")], steps_b,
                verdicts=str(work / "dedup" / "verdicts") if dedup_on else "")
        order += (["dedup"] if dedup_on else []) + [s.step_name for s in steps_b]
        last = "b"
    _phase("merge")
    if chain.inspect is not None and chain.inspect.enabled:
        write_inspection(work, out, chain.inspect, order=order, last_stage=last,
                         pii_step=next((s for s in steps_b if s.step_name == "pii"), None))
    doc = run_merge(work, out, last, order, calibration, guard_share=chain.calibrate.guard_share)
    if not cfg.keep_work:
        _phase("clean-up")
        # renamed first (atomic): a kill mid-delete can never leave completion markers without
        # the parts they stand for
        trash = out / f".work-trash-{os.getpid()}"
        work.rename(trash)
        shutil.rmtree(trash)
    log.info("curate run done", extra={"data": {"seconds": round(time.perf_counter() - t0, 2), **doc["totals"]}})
    return doc


def _frozen_params(work: Path, chain: ChainConfig) -> str:
    """The chain's params as read at the command's edge, written once into the work folder.

    The global dedup stage reads its ``dedup`` section from this file, never from the user's params
    file again: the stage sees the values the run was fingerprinted with, even if that file changed."""
    import yaml

    path = work / "params.yaml"
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(yaml.safe_dump(chain.params, sort_keys=True))
    tmp.replace(path)
    return str(path)


def _calibrate(steps: list[CurationStep], files: list[Path], read_cfg: cio.ReadConfig, ccfg: Any,
               out: Path, units: list[cio.Unit] | None = None, workers: int = 1) -> dict[str, Any] | None:
    """Calibrate the steps once over the whole input (before any task) and write OUT/calibration.json.

    A resumed run (same fingerprint) reloads the calibration it wrote, so all tasks agree."""
    from dataclasses import replace

    from curate.calibrate import calibrate_steps

    target = out / "calibration.json"
    if not ccfg.file and target.exists() and (out / "work" / ".calibrated").exists():
        ccfg = replace(ccfg, file=str(target))
    doc = calibrate_steps(steps, inputs=[str(f) for f in files], read_cfg=read_cfg, cfg=ccfg, units=units,
                          workers=workers)
    if doc is not None and Path(ccfg.file or "").resolve() != target.resolve():
        tmp = out / ".calibration.json.tmp"
        tmp.write_text(json.dumps(doc, indent=1) + "\n")
        tmp.replace(target)
    (out / "work" / ".calibrated").touch()
    return doc
