"""The ``auto`` filter profile: domain-agnostic garbage detectors plus per-domain outlier rules.

``CalibratedFilter`` decides on the statistics of ``curate.textstats`` in two stages:

1. **Garbage** (absolute thresholds, the same for every domain, in ``FilterConfig``): a document
   whose tokens are mostly not words of its language (``garbage:not_words``: random characters,
   hex/base64, number tables, mojibake), with very few distinct words for its length
   (``garbage:repetitive``: keyword spam, menus, a line repeated), one word per line
   (``garbage:word_list``), without the word order of running text (``garbage:word_salad``:
   shuffled or independently drawn words), or made mostly of short segments that recur across
   many documents of the corpus (``garbage:boilerplate``: menus, share buttons, footers). Real text of any register passes these, so a domain made
   only of garbage is dropped even though it is "normal" for itself.
2. **Outliers** (``outlier:<stat>_<low|high>``): a statistic far outside its own domain's robust
   range (median +- ``outlier_k`` scaled MADs, thresholds chosen by ``fit_filter_calibration``). A domain
   of dictionary entries keeps its short lines, a code domain its symbols; a prose document with
   one word per line inside a prose domain is an outlier. Domains with fewer than
   ``min_domain_docs`` documents have no outlier rules (stage 1 only), and the calibration file says so.

The thresholds come from the calibration (``fit`` -> ``fit_filter_calibration``, then
``set_calibration``; ``curate.calibrate`` runs both), computed once over the whole input by the
engine before any task starts, so every engine and every task uses the same numbers.
"""

from __future__ import annotations

import hashlib
import json
import math
import statistics
from collections import Counter, defaultdict
from typing import Any

from datatrove.data import Document

from corpusmix.config import ConfigError
from corpusmix.logging import get_logger
from curate import junkstats as js
from curate import spamscore
from curate.steps.base import CurationStep
from curate.textstats import (
    _TABLE,
    LOG_STATS,
    STYLE_STATS,
    Memo,
    WordOrderModel,
    doc_stats,
    segments,
    text_key,
    token_lows,
)

# outlier statistics that are shares of the document's words: their low threshold allows for the
# chance variation of a short document (share_allowance)
SHARE_STATS = frozenset({"alpha_share", "dict_share"})
_log = get_logger("curate.calibrate")  # the calibration's log, where the fit's warnings belong

#: doc_stats by (text digest, language, calibration digest), shared by the calibration's probe
#: filter and the run's filter in one process
_STATS = Memo(50_000)
_SPAM = Memo(50_000)  # spam_stats (and offer marks) per (text, language): calibration and run read them both


def to_scale(stat: str, x: float) -> float:
    """Statistics compared on a log scale (ratios, lengths) or as they are (shares)."""
    return math.log(max(x, 1e-3)) if stat in LOG_STATS else x


