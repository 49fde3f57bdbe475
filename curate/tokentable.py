"""The token table of the garbage statistics (``curate.textstats``): integer ids for whitespace
tokens, with their properties in numpy arrays, shared with the toxicity scorer
(``textstats.token_lows``); and the dictionary-word test of a token."""

from __future__ import annotations

import re

import numpy as np

from curate import junkstats as js
from curate import native
from curate.ocrstats import _kind

_EDGE_PUNCT = js.EDGE_PUNCT
_LETTER_RUN = re.compile(r"[^\W\d_]+")


def _is_dict_token(tok: str, words: frozenset[str], short: frozenset[str]) -> bool:
    """A token is a dictionary word when it is mostly letters and every letter run is known.

    Runs of 3+ letters are looked up in the language's word list; a token made of only one or two
    letters must be one of the language's most frequent words ("a", "of"), since almost every
    random pair of letters is in a 200k list somewhere. ``don't``, ``self.name`` and
    ``co-operate`` count; ``9fa3c0e1``, ``dP.`` and base64 do not.
    """
    core = tok.strip(_EDGE_PUNCT).lower()
    if core.isalpha():  # one letter run, the whole core (every alphabetic character is in [^\W\d_])
        return core in words if len(core) > 2 else core in short
    return _core_in_dict(core, words, short)


def _core_in_dict(core: str, words: frozenset[str], short: frozenset[str]) -> bool:
    """The rule of :func:`_is_dict_token` on a stripped, lower-cased core, by its letter runs."""
    if not core:
        return False
    runs = _LETTER_RUN.findall(core)
    n_letters = sum(map(len, runs))
    if n_letters == 0 or n_letters < 0.7 * len(core):
        return False
    long_runs = [r for r in runs if len(r) > 2]
    if not long_runs:
        return core in short
    return all(r in words for r in long_runs)


def _plain(tok: str) -> bool:
    """A lower-case word of 3+ letters once edge punctuation is stripped (what a misspelling hits)."""
    core = tok.strip(_EDGE_PUNCT)
    return len(core) > 2 and core.isalpha() and core.islower()




