"""The compiled kernels (``curate._native``) give exactly what their Python definitions give.

Each kernel is compared with the reference it replaces (``curate.native``'s ``ref_*`` functions,
or the Python branch of ``curate.junkstats``/``curate.textstats`` run with ``native.compiled``
set to None) on random text over an alphabet of the characters the definitions treat specially
(Unicode spaces and digits, separators, apostrophes, letters whose lower case is longer, combining
marks), on random integer arrays, and ``doc_stats`` as a whole on every document of the demo.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from curate import junkstats as js
from curate import native
from curate import textstats as ts

DEMO = Path(__file__).resolve().parents[2] / "data" / "demo"
SPECIAL = list("aBzZAivx_'’\".,:;!?)(-=#/\\[]{}$%@<>0123") + [
    " ", "\n", "\t", "\r", "\x0b", "\x1c", "\u00a0", "\u2003", "\u3000", "\u2028",  # spaces
    "\u0663", "\u00b2", "\u2155", "\uff11",  # Arabic-Indic 3 (decimal), superscript 2, 1/5, fullwidth 1
    "·", "|", "•", "»", "›", "…", "”", "。", "！", "？",
    "é", "İ", "ß", "Σ", "\u0301", "ﬁ", "Ǆ", "я", "中", "\U0001d400", "\ufffd", "Ã", "©",
]
TEXT = st.text(alphabet=st.one_of(st.sampled_from(SPECIAL), st.characters()), max_size=200)
WORDY = st.lists(st.sampled_from(["Home", "About us", "the", "of", "and", "2.1.", "iv.", "A.", "x()", "Foo.bar()",
                                  "12:30:45", "2024-01-02", "1700000000.5", "Setting", "up", "-", "*", "42"]),
                 max_size=12).map(" ".join)
# doc_stats encodes the text: the readers leave no lone surrogate in a document (tests/reliability)
LINE = st.one_of(st.text(alphabet=st.one_of(st.sampled_from(SPECIAL), st.characters(exclude_categories=["Cs"])),
                         max_size=200), WORDY)


@contextmanager
def reference() -> Iterator[None]:
    """Run the Python definitions (as with CORPUSMIX_NATIVE=0)."""
    old = native.compiled
    native.compiled = None
    try:
        yield
    finally:
        native.compiled = old


def both(fn, *args):
    """(compiled result, reference result) of ``fn(*args)``."""
    fast = fn(*args)
    with reference():
        slow = fn(*args)
    return fast, slow


def test_the_extension_is_built_and_used() -> None:
    """The install builds curate._native; without it every statistic runs the slower reference."""
    from curate import _native  # noqa: F401

    assert native.compiled is not None, "CORPUSMIX_NATIVE=0 is set, or curate._native failed to import"


@settings(max_examples=300, deadline=None)
@given(TEXT)
def test_word_ids_are_the_regex_matches(text: str) -> None:
    words = re.findall(r"[^\W\d_]+(?:'[^\W\d_]+)?", text.lower())
    index = {w: i for i, w in enumerate(dict.fromkeys(words[::2]))}
    assert native.word_ids(text.lower(), index, -7).tolist() == [index.get(w, -7) for w in words]
    assert native.word_ids(text, index, 3).tolist() == native.ref_word_ids(text, index, 3).tolist()
    # the same dict as a str_table, read in place of the dict
    table = native.str_table(index)
    for t in (text, text.lower()):
        assert native.word_ids(t, index, 3, table).tolist() == native.ref_word_ids(t, index, 3).tolist()


def test_str_table_finds_every_key_of_any_kind_and_no_other() -> None:
    """Keys of every string kind (Latin-1, BMP, astral), the empty key, many keys in probe chains."""
    keys = ["the", "of", "ß", "é", "中文", "\U0001d400x", "ab", "ba", "a", "b", ""] + [f"w{i}" for i in range(3000)]
    index = {k: i * 7 - 3 for i, k in enumerate(keys)}
    table = native.str_table(index)
    text = " ".join(keys[:-1] + ["abc", "th", "thee", "中", "w3000", "W1"])
    assert native.word_ids(text, index, -1, table).tolist() == native.ref_word_ids(text, index, -1).tolist()
    assert native.str_table({}) and native.word_ids("a b", {}, 5, native.str_table({})).tolist() == [5, 5]


@pytest.mark.parametrize("bad", [b"", b"\x00" * 16, b"\x08" + b"\x00" * 15, bytes(17 + 8 * 24)])
def test_word_ids_refuse_a_buffer_that_is_not_a_table(bad: bytes) -> None:
    with pytest.raises(ValueError, match="not a table made by str_table"):
        native.compiled.word_ids("some words", bad, 0)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", "ab", "é", "x y", ""]), max_size=40))
def test_token_ids(tokens: list[str]) -> None:
    index = {"a": 0, "ab": 5, "é": 2}
    ids, missing = native.token_ids(tokens, index)
    ref, ref_missing = native.ref_token_ids(tokens, index)
    assert ids.tolist() == ref.tolist() and missing == ref_missing


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-5, 40), max_size=300), st.booleans())
def test_unique_counts_and_repeated_ngrams(values: list[int], big: bool) -> None:
    arr = np.array(values, np.int64) + (np.int64(1 << 40) if big else 0)  # big: the sorting path
    u, c = native.unique_counts(arr)
    ru, rc = np.unique(arr, return_counts=True)
    assert u.tolist() == ru.tolist() and c.tolist() == rc.tolist()
    if values and min(values) >= 0:
        for n in (1, 2, 5):
            assert native.rep_ngram_cover(arr, n) == native.ref_rep_ngram_cover(arr, n)


@settings(max_examples=300, deadline=None)
@given(st.lists(LINE, max_size=30))
def test_line_kernels_equal_their_definitions(lines: list[str]) -> None:
    stop = js.stopwords("en")
    lines = [ln for ln in lines if ln.strip()]
    fast, slow = both(js.label_share, lines, stop)
    assert fast == slow
    for fn in (js.line_start_variety, js.stamped_share):
        fast, slow = both(fn, lines)
        assert fast == slow, fn.__name__
    text = "\n".join(lines)
    fast, slow = both(ts.doc_stats, text, "en", None, frozenset(["home", "about us"]))
    assert fast == slow


@settings(max_examples=300, deadline=None)
@given(TEXT)
def test_text_kernels_equal_their_definitions(text: str) -> None:
    assert native.compiled.char_counts(text) == list(Counter(text).values())
    assert native.compiled.nonascii_tokens(text) == js._NON_ASCII_TOKEN.findall(text)
    lines, punct = native.compiled.text_lines(text)
    ref = [ln for ln in text.split("\n") if ln.strip()]
    assert lines == ref and punct == sum(ln.rstrip().endswith(js.TERMINAL) for ln in ref)
    frequent = frozenset(ts.segments(text)[::2])
    fast, slow = both(ts.boilerplate_share, text, frequent)
    assert fast == slow
    for fn in (ts.char_entropy, js.mixed_tokens):
        fast, slow = both(fn, text)
        assert fast == slow, fn.__name__


@settings(max_examples=300, deadline=None)
@given(TEXT)
def test_quality_model_inputs_equal_their_definitions(text: str) -> None:
    from curate.steps import quality

    for fn in (quality.ft_text, quality.lm_lines):
        fast, slow = both(fn, text)
        assert fast == slow, fn.__name__
    # perplexity counts a line's tokens by its spaces: single spaces between tokens, none at the ends
    for line in quality.lm_lines(text):
        assert line.count(" ") + 1 == len(line.split()), line


@settings(max_examples=300, deadline=None)
@given(TEXT, st.integers(1, 6))
def test_toxicity_window_sizes(text: str, size: int) -> None:
    from curate.steps.toxicity import window_sizes

    assert native.compiled.window_sizes(text, size) == window_sizes(map(len, map(str.split, text.splitlines())), size)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["pa", "cket", "(pa", "cket,", "Pa", "overri", "des", "a", "of", "the", "é", "ré",
                                 "sumé", "x1", "", "..", "ba", "nana", "DES", "ǅab"]), max_size=12), st.data())
def test_split_words_kernel(seq: list[str], data) -> None:
    from curate.ocrstats import _EDGE, split_words

    words = frozenset(["packet", "override", "overrides", "résumé", "banana", "nanaba", "pacolet"])
    anchors = sorted(set(data.draw(st.lists(st.integers(0, max(0, len(seq) - 1)), max_size=6)))) if seq else []
    assert native.compiled.split_words(seq, anchors, words, _EDGE) == split_words(seq, anchors, words)
    # the sequence given as ids into a list of distinct tokens (the token table's form)
    distinct = list(dict.fromkeys(seq))
    ids = np.array([distinct.index(t) for t in seq], np.int64)
    assert native.compiled.split_words(distinct, anchors, words, _EDGE, ids) == split_words(seq, anchors, words)


@settings(max_examples=300, deadline=None)
@given(st.one_of(TEXT, st.text(max_size=300)), st.integers(0, 3))
def test_word_hashes_are_the_reference_hashes(text: str, warm: int) -> None:
    """Decontamination's word hashes: the compiled pass over \\w+ and the cache gives the reference's
    array, whether a word is cached or not."""
    from curate.steps import ngram_index as ngi

    fast, slow = ngi.WordHasher(), ngi.WordHasher()
    for w in re.findall(r"\w+", text.lower())[::max(warm, 1)] if warm else []:
        fast.word(w)  # some words cached before, the rest hashed on first sight
    got = fast.array(text)
    with reference():
        want = slow.array(text)
    assert got.dtype == want.dtype == np.uint64
    assert got.tolist() == want.tolist() == slow.words(text)
    assert fast.array(text).tolist() == want.tolist()  # again, from the cache alone


def test_word_hashes_keep_the_cache_bound() -> None:
    from curate.steps import ngram_index as ngi

    h = ngi.WordHasher(max_cache=5)
    text = " ".join(f"w{i}" for i in range(50)) + " w1 w2"
    assert h.array(text).tolist() == ngi.WordHasher().words(text)
    assert h.ccount == 5 and len(h.cache) == 0  # the compiled path's table, bounded; the dict unused
    assert h.array(text + " w49 w0").tolist() == ngi.WordHasher().words(text + " w49 w0")
    with reference():
        assert h.array(text).tolist() == ngi.WordHasher().words(text)
    assert len(h.cache) == 5


def test_decontamination_on_the_demo_equals_the_reference(tmp_path) -> None:
    """Every demo document gets the same decision, benchmark names and n-gram count, the benchmark
    items themselves planted as contaminated documents."""
    import pyarrow as pa
    from datatrove.data import Document

    from curate.steps.decontam import DecontamConfig, Decontaminator

    texts = _demo_texts()
    items = [" ".join(t.split()[5:40]) for t in texts[::97] if len(t.split()) > 45]
    pq.write_table(pa.table({"question": items}), tmp_path / "bench.parquet")
    cfg = DecontamConfig(eval_sets=[str(tmp_path / "bench.parquet")], ngram=13, index_dir=str(tmp_path / "idx"))

    def run() -> list[tuple]:
        step = Decontaminator(cfg)
        out = []
        for i, t in enumerate(texts):
            d = Document(text=t, id=str(i))
            out.append((step.filter(d), d.metadata["contam_benchmarks"], d.metadata["contam_ngrams"]))
        return out

    fast = run()
    with reference():
        slow = run()
    assert fast == slow
    assert sum(1 for r, _, _ in slow if r is not True) >= len(items) // 2  # the planted ones are found


def test_terminal_characters_agree() -> None:
    assert native.TERMINAL == js.TERMINAL


def test_bad_arguments_are_clear_errors() -> None:
    with pytest.raises(TypeError, match="8-byte integers"):
        native.compiled.unique_counts(np.zeros(3, np.int32))
    with pytest.raises(TypeError, match="lines must be str"):
        native.compiled.label_counts(["Home", 3], frozenset(), 10)
    with pytest.raises(ValueError, match="n must be"):
        native.compiled.rep_ngram_cover(np.zeros(3, np.int64), 0)


def _demo_texts() -> list[str]:
    texts = []
    for f in sorted(DEMO.rglob("*.parquet")):
        table = pq.read_table(f)
        if "text" in table.column_names:
            texts += [t for t in table.column("text").to_pylist() if isinstance(t, str)]
    return texts


def test_doc_stats_on_the_demo_equal_the_reference() -> None:
    """Every statistic of every demo document (all languages and domains, the planted junk too)."""
    texts = _demo_texts()
    assert len(texts) > 5000
    model = ts.WordOrderModel.fit(texts[::7], k=300)
    frequent = frozenset(s for t in texts[::11] for s in ts.segments(t)[:3])
    for lang in ("en", "de"):
        fast = [ts.doc_stats(t, lang, model, frequent) for t in texts]
        with reference():
            slow = [ts.doc_stats(t, lang, model, frequent) for t in texts]
        diff = [i for i, (a, b) in enumerate(zip(fast, slow, strict=True)) if a != b]
        assert not diff, f"{lang}: {len(diff)} documents differ, first {texts[diff[0]][:200]!r}"


def test_quality_model_inputs_on_the_demo_equal_the_reference() -> None:
    from curate.steps import quality

    texts = _demo_texts()
    for fn in (quality.ft_text, quality.lm_lines):
        fast = [fn(t) for t in texts]
        with reference():
            slow = [fn(t) for t in texts]
        assert fast == slow, fn.__name__


def test_toxicity_scores_on_the_demo_equal_the_reference(monkeypatch) -> None:
    """The scorer's shared-token-table path (word-list codes and model codes kept per token id) gives
    the reference's counts and probabilities, also when the table is cleared between documents."""
    from datatrove.data import Document

    from curate.steps.toxicity import ToxicityConfig, ToxicityScorer

    texts = _demo_texts()[::3]

    def scores() -> list[tuple]:
        scorer = ToxicityScorer(ToxicityConfig())
        docs = [Document(text=t, id=str(i), metadata={"lang": "de" if i % 7 == 0 else "en"})
                for i, t in enumerate(texts)]
        for k in range(0, len(docs), 64):
            assert scorer.filter_batch(docs[k:k + 64]) == [True] * len(docs[k:k + 64])
        return [(d.metadata["badwords"], d.metadata["toxicity"]) for d in docs]

    fast = scores()
    with reference():
        slow = scores()
    assert fast == slow
    assert sum(1 for b, _ in slow if b) > 10 and sum(1 for _, t in slow if t and t > 0.5) > 5  # not all zero
    monkeypatch.setattr(ts._TABLE, "max_tokens", 3000)  # the token table cleared every few documents
    assert scores() == slow


