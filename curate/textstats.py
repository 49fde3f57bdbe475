"""Cheap, style-independent statistics of one document, shared by calibration and the filters.

Every statistic is computed from whitespace tokens and characters in one pass, without spaCy, so
that the ``auto`` filter profile (``curate.steps.garbage``) and its calibration
(``curate.calibrate``) cost a fraction of the datatrove-parity ``web`` profile. Two families:

* **style statistics** (words per line, mean word length, share of lines ending in punctuation, ...)
  differ legitimately between domains: they are only ever judged against the document's own domain
  (robust per-domain outlier thresholds, ``curate.calibrate``);
* **garbage statistics** (dictionary-word share of the language, zlib compression ratio, word-order
  structure, character entropy) measure properties every natural-language document has whatever
  its domain: they get absolute thresholds, so a domain made entirely of garbage cannot calibrate
  itself into looking normal.

The dictionary is the word list of ``wordfreq`` for the document's language (bundled in the wheel,
offline). Word order is scored by a small corpus-level transition model over the most frequent
words (``WordOrderModel``): shuffled words and word salad lose the grammar of function words
(``of the`` is frequent, ``the of`` is not), whatever vocabulary they are drawn from.
"""

from __future__ import annotations

import hashlib
import math
import re
import zlib
from collections import Counter
from functools import lru_cache
from typing import Any

import numpy as np

from curate import junkstats as js
from curate import native
from curate.ocrstats import (
    DAMAGED_MIN_WORDS,
    MAX_SPLIT_ANCHORS,
    OPEN_WORDS,
    damaged_words,
    split_words,
    stray_stops,
)
from curate.tokentable import TokenTable, _core_in_dict, _is_dict_token, _plain  # noqa: F401 (re-exported)
from curate.wordorder import _WORD, MAX_ORDER_CHARS, WordOrderModel  # noqa: F401 (re-exported)

_EDGE_PUNCT = js.EDGE_PUNCT
_LETTER_RUN = re.compile(r"[^\W\d_]+")
_TERMINAL = js.TERMINAL
COMPRESS_PREFIX = 32_768  # bytes compressed per document: the ratio settles long before that

# statistics judged per domain (name -> direction in which a value is bad)
STYLE_STATS: dict[str, str] = {
    "words_per_line": "low",
    "mean_word_len": "both",
    "alpha_share": "low",
    "dict_share": "low",
    "compress_ratio": "high",
    "dup_line_share": "high",
    "top_word_share": "high",
}
# compared on a log scale (positive ratios and lengths)
LOG_STATS = frozenset({"words_per_line", "mean_word_len", "compress_ratio"})


@lru_cache(maxsize=16)
def dictionary(lang: str) -> tuple[frozenset[str], frozenset[str]] | None:
    """(wordfreq's 200k most frequent words of ``lang``, the 1-2 letter ones among its top 1000),
    lower-cased, or None when wordfreq has no list for ``lang``."""
    import wordfreq

    if lang not in wordfreq.available_languages():  # no "nearest match" (wordfreq gives Italian for Latin)
        return None
    try:
        words = [w.lower() for w in wordfreq.top_n_list(lang, 200_000)]
    except (LookupError, ValueError):
        return None
    if len(words) < 1000:
        return None
    return frozenset(words), frozenset(w for w in words[:1000] if len(w) <= 2)


_DICT_CACHE: dict[str, dict[str, bool]] = {}

_TABLE = TokenTable()


#: id(text) -> (text, its token_lows ids, table generation) of the last texts doc_stats measured: the
#: toxicity scorer reads the same text object next (the text is held, so its id is not reused)
_LOWS: dict[int, tuple[str, np.ndarray, int]] = {}


def _remember_lows(text: str, lows: np.ndarray) -> None:
    if len(_LOWS) >= 1024:
        del _LOWS[next(iter(_LOWS))]
    _LOWS[id(text)] = (text, lows, _TABLE.generation)


def token_lows(text: str) -> tuple[np.ndarray, list[str], int]:
    """``(ids, words, generation)``: ``words[i]`` for ``i`` in ``ids`` are the tokens of
    ``text.lower().split()`` (lower-casing neither makes nor removes whitespace, and its final-sigma
    rule never looks past a space, so they are ``text.split()``'s tokens lower-cased); the ids are
    those of the shared token table, valid while its ``generation`` is this one."""
    got = _LOWS.get(id(text))
    if got is not None and got[0] is text and got[2] == _TABLE.generation:
        return got[1], _TABLE.low_words, got[2]
    ids = _TABLE.text_ids(text)
    return _TABLE.low[ids], _TABLE.low_words, _TABLE.generation


