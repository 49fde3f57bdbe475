"""The run's inspection file (``OUT/inspect.json``): merged, bounded per domain, redacted.

:func:`inspection_document` merges the units' states (:mod:`curate.inspection.collect`), keeps
texts for at most ``max_rules_per_domain`` reasons and rules of each domain (the most frequent;
counts and histograms of all), redacts every text it keeps with the run's own PII step and then
cuts it to ``max_chars`` (:func:`shown_text`), and adds the largest dedup clusters with the text of
their representative (read from the run's kept, already redacted documents).

Size per domain, whatever the corpus' size: at most ``max_rules_per_domain x (samples_per_rule +
near_misses_per_rule)`` texts of at most ``max_chars`` characters (defaults: 24 x 14 x 1,000),
``bins`` counts per recorded statistic and step, one row per language label, evaluation set and
listed cluster.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import asdict
from typing import Any

from datatrove.data import Document

from corpusmix.logging import get_logger
from curate.inspection.collect import InspectConfig, merge_states

log = get_logger("curate.inspection")
VERSION = 1
#: characters never shown at the end of a capture that cut its text: a value cut in half there
#: (which redaction may not recognise) stays hidden
TAIL_MARGIN = 512
WITHHELD = "[text withheld: redaction failed]"


def make_redact(pii_step: Any, mask_names: bool = False) -> Callable[[str, str], str] | None:
    """``(id, text) -> redacted text`` with the run's PII step object, then (``mask_names``) with
    the person names of :func:`curate.steps.person_names.person_spans` shown as ``<PERSON>``; None
    when neither applies."""
    if pii_step is None and not mask_names:
        return None
    from curate.steps.person_names import person_spans
    from curate.steps.pii import redact as replace_spans

    def redact(doc_id: str, text: str) -> str:
        if pii_step is not None:
            doc = Document(text=text, id=doc_id, metadata={})
            pii_step.annotate(doc)
            text = doc.text
        return replace_spans(text, [(s, e, "PERSON") for s, e in person_spans(text)]) if mask_names else text

    return redact


def shown_text(text: str, full_chars: int, cfg: InspectConfig, redact: Callable[[str, str], str] | None,
               doc_id: str) -> tuple[str, bool]:
    """(text to show, whether it is cut): redacted first, then cut to ``max_chars``.

    ``text`` is the capture (the first ``capture_chars`` of a text of ``full_chars``); when it was
    cut, its last :data:`TAIL_MARGIN` characters after redaction are never shown."""
    if redact is not None:
        try:
            text = redact(doc_id, text)
        except Exception as exc:  # never show a text the PII step could not process
            log.warning("redaction failed on an inspection sample; text withheld",
                        extra={"data": {"id": doc_id, "error": type(exc).__name__}})
            return WITHHELD, True
    limit = cfg.max_chars
    captured_cut = full_chars > cfg.capture_chars
    if captured_cut:
        limit = min(limit, max(0, len(text) - TAIL_MARGIN))
    shown = text[:limit]
    return shown, captured_cut or len(shown) < len(text)


def _kept_keys(state: dict[str, Any], cfg: InspectConfig) -> tuple[set[tuple[str, str, str]], set[tuple[str, str, str]]]:
    """(step, domain, reason) and (step, domain, rule) whose texts the budget keeps."""
    drops: dict[str, list[tuple[int, str, str]]] = defaultdict(list)
    for step, by in state["counts"].items():
        for dom, c in by.items():
            for reason, n in c["dropped"].items():
                drops[dom].append((n, step, reason))
    keep_samples = set()
    for dom, rows in drops.items():
        for _, step, reason in sorted(rows, key=lambda r: (-r[0], r[1], r[2]))[:cfg.max_rules_per_domain]:
            keep_samples.add((step, dom, reason))
    near_by_dom: dict[str, list[tuple[int, str, str]]] = defaultdict(list)
    for step, dom, rule, _ in state["near"]:
        reason = rule.split("|", 1)[0]
        n = sum(v for r, v in state["counts"].get(step, {}).get(dom, {}).get("dropped", {}).items()
                if r == reason or (reason.endswith(":*") and r.startswith(reason[:-1])))
        near_by_dom[dom].append((n, step, rule))
    keep_near = set()
    for dom, rows in near_by_dom.items():
        for _, step, rule in sorted(rows, key=lambda r: (-r[0], r[1], r[2]))[:cfg.max_rules_per_domain]:
            keep_near.add((step, dom, rule))
    return keep_samples, keep_near


def _nest(rows: Iterable[tuple[str, str, str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for a, b, c, v in rows:
        out.setdefault(a, {}).setdefault(b, {})[c] = v
    return out


def _texts(state: dict[str, Any], cfg: InspectConfig, redact: Callable[[str, str], str] | None
           ) -> tuple[dict[str, Any], dict[str, Any], int]:
    keep_samples, keep_near = _kept_keys(state, cfg)
    samples, near, withheld = [], [], 0
    for step, dom, reason, rows in state["samples"]:
        if (step, dom, reason) not in keep_samples:
            continue
        out = []
        for _, doc_id, n_chars, text, values in rows:
            shown, cut = shown_text(text, n_chars, cfg, redact, doc_id)
            withheld += shown == WITHHELD
            out.append({"id": doc_id, "chars": n_chars, "text": shown, "cut": cut, "values": json.loads(values)})
        samples.append((step, dom, reason, out))
    for step, dom, rule, rows in state["near"]:
        if (step, dom, rule) not in keep_near:
            continue
        out = []
        for neg_margin, _, doc_id, n_chars, text, value in rows:
            shown, cut = shown_text(text, n_chars, cfg, redact, doc_id)
            withheld += shown == WITHHELD
            out.append({"id": doc_id, "chars": n_chars, "text": shown, "cut": cut, "value": value,
                        "margin": -neg_margin})
        near.append((step, dom, rule, out))
    return _nest(samples), _nest(near), withheld


def _clusters(state: dict[str, Any], cfg: InspectConfig, redact: Callable[[str, str], str] | None,
              representatives: Callable[[list[str]], dict[str, str]] | None) -> dict[str, Any]:
    ranked = sorted(state["clusters"].items(), key=lambda kv: (-sum(kv[1]), kv[0]))[:cfg.top_clusters]
    texts = representatives([c for c, _ in ranked]) if representatives and ranked else {}
    top = []
    for cl, (exact, near) in ranked:
        row: dict[str, Any] = {"cluster": cl, "size": 1 + exact + near, "exact": exact, "near": near}
        if cl in texts:
            row["text"], row["cut"] = shown_text(texts[cl][:cfg.capture_chars], len(texts[cl]), cfg, redact, cl)
            row["chars"] = len(texts[cl])
        top.append(row)
    return {"top": top, "with_duplicates": len(state["clusters"]), "pruned": state.get("clusters_pruned", 0)}


def inspection_document(states: list[dict[str, Any]], cfg: InspectConfig, *, order: list[str],
                        pii_step: Any = None, engine: str = "local",
                        representatives: Callable[[list[str]], dict[str, str]] | None = None) -> dict[str, Any]:
    """The ``inspect.json`` document of a run from its units' states (see the module docstring)."""
    state = merge_states(states, cfg)
    redact = make_redact(pii_step, cfg.mask_person_names)
    samples, near, withheld = _texts(state, cfg, redact)
    steps = [s for s in order if s in state["counts"]] + [s for s in state["counts"] if s not in order]
    hist: dict[str, dict[str, dict[str, Any]]] = {}
    for step, dom, stat, lo, hi, scale, counts in state["hist"]:
        hist.setdefault(step, {}).setdefault(dom, {})[stat] = {"lo": lo, "hi": hi, "scale": scale, "counts": counts}
    for step, dom, stat, n in state["missing"]:
        if stat in hist.get(step, {}).get(dom, {}):
            hist[step][dom][stat]["missing"] = n
    decontam: dict[str, dict[str, Any]] = {}
    for dom, b, flagged, dropped in state["decontam"]:
        decontam.setdefault(dom, {})[b] = {"flagged": flagged, "dropped": dropped}
    return {
        "inspect_version": VERSION, "engine": engine, "config": asdict(cfg),
        "pii": {"redacted": pii_step is not None, "person_names_masked": cfg.mask_person_names,
                "note": ("every text was redacted by the run's PII step before it was cut" if pii_step is not None
                         else "the run has no PII step: texts as the run read them")
                + ("; person names (Census name lists) shown as <PERSON>" if cfg.mask_person_names else "")},
        "withheld": withheld,
        "budget": {"texts_per_domain": cfg.max_rules_per_domain * (cfg.samples_per_rule + cfg.near_misses_per_rule),
                   "chars_per_text": cfg.max_chars},
        "steps": steps, "domains": dict(sorted(state["domains"].items())),
        "counts": {s: state["counts"][s] for s in steps}, "rules": state["rules"], "hist": hist,
        "samples": samples, "near": near, "lang": state["lang"], "decontam": decontam,
        "clusters": _clusters(state, cfg, redact, representatives),
    }


