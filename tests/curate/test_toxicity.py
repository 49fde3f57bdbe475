"""Toxicity step: shipped word lists, the packaged model, the decision rules, and a check on text
built from another package's word list (better-profanity), not from the lists the step ships."""

from __future__ import annotations

import random
import re
from importlib import resources
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from datatrove.data import Document
from hypothesis import given, settings
from hypothesis import strategies as st

from corpusmix.config import ConfigError
from curate.steps.toxicity import (
    ToxicityConfig,
    ToxicityScorer,
    load_badwords,
    toxicity_steps,
    windows,
)

ROOT = Path(__file__).resolve().parents[2]


def _doc(text: str, domain: str = "news", lang: str | None = None) -> Document:
    meta = {"domain": domain}
    if lang:
        meta["lang"] = lang
    return Document(text=text, id="d", metadata=meta)


def _score(cfg: ToxicityConfig, docs: list[Document]) -> list[bool | tuple[bool, str]]:
    scorer, filt = toxicity_steps(cfg)
    scorer.filter_batch(docs)
    return [filt.filter(d) for d in docs]


def _real_sentences(domain: str) -> list[str]:
    rows = pq.read_table(ROOT / f"data/demo/en/{domain}.parquet", columns=["text"]).to_pylist()
    return [s for r in rows for s in re.split(r"(?<=[.!?])\s+", " ".join(r["text"].split()))
            if 6 <= len(s.split()) <= 40]


def test_shipped_lists_are_multilingual_with_provenance() -> None:
    lists = load_badwords()
    assert {"en", "de", "fr", "es", "ru", "zh", "ja"} <= set(lists)
    assert all(len(v) >= 20 for v in lists.values())
    prov = (ROOT / "curate/models/badwords/PROVENANCE.md").read_text()
    assert "CC-BY-4.0" in prov and "LDNOOBW" in prov


def test_windows_pack_lines_and_split_long_ones() -> None:
    assert windows("a b\nc d\ne", 3) == ["a b", "c d e"]
    assert windows(" ".join(map(str, range(7))), 3) == ["0 1 2", "3 4 5", "6"]
    assert windows("", 5) == [""]


def test_word_boundaries_languages_and_missing_lists() -> None:
    scorer = ToxicityScorer(ToxicityConfig(model="none"))
    assert scorer.count_badwords("The class passed the assessment.", "en") == 0  # no match inside words
    assert scorer.count_badwords("What an ASS. Shit!", "en") == 2
    de = load_badwords()["de"][0]
    assert scorer.count_badwords(f"Das ist {de} heute.", "de") == 1
    zh = load_badwords()["zh"][0]
    assert scorer.count_badwords(f"这是{zh}的例子", "zh") == 1  # no spaces: substring match
    assert scorer.count_badwords("anything", "xx") is None  # no list for that language


def test_model_scores_and_languages() -> None:
    docs = [_doc("Shut up, you stupid fucking idiot, nobody wants you here."),
            _doc("The committee approved the budget for the new library on Tuesday."),
            _doc("Shut up, you stupid fucking idiot.", lang="de")]
    res = _score(ToxicityConfig(), docs)
    assert docs[0].metadata["toxicity"] > 0.95 and res[0] == (False, "toxicity_above_0.95")
    assert docs[1].metadata["toxicity"] < 0.5 and res[1] is True
    assert docs[2].metadata["toxicity"] is None  # the English model is not applied to German


def test_rules_reasons_and_per_domain() -> None:
    text = "We walked to the harbour and the old ass carried our bags all the way. " * 3
    cfg = ToxicityConfig(model="none", max_badword_ratio=None, c4_badwords=True,
                         per_domain={"literature": {"c4_badwords": False}})
    assert _score(cfg, [_doc(text)]) == [(False, "c4_badwords")]
    assert _score(cfg, [_doc(text, domain="literature")]) == [True]
    assert _score(ToxicityConfig(model="none", max_badword_ratio=0.01), [_doc(text)]) == [
        (False, "badword_ratio_above_0.01")]
    with pytest.raises(ConfigError, match="per_domain"):
        ToxicityConfig(per_domain={"news": {"max_toxicty": 0.5}})
    with pytest.raises(ConfigError, match="model"):
        ToxicityConfig(model="perspective")


