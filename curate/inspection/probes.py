"""What each curation step decides on: the statistic of every rule and its thresholds, per domain.

A *probe* reads a step object as the run built it (config and calibration) and a document as it
reached the step, and returns:

* :meth:`Probe.values`: the statistics the step's rules look at (``stat -> value`` on the scale
  the histogram uses; ``None`` where a statistic is undefined for the document), and
* :meth:`Probe.rules`: per drop reason of the step, the :class:`Rule`\\ s behind it in one domain:
  the statistic, on which side a document is dropped, the threshold that applies in the domain
  and the global one (the value for a domain without overrides or calibration).

Probes never decide: the step's own ``filter`` did. They only restate what the step's code
compares, so that the inspection view can draw a statistic's distribution with its thresholds.
A step without a probe (datatrove's fused ``web`` filters, annotators) still gets counts and
samples of its drops; the view says that its statistic is not recorded.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from datatrove.data import Document

#: histogram range and scale per statistic: (low, high, scale); values outside fall in the edge bins
STAT_RANGES: dict[str, tuple[float, float, str]] = {
    "dict_share": (0.0, 1.0, "linear"), "alpha_share": (0.0, 1.0, "linear"),
    "dup_line_share": (0.0, 1.0, "linear"), "top_word_share": (0.0, 1.0, "linear"),
    "boilerplate_share": (0.0, 1.0, "linear"), "lang_score": (0.0, 1.0, "linear"),
    "foreign_lang_score": (0.0, 1.0, "linear"), "toxicity": (0.0, 1.0, "linear"),
    "quality_ft": (0.0, 1.0, "linear"), "badword_ratio": (0.0, 0.05, "linear"),
    "vocab_richness": (0.0, 20.0, "linear"), "word_order": (-3.0, 5.0, "linear"),
    "words_per_line": (-0.7, 7.0, "ln"), "mean_word_len": (0.0, 3.0, "ln"),
    "compress_ratio": (0.0, 3.5, "ln"), "ppl": (0.0, 5.0, "log10"),
    "contam_ngrams": (0.0, 4.0, "log10(1+x)"),
}
DEFAULT_RANGE = (0.0, 1.0, "linear")


@dataclass(frozen=True)
class Rule:
    """One comparison of a step: drop when ``stat`` is ``side`` (``low``: below, ``high``: above) of
    ``threshold`` (the value in force for the domain); ``global_threshold``: the value without the
    domain's calibration or overrides (``None``: the rule only exists per domain)."""

    reason: str
    stat: str
    side: str
    threshold: float | None
    global_threshold: float | None
    note: str = ""

    def margin(self, value: float | None) -> float | None:
        """Distance of a kept value from the threshold on the keep side (``None``: not comparable)."""
        if value is None or self.threshold is None:
            return None
        m = value - self.threshold if self.side == "low" else self.threshold - value
        return m if m >= 0 else None

    def to_dict(self) -> dict[str, Any]:
        return {"reason": self.reason, "stat": self.stat, "side": self.side, "threshold": self.threshold,
                "global_threshold": self.global_threshold, "note": self.note}


def _ln(x: float | None) -> float | None:
    return None if x is None else math.log(max(float(x), 1e-3))


def _r(x: float | None) -> float | None:
    return None if x is None else round(float(x), 6)


class Probe:
    """Base: no statistic, no rule (counts and samples only)."""

    def __init__(self, step: Any) -> None:
        self.step = step

    def values(self, doc: Document) -> dict[str, float | None]:
        return {}

    def rules(self, domain: str) -> list[Rule]:
        return []

    def range(self, stat: str) -> tuple[float, float, str]:
        """The histogram range and scale of ``stat`` (fixed per step: states of all units merge)."""
        return STAT_RANGES.get(stat.removesuffix("_10"), DEFAULT_RANGE)


