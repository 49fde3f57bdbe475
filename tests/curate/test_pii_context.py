"""Secrets named by their context, numbers that are not PII, SSNs/cards/phones named by a column.

Cases are the shapes real configs, shell histories, code and logs take (curate/steps/secrets_context.py,
secret_formats.py, pii_numbers.py, pii_tables.py); the values are made up for these tests.
"""

from __future__ import annotations

import pytest

from curate.steps.pii import PIIConfig, PIIRedactor

AWS_ID, AWS_SECRET = "AKIAZ7Q3WXY2BCDE4FGH", "q8Vz3Kp1Lm0Nb7Xc2Rt5Yw9Hs4Gd6Jf0Ae1Bu3Ci"


@pytest.fixture(scope="module")
def red() -> PIIRedactor:
    return PIIRedactor(PIIConfig())


def secret_text(red: PIIRedactor, text: str) -> str:
    """``text`` with every character that a secret span covers replaced by ``#``."""
    chars = list(text)
    for s, e, t in red.detect(text):
        if t.startswith("SECRET_"):
            chars[s:e] = "#" * (e - s)
    return "".join(chars)


@pytest.mark.parametrize(("text", "value"), [
    ("GOOGLE_API_KEY=AIzaSyD3xKq9vLmN2pQrStUvWxYz0123456789A", "AIzaSyD3xKq9vLmN2pQrStUvWxYz0123456789A"),
    ("requirepass foobared", "foobared"),
    ("masterauth Xk2#pLq9", "Xk2#pLq9"),
    ("docker login -u admin -p Sup3rS3cret registry.example.com", "Sup3rS3cret"),
    ('mysql_real_connect(&mysql, "localhost", "root", "r00tPa55", "shop", 0, NULL, 0);', "r00tPa55"),
    ("[program:app]\ncommand=/usr/bin/app\npassword=hunter2xyz", "hunter2xyz"),
    ("REDIS_URL=redis://:p4ssw0rd@cache.internal:6379/0", "p4ssw0rd"),
    ("[default]\naws_access_key_id = " + AWS_ID + "\naws_secret_access_key = " + AWS_SECRET, AWS_SECRET),
    ("Access key ID: " + AWS_ID + "\nSecret access key:\n" + AWS_SECRET, AWS_SECRET),
    ("export GH_TOKEN=github_pat_11ABCDEFG0123456789abc_0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVW",
     "github_pat_11ABCDEFG0123456789abc_0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVW"),
    ("mysql -u root -p'S3cr#tPw' shop", "S3cr#tPw"),
    ("curl -u alice:Tr0ub4dor https://api.example.com", "Tr0ub4dor"),
    ("  - name: DB_PASSWORD\n    value: \"xK9#mP2$qL\"", "xK9#mP2$qL"),
    ("Server=db;Database=shop;User Id=sa;Password=Pa$$w0rd2024;", "Pa$$w0rd2024"),
    ("jdbc:mysql://db:3306/shop?user=app&password=s3cr3tValue", "s3cr3tValue"),
    ("define( 'DB_PASSWORD', 'wp!Secret42' );", "wp!Secret42"),
    ('props.setProperty("password", "j4v4Pr0ps");', "j4v4Pr0ps"),
    ("machine api.example.com login bob password n3trcPw", "n3trcPw"),
    ('curl -H "Authorization: Bearer abcDEF123456ghiJKL" https://x.io', "abcDEF123456ghiJKL"),
    ("stripe_key = sk_live_" + "a1B2" * 24 + "xyz", "sk_live_" + "a1B2" * 24 + "xyz"),
    ('db, err := sql.Open("postgres", "host=h user=u password=g0P4ss dbname=d")', "g0P4ss"),
    ("HF_TOKEN=hf_" + "abcdEFGHijklMNOPqrstUVWXyzabCDEFgh", "hf_" + "abcdEFGHijklMNOPqrstUVWXyzabCDEFgh"),
])
def test_secret_by_context_is_redacted_whole(red: PIIRedactor, text: str, value: str) -> None:
    covered = secret_text(red, text)
    start = text.index(value)
    assert covered[start:start + len(value)] == "#" * len(value), covered


@pytest.mark.parametrize("text", [
    "password: ${DB_PASSWORD}", "passwd:         files systemd", "password_min_length: 12",
    "self.password = password", "key = lambda x: x[1]", "secretName: my-tls-secret", "token: tokens[0]",
    "The password is stored in the vault and the key to success is patience.",
    "DB_PASSWORD=<your-password-here>", "api_key: YOUR_API_KEY", "REDIS_PASSWORD=null",
    "password = os.environ['DB_PASSWORD']", "Nov  5 10:22:33 host sshd[811]: Accepted password for bob from x port 22",
    "password_file: /run/secrets/db_password", "sort_key = 'name'", "token_url: https://auth.example.com/token",
    'headers: { Authorization: `Bearer ${token}` }', "mkdir -p build && ssh -p 2222 host",
])
def test_placeholders_and_references_are_not_secrets(red: PIIRedactor, text: str) -> None:
    assert "#" not in secret_text(red, text)


