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

from curate import native

MOJIBAKE_PREFIX = 32_768  # characters scanned by ftfy's regex: the rate settles long before that
EDGE_PUNCT = "\"'`()[]{}<>.,;:!?*_-–—«»“”‘’…|/\\#~=+"  # stripped from a token's ends to get its core
TERMINAL = (".", "!", "?", ":", ";", '"', "'", ")", "”", "’", "。", "！", "？", "…")  # closes a sentence or clause
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
    """Mojibake per 1,000 characters of the first MOJIBAKE_PREFIX: ftfy's badness sequences, U+FFFD,
    and words that mix scripts or letters and symbols (:func:`mixed_tokens`)."""
    head = text[:MOJIBAKE_PREFIX]
    if head.isascii() or MOJIBAKE_CHARS.search(head) is None:
        return 0.0
    from curate.badness import badness  # ftfy's badness, scanning only where a match can be

    return 1000.0 * (badness(head) + head.count("\ufffd") + mixed_tokens(head)) / max(1, len(head))


# what decoding UTF-8 with a single-byte codec (or lossily) always leaves: Latin-1 supplement and
# Latin extended letters, Greek or Cyrillic, box drawing, U+FFFD. A text whose only non-ASCII
# characters are typographic punctuation (’ “ ” – — …) cannot be such mojibake and is not scanned.
MOJIBAKE_CHARS = re.compile("[\u0080-\u024f\u0370-\u04ff\u2500-\u259f\ufffd]")
_SCRIPT_CACHE: dict[str, str] = {}
_NON_ASCII_TOKEN = re.compile(r"[^\s]*[^\x00-\x7f][^\s]*")


def _script(ch: str) -> str:
    """A letter's script (first word of its Unicode name: LATIN, CYRILLIC, GREEK, ...), 'SYM' for a
    symbol (box drawing, math, currency), '' for anything else."""
    got = _SCRIPT_CACHE.get(ch)
    if got is None:
        import unicodedata

        cat = unicodedata.category(ch)
        if cat.startswith("L"):
            got = (unicodedata.name(ch, "") or "?").split(" ", 1)[0]
        elif cat in ("So", "Sm", "Sc"):  # not Sk: modifier accents mark pronunciations ("hak´r")
            got = "SYM"
        else:
            got = ""
        if len(_SCRIPT_CACHE) < 100_000:
            _SCRIPT_CACHE[ch] = got
    return got


def mixed_tokens(text: str) -> int:
    """Non-ASCII words whose letters come from two scripts ("ΓÇÿconfig", "Б─≤"), or with a symbol
    between letters ("R√∂hling"): what decoding UTF-8 with a single-byte codec that ftfy does not
    undo (cp437, mac_roman, koi8-r, ...) leaves. Real words keep to one script."""
    n = 0
    toks = native.compiled.nonascii_tokens(text) if native.compiled is not None else _NON_ASCII_TOKEN.findall(text)
    for tok in toks:  # ASCII tokens never mix scripts
        kinds = {_script(c) for c in tok if not c.isascii() or c.isalpha()}
        kinds.discard("")
        letters = kinds - {"SYM"}
        if len(letters) > 1 or (letters and "SYM" in kinds and _symbol_inside(tok)):
            n += 1
    return n


def _symbol_inside(tok: str) -> bool:
    """A symbol with a letter on each side somewhere in ``tok`` (not a leading or trailing sign)."""
    core = tok.strip("\"'`()[]{}<>.,;:!?*_-–—«»“”‘’…|/\\#~=+")
    return any(_script(c) == "SYM" and core[:i].strip() and any(x.isalpha() for x in core[:i])
               and any(x.isalpha() for x in core[i + 1:]) for i, c in enumerate(core))


def stuffing(lows: np.ndarray, content: np.ndarray) -> float | None:
    """Share of the content tokens taken by the 3 most frequent content words (None: < 40 of them)."""
    ids = lows[content]
    if len(ids) < 40:
        return None
    counts = native.unique_counts(ids)[1]
    if len(counts) > 3:
        counts = np.partition(counts, len(counts) - 3)[-3:]
    return float(counts.sum()) / len(ids)


