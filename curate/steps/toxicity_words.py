"""Bad words beyond the exact list match: a larger English lexicon and obfuscated spellings.

``load_extra`` reads the vendored English lists of ``curate/models/badwords/extra`` (MIT/BSD, see
the PROVENANCE there) and keeps single words of 3+ letters that are rare in general English
(``wordfreq`` Zipf frequency below ``ORDINARY_ZIPF``) and not on the vendored "okayish" list of
innocent words: common words with an ordinary sense ("strip", "drunk", identity terms) stay out.

``ObfuscatedWords`` counts, per whitespace token of a lower-cased text, the hits that the exact
match (``BadwordCounter``) does not see. A token's core (surrounding punctuation stripped) is:

* letters with symbols or digits (``sh1t``, ``$h!t``, ``f*ck``): leetspeak mapped to letters and
  masking characters matched as wildcards against list words of that length with the same first
  and last letters; in a token of compound length, one or two masks (``*#%``, not ``_``) are also
  tried with every letter for an inflection or compound (``assf*cker``);
* letters only, not a list word: runs of 3+ repeated letters collapsed (``fuuuck``), an inflection
  of a list word (``whores``) unless the token is commoner than the word in general English
  (``spices``), or a compound starting or ending with a "root" (a word of 4+ letters listed by at
  least ``ROOT_SOURCES`` vendored lists, not "okayish", that no ordinary English word starts or
  ends with, so ``cock`` of ``cocktail`` is not one) when the token is not an English word at all;
* letters separated by single spaces or dots (``f u c k``, ``f.u.c.k``): joined and looked up;
* an English word (in ``wordfreq``, so never read as a compound above) made of a root and a word
  (``dickhead``, ``motherfucking``, ``assfuck``: the other part a list word or an English word of
  Zipf ``COMPOUND_PART_ZIPF``+), counted only where written in lower case (``Dickson`` is a name).

Only tokens with a digit or symbol among letters, a tripled letter, or single-letter runs take the
slow path; ordinary tokens cost one dict lookup each (cached per distinct token).
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from functools import lru_cache
from itertools import product
from pathlib import Path
from string import ascii_lowercase
from typing import Any

from corpusmix.config import ConfigError

EXTRA_DIR = Path(__file__).resolve().parents[1] / "models" / "badwords" / "extra"
ORDINARY_ZIPF = 3.0  # list words at least this frequent in general English are left out
ROOT_MIN = 4  # shortest list word used as an inflection or compound root
ROOT_SOURCES = 4  # a root is listed by at least this many vendored lists (consensus that it is a bad word)
LEET = {"4": "a", "@": "a", "3": "e", "1": "il", "!": "il", "|": "il", "0": "o", "5": "s", "$": "s",
        "7": "t", "+": "t", "8": "b", "9": "g"}
MASK = "*#%_"  # characters that stand for one hidden letter
FILLED = "*#%"  # masking characters tried with every letter in a compound-length token
INFLECT = ("s", "es", "ed", "d", "ing", "in", "er", "ers", "y", "ie", "ies", "z")
STRIP = ".,;:?\"'()[]{}<>`“”‘’"
_SYMBOLIC = re.compile(r"[a-z][^a-z\s]|[^a-z\s][a-z]")  # a letter next to a digit or symbol
_TRIPLE = re.compile(r"([a-z])\1\1")
_SPACED = re.compile(r"(?<![^\s(\"'])[a-z](?:([ .])[a-z])(?:\1[a-z]){1,14}(?![^\s.,;:!?)\"'])")
# where a _SPACED match can start: one character before the separator that follows its first letter.
# A match's second letter sits between two separators, and its third letter is followed by a
# separator or by what may end a match (English " a " and " i " mostly are not). One pattern per
# separator: each opens with a literal, which the regex engine finds fast, where _SPACED, opening
# with a lookbehind, is tried at every position.
_SPACED_SEPS = (re.compile(r" (?=[a-z] [a-z](?![^\s.,;:!?)\"']))"), re.compile(r"\.(?=[a-z]\.[a-z](?![^\s.,;:!?)\"']))"))
_ALPHA = re.compile(r"[a-z]+")
_DOTTED = re.compile(r"[a-z]\.[a-z]")  # "f.u.c.k": a spaced word written with dots
HIT, SPACED, LOWER = 1, 2, 4  # LOWER: a hit only where the text writes the token in lower case
COMPOUND_PART_ZIPF = 3.0  # the other part of an English root compound: a word at least this common
# English root compounds whose root is read in its innocent sense (the cat): left out
INNOCENT_COMPOUNDS = frozenset({"pussycat", "pussycats", "pussyfoot", "pussyfoots", "pussyfooted",
                                "pussyfooting"})
_OBFUSCATION_CHARS = dict.fromkeys(map(ord, "".join(LEET) + MASK))  # str.translate: delete them
_LEET_CHARS = dict.fromkeys(map(ord, "".join(LEET)))  # str.translate: delete the leet characters
_OBFUSCATING = re.compile("[" + re.escape("".join(LEET) + MASK) + "]")  # a leet or masking character


def _zipf(freq: float) -> float:
    """``wordfreq.zipf_frequency`` of a single-token word from its list frequency: rounded to three
    significant digits, then to 0.01 on the Zipf scale, as wordfreq rounds them."""
    freq = round(freq, math.floor(-math.log(freq, 10)) + 3)
    return round(math.log(freq, 10) + 9, 2)


@lru_cache(maxsize=8)
def _english_vocab() -> dict[str, float]:
    """``wordfreq``'s English words (letters only) -> Zipf frequency, equal to ``zipf_frequency``.

    A listed word of letters is looked up in the frequency table directly, one pass over the list
    instead of a ``zipf_frequency`` call per word (which tokenises the word first);
    ``tests/curate/test_toxicity_obfuscation.py`` checks every word against ``zipf_frequency``."""
    import wordfreq

    freqs = wordfreq.get_frequency_dict("en")
    out: dict[str, float] = {}
    for w in wordfreq.top_n_list("en", 200_000):
        if w.isalpha():
            f = freqs.get(w)
            out[w] = _zipf(f) if f else wordfreq.zipf_frequency(w, "en")
    return out


def _list_lines(path: Any) -> list[str]:
    text = path.read_text(encoding="utf-8")
    if path.name.endswith(".json"):
        return [str(w) for w in json.loads(text).get("words", [])]
    return [line for line in text.splitlines() if not line.startswith("#")]


def extra_dir(folder: str | Path = "") -> Any:
    """``folder``, or the vendored lists through importlib.resources: also readable where the
    package is imported from a zip (Spark's --py-files), which a filesystem path into it is not."""
    if folder:
        return Path(folder)
    from importlib.resources import files as package_files

    return package_files("curate").joinpath("models", "badwords", "extra")


def load_okayish(lang: str = "en", folder: str | Path = "") -> frozenset[str]:
    """The vendored allow-list of words with innocent senses (``<lang>.okayish.txt``)."""
    f = extra_dir(folder) / f"{lang}.okayish.txt"
    return frozenset(w.strip().lower() for w in _list_lines(f)) if f.is_file() else frozenset()


def source_counts(lang: str = "en", folder: str | Path = "") -> Counter[str]:
    """How many vendored ``<lang>.<source>`` lists (the okayish one aside) list each entry."""
    d = extra_dir(folder)
    counts: Counter[str] = Counter()
    if lang != "en" or not d.is_dir():
        return counts
    for f in sorted(d.iterdir(), key=lambda p: p.name):
        if f.name.startswith(f"{lang}.") and f.name.endswith((".txt", ".json")) and f.name != f"{lang}.okayish.txt":
            counts.update({w.strip().lower() for w in _list_lines(f)})
    return counts


def load_extra(lang: str = "en", folder: str | Path = "") -> set[str]:
    """The larger lexicon of ``lang``: vendored ``<lang>.<source>.txt/json`` lists, curated (above)."""
    if lang == "en" and not source_counts(lang, folder):
        raise ConfigError(f"toxicity.extra_lists: no English list in {str(extra_dir(folder))!r} (the vendored "
                          "lexicon is missing from this install); reinstall corpusmix or set extra_lists: false")
    okay = load_okayish(lang, folder)
    vocab = _english_vocab() if lang == "en" else {}
    return {w for w in source_counts(lang, folder) if w not in okay and _ALPHA.fullmatch(w) and len(w) >= 3
            and vocab.get(w, 0.0) < ORDINARY_ZIPF}


def _roots(words: frozenset[str], vocab: dict[str, float], strong: frozenset[str]) -> frozenset[str]:
    """``strong`` list words of ROOT_MIN+ letters that no English word starts or ends with
    unless it is listed, an inflection or a compound of list words, or at least 10x rarer than
    the root (``cocktail`` rules out ``cock``; ``fuckery``, far rarer than ``fuck``, does not)."""
    cands = {w for w in words if len(w) >= ROOT_MIN and w in strong}
    by_pre: dict[str, set[str]] = {}
    by_suf: dict[str, set[str]] = {}
    for w in cands:
        by_pre.setdefault(w[:ROOT_MIN], set()).add(w)
        by_suf.setdefault(w[-ROOT_MIN:], set()).add(w)
    unsafe: set[str] = set()
    for v, z in vocab.items():
        if v in words or len(v) <= ROOT_MIN or z < 1.0:
            continue
        for r in by_pre.get(v[:ROOT_MIN], ()):
            rest = v[len(r):]
            if (v.startswith(r) and v != r and rest not in INFLECT and rest not in words
                    and z >= vocab.get(r, 0.0) - 1.0):
                unsafe.add(r)
        for r in by_suf.get(v[-ROOT_MIN:], ()):
            if v.endswith(r) and v != r and v[:-len(r)] not in words and z >= vocab.get(r, 0.0) - 1.0:
                unsafe.add(r)
    return frozenset(cands - unsafe)


def spaced_words(text: str) -> Iterator[re.Match[str]]:
    """``_SPACED.finditer(text)``: ``_SPACED.match`` tried only where a match can start."""
    end = 0
    for p in sorted(m.start() - 1 for rx in _SPACED_SEPS for m in rx.finditer(text)):
        if p < end:
            continue
        m = _SPACED.match(text, p)
        if m is not None:
            yield m
            end = m.end()


class ObfuscatedWords:
    """Counts obfuscated, inflected and compound forms of ``words`` (see the module docstring)."""

    def __init__(self, words: Iterable[str], strong: Iterable[str]) -> None:
        """``words``: the list; ``strong``: those that may be inflection or compound roots."""
        self.words = frozenset(w for w in words if _ALPHA.fullmatch(w) and len(w) >= 3)
        self.vocab = _english_vocab()
        self.roots = _roots(self.words, self.vocab, frozenset(strong))
        self.root_lens = sorted({len(r) for r in self.roots})
        # root + inflection -> the roots it inflects (a suffix-stripped base of ROOT_MIN+ letters)
        self.inflected: dict[str, list[str]] = {}
        for r in sorted(self.roots):
            for suf in INFLECT:
                self.inflected.setdefault(r + suf, []).append(r)
        self.lower_only = self._english_compounds()
        # English words that are no list word, no inflection of a root, no root compound and not
        # stretched: never a hit
        self.plain = frozenset(w for w in self.vocab if w.isascii() and w not in self.words and w not in self.inflected
                               and w not in self.lower_only and not _TRIPLE.search(w))
        self.by_shape: dict[tuple[int, str, str], list[str]] = {}
        for w in sorted(self.words):
            self.by_shape.setdefault((len(w), w[0], w[-1]), []).append(w)
        self._cache: dict[str, bool] = {}

    def _english_compounds(self) -> frozenset[str]:
        """English words (``vocab``) of letters that are no list word and no root inflection, made
        of a root and another part of 3+ letters that is a list word or an English word of Zipf
        ``COMPOUND_PART_ZIPF``+ (``INNOCENT_COMPOUNDS`` aside)."""
        words, vocab, roots = self.words, self.vocab, self.roots

        def part(p: str) -> bool:
            return len(p) >= 3 and (p in words or vocab.get(p, 0.0) >= COMPOUND_PART_ZIPF)

        heads = {r[:ROOT_MIN] for r in roots}
        tails = {r[-ROOT_MIN:] for r in roots}
        out = set()
        for v in vocab:
            if (v[:ROOT_MIN] not in heads and v[-ROOT_MIN:] not in tails) or len(v) < ROOT_MIN + 3:
                continue  # no root starts or ends it (every root has ROOT_MIN+ letters), or too short
            if v in words or v in self.inflected or v in INNOCENT_COMPOUNDS or not (v.isascii() and v.isalpha()):
                continue
            for k in self.root_lens:
                if len(v) - k < 3:
                    break
                if (v[:k] in roots and part(v[k:])) or (v[-k:] in roots and part(v[:-k])):
                    out.add(v)
                    break
        return frozenset(out)

    def count(self, text: str, original: str | None = None) -> int:
        """Hits in ``text`` (lower-cased) that an exact match of the list words does not count (the
        scorer reads each distinct token's flags once through ``TokenCodes`` and ``count_flagged``);
        ``original``: the text before lower-casing (without it, LOWER tokens count everywhere)."""
        cache = self._cache
        if len(cache) > 500_000:
            cache.clear()
        tokens = text.split()
        distinct = set(tokens)
        for t in distinct.difference(cache):  # per distinct token: HIT, SPACED (may start a spaced word), LOWER, 0
            cache[t] = self._flags(t)
        flags = list(map(cache.__getitem__, distinct))
        kinds = set(flags)
        hit = {t for t, f in zip(distinct, flags, strict=True) if f & HIT} if HIT in kinds else set()
        lower = {t for t, f in zip(distinct, flags, strict=True) if f & LOWER} if LOWER in kinds else set()
        return self.count_flagged(text, tokens, hit, SPACED in kinds, lower,
                                  original.split() if lower and original is not None else None)

    def count_flagged(self, text: str, tokens: list[str], hit: set[str], spaced: bool,
                      lower: set[str] | None = None, original_tokens: list[str] | None = None) -> int:
        """``count`` given the tokens flagged HIT, whether any token is flagged SPACED, and those
        flagged LOWER with ``original_tokens``, the original text's ``split()``: a LOWER token counts
        where the original token is the same (written in lower case); without ``original_tokens``
        (no case to read) it counts everywhere."""
        hits = sum(map(hit.__contains__, tokens)) if hit else 0
        if lower:
            if original_tokens is None or len(original_tokens) != len(tokens):
                hits += sum(map(lower.__contains__, tokens))
            else:
                hits += sum(1 for t, o in zip(tokens, original_tokens, strict=True) if t == o and t in lower)
        if spaced:
            for m in spaced_words(text):
                joined = m.group().replace(m.group(1), "")
                # a spaced word after or before the one-letter words "a" / "i" ("such a f u c k")
                cands = [joined] + [joined[1:]] * (joined[0] in "ai") + [joined[:-1]] * (joined[-1] in "ai")
                if any(len(c) >= 3 and (c in self.words or self._letters_hit(c)) for c in cands):
                    hits += 1
        return hits

    def flags(self, tok: str) -> int:
        """HIT, SPACED or 0 for one whitespace token (see ``_flags``)."""
        return self._flags(tok)

    def _flags(self, tok: str) -> int:
        """HIT when the token is an obfuscated, inflected or compound list word, LOWER when it is an
        English root compound, SPACED when it can be part of a word spelt with spaces or dots (one
        letter other than "a" or "i", or letters between dots)."""
        core = tok.strip(STRIP).rstrip("!")
        if core in self.plain:
            return SPACED if len(tok) == 1 and tok not in "ai" else 0
        if core in self.lower_only:
            return LOWER
        if 3 <= len(core) <= 40 and core not in self.words and self._token_hit(core):
            return HIT
        if (len(tok) == 1 and tok.isalpha() and tok not in "ai") or _DOTTED.search(tok):
            return SPACED  # "a" and "i" stand alone in any English text: a spaced word has another letter
        return 0

    def _token_hit(self, core: str) -> bool:
        if core.isalpha() and core.isascii():
            return self._letters_hit(core)
        # a character that is neither a letter nor leet nor masking: no spelling (_deleet) and no
        # wildcard reading (_masked); letters-only cores were handled above, so none is left here
        if not core.translate(_OBFUSCATION_CHARS).isalpha():
            return False
        if not _SYMBOLIC.search(core) or not _OBFUSCATING.search(core):
            return False
        # _deleet spells only cores of letters and leet characters (the core holds a letter here)
        spelt = core.translate(_LEET_CHARS).isalpha()
        return (spelt and any(self._letters_hit(v) or v in self.words for v in _deleet(core))) or self._masked(core)

    def _letters_hit(self, w: str) -> bool:
        """An inflection, compound or stretched spelling of a list word (``w``: ASCII letters)."""
        if w in self.words:
            return True
        if _TRIPLE.search(w):
            return any(v in self.words or self._derived(v) for v in _collapse(w))
        return self._derived(w)

    def _derived(self, w: str) -> bool:
        zipf = self.vocab.get(w)
        bases = self.inflected.get(w)
        if bases is not None and (zipf is None or any(zipf < self.vocab.get(b, 0.0) for b in bases)):
            return True
        if zipf is not None or (w.endswith(INFLECT) and any(w.endswith(suf) and w[:-len(suf)] in self.vocab
                                                            for suf in INFLECT)):
            return False  # an English word (or its inflection) that is not listed: no compound reading
        for k in self.root_lens:
            if len(w) - k < 3:
                break
            if w[:k] in self.roots or w[-k:] in self.roots:
                return True
        return False

    def _masked(self, core: str) -> bool:
        """``core`` with masking characters (or unmapped symbols) matched as one-letter wildcards."""
        if not (core[:1].isalpha() and core[-1:].isalpha()):
            return False
        letters = core.translate(_OBFUSCATION_CHARS)  # the letters, once leet and masking characters go
        if not letters.isalpha():  # a character that is neither a letter nor leet nor masking
            return False
        known = len(letters)
        if known < 2 or known * 2 < len(core) - 1:
            return False
        shaped = self.by_shape.get((len(core), core[0], core[-1]), ())
        if not shaped and (len(core) - known > 2 or len(core) < ROOT_MIN + 3):
            return False  # no list word of this shape, and too many wildcards or too short for _masked_derived
        chars = [c if c.isalpha() else "?" for c in core]
        for w in shaped:
            if all(c == "?" or c == x for c, x in zip(chars, w, strict=True)):
                return True
        return self._masked_derived(core, chars)

    def _masked_derived(self, core: str, chars: list[str]) -> bool:
        """A masked compound or inflection (``assf*cker``, ``b*tchass``): every wildcard is a masking
        character other than ``_`` (an identifier character in code), at most two of them, in a token
        of compound length; some filling with letters is a list word or derived from one."""
        holes = [i for i, c in enumerate(chars) if c == "?"]
        if len(holes) > 2 or len(chars) < ROOT_MIN + 3 or any(core[i] not in FILLED for i in holes):
            return False
        for letters in product(ascii_lowercase, repeat=len(holes)):
            for i, x in zip(holes, letters, strict=True):
                chars[i] = x
            if self._letters_hit("".join(chars)):
                return True
        return False


def _deleet(core: str, limit: int = 16) -> list[str]:
    """Letter spellings of ``core`` with leetspeak digits and symbols mapped (ambiguous ones both ways)."""
    outs = [""]
    for c in core:
        opts = c if c.isalpha() else LEET.get(c, "")
        if not opts:
            return []
        outs = [o + x for o in outs for x in opts][:limit]
    return [o for o in outs if o.isascii()]


def _collapse(w: str, limit: int = 16) -> list[str]:
    """``w`` with each run of 3+ equal letters reduced to one and to two letters."""
    parts = re.findall(r"(([a-z])\2*)", w)
    outs = [""]
    for run, c in parts:
        opts = (c, c + c) if len(run) >= 3 else (run,)
        outs = [o + x for o in outs for x in opts][:limit]
    return outs
