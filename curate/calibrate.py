"""Per-domain calibration of the curation decisions, and the loud guard.

``calibrate_steps(steps, inputs=..., read_cfg=...)`` is called by every engine before any task
starts (``corpusmix curate run``, local or Spark). It reads the whole input once (the local
engine: in as many processes as it has workers, ``sample_input``; Spark: on the driver), keeps a
deterministic sample per domain (the ``max_docs_per_domain`` documents with the smallest
``sha1(id)``: independent of file order, partitions and engine), runs the chain's steps on it in
order, and lets every step that calibrates (``fit`` / ``set_calibration``: the per-domain language
filter and the ``auto`` filter profile) choose its thresholds from the documents that reach it.
The result is one readable JSON document (``OUT/calibration.json``, a DVC output): per domain its
document count, language, the thresholds chosen and whether it fell back to global thresholds.
``curate.calibrate.file`` pins a reviewed calibration instead (nothing is recomputed).

``corpusmix curate calibrate --input RAW --output FILE`` (``curate.calibrate_cli``) writes the same
file without curating.

The guard (``guard_report``): after a run, every (domain, step, reason) that removed more than
``guard_share`` of the domain's documents is logged as a warning and listed in ``stats.json``
(``guard``), next to a per-domain table (``domains``: docs in, kept share, top drop reasons).
"""

from __future__ import annotations

import hashlib
import heapq
import json
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from datatrove.data import Document

from corpusmix.config import ConfigError
from corpusmix.logging import get_logger

log = get_logger("curate.calibrate")
VERSION = 1


@dataclass
class CalibrateConfig:
    file: str = field(default="", metadata={
        "help": "pinned calibration JSON to use instead of calibrating (e.g. a reviewed OUT/calibration.json)"})
    max_docs_per_domain: int = field(default=1000, metadata={
        "help": "documents sampled per domain (smallest sha1(id)): bounds the cost on big inputs"})
    guard_share: float = field(default=0.3, metadata={
        "help": "warn when one drop reason removes more than this share of a domain"})

    def __post_init__(self) -> None:
        if self.max_docs_per_domain < 1:
            raise ConfigError("curate.calibrate.max_docs_per_domain must be >= 1")
        if not 0 < self.guard_share <= 1:
            raise ConfigError("curate.calibrate.guard_share must be in (0, 1]")


def _needs(step: Any) -> bool:
    return hasattr(step, "set_calibration") and getattr(step, "needs_calibration", True)


#: below this much input (bytes of the files) the sample is read in one process: spawning readers costs more
PARALLEL_MIN_BYTES = 256 << 20

Partial = tuple[dict[str, list[tuple[int, str, Document]]], dict[str, int]]


def sample_key(doc_id: str) -> int:
    """A document's sampling key: the first 60 bits of ``sha1(id)``; the sample keeps the smallest."""
    return int(hashlib.sha1(doc_id.encode("utf-8")).hexdigest()[:15], 16)


def push_smallest(heap: list[Any], entry: tuple[Any, ...], k: int) -> None:
    """Keep in ``heap`` (a heap of ``(-key, id, ...)`` entries) the ``k`` entries of smallest key."""
    if len(heap) < k:
        heapq.heappush(heap, entry)
    elif entry[0] > heap[0][0]:
        heapq.heapreplace(heap, entry)


def sample_units(units: list[Any], read_cfg: Any, max_docs: int) -> Partial:
    """One reader over ``units``: per domain its ``max_docs`` smallest ``(key, id, document)``, sorted,
    and the documents read per domain (records the reader drops, repeated ids included, are not)."""
    from curate import docio as cio

    reader = cio.RecordReader(read_cfg)
    heaps: dict[str, list[tuple[int, str, Document]]] = defaultdict(list)
    counts: dict[str, int] = defaultdict(int)
    for unit in units:
        for rec in reader.read_unit(unit):
            if isinstance(rec, cio.Drop):  # a repeated id is a Drop of the reader (duplicate_id)
                continue
            dom = rec.metadata.get("domain") or "unknown"
            counts[dom] += 1
            push_smallest(heaps[dom], (-sample_key(rec.id), rec.id, rec), max_docs)
    return ({d: sorted(((-k, i, r) for k, i, r in h), key=lambda x: (x[0], x[1])) for d, h in heaps.items()},
            dict(counts))


