"""The name-list PERSON detector (curate.steps.person_names): what it finds, what it leaves, how
the PII step and the inspection view use it. The names checked here are written by hand, not
drawn from the lists or from Faker."""

from __future__ import annotations

import pytest

from corpusmix.config import ConfigError
from curate.steps.person_names import name_lists, person_spans
from curate.steps.pii import PIIConfig, PIIRedactor


def _found(text: str) -> list[str]:
    return [text[s:e] for s, e in person_spans(text)]


def test_the_shipped_lists_load():
    first, last = name_lists()
    assert len(first) > 5000 and len(last) > 88000
    assert {"Mary", "James"} <= first and {"Smith", "Obrien", "Mcdonald"} <= last


@pytest.mark.parametrize("text,name", [
    ("Signed, Linda Hernandez.", "Linda Hernandez"),
    ("Written by Dr. Robert K. Thompson Jr. in 1999", "Dr. Robert K. Thompson Jr."),
    ("a letter from Mary Ann O'Brien-Keller arrived", "Mary Ann O'Brien-Keller"),
    ("Mrs. Patterson said no.", "Mrs. Patterson"),
    ("Thanks to Kevin McDonald, PhD for the data", "Kevin McDonald, PhD"),
])
def test_names_are_found_whole(text, name):
    assert _found(text) == [name]


@pytest.mark.parametrize("text", [
    "The committee met in March to discuss it.",
    "In the beginning there was nothing.",
    "Will the court accept it? The Supreme Court did.",
    "linda hernandez wrote in lower case",  # lower case is not looked at
    "Christian doctrine and English law",  # a given name before a word that is no surname
])
def test_no_name_no_span(text):
    assert _found(text) == []


def test_the_view_masks_names_and_keeps_the_rest_of_the_text():
    from curate.inspection.finish import make_redact

    redact = make_redact(None, mask_names=True)
    assert redact is not None and make_redact(None, mask_names=False) is None
    assert redact("d", "Ask Susan Miller or Mr. Nguyen today.") == "Ask <PERSON> or <PERSON> today."


def test_the_pii_step_takes_census_names_for_person():
    with pytest.raises(ConfigError, match="census-names"):
        PIIConfig(entities=["EMAIL_ADDRESS", "PERSON"])
    r = PIIRedactor(PIIConfig(entities=["EMAIL_ADDRESS", "PERSON"], person_model="census-names", secrets=False))
    spans = r.detect("Mail Joseph Ramirez at joe@example.org now.")
    assert [(t, "Mail Joseph Ramirez at joe@example.org now."[s:e]) for s, e, t in spans] == [
        ("PERSON", "Joseph Ramirez"), ("EMAIL_ADDRESS", "joe@example.org")]


def test_long_runs_of_names_take_linear_time():
    import time

    text = " ".join(["Mary"] * 200_000) + " Smith"
    t0 = time.process_time()
    spans = person_spans(text)
    assert time.process_time() - t0 < 10
    # "Mary" is a Census surname too: names of at most 5 words each, disjoint, in order
    assert len(spans) >= 40_000 and all(text[s:e].count(" ") <= 4 for s, e in spans)
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:], strict=False))