#: id(text) -> (text, text_key(text)) of the last texts keyed: several steps key the same text object
#: in turn (the text is held, so its id is not reused)
_KEYS: dict[int, tuple[str, bytes]] = {}


def text_key(text: str) -> bytes:
    """A 128-bit digest of ``text``: the key of per-text memos (a document measured by the
    calibration is measured again, unchanged, by the run)."""
    got = _KEYS.get(id(text))
    if got is not None and got[0] is text:
        return got[1]
    key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    if len(_KEYS) >= 1024:
        del _KEYS[next(iter(_KEYS))]
    _KEYS[id(text)] = (text, key)
    return key


class Memo:
    """A bounded memo of a pure function's results, in two halves: the first entries, kept for the
    whole run (the calibration sample's, which the run measures again wherever the sample's
    documents sit in the input), and the recent ones, cleared when full (a step's results, which
    the inspection reads again right after the step)."""

    def __init__(self, max_items: int = 50_000) -> None:
        self.max_items = max_items
        self.items: dict[Any, Any] = {}  # the first max_items // 2 entries
        self.recent: dict[Any, Any] = {}

    def get(self, key: Any) -> Any:
        got = self.items.get(key)
        return got if got is not None else self.recent.get(key)

    def put(self, key: Any, value: Any) -> None:
        half = max(1, self.max_items // 2)
        if len(self.items) < half:
            self.items[key] = value
            return
        if len(self.recent) >= half:
            self.recent.clear()
        self.recent[key] = value


def dict_share(tokens: list[str], lang: str) -> float | None:
    """Share of ``tokens``' characters in dictionary words of ``lang`` (None: no dictionary).

    Weighted by length: a long random token weighs more than a short word that a random string
    hits by chance."""
    d = dictionary(lang)
    if d is None or not tokens:
        return None
    words, short = d
    cache = _DICT_CACHE.setdefault(lang, {})
    if len(cache) > 1_000_000:  # bounded on huge vocabularies
        cache.clear()
    hits = total = 0
    for t in tokens:
        v = cache.get(t)
        if v is None:
            v = cache[t] = _is_dict_token(t, words, short)
        n = len(t)
        total += n
        if v:
            hits += n
    return hits / total


def char_entropy(text: str) -> float:
    """Shannon entropy (bits) of the characters of ``text``.

    The terms are summed in the order of each character's first occurrence (a ``Counter``'s
    order, ``native.char_counts``), so the float result is the same whichever way the counts are
    taken."""
    if not text:
        return 0.0
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in native.char_counts(text))


# the non-empty normalised pieces are those of r"\s*(?:[·|•»›]|\n)\s*" (normalising drops the whitespace)
_SEGMENT_SPLIT = re.compile(r"[·|•»›\n]")


SHORT_SEGMENT = 50  # menu items, buttons, footer lines; wrapped prose lines are longer


def segments(text: str, *, short_only: bool = True) -> list[str]:
    """Pieces of a text (lines, and menu items between separators), normalised; by default only
    the short ones (2-50 characters), the candidates for boilerplate."""
    out = []
    for seg in _SEGMENT_SPLIT.split(text[:COMPRESS_PREFIX]):
        # str.split() and re's \s agree on every code point: the same as re.sub(r"\s+", " ", seg).strip()
        seg = " ".join(seg.split()).lower()
        if len(seg) >= 2 and (not short_only or len(seg) <= SHORT_SEGMENT):
            out.append(seg)
    return out


def boilerplate_share(text: str, frequent: frozenset[str] | set[str]) -> tuple[float, int]:
    """(share of the characters of all a document's segments taken by short segments frequent
    across the corpus (menus, footers, share buttons), number of segments)."""
    if native.compiled is not None and isinstance(frequent, (set, frozenset)):
        hits, total, n_segs = native.compiled.boilerplate_counts(text[:COMPRESS_PREFIX], frequent, SHORT_SEGMENT)
        return (hits / total, n_segs) if total else (0.0, 0)
    segs = segments(text, short_only=False)
    total = sum(map(len, segs))
    if not total:
        return 0.0, 0
    return sum(len(s) for s in segs if len(s) <= SHORT_SEGMENT and s in frequent) / total, len(segs)


# three of the same box-drawing line in a row: a table drawn with box characters (``┌────┬──┐``), which
# single-byte mojibake never leaves (it alternates lead and continuation bytes: ``╨┐╤Ç``)
DRAWN_RUNS = tuple(c * 3 for c in "\u2500\u2501\u2550\u2504\u2505")
_BOX_RUN = re.compile("[\u2500-\u257f]+")
_SPACE_RUN = re.compile("[ \t]{2,}")
_HYPHEN_END = re.compile(r"-\s")  # a whitespace token may end with a hyphen only where this occurs


