"""Collecting what the inspection view shows, while the steps run (every engine, every task).

A :class:`Collector` is handed to :func:`curate.runner.run_steps` as its ``observer``: it sees every
document entering the chain, every step's batch with the step's results, and every ready-made
outcome (the reader's drops). Per step and domain it keeps, in memory bounded by the config:

* counts: documents in, kept, dropped by reason (the same counts as ``stats.json``, per domain);
* a histogram (``bins`` fixed bins over :data:`curate.inspection.probes.STAT_RANGES`) of every
  statistic the step's rules compare (:mod:`curate.inspection.probes`);
* the ``samples_per_rule`` dropped documents of every reason with the smallest
  ``curate.calibrate.sample_key`` (sha1 of the id: a uniform sample, the same whatever the
  partitioning, task count or engine);
* the ``near_misses_per_rule`` kept documents closest to every rule's threshold (ties by key);
* language-ID labels per domain (kept / dropped by the language filter), evaluation-set hits per
  benchmark, and the duplicates per dedup cluster (at most ``cluster_cap`` clusters per unit).

Texts are kept as read (first ``capture_chars`` characters): redaction happens once, when the run's
samples are final (:mod:`curate.inspection.finish`). A unit's state is a JSON document; states of
tasks, partitions and stages merge exactly (:func:`merge_states`), except clusters beyond the cap.
"""

from __future__ import annotations

import heapq
import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from datatrove.data import Document
from datatrove.pipeline.filters.base_filter import get_filter_result

from corpusmix.config import ConfigError
from curate.inspection.probes import Probe, bin_of, probe_for

STATE_VERSION = 1


@dataclass
class InspectConfig:
    """What a curation run records for ``corpusmix inspect`` (``params.yaml`` ``curate.inspect``)."""

    enabled: bool = field(default=True, metadata={"help": "record samples and histograms (OUT/inspect.json)"})
    samples_per_rule: int = field(default=8, metadata={
        "help": "dropped documents kept per (domain, step, reason): smallest sha1(id)"})
    near_misses_per_rule: int = field(default=6, metadata={
        "help": "kept documents nearest each rule's threshold, per (domain, rule)"})
    max_chars: int = field(default=1000, metadata={"help": "characters of a sample's text shown (after redaction)"})
    max_rules_per_domain: int = field(default=24, metadata={
        "help": "reasons (by count) and rules per domain whose texts are kept; the others: counts only"})
    bins: int = field(default=60, metadata={"help": "histogram bins per statistic"})
    top_clusters: int = field(default=20, metadata={"help": "largest dedup clusters listed"})
    cluster_cap: int = field(default=10_000, metadata={
        "help": "dedup clusters counted per task or partition (the largest kept beyond it)"})
    mask_person_names: bool = field(default=True, metadata={
        "help": "also replace person names (Census name lists, curate.steps.person_names) by <PERSON> in every "
                "text shown: the PII step keeps names unless pii.entities holds PERSON"})

    def __post_init__(self) -> None:
        for name in ("samples_per_rule", "near_misses_per_rule", "max_chars", "max_rules_per_domain", "bins",
                     "top_clusters", "cluster_cap"):
            if getattr(self, name) < (1 if name in ("max_chars", "bins", "cluster_cap") else 0):
                raise ConfigError(f"curate.inspect.{name} must be >= {1 if name in ('max_chars', 'bins') else 0}")

    @property
    def capture_chars(self) -> int:
        """Characters captured before redaction: enough that redacting, then cutting, never shows a
        value cut in half at the capture's end (:func:`curate.inspection.finish.shown_text`)."""
        return 2 * self.max_chars + 512


def _push(heap: list[Any], entry: tuple[Any, ...], k: int) -> None:
    """Keep in ``heap`` the ``k`` largest entries (entries are negated keys: the smallest keys win),
    compared as whole tuples so that ties never depend on arrival order."""
    if k <= 0:
        return
    if len(heap) < k:
        heapq.heappush(heap, entry)
    elif entry > heap[0]:
        heapq.heapreplace(heap, entry)


def _key(doc_id: str) -> int:
    """``curate.calibrate.sample_key``: the calibration's sample key, so both samples agree."""
    global _sample_key
    if _sample_key is None:
        from curate.calibrate import sample_key

        _sample_key = sample_key
    return _sample_key(str(doc_id))


_sample_key: Any = None