@pytest.mark.parametrize("text", [
    "PO-2020-125807 shipped on 05.11.2023", "INV-2023-00042 and SO#1234567",
    "linux (4.19.0-18) buster; urgency=medium", "libc6:amd64 2.36-9+deb12u4 2024-01-05",
    "adwaita-icon-theme (3.16.2.1-2) unstable; urgency=medium",
    "ISBN 0-306-40615-2 and 978-3-16-148410-0; ISSN 0317-8471", "doi:10.1038/nphys1170",
    "Datum: 05.11.2023, 12/31/2022, 2023/11/05", ": 1699999999:0;ls -la\n: 1700000042:0;git status",
    "#1699999999\ngit status", "ports 8000-8100 open", "ports:\n  - \"35220-36061:35220-36061\"",
    "commit 3f2a9c81d0 and uuid 123e4567-e89b-12d3-a456-426614174000", "Closes: #1001961",
    "Invoice No. 2023004512 due", "size=5678194681 took 12ms", "GET /api/orders/170289719 HTTP/1.1",
    "IMG_20231105_093012.jpg", "version = \"824.12.3073.155\"", "ts=1625935843 level=info",
])
def test_numbers_that_are_something_else_are_not_redacted(red: PIIRedactor, text: str) -> None:
    assert red.detect(text) == [], [(t, text[s:e]) for s, e, t in red.detect(text)]


@pytest.mark.parametrize(("text", "value", "kind"), [
    ("call 1699999999 now", "1699999999", "PHONE_NUMBER"),
    ("Tel: 030 1234567", "030 1234567", "PHONE_NUMBER"),
    ("(212) 555-0147", "(212) 555-0147", "PHONE_NUMBER"),
    ("Mobile: +44 7911 123456", "+44 7911 123456", "PHONE_NUMBER"),
    ("0812-5351-3933", "0812-5351-3933", "PHONE_NUMBER"),
    ("SSN: 219099999", "219099999", "US_SSN"),
    ("Social Security No. 219 09 9999.", "219 09 9999", "US_SSN"),
    ('{"name": "A", "ssn": "536901234"}', "536901234", "US_SSN"),
    ("order,card,amount\n1001,4111111111111111,12.50", "4111111111111111", "CREDIT_CARD"),
    ("IBAN LU28 0019 4006 4475 0000", "LU28 0019 4006 4475 0000", "IBAN_CODE"),
])
def test_pii_is_still_found(red: PIIRedactor, text: str, value: str, kind: str) -> None:
    start = text.index(value)
    assert (start, start + len(value), kind) in red.detect(text), red.detect(text)


def test_table_columns_name_ssns_cards_and_phones(red: PIIRedactor) -> None:
    text = ("order_id;customer_ssn;card_number;phone;ref\n"
            "PO-2021-000001;219099999;060486006079;3952733164;7244110600\n"
            "PO-2021-000002;219-09-1234;4111 1111 1111 1111;+1-363-961-6577x869;8110045772182\n\n"
            "9999999999 after the table")
    got = {(text[s:e], t) for s, e, t in red.detect(text)}
    assert got == {("219099999", "US_SSN"), ("219-09-1234", "US_SSN"), ("060486006079", "CREDIT_CARD"),
                   ("4111 1111 1111 1111", "CREDIT_CARD"), ("3952733164", "PHONE_NUMBER"),
                   ("+1-363-961-6577x869", "PHONE_NUMBER")}


def test_luxembourg_iban_with_letters(red: PIIRedactor) -> None:
    def iban(bban: str) -> str:
        n = int("".join(str(int(c, 36)) for c in bban + "LU00"))
        return f"LU{98 - n % 97:02d}{bban}"

    value = iban("001ABCD1234567XY")
    grouped = " ".join(value[i:i + 4] for i in range(0, len(value), 4))
    for v in (value, grouped):
        text = f"Pay to IBAN {v} by Friday."
        assert (12, 12 + len(v), "IBAN_CODE") in red.detect(text)


def test_invalid_ssns_are_not_ssns(red: PIIRedactor) -> None:
    for v in ("000123456", "666123456", "123006789", "123450000", "111111111"):
        assert not any(t == "US_SSN" for _, _, t in red.detect(f"SSN: {v}")), v


def test_whole_text_path_agrees_on_these_cases(red: PIIRedactor) -> None:
    full = PIIRedactor(PIIConfig(prefilter=False))
    for text in ("PO-2020-125807 shipped on 05.11.2023, call (212) 555-0147",
                 "SSN: 219099999 and card 4111 1111 1111 1111", ": 1699999999:0;ls"):
        assert red.detect(text) == full.detect(text)