class TokenTable:
    """Integer ids for whitespace tokens with their properties in numpy arrays (length, has a
    letter, id of the lower-cased form, dictionary word per language): real text is Zipfian, so a
    document's tokens are mostly known and map to ids in one C-level pass of ``dict.get``."""

    def __init__(self, max_tokens: int = 500_000) -> None:
        self.max_tokens = max_tokens
        self.generation = -1  # +1 at every clear: ids of an earlier generation mean nothing now
        self.clear()

    def clear(self) -> None:
        self.generation += 1
        # token -> id: with the compiled module a hash table of its own in two bytearrays (no str
        # key compared through the dict), else a dict; the table is cleared when that changes
        self.compiled = native.compiled is not None
        self.index: dict[str, int] = {}
        self.ctable, self.carena = bytearray(), bytearray()
        self.tokens: list[str] = []
        self.low_index: dict[str, int] = {}
        self.low_words: list[str] = []
        self.core_index: dict[str, int] = {}  # lower-cased forms with edge punctuation stripped -> id
        self.low_core = np.zeros(1024, np.int64)  # per lower-cased id: the id of that stripped form
        self.size = np.zeros(1024, np.int64)
        self.alpha = np.zeros(1024, np.int64)
        self.plain = np.zeros(1024, bool)  # stripped of edge punctuation: a lower-case word of 3+ letters
        self.low = np.zeros(1024, np.int64)
        self.low_len = np.zeros(1024, np.int64)
        self.kinded = np.full(1024, -1, np.int8)  # ocrstats._kind of the token is not (): 1, 0 not, -1 not looked up
        self.in_dict: dict[str, np.ndarray] = {}  # lang -> 1 word, 0 not, -1 not looked up yet
        self.is_stop: dict[str, np.ndarray] = {}  # lang -> per lower-cased id: 1 stopword, 0 not, -1 unknown
        # model -> (per lower-cased id: 1 in the model's vocabulary / 0 not / -1 not looked up,
        #           per stripped-form id: its weight where a looked-up id has that form)
        self.low_weight: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def shrink(self) -> None:
        """Forget every id from ``max_tokens // 2`` on and keep those before it: the tokens seen
        first, where a corpus's frequent words are. The ids kept keep their properties, so a full
        table does not make every frequent word new again. Lower-cased and stripped forms get their
        ids in the order of the tokens that first had them, so those of the tokens kept are again
        the first ones."""
        k = self.max_tokens // 2
        if not 0 < k < len(self.tokens):
            self.clear()
            return
        self.generation += 1
        n_low = int(self.low[:k].max()) + 1
        n_core = int(self.low_core[:n_low].max()) + 1
        del self.tokens[k:]
        if self.compiled:
            self.ctable, self.carena = bytearray(), bytearray()
            native.compiled.tok_add(self.ctable, self.carena, self.tokens, 0)
        else:
            self.index = dict(zip(self.tokens, range(k), strict=True))
        del self.low_words[n_low:]
        self.low_index = dict(zip(self.low_words, range(n_low), strict=True))
        self.core_index = {c: j for c, j in self.core_index.items() if j < n_core}
        # what is recorded per id on first sight (not on assignment) is unknown again past the kept ids
        self.kinded[k:] = -1
        for arr in self.in_dict.values():
            arr[k:] = -1
        for arr in self.is_stop.values():
            arr[n_low:] = -1
        for known, _ in self.low_weight.values():
            known[n_low:] = -1

    def _grow(self, n: int) -> None:
        cap = len(self.size)
        if n <= cap:
            return
        new = max(n, 2 * cap)
        for name in ("size", "alpha", "low", "plain"):
            arr = getattr(self, name)
            setattr(self, name, np.concatenate([arr, np.zeros(new - cap, arr.dtype)]))
        self.kinded = np.concatenate([self.kinded, np.full(new - cap, -1, np.int8)])
        for lang, arr in self.in_dict.items():
            self.in_dict[lang] = np.concatenate([arr, np.full(new - cap, -1, np.int8)])

    def _add_many(self, new: list[str]) -> None:
        """Ids for ``new`` (distinct tokens not in the table), in their order, with their properties."""
        i0 = len(self.tokens)
        n = len(new)
        self._grow(i0 + n)
        self.tokens.extend(new)
        if self.compiled:
            native.compiled.tok_add(self.ctable, self.carena, new, i0)
            self._add_properties(new, i0)
            return
        self.index.update(zip(new, range(i0, i0 + n), strict=True))
        lows = list(map(str.lower, new))
        low_index = self.low_index
        li = list(map(low_index.get, lows))
        if None in li:
            for k, low in enumerate(lows):
                if li[k] is None:
                    j = low_index.get(low)  # the same lower-cased form twice among the new tokens
                    if j is None:
                        j = low_index[low] = len(self.low_words)
                        self.low_words.append(low)
                        if j >= len(self.low_len):
                            grow = np.zeros(max(1024, len(self.low_len)), np.int64)
                            self.low_len = np.concatenate([self.low_len, grow])
                            self.low_core = np.concatenate([self.low_core, grow])
                        self.low_len[j] = len(low)
                        self.low_core[j] = self.core_index.setdefault(low.strip(_EDGE_PUNCT), len(self.core_index))
                    li[k] = j
        self.size[i0:i0 + n] = list(map(len, new))
        self.alpha[i0:i0 + n] = [any(map(str.isalpha, t)) for t in new]
        self.plain[i0:i0 + n] = [_plain(t) for t in new]
        self.low[i0:i0 + n] = li

    def _add_properties(self, new: list[str], i0: int) -> None:
        """The properties of :meth:`_add_many` (the lower-cased and stripped forms' ids in the same
        order) from the compiled kernel."""
        n = len(new)
        li, size, alpha, plain, nj, nlen, ncore = native.compiled.tok_extend(
            new, self.low_index, self.low_words, self.core_index, _EDGE_PUNCT)
        if len(self.low_words) > len(self.low_len):
            grow = np.zeros(max(1024, len(self.low_len), len(self.low_words) - len(self.low_len)), np.int64)
            self.low_len = np.concatenate([self.low_len, grow])
            self.low_core = np.concatenate([self.low_core, grow])
        if nj:
            self.low_len[nj] = nlen
            self.low_core[nj] = ncore
        self.size[i0:i0 + n] = np.frombuffer(size, np.int64)
        self.alpha[i0:i0 + n] = np.frombuffer(alpha, np.int64)
        self.plain[i0:i0 + n] = np.frombuffer(plain, np.int64)
        self.low[i0:i0 + n] = np.frombuffer(li, np.int64)

    def ids(self, tokens: list[str]) -> np.ndarray:
        if self.compiled != (native.compiled is not None):
            self.clear()  # the compiled module came or went (the tests' reference runs)
        if len(self.tokens) + len(tokens) > self.max_tokens:  # bounded on huge vocabularies
            self.shrink()
            if len(self.tokens) + len(tokens) > self.max_tokens:
                self.clear()
        if self.compiled:
            got, missing = native.token_ids(tokens, self.ctable, self.carena)
        else:
            got, missing = native.token_ids(tokens, self.index)
        if missing:
            # new tokens take ids in the order of their first occurrence; only the positions that
            # were absent are looked up again, among the new tokens
            where = np.flatnonzero(got < 0).tolist()
            new = list(dict.fromkeys(tokens[i] for i in where))
            i0 = len(self.tokens)
            self._add_many(new)
            fresh = dict(zip(new, range(i0, i0 + len(new)), strict=True))
            got = got.copy() if not got.flags.writeable else got
            got[where] = [fresh[tokens[i]] for i in where]
        return got

    def text_ids(self, text: str) -> np.ndarray:
        """``ids(text.split())``: with the compiled module the tokens are read from the text, and
        only new ones become str objects."""
        if not self.compiled or native.compiled is None:
            return self.ids(text.split())
        got, missing = native.compiled.text_token_ids(text, self.ctable, self.carena)
        got = np.frombuffer(got, np.int64)
        if len(self.tokens) + len(got) > self.max_tokens:  # as ids(): bounded, then looked up again
            self.shrink()
            if len(self.tokens) + len(got) > self.max_tokens:
                self.clear()
            got, missing = native.compiled.text_token_ids(text, self.ctable, self.carena)
            got = np.frombuffer(got, np.int64)
        if missing:
            # new tokens take ids in the order of their first occurrence
            new = list(dict.fromkeys(tok for _, tok in missing))
            i0 = len(self.tokens)
            self._add_many(new)
            fresh = dict(zip(new, range(i0, i0 + len(new)), strict=True))
            got = got.copy() if not got.flags.writeable else got
            got[[i for i, _ in missing]] = [fresh[tok] for _, tok in missing]
        return got

    def dict_flags(self, lang: str, ids: np.ndarray, d: tuple[frozenset[str], frozenset[str]]) -> np.ndarray:
        flags = self.in_dict.get(lang)
        if flags is None:
            flags = self.in_dict[lang] = np.full(len(self.size), -1, np.int8)
        todo = native.unique_counts(ids[flags[ids] < 0])[0]
        if len(todo):
            tokens, (words, short) = self.tokens, d
            if self.compiled and isinstance(words, (set, frozenset)) and isinstance(short, (set, frozenset)):
                flags[todo] = np.frombuffer(native.compiled.dict_tokens(tokens, todo, words, short, _EDGE_PUNCT),
                                            np.int64)
            else:
                flags[todo] = [_is_dict_token(tokens[i], words, short) for i in todo.tolist()]
        return flags[ids]


    def kind_flags(self, ids: np.ndarray) -> np.ndarray:
        """Per id of ``ids`` (distinct): 1 where ``ocrstats._kind`` of the token is not empty (a
        token ``damaged_words`` may count), else 0."""
        flags = self.kinded[ids]
        todo = ids[flags < 0]
        if len(todo):
            tokens = self.tokens
            self.kinded[todo] = [1 if _kind(tokens[i]) else 0 for i in todo.tolist()]
            flags = self.kinded[ids]
        return flags

    def low_weights(self, key: str, lows: np.ndarray, weights: dict[str, float]) -> tuple[np.ndarray, np.ndarray]:
        """``(hit, core_weight)``: the ids of ``lows`` (lower-cased ids, in order) whose stripped form
        is in ``weights``, and the per-stripped-form-id weight array (``core_weight[low_core[i]]``);
        each id is looked up once and kept under ``key``."""
        known, cw = self.low_weight.get(key, (np.zeros(0, np.int8), np.zeros(0)))
        n = len(self.low_words)
        if len(known) < n:
            known = np.concatenate([known, np.full(max(n, 2 * len(known), 1024) - len(known), -1, np.int8)])
            self.low_weight[key] = (known, cw)
        flags = known[lows]
        if (flags < 0).any():
            todo = native.unique_counts(lows[flags < 0])[0]
            words = self.low_words
            got = [weights.get(words[j].strip(_EDGE_PUNCT)) for j in todo.tolist()]
            known[todo] = [g is not None for g in got]
            have = [(j, g) for j, g in zip(todo.tolist(), got, strict=True) if g is not None]
            if have:
                cores = self.low_core[[j for j, _ in have]]
                if int(cores.max()) >= len(cw):
                    cw = np.concatenate([cw, np.zeros(max(int(cores.max()) + 1, 2 * len(cw), 1024) - len(cw))])
                    self.low_weight[key] = (known, cw)
                cw[cores] = [g for _, g in have]  # a stripped form has one weight, whichever id brings it
            flags = known[lows]
        return lows[flags == 1], cw

    def stop_flags(self, lang: str, lows: np.ndarray, stop: frozenset[str]) -> np.ndarray:
        """Per lower-cased id of ``lows``: is it one of ``stop`` (the language's most frequent words)."""
        flags = self.is_stop.get(lang)
        n = len(self.low_words)
        if flags is None or len(flags) < n:
            old = flags if flags is not None else np.zeros(0, np.int8)
            flags = self.is_stop[lang] = np.concatenate([old, np.full(max(n, 2 * len(old), 1024) - len(old), -1, np.int8)])
        todo = native.unique_counts(lows[flags[lows] < 0])[0]
        if len(todo):
            words = self.low_words
            flags[todo] = [words[j] in stop for j in todo.tolist()]
        return flags[lows] == 1
