"""Fused heuristic filters: one test per drop reason, decisions identical to datatrove's chain."""

from __future__ import annotations

import pytest
from datatrove.data import Document

from corpusmix.paths import DEMO
from corpusmix.paths import SHARED_CORPORA as _SHARED_CORPORA
from curate.steps.filters import FilterConfig, HeuristicFilter, datatrove_chain
from curate.steps.wordsplit import WordSplitter
from tests.helpers.texts import LEV12

LINES = LEV12.split("\n")
# the shared corpora when present (more coverage), else the shipped demo subset (same domain files)
CORPORA = _SHARED_CORPORA if _SHARED_CORPORA.is_dir() else DEMO / "en"


def datatrove_decide(chain: list, doc: Document) -> bool | tuple[bool, str]:
    """The reference: ``doc`` through datatrove's own filters in order; first drop wins (as in a pipeline)."""
    for f in chain:
        res = f.filter(doc)
        ok, reason = (res if isinstance(res, tuple) else (res, None))
        if not ok:
            return False, reason
    return True


def both(text: str, **over) -> tuple[object, object]:
    cfg = FilterConfig(**over)
    ours = HeuristicFilter(cfg).filter(Document(text=text, id="x"))
    ref = datatrove_decide(datatrove_chain(cfg), Document(text=text, id="x"))
    return ours, ref


def test_clean_prose_is_kept_by_both():
    assert both(LEV12) == (True, True)


CASES = {
    # Gopher repetition
    "empty": ("", {}),
    "dup_para_frac": ("\n\n".join([LINES[0]] * 3 + [LINES[1]]), {}),
    "dup_para_char_frac": ("\n\n".join([LINES[4], LINES[1], LINES[2], LINES[4]]), {}),
    "dup_line_frac": ("\n".join(LINES[:3] + [LINES[5]] * 3), {"rep_dup_para_frac": None}),
    "dup_line_char_frac": ("\n".join([LINES[4]] + LINES[1:4] + [LINES[4]]), {}),
    "top_2_gram": (LEV12, {"rep_top_n_grams": {2: 0.01}}),
    "top_3_gram": (LEV12, {"rep_top_n_grams": {3: 0.01}}),
    "top_4_gram": (LEV12, {"rep_top_n_grams": {4: 0.005}}),
    **{f"duplicated_{n}_n_grams": (LEV12 + "\n" + LINES[5], {"rep_dup_n_grams": {n: 0.0}}) for n in range(5, 11)},
    # Gopher quality
    "gopher_short_doc": (LINES[1], {"gopher_repetition": False}),
    "gopher_long_doc": (LEV12, {"quality_max_doc_words": 100}),
    "gopher_below_avg_threshold": (LEV12, {"quality_min_avg_word_length": 6}),
    "gopher_above_avg_threshold": (LEV12, {"quality_max_avg_word_length": 3}),
    "gopher_too_many_hashes": (LEV12 + " #", {"quality_max_symbol_word_ratio": 0.001}),
    "gopher_too_many_ellipsis": (LEV12 + " ...", {"quality_max_symbol_word_ratio": 0.001}),
    "gopher_too_many_bullets": ("- " + LEV12, {"quality_max_bullet_lines_ratio": 0.1}),
    "gopher_too_many_end_ellipsis": (LEV12 + "...", {"quality_max_ellipsis_lines_ratio": 0.1}),
    "gopher_below_alpha_threshold": (LEV12, {"quality_max_non_alpha_words_ratio": 0.99}),
    "gopher_enough_stop_words": (LEV12, {"quality_min_stop_words": 9}),
    # C4 (FineWeb variant)
    "lorem_ipsum": (LEV12 + "\nLorem ipsum dolor sit amet.", {}),
    "curly_bracket": (LEV12 + "\nThe set {a, b} has two members.", {}),
    "too_few_sentences": (LEV12, {"c4_min_num_sentences": 100}),
    # FineWeb quality
    "line_punct_ratio": (LEV12, {"fineweb_line_punct_thr": 1.01}),
    "short_line_ratio": (LEV12, {"fineweb_short_line_length": 100000}),
    "char_dup_ratio": (LEV12 + "\n" + LINES[5], {"fineweb_char_duplicates_ratio": 0.0,
                                                 "gopher_repetition": False}),
    "list_ratio": (LEV12, {"fineweb_new_line_ratio": 0.001}),
}