@pytest.mark.parametrize("text", [
    "\u0301\u0308\u0327" * 2000,  # only combining marks
    "!?.,;:-()[]{}" * 500,  # only punctuation
    "a\x00b\x00\x00 c\x00d\n" * 300,  # NUL bytes
    ("word " * 200_000).strip(),  # one line of 1 MB
    "\n\n \t\u2028\u00a0\n",  # only whitespace of several kinds
    "",
])
def test_bad_input_gives_the_reference_statistics(text: str) -> None:
    from curate.steps import quality

    for fn, args in ((ts.doc_stats, (text, "en", None, frozenset(["x"]))), (quality.ft_text, (text,)),
                     (quality.lm_lines, (text,))):
        fast, slow = both(fn, *args)
        assert fast == slow, fn.__name__


def test_token_lows_are_the_lower_cased_tokens() -> None:
    """``token_lows`` (remembered from ``doc_stats`` for the same text object, or computed) names the
    tokens of ``text.lower().split()``, also after the token table was cleared."""
    texts = _demo_texts()[:400] + ["ΣΑΣ ΑΣ. İstanbul ǅemal ﬁne", "x\u00a0y\u2003z"]
    for k, t in enumerate(texts):
        ts.doc_stats(t, "en")
        if k % 50 == 0:
            ts._TABLE.clear()
        for text in (t, "".join(list(t))):  # the remembered object, and an equal new one
            lows, words, _ = ts.token_lows(text)
            assert [words[i] for i in lows.tolist()] == t.lower().split()


