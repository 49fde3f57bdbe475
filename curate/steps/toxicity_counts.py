"""Counting a text's listed words for the toxicity scorer (``curate.steps.toxicity``): the screened
word-list match (``BadwordCounter``) and the per-token codes that let most texts skip it
(``TokenCodes``), by token strings or by ids of the shared token table of ``curate.textstats``."""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

from curate import native
from curate.steps.toxicity_words import HIT, LOWER, SPACED, ObfuscatedWords

NO_SPACE_LANGS = ("ja", "th", "zh")  # written without spaces: match substrings (datatrove's C4 rule)


def badword_pattern(words: list[str], lang: str) -> re.Pattern[str]:
    alt = "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))
    if lang in NO_SPACE_LANGS:
        return re.compile(f"(?:{alt})")
    return re.compile(rf"(?<!\w)(?:{alt})(?!\w)")


_RUN = re.compile(r"\w+")


def count_at_words(pat: re.Pattern[str], text: str, words: list[str]) -> int:
    """``len(pat.findall(text))`` for ``pat = badword_pattern(words, lang)``: a match is one of the
    words, so ``pat.match`` is tried only where one occurs, in order, from the end of the last match
    on (what ``finditer`` does at those positions; it would try every position, the pattern opening
    with a lookbehind)."""
    starts: set[int] = set()
    for w in words:
        q = text.find(w)
        while q >= 0:
            starts.add(q)
            q = text.find(w, q + 1)
    n = end = 0
    for p in sorted(starts):
        if p < end:
            continue
        m = pat.match(text, p)
        if m is not None:
            n += 1
            end = max(m.end(), p + 1)
    return n


class BadwordCounter:
    r"""Counts the matches of :func:`badword_pattern` over a text, screening the list first.

    One alternation of ~400 words scans text at Python ``re`` speed (~1.5 MB/s). A match of a
    listed word is bounded by ``(?<!\w)``/``(?!\w)``, and inside the word every ``\w+`` run is
    bounded by the word's own non-word characters, so each run of the word is a maximal ``\w+``
    run of the text, and the word is a substring of it. Words failing that match nowhere, and
    alternatives that match nowhere never change which one matches first: the count is that of
    the alternation of the remaining words alone (same order). Almost all texts keep none and
    cost one ``findall`` of word runs over their distinct whitespace tokens (every run of a text
    lies inside one token). The scorer reads each distinct token's runs once (``TokenCodes``).
    Languages written without spaces match substrings: whole pattern.
    """

    def __init__(self, words: list[str], lang: str) -> None:
        self.words, self.lang = list(words), lang
        self.pattern = badword_pattern(self.words, lang)
        self.runs = [frozenset(_RUN.findall(w)) for w in self.words]
        self.by_run: dict[str, list[int]] = {}
        self.always: list[int] = []  # words without a word character: the substring test only
        for i, w in enumerate(self.words):
            m = _RUN.search(w)
            if m:
                self.by_run.setdefault(m.group(), []).append(i)
            else:
                self.always.append(i)
        self._subsets: dict[tuple[int, ...], re.Pattern[str]] = {}
        self.relevant = frozenset().union(*self.runs)  # every run of every listed word

    def count(self, text: str) -> int:
        """Matches of ``badword_pattern(words, lang)`` in ``text`` (already lower-cased)."""
        if self.lang in NO_SPACE_LANGS:
            return sum(1 for _ in self.pattern.finditer(text))
        return self.count_runs(text, set(_RUN.findall(" ".join(set(text.split())))))

    def count_runs(self, text: str, runs: set[str]) -> int:
        """``count`` given the text's word runs (at least those of listed words: ``token_runs``)."""
        by_run, words = self.by_run, self.words
        cand = sorted(i for r in runs.intersection(by_run) for i in by_run[r]
                      if self.runs[i] <= runs and words[i] in text)
        cand += [i for i in self.always if words[i] in text]
        if not cand:
            return 0
        key = tuple(sorted(cand))
        pat = self._subsets.get(key)
        if pat is None:
            if len(self._subsets) > 4096:
                self._subsets.clear()
            pat = self._subsets[key] = badword_pattern([words[i] for i in key], self.lang)
        return count_at_words(pat, text, [words[i] for i in key])

    def token_runs(self, token: str) -> tuple[str, ...]:
        """The ``\\w+`` runs of one whitespace token that are runs of some listed word."""
        relevant = self.relevant
        return tuple(r for r in _RUN.findall(token) if r in relevant)