@pytest.mark.parametrize("reason", sorted(CASES))
def test_each_drop_reason_matches_datatrove(reason):
    text, over = CASES[reason]
    ours, ref = both(text, **over)
    assert ours == (False, reason)
    assert ref == (False, reason)


def test_fineweb_empty_reason_when_alone():
    ours, ref = both(" \n \n", gopher_repetition=False, gopher_quality=False, c4=False)
    assert ours == ref == (False, "empty")


def test_c4_rewrites_text_like_datatrove():
    text = LEV12 + "\nEnable javascript to see this page.\nshort line\nA citation[1] is here at the end."
    cfg = FilterConfig()
    d1, d2 = Document(text=text, id="a"), Document(text=text, id="a")
    assert HeuristicFilter(cfg).filter(d1) == datatrove_decide(datatrove_chain(cfg), d2)
    assert d1.text == d2.text
    assert "javascript" not in d1.text and "[1]" not in d1.text


def test_per_domain_override_keeps_code():
    code = "def f(x):\n    return {'a': x}\n\n\nclass A:\n    pass\n" * 3
    hf = HeuristicFilter(FilterConfig(per_domain={"code": {"gopher_quality": False, "c4": False, "fineweb": False,
                                                           "gopher_repetition": False}}))
    assert hf.filter(Document(text=code, id="c", metadata={"domain": "code"})) is True
    assert hf.filter(Document(text=code, id="c", metadata={"domain": "news"}))[0] is False


def test_per_domain_unknown_field_is_a_clear_error():
    from corpusmix.config import ConfigError

    with pytest.raises(ConfigError, match="valid"):
        HeuristicFilter(FilterConfig(per_domain={"code": {"c4_min_sentences": 1}}))


def test_word_split_equals_datatrove_on_tricky_chunks():
    from datatrove.utils.text import split_into_sentences, split_into_words

    text = "sbrk(): f(7)): don't can't gonna U.S.A. e.g. 3.5km 10:30 :) (a) \"q\"? x  y\u00a0z\tw -- ... !!"
    ws = WordSplitter()
    assert ws.words(text) == split_into_words(text)
    for line in ["Hi there. How are you?  Fine.", " [1] lead space. Next one", "A. B. C. d e f", "Wait... what?!"]:
        assert ws.count_sentences(line) == len(split_into_sentences(line))


def _corpus_docs(per_domain: int, max_chars: int) -> list[tuple[str, str]]:
    import pyarrow.parquet as pq

    out = []
    for dom in ("literature", "reference", "techdocs", "code", "legal", "news", "quotes"):
        rows = pq.read_table(CORPORA / f"{dom}.parquet", columns=["id", "text"]).to_pylist()
        rows = [r for r in rows if len(r["text"]) <= max_chars]
        step = max(1, len(rows) // per_domain)
        out += [(r["id"], r["text"]) for r in rows[::step][:per_domain]]
    return out


def _assert_identical(docs):
    cfg = FilterConfig()
    ours, chain = HeuristicFilter(cfg), datatrove_chain(cfg)
    reasons = set()
    for i, text in docs:
        d1, d2 = Document(text=text, id=i), Document(text=text, id=i)
        a, b = ours.filter(d1), datatrove_decide(chain, d2)
        assert a == b, i
        assert d1.text == d2.text, i
        reasons.add(a if a is True else a[1])
    return reasons


def test_identical_to_datatrove_on_real_corpora():
    reasons = _assert_identical(_corpus_docs(10, 6000))
    assert True in reasons and len(reasons) >= 4  # the sample exercises several rules


@pytest.mark.slow
def test_identical_to_datatrove_on_more_real_corpora():
    _assert_identical(_corpus_docs(25, 12000))
