"""Statistics of the garbage kinds that the style statistics of ``curate.textstats`` do not see.

Each is a property of the document alone, the same for every domain (no calibration), and cheap:
numpy over the token ids that ``textstats.doc_stats`` already has, or one regex over a bounded
prefix. Used by the ``auto`` filter profile (``curate.steps.garbage``); docs/curation.md lists the
rules and why each library or measure was taken.

* ``mojibake``: ftfy's badness measure (``ftfy.badness.badness``: character sequences that are
  almost only ever produced by decoding text with the wrong codec) per 1,000 characters, plus
  U+FFFD replacement characters (bytes a lossy decoder could not map). ASCII text has neither and
  is not scanned. The normaliser repairs what ftfy can (``curate.steps.normalize``), so what this
  measures after it is mojibake that could not be repaired.
* ``stuffing``: share of a document's content words (dictionary words of its language that are not
  among its 100 most frequent words) taken by its 3 most frequent content words. Keyword stuffing
  repeats a few content words; running text of any register spreads them (Zipf's law on content
  words); and ``rep_ngram_share``: share of tokens inside a 5-gram (lower-cased) that occurs twice or
  more (the repeated phrases of templates and spun text; Gopher's duplicated-n-gram statistic).
* ``stamped_share``: share of lines with a timestamp (clock time, ISO date, Unix epoch) in their
  first 40 characters: log and trace lines; prose, lists, code and numbered clauses do not start
  most of their lines with the time of day; ``line_start_variety``: distinct line starts (first two
  tokens) per line: a program prints a few fixed phrases line after line ("Setting up ...",
  "Unpacking ..."), people vary how lines begin.
"""

from __future__ import annotations

import re
from functools import lru_cache

import numpy as np

MOJIBAKE_PREFIX = 32_768  # characters scanned by ftfy's regex: the rate settles long before that
MAX_LINES = 400  # lines looked at for stamped_share
_DIGIT_RUN = re.compile(r"\d+")
# a clock time, an ISO date or a Unix epoch (10 digits, optional fraction): what log and trace lines start with
_STAMP = re.compile(r"(?<!\d)(?:\d{1,2}:\d{2}:\d{2}|\d{4}-\d{2}-\d{2}|1\d{9}(?:\.\d+)?)(?!\d)")


@lru_cache(maxsize=16)
def stopwords(lang: str) -> frozenset[str]:
    """The 100 most frequent words of ``lang`` (wordfreq), lower-cased; empty without a list."""
    import wordfreq

    if lang not in wordfreq.available_languages():
        return frozenset()
    return frozenset(w.lower() for w in wordfreq.top_n_list(lang, 100))


def mojibake_rate(text: str) -> float:
    """Mojibake sequences (ftfy) and U+FFFD per 1,000 characters of the first MOJIBAKE_PREFIX."""
    if text.isascii():
        return 0.0
    from ftfy.badness import badness

    head = text[:MOJIBAKE_PREFIX]
    return 1000.0 * (badness(head) + head.count("\ufffd")) / max(1, len(head))


def stuffing(lows: np.ndarray, content: np.ndarray) -> float | None:
    """Share of the content tokens taken by the 3 most frequent content words (None: < 40 of them)."""
    ids = lows[content]
    if len(ids) < 40:
        return None
    counts = np.unique(ids, return_counts=True)[1]
    if len(counts) > 3:
        counts = np.partition(counts, len(counts) - 3)[-3:]
    return float(counts.sum()) / len(ids)


_MIX = np.uint64(0x9E3779B97F4A7C15)


def rep_ngram_share(lows: np.ndarray, n: int = 5) -> float | None:
    """Share of tokens covered by an n-gram of lower-cased tokens that occurs 2+ times (None: < 40 tokens)."""
    m = len(lows) - n + 1
    if len(lows) < 40 or m < 2:
        return None
    x = lows.astype(np.uint64)
    h = np.zeros(m, np.uint64)
    with np.errstate(over="ignore"):
        for k in range(n):
            h = h * _MIX + x[k:k + m] + np.uint64(k + 1)
    _, inv, counts = np.unique(h, return_inverse=True, return_counts=True)
    rep = counts[inv] >= 2
    if not rep.any():
        return 0.0
    cover = np.zeros(len(lows), bool)
    for k in range(n):
        cover[k:k + m] |= rep
    return float(cover.mean())


def stamped_share(lines: list[str]) -> float | None:
    """Share of lines (8+ lines; the first MAX_LINES) with a timestamp in their first 40 characters."""
    if len(lines) < 8:
        return None
    head = lines[:MAX_LINES]
    search = _STAMP.search
    return sum(search(ln, 0, 40) is not None for ln in head) / len(head)


def line_start_variety(lines: list[str]) -> float | None:
    """Distinct line starts (the first token, and the second when it is a word; lower-cased, digit
    runs as 0) per line (8+ lines; the first MAX_LINES): a program prints a few fixed phrases line
    after line, with varying arguments."""
    if len(lines) < 8:
        return None
    head = lines[:MAX_LINES]
    sub = _DIGIT_RUN.sub
    starts = set()
    for ln in head:
        t = ln.split(None, 2)
        # the second token only when it is a word: "Unpacking libfoo:amd64" and "Unpacking libbar" agree
        starts.add(sub("0", (t[0] + " " + t[1] if len(t) > 1 and t[1].isalpha() else t[0]).lower()))
    return len(starts) / len(head)
