"""The toxicity model's window scores computed from its linear weights, without sklearn at run time.

The model of ``alt-profanity-check`` is a tf-idf vectorizer (word unigrams, l2 norm) followed by a
``CalibratedClassifierCV`` of ``K`` linear SVMs with sigmoid calibration. For one window with term
counts ``c_t`` the sklearn pipeline computes::

    v_t = c_t * idf_t                      (TfidfTransformer, sorted term ids)
    x_t = v_t / sqrt(sum_t v_t * v_t)      (l2 row normalisation, a sequential sum)
    d_k = sum_t x_t * w_kt + intercept_k   (decision function, a sequential sum)
    p   = (sum_k expit(-(a_k * d_k + b_k))) / K

``LinearWindowModel`` evaluates exactly these floating-point operations in the same order (term ids
sorted, sums accumulated term by term from 0.0, classifiers added one by one), vectorised over a
batch of windows with numpy, so its probabilities are those of ``model.predict_proba(
vectorizer.transform(windows))`` bit for bit (``tests/curate/test_toxicity_linear.py``). Each
distinct whitespace word is tokenised once and its vocabulary ids are kept (a per-process cache);
a batch costs one lookup per word (C-level loops).

Loading: the weights are read from the package's two joblib files once (this imports sklearn, ~3 s
of CPU) and kept in a cache file named by the sha256 of those files
(``$CORPUSMIX_CACHE_DIR`` or ``$XDG_CACHE_HOME/corpusmix`` or ``~/.cache/corpusmix``,
``toxicity/<hash>.npz``); later processes load the arrays only (~10 ms). A changed model file has a
new hash, so a stale cache is never read; an unwritable cache folder only costs the sklearn load.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
from itertools import chain, repeat
from pathlib import Path
from typing import Any

import numpy as np

_FORMAT = "v1"
# token patterns whose matches never hold or border on whitespace in a way that a neighbouring word
# changes (``\b`` sees a space and the start of a word alike): sklearn's default
WORD_PATTERNS = (r"(?u)\b\w\w+\b",)


class UnsupportedModel(ValueError):
    """The vectorizer/model pair is not one whose scores this module reproduces exactly."""


def _check_vectorizer(vec: Any) -> None:
    p = vec.get_params()
    ok = (p.get("analyzer") == "word" and tuple(p.get("ngram_range") or ()) == (1, 1)
          and p.get("preprocessor") is None and p.get("tokenizer") is None and not p.get("binary")
          and p.get("strip_accents") is None and p.get("norm") == "l2" and p.get("use_idf")
          and not p.get("sublinear_tf") and p.get("input") == "content" and hasattr(vec, "idf_"))
    if not ok:
        raise UnsupportedModel("vectorizer is not a word-unigram l2 tf-idf without accent stripping")
    if vec.token_pattern not in WORD_PATTERNS:  # tokens are cached per whitespace word (probabilities_flat)
        raise UnsupportedModel(f"token_pattern {vec.token_pattern!r} may read across whitespace")
    stop = vec.get_stop_words() or frozenset()
    if stop & set(vec.vocabulary_):
        raise UnsupportedModel("vocabulary holds stop words")


def _linear_parts(model: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(W (V, K), intercepts (K,), a (K,), b (K,))`` of a binary sigmoid-calibrated linear model."""
    ccs = getattr(model, "calibrated_classifiers_", None)
    if not ccs or len(getattr(model, "classes_", ())) != 2:
        raise UnsupportedModel("model is not a fitted binary CalibratedClassifierCV")
    ws, bs, cal_a, cal_b = [], [], [], []
    for cc in ccs:
        est = cc.estimator
        if (getattr(cc, "method", None) != "sigmoid" or len(cc.calibrators) != 1
                or not hasattr(est, "coef_") or np.asarray(est.coef_).shape[0] != 1
                or not hasattr(cc.calibrators[0], "a_") or type(est).decision_function.__qualname__
                != "LinearClassifierMixin.decision_function"):
            raise UnsupportedModel("calibrated classifiers must be binary linear models with sigmoid calibration")
        ws.append(np.asarray(est.coef_, dtype=np.float64)[0])
        bs.append(float(np.asarray(est.intercept_, dtype=np.float64).reshape(-1)[0]) if est.fit_intercept else 0.0)
        cal_a.append(float(cc.calibrators[0].a_))
        cal_b.append(float(cc.calibrators[0].b_))
    return (np.ascontiguousarray(np.stack(ws, axis=1)), np.asarray(bs), np.asarray(cal_a), np.asarray(cal_b))


