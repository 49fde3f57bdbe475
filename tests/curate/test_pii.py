"""Tests of curate/steps/pii.py, curate/evaluation/pii_metrics.py, curate/evaluation/planters.py and `corpusmix curate pii`."""

from __future__ import annotations

import json
import pickle
import socket
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from datatrove.data import Document

from corpusmix.paths import SHARED_CORPORA as _SHARED_CORPORA
from curate.evaluation.pii_metrics import score_pii
from curate.evaluation.planters import PIIPlanter
from curate.steps.pii import PIIConfig, PIIRedactor, redact, resolve_overlaps

SHARED = _SHARED_CORPORA

# A real sentence (Moby-Dick, ch. 1) with PII written into it.
TEXT = ("Call me Ishmael. Some years ago, never mind how long precisely, I wrote to "
        "ishmael.whaler@pequod-lines.com and phoned (212) 555-0147 ext. 12 from 192.168.10.4; "
        "my card 4111 1111 1111 1111 and SSN 078-05-1121 stayed home, IBAN GB29 NWBK 6016 1331 9268 19.")


@pytest.fixture(scope="module")
def red() -> PIIRedactor:
    return PIIRedactor(PIIConfig())


def test_exact_spans_and_placeholders(red: PIIRedactor) -> None:
    doc = Document(text=TEXT, id="moby")
    assert red.filter(doc) is True
    spans = doc.metadata["pii_spans"]
    got = [(s["type"], TEXT[s["start"]:s["end"]]) for s in spans]
    assert got == [
        ("EMAIL_ADDRESS", "ishmael.whaler@pequod-lines.com"),
        ("PHONE_NUMBER", "(212) 555-0147 ext. 12"),
        ("IP_ADDRESS", "192.168.10.4"),
        ("CREDIT_CARD", "4111 1111 1111 1111"),
        ("US_SSN", "078-05-1121"),
        ("IBAN_CODE", "GB29 NWBK 6016 1331 9268 19"),
    ]
    assert spans[0] == {"start": 75, "end": 106, "type": "EMAIL_ADDRESS"}
    assert json.loads(doc.metadata["pii_counts"]) == {
        "CREDIT_CARD": 1, "EMAIL_ADDRESS": 1, "IBAN_CODE": 1, "IP_ADDRESS": 1, "PHONE_NUMBER": 1, "US_SSN": 1}
    assert doc.text == (
        "Call me Ishmael. Some years ago, never mind how long precisely, I wrote to "
        "<EMAIL_ADDRESS> and phoned <PHONE_NUMBER> from <IP_ADDRESS>; "
        "my card <CREDIT_CARD> and SSN <US_SSN> stayed home, IBAN <IBAN_CODE>.")


def test_prefilter_matches_full_presidio_on_this_text() -> None:
    win = PIIRedactor(PIIConfig()).detect(TEXT)
    full = PIIRedactor(PIIConfig(prefilter=False)).detect(TEXT)
    assert win == full


def test_text_without_candidates_never_reaches_presidio(red: PIIRedactor) -> None:
    prose = "It is a truth universally acknowledged, that a single man in possession of a good fortune."
    assert red.windows(prose) == ([], [], set())
    doc = Document(text=prose, id="austen")
    assert red.filter(doc) is True
    assert doc.text == prose and doc.metadata["pii_spans"] == [] and doc.metadata["pii_counts"] == "{}"


def test_drop_reason_no_text(red: PIIRedactor) -> None:
    assert red.filter(Document(text=None, id="x")) == (False, "no_text")  # type: ignore[arg-type]


def test_no_network_is_touched(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args, **kwargs):  # noqa: ANN002, ANN003
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    fresh = PIIRedactor(PIIConfig())  # builds presidio + tldextract inside the guard
    assert fresh.detect("write to a.b@example.co.uk today") == [(9, 26, "EMAIL_ADDRESS")]


def test_overlaps_keep_higher_score_then_longer() -> None:
    spans = [(0, 10, "PHONE_NUMBER", 0.4), (0, 16, "CREDIT_CARD", 1.0), (20, 25, "US_SSN", 0.5),
             (22, 30, "PHONE_NUMBER", 0.5)]
    assert resolve_overlaps(spans) == [(0, 16, "CREDIT_CARD"), (22, 30, "PHONE_NUMBER")]
    assert redact("abcdefghij", [(2, 4, "X")]) == "ab<X>efghij"


def test_person_with_a_local_spacy_pipeline(tmp_path: Path) -> None:
    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("entity_ruler").add_patterns([{"label": "PERSON", "pattern": "Elizabeth Bennet"}])
    nlp.to_disk(tmp_path / "ner")
    red = PIIRedactor(PIIConfig(entities=["EMAIL_ADDRESS", "PERSON"], person_model=str(tmp_path / "ner")))
    assert red.detect("Miss Elizabeth Bennet wrote to jane.b@example.org.") == [
        (5, 21, "PERSON"), (31, 49, "EMAIL_ADDRESS")]


def test_person_needs_a_model() -> None:
    with pytest.raises(ValueError, match="person_model"):
        PIIConfig(entities=["PERSON"])
    with pytest.raises(ValueError, match="unknown type"):
        PIIConfig(entities=["EMAIL"])


def test_pickles_after_use(red: PIIRedactor) -> None:
    red.detect("mail me at x@y.org")
    clone = pickle.loads(pickle.dumps(red))
    assert clone.detect("mail me at x@y.org") == [(11, 18, "EMAIL_ADDRESS")]