class Collector:
    """The observer of :func:`curate.runner.run_steps` for one unit of work (a task, a partition)."""

    def __init__(self, cfg: InspectConfig, *, count_entries: bool = True) -> None:
        self.cfg = cfg
        self.count_entries = count_entries
        self.domains: Counter[str] = Counter()
        self.counts: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
        self.hist: dict[tuple[str, str, str], list[Any]] = {}  # [lo, hi, scale, counts]
        self.missing: Counter[tuple[str, str, str]] = Counter()
        self.samples: dict[tuple[str, str, str], list[Any]] = defaultdict(list)
        self.near: dict[tuple[str, str, str], list[Any]] = defaultdict(list)
        self.rules: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(dict)
        self.lang: dict[str, Counter[str]] = defaultdict(Counter)
        self.lang_dropped: dict[str, Counter[str]] = defaultdict(Counter)
        self.decontam: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
        self.clusters: dict[str, list[int]] = {}
        self.clusters_pruned = 0
        self._probes: dict[int, Probe] = {}
        self._rule_objs: dict[tuple[str, str], list[Any]] = {}

    # -- observer protocol (curate.runner.run_steps) ---------------------------------------------
    def entered(self, doc: Document) -> None:
        if self.count_entries:
            self.domains[doc.metadata.get("domain") or "unknown"] += 1

    def ready(self, outcome: Any) -> None:
        """A ready-made outcome (the reader's drop): counted under its step, no text."""
        dom = outcome.doc.metadata.get("domain") or "unknown"
        if self.count_entries:
            self.domains[dom] += 1
        c = self._count(str(outcome.step), dom)
        c["docs_in"] += 1
        c["dropped"][str(outcome.reason)] += 1

    def observe(self, step: Any, batch: list[Document], results: list[Any]) -> None:
        name = step.step_name
        probe = self._probes.get(id(step))
        if probe is None:
            probe = self._probes[id(step)] = probe_for(step)
        for doc, res in zip(batch, results, strict=True):
            keep, reason = get_filter_result(res)
            self._one(name, probe, doc, keep, reason or "unspecified")

    # -- per document ----------------------------------------------------------------------------
    def _count(self, step: str, dom: str) -> dict[str, Any]:
        c = self.counts[step].get(dom)
        if c is None:
            c = self.counts[step][dom] = {"docs_in": 0, "kept": 0, "dropped": Counter()}
        return c

    def _rules(self, step: str, probe: Probe, dom: str) -> list[Any]:
        got = self._rule_objs.get((step, dom))
        if got is None:
            got = self._rule_objs[(step, dom)] = probe.rules(dom)
            self.rules[step][dom] = [r.to_dict() for r in got]
        return got

    def _one(self, step: str, probe: Probe, doc: Document, keep: bool, reason: str) -> None:
        cfg, dom = self.cfg, doc.metadata.get("domain") or "unknown"
        c = self._count(step, dom)
        c["docs_in"] += 1
        values = probe.values(doc) if isinstance(doc.text, str) else {}
        rules = self._rules(step, probe, dom)
        for stat, v in values.items():
            if v is None:
                self.missing[(step, dom, stat)] += 1
                continue
            h = self.hist.get((step, dom, stat))
            if h is None:
                h = self.hist[(step, dom, stat)] = [*probe.range(stat), [0] * cfg.bins]
            h[3][bin_of(h[0], h[1], v, cfg.bins)] += 1
        text = doc.text if isinstance(doc.text, str) else ""
        if keep:
            c["kept"] += 1
            key = None
            for r in (rules if cfg.near_misses_per_rule else ()):
                m = r.margin(values.get(r.stat))
                if m is None:
                    continue
                heap, neg = self.near[(step, dom, f"{r.reason}|{r.stat}")], -round(m, 6)
                if len(heap) >= cfg.near_misses_per_rule and neg < heap[0][0]:
                    continue  # farther than every kept near-miss: cannot enter
                key = _key(doc.id) if key is None else key
                _push(heap, (neg, -key, str(doc.id), len(text), text[:cfg.capture_chars], values.get(r.stat)),
                      cfg.near_misses_per_rule)
        else:
            c["dropped"][reason] += 1
            _push(self.samples[(step, dom, reason)],
                  (-_key(doc.id), str(doc.id), len(text), text[:cfg.capture_chars], json.dumps(values, sort_keys=True)),
                  cfg.samples_per_rule)
        self._extras(step, doc, dom, keep, reason)

    def _extras(self, step: str, doc: Document, dom: str, keep: bool, reason: str) -> None:
        m = doc.metadata
        if step == "langid_filter":
            lang = str(m.get("lang") or "none")
            self.lang[dom][lang] += 1
            if not keep:
                self.lang_dropped[dom][lang] += 1
        elif step == "decontam":
            for b in filter(None, str(m.get("contam_benchmarks") or "").split(",")):
                hit = self.decontam[(dom, b)]
                hit[0] += 1
                hit[1] += 0 if keep else 1
        elif step == "dedup" and not keep and m.get("dup_cluster") is not None:
            row = self.clusters.setdefault(str(m["dup_cluster"]), [0, 0])
            row[0 if reason == "exact_duplicate" else 1] += 1
            if len(self.clusters) > 4 * self.cfg.cluster_cap:
                self._prune_clusters()

    def _prune_clusters(self) -> None:
        cap = self.cfg.cluster_cap
        if len(self.clusters) > cap:
            keep = sorted(self.clusters.items(), key=lambda kv: (-sum(kv[1]), kv[0]))[:cap]
            self.clusters_pruned += len(self.clusters) - cap
            self.clusters = dict(keep)

    # -- state -----------------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        """This unit's collection as a JSON-able document (:func:`merge_states` sums them)."""
        self._prune_clusters()
        return {
            "version": STATE_VERSION, "bins": self.cfg.bins,
            "domains": dict(self.domains),
            "counts": {s: {d: {"docs_in": c["docs_in"], "kept": c["kept"], "dropped": dict(c["dropped"])}
                           for d, c in by.items()} for s, by in self.counts.items()},
            "rules": {s: dict(by) for s, by in self.rules.items()},
            "hist": [[s, d, st, *h] for (s, d, st), h in sorted(self.hist.items())],
            "missing": [[s, d, st, n] for (s, d, st), n in sorted(self.missing.items())],
            "samples": [[s, d, r, sorted(h, reverse=True)] for (s, d, r), h in sorted(self.samples.items())],
            "near": [[s, d, r, sorted(h, reverse=True)] for (s, d, r), h in sorted(self.near.items())],
            "lang": {d: {lang: [n, self.lang_dropped[d][lang]] for lang, n in c.items()} for d, c in self.lang.items()},
            "decontam": [[d, b, h[0], h[1]] for (d, b), h in sorted(self.decontam.items())],
            "clusters": self.clusters, "clusters_pruned": self.clusters_pruned,
        }


