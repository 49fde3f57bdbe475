"""The commercial-spam score of a document: a linear model on its content words' frequencies.

``score = bias + sum(f_w * weight[w]) / sum(f_w)`` over the distinct words ``w`` of the document in
the model's vocabulary, ``f_w = 1 + ln(count of w)``: the decision value of a logistic regression
trained on those normalised, sublinear frequencies
(``bench/train_spam_model.py``; data and licences in ``curate/models/spam/PROVENANCE.md``). A
token is its lower-cased form with edge punctuation stripped; the vocabulary holds content words
only (letters, not among the language's 100 most frequent words nor a few pronouns), so the score
reads what a text offers and sells, not its grammar or its person. Positive: spam-like.

Only languages with a model (``en``) get a score. The domain verdict counts a document scoring
above ``verdict_max_spam_score`` as junk; a document is dropped for it (``garbage:spam``) above
``garbage_max_spam_score`` when it also carries ``spam_min_offer_marks`` offer marks per 100 tokens
(:func:`offer_marks`, counted only where the score allows the drop; the score alone also rises on
manuals about mail and accounts); both need
``spam_min_words`` of the document's tokens in the vocabulary. The weights are looked up once per lower-cased token id
of the shared token table (``TokenTable.low_weights``)."""

from __future__ import annotations

import gzip
import math
import re
from collections import Counter
from functools import cache
from pathlib import Path

import numpy as np

from curate import junkstats as js
from curate import native

MODELS = Path(__file__).resolve().parent / "models" / "spam"
# pronouns and auxiliaries left out of the vocabulary besides the 100 most frequent words: a model
# of who speaks to whom would flag dialogue, letters and help pages
_PERSON = frozenset({"you", "your", "yours", "our", "ours", "we", "us", "i", "my", "me", "will", "please",
                     "this", "here", "now", "new", "can"})


# what an offer shows besides its words: a price, a percentage, a toll-free or dashed phone number, an
# exclamation mark, the word "free"
_OFFER_MARK = re.compile(r"[$€£]\s?\d|\d\s?%|\b1-8\d\d\b|\b\d{3}-\d{3}-\d{4}\b|!|\bfree\b", re.IGNORECASE)


def offer_marks(text: str) -> float:
    """Offer marks (prices, percentages, phone numbers, exclamation marks, "free") per 100 whitespace
    tokens of ``text``: a manual about mail or accounts shares the words of spam, not these."""
    n = len(text.split())
    return 100.0 * len(_OFFER_MARK.findall(text)) / n if n else 0.0


@cache
def excluded(lang: str) -> frozenset[str]:
    return js.stopwords(lang) | _PERSON


def content_words(text: str, lang: str = "en") -> list[str]:
    """The tokens the model may read (training side): lower-cased, edge punctuation stripped,
    letters only, not excluded."""
    skip = excluded(lang)
    out = []
    for tok in text.split():
        core = tok.lower().strip(js.EDGE_PUNCT)
        if core.isalpha() and core not in skip:
            out.append(core)
    return out


@cache
def model(lang: str) -> tuple[float, dict[str, float]] | None:
    """(bias, weight per vocabulary word) of ``lang``'s model, or None without one."""
    path = MODELS / f"{lang}.tsv.gz"
    if not path.exists():
        return None
    bias, weights = 0.0, {}
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            word, _, value = line.rstrip("\n").partition("\t")
            if word == "#bias":
                bias = float(value)
            elif word:
                weights[word] = float(value)
    return bias, weights


def score_lows(table, lows: np.ndarray, lang: str | None) -> tuple[float | None, float]:
    """(score, tokens in the vocabulary) of a document given its lower-cased token ids in ``table``
    (a ``curate.tokentable.TokenTable``); score None without a model for ``lang`` or any known token."""
    m = model(lang) if lang else None
    if m is None or not len(lows):
        return None, 0.0
    bias, weights = m
    hit, core_weight = table.low_weights(f"spam:{lang}", lows, weights)
    k = len(hit)
    if k == 0:
        return None, 0.0
    # distinct stripped forms (``Click`` and ``click,`` are one word), each once, with its count
    cores, counts = native.unique_counts(table.low_core[hit])
    f = _tf(counts)
    return bias + math.fsum((core_weight[cores] * f).tolist()) / math.fsum(f.tolist()), float(k)


def score_text(text: str, lang: str = "en") -> float | None:
    """The same score from the text alone (tests and tools)."""
    m = model(lang)
    if m is None:
        return None
    bias, weights = m
    counts = Counter(w for w in content_words(text, lang) if w in weights)
    if not counts:
        return None
    f = {w: 1.0 + math.log(c) for w, c in counts.items()}
    return bias + math.fsum(weights[w] * x for w, x in f.items()) / math.fsum(f.values())


_TF = np.array([0.0] + [1.0 + math.log(c) for c in range(1, 1025)])


def _tf(counts: np.ndarray) -> np.ndarray:
    """``1 + ln(count)`` with ``math.log`` (the values :func:`score_text` uses), from a table."""
    if int(counts.max()) < len(_TF):
        return _TF[counts]
    return np.array([1.0 + math.log(c) for c in counts.tolist()])