def test_a_full_token_table_keeps_its_first_ids_and_the_statistics(monkeypatch: pytest.MonkeyPatch) -> None:
    """A full token table forgets the ids past half of it and keeps the first ones: the statistics
    are those of a fresh table, and the lower-cased tokens are still named right."""
    texts = _demo_texts()[:300]
    fresh = []
    for t in texts:
        ts._TABLE.clear()
        fresh.append(ts.doc_stats(t, "en"))
    ts._TABLE.clear()
    monkeypatch.setattr(ts._TABLE, "max_tokens", 4000)
    generation = ts._TABLE.generation
    for t, want in zip(texts, fresh, strict=True):
        assert ts.doc_stats(t, "en") == want
        lows, words, _ = ts.token_lows("".join(list(t)))
        assert [words[i] for i in lows.tolist()] == t.lower().split()
        assert len(ts._TABLE.tokens) <= 4000 or len(t.split()) > 2000
    assert ts._TABLE.generation > generation + 3  # it did fill, more than once
    # what the kept ids name is what they named before
    table = ts._TABLE
    got, missing = (native.token_ids(table.tokens, table.ctable, table.carena) if table.compiled
                    else native.token_ids(table.tokens, table.index))
    assert missing == 0 and got.tolist() == list(range(len(table.tokens)))
    assert all(table.low_words[table.low[i]] == w.lower() for i, w in enumerate(table.tokens))
    assert all(table.core_index[table.low_words[j].strip(ts._EDGE_PUNCT)] == table.low_core[j]
               for j in range(len(table.low_words)))


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.one_of(st.sampled_from(SPECIAL), st.characters()), max_size=200))
def test_utf8_len_is_the_length_of_the_encoding(text: str) -> None:
    """Every kind of string, lone surrogates included (counted as ``surrogatepass`` writes them)."""
    want = len(text.encode("utf-8", "surrogatepass"))
    assert native.compiled.utf8_len(text) == want
    assert native.utf8_len(text) == want
    with reference():
        assert native.utf8_len(text) == want