def merge_states(states: list[dict[str, Any]], cfg: InspectConfig) -> dict[str, Any]:
    """Sum unit states: counts and histograms add, samples keep the smallest keys (exact)."""
    out = Collector(cfg)
    for st in states:
        if st.get("version") != STATE_VERSION:
            raise ValueError(f"inspection state version {st.get('version')!r} != {STATE_VERSION}")
        if st.get("bins") != cfg.bins:
            raise ValueError("inspection states with different bin counts cannot be merged")
        out.domains.update(st["domains"])
        for s, by in st["counts"].items():
            for d, c in by.items():
                mine = out._count(s, d)
                mine["docs_in"] += c["docs_in"]
                mine["kept"] += c["kept"]
                mine["dropped"].update(c["dropped"])
        for s, by in st["rules"].items():
            for d, rules in by.items():
                out.rules[s].setdefault(d, rules)
        for s, d, stat, lo, hi, scale, h in st["hist"]:
            mine = out.hist.setdefault((s, d, stat), [lo, hi, scale, [0] * cfg.bins])
            if (mine[0], mine[1]) != (lo, hi):
                raise ValueError(f"histogram ranges of {s}/{d}/{stat} differ between units")
            for i, n in enumerate(h):
                mine[3][i] += n
        for s, d, stat, n in st["missing"]:
            out.missing[(s, d, stat)] += n
        for s, d, r, rows in st["samples"]:
            for row in rows:
                _push(out.samples[(s, d, r)], tuple(row), cfg.samples_per_rule)
        for s, d, r, rows in st["near"]:
            for row in rows:
                _push(out.near[(s, d, r)], tuple(row), cfg.near_misses_per_rule)
        for d, langs in st["lang"].items():
            for lang, (n, dropped) in langs.items():
                out.lang[d][lang] += n
                out.lang_dropped[d][lang] += dropped
        for d, b, flagged, dropped in st["decontam"]:
            out.decontam[(d, b)][0] += flagged
            out.decontam[(d, b)][1] += dropped
        for cl, (ex, near) in st["clusters"].items():
            row = out.clusters.setdefault(cl, [0, 0])
            row[0] += ex
            row[1] += near
        out.clusters_pruned += st.get("clusters_pruned", 0)
    return out.state()