def rep_ngram_share(lows: np.ndarray, n: int = 5) -> float | None:
    """Share of tokens covered by an n-gram of lower-cased tokens that occurs 2+ times (None: < 40 tokens)."""
    m = len(lows) - n + 1
    if len(lows) < 40 or m < 2:
        return None
    # the n-gram at i hashes as h = h * 0x9E3779B97F4A7C15 + lows[i + k] + (k + 1), k = 0..n-1 (uint64, wrapping)
    return native.rep_ngram_cover(lows, n) / len(lows)


def stamped_share(lines: list[str]) -> float | None:
    """Share of lines (8+ lines; the first MAX_LINES) with a timestamp in their first 40 characters."""
    if len(lines) < 8:
        return None
    if native.compiled is not None and type(lines) is list:
        return native.compiled.stamped_lines(lines, MAX_LINES, 40) / min(len(lines), MAX_LINES)
    head = lines[:MAX_LINES]
    search = _STAMP.search
    return sum(search(ln, 0, 40) is not None for ln in head) / len(head)


def line_start_variety(lines: list[str]) -> float | None:
    """Distinct line starts (the first token, and the second when it is a word; lower-cased, digit
    runs as 0) per line (8+ lines; the first MAX_LINES): a program prints a few fixed phrases line
    after line, with varying arguments."""
    if len(lines) < 8:
        return None
    if native.compiled is not None and type(lines) is list:
        return native.compiled.line_starts(lines, MAX_LINES) / min(len(lines), MAX_LINES)
    head = lines[:MAX_LINES]
    raw = set()
    for ln in head:
        t = ln.split(None, 3)
        if len(t) > 1 and not t[0][0].isalnum() and not any(map(str.isalnum, t[0])):
            t = [t[0] + " " + t[1], *t[2:]]  # a bullet ("*", "--") is not a start of its own
        # the second token only when it is a word: "Unpacking libfoo:amd64" and "Unpacking libbar" agree
        raw.add(t[0] + " " + t[1] if len(t) > 1 and t[1].isalpha() else t[0])
    # lower-cased with digit runs as 0: the same set whether mapped before or after removing repeats
    sub = _DIGIT_RUN.sub
    return len({sub("0", s.lower()) for s in raw}) / len(head)


_SEPARATORS = re.compile(r"\s*[·|•»›]\s*")
_SEPARATOR_CHAR = re.compile(r"[·|•»›]")  # matches where _SEPARATORS does (its \s* are optional)
_NOT_LABEL = re.compile(r"[=(){};<>\[\]$%@#\\/:\d]")  # code, paths, numbers, key: value
_NUMBERING = re.compile(r"(?:\d+(?:\.\d+)*\.?|[A-Z]\.|[ivx]+\.)\s+")  # "2.1. ", "A. ", "iv. "
_API_ENTRY = re.compile(r"[A-Za-z_][\w.]*\(\)")  # "BytesGenerator.flatten()" in an API index
LABEL_WORDS = 7
MAX_SEGMENTS = 2000


def _is_label(s: str, stop: frozenset[str]) -> bool:
    m = _NUMBERING.match(s)
    if m:
        s = s[m.end():]
    if s.endswith("()") and _API_ENTRY.fullmatch(s):  # the pattern ends in "()"
        return True
    if not s or not s[0].isupper() or s.endswith(TERMINAL) or s.endswith(",") or _NOT_LABEL.search(s):
        return False
    words = s.split(None, LABEL_WORDS)
    # a line of verse or a sentence cut by wrapping has grammar: two or more function words
    return len(words) <= LABEL_WORDS and (len(words) <= 2 or sum(w.lower() in stop for w in words) <= 1)