@pytest.mark.parametrize("shape", ["sorted", "reversed", "equal", "organ_pipe", "two_values", "random_wide",
                                   "sawtooth", "random_small"])
@pytest.mark.parametrize("n", [0, 1, 23, 24, 25, 1000, 100_000])
def test_unique_counts_on_orders_that_trouble_a_quicksort(shape: str, n: int) -> None:
    """The sort under unique_counts: inputs that make a naive quicksort quadratic or deep, on both
    paths (values past the scratch array's range are sorted whole)."""
    rng = np.random.default_rng(n)
    base = {"sorted": np.arange(n), "reversed": np.arange(n)[::-1], "equal": np.full(n, 7),
            "organ_pipe": np.concatenate([np.arange(n // 2), np.arange(n - n // 2)[::-1]]),
            "two_values": np.arange(n) % 2, "random_wide": rng.integers(-2**62, 2**62, n),
            "sawtooth": np.arange(n) % 97, "random_small": rng.integers(0, 50, n)}[shape]
    for arr in (np.ascontiguousarray(base, np.int64), np.ascontiguousarray(base, np.int64) + (1 << 40)):
        u, c = native.compiled.unique_counts(arr)
        want_u, want_c = np.unique(arr, return_counts=True)
        assert np.frombuffer(u, np.int64).tolist() == want_u.tolist()
        assert np.frombuffer(c, np.int64).tolist() == want_c.tolist()


def test_token_table_answers_as_a_dict_through_growth() -> None:
    """tok_add/token_ids against a dict: tokens of every string kind, added in batches (the table
    grows and rehashes many times), looked up with absent ones among them."""
    rng = np.random.default_rng(3)
    alphabet = ["a", "b", "é", "ß", "中", "\U0001d400", "-", "'", "\u0301", "0", "x" * 30]
    pool = list(dict.fromkeys("".join(rng.choice(alphabet, size=rng.integers(1, 6))) for _ in range(40_000)))
    pool += ["", "\ud800", "a\x00b"]  # empty, a lone surrogate, a NUL
    table, arena, index = bytearray(), bytearray(), {}
    c = native.compiled
    for lo in range(0, len(pool), 3000):
        new = pool[lo:lo + 3000]
        c.tok_add(table, arena, new, len(index))
        index.update((t, len(index)) for t in new)
        probe = list(rng.choice(pool, size=2000)) + ["absent", "ab\u0301c", "中中中中中中"]
        got, missing = native.token_ids(probe, table, arena)
        want, want_missing = native.ref_token_ids(probe, index)
        assert got.tolist() == want.tolist() and missing == want_missing
    with pytest.raises(ValueError, match="in the table already"):
        c.tok_add(table, arena, [pool[5]], len(index))
    with pytest.raises(ValueError, match="not a token table"):
        c.token_ids(["a"], bytearray(b"\x00" * 40), bytearray())
    with pytest.raises(TypeError):
        c.token_ids(["a"], table)  # a table without its arena
    assert c.token_ids(["a", "b"], bytearray(), bytearray())[1] == 2  # an empty table holds nothing


@pytest.mark.parametrize("n", [7, 8, 9, 2039, 2040, 2041, 2048, 4080, 4095, 100_003])
def test_utf8_len_of_long_latin1_text(n: int) -> None:
    """The 8-characters-at-a-time count of Latin-1 text, past its lanes' refill points."""
    for text in ("é" * n, "aé" * n, "\x80\xff" + "a" * n + "é"):
        assert native.compiled.utf8_len(text) == len(text.encode("utf-8"))


TOKEN = st.text(alphabet=st.one_of(st.sampled_from(SPECIAL), st.characters()), min_size=1, max_size=12).filter(
    lambda t: t.split() == [t])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(TOKEN, max_size=30), max_size=6))
def test_token_table_properties_equal_the_reference(batches: list[list[str]]) -> None:
    """``TokenTable`` filled by the compiled kernels (``tok_extend``, ``dict_tokens``) holds what its
    Python definition holds: ids, lower-cased and stripped forms, every per-token property, and the
    dictionary flags, batch after batch."""
    from curate.tokentable import TokenTable

    words, short = ts.dictionary("en")
    fast = TokenTable()
    with reference():
        slow = TokenTable()
    for batch in batches:
        got = fast.ids(batch)
        with reference():
            want = slow.ids(batch)
        assert got.tolist() == want.tolist()
        n, m = len(slow.tokens), len(slow.low_words)
        assert fast.tokens == slow.tokens and fast.low_words == slow.low_words
        assert fast.low_index == slow.low_index and fast.core_index == slow.core_index
        for name in ("size", "alpha", "plain", "low"):
            assert getattr(fast, name)[:n].tolist() == getattr(slow, name)[:n].tolist(), name
        assert fast.low_len[:m].tolist() == slow.low_len[:m].tolist()
        assert fast.low_core[:m].tolist() == slow.low_core[:m].tolist()
        flags = fast.dict_flags("en", got, (words, short))
        with reference():
            want_flags = slow.dict_flags("en", want, (words, short))
        assert flags.tolist() == want_flags.tolist()


def test_character_classes_on_every_code_point() -> None:
    """The kernels' character classes (letters of ``[^\\W\\d_]``, ``str.isalpha``, and ``str.islower``
    with its upper- and title-case exclusions) answer as Python does for every code point."""
    from curate.tokentable import TokenTable, _plain

    chars = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    letters = re.compile(r"[^\W\d_]")
    text = " ".join(chars)
    index = {c: i for i, c in enumerate(chars)}
    ids = native.word_ids(text, index, -1).tolist()  # one id per letter run: here one letter
    assert ids == [index[c] for c in chars if letters.fullmatch(c)]
    table = TokenTable()
    single = [c for c in chars if c.split() == [c]]
    got = table.ids(single)
    assert table.alpha[got].tolist() == [int(c.isalpha()) for c in single]
    assert 0 < sum(table.alpha[got].tolist()) < len(single)
    tokens = [f"ab{c}" for c in single]  # a lower-case word of 3 letters unless c is not one
    got = table.ids(tokens)
    assert table.plain[got].tolist() == [int(_plain(t)) for t in tokens]


@settings(max_examples=200, deadline=None)
@given(st.lists(TEXT, max_size=5))
def test_text_token_ids_are_the_ids_of_the_split_text(texts: list[str]) -> None:
    """``TokenTable.text_ids(text)`` (tokens read from the text by the kernel) gives the ids, new
    tokens and table of ``TokenTable.ids(text.split())``, text after text."""
    from curate.tokentable import TokenTable

    fast, slow = TokenTable(), TokenTable()
    for text in texts:
        assert fast.text_ids(text).tolist() == slow.ids(text.split()).tolist()
        assert fast.tokens == slow.tokens


def test_text_token_ids_refuse_a_bad_table() -> None:
    with pytest.raises(ValueError, match="not a token table"):
        native.compiled.text_token_ids("a b", bytearray(b"\x00" * 40), bytearray())
    got, missing = native.compiled.text_token_ids("  a\u3000b\x85 ", bytearray(), bytearray())
    assert np.frombuffer(got, np.int64).tolist() == [-1, -1] and missing == [(0, "a"), (1, "b")]


# the readers leave no lone surrogate in a document (tests/reliability)
DEDUP_TEXT = st.one_of(st.none(), st.text(alphabet=st.one_of(st.sampled_from(SPECIAL), st.characters(
    exclude_categories=["Cs"])), max_size=200), st.lists(st.sampled_from(["a", "bb", "é", "x" * 255, "y" * 257, "z" * 600,
                                                                  "中文", "\x00", "w" * 8, "v" * 9]),
                                                 max_size=30).map(" ".join))


@settings(max_examples=150, deadline=None)
@given(st.lists(DEDUP_TEXT, max_size=8), st.sampled_from([1, 2, 5]))
def test_dedup_hashing_equals_the_numpy_definition(texts: list[str | None], ngram: int) -> None:
    """``hash_batch`` with the compiled word hashes and MinHash (``dedup_word_hashes``, ``minhash``)
    gives the numpy definition's exact hashes, shingle counts, signatures and band keys, for words
    of every length around the 8-byte chunks and the long-word limit, empty and missing texts."""
    from curate.dedup.minhash import hash_batch

    kw = {"ngram": ngram, "num_perm": 16, "seed": 7, "bands": 4, "rows": 4}
    fast = hash_batch(texts, **kw)
    with reference():
        slow = hash_batch(texts, **kw)
    assert fast.keys() == slow.keys()
    for k in fast:
        assert fast[k].dtype == slow[k].dtype and fast[k].shape == slow[k].shape, k
        assert (fast[k] == slow[k]).all(), k


def test_minhash_refuses_offsets_outside_the_hashes() -> None:
    wh, a = np.zeros(3, np.uint64), np.ones(4, np.uint64)
    with pytest.raises(ValueError, match="offsets outside"):
        native.compiled.minhash(wh, np.array([0, 5], np.int64), 2, a, a)
    with pytest.raises(ValueError, match="one entry more"):
        native.compiled.minhash(wh, np.array([0, 3], np.int64), 2, a, a[:2])
    with pytest.raises(ValueError, match="multiple of 8"):
        native.compiled.dedup_word_hashes(b"a b", 7)


def test_dedup_normalize_is_the_normal_form_or_none() -> None:
    """``dedup_normalize``: the UTF-8 of ``shingles.normalize`` of each text, joined by newlines, with
    each text's start and word count; None (the definition's path, which raises) on a lone surrogate."""
    from curate.dedup.shingles import normalize

    texts = ["  Hello\u00a0WORLD\t x ", None, "", " \n ", "ΣΑΣ σ", "é" * 3 + "\U0001d400"]
    raw, starts, words = native.compiled.dedup_normalize(texts)
    norm = [normalize(t) if t else "" for t in texts]
    assert raw == "\n".join(norm).encode()
    s = np.frombuffer(starts, np.int64).tolist()
    assert [raw[a:b - 1] for a, b in zip(s[:-2], s[1:-1], strict=True)] + [raw[s[-2]:s[-1]]] == [t.encode() for t in norm]
    assert np.frombuffer(words, np.int64).tolist() == [len(t.split()) for t in norm]
    assert native.compiled.dedup_normalize(["ok", "a\ud800b"]) is None