class CalibratedFilter(CurationStep):
    """Garbage detectors + domain-relative outlier rules (``curate.filters.profile: auto``)."""

    step_name = "filters"
    name = "calibrated filters (garbage + per-domain outliers)"
    calibration_key = "filters"

    def __init__(self, cfg: Any) -> None:
        super().__init__()
        self.cfg = cfg
        self.domains: dict[str, dict[str, Any]] = {}
        self.order: WordOrderModel | None = None
        self.calibrated = False
        self.frequent: frozenset[str] = frozenset()
        self._model_key = b""
        # user overrides (curate.filters.per_domain) of the garbage thresholds
        self._by_domain = {d: cfg.for_domain(d) for d in (cfg.per_domain or {})}
        # the spam score is measured for every document only where a document can be dropped for it
        self._spam_drops = any(c.garbage_max_spam_score is not None for c in (cfg, *self._by_domain.values()))
        # the offer marks (a regex over the text) only where the score and words already allow a drop
        cfgs = (cfg, *self._by_domain.values())
        bars = [c.garbage_max_spam_score for c in cfgs if c.garbage_max_spam_score is not None]
        self._min_bar = min(bars) if bars else math.inf
        self._min_spam_words = min(c.spam_min_words for c in cfgs)

    # -- calibration protocol (curate.calibrate) ---------------------------------------------
    def fit(self, docs_by_domain: dict[str, list[Document]]) -> dict[str, Any]:
        return fit_filter_calibration(self.cfg, docs_by_domain)

    def set_calibration(self, section: dict[str, Any]) -> None:
        self.order = WordOrderModel.from_dict(section["word_order"]) if section.get("word_order") else None
        self.frequent = frozenset(section.get("frequent_segments") or ())
        # what doc_stats depends on besides the text and language: equal models, equal key
        self._model_key = hashlib.blake2b(json.dumps(
            [section.get("word_order"), sorted(self.frequent)]).encode(), digest_size=16).digest()
        self.domains = dict(section.get("domains") or {})
        self.calibrated = True

    # -- decision ----------------------------------------------------------------------------
    def _language(self, doc: Document, dom: dict[str, Any] | None) -> str:
        lang = doc.metadata.get("lang")
        if lang and (doc.metadata.get("lang_score") or 0.0) >= 0.5:
            return lang
        return (dom or {}).get("language") or self.cfg.language

    def measure(self, doc: Document, dom: dict[str, Any] | None = None) -> dict[str, float | None]:
        """``doc_stats`` of the document (memoised: the calibration measures the sampled documents,
        the run measures them again with the same model; the returned dict is read only), with the
        spam score where a document may be dropped for it."""
        lang = self._language(doc, dom)
        stats = self.measure_lang(doc, lang)
        if not self._spam_drops:
            return stats
        key = (text_key(doc.text), lang, self._min_bar, self._min_spam_words)
        spam = _SPAM.get(key)
        if spam is None:
            spam = self.spam_stats(doc, lang)
            if (spam["spam_score"] or -math.inf) > self._min_bar and spam["spam_words"] >= self._min_spam_words:
                spam = {**spam, "offer_marks": spamscore.offer_marks(doc.text)}
            _SPAM.put(key, spam)
        return {**stats, **spam}

    @staticmethod
    def spam_stats(doc: Document, lang: str) -> dict[str, float | None]:
        """``spam_score`` and ``spam_words`` (``curate.spamscore``) of the document in ``lang``."""
        if spamscore.model(lang) is None:
            return {"spam_score": None, "spam_words": 0.0}
        score, words = spamscore.score_lows(_TABLE, token_lows(doc.text)[0], lang)
        return {"spam_score": score, "spam_words": words}

    def measure_lang(self, doc: Document, lang: str) -> dict[str, float | None]:
        """``doc_stats`` of the document in language ``lang`` (memoised like :meth:`measure`)."""
        key = (text_key(doc.text), lang, self._model_key)
        stats = _STATS.get(key)
        if stats is None:
            stats = doc_stats(doc.text, lang, self.order, self.frequent)
            _STATS.put(key, stats)
        return stats

    def garbage_reason(self, s: dict[str, float | None], domain: str | None = None) -> str | None:
        c = self._by_domain.get(domain, self.cfg) if domain else self.cfg
        if not s["n_words"]:
            return "empty"
        if s["dict_share"] is not None and s["dict_share"] < c.garbage_min_dict_share:
            return "garbage:not_words"
        if s["vocab_richness"] is not None and s["vocab_richness"] < c.garbage_min_vocab_richness:
            return "garbage:repetitive"
        if s["compress_ratio"] > c.garbage_max_compress_ratio:
            return "garbage:repetitive"
        if s["n_lines"] >= 10 and s["words_per_line"] < c.garbage_min_words_per_line:
            return "garbage:word_list"
        wo = s["word_order"]
        if wo is not None and s["word_pairs"] >= c.word_order_min_pairs and (wo < c.garbage_min_word_order or (
                wo < c.garbage_min_word_order_long and s["word_pairs"] >= c.word_order_long_pairs)):
            return "garbage:word_salad"  # long documents: the mean is precise enough for a higher bar
        sw = s.get("stop_share")
        if (sw is not None and s["n_words"] >= c.function_words_min_words and sw < c.garbage_min_function_words
                and (s["dict_share"] or 0.0) >= 0.8):
            return "garbage:no_function_words"  # dictionary words without grammar: drawn at random
        if (s.get("n_segments") or 0) >= 8 and s["boilerplate_share"] > c.garbage_max_boilerplate_share:
            return "garbage:boilerplate"
        lab = s.get("label_share")
        if lab is not None and lab > c.garbage_max_label_share and s["label_char_share"] > c.label_min_char_share:
            return "garbage:navigation"
        oov = s.get("oov_share")
        if oov is not None and oov > c.garbage_max_oov_share and s["plain_share"] >= c.oov_min_plain_share:
            return "garbage:misspelt"
        dmg = s.get("damaged_share")
        if (dmg is not None and dmg > c.garbage_max_damaged_share and s["plain_share"] >= c.damaged_min_plain_share
                and s["damaged_words"] >= c.damaged_min_words):
            return "garbage:damaged_words"
        if s.get("mojibake", 0.0) > c.garbage_max_mojibake:
            return "garbage:mojibake"
        st, rep = s.get("stuffing"), s.get("rep_ngram_share")
        if st is not None and rep is not None and rep > c.garbage_max_rep_ngrams and (
                st > c.garbage_max_stuffing or (st > c.garbage_max_stuffing_terse and sw is not None
                                                and sw < c.stuffing_terse_max_function_words)):
            return "garbage:keyword_stuffing"  # a few words repeated in phrases; lower bar for keyword lists
        sl, var = s.get("stamped_share"), s.get("line_start_variety")
        if (sl is not None and sl > c.garbage_max_stamped_lines) or (
                var is not None and var < c.garbage_min_line_start_variety):
            return "garbage:machine_output"
        if (s.get("offer_marks") or 0.0) < c.spam_min_offer_marks:
            return None
        return spam_reason(s, c.garbage_max_spam_score, c.spam_min_words)

    def pseudo_language(self, doc: Document, s: dict[str, float | None], dom: dict[str, Any] | None,
                        c: Any) -> bool:
        """Not the domain's language, and not words of the language it resembles either: lorem
        ipsum, invented words. (A real foreign document has its own language's words.)"""
        dlang = (dom or {}).get("language") or c.language
        label = doc.metadata.get("lang")
        if not label or label == dlang:
            return False  # language ID sees the domain's language: judged by garbage:not_words
        if (s.get("n_words") or 0) < c.pseudo_min_words or (doc.metadata.get("lang_score") or 0.0) < c.pseudo_min_lid:
            return False  # a few words (a headword, a one-liner) resemble any language by chance
        bar = c.garbage_min_domain_dict_share
        d_dom = self.measure_lang(doc, dlang).get("dict_share")
        if d_dom is None or d_dom >= bar:
            return False
        d_own = self.measure_lang(doc, label).get("dict_share")
        return d_own is None or d_own < bar

    def content_with_menus(self, doc: Document, dom: dict[str, Any] | None, name: str) -> bool:
        """A page mostly of navigation labels that also holds paragraphs of sentences: at least
        ``navigation_keep_prose_chars`` characters and ``navigation_keep_prose_share`` of its own
        (``junkstats.prose_chars``). Measured only for documents the navigation rule drops."""
        c = self._by_domain.get(name, self.cfg)
        if c.navigation_keep_prose_chars is None:
            return False
        lang = (dom or {}).get("language") or c.language
        prose, total = js.prose_chars(doc.text, js.stopwords(lang) if lang else frozenset())
        return prose >= c.navigation_keep_prose_chars and prose >= c.navigation_keep_prose_share * total

    def doc_garbage(self, doc: Document, s: dict[str, float | None], dom: dict[str, Any] | None,
                    name: str) -> str | None:
        """The stage-1 reason of a document (the domain-independent detectors), or None."""
        reason = self.garbage_reason(s, name)
        if reason == "garbage:navigation" and self.content_with_menus(doc, dom, name):
            reason = self.garbage_reason({**s, "label_share": None}, name)  # judged by the other rules
        if reason is None and self.pseudo_language(doc, s, dom, self._by_domain.get(name, self.cfg)):
            return "garbage:pseudo_language"
        return reason

    def filter(self, doc: Document) -> bool | tuple[bool, str]:
        if not self.calibrated:
            raise ConfigError("the auto filter profile needs a calibration: run it through `corpusmix curate "
                              "run` (which calibrates first) or set curate.calibrate.file")
        name = doc.metadata.get("domain") or "unknown"
        dom = self.domains.get(name)
        s = self.measure(doc, dom)
        reason = self.doc_garbage(doc, s, dom, name)
        if reason:
            return False, reason
        z = self._by_domain.get(name, self.cfg).outlier_share_z
        for stat, (lo, hi) in ((dom or {}).get("thresholds") or {}).items():
            x = s.get(stat)
            if x is None:
                continue
            v = to_scale(stat, x)
            if lo is not None and v < lo - (share_allowance(lo, s.get("n_words"), z) if stat in SHARE_STATS else 0.0):
                return False, f"outlier:{stat}_low"
            if hi is not None and v > hi:
                return False, f"outlier:{stat}_high"
        return True