def doc_stats(text: str, lang: str | None, order: WordOrderModel | None = None,
              frequent_segments: frozenset[str] | None = None) -> dict[str, float | None]:
    """All statistics of one document (None where undefined, e.g. no dictionary for ``lang``).

    Token statistics are computed over the document's DISTINCT tokens weighted by their counts
    (one ``Counter`` at C speed, then one Python pass over a few hundred distinct tokens instead
    of several passes over every token); every such statistic is a ratio of integer sums, so the
    values are exactly those of a pass over every token (tests/curate/test_textstats.py). A text that
    draws a table with box characters (``DRAWN_RUNS``) is measured with them as spaces and each run
    of spaces and tabs as one."""
    original = text
    if any(run in text for run in DRAWN_RUNS):  # a drawn table: its lines are layout, not text
        text = _SPACE_RUN.sub(" ", _BOX_RUN.sub(" ", text))
    ids = _TABLE.text_ids(text)  # the ids of text.split()'s tokens
    n = len(ids)
    lines, n_punct = native.text_lines(text)  # non-blank lines, those ending in _TERMINAL
    n_lines = len(lines) or 1
    # the first COMPRESS_PREFIX characters encode to at least COMPRESS_PREFIX bytes: same prefix
    raw = text[:COMPRESS_PREFIX].encode("utf-8")[:COMPRESS_PREFIX]
    out: dict[str, float | None] = {
        "n_words": float(n),
        "n_chars": float(len(original)),
        "n_lines": float(len(lines)),
        "words_per_line": n / n_lines,
        "line_punct_share": n_punct / n_lines,
        "compress_ratio": len(raw) / len(zlib.compress(raw, 6)) if raw else 0.0,
        "char_entropy": char_entropy(text[:COMPRESS_PREFIX]),
        "mojibake": js.mojibake_rate(text),
    }
    out["label_share"], out["label_char_share"] = js.label_share(lines, js.stopwords(lang) if lang else frozenset())
    if n == 0:
        out.update(mean_word_len=0.0, alpha_share=0.0, dict_share=None, dup_line_share=0.0,
                   top_word_share=0.0, vocab_richness=None, word_order=None, word_pairs=0,
                   stuffing=None, rep_ngram_share=None, stamped_share=None,
                   line_start_variety=None, oov_share=None, plain_share=0.0, stop_share=None,
                   damaged_share=None, damaged_words=None)
        return out
    lows, size, total = _token_stats(out, ids, lang, lines, text)
    # the next reader of the document's tokens (the toxicity scorer) asks for those of the original text
    _remember_lows(original, lows if original is text else _TABLE.low[_TABLE.text_ids(original)])
    distinct = _repetition_stats(out, lines, lows, size, total)
    # distinct words / sqrt(words): about constant for running text of any length (Heaps' law with
    # exponent ~0.5-0.7), small for a few words repeated (keyword spam, menus, one line repeated)
    out["vocab_richness"] = distinct / math.sqrt(n) if n >= 30 else None
    out["word_order"], out["word_pairs"] = order.score_pairs(text) if order is not None else (None, 0)
    if frequent_segments is not None:
        out["boilerplate_share"], n_seg = boilerplate_share(text, frequent_segments)
        out["n_segments"] = float(n_seg)
    return out


def _token_stats(out: dict[str, float | None], ids: np.ndarray, lang: str | None,
                 lines: list[str], text: str) -> tuple[np.ndarray, np.ndarray, int]:
    """Token-table statistics of a document with words (``ids``: the token table's ids of its
    whitespace tokens), into ``out``; returns its lower-cased token ids, token lengths and their total."""
    n = len(ids)
    size = _TABLE.size[ids]
    total = int(size.sum())
    out["mean_word_len"] = total / n
    out["alpha_share"] = int(_TABLE.alpha[ids].sum()) / n
    d = dictionary(lang) if lang else None
    in_dict = _TABLE.dict_flags(lang, ids, d) if d is not None else None
    out["dict_share"] = int((size * in_dict).sum()) / total if in_dict is not None else None
    lows = _TABLE.low[ids]
    plain = _TABLE.plain[ids]
    n_plain = int(plain.sum())
    out["plain_share"] = n_plain / n
    out["oov_share"] = (int((plain & (in_dict == 0)).sum()) / n_plain
                        if in_dict is not None and n_plain >= 30 else None)
    dmg = _damaged(lang, ids, plain & (in_dict == 0), lows, _HYPHEN_END.search(text) is not None) if (
        in_dict is not None and n_plain >= DAMAGED_MIN_WORDS) else None
    if dmg is not None:  # spaces and specks read as stops
        dmg += stray_stops(text, OPEN_WORDS if lang == "en" else frozenset())
    out["damaged_words"] = float(dmg) if dmg is not None else None
    out["damaged_share"] = dmg / n_plain if dmg is not None else None
    if in_dict is not None:
        stop = _TABLE.stop_flags(lang, lows, js.stopwords(lang))
        out["stop_share"] = int(stop.sum()) / n
        content = (in_dict == 1) & (_TABLE.low_len[lows] > 2) & ~stop
        out["stuffing"] = js.stuffing(lows, content)
    else:
        out["stop_share"] = out["stuffing"] = None
    out["rep_ngram_share"] = js.rep_ngram_share(lows)
    out["stamped_share"] = js.stamped_share(lines)
    out["line_start_variety"] = js.line_start_variety(lines)
    return lows, size, total


