"""One word split shared by every heuristic filter, equal to datatrove's ``split_into_words``.

datatrove splits English text with a blank spaCy pipeline (tokenizer + sentencizer). spaCy's
tokenizer cuts the text at whitespace first and tokenizes every maximal non-whitespace chunk on
its own (prefix/suffix/infix rules and special cases never look across whitespace), so the tokens
of a text are the concatenation of the tokens of its chunks. ``WordSplitter`` therefore tokenizes
each distinct chunk once with the same spaCy tokenizer and caches the result: real text is
Zipfian, so after a few documents almost every chunk is a dictionary hit. The same chunk tokens
also give the sentence count of a line (spaCy's rule-based sentencizer over the line's tokens),
which datatrove's C4 filter otherwise computes by running spaCy once per line.

Used by ``curate.steps.filters.HeuristicFilter``; equality with datatrove is tested in
``tests/curate/test_filters.py`` on real corpora.
"""

from __future__ import annotations

import re
import unicodedata

from datatrove.utils.typeshelper import Languages

_WS_SPLIT = re.compile(r"(\s+)")
_SEP = " \n "


def _is_punct(text: str) -> bool:
    # spaCy's lexical attribute IS_PUNCT (spacy.lang.lex_attrs.is_punct)
    for ch in text:
        if not unicodedata.category(ch).startswith("P"):
            return False
    return True


class WordSplitter:
    """Cached, chunk-wise replica of datatrove's spaCy word split for one language."""

    def __init__(self, language: str = Languages.english, *, max_cache: int = 2_000_000) -> None:
        self.language = language
        self.max_cache = max_cache
        self._tok = None
        self._punct_chars: frozenset[str] = frozenset()
        self._special: frozenset[str] = frozenset()
        self._chunks: dict[str, tuple[str, ...]] = {}
        self._trans: dict[str, tuple[tuple[int, bool], tuple[int, bool]]] = {}

    def _tokenizer(self):
        if self._tok is None:
            from datatrove.utils.word_tokenizers import SpaCyTokenizer, load_word_tokenizer
            from spacy.pipeline import Sentencizer

            wt = load_word_tokenizer(self.language)
            if not isinstance(wt, SpaCyTokenizer):
                raise ValueError(
                    f"language {self.language!r} does not use a spaCy tokenizer in datatrove; the fused "
                    "filter supports spaCy languages only (e.g. 'en')")
            self._tok = wt.tokenizer.tokenizer
            self._punct_chars = frozenset(Sentencizer.default_punct_chars)
            self._special = frozenset(self._tok.rules or ())
        return self._tok

    def _fill(self, missing: list[str]) -> None:
        # Unseen chunks are tokenized in one spaCy call, separated by " \n ": the newline becomes a
        # whitespace token, so spaCy's special-case matcher (emoticons such as "):") cannot join
        # tokens of neighbouring chunks (with a plain " " separator it can, and results differ).
        tok = self._tokenizer()
        # ASCII letters only: no English prefix/suffix/infix rule can match (each needs a digit,
        # punctuation or symbol), so the chunk is one token unless it is a special case ("cannot")
        rest = []
        for c in missing:
            if c.isascii() and c.isalpha() and c not in self._special:
                self._chunks[c] = (c,)
            else:
                rest.append(c)
        missing = rest
        for i in range(0, len(missing), 5000):
            part = missing[i:i + 5000]
            ends, pos = [], 0
            for c in part:
                ends.append(pos + len(c))
                pos += len(c) + len(_SEP)
            out: list[list[str]] = [[] for _ in part]
            ci = 0
            for t in tok(_SEP.join(part)):
                while t.idx >= ends[ci]:
                    ci += 1
                if not t.is_space:
                    out[ci].append(t.text)
            for c, toks in zip(part, out, strict=True):
                self._chunks[c] = tuple(toks)

    def chunk_tokens(self, chunks: list[str]) -> list[tuple[str, ...]]:
        cache = self._chunks
        if len(cache) > self.max_cache:  # bound memory on huge vocabularies; cleared before a lookup
            cache.clear()
        missing = [c for c in dict.fromkeys(chunks) if c not in cache]
        if missing:
            self._fill(missing)
            cache = self._chunks
        return [cache[c] for c in chunks]

    def words(self, text: str) -> list[str]:
        """``datatrove.utils.text.split_into_words(text, language)``."""
        chunks = text.split()
        try:
            toks = [self._chunks[c] for c in chunks]
        except KeyError:
            toks = self.chunk_tokens(chunks)
        out: list[str] = []
        ext = out.extend
        for t in toks:
            ext(t)
        return out

    def _transitions(self, chunk: str) -> tuple[tuple[int, bool], tuple[int, bool]]:
        """The sentencizer over one chunk's tokens, from state seen_period=False and =True."""
        tr = self._trans.get(chunk)
        if tr is None:
            toks = self.chunk_tokens([chunk])[0]
            res = []
            for seen in (False, True):
                n = 0
                for t in toks:
                    in_punct = t in self._punct_chars
                    if seen and not in_punct and not _is_punct(t):
                        n += 1
                        seen = False
                    elif in_punct:
                        seen = True
                res.append((n, seen))
            if len(self._trans) > self.max_cache:
                self._trans.clear()
            tr = self._trans[chunk] = (res[0], res[1])
        return tr

    def count_sentences(self, text: str) -> int:
        """``len(datatrove.utils.text.split_into_sentences(text, language))``.

        spaCy's sentencizer starts a sentence at the first token after a sentence-final punctuation
        token that is neither punctuation nor in its list; whitespace runs other than one plain
        space are tokens too, so they count.
        """
        parts = _WS_SPLIT.split(text)
        n = 1
        seen = False
        for k, p in enumerate(parts):
            if k % 2 == 0:
                if p:
                    t, seen = self._transitions(p)[seen]
                    n += t
            else:
                # a leading run is one token; after a chunk one plain space is absorbed
                ws = p if (k == 1 and parts[0] == "") or p[0] != " " else p[1:]
                if ws and seen:
                    n += 1
                    seen = False
        return n