class TokenCodes(dict):
    """Whitespace token -> code, an index into ``table`` of ``(listed runs, obfuscation flags)``
    (``BadwordCounter.token_runs``, ``ObfuscatedWords.flags``), computed on a token's first sight:
    a text costs one lookup per distinct token, and code 0 (nothing to look at) is almost all."""

    def __init__(self, counter: BadwordCounter, obfuscated: ObfuscatedWords | None) -> None:
        super().__init__()
        self.counter, self.obfuscated = counter, obfuscated
        self.table: list[tuple[tuple[str, ...], int]] = [((), 0)]
        self.index = {((), 0): 0}
        self._by_low = np.zeros(0, np.int64)  # per id of the shared token table: its code, -1 unknown
        self._by_low_gen = -1

    def __missing__(self, token: str) -> int:
        pair = (self.counter.token_runs(token), self.obfuscated.flags(token) if self.obfuscated else 0)
        code = self.index.get(pair)
        if code is None:
            code = self.index[pair] = len(self.table)
            self.table.append(pair)
        self[token] = code
        return code

    def codes_of(self, tokens: list[str]) -> list[int]:
        """``[self[t] for t in tokens]`` (distinct tokens): the codes of those not seen yet are
        computed together and stored with one ``update``."""
        got = list(map(self.get, tokens))
        if None not in got:
            return got
        todo = [k for k, c in enumerate(got) if c is None]
        new = [tokens[k] for k in todo]
        runs = list(map(self.counter.token_runs, new))
        flags = list(map(self.obfuscated.flags, new)) if self.obfuscated else [0] * len(new)
        index, table = self.index, self.table
        codes = list(map(index.get, zip(runs, flags, strict=True)))
        if None in codes:
            for k, c in enumerate(codes):
                if c is None:
                    pair = (runs[k], flags[k])
                    c = index.get(pair)
                    if c is None:
                        c = index[pair] = len(table)
                        table.append(pair)
                    codes[k] = c
        self.update(zip(new, codes, strict=True))
        for k, c in zip(todo, codes, strict=True):
            got[k] = c
        return got

    def count_lows(self, text: str, lows: np.ndarray, words: list[str], generation: int,
                   low: str | None = None) -> int:
        """:meth:`count` of ``text.lower()`` (``low``, computed here when not given and needed) given
        its tokens as ids of the shared token table (``textstats.token_lows``): each id's code is
        kept in an array, so a text costs one gather instead of a dict lookup per distinct token."""
        if len(self) > 1_000_000:
            self.clear()
        if self._by_low_gen != generation or len(self) == 0:
            self._by_low, self._by_low_gen = np.zeros(0, np.int64), generation
        if len(self._by_low) < len(words):
            self._by_low = np.concatenate([self._by_low, np.full(len(words) - len(self._by_low) + 1024, -1)])
        codes = self._by_low[lows]
        if (codes < 0).any():
            todo = native.unique_counts(lows[codes < 0])[0]
            self._by_low[todo] = self.codes_of([words[i] for i in todo.tolist()])
            codes = self._by_low[lows]
        if not codes.any():  # every token has code 0: nothing to look at
            return 0
        # code 0 adds no run and no flag: the distinct codes other than 0 decide
        kinds = set(native.unique_counts(codes[codes != 0])[0].tolist())
        if low is None:
            low = text.lower()

        def hits(flag: int) -> set[str]:
            hit_codes = [c for c in kinds if self.table[c][1] & flag]
            return {words[i] for i in native.unique_counts(lows[np.isin(codes, hit_codes)])[0].tolist()}

        return self._decide(low, kinds, hits, low.split, text.split)

    def count(self, text: str, tokens: list[str], original: str | None = None) -> int:
        """``counter.count(text)`` plus ``obfuscated.count(text, original)`` (``text`` lower-cased,
        ``tokens`` its ``split()``, ``original``: the text before lower-casing)."""
        if len(self) > 1_000_000:
            self.clear()
        distinct = list(set(tokens))
        codes = self.codes_of(distinct)

        def hits(flag: int) -> set[str]:
            return {t for t, c in zip(distinct, codes, strict=True) if self.table[c][1] & flag}

        return self._decide(text, set(codes), hits, lambda: tokens,
                            None if original is None else original.split)

    def _decide(self, text: str, kinds: set[int], hits: Callable[[int], set[str]], tokens: Callable[[], list[str]],
                original: Callable[[], list[str]] | None = None) -> int:
        """The count from the codes of a text's distinct tokens (``kinds``); ``hits(flag)``: its
        tokens whose code has ``flag``, ``tokens()``: its ``split()``, ``original()``: the split of
        the text before lower-casing (each called only when needed; without ``original``, LOWER
        tokens count everywhere)."""
        if not kinds or kinds == {0}:
            return 0
        pairs = [self.table[c] for c in kinds]
        n = self.counter.count_runs(text, set().union(*(p[0] for p in pairs)))
        if self.obfuscated is not None:
            flags = set().union(*({f & b for b in (HIT, SPACED, LOWER)} for _, f in pairs))
            hit = hits(HIT) if HIT in flags else set()
            lower = hits(LOWER) if LOWER in flags else set()
            # the tokens only matter when some are hits
            n += self.obfuscated.count_flagged(text, tokens() if hit or lower else [], hit, SPACED in flags,
                                               lower, original() if lower and original is not None else None)
        return n
