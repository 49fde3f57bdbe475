"""Toxicity step: the larger vendored lexicon and obfuscated / inflected / compound spellings
(curate.steps.toxicity_words), ordinary text left alone, provenance hashes, bad input."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest
from datatrove.data import Document

from curate.steps.toxicity import ToxicityConfig, ToxicityScorer, toxicity_steps
from curate.steps.toxicity_words import EXTRA_DIR, load_extra

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def scorer() -> ToxicityScorer:
    return ToxicityScorer(ToxicityConfig(model="none"))


@pytest.mark.parametrize("text", [
    "you are a f*ck", "what a f#cking mess", "sh1t happens", "$h!t", "b!tch", "pu55y", "p0rn",
    "f u c k you", "such a f u c k.", "f.u.c.k this", "fuuuuck", "shiiiit", "whores", "fucknugget",
    "shiteater", "whoreface", "assf*cker", "sh*thead", "b*llsh*t", "what a dickhead.", "motherfucking idiot",
    "you assfuck", "that batshit plan",
])
def test_obfuscated_and_derived_forms_are_counted(scorer: ToxicityScorer, text: str) -> None:
    assert scorer.count_badwords(text, "en") >= 1


@pytest.mark.parametrize("text", [
    "I O U", "s h o w the help", "a b c d e f", "*word* and **bold** and _emph_", "v1.2.3 and 2.0.1-rc1",
    "0xdeadbeef 0xB00B1E5 sha 3f4a9c", "char* buf = a*b + c*d;", "cocktail party", "the dickens",
    "spices", "analysis", "buttonpress", "pussycat", "snigger", "sucklings", "e.g. i.e. U.S.A.",
    "x = s[1:3] # t_s", "l33t h4x0r", "1st 2nd 3rd 4th", "C# and F# and R", "a.k.a. Mr. T",
    "area = width*height", "count*total", "grid#column", "max*min*abs", "user_name_field", "100%done",
    "Dickson beat Roddick", "Penistone station", "pussyfooting around", "the Benedick scene",
])
def test_ordinary_text_is_not_counted(scorer: ToxicityScorer, text: str) -> None:
    assert scorer.count_badwords(text, "en") == 0


def test_switches_restore_the_exact_match() -> None:
    plain = ToxicityScorer(ToxicityConfig(model="none", extra_lists=False, match_obfuscated=False))
    assert plain.count_badwords("sh1t f*ck fuuuck", "en") == 0
    assert plain.count_badwords("shit", "en") == 1
    health = "Safe sex and sexual health education for teens"
    assert plain.count_badwords(health, "en") == 2  # LDNOOBW as C4 used it
    full = ToxicityScorer(ToxicityConfig(model="none"))
    assert full.count_badwords(health, "en") == 0  # the allow-list of innocent senses applies to every list
    assert full.count_badwords("shit", "en") == 1


def test_extra_lexicon_is_curated(scorer: ToxicityScorer) -> None:
    extra = load_extra("en")
    assert len(extra) >= 500
    assert all(re.fullmatch(r"[a-z]{3,}", w) for w in extra)
    # ordinary words of the vendored lists and words of the okayish allow-list stay out
    assert not {"drunk", "strip", "kill", "gay", "lesbian", "nazi", "heroin", "murder"} & extra
    assert scorer.count_badwords("The drunk lesbian couple watched a film about heroin.", "en") == 0


def test_provenance_hashes_match_the_vendored_files() -> None:
    prov = (EXTRA_DIR / "PROVENANCE.md").read_text(encoding="utf-8")
    rows = dict((f, h) for h, f in re.findall(r"`([0-9a-f]{64})`\s*\|\s*`([^`]+)`", prov))
    files = sorted(p.name for p in EXTRA_DIR.iterdir() if p.is_file() and p.name != "PROVENANCE.md")
    assert sorted(rows) == files
    for name, digest in rows.items():
        assert hashlib.sha256((EXTRA_DIR / name).read_bytes()).hexdigest() == digest, name


@pytest.mark.parametrize("text", [
    "", " ", "\ud800 lone \udfff surrogates", "\u0301\u0308\u0327", "f\u0301*ck", "x" * 5_000_000,
    "f u c k " * 100_000, "a*" * 1_000_000, "s$" * 1_000_000, "\x00\x01 sh1t \x7f",
])
def test_bad_input_never_crashes(text: str) -> None:
    scorer, filt = toxicity_steps(ToxicityConfig(model="none"))
    doc = Document(text=text, id="d", metadata={"lang": "en"})
    assert scorer.filter_batch([doc]) == [True]
    assert isinstance(doc.metadata["badwords"], int)
    filt.filter(doc)


def test_obfuscated_insult_is_dropped_by_the_ratio_rule() -> None:
    scorer, filt = toxicity_steps(ToxicityConfig(model="none"))
    doc = Document(text="Shut up, you stupid f*cking sh1thead.", id="d", metadata={"lang": "en"})
    scorer.filter_batch([doc])
    assert doc.metadata["badwords"] >= 2
    assert filt.filter(doc) != True  # noqa: E712


def test_the_larger_lexicon_loads_inside_a_zip(tmp_path) -> None:
    """Shipped as one zip (spark-submit --py-files), the vendored lists load as from a folder."""
    from tests.helpers.zipimport import run_from_zip

    out = run_from_zip(tmp_path, "import curate.steps.toxicity_words as t; "
                       "assert t.__file__.startswith(sys.argv[1]), t.__file__; print(len(t.load_extra('en')))")
    assert int(out.strip()) == len(load_extra("en")) > 500


def test_a_missing_lexicon_is_a_clear_error(tmp_path) -> None:
    from corpusmix.config import ConfigError

    with pytest.raises(ConfigError, match="extra_lists"):
        load_extra("en", tmp_path)


def test_english_vocab_equals_wordfreq_zipf_frequency_for_every_word() -> None:
    """The table lookup gives exactly what ``zipf_frequency`` gives, for all 185k words."""
    import wordfreq

    from curate.steps.toxicity_words import _english_vocab

    vocab = _english_vocab()
    assert len(vocab) > 150_000
    differ = [w for w, z in vocab.items() if z != wordfreq.zipf_frequency(w, "en")]
    assert differ == []


def test_spaced_words_are_finditer_of_the_spaced_pattern() -> None:
    """``spaced_words`` tries ``_SPACED`` only where a match can start: the same matches, in order,
    on random text over the characters the pattern reads and on real prose with spaced words."""
    import random

    from curate.steps.toxicity_words import _SPACED, spaced_words

    rng = random.Random(5)
    alphabet = list("abcdefiuxyz .,;:!?()\"'\n\t-é")
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 90))) for _ in range(20_000)]
    for _ in range(10_000):  # runs of single letters between separators, among words and punctuation
        parts = [rng.choice(["".join(rng.choice("abfiku") for _ in range(rng.randint(1, 5))), rng.choice(alphabet)])
                 for _ in range(rng.randint(1, 20))]
        texts.append("".join(p + rng.choice([" ", ".", " ", ""]) for p in parts))
    texts += ["such a f u c k", "what the f.u.c.k. (s h i t)", "a b c d e f g h i j k l m n o p q r",
              "is a b c", "x.y.z.w", "i a i a i", "(b i g) \"o k\" 'n o'", "e.g. this, i.e. that", ""]
    found = 0
    for text in texts:
        want = [m.span() for m in _SPACED.finditer(text)]
        assert [m.span() for m in spaced_words(text)] == want, text
        found += len(want)
    assert found > 300


def test_badword_counts_at_word_positions_are_finditer_counts() -> None:
    """``count_at_words`` tries the screened pattern only where a listed word occurs: the count of
    ``finditer`` on random text over listed words, their parts and word characters around them."""
    import random

    from curate.steps.toxicity_counts import badword_pattern, count_at_words

    rng = random.Random(9)
    words = ["ass", "asshole", "hell", "he'll", "s.o.b", "f*ck", "2 girls", "a$$", "中文", "b"]
    pieces = words + ["as", "sh", "ole", "x", "_", " ", "\n", "-", ".", "'", "é", "0", "hellhole", "shell"]
    total = 0
    for lang in ("en", "zh"):
        for _ in range(3000):
            text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 25)))
            subset = rng.sample(words, rng.randint(1, len(words)))
            pat = badword_pattern(subset, lang)
            want = sum(1 for _ in pat.finditer(text))
            assert count_at_words(pat, text, subset) == want, (text, subset, lang)
            total += want
    assert total > 1000


def test_english_root_compounds_count_where_written_in_lower_case() -> None:
    """An English word made of a root and a word (``dickhead``) counts where the text writes it in
    lower case; the same letters capitalised are read as a name (``Dickson``). The scorer's two
    paths (token strings and, with the compiled kernels, ids of the shared token table) agree."""
    scorer, _ = toxicity_steps(ToxicityConfig(model="none"))
    texts = ["Mr Dickson met a dickson fan.", "DICKHEAD and dickhead! and Dickhead", "Roddick, roddick."]
    want = [1, 1, 1]
    assert [scorer.count_badwords(t, "en") for t in texts] == want
    modelled, _ = toxicity_steps(ToxicityConfig())  # the packaged linear model: the shared-table path
    docs = [Document(text=t, id=str(i), metadata={"lang": "en"}) for i, t in enumerate(texts)]
    assert modelled.filter_batch(docs) == [True] * len(docs)
    assert [d.metadata["badwords"] for d in docs] == want