class _Cores:
    """``w in cores``: ``w`` is the lower-cased form, edge punctuation stripped, of one of a
    document's tokens (``core_ids``: their ids in ``_TABLE.core_index``)."""

    def __init__(self, core_ids: np.ndarray) -> None:
        self.mark = np.zeros(len(_TABLE.core_index), bool)
        self.mark[core_ids] = True

    def __contains__(self, w: object) -> bool:
        j = _TABLE.core_index.get(w) if isinstance(w, str) else None
        return j is not None and bool(self.mark[j])


def _damaged(lang: str, ids: np.ndarray, oov: np.ndarray, lows: np.ndarray, hyphens: bool = True) -> int | None:
    """``ocrstats.damaged_words`` of a document from its token-table ids (the document's whitespace
    tokens are ``_TABLE.tokens[i]`` for ``i`` in ``ids``); ``hyphens``: some token may end with a hyphen."""
    tokens = _TABLE.tokens
    uniq, counts = native.unique_counts(ids)
    # ocrstats._kind's tokens (2+ chars, not plain) that occur once: damaged_words counts no other
    keep = (_TABLE.size[uniq] >= 2) & ~_TABLE.plain[uniq] & (counts == 1)
    uniq, counts = uniq[keep], counts[keep]
    # and only those of a kind damaged_words reads (it skips the others)
    keep = _TABLE.kind_flags(uniq) == 1
    uniq, counts = uniq[keep], counts[keep]

    def present() -> _Cores:
        return _Cores(_TABLE.low_core[lows])

    after = np.flatnonzero(oov[1:]) + 1 if hyphens else ()  # the second half of a word hyphenated
    if len(after):                       # across a space or a line ("op-\n  tional") is not a word of its own
        hyphened = [p for p, i in zip(after.tolist(), ids[after - 1].tolist(), strict=True)
                    if len(t := tokens[i]) > 1 and t[-1] == "-" and t[-2].isalpha()]
        if hyphened:
            oov = oov.copy()
            oov[hyphened] = False
    # in the order of their first occurrence in the document (what the counting depends on), and
    # "rindex", "rindex," and "(rindex)" are one word
    cores = Counter(tokens[i].strip(_EDGE_PUNCT) for i in ids[oov].tolist())
    anchors = np.flatnonzero(oov)[:MAX_SPLIT_ANCHORS].tolist()
    broken = 0
    if anchors and native.compiled is not None:
        broken = native.compiled.split_words(tokens, anchors, dictionary(lang)[0], _EDGE_PUNCT, ids)
    elif anchors:
        broken = split_words([tokens[i] for i in ids.tolist()], anchors, dictionary(lang)[0])
    return damaged_words([tokens[i] for i in uniq.tolist()], counts.tolist(), list(cores), list(cores.values()),
                         present, lang, broken)


def _repetition_stats(out: dict[str, float | None], lines: list[str], lows: np.ndarray, size: np.ndarray,
                      total: int) -> int:
    """Duplicate-line and top-word shares into ``out``; returns the number of distinct lower-cased tokens."""
    distinct = len(native.unique_counts(lows)[0])
    # lower-cased tokens of 3+ characters (the original token's length) and their counts
    uniq, counts = native.unique_counts(lows[size > 2])
    dup_chars, line_chars = native.dup_line_counts(lines)
    out["dup_line_share"] = dup_chars / max(1, line_chars)
    # share of the text's characters taken by its most frequent word (of 3+ chars): keyword spam
    if len(uniq):
        score = counts * _TABLE.low_len[uniq]
        best = np.flatnonzero(score == score.max()).tolist()
        # ties go to the greatest word, as max() over (count * length, word)
        w, c = max((_TABLE.low_words[int(uniq[k])], int(counts[k])) for k in best)
        out["top_word_share"] = c * len(w) / max(1, total)
    else:
        out["top_word_share"] = 0.0
    return distinct
