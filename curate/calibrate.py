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

``corpusmix curate calibrate --input RAW --output FILE`` writes the same file without curating.

The guard (``guard_report``): after a run, every (domain, step, reason) that removed more than
``guard_share`` of the domain's documents is logged as a warning and listed in ``stats.json``
(``guard``), next to a per-domain table (``domains``: docs in, kept share, top drop reasons).
"""

from __future__ import annotations

import argparse
import hashlib
import heapq
import json
import statistics
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from datatrove.data import Document

from corpusmix.config import ConfigError, add_config_args, config_from, load_params
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


# -- the auto filter profile's calibration ----------------------------------------------------

def _robust(values: list[float], direction: str, k: float, floor: float) -> tuple[float | None, float | None]:
    med = statistics.median(values)
    spread = max(1.4826 * statistics.median(abs(v - med) for v in values), floor)
    lo = round(med - k * spread, 4) if direction in ("low", "both") else None
    hi = round(med + k * spread, 4) if direction in ("high", "both") else None
    return lo, hi


def fit_filter_calibration(cfg: Any, docs_by_domain: dict[str, list[Document]]) -> dict[str, Any]:
    """Word-order model over all sampled documents + robust outlier thresholds per domain."""
    from curate.steps.garbage import CalibratedFilter, to_scale
    from curate.textstats import STYLE_STATS, WordOrderModel, segments

    everything = [d.text for dom in sorted(docs_by_domain) for d in docs_by_domain[dom]]
    order = WordOrderModel.fit(everything, k=cfg.word_order_vocab)
    df: dict[str, int] = defaultdict(int)
    for t in everything:
        for seg in set(segments(t)):
            df[seg] += 1
    min_df = max(cfg.boilerplate_min_docs, int(0.001 * len(everything)))
    frequent = sorted((s for s, n in df.items() if n >= min_df), key=lambda s: (-df[s], s))[:5000]
    probe = CalibratedFilter(cfg)  # the decision code itself, so calibration and run never disagree
    probe.set_calibration({"word_order": order.to_dict(), "frequent_segments": frequent, "domains": {}})
    domains: dict[str, Any] = {}
    for dom in sorted(docs_by_domain):
        docs = docs_by_domain[dom]
        lang_counts: dict[str, int] = defaultdict(int)
        for d in docs:
            if d.metadata.get("lang"):
                lang_counts[d.metadata["lang"]] += 1
        language = min(lang_counts.items(), key=lambda x: (-x[1], x[0]))[0] if lang_counts else cfg.language
        entry: dict[str, Any] = {"docs": len(docs), "language": language}
        probe.domains = {dom: {"language": language}}
        stats = [probe.measure(d, probe.domains[dom]) for d in docs]
        # thresholds from the documents that are not garbage: a domain's garbage must not widen them
        reasons = [probe.doc_garbage(d, s, probe.domains[dom], dom) for d, s in zip(docs, stats, strict=True)]
        clean = [s for s, r in zip(stats, reasons, strict=True) if r is None]
        entry["garbage_share"] = round(1 - len(clean) / len(stats), 4) if stats else 0.0
        entry.update(domain_verdict(reasons, cfg))
        if len(clean) < cfg.min_domain_docs:
            entry["fallback"] = (f"global: {len(clean)} non-garbage documents < min_domain_docs "
                                 f"{cfg.min_domain_docs}; garbage rules only")
            entry["thresholds"] = {}
        else:
            entry["fallback"] = None
            th = {}
            for stat, direction in STYLE_STATS.items():
                vals = [to_scale(stat, s[stat]) for s in clean if s.get(stat) is not None]
                if len(vals) >= cfg.min_domain_docs:
                    th[stat] = list(_robust(vals, direction, cfg.outlier_k, cfg.outlier_min_spread))
            entry["thresholds"] = th
        domains[dom] = entry
    garbage_domains = sorted(d for d, e in domains.items() if e["verdict"] == "garbage")
    if garbage_domains:
        log.warning("domains judged mostly garbage", extra={"data": {
            "domains": {d: domains[d]["junk_share"] for d in garbage_domains}}})
    return {"profile": "auto", "garbage_domains": garbage_domains, "garbage": {
        "min_dict_share": cfg.garbage_min_dict_share, "min_vocab_richness": cfg.garbage_min_vocab_richness,
        "max_compress_ratio": cfg.garbage_max_compress_ratio,
        "min_words_per_line": cfg.garbage_min_words_per_line, "min_word_order": cfg.garbage_min_word_order,
        "min_word_order_long": [cfg.garbage_min_word_order_long, cfg.word_order_long_pairs],
        "max_boilerplate_share": cfg.garbage_max_boilerplate_share},
        "scale": "log for words_per_line, mean_word_len, compress_ratio; linear for shares",
        "domains": domains, "frequent_segments": frequent, "word_order": order.to_dict()}


def domain_verdict(reasons: list[str | None], cfg: Any) -> dict[str, Any]:
    """A domain's junk score and verdict from the stage-1 reasons of its sampled documents.

    The detectors' thresholds are fixed (what natural-language text of any register meets), not
    fitted on the domain, so the score compares the domain with that reference, not with itself.
    ``verdict``: ``garbage`` (junk share >= ``domain_max_junk_share``), ``ok``, or ``unknown`` with
    fewer than ``verdict_min_docs`` sampled documents; ``why`` says which."""
    n = len(reasons)
    junk = sum(r is not None for r in reasons)
    share = round(junk / n, 4) if n else 0.0
    top = sorted(Counter(r for r in reasons if r).items(), key=lambda x: (-x[1], x[0]))[:3]
    kinds = ", ".join(f"{r} {c}" for r, c in top)
    if n < cfg.verdict_min_docs:
        return {"junk_share": share, "verdict": "unknown",
                "why": f"{n} sampled documents < verdict_min_docs {cfg.verdict_min_docs}"}
    if share >= cfg.domain_max_junk_share:
        return {"junk_share": share, "verdict": "garbage",
                "why": f"{junk} of {n} sampled documents fail the garbage detectors ({kinds})"}
    return {"junk_share": share, "verdict": "ok",
            "why": f"{junk} of {n} sampled documents fail the garbage detectors" + (f" ({kinds})" if kinds else "")}


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


# -- the command --------------------------------------------------------------------------------

def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("calibrate", help="choose per-domain thresholds on the input and write them (JSON)",
                       description=__doc__.split("\n\n")[0])
    p.add_argument("--input", required=True, help="Parquet/JSONL file or folder (the raw input of `curate run`)")
    p.add_argument("--output", required=True, help="calibration JSON to write")
    p.add_argument("--params", default="params.yaml", help="params file (sections curate.*)")
    add_config_args(p, CalibrateConfig)

    def _cmd(args: argparse.Namespace) -> int:
        from curate.chain import ChainConfig, build_steps, section

        params = load_params(args.params)  # read once, here
        cfg = config_from(CalibrateConfig, params=section(params, "curate.calibrate"), args=args,
                          where="curate.calibrate")
        cfg.file = ""  # this command always calibrates
        chain = ChainConfig.from_params(params, params_path=str(args.params))
        doc = calibrate_steps(build_steps(chain, stage="a"), inputs=[args.input], read_cfg=chain.read, cfg=cfg,
                              workers=chain.engine.workers)
        if doc is None:
            raise ConfigError("no step of curate.engine.steps needs a calibration (profile web, per_domain off)")
        out = Path(args.output)
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(out.name + ".tmp")
        tmp.write_text(json.dumps(doc, indent=1) + "\n")
        tmp.replace(out)
        print(json.dumps({"output": str(out), "domains": doc["domain_docs"]}))
        return 0

    p.set_defaults(func=_cmd)
