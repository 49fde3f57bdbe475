"""Toxicity / NSFW scoring and filtering, offline.

Two signals, both shipped (nothing is downloaded):

* ``toxicity`` (float in [0, 1]): the linear offensive-language model that the PyPI package
  ``alt-profanity-check`` ships inside its wheel (TF-IDF + calibrated linear SVM, English). Long
  documents are cut into windows of about ``window_words`` (24) words (whole lines where possible) and
  the score is the maximum over windows: a model trained on short comments would otherwise see a
  few slurs diluted in a long page. Scored only where ``lang`` is in ``model_languages``. Windows
  are scored from the model's linear weights (``curate.steps.toxicity_linear``: the same
  probabilities as the sklearn pipeline, bit for bit, without loading sklearn at run time).
* ``badwords`` (int): hits of the multilingual "List of Dirty, Naughty, Obscene and Otherwise Bad
  Words" (LDNOOBW, CC-BY-4.0; 15 languages in ``curate/models/badwords``, see the PROVENANCE
  there) for the document's language, matched on word boundaries (substrings for ja/th/zh, as
  datatrove's C4 filter does). English adds a larger lexicon, less its allow-list (``extra_lists``), and
  obfuscated, inflected and compound spellings (``match_obfuscated``; ``curate.steps.toxicity_words``).

``ToxicityScorer`` writes the columns; ``ToxicityFilter`` decides with per-domain thresholds
(``max_toxicity``, ``max_badword_ratio``) and, optionally, C4's rule (``c4_badwords``: drop every
document with a listed word, as C4 did; it removes much legitimate text, so it is off by default).
Run alone with ``corpusmix curate toxicity --input F --output F``; in the chain by
``corpusmix curate run`` (params ``toxicity``, step ``toxicity`` in ``curate.engine.steps``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import accumulate
from pathlib import Path
from typing import Any

import numpy as np
from datatrove.data import Document

from corpusmix.config import ConfigError, from_dict
from curate import native, textstats
from curate.steps.base import Annotator, CurationStep, error_drop
from curate.steps.registry import StepSpec, register
from curate.steps.toxicity_counts import NO_SPACE_LANGS, BadwordCounter, TokenCodes, badword_pattern  # noqa: F401
from curate.steps.toxicity_linear import LinearWindowModel, UnsupportedModel, load_packaged
from curate.steps.toxicity_words import (
    ROOT_SOURCES,
    ObfuscatedWords,
    load_extra,
    load_okayish,
    source_counts,
)

BADWORDS_DIR = Path(__file__).resolve().parents[1] / "models" / "badwords"
MODELS = ("alt-profanity-check", "none")


@dataclass
class ToxicityConfig:
    """Toxicity settings (``params.yaml`` section ``toxicity``)."""

    model: str = field(default="alt-profanity-check", metadata={
        "help": f"toxicity model: {MODELS} (none: word lists only)"})
    model_languages: list[str] = field(default_factory=lambda: ["en"], metadata={
        "help": "languages the model is applied to (documents without `lang` count as the default language)"})
    default_language: str = field(default="en", metadata={"help": "language of documents without `lang`"})
    window_words: int = field(default=24, metadata={"help": "words per scored window (score = max over windows)"})
    batch_size: int = field(default=64, metadata={"help": "documents scored per model call"})
    badwords_dir: str = field(default="", metadata={
        "help": "folder of <lang>.txt bad-word lists ('' = the shipped LDNOOBW lists)"})
    max_toxicity: float | None = field(default=0.95, metadata={"help": "drop above this score (null: never)"})
    max_badword_ratio: float | None = field(default=0.005, metadata={
        "help": "drop when bad-word hits / words exceeds this (null: never)"})
    c4_badwords: bool = field(default=False, metadata={"help": "C4's rule: drop any document with a listed word"})
    extra_lists: bool = field(default=True, metadata={
        "help": "add the vendored larger English lexicon (curate/models/badwords/extra), less its allow-list"})
    match_obfuscated: bool = field(default=True, metadata={
        "help": "also count obfuscated (sh1t, f*ck, f u c k, fuuuck), inflected and compound forms"})
    per_domain: dict = field(default_factory=dict, metadata={
        "help": "domain -> {max_toxicity, max_badword_ratio, c4_badwords} overrides"})

    def __post_init__(self) -> None:
        if self.model not in MODELS:
            raise ConfigError(f"toxicity.model must be one of {MODELS}, got {self.model!r}")
        if self.window_words < 1 or self.batch_size < 1:
            raise ConfigError("toxicity.window_words and batch_size must be >= 1")
        allowed = {"max_toxicity", "max_badword_ratio", "c4_badwords"}
        for dom, over in (self.per_domain or {}).items():
            if not isinstance(over, dict) or set(over) - allowed:
                raise ConfigError(f"toxicity.per_domain.{dom} must map some of {sorted(allowed)} to values")

    def for_domain(self, domain: str | None) -> ToxicityConfig:
        over = (self.per_domain or {}).get(domain) if domain is not None else None
        if not over:
            return self
        base = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "per_domain"}
        return from_dict(ToxicityConfig, {**base, **over}, where=f"toxicity.per_domain.{domain}")


def load_badwords(folder: str | Path = "") -> dict[str, list[str]]:
    """``{lang: words}`` from ``<lang>.txt`` files (one entry per line, ``#`` comments)."""
    if folder:
        d: Any = Path(folder)
    else:
        # the shipped lists through importlib.resources: also readable where the package is imported
        # from a zip (Spark's --py-files), which a filesystem path into the zip is not
        from importlib.resources import files as package_files

        d = package_files("curate").joinpath("models", "badwords")
    files = sorted((f for f in d.iterdir() if f.name.endswith(".txt")), key=lambda f: f.name) if d.is_dir() else []
    if not files:
        raise ConfigError(f"toxicity.badwords_dir {str(d)!r} holds no <lang>.txt list; point it at a folder of "
                          "lists or leave it '' for the shipped ones")
    out = {}
    for f in files:
        words = [w.strip().lower() for w in f.read_text(encoding="utf-8").splitlines()]
        out[f.name[:-len(".txt")]] = sorted({w for w in words if w and not w.startswith("#")})
    return out


def window_words(text: str, size: int) -> list[list[str]]:
    """The words of each window of :func:`windows` (a window is ``" ".join`` of its words)."""
    out: list[list[str]] = []
    cur: list[str] = []
    for line in text.splitlines():
        words = line.split()
        while len(words) > size:
            if cur:
                out.append(cur)
                cur = []
            out.append(words[:size])
            words = words[size:]
        if len(cur) + len(words) > size and cur:
            out.append(cur)
            cur = []
        cur += words
    if cur or not out:
        out.append(cur)
    return out


def window_sizes(line_words: Iterable[int], size: int) -> list[int]:
    """The number of words of each window of :func:`window_words`, from each line's word count
    (the windows are consecutive runs of the text's ``split()`` words)."""
    out: list[int] = []
    cur = 0
    for n in line_words:
        if n > size:
            if cur:
                out.append(cur)
                cur = 0
            k = (n - 1) // size  # full windows cut from the line; 1..size words stay
            out += [size] * k
            n -= k * size
        if cur + n > size and cur:
            out.append(cur)
            cur = 0
        cur += n
    if cur or not out:
        out.append(cur)
    return out


def windows(text: str, size: int) -> list[str]:
    """Whole lines packed into windows of at most ``size`` words; longer lines are split by words."""
    return [" ".join(w) for w in window_words(text, size)]


class WindowFeatures:
    """``vectorizer.transform(windows)`` of a fitted word-unigram sklearn vectorizer, built from a
    cache of each whitespace word's feature ids.

    A window is its words joined by single spaces, and the analyzer (lower-case, ``token_pattern``,
    stop words, unigrams) never reads across a space: a window's features are the concatenation of
    its words' features. The count matrix is built as ``CountVectorizer._count_vocab`` builds it
    (CSR, ``intc`` counts, sorted indices) and goes through the vectorizer's own tf-idf transform,
    so the matrix and the model's probabilities are the same; each distinct word is analysed once
    instead of once per occurrence. Other analyzers (n-grams, char, callables) use ``transform``.
    """

    def __init__(self, vectorizer: Any) -> None:
        self.vec = vectorizer
        p = vectorizer.get_params()
        self.exact = (p.get("analyzer") == "word" and tuple(p.get("ngram_range") or ()) == (1, 1)
                      and p.get("preprocessor") is None and p.get("tokenizer") is None and not p.get("binary")
                      and hasattr(vectorizer, "_tfidf"))
        self.analyze = vectorizer.build_analyzer()
        self.vocab = vectorizer.vocabulary_
        self.cache: dict[str, tuple[int, ...]] = {}

    def transform(self, windows_words: list[list[str]]) -> Any:
        if not self.exact:
            return self.vec.transform([" ".join(w) for w in windows_words])
        import numpy as np
        import scipy.sparse as sp

        cache, vocab, analyze = self.cache, self.vocab, self.analyze
        if len(cache) > 1_000_000:
            cache.clear()
        j: list[int] = []
        values: list[int] = []
        indptr = [0]
        for words in windows_words:
            counter: dict[int, int] = {}
            for w in words:
                ids = cache.get(w)
                if ids is None:
                    ids = cache[w] = tuple(vocab[t] for t in analyze(w) if t in vocab)
                for i in ids:
                    counter[i] = counter.get(i, 0) + 1
            j.extend(counter)
            values.extend(counter.values())
            indptr.append(len(j))
        x = sp.csr_array((np.asarray(values, dtype=np.intc), np.asarray(j, dtype=np.int32),
                          np.asarray(indptr, dtype=np.int32)), shape=(len(indptr) - 1, len(vocab)),
                         dtype=self.vec.dtype)
        x.sort_indices()
        try:  # what CountVectorizer.transform returns (a sparse matrix or array, per sklearn's config)
            from sklearn.feature_extraction.text import _align_api_if_sparse

            x = _align_api_if_sparse(x)
        except ImportError:
            pass
        return self.vec._tfidf.transform(x, copy=False)


class ToxicityScorer(Annotator):
    """Adds ``toxicity`` (model score, max over windows) and ``badwords`` (word-list hits)."""

    step_name = "toxicity_score"
    name = "toxicity score"
    columns = ("toxicity", "badwords")

    def __init__(self, cfg: ToxicityConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.batch_size = cfg.batch_size
        self.lists = load_badwords(cfg.badwords_dir)
        if cfg.extra_lists:  # the larger lexicon joins the exact match; its allow-list applies to both
            for lang in list(self.lists):
                extra = load_extra(lang)
                if extra:
                    self.lists[lang] = sorted((set(self.lists[lang]) | extra) - load_okayish(lang))
        self._patterns: dict[str, BadwordCounter] = {}
        self._codes: dict[str, TokenCodes] = {}
        self._model: Any = None

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_model"] = None
        state["_patterns"] = {}
        state["_codes"] = {}
        return state

    def _predict(self, windows_words: list[list[str]]) -> list[float]:
        """The sklearn pipeline's window probabilities (a model ``LinearWindowModel`` cannot read)."""
        if self._model is None:
            self._model = self._load_model()
        features, model = self._model
        return model.predict_proba(features.transform(windows_words))[:, 1].tolist()

    @staticmethod
    def _load_model() -> Any:
        try:
            return load_packaged()
        except UnsupportedModel:
            pass  # another model layout: the sklearn pipeline itself
        except ImportError as exc:
            raise ConfigError("toxicity.model 'alt-profanity-check' needs `pip install alt-profanity-check` "
                              "(or set toxicity.model: none)") from exc
        try:  # the package loads its vectorizer and model (inside the wheel) at import
            from profanity_check import profanity_check as pc
        except ImportError as exc:
            raise ConfigError("toxicity.model 'alt-profanity-check' needs `pip install alt-profanity-check` "
                              "(or set toxicity.model: none)") from exc
        return (WindowFeatures(pc.vectorizer), pc.model)

    def _lang(self, doc: Document) -> str:
        return doc.metadata.get("lang") or self.cfg.default_language

    def count_badwords(self, text: str, lang: str, low: str | None = None,
                       tokens: list[str] | None = None) -> int | None:
        """Bad-word hits of ``text`` in ``lang``'s list; ``low``: ``text.lower()`` and ``tokens``:
        ``low.split()``, where the caller has them."""
        words = self.lists.get(lang)
        if words is None:
            return None
        counter = self._patterns.get(lang)
        if counter is None:
            counter = self._patterns[lang] = BadwordCounter(words, lang)
        if low is None:
            low = text.lower()
        if lang in NO_SPACE_LANGS:
            return counter.count(low)
        return self._token_codes(lang, counter).count(low, low.split() if tokens is None else tokens, text)

    def _token_codes(self, lang: str, counter: BadwordCounter) -> TokenCodes:
        codes = self._codes.get(lang)
        if codes is None:
            ob = None
            if self.cfg.match_obfuscated and lang == "en":  # English roots and vocabulary (toxicity_words)
                okay = load_okayish(lang)
                strong = [w for w, n in source_counts(lang).items() if n >= ROOT_SOURCES and w not in okay]
                ob = ObfuscatedWords(self.lists[lang], strong)
            codes = self._codes[lang] = TokenCodes(counter, ob)
        return codes

    def _badwords_shared(self, text: str, lang: str, lows: np.ndarray, table: list[str],
                         generation: int) -> int | None:
        """``count_badwords`` given the text's tokens as ids of the shared token table (the text is
        lower-cased only where a token's code asks for a look at it)."""
        if lang in NO_SPACE_LANGS or lang not in self.lists:
            return self.count_badwords(text, lang)
        counter = self._patterns.get(lang)
        if counter is None:
            counter = self._patterns[lang] = BadwordCounter(self.lists[lang], lang)
        return self._token_codes(lang, counter).count_lows(text, lows, table, generation)

    def annotate(self, doc: Document) -> None:
        res = self.filter_batch([doc])[0]
        if res is not True:  # Annotator.filter turns this into the counted error drop
            raise RuntimeError(res[1])

    def filter_batch(self, batch: list[Document]) -> list[bool | tuple[bool, str]]:
        results: list[bool | tuple[bool, str]] = [True] * len(batch)
        if self.cfg.model != "none" and self._model is None:
            self._model = self._load_model()
        # a lower-casing linear model takes the word lists' lower-cased words (see probabilities_flat)
        flat = isinstance(self._model, LinearWindowModel)
        lowered = flat and self._model.lowercase
        words: list[str] = []
        sizes: list[int] = []
        owners: list[int] = []
        size = self.cfg.window_words
        # with the compiled kernels: each text's tokens once as ids of the shared token table, and
        # the word lists' and the model's codes kept per id (the same counts and probabilities)
        shared = lowered and native.compiled is not None
        parts: list[np.ndarray] = []
        if shared:
            self._model.bound_caches()
        for i, doc in enumerate(batch):
            try:
                lang = self._lang(doc)
                if shared:
                    lows, table, gen = textstats.token_lows(doc.text)
                    doc.metadata["badwords"] = self._badwords_shared(doc.text, lang, lows, table, gen)
                    doc.metadata["toxicity"] = None
                    if self.cfg.model != "none" and lang in self.cfg.model_languages:
                        w = native.compiled.window_sizes(doc.text, size)  # lower-casing moves no space
                        parts.append(self._model.codes_of_lows(lows, table, gen))
                        sizes += w
                        owners += [i] * len(w)
                    continue
                low = doc.text.lower()
                tokens = low.split()
                doc.metadata["badwords"] = self.count_badwords(doc.text, lang, low, tokens)
                doc.metadata["toxicity"] = None
                if self.cfg.model != "none" and lang in self.cfg.model_languages:
                    src = low if lowered else doc.text
                    w = (native.compiled.window_sizes(src, size) if native.compiled is not None else
                         window_sizes(map(len, map(str.split, src.splitlines())), size))
                    words += tokens if lowered else doc.text.split()
                    sizes += w
                    owners += [i] * len(w)
            except Exception as exc:  # one bad document must not kill the task; it is logged and counted
                results[i] = error_drop(self.step_name, doc, exc)
        if sizes:
            if shared:
                probs = self._model.probabilities_codes(np.concatenate(parts), sizes)
            elif flat:
                probs = self._model.probabilities_flat(words, sizes, lowered=lowered)
            else:
                bounds = [0, *accumulate(sizes)]
                probs = self._predict([words[a:b] for a, b in zip(bounds, bounds[1:], strict=False)])
            probs = np.asarray(probs, dtype=np.float64)
            owner = np.asarray(owners, dtype=np.int64)
            if len(probs) != len(owner):
                raise ValueError("toxicity: one probability per window expected")
            # each document's windows are consecutive: the score is the largest of them and 0.0,
            # NaN left out (what max(best, p) from 0.0 keeps, window by window)
            first = np.flatnonzero(np.concatenate([[True], owner[1:] != owner[:-1]]))
            best = np.fmax(np.fmax.reduceat(probs, first), 0.0)
            for i, p in zip(owner[first].tolist(), best.tolist(), strict=True):
                batch[i].metadata["toxicity"] = round(p, 6)
        return results


class ToxicityFilter(CurationStep):
    """Drops by the scorer's columns with per-domain thresholds (reasons name the rule)."""

    step_name = "toxicity"
    name = "toxicity filter"

    def __init__(self, cfg: ToxicityConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self._per_domain: dict[str | None, ToxicityConfig] = {}

    def filter(self, doc: Document) -> bool | tuple[bool, str]:
        dom = doc.metadata.get("domain")
        c = self._per_domain.get(dom)
        if c is None:
            c = self._per_domain[dom] = self.cfg.for_domain(dom)
        tox, bad = doc.metadata.get("toxicity"), doc.metadata.get("badwords")
        if c.c4_badwords and bad:
            return False, "c4_badwords"
        if c.max_toxicity is not None and tox is not None and tox > c.max_toxicity:
            return False, f"toxicity_above_{c.max_toxicity:g}"
        if c.max_badword_ratio is not None and bad:
            n_words = max(len(doc.text.split()), 1)
            if bad / n_words > c.max_badword_ratio:
                return False, f"badword_ratio_above_{c.max_badword_ratio:g}"
        return True


def toxicity_steps(cfg: ToxicityConfig) -> list[CurationStep]:
    """The chain's toxicity part: scorer, then filter."""
    return [ToxicityScorer(cfg), ToxicityFilter(cfg)]


register(StepSpec(name="toxicity", config=ToxicityConfig, section="toxicity", stage="a", order=50,
                  build=lambda cfg, chain: toxicity_steps(cfg), module=__name__))