def label_share(lines: list[str], stop: frozenset[str] = frozenset()) -> tuple[float | None, float | None]:
    """Share of a text's segments (its non-empty ``lines``, split again at ``·|•»›``; the first
    MAX_SEGMENTS; 8+ of them) that are navigation labels: at most LABEL_WORDS words, starting with
    a capital, no closing punctuation or comma, no digits or code characters and at most one of the
    function words ``stop`` once a leading section number is set aside ("Home", "About us", "Previous topic", "2.1. Listing whole packages"), or one API
    name with ``()`` (a table of contents of an API page). Menus, sidebars, footers and tables of
    contents are mostly labels; prose, code, lists and tables are not. Returns (share of the
    segments, share of the segments' characters): an article with many headings has many label
    segments but most of its characters in paragraphs."""
    if native.compiled is not None and type(lines) is list and isinstance(stop, (set, frozenset)):
        got = native.compiled.label_counts(lines, stop, MAX_SEGMENTS)
        if got is None:
            return None, None
        n_labels, n_segs, label_chars, seg_chars = got
        return n_labels / n_segs, label_chars / seg_chars
    segs: list[str] = []
    for ln in lines[:MAX_SEGMENTS]:
        s = ln.strip()
        if _SEPARATOR_CHAR.search(s) is None:
            segs.append(s)
        else:
            segs.extend(x for x in _SEPARATORS.split(s) if x)
    segs = [s for s in segs if len(s) >= 2]
    if len(segs) < 8:
        return None, None
    labels = [s for s in segs if _is_label(s, stop)]
    return len(labels) / len(segs), sum(map(len, labels)) / sum(map(len, segs))


PROSE_PREFIX = 65_536  # characters looked at for prose_chars
PROSE_LINE_WORDS = 5  # a line inside a prose run has at least this many words (its last line: any)
PROSE_MIN_WORDS = 12  # a prose run has at least this many words (not a heading phrased as a question) ...
PROSE_MIN_FUNCTION_WORDS = 2  # ... of which at least this many are function words (grammar)


def prose_chars(text: str, stop: frozenset[str] = frozenset()) -> tuple[int, int]:
    """(characters in prose runs, characters of non-blank lines) of the first PROSE_PREFIX characters.

    A prose run is a block of consecutive lines (no blank line, label or separator line between
    them; hard-wrapped paragraphs are one run) of PROSE_LINE_WORDS+ words each, whose last line
    may be shorter but ends the run with closing punctuation (``TERMINAL``): PROSE_MIN_WORDS+ words
    with PROSE_MIN_FUNCTION_WORDS+ function words ``stop``. A run met again in the document counts
    once: a footer's sentences repeated page after page are boilerplate by their recurrence. A page
    whose navigation labels fill most of its segments (``label_share``) but which also holds
    paragraphs of sentences is a page of content with its menus, not a menu."""
    prose = total = 0
    run: list[str] = []
    seen: set[str] = set()

    def close() -> None:
        nonlocal prose
        if run and run[-1].endswith(TERMINAL):
            words = " ".join(run).split()
            key = " ".join(words)
            if (len(words) >= PROSE_MIN_WORDS and key not in seen
                    and sum(w.lower() in stop for w in words) >= PROSE_MIN_FUNCTION_WORDS):
                prose += sum(map(len, run))
                seen.add(key)
        run.clear()

    for raw in text[:PROSE_PREFIX].split("\n"):
        s = raw.strip()
        if not s:
            close()
            continue
        total += len(s)
        if _SEPARATOR_CHAR.search(s) is not None or _is_label(s, stop):
            close()
        elif len(s.split(None, PROSE_LINE_WORDS - 1)) >= PROSE_LINE_WORDS:
            if run and run[-1].endswith(TERMINAL) and s[0].isupper():
                close()  # a new sentence on a new line: runs of lines are the same either way
            run.append(s)
        elif run and s.endswith(TERMINAL):
            run.append(s)  # the short last line of a wrapped paragraph
            close()
        else:
            close()
    close()
    return prose, total
