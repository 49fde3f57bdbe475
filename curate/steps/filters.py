"""The heuristic filter step: profile ``auto`` (default) or ``web`` (datatrove parity).

``curate.filters.profile`` picks the decision rules (``make_filter``):

* ``auto``: ``curate.steps.garbage.CalibratedFilter``, domain-agnostic garbage detectors plus
  outlier rules relative to each domain's own statistics, calibrated once over the input
  (``curate.calibrate``); no hand tuning per domain. See docs/curation.md.
* ``web``: the fused datatrove rules below, for crawl data (web prose).

Fused heuristic filters (``web``): Gopher repetition, Gopher quality, C4 (FineWeb variant), FineWeb quality.

``HeuristicFilter`` applies the four rule sets in FineWeb's order with the same thresholds,
decisions and reason strings as datatrove's ``GopherRepetitionFilter``, ``GopherQualityFilter``,
``C4QualityFilter(filter_no_terminal_punct=False)`` and ``FineWebQualityFilter`` chained, but
splits the words of a document ONCE (``curate.steps.wordsplit``) instead of once per filter plus
once per line for C4's sentence count. Like datatrove's C4 filter, the C4 rules rewrite
``doc.text`` (dropped lines removed) before the FineWeb rules see it.

Thresholds come from ``params.yaml`` ``curate.filters`` (defaults = datatrove's); the
``per_domain`` map overrides any field for one domain (e.g. code turns off prose rules). Run alone
with ``corpusmix curate filter --input F --output F``; in the chain by ``corpusmix curate run``.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from datatrove.data import Document
from datatrove.pipeline.filters.c4_filters import CITATION_REGEX, ELLIPSIS, END_PUNCTUATION, POLICY_SUBSTRINGS
from datatrove.pipeline.filters.gopher_quality_filter import STOP_WORDS
from datatrove.utils.text import PUNCTUATION_SET, TERMINAL_PUNCTUATION

from corpusmix.config import ConfigError, from_dict
from curate.steps.base import CurationStep
from curate.steps.registry import StepSpec, register
from curate.steps.wordsplit import WordSplitter

_PARA = re.compile(r"\n{2,}")
_LINES = re.compile("\n+")


PROFILES = ("auto", "web")


@dataclass
class FilterConfig:
    profile: str = field(default="auto", metadata={
        "help": "auto: garbage detectors + per-domain calibrated outliers; web: datatrove's web-prose rules"})
    # -- profile auto: domain-agnostic garbage thresholds (the same for every domain) -------------
    garbage_min_dict_share: float = field(default=0.2, metadata={
        "help": "auto: drop when fewer tokens than this are dictionary words of the language"})
    garbage_min_vocab_richness: float = field(default=2.5, metadata={
        "help": "auto: drop when distinct words / sqrt(words) is below this (30+ words)"})
    garbage_max_compress_ratio: float = field(default=8.0, metadata={
        "help": "auto: drop when zlib compresses the text more than this"})
    garbage_min_words_per_line: float = field(default=1.3, metadata={
        "help": "auto: drop a 10+ line document with fewer words per line (a word list)"})
    garbage_min_word_order: float = field(default=0.0, metadata={
        "help": "auto: drop when the word-pair PMI (nats) is below this (word salad, shuffled words)"})
    garbage_min_word_order_long: float = field(default=0.1, metadata={
        "help": "auto: the same bar for documents with word_order_long_pairs scored pairs or more"})
    word_order_long_pairs: int = 50
    word_order_min_pairs: int = field(default=30, metadata={
        "help": "auto: scored word pairs a document needs before the word-order rule judges it"})
    garbage_max_boilerplate_share: float = field(default=0.6, metadata={
        "help": "auto: drop an 8+ segment document whose short segments are mostly frequent across the corpus"})
    boilerplate_min_docs: int = field(default=5, metadata={
        "help": "auto: a short segment (line, menu item) is boilerplate when this many sampled docs hold it"})
    word_order_vocab: int = field(default=300, metadata={"help": "auto: frequent words of the word-order model"})
    garbage_max_oov_share: float = field(default=0.35, metadata={
        "help": "auto: drop when this share of the lower-case words (3+ letters; 30+ of them) is not in the "
                "language's dictionary (OCR noise, invented words)"})
    garbage_max_damaged_share: float = field(default=0.02, metadata={
        "help": "auto: drop running text (damaged_min_plain_share) when this share of its lower-case words are near misses "
                "of words it spells right, run-together words or case flips (OCR and conversion damage)"})
    damaged_min_words: int = field(default=4, metadata={
        "help": "auto: ... and at least this many damaged words (one or two are typos, whatever the share)"})
    damaged_min_plain_share: float = field(default=0.2, metadata={
        "help": "auto: ... when lower-case words of 3+ letters are at least this share of the tokens"})
    garbage_max_label_share: float = field(default=0.4, metadata={
        "help": "auto: drop an 8+ segment document whose segments are mostly navigation labels (short, capitalised, "
                "no closing punctuation, digits or code): menus, sidebars, footers"})
    label_min_char_share: float = field(default=0.15, metadata={
        "help": "auto: ... and the labels hold at least this share of its characters (not an article with headings)"})
    navigation_keep_prose_chars: int | None = field(default=800, metadata={
        "help": "auto: ... unless it holds at least this many characters of prose runs (junkstats.prose_chars: "
                "paragraphs of sentences; a page of content with its menus); null: no exception"})
    navigation_keep_prose_share: float = field(default=0.3, metadata={
        "help": "auto: ... making at least this share of its characters"})
    oov_min_plain_share: float = field(default=0.3, metadata={
        "help": "auto: ... in running text: lower-case words are at least this share of the tokens (not code)"})
    garbage_min_function_words: float = field(default=0.1, metadata={
        "help": "auto: drop a text of dictionary words (80 percent or more) whose share of the language's 100 most frequent "
                "words is below this (words without grammar: lorem ipsum in English words, word lists)"})
    function_words_min_words: int = 30
    garbage_max_mojibake: float = field(default=1.0, metadata={
        "help": "auto: drop when ftfy's mojibake sequences + U+FFFD per 1,000 characters exceed this after repair"})
    garbage_max_stuffing: float = field(default=0.25, metadata={
        "help": "auto: keyword stuffing: the top 3 content words' share of content words above this ..."})
    garbage_max_rep_ngrams: float = field(default=0.5, metadata={
        "help": "auto: ... and this share of tokens in repeated 5-grams"})
    garbage_max_stuffing_terse: float = field(default=0.15, metadata={
        "help": "auto: keyword stuffing also above this top-3 share (and the repeated 5-grams) in text with "
                "few function words (below stuffing_terse_max_function_words): keyword lists"})
    stuffing_terse_max_function_words: float = field(default=0.18, metadata={
        "help": "auto: share of the language's 100 most frequent words below which garbage_max_stuffing_terse applies"})
    garbage_max_spam_score: float | None = field(default=1.0, metadata={
        "help": "auto: drop a document whose commercial-spam score (curate.spamscore) is above this and which "
                "carries spam_min_offer_marks; null: no document is dropped for it"})
    spam_min_offer_marks: float = field(default=1.0, metadata={
        "help": "auto: ... offer marks (prices, percentages, phone numbers, '!', 'free') per 100 tokens needed for "
                "that drop: the score alone also rises on manuals about mail and accounts"})
    verdict_max_spam_score: float | None = field(default=1.0, metadata={
        "help": "auto: domain verdict: a sampled document scoring above this on the commercial-spam model counts "
                "as junk in the domain's junk_share (no document is dropped for it); null: not counted"})
    spam_min_words: int = field(default=20, metadata={
        "help": "auto: tokens of the document in the spam model's vocabulary needed for either spam bar"})
    garbage_max_stamped_lines: float = field(default=0.5, metadata={
        "help": "auto: machine output: share of lines (8+) with a timestamp in their first 40 characters"})
    garbage_min_line_start_variety: float = field(default=0.2, metadata={
        "help": "auto: machine output: distinct line starts (first 2 tokens) per line (8+ lines) below this"})
    pseudo_min_words: int = field(default=25, metadata={"help": "auto: words a document needs for the pseudo-language rule"})
    pseudo_min_lid: float = field(default=0.2, metadata={
        "help": "auto: language-ID score of the other language from which the pseudo-language rule judges"})
    garbage_min_domain_dict_share: float = field(default=0.5, metadata={
        "help": "auto: pseudo-language: dictionary share in the domain's language below this, and not a "
                "language of its own (LID label without a dictionary, or below this in that language)"})
    # -- profile auto: per-domain outliers ---------------------------------------------------------
    outlier_k: float = field(default=5.0, metadata={"help": "auto: robust z (scaled MADs) of an outlier"})
    outlier_min_spread: float = field(default=0.1, metadata={
        "help": "auto: smallest spread (scale units) so that a near-constant statistic is not a hair trigger"})
    outlier_share_z: float = field(default=2.0, metadata={
        "help": "auto: a share of the document's words (dict_share, alpha_share) is a low outlier only this "
                "many binomial standard errors (at the threshold, over its words) below the threshold; 0: none"})
    domain_max_junk_share: float = field(default=0.4, metadata={
        "help": "auto: a domain whose sampled documents fail the garbage detectors at this share or more is "
                "judged garbage (calibration.json, stats.json, report; never a mixture target)"})
    verdict_max_docs: int = field(default=300, metadata={
        "help": "auto: the domain verdict is taken over the first this many sampled documents (the sample is in "
                "sha1(id) order: a random subset; the spam score is measured for these only)"})
    verdict_min_docs: int = field(default=5, metadata={
        "help": "auto: fewer sampled documents: the domain's verdict is 'unknown'"})
    min_domain_docs: int = field(default=50, metadata={
        "help": "auto: fewer sampled docs: no outlier rules for the domain (garbage rules only)"})
    gopher_repetition: bool = field(default=True, metadata={"help": "apply Gopher repetition rules"})
    gopher_quality: bool = field(default=True, metadata={"help": "apply Gopher quality rules"})
    c4: bool = field(default=True, metadata={"help": "apply C4 rules (FineWeb variant)"})
    fineweb: bool = field(default=True, metadata={"help": "apply FineWeb quality rules"})
    language: str = field(default="en", metadata={"help": "word-split language (spaCy languages)"})
    # Gopher repetition (datatrove defaults)
    rep_dup_line_frac: float | None = 0.3
    rep_dup_para_frac: float | None = 0.3
    rep_dup_line_char_frac: float | None = 0.2
    rep_dup_para_char_frac: float | None = 0.2
    rep_top_n_grams: dict = field(default_factory=lambda: {2: 0.2, 3: 0.18, 4: 0.16})
    rep_dup_n_grams: dict = field(default_factory=lambda: {5: 0.15, 6: 0.14, 7: 0.13, 8: 0.12, 9: 0.11, 10: 0.10})
    # Gopher quality
    quality_min_doc_words: int | None = 50
    quality_max_doc_words: int | None = 100000
    quality_min_avg_word_length: int | None = 3
    quality_max_avg_word_length: int | None = 10
    quality_max_symbol_word_ratio: float | None = 0.1
    quality_max_bullet_lines_ratio: float | None = 0.9
    quality_max_ellipsis_lines_ratio: float | None = 0.3
    quality_max_non_alpha_words_ratio: float | None = 0.8
    quality_min_stop_words: int | None = 2
    quality_stop_words: list[str] = field(default_factory=lambda: list(STOP_WORDS))
    # C4 as FineWeb configures it (filter_no_terminal_punct=False); set -1 to disable a count rule
    c4_remove_citations: bool = True
    c4_filter_no_terminal_punct: bool = False
    c4_min_num_sentences: int = 5
    c4_min_words_per_line: int = 3
    c4_max_word_length: int = 1000
    c4_filter_lorem_ipsum: bool = True
    c4_filter_javascript: bool = True
    c4_filter_curly_bracket: bool = True
    c4_filter_policy: bool = True
    # FineWeb quality
    fineweb_line_punct_thr: float = 0.12
    fineweb_line_punct_exclude_zero: bool = False
    fineweb_short_line_thr: float = 0.67
    fineweb_short_line_length: int = 30
    fineweb_char_duplicates_ratio: float = 0.01
    fineweb_new_line_ratio: float = 0.3
    per_domain: dict = field(default_factory=dict, metadata={
        "help": "domain -> {field: value} overrides, e.g. {code: {c4: false, fineweb: false}}"})

    def __post_init__(self) -> None:
        if self.profile not in PROFILES:
            raise ConfigError(f"curate.filters.profile must be one of {list(PROFILES)}, got {self.profile!r}")
        if self.verdict_max_docs < 1:
            raise ConfigError(f"curate.filters.verdict_max_docs must be at least 1 (the documents the domain verdict "
                              f"reads), got {self.verdict_max_docs}")
        self.rep_top_n_grams = {int(k): float(v) for k, v in dict(self.rep_top_n_grams).items()}
        self.rep_dup_n_grams = {int(k): float(v) for k, v in dict(self.rep_dup_n_grams).items()}
        for dom, over in (self.per_domain or {}).items():
            if not isinstance(over, dict):
                raise ConfigError(f"curate.filters.per_domain.{dom} must be a mapping of field: value")
            if "per_domain" in over:
                raise ConfigError(f"curate.filters.per_domain.{dom} cannot nest per_domain")

    def for_domain(self, domain: str | None) -> FilterConfig:
        over = (self.per_domain or {}).get(domain) if domain is not None else None
        if not over:
            return self
        base = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "per_domain"}
        base.update(over)
        return from_dict(FilterConfig, base, where=f"curate.filters.per_domain.{domain}")


def make_filter(cfg: FilterConfig | None = None) -> CurationStep:
    """The filter step of ``cfg.profile``."""
    cfg = cfg or FilterConfig()
    if cfg.profile == "auto":
        from curate.steps.garbage import CalibratedFilter

        return CalibratedFilter(cfg)
    return HeuristicFilter(cfg)


def _find_duplicates(x: list[str]) -> tuple[int, int]:
    seen: set[str] = set()
    dup = chars = 0
    for e in x:
        if e in seen:
            chars += len(e)
            dup += 1
        else:
            seen.add(e)
    return dup, chars


def _dup_ngram_chars(words: list[str], ns: list[int]):
    """Yield ``(n, datatrove's find_all_duplicate(words, n))`` for every n in ``ns``, lazily.

    n-grams are the words joined WITHOUT separator (as in datatrove); a level n+1 is built from
    level n by one concatenation per position instead of a fresh join.
    """
    grams: list[str] = []
    level = 0
    for n in ns:
        if level == 0 or n < level:
            grams = list(map("".join, zip(*(words[i:] for i in range(n)), strict=False)))
        else:
            while level < n:
                grams = list(map(str.__add__, grams, words[level:]))
                level += 1
        level = n
        yield n, _scan_duplicates(grams, n)


def _scan_duplicates(grams: list[str], n: int) -> int:
    if len(set(grams)) == len(grams):
        return 0  # no repeated n-gram: datatrove's scan advances one by one and finds nothing
    unique: set[str] = set()
    repeated = idx = 0
    end = len(grams)
    while idx < end:
        g = grams[idx]
        if g in unique:
            repeated += len(g)
            idx += n
        else:
            unique.add(g)
            idx += 1
    return repeated


class HeuristicFilter(CurationStep):
    """The four datatrove heuristic filters fused over one shared word split."""

    step_name = "filters"
    name = "heuristic filters (fused)"

    def __init__(self, cfg: FilterConfig | None = None) -> None:
        super().__init__()
        self.cfg = cfg or FilterConfig()
        self._by_domain = {d: self.cfg.for_domain(d) for d in (self.cfg.per_domain or {})}
        self._split = WordSplitter(self.cfg.language)
        self._tok_props: dict[str, tuple[bool, bool]] = {}
        self._punct_stop = tuple(TERMINAL_PUNCTUATION)

    def filter(self, doc: Document) -> bool | tuple[bool, str]:
        cfg = self._by_domain.get(doc.metadata.get("domain"), self.cfg)
        text = doc.text
        words = self._split.words(text) if (cfg.gopher_repetition or cfg.gopher_quality) else None
        if cfg.gopher_repetition:
            reason = self._repetition(cfg, text, words)
            if reason:
                return False, reason
        if cfg.gopher_quality:
            reason = self._quality(cfg, text, words)
            if reason:
                return False, reason
        if cfg.c4:
            reason = self._c4(cfg, doc)
            if reason:
                return False, reason
            text = doc.text
        if cfg.fineweb:
            reason = self._fineweb(cfg, text)
            if reason:
                return False, reason
        return True

    # -- Gopher repetition -------------------------------------------------------------------
    def _repetition(self, cfg: FilterConfig, text: str, words: list[str]) -> str | None:
        if not text:
            return "empty"
        n_chars = len(text)
        paragraphs = _PARA.split(text.strip())
        dups, chars = _find_duplicates(paragraphs)
        if cfg.rep_dup_para_frac and dups / len(paragraphs) > cfg.rep_dup_para_frac:
            return "dup_para_frac"
        if cfg.rep_dup_para_char_frac and chars / n_chars > cfg.rep_dup_para_char_frac:
            return "dup_para_char_frac"
        lines = _LINES.split(text)
        dups, chars = _find_duplicates(lines)
        if cfg.rep_dup_line_frac and dups / len(lines) > cfg.rep_dup_line_frac:
            return "dup_line_frac"
        if cfg.rep_dup_line_char_frac and chars / n_chars > cfg.rep_dup_line_char_frac:
            return "dup_line_char_frac"
        for n, frac in cfg.rep_top_n_grams.items():
            if len(words) < n:
                continue
            # tokens never contain spaces, so tuples count exactly like datatrove's " "-joined strings
            gram, count = Counter(zip(*(words[i:] for i in range(n)), strict=False)).most_common(1)[0]
            if (sum(map(len, gram)) + n - 1) * count / n_chars > frac:
                return f"top_{n}_gram"
        for n, chars in _dup_ngram_chars(words, list(cfg.rep_dup_n_grams)):
            if chars / n_chars > cfg.rep_dup_n_grams[n]:
                return f"duplicated_{n}_n_grams"
        return None

    # -- Gopher quality ----------------------------------------------------------------------
    def _props(self, w: str) -> tuple[bool, bool]:
        p = self._tok_props.get(w)
        if p is None:
            if len(self._tok_props) > 2_000_000:
                self._tok_props.clear()
            p = self._tok_props[w] = (any(ch not in PUNCTUATION_SET for ch in w), any(c.isalpha() for c in w))
        return p

    def _quality(self, cfg: FilterConfig, text: str, words: list[str]) -> str | None:
        n_words = len(words)
        props = [self._props(w) for w in words]
        ns_lens = [len(w) for w, p in zip(words, props, strict=True) if p[0]]
        n_ns = len(ns_lens)
        if (cfg.quality_min_doc_words and n_ns < cfg.quality_min_doc_words) or n_words == 0:
            return "gopher_short_doc"
        if cfg.quality_max_doc_words and n_ns > cfg.quality_max_doc_words:
            return "gopher_long_doc"
        if n_ns:
            avg = sum(ns_lens) / n_ns
            if cfg.quality_min_avg_word_length and avg < cfg.quality_min_avg_word_length:
                return "gopher_below_avg_threshold"
            if cfg.quality_max_avg_word_length and avg > cfg.quality_max_avg_word_length:
                return "gopher_above_avg_threshold"
        ratio = cfg.quality_max_symbol_word_ratio
        if ratio and text.count("#") / n_words > ratio:
            return "gopher_too_many_hashes"
        if ratio and (text.count("...") + text.count("…")) / n_words > ratio:
            return "gopher_too_many_ellipsis"
        lines = text.splitlines()
        if cfg.quality_max_bullet_lines_ratio and sum(
                s.lstrip().startswith(("•", "-")) for s in lines) / len(lines) > cfg.quality_max_bullet_lines_ratio:
            return "gopher_too_many_bullets"
        if cfg.quality_max_ellipsis_lines_ratio and sum(
                s.rstrip().endswith(("...", "…")) for s in lines) / len(lines) > cfg.quality_max_ellipsis_lines_ratio:
            return "gopher_too_many_end_ellipsis"
        if cfg.quality_max_non_alpha_words_ratio and sum(
                p[1] for p in props) / n_words < cfg.quality_max_non_alpha_words_ratio:
            return "gopher_below_alpha_threshold"
        if cfg.quality_min_stop_words and len(
                set(cfg.quality_stop_words).intersection(words)) < cfg.quality_min_stop_words:
            return "gopher_enough_stop_words"
        return None

    # -- C4 (rewrites doc.text) ----------------------------------------------------------------
    def _c4(self, cfg: FilterConfig, doc: Document) -> str | None:
        num_sentences = 0
        kept: list[str] = []
        for line in doc.text.splitlines():
            line = line.strip()
            words = line.split()
            if cfg.c4_max_word_length != -1 and any(len(w) > cfg.c4_max_word_length for w in words):
                continue
            if cfg.c4_remove_citations:
                line = CITATION_REGEX.sub("", line)
            if cfg.c4_filter_no_terminal_punct and (not line.endswith(END_PUNCTUATION) or line.endswith(ELLIPSIS)):
                continue
            if len(words) < cfg.c4_min_words_per_line:
                continue
            line_l = line.lower()
            if cfg.c4_filter_lorem_ipsum and "lorem ipsum" in line_l:
                return "lorem_ipsum"
            if cfg.c4_filter_javascript and "javascript" in line_l:
                continue
            if cfg.c4_filter_curly_bracket and "{" in line:
                return "curly_bracket"
            if cfg.c4_filter_policy and any(p in line_l for p in POLICY_SUBSTRINGS):
                continue
            if cfg.c4_min_num_sentences != -1:
                num_sentences += self._split.count_sentences(line)
            kept.append(line)
        if num_sentences < cfg.c4_min_num_sentences:
            return "too_few_sentences"
        doc.text = "\n".join(kept).strip()
        return None

    # -- FineWeb quality ---------------------------------------------------------------------
    def _fineweb(self, cfg: FilterConfig, text: str) -> str | None:
        lines = [line for line in text.split("\n") if line.strip() != ""]
        if not lines:
            return "empty"
        ratio = sum(1 for line in lines if line.endswith(self._punct_stop)) / len(lines)
        if ratio < cfg.fineweb_line_punct_thr and not (ratio == 0 and cfg.fineweb_line_punct_exclude_zero):
            return "line_punct_ratio"
        ratio = sum(1 for line in lines if len(line) <= cfg.fineweb_short_line_length) / len(lines)
        if ratio > cfg.fineweb_short_line_thr:
            return "short_line_ratio"
        if _find_duplicates(lines)[1] / len(text.replace("\n", "")) > cfg.fineweb_char_duplicates_ratio:
            return "char_dup_ratio"
        n_words = len(self._split.words(text))
        if text.count("\n") / n_words > cfg.fineweb_new_line_ratio:
            return "list_ratio"
        return None


def datatrove_chain(cfg: FilterConfig | None = None) -> list:
    """datatrove's own four filters configured like ``cfg`` (the reference oracle and bench anchor)."""
    from datatrove.pipeline.filters import (
        C4QualityFilter,
        FineWebQualityFilter,
        GopherQualityFilter,
        GopherRepetitionFilter,
    )

    c = cfg or FilterConfig()
    chain: list[Any] = []
    if c.gopher_repetition:
        chain.append(GopherRepetitionFilter(
            dup_line_frac=c.rep_dup_line_frac, dup_para_frac=c.rep_dup_para_frac,
            dup_line_char_frac=c.rep_dup_line_char_frac, dup_para_char_frac=c.rep_dup_para_char_frac,
            top_n_grams=tuple(c.rep_top_n_grams.items()), dup_n_grams=tuple(c.rep_dup_n_grams.items()),
            language=c.language))
    if c.gopher_quality:
        chain.append(GopherQualityFilter(
            min_doc_words=c.quality_min_doc_words, max_doc_words=c.quality_max_doc_words,
            min_avg_word_length=c.quality_min_avg_word_length, max_avg_word_length=c.quality_max_avg_word_length,
            max_symbol_word_ratio=c.quality_max_symbol_word_ratio,
            max_bullet_lines_ratio=c.quality_max_bullet_lines_ratio,
            max_ellipsis_lines_ratio=c.quality_max_ellipsis_lines_ratio,
            max_non_alpha_words_ratio=c.quality_max_non_alpha_words_ratio,
            min_stop_words=c.quality_min_stop_words, stop_words=list(c.quality_stop_words), language=c.language))
    if c.c4:
        chain.append(C4QualityFilter(
            remove_citations=c.c4_remove_citations, filter_no_terminal_punct=c.c4_filter_no_terminal_punct,
            min_num_sentences=c.c4_min_num_sentences, min_words_per_line=c.c4_min_words_per_line,
            max_word_length=c.c4_max_word_length, filter_lorem_ipsum=c.c4_filter_lorem_ipsum,
            filter_javascript=c.c4_filter_javascript, filter_curly_bracket=c.c4_filter_curly_bracket,
            filter_policy=c.c4_filter_policy, language=c.language))
    if c.fineweb:
        chain.append(FineWebQualityFilter(
            line_punct_thr=c.fineweb_line_punct_thr, line_punct_exclude_zero=c.fineweb_line_punct_exclude_zero,
            short_line_thr=c.fineweb_short_line_thr, short_line_length=c.fineweb_short_line_length,
            char_duplicates_ratio=c.fineweb_char_duplicates_ratio, new_line_ratio=c.fineweb_new_line_ratio,
            language=c.language))
    return chain


register(StepSpec(name="filters", config=FilterConfig, section="curate.filters", stage="a", order=40,
                  build=lambda cfg, chain: [make_filter(cfg)], module=__name__))
