"""The word-order statistic of ``curate.textstats``: a transition model over a corpus' most frequent
words, scored per document as the mean pointwise mutual information of its adjacent word pairs."""

from __future__ import annotations

import math
import re
from collections import Counter
from itertools import repeat

import numpy as np

from curate import native

_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")
MAX_ORDER_CHARS = 50_000  # characters scored for word order: enough pairs for a stable mean


class WordOrderModel:
    """Transitions between the ``k`` most frequent words (all others are one class) of a corpus.

    ``score(text)`` is the mean pointwise mutual information ``log P(b|a) / P(b)`` (nats) of the
    document's adjacent word pairs that involve a frequent word: positive for running text of any
    register (function words follow grammar), about zero or below for words drawn independently
    or shuffled. (A permutation baseline, the same score minus its expectation over shuffles of
    the document's own words, separated word salad from short real documents worse on the demo.)
    """

    def __init__(self, vocab: list[str], pmi: list[list[float]]) -> None:
        self.vocab = list(vocab)
        self.index = {w: i for i, w in enumerate(self.vocab)}
        self.other = len(self.vocab)
        self.pmi = pmi
        self._pmi = np.asarray(pmi, dtype=np.float64)
        self._table: bytes | None = None  # native.str_table(self.index), made on first use

    @classmethod
    def fit(cls, texts: list[str], *, k: int = 300, smoothing: float = 0.5) -> WordOrderModel:
        uni: Counter[str] = Counter()
        seqs = []
        for t in texts:
            words = _WORD.findall(t[:MAX_ORDER_CHARS].lower())
            uni.update(words)
            seqs.append(words)
        # ties broken by the word itself: the model must not depend on input order
        vocab = [w for w, _ in sorted(uni.items(), key=lambda x: (-x[1], x[0]))[:k]]
        index = {w: i for i, w in enumerate(vocab)}
        m = len(vocab) + 1
        # adjacent pairs (a, b) as codes a * m + b, counted by bincount per 256 texts (the same integers)
        flat, codes = np.zeros(m * m, np.int64), []
        for k, words in enumerate(seqs):
            ids = np.fromiter(map(index.get, words, repeat(m - 1)), np.int64, count=len(words))
            codes.append(ids[:-1] * m + ids[1:])
            if len(codes) == 256 or k == len(seqs) - 1:
                flat += np.bincount(np.concatenate(codes), minlength=m * m)
                codes = []
        counts = flat.reshape(m, m).tolist()
        col = [sum(counts[a][b] for a in range(m)) + smoothing * m for b in range(m)]
        total = sum(col)
        pmi = []
        for a in range(m):
            row_total = sum(counts[a]) + smoothing * m
            pmi.append([round(math.log((counts[a][b] + smoothing) / row_total) - math.log(col[b] / total), 4)
                        for b in range(m)])
        return cls(vocab, pmi)

    def score(self, text: str, *, min_pairs: int = 12) -> float | None:
        return self.score_pairs(text, min_pairs=min_pairs)[0]

    def score_pairs(self, text: str, *, min_pairs: int = 12) -> tuple[float | None, int]:
        """(mean PMI or None under ``min_pairs``, number of scored pairs)."""
        idx = self.index
        o = self.other
        table = self._table
        if table is None and native.compiled is not None:
            table = self._table = native.str_table(idx)
        ids = native.word_ids(text[:MAX_ORDER_CHARS].lower(), idx, o, table)  # _WORD's matches
        a, b = ids[:-1], ids[1:]
        scored = (a != o) | (b != o)
        n = int(scored.sum())
        if not n:
            return None, 0
        # cumsum adds left to right, as a Python loop would: the same float, bit for bit
        total = float(np.cumsum(self._pmi[a[scored], b[scored]])[-1])
        return (total / n if n >= min_pairs else None), n

    def to_dict(self) -> dict:
        return {"vocab": self.vocab, "pmi": self.pmi}

    @classmethod
    def from_dict(cls, d: dict) -> WordOrderModel:
        return cls(list(d["vocab"]), [list(map(float, r)) for r in d["pmi"]])
