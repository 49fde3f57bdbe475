"""The commercial-spam score (``curate.spamscore``) and its garbage rule."""

from __future__ import annotations

import pytest
from datatrove.data import Document

from corpusmix.config import ConfigError
from curate import spamscore
from curate.steps.filters import FilterConfig
from curate.steps.garbage import CalibratedFilter
from curate.textstats import _TABLE

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


def _doc(text: str) -> Document:
    return Document(text=text, id="d", metadata={"lang": "en", "lang_score": 0.99})


def test_the_table_score_is_the_text_score():
    for text in (OFFER, MANUAL, STORY, OFFER + "\n\n" + MANUAL, "Click, click! CLICK: " + OFFER):
        s = CalibratedFilter.spam_stats(_doc(text), "en")
        assert s["spam_score"] == spamscore.score_text(text)  # the same sums, exactly rounded
        assert s["spam_words"] == sum(w in spamscore.model("en")[1] for w in spamscore.content_words(text))
    before = CalibratedFilter.spam_stats(_doc(OFFER), "en")
    _TABLE.clear()  # ids looked up again from nothing: the same score
    assert CalibratedFilter.spam_stats(_doc(OFFER), "en") == before


def test_the_score_is_measured_per_document_only_where_it_can_drop_one():
    on = CalibratedFilter(FilterConfig())  # the default drops offers
    assert on.measure(_doc(OFFER))["spam_score"] > 1.0
    assert "spam_score" not in CalibratedFilter(FilterConfig(garbage_max_spam_score=None)).measure(_doc(OFFER))
    # the offer marks are counted only where the score and words allow a drop
    assert on.measure(_doc(OFFER))["offer_marks"] > 1.0
    assert on.measure(_doc(MANUAL))["spam_score"] < 0 and "offer_marks" not in on.measure(_doc(MANUAL))


def test_offer_marks() -> None:
    # a percentage, "!", a price, a toll-free number, "free": 5 marks in 9 tokens
    assert spamscore.offer_marks("Save 50% now! Only $25, call 1-800-555-0199. FREE gift.") == 100.0 * 5 / 9
    assert spamscore.offer_marks(MANUAL) == 0.0
    assert spamscore.offer_marks("") == 0.0
    # a manual's own words for accounts and mail do not count; its exclamation marks do
    assert spamscore.offer_marks("Open the account settings and send the message to your contacts.") == 0.0


def test_offers_score_above_the_bar_and_plain_text_below():
    bar = FilterConfig().verdict_max_spam_score
    assert spamscore.score_text(OFFER) > bar
    assert spamscore.score_text(MANUAL) < 0 < bar
    assert spamscore.score_text(STORY) < bar


def test_person_and_function_words_are_not_read():
    assert spamscore.content_words("You and I will buy THIS now, please!") == ["buy"]
    assert spamscore.score_text("you we our the of and") is None  # nothing the model reads


def test_languages_without_a_model_get_no_score():
    assert spamscore.model("de") is None
    text = "Der Vertrag wird am Montag unterschrieben und gilt ab sofort."
    assert CalibratedFilter.spam_stats(_doc(text), "de") == {"spam_score": None, "spam_words": 0.0}


def test_the_rule_needs_the_score_the_offer_marks_and_enough_words():
    base = {"n_words": 300.0, "dict_share": 0.9, "vocab_richness": 6.0, "compress_ratio": 3.0, "n_lines": 5.0,
            "words_per_line": 60.0, "word_order": None, "word_pairs": 0, "stop_share": 0.4}
    spam = {**base, "spam_score": 2.0, "spam_words": 40.0, "offer_marks": 2.0}
    filt = CalibratedFilter(FilterConfig())  # the default: garbage_max_spam_score 1.0, spam_min_offer_marks 1.0
    assert filt.garbage_reason(spam) == "garbage:spam"
    assert filt.garbage_reason({**spam, "offer_marks": 0.5}) is None  # the words of spam without its marks
    assert filt.garbage_reason({**spam, "spam_words": 10.0}) is None  # too few words to judge
    assert filt.garbage_reason({**spam, "spam_score": 0.5}) is None
    assert CalibratedFilter(FilterConfig(garbage_max_spam_score=None)).garbage_reason(spam) is None  # off


OFFERS = ["Order today and save 40% on every product in our online store, with free shipping on all orders.",
          "Click here to claim your discount coupon and get a free gift with any purchase over $50.",
          "Our prices are the lowest anywhere: compare and buy direct from the manufacturer, money back guarantee.",
          "Call our toll free number now to speak with a sales representative about financing and credit.",
          "Subscribe to our mailing list for exclusive deals, special offers and limited time promotions.",
          "Earn extra income from home: no experience needed, start your own business for just $29.95."]


@pytest.mark.parametrize("drops", [True, False])
def test_a_domain_of_offers_is_judged_garbage_and_its_documents_dropped_where_drops_are_on(drops: bool):
    from curate.calibrate import fit_steps

    docs = {"shop": [" ".join(OFFERS[(i + k) % 6] for k in range(5)) for i in range(12)],
            "prose": [STORY, MANUAL] * 6}
    sample = {d: [Document(text=t, id=f"{d}/{i}", metadata={"domain": d, "lang": "en", "lang_score": 0.99})
                  for i, t in enumerate(ts)] for d, ts in docs.items()}
    filt = CalibratedFilter(FilterConfig() if drops else FilterConfig(garbage_max_spam_score=None))
    sec = fit_steps([filt], {d: list(v) for d, v in sample.items()})["filters"]
    assert sec["domains"]["shop"]["verdict"] == "garbage" and "garbage:spam" in sec["domains"]["shop"]["why"]
    assert sec["domains"]["prose"]["verdict"] == "ok"
    assert all((filt.filter(d) is True) is not drops for d in sample["shop"])  # dropped, or judged only
    assert all(filt.filter(d) is True for d in sample["prose"])


def test_the_verdict_reads_the_first_verdict_max_docs_of_the_sample():
    from curate.calibrate import fit_steps

    docs = [Document(text=" ".join(OFFERS[(i + k) % 6] for k in range(5)), id=f"shop/{i}",
                     metadata={"domain": "shop", "lang": "en", "lang_score": 0.99}) for i in range(12)]
    full = fit_steps([CalibratedFilter(FilterConfig())], {"shop": list(docs)})["filters"]["domains"]["shop"]
    part = fit_steps([CalibratedFilter(FilterConfig(verdict_max_docs=5))], {"shop": list(docs)})
    assert "12 of 12 sampled documents" in full["why"]
    assert "5 of 5 sampled documents" in part["filters"]["domains"]["shop"]["why"]
    assert part["filters"]["domains"]["shop"]["docs"] == 12  # the outlier rules still read every sampled one
    with pytest.raises(ConfigError, match="verdict_max_docs must be at least 1"):
        FilterConfig(verdict_max_docs=0)