class LinearWindowModel:
    """Window probabilities of a tf-idf + calibrated linear model, equal to sklearn's."""

    def __init__(self, *, terms: list[str], idf: np.ndarray, weights: np.ndarray, intercepts: np.ndarray,
                 cal_a: np.ndarray, cal_b: np.ndarray, token_pattern: str, lowercase: bool) -> None:
        self.terms = list(terms)
        self.vocab = {t: i for i, t in enumerate(self.terms)}
        self.idf = np.asarray(idf, dtype=np.float64)
        self.weights = np.asarray(weights, dtype=np.float64)  # (V, K)
        self.intercepts, self.cal_a, self.cal_b = (np.asarray(x, dtype=np.float64) for x in (intercepts, cal_a, cal_b))
        self.token_pattern, self.lowercase = token_pattern, bool(lowercase)
        self._token = re.compile(token_pattern)
        self._codes_raw: dict[str, int] = {}  # word -> code (see _codes), per lower-casing of the input
        self._codes_low: dict[str, int] = {}
        self._multi: list[list[int]] = []
        self._by_low = np.zeros(0, np.int64)  # per id of the shared token table: the code, -1 unknown
        self._by_low_key: tuple[int, int] = (-1, -1)  # (table generation, code cache epoch) it holds
        self._epoch = 0  # +1 whenever the code caches are cleared
        self._multi_np: tuple[int, int, np.ndarray, np.ndarray, np.ndarray] | None = None  # see _multi_arrays
        # the token pattern finds a word of word characters whole (see _codes), and no term is shorter
        self._alnum_exact = token_pattern in WORD_PATTERNS and all(len(t) >= 2 for t in self.terms)
        if not (len(self.terms) == len(self.idf) == self.weights.shape[0]
                and self.weights.shape[1] == len(self.intercepts) == len(self.cal_a) == len(self.cal_b)):
            raise ValueError("toxicity weights: inconsistent array shapes")

    @classmethod
    def from_sklearn(cls, vectorizer: Any, model: Any) -> LinearWindowModel:
        """The weights of a fitted ``TfidfVectorizer`` and ``CalibratedClassifierCV`` (raises
        :class:`UnsupportedModel` for pipelines whose scores it would not reproduce exactly)."""
        _check_vectorizer(vectorizer)
        w, b, a, c = _linear_parts(model)
        vocab = vectorizer.vocabulary_
        terms = [""] * len(vocab)
        for t, i in vocab.items():
            terms[i] = t
        return cls(terms=terms, idf=vectorizer.idf_, weights=w, intercepts=b, cal_a=a, cal_b=c,
                   token_pattern=vectorizer.token_pattern, lowercase=vectorizer.lowercase)

    def save(self, path: Path) -> None:
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        with open(tmp, "wb") as f:
            np.savez(f, terms=np.asarray(self.terms, dtype=str), idf=self.idf, weights=self.weights,
                     intercepts=self.intercepts, cal_a=self.cal_a, cal_b=self.cal_b,
                     token_pattern=np.asarray(self.token_pattern), lowercase=np.asarray(self.lowercase))
        tmp.replace(path)

    @classmethod
    def load(cls, path: Path) -> LinearWindowModel:
        with np.load(path, allow_pickle=False) as z:
            return cls(terms=z["terms"].tolist(), idf=z["idf"], weights=z["weights"], intercepts=z["intercepts"],
                       cal_a=z["cal_a"], cal_b=z["cal_b"], token_pattern=str(z["token_pattern"]),
                       lowercase=bool(z["lowercase"]))

    def probabilities(self, windows: list[list[str]]) -> np.ndarray:
        """Positive-class probability of each window, given as its whitespace-free words (the
        window's text is those words joined by single spaces)."""
        return self.probabilities_flat(list(chain.from_iterable(windows)), list(map(len, windows)))

    def bound_caches(self) -> None:
        """Clear the code caches when they hold over a million words (codes from before are void)."""
        if len(self._codes_low) + len(self._codes_raw) > 1_000_000:
            self._codes_low.clear()
            self._codes_raw.clear()
            self._multi.clear()
            self._epoch += 1

    def codes_of_lows(self, lows: np.ndarray, low_words: list[str], generation: int) -> np.ndarray:
        """``_codes`` of the lower-cased words ``low_words[i]`` for ``i`` in ``lows`` (ids of the shared
        token table of ``curate.textstats``, whose ``generation`` names its current ids), kept per id.
        Call :meth:`bound_caches` once before the documents of a batch, not between them: the codes
        of one batch must come from one epoch of the caches."""
        if not self.lowercase:
            raise ValueError("codes of lower-cased words given to a model that does not lower-case")
        if self._by_low_key != (generation, self._epoch):
            self._by_low = np.zeros(0, np.int64)
            self._by_low_key = (generation, self._epoch)
        if len(self._by_low) < len(low_words):
            self._by_low = np.concatenate([self._by_low, np.full(len(low_words) - len(self._by_low) + 1024, -1)])
        got = self._by_low[lows]
        if (got == -1).any():
            todo = np.unique(lows[got == -1])
            self._by_low[todo] = self._codes([low_words[i] for i in todo.tolist()], True, bound=False)
            got = self._by_low[lows]
        return got

    def _codes(self, words: list[str], lowered: bool, bound: bool = True) -> np.ndarray:
        """Each word's code: its one vocabulary id (>= 0), -2 (no known token) or ``-3 - k`` for the
        ``k``-th entry of ``self._multi`` (a word of several tokens, e.g. ``don't`` or ``a.b``)."""
        if bound:
            self.bound_caches()
        cache = self._codes_low if lowered else self._codes_raw
        find, vocab, multi = self._token.findall, self.vocab, self._multi
        new = set(words).difference(cache)
        if new and self._alnum_exact:
            # a word of word characters only (str.isalnum: the \w class of re, less "_") is one
            # token, itself, with 2+ characters, and no token with 1: its code is its vocabulary id
            # or -2 (every term has 2+ characters)
            low = lowered or not self.lowercase
            simple = [w for w in new if (w if low else w.lower()).isalnum()]
            if simple:
                src = simple if low else list(map(str.lower, simple))
                cache.update(zip(simple, map(vocab.get, src, repeat(-2)), strict=True))
                new.difference_update(simple)
        for w in new:
            if w and w.split() != [w]:
                raise ValueError("toxicity windows must be lists of whitespace-free words")
            ids = [i for i in map(vocab.get, find(w if lowered or not self.lowercase else w.lower())) if i is not None]
            if len(ids) == 1:
                cache[w] = ids[0]
            elif not ids:
                cache[w] = -2
            else:
                cache[w] = -3 - len(multi)
                multi.append(ids)
        return np.fromiter(map(cache.__getitem__, words), dtype=np.int64, count=len(words))

    def probabilities_flat(self, words: list[str], win_lens: list[int], lowered: bool = False) -> np.ndarray:
        """``probabilities`` of the windows ``words[0:win_lens[0]]``, the next ``win_lens[1]`` words,
        ...; ``lowered``: the words are already ``str.lower``-ed (only for a lower-casing model).

        The token pattern never reads across whitespace (``_check_vectorizer``), so a window's tokens
        are those of its words in turn, and lower-casing a word alone gives the same characters as
        lower-casing the window (no whitespace character is cased or case-ignorable, so the final-sigma
        rule never looks past one): each distinct word is tokenised once and kept as its codes."""
        if lowered and not self.lowercase:
            raise ValueError("lowered words given to a model that does not lower-case")
        if not win_lens:
            return np.zeros(0)
        if sum(win_lens) != len(words):
            raise ValueError("toxicity windows: the window lengths do not add up to the words")
        return self.probabilities_codes(self._codes(words, lowered), win_lens)

    def _multi_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``self._multi`` as arrays: its lists' ids one after another, each list's start and size
        (rebuilt when lists were added or cleared since the last call)."""
        multi = self._multi
        got = self._multi_np
        if got is None or got[0] != len(multi) or got[1] != self._epoch:
            size = np.fromiter(map(len, multi), np.int64, len(multi))
            start = np.zeros(len(multi), np.int64)
            np.cumsum(size[:-1], out=start[1:])
            flat = np.fromiter(chain.from_iterable(multi), np.int64, int(size.sum()))
            got = self._multi_np = (len(multi), self._epoch, flat, start, size)
        return got[2], got[3], got[4]

    def probabilities_codes(self, codes: np.ndarray, win_lens: list[int]) -> np.ndarray:
        """``probabilities_flat`` of words given as their codes (``_codes``, ``codes_of_lows``; all of
        one epoch of the code caches)."""
        from scipy.special import expit  # the function sklearn's sigmoid calibrator applies

        n_win = len(win_lens)
        k = len(self.intercepts)
        if n_win == 0:
            return np.zeros(0)
        if sum(win_lens) != len(codes):
            raise ValueError("toxicity windows: the window lengths do not add up to the words")
        win_of = np.repeat(np.arange(n_win, dtype=np.int64), np.asarray(win_lens, dtype=np.int64))
        one = codes >= 0
        win, ids = win_of[one], codes[one]
        several = np.flatnonzero(codes <= -3)
        if len(several):  # words of several tokens: each token counts for the word's window
            flat, start, size = self._multi_arrays()
            m = -3 - codes[several]
            n_tok = size[m]
            # the positions in ``flat`` of each word's tokens, word after word
            first = np.repeat(start[m] - (np.cumsum(n_tok) - n_tok), n_tok)
            win = np.concatenate([win, np.repeat(win_of[several], n_tok)])
            ids = np.concatenate([ids, flat[first + np.arange(len(first))]])
        n_terms = len(self.terms)
        # the counts of each (window, term): the order of the pairs above does not matter
        keys, counts = np.unique(win * n_terms + ids, return_counts=True)
        row = keys // n_terms
        col = keys - row * n_terms
        per_row = np.bincount(row, minlength=n_win)
        width = int(per_row.max()) if len(keys) else 0
        start = np.zeros(n_win, dtype=np.int64)
        np.cumsum(per_row[:-1], out=start[1:])
        pos = np.arange(len(keys)) - start[row]
        v = counts.astype(np.float64) * self.idf[col]
        # sequential sums over each row's sorted terms, from 0.0, as sklearn's loops add them: step j
        # adds every row's j-th term (a row appears at most once per step)
        by_pos = np.argsort(pos, kind="stable")
        bounds = np.zeros(width + 1, dtype=np.int64)
        np.cumsum(np.bincount(pos, minlength=width), out=bounds[1:])
        steps = [(row[sel], sel) for sel in (by_pos[bounds[j]:bounds[j + 1]] for j in range(width))]
        total = np.zeros(n_win)
        sq = v * v
        for r, sel in steps:
            total[r] += sq[sel]
        norm = np.sqrt(total)
        x = v / np.where(norm[row] == 0.0, 1.0, norm[row])
        prod = x[:, None] * self.weights[col]
        dot = np.zeros((n_win, k))
        for r, sel in steps:
            dot[r] += prod[sel]
        d = dot + self.intercepts
        mean = np.zeros(n_win)
        for i in range(k):
            mean += expit(-(self.cal_a[i] * d[:, i] + self.cal_b[i]))
        mean /= k
        return mean


def _cache_dir() -> Path:
    base = os.environ.get("CORPUSMIX_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "corpusmix")
    return Path(base) / "toxicity"


def packaged_model_files() -> tuple[Path, Path]:
    """``alt-profanity-check``'s vectorizer and model files, found without importing the package
    (its import loads both with sklearn)."""
    spec = importlib.util.find_spec("profanity_check")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("alt-profanity-check is not installed")
    data = Path(next(iter(spec.submodule_search_locations))) / "data"
    return data / "vectorizer.joblib", data / "model.joblib"


def load_packaged(cache: bool = True) -> LinearWindowModel:
    """The linear weights of ``alt-profanity-check``'s model, from the cache when it holds them."""
    vec_f, model_f = packaged_model_files()
    h = hashlib.sha256(_FORMAT.encode())
    for f in (vec_f, model_f):
        h.update(f.read_bytes())
    path = _cache_dir() / f"alt-profanity-check-{h.hexdigest()[:24]}.npz"
    if cache and path.exists():
        try:
            return LinearWindowModel.load(path)
        except (OSError, ValueError, KeyError):
            pass  # a damaged cache file is rebuilt below
    import joblib

    m = LinearWindowModel.from_sklearn(joblib.load(vec_f), joblib.load(model_f))
    if cache:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            m.save(path)
        except OSError:
            pass  # read-only home (a Spark executor): the weights are rebuilt per process
    return m