def merge_samples(parts: list[Partial], max_docs: int) -> tuple[dict[str, list[Document]], dict[str, int]]:
    """The ``max_docs`` smallest keys per domain of the union of ``parts`` (smallest-k sets merge
    exactly: the union's smallest k are among each part's smallest k); counts summed. An id sampled
    by two parts (a repeated id read by two readers) is kept once, from the first part."""
    cand: dict[str, list[tuple[int, str, Document]]] = defaultdict(list)
    counts: dict[str, int] = defaultdict(int)
    for sample, cnt in parts:
        for d, rows in sample.items():
            cand[d].extend(rows)
        for d, n in cnt.items():
            counts[d] += n
    out: dict[str, list[Document]] = {}
    for d in sorted(cand):
        seen: set[str] = set()
        keep: list[Document] = []
        for _, i, r in sorted(cand[d], key=lambda x: (x[0], x[1])):  # stable: the earlier part first
            if i not in seen and len(keep) < max_docs:
                seen.add(i)
                keep.append(r)
        out[d] = keep
    return out, dict(sorted(counts.items()))


def sample_input(inputs: list[str], read_cfg: Any, max_docs: int, units: list[Any] | None = None,
                 workers: int = 1, parallel_min_bytes: int = PARALLEL_MIN_BYTES
                 ) -> tuple[dict[str, list[Document]], dict[str, int]]:
    """(deterministic sample per domain, documents read per domain); ``units``: the inputs' units
    when the caller has listed them already (``docio.list_units``).

    The whole input is read (to count every domain and find the smallest keys). With ``workers`` > 1
    and at least ``parallel_min_bytes`` of input files, ``workers`` processes read every ``workers``-th unit
    each and their samples are merged: the same sample as one reader, except that an id repeated
    in units of two processes is counted by both (as the engine's tasks count it)."""
    import os
    from concurrent.futures import ProcessPoolExecutor
    from itertools import repeat
    from multiprocessing import get_context

    from curate import docio as cio

    if units is None:
        files = cio.list_input_files(inputs[0]) if len(inputs) == 1 else [
            f for p in inputs for f in cio.list_input_files(p)]
        units = cio.list_units(files, getattr(read_cfg, "jsonl_split_bytes", 0))
    n = min(max(1, workers), len(units))
    if n > 1 and sum(os.path.getsize(p) for p in {u.path for u in units}) < parallel_min_bytes:
        n = 1
    if n == 1:
        return merge_samples([sample_units(units, read_cfg, max_docs)], max_docs)
    t0 = time.perf_counter()
    with ProcessPoolExecutor(n, mp_context=get_context("spawn")) as ex:  # spawn: no fork of loaded models
        parts = list(ex.map(sample_units, [units[r::n] for r in range(n)], repeat(read_cfg), repeat(max_docs)))
    log.info("calibration sample read", extra={"data": {"processes": n, "units": len(units),
                                                        "seconds": round(time.perf_counter() - t0, 2)}})
    return merge_samples(parts, max_docs)


def fit_steps(steps: list[Any], sample: dict[str, list[Document]]) -> dict[str, Any]:
    """Run ``steps`` in order over ``sample``; calibrate those that calibrate; return their sections."""
    sections: dict[str, Any] = {}
    todo = [s for s in steps if _needs(s)]
    docs = {d: list(v) for d, v in sample.items()}
    for step in steps:
        if not todo:
            break
        if step in todo:
            section = step.fit(docs)
            step.set_calibration(section)
            sections[step.calibration_key] = section
            todo.remove(step)
            if not todo:
                break
        kept: dict[str, list[Document]] = {}
        for dom, ds in docs.items():
            kept[dom] = []
            for d in ds:
                res = step.filter(d)
                if res is True or (isinstance(res, tuple) and res[0]):
                    kept[dom].append(d)
        docs = kept
    return sections


def calibrate_steps(steps: list[Any], *, inputs: list[str], read_cfg: Any,
                    cfg: CalibrateConfig | None = None, units: list[Any] | None = None,
                    workers: int = 1, sampler: Callable[[int], Any] | None = None) -> dict[str, Any] | None:
    """Calibrate (or load the pinned calibration into) every step that needs it; the document or None.

    ``units``: the inputs' units (``docio.list_units``) when the engine has listed them already;
    ``workers``: processes that read the input for the sample (``sample_input``); ``sampler``: reads
    the sample instead (called with ``max_docs_per_domain``, returns what ``sample_input`` returns;
    the Spark engine's executors)."""
    cfg = cfg or CalibrateConfig()
    needing = [s for s in steps if _needs(s)]
    if not needing:
        return None
    if cfg.file:
        p = Path(cfg.file)
        if not p.is_file():
            raise ConfigError(f"curate.calibrate.file {cfg.file!r} does not exist; remove it to calibrate "
                              "on the input, or write one with `corpusmix curate calibrate`")
        doc = json.loads(p.read_text())
        for s in needing:
            if s.calibration_key not in doc.get("steps", {}):
                raise ConfigError(f"pinned calibration {cfg.file!r} has no section {s.calibration_key!r}; "
                                  "recalibrate with `corpusmix curate calibrate`")
            s.set_calibration(doc["steps"][s.calibration_key])
        log.info("calibration pinned", extra={"data": {"file": cfg.file}})
        return doc
    if sampler is not None:
        sample, counts = sampler(cfg.max_docs_per_domain)
    else:
        sample, counts = sample_input([str(i) for i in inputs], read_cfg, cfg.max_docs_per_domain, units, workers)
    sections = fit_steps(steps, sample)
    doc = {"version": VERSION, "max_docs_per_domain": cfg.max_docs_per_domain,
           "domain_docs": counts, "sampled": {d: len(v) for d, v in sample.items()}, "steps": sections}
    for key, sec in sections.items():
        for dom, d in (sec.get("domains") or {}).items():
            if d.get("fallback"):
                log.warning("domain calibrated with fallback", extra={"data": {
                    "step": key, "domain": dom, "docs": d.get("docs"), "fallback": d["fallback"]}})
    return doc


