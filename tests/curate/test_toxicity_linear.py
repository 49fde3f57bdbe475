"""The toxicity model scored from its linear weights equals the sklearn pipeline, bit for bit."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from datatrove.data import Document

from curate.steps.toxicity import ToxicityConfig, ToxicityScorer, WindowFeatures, window_words
from curate.steps.toxicity_linear import LinearWindowModel, UnsupportedModel, load_packaged

ROOT = Path(__file__).resolve().parents[2]
pc = pytest.importorskip("profanity_check.profanity_check")


def _demo_texts(step: int) -> list[str]:
    files = sorted((ROOT / "data/demo/en").glob("*.parquet")) + sorted((ROOT / "data/demo/foreign").glob("*.parquet"))
    return [t for f in files for t in pq.read_table(f, columns=["text"]).column("text").to_pylist()[::step]]


def _random_texts(n: int, seed: int = 0) -> list[str]:
    """Vocabulary terms (toxic ones included), unknown words, stop words, punctuation, mixed case."""
    rng = random.Random(seed)
    vocab = sorted(pc.vectorizer.vocabulary_)
    extra = ["the", "and", "zzqxv", "Über", "ΣΟΦΟΣ", "İstanbul", "co-operate", "don't", "a.b.c", "x", "42", "__init__"]
    out = []
    for _ in range(n):
        words = [rng.choice(vocab) if rng.random() < 0.7 else rng.choice(extra) for _ in range(rng.randint(0, 60))]
        words = [w.upper() if rng.random() < 0.1 else w for w in words]
        out.append("".join(w + rng.choice([" ", " ", "\n", ", ", "-"]) for w in words))
    return out


def _both(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    ww = [w for t in texts for w in window_words(t, 24)]
    model = LinearWindowModel.from_sklearn(pc.vectorizer, pc.model)
    got = model.probabilities(ww)
    want = pc.model.predict_proba(pc.vectorizer.transform([" ".join(w) for w in ww]))[:, 1]
    return got, want


def test_window_scores_equal_sklearn_on_demo_and_random_text() -> None:
    texts = _demo_texts(10) + _random_texts(400)
    got, want = _both(texts)
    assert len(got) > 3000 and want.max() > 0.95 and want.min() < 0.05  # both ends of the scale are seen
    assert np.abs(got - want).max() <= 1e-12
    assert np.array_equal(got, want)  # in fact the same floats


@pytest.mark.parametrize("text", ["", "   \n\n", "zzqxv qqqwx", "the and of", "fuck", "Idiot", "a\u2028b\x1cc",
                                  "FUCK you ΟΔΟΣ ΣΟΦΟΣ İstanbul don't self.name co-operate"])
def test_edge_windows(text: str) -> None:
    """Empty windows, unknown words only, stop words only, one word, odd separators."""
    got, want = _both([text])
    assert np.array_equal(got, want)


def test_batches_are_independent() -> None:
    """A window's score does not depend on the other windows of the call."""
    texts = _random_texts(50, seed=1)
    ww = [w for t in texts for w in window_words(t, 24)]
    model = LinearWindowModel.from_sklearn(pc.vectorizer, pc.model)
    whole = model.probabilities(ww)
    alone = np.concatenate([model.probabilities([x]) for x in ww])
    assert np.array_equal(whole, alone)


def test_cached_weights_round_trip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CORPUSMIX_CACHE_DIR", str(tmp_path))
    first = load_packaged()
    files = list((tmp_path / "toxicity").glob("*.npz"))
    assert len(files) == 1
    second = load_packaged()  # from the file
    assert second.terms == first.terms and second.token_pattern == first.token_pattern
    for name in ("idf", "weights", "intercepts", "cal_a", "cal_b"):
        assert np.array_equal(getattr(first, name), getattr(second, name))
    files[0].write_bytes(b"damaged")
    assert np.array_equal(load_packaged().weights, first.weights)  # rebuilt, not read


def test_unsupported_pipelines_are_refused() -> None:
    from sklearn.feature_extraction.text import TfidfVectorizer

    vec = TfidfVectorizer(ngram_range=(1, 2)).fit(["aa bb cc", "bb cc dd"])
    with pytest.raises(UnsupportedModel):
        LinearWindowModel.from_sklearn(vec, pc.model)
    with pytest.raises(UnsupportedModel):
        LinearWindowModel.from_sklearn(pc.vectorizer, object())
    with pytest.raises(UnsupportedModel):
        LinearWindowModel.from_sklearn(TfidfVectorizer(token_pattern=r"(\w+)").fit(["aa bb"]), pc.model)


def test_windows_with_whitespace_inside_words_are_refused() -> None:
    model = LinearWindowModel.from_sklearn(pc.vectorizer, pc.model)
    with pytest.raises(ValueError, match="whitespace-free"):
        model.probabilities([["fuck\nyou"], ["x"]])


def test_scorer_columns_equal_the_sklearn_path() -> None:
    """The step's columns (max over windows, rounded) with the linear scorer and with sklearn."""
    texts = _demo_texts(40) + _random_texts(60, seed=2) + ["you stupid fucking idiot\nshut up", ""]
    cfg = ToxicityConfig()
    fast, slow = ToxicityScorer(cfg), ToxicityScorer(cfg)
    slow._model = (WindowFeatures(pc.vectorizer), pc.model)
    a = [Document(text=t, id=str(i), metadata={"domain": "news"}) for i, t in enumerate(texts)]
    b = [Document(text=t, id=str(i), metadata={"domain": "news"}) for i, t in enumerate(texts)]
    assert fast.filter_batch(a) == slow.filter_batch(b)
    assert isinstance(fast._model, LinearWindowModel)
    assert [d.metadata for d in a] == [d.metadata for d in b]
    assert any(d.metadata["toxicity"] > 0.95 for d in a)


def test_flat_windows_of_lowered_words_equal_sklearn() -> None:
    """``probabilities_flat`` on the lower-cased text's words (what the step passes) equals the
    pipeline on the original windows, final sigma and dotted capital I included."""
    from curate.steps.toxicity import window_sizes

    texts = _demo_texts(25) + _random_texts(200, seed=3) + ["ΟΔΟΣ ΣΟΦΟΣ. İSTANBUL FUCK\nΣ σ ς"]
    model = LinearWindowModel.from_sklearn(pc.vectorizer, pc.model)
    words: list[str] = []
    sizes: list[int] = []
    for t in texts:
        low = t.lower()
        words += low.split()
        sizes += window_sizes(map(len, map(str.split, low.splitlines())), 24)
    got = model.probabilities_flat(words, sizes, lowered=True)
    ww = [w for t in texts for w in window_words(t, 24)]
    want = pc.model.predict_proba(pc.vectorizer.transform([" ".join(w) for w in ww]))[:, 1]
    assert np.array_equal(got, want)
    with pytest.raises(ValueError, match="add up"):
        model.probabilities_flat(["a"], [2])