def test_real_text_is_rarely_flagged() -> None:
    """Held-out real text (the demo's techdocs and news): the default rules flag < 5 % of documents."""
    for domain in ("techdocs", "news"):
        rows = pq.read_table(ROOT / f"data/demo/en/{domain}.parquet", columns=["text"]).to_pylist()[:150]
        res = _score(ToxicityConfig(), [_doc(r["text"], domain) for r in rows])
        share = sum(r is not True for r in res) / len(res)
        assert share < 0.05, (domain, share)


def _other_list() -> tuple[list[str], list[str]]:
    """better-profanity's word list (MIT, a different source): words shared with ours, and novel ones."""
    words = [w.strip().lower() for w in (resources.files("better_profanity") / "profanity_wordlist.txt")
             .read_text().splitlines() if re.fullmatch(r"[a-z]+", w.strip().lower())]
    ours = set(load_badwords()["en"])
    return [w for w in words if w in ours], [w for w in words if w not in ours]


def test_independent_list_inserted_in_real_sentences() -> None:
    """Documents built from another package's list (never from ours): words both lists share are
    found (recall >= 0.95); words only the other list has (mostly spelling variants such as
    'assfukka', 'booobs') are NOT found by the rules (measured recall 0 on 100 documents, see
    docs/curation-safety.md), but they do raise the model's mean score a little above the clean text's."""
    shared, novel = _other_list()
    sents = _real_sentences("news")
    rng = random.Random(0)

    def build(words: list[str]) -> tuple[list[Document], list[Document]]:
        dirty, clean = [], []
        for _ in range(60):
            ss = [rng.choice(sents) for _ in range(10)]
            clean.append(_doc(" ".join(ss)))
            for i in rng.sample(range(10), 3):
                t = ss[i].split()
                t.insert(rng.randint(0, len(t)), rng.choice(words))
                ss[i] = " ".join(t)
            dirty.append(_doc(" ".join(ss)))
        return dirty, clean

    dirty, clean = build(shared)
    res = _score(ToxicityConfig(), dirty + clean)
    assert sum(r is not True for r in res[:60]) / 60 >= 0.95
    assert sum(r is not True for r in res[60:]) / 60 <= 0.05
    dirty, clean = build(novel)
    _score(ToxicityConfig(), dirty + clean)
    mean = [sum(d.metadata["toxicity"] for d in ds) / len(ds) for ds in (dirty, clean)]
    assert mean[0] > mean[1] + 0.02, mean  # measured: 0.156 vs 0.121 (a weak signal, reported as such)


def test_badword_counter_equals_the_whole_alternation() -> None:
    """The screened count is the whole pattern's count, on demo text with list entries planted
    (plain, with suffixes and punctuation, multi-word entries, the emoji entry)."""
    from curate.steps.toxicity import BadwordCounter, badword_pattern, load_badwords

    demo = Path(__file__).resolve().parents[2] / "data" / "demo"
    texts = [t for f in sorted((demo / "en").glob("*.parquet")) + sorted((demo / "foreign").glob("*.parquet"))
             for t in pq.read_table(f, columns=["text"]).column("text").to_pylist()[::9]]
    lists = load_badwords()
    rng = random.Random(0)
    for lang in ("en", "de", "ru", "ja"):
        words = lists[lang]
        planted = []
        for k in range(40):
            ws = rng.choice(texts).split() or ["x"]
            for _ in range(4):
                ws.insert(rng.randrange(len(ws) + 1), rng.choice(words) + rng.choice(["", ".", "s", "-x", "'", "_"]))
            planted.append((" " if k % 2 else "\n").join(ws))
        pat, counter = badword_pattern(words, lang), BadwordCounter(words, lang)
        got = [counter.count(t.lower()) for t in texts + planted]
        want = [sum(1 for _ in pat.finditer(t.lower())) for t in texts + planted]
        assert got == want, lang
        assert sum(want[len(texts):]) >= 40  # the planted entries are found