def test_score_pii_counts() -> None:
    true = [[{"start": 0, "end": 5, "type": "US_SSN"}, {"start": 10, "end": 20, "type": "EMAIL_ADDRESS"}], []]
    pred = [[{"start": 0, "end": 5, "type": "US_SSN"}, {"start": 12, "end": 20, "type": "PHONE_NUMBER"}],
            [{"start": 1, "end": 3, "type": "IP_ADDRESS"}]]
    s = score_pii(pred, true, total_bytes=2_000_000)
    assert s["US_SSN"] == {"tp": 1, "fp": 0, "fn": 0, "exact": 1, "precision": 1.0, "recall": 1.0, "fp_per_mb": 0.0}
    assert s["EMAIL_ADDRESS"]["recall"] == 0.0 and s["PHONE_NUMBER"]["precision"] == 0.0
    assert s["ALL"]["tp"] == 1 and s["ALL"]["fp"] == 2 and s["ALL"]["fn"] == 1
    assert s["ALL"]["redacted_any_type"] == 1.0  # the e-mail was covered by the (mislabelled) phone
    assert s["ALL"]["fp_per_mb"] == 1.0
    only_ssn = score_pii(pred, true, types=["US_SSN"])
    assert set(only_ssn) == {"US_SSN", "ALL"} and only_ssn["ALL"]["fp"] == 0
    with pytest.raises(ValueError, match="one span list per document"):
        score_pii([[]], [[], []])


DEMO = Path(__file__).resolve().parents[2] / "data" / "demo" / "en"


def _real_texts(n: int, chars: int, domains: tuple[str, ...] = ("literature", "news", "legal", "techdocs",
                                                                  "reference")) -> list[str]:
    """Real documents of the shipped demo subset (plus the shared corpora's, when present)."""
    out: list[str] = []
    for base in (DEMO, SHARED):
        for d in domains:
            if (base / f"{d}.parquet").exists():
                t = pq.read_table(base / f"{d}.parquet", columns=["text"]).slice(0, n).column("text").to_pylist()
                out += [x[:chars] for x in t]
    return out


def test_planted_recall_and_agreement_with_presidio() -> None:
    texts, true = PIIPlanter(seed=3).plant_corpus(_real_texts(15, 1500), rate=0.7)
    red, full = PIIRedactor(PIIConfig()), PIIRedactor(PIIConfig(prefilter=False))
    pred = [red.detect(t) for t in texts]
    s = score_pii([[{"start": a, "end": b, "type": c} for a, b, c in p] for p in pred], true)
    planted = sum(len(x) for x in true)
    assert planted > 100
    for t in PIIPlanter.TYPES:
        assert s[t]["recall"] >= (0.95 if t == "PHONE_NUMBER" else 0.99), (t, s[t])
    # the prefilter finds what presidio on the whole text finds (phones of 7+ digits)
    for text, p in zip(texts, pred, strict=True):
        ref = [x for x in full.detect(text)
               if x[2] != "PHONE_NUMBER" or sum(c.isdigit() for c in text[x[0]:x[1]]) >= 7]
        assert p == ref


def test_cli_keeps_rows_and_columns_and_records_drops(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    import logging

    from corpusmix.cli import main
    from corpusmix.logging import JsonlFormatter

    records: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda r: records.append(JsonlFormatter().format(r))  # type: ignore[method-assign]
    logging.getLogger("corpusmix").addHandler(handler)

    table = pa.table({"id": ["a", "b", "c"], "text": [TEXT, "no pii here", None],
                      "domain": ["literature", "news", "news"], "source": ["s1", "s2", "s3"]})
    pq.write_table(table, tmp_path / "in.parquet")
    rc = main(["curate", "pii", "--input", str(tmp_path / "in.parquet"), "--output", str(tmp_path / "out.parquet"),
               "--params", str(tmp_path / "none.yaml"), "--margin", "8"])
    logging.getLogger("corpusmix").removeHandler(handler)
    assert rc == 0
    said = "\n".join(records) + capsys.readouterr().out
    assert '"PHONE_NUMBER": 1' in said  # counts are reported ...
    for value in ("ishmael", "555-0147", "192.168.10.4", "4111", "078-05-1121", "NWBK"):
        assert value not in said  # ... values never
    out = pq.read_table(tmp_path / "out.parquet")
    assert out.column("id").to_pylist() == ["a", "b"]
    assert {"domain", "source", "pii_spans", "pii_counts"} <= set(out.column_names)
    assert out.schema.field("pii_spans").type == pa.list_(
        pa.struct([("start", pa.int32()), ("end", pa.int32()), ("type", pa.string())]))
    assert len(out.column("pii_spans")[0].as_py()) == 6 and out.column("pii_spans")[1].as_py() == []
    assert "4111" not in out.column("text")[0].as_py()
    drops = pq.read_table(tmp_path / "out.parquet.drops.parquet").to_pylist()
    assert drops == [{"id": "c", "step": "read", "reason": "missing_text", "domain": "news"}]


def test_iso_dates_skip_the_phone_matcher_and_presidio_agrees(red: PIIRedactor) -> None:
    import datetime
    import random

    assert red.windows("released 2023-02-05 as")[1] == []
    assert red.windows("Washington, 1732-1799")[1] == []
    assert red.windows("released 2023-02-05 as 030 1234567")[1] == [(23, 34)]
    rng = random.Random(5)
    dates = [(datetime.date(1950, 1, 1) + datetime.timedelta(days=rng.randrange(36525))).isoformat()
             for _ in range(60)]
    text = "\n\n".join(f"on {d} we (and {d}), ok" for d in dates)
    assert red.analyzer.analyze(text, language="en", entities=["PHONE_NUMBER"]) == []
