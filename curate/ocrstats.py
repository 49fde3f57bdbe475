"""Damaged words: the share of a document's words that look like OCR or conversion damage.

Text that went through bad OCR or a broken conversion has words that are *almost* words of its own
vocabulary: ``tlie`` next to ``the``, ``perrnission`` next to ``permission``, two words run
together (``ofthe``, ``canredistribute``) and case flipped inside a word (``tHIS``). Real documents
have out-of-dictionary words too (identifiers, names, jargon), but those are not near misses of
words the same document spells correctly, and they do not split into a frequent function word and
another word. ``damaged_words`` counts, among a document's lower-case words of 3+ letters that are
not in the language's dictionary:

* **near misses**: the word is within a small edit of a frequent dictionary word (one deletion,
  insertion or substitution; for words of 6+ letters also two-for-one confusions such as ``rn`` for
  ``m``) *and that word occurs in the same document* (found with a deletion index of the language's
  most frequent words, as SymSpell does, without its per-lookup cost); a word one edit from one of
  the 1,000 most frequent words, or of 7+ letters and one edit from any of the 20,000 most frequent
  (``tomorroow``, ``dopllars``: the 200,000-word dictionary holds the real words that close to a
  frequent one, inflections included), counts without that condition;
* **run-together words**: the word splits into two frequent words, one of them among the
  language's most frequent (``ofthe``, ``andmodify``);
* **broken words**: the word joined to its neighbour makes a dictionary word (``pa cket``);

plus, among words used once: case flipped inside (``tHIS``; one capital, ``pubLic``, not ``iPhone``);
a bracket, brace or underscore for a letter (``informa[ion``; 6+ characters, not ``user_name``); digits
for letters (``1ist``, ``0f``; not ``1s``); a stray mark in or at a frequent word (``wa^s``, ``out˙``);
two words joined by a mark, a stop or an apostrophe (``removes:a``, ``the.effects``, ``of'sight``; not
``os.path``, ``don't``); accents on a word out of the dictionary that read without them as one of the
1,000 most frequent (``ín``). ``stray_stops`` adds spaces and specks read as stops (``of. the``) and
opening quotes nothing closes. Per lower-case word of 3+ letters, a misspelling here and there stays
far below the threshold (``garbage_max_damaged_share``, ``damaged_min_words``).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Container
from functools import lru_cache

from curate.junkstats import EDGE_PUNCT

NEAR_WORDS = 20_000  # frequent words a near miss may be of
SPLIT_WORDS = 30_000  # words a run-together word may split into
FUNCTION_WORDS = 100  # one half of a run-together word is among these
COMMON_WORDS = 1000  # a near miss of one of these counts even when the document does not spell it right
LONG_NEAR_LETTERS = 7  # ... as does a word of this many letters one edit from any of the NEAR_WORDS
CONTENT_WORDS = 5000  # the other half of a run-together word is among these
DAMAGED_MIN_WORDS = 30  # lower-case words of 3+ letters a document needs before it is judged
MAX_CANDIDATES = 400  # distinct out-of-dictionary words looked at per document
MAX_SPLIT_ANCHORS = 1000  # positions of out-of-dictionary words tried for a broken word per document
_CASE_FLIP = re.compile(r"[a-z]+[A-Z]{2,}")
# one capital inside a lower-case word (``pubLic``: OCR's L for l), 2+ letters before it (not ``iPhone``)
_ONE_CAPITAL = re.compile(r"[a-z]{2,}[A-Z][a-z]+")
# a bracket, brace or underscore between letters where OCR lost a letter (``informa[ion``, ``fo_lowing``)
_LOST_LETTER = re.compile(r"[a-z]+[\[\]{}_][a-z]+")
LOST_MIN = 6  # characters of such a token: shorter ones are code (``x[i``, ``p_n``)
_LETTERS = "abcdefghijklmnopqrstuvwxyz"
# a word with digits where letters belong: 0 for o, 1 for l or i, 5 for s, ...
_MIXED_DIGITS = re.compile(r"(?=[a-z0-9]*[a-z])(?=[a-z0-9]*[0-9])[a-z0-9]{3,}")
# the readings tried: 1 as l or i, 8 as s or b (the other digits have one usual confusion)
_READINGS = tuple(str.maketrans("013456789", f"o{one}easbt{eight}g") for one in "li" for eight in "sb")
# two characters, a letter and a digit, not a number before a unit letter (1s, 5m, 2d, 4k, 0x)
_SHORT_DIGITS = re.compile(r"[a-z][0-9]|[0-9][acefgijlnopqrtuvwyz]")
# a mark OCR leaves inside a word; not apostrophes, hyphens, dots, slashes, underscores, nor the quotes and
# asterisks that dictionaries and markup put inside words (stress, syllables: ``de"cent*ly``; ``f*ck``)
_MARKS = "~^|\u02d9\u00b7\u00b8`\u00b4\u00a8\u00b0,;:\u2018"
_INNER_MARK = re.compile(f"[a-z]+[{re.escape(_MARKS)}][a-z]+")
# ... or at a word's edge, for the marks that are not edge punctuation (``out˙``, ``not·``, ``^the``)
_EDGE_MARKS = "".join(c for c in _MARKS if c not in EDGE_PUNCT)
_MARK_SPLIT = re.compile(f"[{re.escape(_MARKS)}]")
_EDGE_MARK = re.compile(f"[{re.escape(_EDGE_MARKS)}][a-z]{{3,}}|[a-z]{{3,}}[{re.escape(_EDGE_MARKS)}]")
_EDGE = EDGE_PUNCT
# two words joined by a full stop or an apostrophe where a space belongs (``as.an``, ``the.effects``,
# ``triggers.in``, ``of'sight``, ``on’the``; not ``os.path``, ``a.out``, ``don't``, ``they're``, ``o'clock``)
_DOT_JOIN = re.compile(r"([a-z]{2,})\.([a-z]{2,})")
_APOS_JOIN = re.compile(r"([a-z]{2,}|a|i)['\u2019]([a-z]{3,})")
# words that never end a sentence: a full stop after one, then a lower-case word on the same line, is a
# space read as a stop (``of. the``, ``the. effects``), in lower-case text too
OPEN_WORDS = frozenset(("the", "a", "an", "and", "or", "nor", "of", "if", "than", "my", "your", "their", "its",
                        "our", "very"))
_STOP_THEN_LOWER = re.compile(r"\.[ \t]+[a-z]")
# a closing single quote, not an apostrophe inside a word
_CLOSING = re.compile("\u2019(?![A-Za-z])")
# the tags of _kind's readings
SEEN, TOP, WORD, ACCENT, JOINED, LOWERED, LOST = "seen", "top", "word", "accent", "joined", "lowered", "lost"


def _deletes(w: str) -> set[str]:
    return {w[:i] + w[i + 1:] for i in range(len(w))}


class NearMissIndex:
    """A deletion index of a language's frequent words plus its run-together split test."""

    def __init__(self, ranked: list[str]) -> None:
        self.rank = {w: i for i, w in enumerate(ranked[:SPLIT_WORDS]) if w.isalpha()}
        index: dict[str, list[str]] = {}
        for w in ranked[:NEAR_WORDS]:
            if len(w) < 3 or not w.isalpha():
                continue
            for v in (w, *_deletes(w)):
                got = index.setdefault(v, [])
                if len(got) < 8:
                    got.append(w)
        self.index = {k: tuple(v) for k, v in index.items()}
        self._memo: dict[str, tuple[bool, tuple[str, ...], tuple[str, ...]]] = {}

    def _split(self, w: str) -> bool:
        """Two words run together: one among the FUNCTION_WORDS most frequent, the other among the
        CONTENT_WORDS with 4+ letters, or both among the FUNCTION_WORDS (``ofthe``, ``andmake``;
        ``in`` + ``crust`` and ``sir`` + ``up`` are not)."""
        rank = self.rank
        for k in range(2, len(w) - 1):
            ra, rb = rank.get(w[:k]), rank.get(w[k:])
            if ra is None or rb is None:
                continue
            other = len(w) - k if ra <= rb else k  # the length of the less frequent half
            if max(ra, rb) < FUNCTION_WORDS or (min(ra, rb) < FUNCTION_WORDS and max(ra, rb) < CONTENT_WORDS
                                                 and other >= 4):
                return True
        return w[0] == "a" and self.rank.get(w[1:], SPLIT_WORDS) < CONTENT_WORDS  # "acopy"

    def _near(self, w: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(frequent words within one edit of ``w``, those and the frequent words ``w`` reads as
        with two adjacent letters standing for one, ``rn`` for ``m``, ``li`` for ``h``; the
        second for words of 6+ letters only)."""
        index = self.index
        near1 = {x for v in (w, *_deletes(w)) for x in index.get(v, ())}
        near2 = set(near1)
        if len(w) >= 6:  # two adjacent letters for one: the pair deleted here, the letter in the word
            near2.update(x for i in range(len(w) - 1) for x in index.get(w[:i] + w[i + 2:], ()))
        return tuple(sorted(near1)), tuple(sorted(near2))

    def judge(self, w: str) -> tuple[bool, tuple[str, ...], tuple[str, ...]]:
        """(is ``w`` a run-together word, the frequent words it is one edit from, those plus the
        ones it reads as with two adjacent letters standing for one)."""
        got = self._memo.get(w)
        if got is None:
            if len(self._memo) >= 200_000:
                self._memo.clear()
            if len(w) < 3:
                got = (False, (), ())
            elif len(w) == 3:  # a substitution only: "tbe", "thc"
                got = (False, tuple(x for x in self._near(w)[0] if len(x) == 3), ())
            else:
                got = (self._split(w), *self._near(w))
            self._memo[w] = got
        return got


@lru_cache(maxsize=16)
def near_miss_index(lang: str) -> NearMissIndex | None:
    import wordfreq

    if lang not in wordfreq.available_languages():
        return None
    try:
        ranked = [w.lower() for w in wordfreq.top_n_list(lang, SPLIT_WORDS)]
    except (LookupError, ValueError):
        return None
    return NearMissIndex(ranked) if len(ranked) >= 1000 else None


def deaccent(w: str) -> str:
    """``w`` without its combining marks (``ín`` -> ``in``)."""
    return "".join(c for c in unicodedata.normalize("NFD", w) if not unicodedata.combining(c))


def misread_accents(w: str, rank: dict[str, int]) -> bool:
    """``w`` is not among the language's SPLIT_WORDS and, without its accents, is one of its
    COMMON_WORDS (``ín``, ``óur``; not French ``où``, a word of its own)."""
    plain = deaccent(w)
    return plain != w and plain.isascii() and w not in rank and rank.get(plain, COMMON_WORDS) < COMMON_WORDS


@lru_cache(maxsize=1 << 16)
def lost_letter(lang: str, a: str, b: str) -> bool:
    """One letter between ``a`` and ``b`` makes one of the language's SPLIT_WORDS (a LOST token's
    reading; snake case, ``user_name``, mostly reads as no word: the verdict is kept per token)."""
    rank = near_miss_index(lang).rank
    return any(a + c + b in rank for c in _LETTERS)


def _kind(tok: str) -> tuple[str, ...]:
    """What a non-plain token of 2+ characters may be (``tok`` is a whitespace token): ("",) for a
    case flip; (tag, reading, ...) for a token that counts when one of its readings is a word of the
    document (SEEN: digits where letters belong), among the language's FUNCTION_WORDS (TOP: two
    characters, a digit for a letter) or among its SPLIT_WORDS (WORD: a stray mark; LOWERED: one capital
    inside; LOST: a bracket, brace or underscore for a letter, the letters around it, :func:`lost_letter`); (ACCENT, word)
    for two accented letters (:func:`misread_accents`); () for anything else."""
    core = tok.strip(_EDGE)
    if len(core) < 2:
        return ()
    if _CASE_FLIP.fullmatch(core):
        return ("",)
    if _ONE_CAPITAL.fullmatch(core):
        return (LOWERED, core.lower())
    if len(core) >= LOST_MIN and _LOST_LETTER.fullmatch(core):
        i = next(k for k, c in enumerate(core) if not c.isalpha())
        return (LOST, core[:i], core[i + 1:])
    readings = lambda: tuple(w for w in dict.fromkeys(core.translate(r) for r in _READINGS) if w.isalpha())  # noqa: E731
    if len(core) == 2:
        if _SHORT_DIGITS.fullmatch(core):
            return (TOP, *r) if (r := readings()) else ()
        return (ACCENT, core) if core.isalpha() and core.islower() and not core.isascii() else ()
    if _MIXED_DIGITS.fullmatch(core):
        return (SEEN, *r) if (r := readings()) else ()
    if _INNER_MARK.fullmatch(core):
        if "\u2018" in core and tok.rstrip(_EDGE.replace("'", "").replace("\u2019", ""))[-1:] in ("'", "\u2019"):
            return ()  # a quotation glued to the word before it (``the‘shout'``), not a speck
        a, b = _MARK_SPLIT.split(core, maxsplit=1)
        return (WORD, "".join(c for c in core if c.isalpha()), a, b)
    if _EDGE_MARK.fullmatch(core):
        return (WORD, "".join(c for c in core if c.isalpha()))
    if m := _DOT_JOIN.fullmatch(core):
        return (JOINED, *m.groups(), ".")
    if m := _APOS_JOIN.fullmatch(core):
        return (JOINED, *m.groups(), "'")
    return ()


def _joined(a: str, b: str, rank: dict[str, int]) -> bool:
    """``a`` and ``b`` are both words of the language (each of 2+ letters, or ``a``/``i``)."""
    return all((len(w) > 1 or w in "ai") and w in rank for w in (a, b))


def _ascii_letter(c: str) -> bool:
    return "a" <= c <= "z" or "A" <= c <= "Z"


def _lone_stops(text: str) -> int:
    """A full stop or comma standing alone between a word and a lower-case word on the same line
    (``issued . in``: a speck read as punctuation; not Python's ``from . import``, nor ``git add .``
    at a line's end): the matches of ``([A-Za-z]+) [.,][ \\t]+(?=[a-z])`` whose word is not ``from``,
    found from the places ``" ."`` and ``" ,"`` occur (a scan for a character class costs more than
    the text's rare stops)."""
    n, size = 0, len(text)
    for mark in (" .", " ,"):
        i = text.find(mark)
        while i >= 0:
            j = i + 2
            if i > 0 and _ascii_letter(text[i - 1]) and j < size and text[j] in " \t":
                while j < size and text[j] in " \t":
                    j += 1
                if j < size and "a" <= text[j] <= "z":
                    k = i - 1
                    while k > 0 and _ascii_letter(text[k - 1]):
                        k -= 1
                    n += text[k:i] != "from"
            i = text.find(mark, i + 1)
    return n


def stray_stops(text: str, open_words: Container[str] = OPEN_WORDS) -> int:
    """Spaces read as full stops and specks read as stops (OCR): a full stop after one of ``open_words``
    followed on the same line by a lower-case word (``of. the``), a full stop or comma standing alone
    between a word and a lower-case word (``issued . in``), and opening single quotes
    beyond the closing ones (``‘trigger``)."""
    n = 0
    for m in _STOP_THEN_LOWER.finditer(text):
        i = j = m.start()
        while j > 0 and i - j <= 5 and "a" <= text[j - 1] <= "z":
            j -= 1
        if i - j <= 5 and (j == 0 or text[j - 1] in " \t\n") and text[j:i] in open_words:
            n += 1
    n += _lone_stops(text)
    opened = text.count("\u2018")  # opening single quotes that nothing closes (``‘trigger``)
    if opened:
        n += max(0, opened - len(_CLOSING.findall(text)))
    return n


_KINDS: dict[str, tuple[str, ...]] = {}


def split_words(sequence: list[str], anchors: list[int], words: frozenset[str]) -> int:
    """Words broken in two by a space (``pa cket``, ``overri des``): at each anchor (the position of
    an out-of-dictionary lower-case word in the whitespace token ``sequence``), the anchor joined to
    its neighbour, both plain lower-case letters with nothing between them, makes a dictionary word
    of 5+ letters."""
    n, found = len(sequence), 0
    last = -2
    for i in anchors:
        for a, b in ((i - 1, i), (i, i + 1)):
            if a <= last or a < 0 or b >= n:
                continue
            x, y = sequence[a].lstrip(_EDGE), sequence[b].rstrip(_EDGE)
            if x.isalpha() and y.isalpha() and x.islower() and y.islower() and len(x) + len(y) >= 5 and (
                    x + y) in words:
                found += 1
                last = b
                break
    return found


def damaged_words(tokens: list[str], counts: list[int], oov_words: list[str], oov_counts: list[int],
                  present: Callable[[], Container[str]], lang: str, split_words: int = 0) -> int | None:
    """The number of damaged words of a document (module docstring).

    ``tokens``/``counts``: the document's distinct whitespace tokens and how often each occurs;
    ``oov_words``/``oov_counts``: its distinct lower-case words of 3+ letters (edge punctuation
    stripped) that are not in the dictionary; ``present()``: every lower-cased word of the document,
    edge punctuation stripped (called only when needed); ``split_words``: the count of
    :func:`split_words`. Only words that occur once count: a word the document repeats is its
    vocabulary (an identifier, a name), not damage."""
    idx = near_miss_index(lang)
    if idx is None:
        return None
    if len(_KINDS) > 200_000:
        _KINDS.clear()
    kinds = list(map(_KINDS.get, tokens))
    damaged = 0
    seen: Container[str] | None = None
    targets: set[str] = set()
    rank = idx.rank
    for tok, kind, c in zip(tokens, kinds, counts, strict=True):
        if kind is None:
            kind = _KINDS[tok] = _kind(tok)
        if not kind or c > 1:
            continue
        tag = kind[0]
        if tag == "":
            damaged += 1
        elif tag == SEEN:
            seen = present() if seen is None else seen
            damaged += any(len(w) > 2 and w in seen for w in kind[1:])
        elif tag == WORD:  # the word without the mark, or two words joined by it (``removes:a``, ``part:of``)
            damaged += (len(kind[1]) > 2 and kind[1] in rank) or (
                len(kind) == 4 and _joined(kind[2], kind[3], rank) and kind[1] not in rank)
        elif tag == JOINED:  # a stop or apostrophe where a space belongs
            a, b = kind[1], kind[2]
            if kind[3] == ".":  # after an (English) open word, or before one of the most frequent words
                damaged += a in rank and b in rank and ((lang == "en" and a in OPEN_WORDS) or rank[b] < FUNCTION_WORDS)
            else:  # two words, the second of 3+ letters, that are not one word
                damaged += a in rank and b in rank and (a + b) not in rank
        elif tag == ACCENT:
            damaged += misread_accents(kind[1], rank)
        elif tag == LOWERED:  # one capital where a lower-case letter belongs
            damaged += kind[1] in rank
        elif tag == LOST:  # a mark where a letter belongs
            damaged += lost_letter(lang, kind[1], kind[2])
        else:
            damaged += any(rank.get(w, FUNCTION_WORDS) < FUNCTION_WORDS for w in kind[1:])
    for w, c in zip(oov_words[:MAX_CANDIDATES], oov_counts, strict=False):
        if c > 1:
            continue
        if not w.isascii() and misread_accents(w, rank):  # out of the dictionary, accents misread
            damaged += 1
            continue
        split, near1, near2 = idx.judge(w)
        if not split and near1 and min(idx.rank[x] for x in near1) < COMMON_WORDS:
            split = True  # one edit from one of the most frequent words: "tbe", "wih"
        if not split and near2:
            seen = present() if seen is None else seen
            hit = [x for x in near2 if x in seen]  # near a word the document spells right
            if hit and not targets.intersection(hit):  # one target once: "freshes", "freshet" of "fresh"
                targets.update(hit)
                damaged += 1
                continue
            damaged += len(w) >= LONG_NEAR_LETTERS and bool(near1)  # "tomorroow", "dopllars"
            continue
        damaged += split
    return damaged + split_words