def verdicts_of(calibration: dict[str, Any] | None) -> dict[str, Any]:
    """``{"domain_verdicts": {domain: {junk_share, verdict, why}}, "garbage_domains": [...]}`` of a
    calibration document (empty without the ``auto`` filter profile)."""
    sec = ((calibration or {}).get("steps") or {}).get("filters") or {}
    doms = {d: {k: e.get(k) for k in ("junk_share", "verdict", "why")}
            for d, e in (sec.get("domains") or {}).items() if "verdict" in e}
    if not doms:
        return {}
    return {"domain_verdicts": doms, "garbage_domains": sorted(d for d, e in doms.items() if e["verdict"] == "garbage")}


def write_verdicts(curated: Path, calibration: dict[str, Any] | None) -> None:
    """``curated/domain_verdicts.json`` next to the domains' Parquet files: what the pools (and so the
    mixture search) read to keep a garbage domain out of the targets."""
    v = verdicts_of(calibration)
    if not v:
        return
    curated.mkdir(parents=True, exist_ok=True)
    tmp = curated / ".domain_verdicts.json.tmp"
    tmp.write_text(json.dumps(v, indent=1, sort_keys=True) + "\n")
    tmp.replace(curated / "domain_verdicts.json")


# -- the loud guard ---------------------------------------------------------------------------

def guard_report(drop_counts: list[tuple[str, str, str, int]], domain_docs: dict[str, int], *,
                 share: float = 0.3, kept: dict[str, int] | None = None) -> dict[str, Any]:
    """``{"guard": [...], "domains": {...}}`` from (domain, step, reason, count) rows of a run."""
    by_dom: dict[str, dict[str, int]] = defaultdict(dict)
    for dom, step, reason, n in drop_counts:
        key = f"{step}:{reason}"
        d = by_dom[dom or "unknown"]
        d[key] = d.get(key, 0) + int(n)
    guard = []
    table: dict[str, Any] = {}
    for dom in sorted(set(domain_docs) | set(by_dom)):
        n_in = int(domain_docs.get(dom, 0))
        reasons = by_dom.get(dom, {})
        dropped = sum(reasons.values())
        top = sorted(reasons.items(), key=lambda x: (-x[1], x[0]))[:5]
        table[dom] = {"docs_in": n_in, "dropped": dropped,
                      "kept": kept.get(dom, n_in - dropped) if kept else n_in - dropped,
                      "kept_share": round(1 - dropped / n_in, 4) if n_in else None,
                      "top_reasons": {k: v for k, v in top}}
        for key, n in sorted(reasons.items()):
            if n_in and n / n_in > share:
                step, _, reason = key.partition(":")
                guard.append({"domain": dom, "step": step, "reason": reason, "dropped": n,
                              "share": round(n / n_in, 4), "limit": share})
    for g in guard:
        log.warning("one rule removes a large share of a domain", extra={"data": g})
    return {"guard": guard, "domains": table}


def local_guard(out: Path, calibration: dict[str, Any] | None, share: float) -> dict[str, Any]:
    """The guard of a local run, from ``OUT/drops.parquet`` (read steps' drops included)."""
    import pyarrow.parquet as pq

    counts: dict[tuple[str, str, str], int] = defaultdict(int)
    drops = out / "drops.parquet"
    if drops.exists():
        t = pq.read_table(drops, columns=["domain", "step", "reason"])
        for dom, step, reason in zip(*(t.column(c).to_pylist() for c in ("domain", "step", "reason")), strict=True):
            counts[(dom or "unknown", step, reason)] += 1
    docs = dict((calibration or {}).get("domain_docs") or {})
    return guard_report([(*k, n) for k, n in sorted(counts.items())], docs, share=share)