def share_allowance(lo: float, n_words: float | None, z: float) -> float:
    """How far below a share statistic's low threshold ``lo`` a document of ``n_words`` words must
    lie to be an outlier: ``z`` binomial standard errors at the threshold, ``z * sqrt(lo (1 - lo) /
    n)``. A share over a few words moves by chance (one name in a six-word quote is 17 %); over a
    page it does not. 0 for a document without words (the threshold as it is)."""
    if not n_words or z <= 0:
        return 0.0
    p = min(max(lo, 0.0), 1.0)
    return z * math.sqrt(p * (1.0 - p) / n_words)


__all__ = ["CalibratedFilter", "SHARE_STATS", "STYLE_STATS", "share_allowance", "to_scale"]


# -- the calibration's fit (curate.calibrate.fit_steps calls CalibratedFilter.fit) ------------

def _robust(values: list[float], direction: str, k: float, floor: float) -> tuple[float | None, float | None]:
    med = statistics.median(values)
    spread = max(1.4826 * statistics.median(abs(v - med) for v in values), floor)
    lo = round(med - k * spread, 4) if direction in ("low", "both") else None
    hi = round(med + k * spread, 4) if direction in ("high", "both") else None
    return lo, hi


def fit_filter_calibration(cfg: Any, docs_by_domain: dict[str, list[Document]]) -> dict[str, Any]:
    """Word-order model over all sampled documents + robust outlier thresholds per domain."""
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
        stats, spam = [], []
        for i, d in enumerate(docs):  # the spam score right after the statistics: it reads their tokens
            st = probe.measure(d, probe.domains[dom])
            stats.append(st)
            if i < cfg.verdict_max_docs:  # measure() has it already where documents may be dropped for it
                spam.append(st if "spam_score" in st else probe.spam_stats(d, probe._language(d, probe.domains[dom])))
        # thresholds from the documents that are not garbage: a domain's garbage must not widen them
        reasons = [probe.doc_garbage(d, s, probe.domains[dom], dom) for d, s in zip(docs, stats, strict=True)]
        clean = [s for s, r in zip(stats, reasons, strict=True) if r is None]
        entry["garbage_share"] = round(1 - len(clean) / len(stats), 4) if stats else 0.0
        c = probe._by_domain.get(dom, cfg)
        # the verdict also counts documents the spam model scores above its verdict bar (none is dropped for it)
        # over the first verdict_max_docs of the sample (in sha1(id) order: a random subset of it)
        judged = [r or spam_reason(sp, c.verdict_max_spam_score, c.spam_min_words)
                  for r, sp in zip(reasons[:len(spam)], spam, strict=True)]
        entry.update(domain_verdict(judged, cfg))
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
        _log.warning("domains judged mostly garbage", extra={"data": {
            "domains": {d: domains[d]["junk_share"] for d in garbage_domains}}})
    return {"profile": "auto", "garbage_domains": garbage_domains, "garbage": {
        "min_dict_share": cfg.garbage_min_dict_share, "min_vocab_richness": cfg.garbage_min_vocab_richness,
        "max_compress_ratio": cfg.garbage_max_compress_ratio,
        "min_words_per_line": cfg.garbage_min_words_per_line, "min_word_order": cfg.garbage_min_word_order,
        "min_word_order_long": [cfg.garbage_min_word_order_long, cfg.word_order_long_pairs],
        "max_boilerplate_share": cfg.garbage_max_boilerplate_share},
        "scale": "log for words_per_line, mean_word_len, compress_ratio; linear for shares",
        "domains": domains, "frequent_segments": frequent, "word_order": order.to_dict()}


def spam_reason(s: dict[str, float | None], bar: float | None, min_words: int) -> str | None:
    """``garbage:spam`` when the commercial-spam score is above ``bar`` (None: never) on a document with
    ``min_words`` tokens in the model's vocabulary: offers, prices and calls to act."""
    sp = s.get("spam_score")
    if sp is not None and bar is not None and sp > bar and (s.get("spam_words") or 0) >= min_words:
        return "garbage:spam"
    return None


def domain_verdict(reasons: list[str | None], cfg: Any) -> dict[str, Any]:
    """A domain's junk score and verdict from the stage-1 reasons of its sampled documents (the first
    ``verdict_max_docs``; with ``garbage:spam`` for those the spam model scores above
    ``verdict_max_spam_score``).

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
