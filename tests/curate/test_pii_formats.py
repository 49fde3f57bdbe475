"""Card, phone and secret formats of real text (curate/steps/pii_recognizers.py, curate/steps/secrets.py).

Independent of the detector: values come from Faker's locale providers and from formats written
down from numbering-plan / issuer specs (``IndependentPIISet``), keys from their issuers' documented
formats (``SecretPlanter``), planted into the shipped real demo text.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from datatrove.data import Document

from curate.evaluation.pii_metrics import score_pii
from curate.evaluation.planters import IndependentPIISet, SecretPlanter
from curate.steps.pii import PIIConfig, PIIRedactor
from curate.steps.pii_recognizers import issuer_ok, luhn_ok

DEMO = Path(__file__).resolve().parents[2] / "data" / "demo" / "en"


@pytest.fixture(scope="module")
def red() -> PIIRedactor:
    return PIIRedactor(PIIConfig())


def _found(red: PIIRedactor, text: str) -> list[tuple[str, str]]:
    return [(t, text[s:e]) for s, e, t in red.detect(text)]


@pytest.mark.parametrize("card", [
    "501800000009",            # Maestro, 12 digits
    "6759 6498 2643 8453",     # Maestro UK, grouped
    "2221-0012-3412-3456",     # Mastercard 2-series, dash-grouped (Luhn-fixed below)
    "6212345678901265",        # UnionPay 16
    "6212345678901234567",     # UnionPay 19
    "4111111111111111111",     # Visa 19
    "36227206271667",          # Diners 14
    "2200123456789010",        # Mir
])
def test_card_lengths_12_to_19_with_issuer_prefixes(red: PIIRedactor, card: str) -> None:
    digits = "".join(c for c in card if c.isdigit())
    fixed = next(digits[:-1] + d for d in "0123456789" if luhn_ok(digits[:-1] + d))  # a valid check digit
    it = iter(fixed)
    value = "".join(next(it) if c.isdigit() else c for c in card)
    assert issuer_ok(fixed)
    assert _found(red, f"The order was paid with {value} last week.") == [("CREDIT_CARD", value)]


def test_card_rules(red: PIIRedactor) -> None:
    assert not luhn_ok("4111111111111112")
    assert _found(red, "id 4111111111111112 in the table") == []     # Luhn fails
    assert not issuer_ok("7000000000000005") and luhn_ok("7000000000000005")
    assert _found(red, "row 7000000000000005 of the dump") == []     # no issuer uses 7
    assert _found(red, "my card: 7000000000000005") == [("CREDIT_CARD", "7000000000000005")]  # card word


@pytest.mark.parametrize("text, value", [
    ("Call (212) 555-0147 ext. 12 now", "(212) 555-0147 ext. 12"),
    ("reach me at 206.269.0743x9150 please", "206.269.0743x9150"),
    ("fax 001-797-386-9073x6625.", "001-797-386-9073x6625"),
    ("office 123-456-7890 (any area code in the NANP shape)", "123-456-7890"),
    ("Tel: 0914 177 76 31", "0914 177 76 31"),                       # Turkey, Faker tr_TR
    ("+7 (914) 177-76-31 is his", "+7 (914) 177-76-31"),              # Russia
    ("电话：13580636083", "13580636083"),                               # China mobile, context word
    ("Telefon: +49 (0) 9141 777631", "+49 (0) 9141 777631"),
    ("phone: 000-08063608", "000-08063608"),                          # invalid plan, context says phone
    ("WhatsApp: +55 21 90708-6736 115-20-8862", "+55 21 90708-6736"),  # two numbers side by side
])
def test_phone_formats(red: PIIRedactor, text: str, value: str) -> None:
    assert ("PHONE_NUMBER", value) in _found(red, text)


def test_phone_context_words_are_configurable() -> None:
    text = "Rufen Sie 000-0806-3608 an"
    assert _found(PIIRedactor(PIIConfig(secrets=False)), text) == []
    red = PIIRedactor(PIIConfig(secrets=False, phone_context=["rufen sie"]))
    assert _found(red, text) == [("PHONE_NUMBER", "000-0806-3608")]
    assert _found(PIIRedactor(PIIConfig(secrets=False, context_chars=3)), "call me later at 000-0806-3608") == []


def test_no_detection_on_numbers_without_pii_shape(red: PIIRedactor) -> None:
    for text in ("released 2023-02-05 as 3.12.1", "Washington, 1732-1799.", "x = [1, 2, 3, 4, 5, 6, 7, 8]",
                 "sha 3f2a9c1e0b7d4a55 and 1234567 rows", "The 1990 2000 2010 census tables"):
        assert _found(red, text) == [], text


def test_independent_formats_on_demo_text() -> None:
    """Faker formats of 14 locales + spec formats planted into real demo paragraphs."""
    texts = [t[:1500] for d in ("literature", "news", "legal", "quotes")
             for t in pq.read_table(DEMO / f"{d}.parquet", columns=["text"]).slice(0, 40).column("text").to_pylist()]
    planted, true = IndependentPIISet(seed=11, context_share=1.0).plant_corpus(texts, rate=0.8)
    red = PIIRedactor(PIIConfig(secrets=False))
    pred = [[{"start": s, "end": e, "type": t} for s, e, t in red.detect(x)] for x in planted]
    s = score_pii(pred, true)
    assert sum(map(len, true)) > 150
    for t in ("EMAIL_ADDRESS", "CREDIT_CARD", "IBAN_CODE", "US_SSN", "IP_ADDRESS"):
        assert s[t]["recall"] >= 0.99, (t, s[t])
    assert s["PHONE_NUMBER"]["recall"] >= 0.95, s["PHONE_NUMBER"]


def test_secrets_recall_and_no_false_positives_on_demo_code(red: PIIRedactor) -> None:
    code = pq.read_table(DEMO / "code.parquet", columns=["text"]).column("text").to_pylist()
    assert [t for x in code for t in red.secrets.detect(x)] == []  # real stdlib code: nothing flagged
    planted, truth = SecretPlanter(seed=5).plant_corpus(code[:20], per_doc=3)
    found = total = 0
    for text, values in zip(planted, truth, strict=True):
        doc = Document(text=text, id="c")
        red.filter(doc)
        counts = json.loads(doc.metadata["pii_counts"])
        assert sum(v for k, v in counts.items() if k.startswith("SECRET_")) >= 1
        for _, value in values:
            total += 1
            found += all(part not in doc.text for part in SecretPlanter.material(value))
    assert total == 60 and found / total >= 0.95, (found, total)


def test_secret_placeholders_are_typed(red: PIIRedactor) -> None:
    key = "AKIA" + "Q" * 16
    pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAx\nabc==\n-----END RSA PRIVATE KEY-----"
    doc = Document(text=f'KEY_ID = "{key}"\nPEM = """{pem}"""\nurl = "postgres://app:Zr8pQ2@db:5432/x"', id="s")
    red.filter(doc)
    assert doc.text == ('KEY_ID = "<SECRET_AWS_KEY>"\nPEM = """<SECRET_PRIVATE_KEY>"""\n'
                        'url = "postgres://app:<SECRET_URL_PASSWORD>@db:5432/x"')
    assert json.loads(doc.metadata["pii_counts"]) == {"SECRET_AWS_KEY": 1, "SECRET_PRIVATE_KEY": 1,
                                                      "SECRET_URL_PASSWORD": 1}


@pytest.mark.parametrize("text", [
    "\x00\x01\x02 binary \udcff junk \ud800 call 555-123-4567 \x7f" * 3,   # control chars, lone surrogates
    "9" * 200_000,                                                          # one very long digit line
    ("password = '" + "a" * 50_000 + "' " + "key: 'x' ") * 2,              # very long secret-ish line
    "@" * 10_000 + "a@b.co" + "." * 10_000,
])
def test_bad_input_is_redacted_or_left_without_crash(red: PIIRedactor, text: str) -> None:
    doc = Document(text=text, id="bad")
    assert red.filter(doc) is True
    assert isinstance(doc.text, str)
    if "555-123-4567" in text:
        assert "555-123-4567" not in doc.text


def test_person_needs_an_installed_model() -> None:
    red = PIIRedactor(PIIConfig(entities=["PERSON"], person_model="xx_no_such_model_sm"))
    with pytest.raises(ValueError, match="xx_no_such_model_sm.*pip install"):
        red.detect("Elizabeth Bennet")


def test_secret_gates_do_not_change_results(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cheap gates in front of detect-secrets' plugins are necessary conditions: same spans."""
    import curate.steps.secrets as sec

    code = pq.read_table(DEMO / "code.parquet", columns=["text"]).slice(0, 12).column("text").to_pylist()
    texts, _ = SecretPlanter(seed=9).plant_corpus(code, per_doc=4)
    gated = [sec.SecretsDetector().detect(t) for t in texts]
    monkeypatch.setattr(sec, "GATES", {})
    assert [sec.SecretsDetector().detect(t) for t in texts] == gated
    assert sum(map(len, gated)) >= 40


