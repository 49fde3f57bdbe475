"""The compiled fastText prediction (curate.ftpredict) against fastText's own predict: the same label
and the same probability, bit for bit, on the repository's real text in five languages, on random
text full of the tokenizer's edge cases, and inside the language-ID step."""

from __future__ import annotations

import pickle
import random
from pathlib import Path

import fasttext
import pyarrow.parquet as pq
import pytest
from datatrove.data import Document

from corpusmix.paths import DEMO
from curate import ftpredict, native
from curate.steps.langid import PACKAGED_MODEL, LangIdConfig, LanguageID

pytestmark = pytest.mark.skipif(native.compiled is None, reason="the compiled module is not built")


@pytest.fixture(scope="module")
def models():
    return fasttext.load_model(str(PACKAGED_MODEL)), ftpredict.load(PACKAGED_MODEL)


def reference(model, text: str) -> tuple[str, float] | None:
    labels, probs = model.predict(text.replace("\n", " "), k=1)
    if not len(labels):
        return None
    return labels[0].removeprefix("__label__"), float(probs[0])


def demo_texts() -> list[str]:
    out = []
    for f in sorted((DEMO / "en").glob("*.parquet")) + sorted((DEMO / "foreign").glob("*.parquet")):
        out += [t for t in pq.read_table(f, columns=["text"]).column("text").to_pylist() if isinstance(t, str)]
    return out


EDGE = ["", " ", "\n", "\n\n  \t", "a", "hello world", "</s>", "</s> after the end", "before </s> after",
        "x</s> y", "__label__en", "__label__de some words", "__label__notalabel words", "tab\tsep\vvert\fform\rret",
        "nul\x00inside\x00words", "\u00a0non-breaking\u2003spaces\u3000here", "e\u0301\u0301\u0301" * 50,
        "\u0301" * 200, "日本語のテキスト、句読点。", "emoji 😀🎉 mixed", "<>", "< >", "a" * 5000,
        "one\ntwo\r\nthree", "ünïcödé wörds", "\U0010ffff\U00010000", "!!! ??? ...", "0123456789 42"]


def random_texts(n: int, seed: int) -> list[str]:
    rnd = random.Random(seed)
    pieces = ["the", "and", "der", "und", "le", "de", "и", "в", "日本", "語", "</s>", "__label__", "<", ">",
              "é", "\u0301", "😀", "\x00", " ", "  ", "\n", "\t", "\r", "\v", "\f", ".", "-", "q", "zz", "\u00a0"]
    return ["".join(rnd.choice(pieces) for _ in range(rnd.randint(0, 80))) for _ in range(n)]


def test_loads_the_packaged_model(models):
    _, compiled = models
    assert compiled is not None and "en" in compiled.labels and len(compiled.labels) == 176


def test_same_bits_on_real_text_in_five_languages(models):
    ft, compiled = models
    texts = demo_texts()
    assert len(texts) > 300
    diff = [t[:60] for t in texts if reference(ft, t[:20000]) != compiled.predict(t[:20000])]
    assert diff == []
    langs = {compiled.predict(t)[0] for t in texts}
    assert {"en", "de", "fr", "ru", "zh"} <= langs


def test_same_bits_on_edge_cases_and_random_text(models):
    ft, compiled = models
    texts = EDGE + random_texts(3000, seed=7)
    diff = [repr(t[:60]) for t in texts if reference(ft, t) != compiled.predict(t)]
    assert diff == []


def test_the_token_cache_changes_nothing(models):
    ft, compiled = models
    texts = random_texts(500, seed=11)
    first = [compiled.predict(t) for t in texts]
    again = [compiled.predict(t) for t in reversed(texts)][::-1]
    assert first == again == [reference(ft, t) for t in texts]


def test_lone_surrogates_are_left_to_fasttext(models):
    _, compiled = models
    with pytest.raises(UnicodeEncodeError):
        compiled.predict("abc \ud800 def")
    step = LanguageID()
    with pytest.raises(TypeError):  # what fastText's binding does with them, as before
        step.predict("abc \ud800 def")


FIXTURES = Path(__file__).parent / "data" / "ftmodels"  # written by fastText 0.9.2: see its PROVENANCE.md


def test_other_model_kinds_are_refused(tmp_path):
    bad = tmp_path / "not_fasttext.bin"
    bad.write_bytes(b"\x00" * 64)
    assert ftpredict.load(bad) is None
    assert ftpredict.load(FIXTURES / "ova.ftz") is None  # one-vs-all: fastText's own predict


def _same(path, texts) -> None:
    ft, compiled = fasttext.load_model(str(path)), ftpredict.load(path)
    assert compiled is not None
    if compiled.softmax:
        k = len(compiled.labels)
        want = []
        for t in texts:
            labels, probs = ft.predict(t.replace("\n", " "), k=k)
            want.append({lab.removeprefix("__label__"): float(p) for lab, p in zip(labels, probs, strict=True)})
        assert [compiled.probabilities(t) for t in texts] == want
    else:
        assert [compiled.predict(t) for t in texts] == [reference(ft, t) for t in texts]


MODEL_TEXTS = EDGE + random_texts(400, seed=5) + ["alpha beta", "uno dos tres", "zwei drei fünfzig", "gammadelta"]


@pytest.mark.parametrize("name", ["hs.bin", "hs.ftz", "softmax.bin", "softmax.ftz"])
def test_same_bits_on_other_models(name):
    """Models of other shapes than lid.176 (32 dimensions; hierarchical softmax dense, and quantized
    with quantized norms and pruned n-grams; softmax over word bigrams, the quality classifier's
    kind, dense and quantized)."""
    _same(FIXTURES / name, MODEL_TEXTS)


def test_step_annotations_equal_with_and_without_the_kernel():
    fast = LanguageID(LangIdConfig(max_chars=300))
    slow = LanguageID(LangIdConfig(max_chars=300))
    slow._compiled, slow._compiled_tried = None, True  # fastText's own predict
    assert fast.compiled is not None
    for i, text in enumerate(demo_texts()[::3] + EDGE):
        a, b = Document(text=text, id=str(i)), Document(text=text, id=str(i))
        fast.annotate(a)
        slow.annotate(b)
        assert (a.metadata["lang"], a.metadata["lang_score"]) == (b.metadata["lang"], b.metadata["lang_score"])


def test_step_pickles_after_predicting():
    step = LanguageID()
    before = step.predict("Die Würde des Menschen ist unantastbar.")
    copy = pickle.loads(pickle.dumps(step))
    assert copy._compiled is None and not copy._compiled_tried
    assert copy.predict("Die Würde des Menschen ist unantastbar.") == before