# -- the local engine ------------------------------------------------------------------------------

def write_local(work: Any, out: Any, cfg: InspectConfig, *, order: list[str], last_stage: str,
                pii_step: Any = None) -> dict[str, Any]:
    """``OUT/inspect.json`` of a local run from ``work/<stage>/inspect/<rank>.json`` (atomic)."""
    from pathlib import Path

    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    work, out = Path(work), Path(out)
    files = sorted((work / "a" / "inspect").glob("*.json")) + sorted((work / "b" / "inspect").glob("*.json"))
    parts = sorted((work / last_stage / "out").glob("*.parquet"))

    def representatives(ids: list[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        wanted = set(ids)
        for p in parts:
            t = pq.read_table(p, columns=["id", "text"])
            t = t.filter(pc.is_in(t.column("id"), value_set=pa.array(sorted(wanted), pa.string())))
            for i, text in zip(t.column("id").to_pylist(), t.column("text").to_pylist(), strict=True):
                if isinstance(text, str):
                    found.setdefault(i, text)
        return found

    doc = inspection_document([json.loads(f.read_text()) for f in files], cfg, order=order, pii_step=pii_step,
                              engine="local", representatives=representatives)
    tmp = out / ".inspect.json.tmp"
    tmp.write_text(json.dumps(doc, separators=(",", ":")))
    tmp.replace(out / "inspect.json")
    return doc


def write_state(path: Any, collector: Any) -> None:
    """One unit's state (``work/<stage>/inspect/<rank>.json``), written under a temporary name."""
    from pathlib import Path

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(collector.state(), separators=(",", ":")))
    tmp.replace(path)