def test_window_features_equal_the_vectorizer() -> None:
    """The cached per-word features give the vectorizer's own matrix and the model's probabilities,
    bit for bit, on demo windows (prose, code, foreign scripts, empty windows)."""
    import numpy as np
    from profanity_check import profanity_check as pc

    from curate.steps.toxicity import WindowFeatures, window_words, windows

    demo = Path(__file__).resolve().parents[2] / "data" / "demo"
    texts = [t for f in sorted((demo / "en").glob("*.parquet")) + sorted((demo / "foreign").glob("*.parquet"))
             for t in pq.read_table(f, columns=["text"]).column("text").to_pylist()[::25]]
    texts += ["", "   \n\n", "FUCK you ΟΔΟΣ ΣΟΦΟΣ İstanbul don't self.name co-operate", "a\u2028b\x1cc"]
    ww = [w for t in texts for w in window_words(t, 24)]
    assert [" ".join(w) for w in ww] == [w for t in texts for w in windows(t, 24)]
    feats = WindowFeatures(pc.vectorizer)
    assert feats.exact
    got, want = feats.transform(ww), pc.vectorizer.transform([" ".join(w) for w in ww])
    assert got.shape == want.shape and (got != want).nnz == 0
    assert np.array_equal(pc.model.predict_proba(got), pc.model.predict_proba(want))


_CHARS = "aAbΣσςİıxyz01 .,*!-_'\"\n\r\t\x0b\x0c\x1c\x1f\x85\u2028\u00a0\u3000fuckshit"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=_CHARS, max_size=120), st.integers(1, 6))
def test_window_sizes_and_lowered_words_equal_their_definitions(text: str, size: int) -> None:
    """The step builds windows from line word counts and the lower-cased text's words: the same
    windows as ``window_words``, the same words as lower-casing each word of the text."""
    from curate.steps.toxicity import window_sizes, window_words

    low = text.lower()
    assert low.split() == [w.lower() for w in text.split()]
    ww = window_words(text, size)
    assert window_sizes(map(len, map(str.split, low.splitlines())), size) == list(map(len, ww))
    assert [w for win in ww for w in win] == text.split()


def test_token_codes_equal_the_two_counters() -> None:
    """The scorer's one lookup per distinct token gives the exact list match plus the obfuscated
    count, each computed on its own, on demo text with list words, obfuscations and punctuation."""
    from curate.steps.toxicity import BadwordCounter
    from curate.steps.toxicity_words import ROOT_SOURCES, ObfuscatedWords, load_okayish, source_counts

    demo = ROOT / "data" / "demo"
    texts = [t for f in sorted((demo / "en").glob("*.parquet"))
             for t in pq.read_table(f, columns=["text"]).column("text").to_pylist()[::7]]
    scorer = ToxicityScorer(ToxicityConfig(model="none"))
    words = scorer.lists["en"]
    plantable = [w for w in words if len(w) >= 3]
    rng = random.Random(1)
    forms = ["{}", "{}.", "({})", "{}s", "{}ing", "{}!!"]
    for k in range(120):
        ws = rng.choice(texts).split() or ["x"]
        for _ in range(3):
            w = rng.choice(plantable)
            w = rng.choice([w, w.replace("i", "1"), w[0] + "*" + w[2:], " ".join(w), w[:2] + w[1] * 4 + w[2:]])
            ws.insert(rng.randrange(len(ws) + 1), rng.choice(forms).format(w))
        texts.append((" " if k % 2 else "\n").join(ws))
    counter = BadwordCounter(words, "en")
    okay = load_okayish("en")
    ob = ObfuscatedWords(words, [w for w, n in source_counts("en").items() if n >= ROOT_SOURCES and w not in okay])
    got = [scorer.count_badwords(t, "en") for t in texts]
    want = [counter.count(t.lower()) + ob.count(t.lower(), t) for t in texts]
    assert got == want
    assert sum(want[-120:]) >= 200  # the planted forms are found
    assert [scorer.count_badwords(t, "en") for t in texts] == want  # again, from the filled cache
