"""The commercial-spam score (``curate.spamscore``) and its garbage rule."""

from __future__ import annotations

import pytest

from curate import spamscore
from curate.steps.filters import FilterConfig
from curate.steps.garbage import CalibratedFilter
from curate.textstats import _TABLE, doc_stats

OFFER = ("Limited time offer! Order today and save 50% on every product in our online store. Free shipping "
         "on all orders over $25, and a full money back guarantee if you are not satisfied with your purchase. "
         "Click here to claim your discount coupon, subscribe to our mailing list for exclusive deals, and call "
         "our toll free number to speak with a customer service representative about financing.")
MANUAL = ("The configuration file is read at startup. Each section names a module, and each key within the "
          "section sets one of that module's parameters. Values are parsed as integers where possible, "
          "otherwise as strings. A missing section leaves the module's defaults in place; an unknown key is "
          "reported as a warning and ignored. Comments start with a hash sign and run to the end of the line.")
STORY = ("The old man walked down to the harbour every morning before dawn. He watched the boats come in, "
         "counted the gulls on the breakwater, and listened to the fishermen argue about the weather. His "
         "daughter had asked him many times to stay at home, but he said the sea was the only clock he trusted.")


def test_the_table_score_is_the_text_score():
    for text in (OFFER, MANUAL, STORY, OFFER + "\n\n" + MANUAL):
        s = doc_stats(text, "en")
        assert s["spam_score"] == pytest.approx(spamscore.score_text(text), abs=1e-9)
        assert s["spam_words"] == sum(w in spamscore.model("en")[1] for w in spamscore.content_words(text))
    before = doc_stats(OFFER, "en")["spam_score"]
    _TABLE.clear()  # ids looked up again from nothing: the same score
    assert doc_stats(OFFER, "en")["spam_score"] == before


def test_offers_score_above_the_bar_and_plain_text_below():
    bar = FilterConfig().garbage_max_spam_score
    assert spamscore.score_text(OFFER) > bar
    assert spamscore.score_text(MANUAL) < 0 < bar
    assert spamscore.score_text(STORY) < bar


def test_person_and_function_words_are_not_read():
    assert spamscore.content_words("You and I will buy THIS now, please!") == ["buy"]
    assert spamscore.score_text("you we our the of and") is None  # nothing the model reads


def test_languages_without_a_model_get_no_score():
    assert spamscore.model("de") is None
    assert doc_stats("Der Vertrag wird am Montag unterschrieben und gilt ab sofort.", "de")["spam_score"] is None


def test_the_rule_needs_the_score_and_enough_words():
    filt = CalibratedFilter(FilterConfig())
    base = {"n_words": 300.0, "dict_share": 0.9, "vocab_richness": 6.0, "compress_ratio": 3.0, "n_lines": 5.0,
            "words_per_line": 60.0, "word_order": None, "word_pairs": 0, "stop_share": 0.4}
    spam = {**base, "spam_score": 2.0, "spam_words": 40.0}
    assert filt.garbage_reason(spam) == "garbage:spam"
    assert filt.garbage_reason({**spam, "spam_words": 10.0}) is None  # too few words to judge
    assert filt.garbage_reason({**spam, "spam_score": 0.5}) is None
    assert CalibratedFilter(FilterConfig(garbage_max_spam_score=None)).garbage_reason(spam) is None  # off
