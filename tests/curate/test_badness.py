"""curate.badness gives exactly ftfy's is_bad / badness, on random, mojibake and real text."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow.parquet as pq
from ftfy import badness as ftfy_badness
from hypothesis import given, settings
from hypothesis import strategies as st

from curate import badness as fast

DEMO = Path(__file__).resolve().parents[2] / "data" / "demo"

# ASCII, whitespace, the characters ftfy's pattern is built of and their neighbours, other scripts
_ALPHABET = ("aeiouxyzAEZ .,?!'\"-\n\t0123456789"
             "\u00a0\u00ad\u00b7\u00b4\u2013\u2014\u2026\u2019\u201c\u201d\u2018\u201e\u2022\u2122\u00a9\u00ae"
             "\u0080\u0085\u0093\u009d\u00a6\u00a4\u00a8\u00ac\u00af\u00b8\u0192\u02c6\u2020\u2021\u2030\ufffd"
             "\u00aa\u00ba\u00a2\u00a3\u00a5\u20ac\u00b0\u00b2\u00b3\u00b5\u00d7\u00f7\u00b6\u00a7\u00a1\u00bf\u00ab\u00bb"
             "\u00c0\u00c2\u00c3\u00c9\u00ce\u00d0\u00d1\u00d2\u00d6\u00d8\u00d9\u00dc\u00e0\u00e9\u00f1\u00f2\u00f6\u00fc"
             "\u0152\u0153\u0160\u0161\u0178\u017e\u2502\u250c\u2588\u2591\u221a\u00b1\u2202\u2260\u2248\u201a"
             "\u0412\u0413\u0420\u0421\u045e\u0402\u03b2\u0392\u0393\u039e\u039f\u0101\u0436\u4e2d")


def _same(text: str) -> None:
    assert fast.is_bad(text) == ftfy_badness.is_bad(text), text
    assert fast.badness(text) == ftfy_badness.badness(text), text


def test_the_windowed_scan_is_in_use_for_ftfys_pattern():
    plan = fast.anchor_plan(ftfy_badness.BADNESS_RE)
    assert plan is not None
    anchor, width = plan
    assert 1 <= width <= 16
    assert anchor.search("plain ASCII text, curly \u2019quotes\u2019 \u2013 dashes") is None
    assert anchor.search("Ã©") is not None


@settings(max_examples=3000, deadline=None)
@given(st.text(alphabet=_ALPHABET, max_size=80))
def test_random_text_equals_ftfy(text: str):
    _same(text)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["word ", "caf\u00e9 ", "\u00c3\u00a9", "\u00e2\u20ac\u2122", "\u00c2 ",
                                 "\u00c3 ", "\u0432\u0402", "\u0413\u045e\u0412\u0402\u0412\u201c ",
                                 "\u221a\u00a9", "\n", "  ", "x", "\u00ef\u00bb\u00bf"]), max_size=60).map("".join))
def test_mojibake_fragments_equal_ftfy(text: str):
    _same(text)


def test_real_and_broken_demo_text_equals_ftfy():
    texts = []
    for f in sorted((DEMO / "foreign").glob("*.parquet")) + sorted((DEMO / "en").glob("*.parquet"))[:2]:
        texts += [t[:4000] for t in pq.read_table(f, columns=["text"]).column("text").to_pylist()[:40]]
    assert len(texts) >= 40
    n_bad = 0
    for t in texts:
        _same(t)
        for codec in ("latin-1", "cp1252", "mac_roman", "cp1251", "cp437"):
            broken = t.encode("utf-8").decode(codec, errors="replace")
            _same(broken)
            n_bad += ftfy_badness.is_bad(broken)
    assert n_bad > len(texts)  # the broken texts do hold mojibake: the windows found it


def test_patterns_the_scan_cannot_window_fall_back():
    assert fast.anchor_plan(re.compile("\u00c3(?=x)")) is None  # lookahead
    assert fast.anchor_plan(re.compile("\u00c3|ab")) is None  # a branch that matches ASCII alone
    assert fast.anchor_plan(re.compile("\u00c3", re.IGNORECASE)) is None
    assert fast.anchor_plan(re.compile("\u00c3.*")) is None  # unbounded
    assert fast.anchor_plan(re.compile("(a)\u00c3\\1")) is None  # backreference
    plan = fast.anchor_plan(re.compile("a\\s?[\u00c3\u00c2] |^\u00c3"))
    assert plan is not None and plan[1] == 4


def test_without_a_plan_both_functions_are_ftfys(monkeypatch):
    monkeypatch.setattr(fast, "_plan", lambda: None)
    for text in ("caf\u00c3\u00a9 \u00e2\u20ac\u2122s", "plain text", "\u00c3 "):
        _same(text)
