"""The PII/secrets evaluation set on a committed fixture (curate/evaluation/pii_eval.py, bench/bench_pii_eval.py).

``data/pii_eval_seed7.json`` holds 26 documents (two of each file shape) drawn with seed 7, a seed
used neither for development (0) nor for the reported held-out figures (20250).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from curate.evaluation.pii_eval import documents, score
from curate.steps.pii import PIIConfig, PIIRedactor

FIXTURE = Path(__file__).parent / "data" / "pii_eval_seed7.json"


@pytest.fixture(scope="module")
def fixture() -> dict:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def result(fixture: dict) -> dict:
    red = PIIRedactor(PIIConfig())
    docs = fixture["documents"]
    return score(docs, [red.detect(d["text"]) for d in docs])


def test_labels_point_at_their_values(fixture: dict) -> None:
    for doc in fixture["documents"]:
        assert doc["spans"], doc["kind"]
        for sp in doc["spans"]:
            value = doc["text"][sp["start"]:sp["end"]]
            assert value and value == value.strip(), (doc["kind"], sp)
            assert sp["label"] in ("secret", "pii", "negative")


def test_generator_reproduces_the_fixture(fixture: dict) -> None:
    import faker

    if faker.VERSION != fixture["faker"]:
        pytest.skip(f"fixture written with Faker {fixture['faker']}, this is {faker.VERSION}")
    assert documents(fixture["seed"], fixture["n_per_kind"]) == fixture["documents"]


def test_default_settings_on_the_fixture(result: dict) -> None:
    assert result["secret_recall_all"] >= 0.95, result["errors"]
    for t in ("US_SSN", "CREDIT_CARD", "IBAN_CODE"):
        assert result["pii"][t]["recall"] == 1.0, (t, result["errors"])
    assert result["negative_flag_rate_all"] <= 0.02, result["errors"]


def test_score_counts_partial_redaction_as_a_miss() -> None:
    doc = {"kind": "t", "text": "TOKEN=abcdefgh 2023-01-05",
           "spans": [{"start": 6, "end": 14, "label": "secret", "family": "generic", "where": "assignment"},
                     {"start": 15, "end": 25, "label": "negative", "kind": "date"}]}
    half = score([doc], [[(6, 10, "SECRET_TOKEN"), (20, 22, "PHONE_NUMBER")]])
    assert half["secret_recall_all"] == 0.0 and half["negative_flag_rate_all"] == 1.0
    whole = score([doc], [[(6, 14, "SECRET_TOKEN")]])
    assert whole["secret_recall_all"] == 1.0 and whole["negative_flag_rate_all"] == 0.0