@pytest.mark.parametrize("text", [
    'cloudant_password = "' + "a" * 24 + '"', "clapikey: " + "f" * 64, "x https://acct:" + "b" * 24 + "@acct.CLOUDANT.com",
    "clou-token " + "q" * 24, 'ibm_cloud_iam_key = "' + "A1-_" * 11 + '"', "api_key: " + "x" * 44,
    'token  =  "' + "Z" * 44 + '"', "key\n" + "x" * 44, "password: " + "x" * 45, "AKC" + "a" * 10,
    "=AP1abcdefgh\n", "APACHE LICENSE", "x AP3abcdefghi y", "AKCabc " + "k" * 30,
])
def test_composite_secret_gates_keep_every_match(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Cloudant, IBM and Artifactory gates (a key word and a long token, both necessary) against the
    plugins run on every text, on matches and near misses."""
    import curate.steps.secrets as sec

    code = pq.read_table(DEMO / "code.parquet", columns=["text"]).slice(0, 3).column("text").to_pylist()
    texts = [text, code[0] + "\n" + text, text + " " + text.upper()]
    gated = [sec.SecretsDetector().detect(t) for t in texts]
    monkeypatch.setattr(sec, "GATES", {})
    assert [sec.SecretsDetector().detect(t) for t in texts] == gated


def test_other_string_columns_are_redacted_labels_are_not(red: PIIRedactor) -> None:
    doc = Document(text="no pii", id="x", metadata={"domain": "news", "lang": "en", "source": "mailto:jo.d@example.org",
                                                    "title": "Call 555-123-4567", "year": 1999})
    assert red.filter(doc) is True
    assert doc.metadata["source"] == "mailto:<EMAIL_ADDRESS>" and doc.metadata["title"] == "Call <PHONE_NUMBER>"
    assert doc.metadata["domain"] == "news" and doc.metadata["lang"] == "en" and doc.metadata["year"] == 1999
    assert doc.metadata["pii_spans"] == [] and json.loads(doc.metadata["pii_counts"]) == {
        "EMAIL_ADDRESS": 1, "PHONE_NUMBER": 1}
    keep = PIIRedactor(PIIConfig(other_columns=False))
    doc = Document(text="x", id="y", metadata={"title": "Call 555-123-4567"})
    keep.filter(doc)
    assert doc.metadata["title"] == "Call 555-123-4567"


def test_iban_right_after_an_ipv6_and_email_glued_to_a_question_mark(red: PIIRedactor) -> None:
    text = "from 2001:db8:486d:d1b6:e820:ba10:6aed:e476 GB26 GUAM 8985 7531 1336 14 down"
    assert ("IBAN_CODE", "GB26 GUAM 8985 7531 1336 14") in _found(red, text)
    assert _found(red, "what means?jo.x@example.com now") == [("EMAIL_ADDRESS", "means?jo.x@example.com")]