class CalibratedFilterProbe(Probe):
    """``filters`` with the ``auto`` profile (``curate.steps.garbage.CalibratedFilter``)."""

    def values(self, doc: Document) -> dict[str, float | None]:
        from curate.steps.garbage import STYLE_STATS, to_scale

        dom = self.step.domains.get(doc.metadata.get("domain") or "unknown")
        s = self.step.measure(doc, dom)  # memoised: the step measured this text a moment ago
        out: dict[str, float | None] = {k: (None if s.get(k) is None else _r(to_scale(k, s[k])))
                                        for k in STYLE_STATS}
        out["vocab_richness"] = _r(s.get("vocab_richness"))
        out["word_order"] = _r(s.get("word_order"))
        out["boilerplate_share"] = _r(s.get("boilerplate_share")) if (s.get("n_segments") or 0) >= 8 else None
        if (s.get("n_lines") or 0) < 10:
            out["words_per_line_10"] = None
        else:
            out["words_per_line_10"] = out["words_per_line"]
        return out

    def rules(self, domain: str) -> list[Rule]:
        from curate.steps.garbage import SHARE_STATS, STYLE_STATS, to_scale

        step = self.step
        g, c = step.cfg, step._by_domain.get(domain, step.cfg)
        rules = [
            Rule("garbage:not_words", "dict_share", "low", c.garbage_min_dict_share, g.garbage_min_dict_share),
            Rule("garbage:repetitive", "vocab_richness", "low", c.garbage_min_vocab_richness,
                 g.garbage_min_vocab_richness, "documents of 30+ words"),
            Rule("garbage:repetitive", "compress_ratio", "high", _r(to_scale("compress_ratio", c.garbage_max_compress_ratio)),
                 _r(to_scale("compress_ratio", g.garbage_max_compress_ratio)), "ln of the zlib ratio"),
            Rule("garbage:word_list", "words_per_line_10", "low", _r(to_scale("words_per_line", c.garbage_min_words_per_line)),
                 _r(to_scale("words_per_line", g.garbage_min_words_per_line)), "ln; documents of 10+ lines"),
            Rule("garbage:word_salad", "word_order", "low", c.garbage_min_word_order, g.garbage_min_word_order,
                 f"{c.garbage_min_word_order_long:g} for documents of {c.word_order_long_pairs}+ scored pairs"),
            Rule("garbage:boilerplate", "boilerplate_share", "high", c.garbage_max_boilerplate_share,
                 g.garbage_max_boilerplate_share, "documents of 8+ segments"),
        ]
        th = (step.domains.get(domain) or {}).get("thresholds") or {}
        for stat in STYLE_STATS:
            lo, hi = (th.get(stat) or [None, None])
            scale = "ln; " if stat in ("words_per_line", "mean_word_len", "compress_ratio") else ""
            note = f"{scale}median +- k scaled MADs of the domain's own documents; no global threshold"
            if stat in SHARE_STATS and c.outlier_share_z > 0:
                note += (f"; a document is dropped only {c.outlier_share_z:g} binomial standard errors over its "
                         "words below it (short documents vary by chance)")
            if lo is not None:
                rules.append(Rule(f"outlier:{stat}_low", stat, "low", lo, None, note))
            if hi is not None:
                rules.append(Rule(f"outlier:{stat}_high", stat, "high", hi, None, note))
        return rules


class LanguageFilterProbe(Probe):
    """``langid_filter`` (``curate.steps.langid.LanguageFilter``)."""

    def values(self, doc: Document) -> dict[str, float | None]:
        score = doc.metadata.get("lang_score")
        lang = doc.metadata.get("lang")
        foreign = bool(self.step.keep) and lang not in self.step.keep
        return {"lang_score": _r(score), "foreign_lang_score": _r(score) if foreign else None}

    def rules(self, domain: str) -> list[Rule]:
        step, cfg = self.step, self.step.cfg
        if domain in step.skip:
            return []
        per_doc = step.thresholds.get(domain, cfg.threshold)
        dlang = step.domain_lang.get(domain, step.corpus_lang)
        if step.keep and cfg.per_domain and domain not in step.thresholds and dlang in step.keep:
            return [Rule("lang:*", "foreign_lang_score", "high", cfg.foreign_min_score, cfg.threshold,
                         f"domain language {dlang}: another language is dropped from this score on; global: "
                         f"the per-document rule (any other language dropped, own language below {cfg.threshold:g})")]
        return [Rule("lang_score_below_threshold", "lang_score", "low", per_doc, cfg.threshold,
                     "per-document rule"),
                Rule("lang:*", "foreign_lang_score", "high", 0.0, None,
                     "per-document rule: any language not kept is dropped")]


class ToxicityFilterProbe(Probe):
    """``toxicity`` (``curate.steps.toxicity.ToxicityFilter``)."""

    def values(self, doc: Document) -> dict[str, float | None]:
        bad = doc.metadata.get("badwords")
        # 0 badwords: a ratio of 0 whatever the length (no split of the text)
        ratio = None if bad is None else bad / max(len(doc.text.split()), 1) if bad else 0.0
        return {"toxicity": _r(doc.metadata.get("toxicity")), "badword_ratio": _r(ratio)}

    def rules(self, domain: str) -> list[Rule]:
        g = self.step.cfg
        c = g.for_domain(domain)
        out = []
        if c.max_toxicity is not None:
            out.append(Rule(f"toxicity_above_{c.max_toxicity:g}", "toxicity", "high", c.max_toxicity, g.max_toxicity))
        if c.max_badword_ratio is not None:
            out.append(Rule(f"badword_ratio_above_{c.max_badword_ratio:g}", "badword_ratio", "high",
                            c.max_badword_ratio, g.max_badword_ratio))
        return out


class ThresholdProbe(Probe):
    """Any ``ThresholdFilter`` (``quality_ft_min``, ``ppl_max``)."""

    def _scale(self, x: float | None) -> float | None:
        if x is None:
            return None
        return _r(math.log10(max(float(x), 1.0))) if self.step.column == "ppl" else _r(x)

    def values(self, doc: Document) -> dict[str, float | None]:
        return {self.step.column: self._scale(doc.metadata.get(self.step.column))}

    def range(self, stat: str) -> tuple[float, float, str]:
        if stat in STAT_RANGES:
            return STAT_RANGES[stat]
        thr = max(abs(float(v)) for v in (self.step.min_value, self.step.max_value, 0.5) if v is not None)
        return (0.0, 2.0 * thr, "linear")  # any other column: the threshold in the middle

    def rules(self, domain: str) -> list[Rule]:
        s, out = self.step, []
        note = "log10" if s.column == "ppl" else ""
        if s.min_value is not None:
            out.append(Rule(f"{s.column}_below_{s.min_value:g}", s.column, "low", self._scale(s.min_value),
                            self._scale(s.min_value), note))
        if s.max_value is not None:
            out.append(Rule(f"{s.column}_above_{s.max_value:g}", s.column, "high", self._scale(s.max_value),
                            self._scale(s.max_value), note))
        return out


class DecontamProbe(Probe):
    """``decontam``: overlapping n-gram positions with the evaluation sets (any hit flags)."""

    def values(self, doc: Document) -> dict[str, float | None]:
        n = doc.metadata.get("contam_ngrams")
        return {"contam_ngrams": None if n is None else _r(math.log10(1 + n))}

    def rules(self, domain: str) -> list[Rule]:
        return [Rule("contaminated:*", "contam_ngrams", "high", 0.0, 0.0,
                     "log10(1 + overlapping n-gram positions); any overlap flags the document")]


def probe_for(step: Any) -> Probe:
    """The probe of a step object, by its class (a step without one: counts and samples only)."""
    kind = type(step).__name__
    if kind == "CalibratedFilter":
        return CalibratedFilterProbe(step)
    if kind == "LanguageFilter":
        return LanguageFilterProbe(step)
    if kind == "ToxicityFilter":
        return ToxicityFilterProbe(step)
    if kind == "Decontaminator":
        return DecontamProbe(step)
    if hasattr(step, "column") and hasattr(step, "min_value") and hasattr(step, "max_value"):
        return ThresholdProbe(step)
    return Probe(step)


def rule_matches(rule: Rule, reason: str) -> bool:
    """Whether a drop ``reason`` is the rule's (``lang:*`` stands for every ``lang:<code>``)."""
    if rule.reason.endswith(":*"):
        return reason.startswith(rule.reason[:-1])
    return rule.reason == reason


def bin_of(lo: float, hi: float, value: float, bins: int) -> int:
    """The histogram bin of ``value`` (0 .. bins-1; values outside ``[lo, hi)`` fall in the edge bins)."""
    i = int((value - lo) / (hi - lo) * bins) if hi > lo else 0
    return min(max(i, 0), bins - 1)
