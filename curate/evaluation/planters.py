"""Planted values with exact spans: the one library that plants PII and secrets into text.

* ``PIIPlanter`` inserts realistic PII values (Faker, fixed seed) into real text at sentence or
  line boundaries and returns the exact spans: the evaluation set of ``bench/bench_pii.py`` and
  ``tests/curate/test_pii.py``. Phone numbers are kept only when libphonenumber says they are
  valid for their country (unassigned area codes are not phone numbers people write).
* ``IndependentPIISet``: values whose formats come from Faker's locale providers and numbering-plan
  / IIN specs, used as generated.
* ``SecretPlanter``: secrets in their issuers' formats, planted as code lines.
* ``PIIFactory``: the PII of the demo data (``corpusmix demo-data``).

They share the Luhn check, digit grouping and the insertion of snippets at text boundaries; each
keeps its own random stream and value distributions, so every planted set is reproducible by seed.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

Span = dict[str, Any]  # {"start": int, "end": int, "type": str, ...}


def luhn_ok(num: str) -> bool:
    """Whether the digits of ``num`` pass the Luhn check (other characters are ignored)."""
    total = 0
    for i, c in enumerate(reversed([int(c) for c in num if c.isdigit()])):
        d = c * 2 if i % 2 else c
        total += d - 9 if d > 9 else d
    return total % 10 == 0


def luhn_check_digit(body: str) -> str:
    """The digit that makes ``body`` + digit pass the Luhn check."""
    total = sum((d * 2 - 9 if d * 2 > 9 else d * 2) if i % 2 == 0 else d
                for i, d in enumerate(reversed([int(c) for c in body])))
    return str((10 - total % 10) % 10)


def group4(value: str, sep: str = " ") -> str:
    """``value`` in groups of 4 characters joined by ``sep`` (cards, IBANs)."""
    return sep.join(value[i:i + 4] for i in range(0, len(value), 4))


def grouped16(num: str, rng: random.Random, share: float) -> str:
    """A 16-digit ``num`` grouped by 4 with a space or a dash for a ``share`` of calls, else as is."""
    if len(num) == 16 and rng.random() < share:
        return group4(num, rng.choice([" ", "-"]))
    return num


def maybe_group4(value: str, rng: random.Random, share: float) -> str:
    """``value`` grouped by 4 with spaces for a ``share`` of calls, else as is (IBANs)."""
    return group4(value) if rng.random() < share else value


def ip_value(faker: Any, rng: random.Random) -> str:
    """A public IPv4 address (70 %) or an IPv6 address from ``faker``."""
    return faker.ipv4_public() if rng.random() < 0.7 else faker.ipv6()


def boundaries(text: str) -> list[int]:
    """Insertion points: after every newline and every sentence end followed by a space (the text's end
    when there is none)."""
    return [m.end() for m in re.finditer(r"\n|[.!?] ", text)] or [len(text)]


def insert_snippets(text: str, points: Sequence[int],
                    snippet: Callable[[], tuple[str, str, str, str, dict[str, Any]]]) -> tuple[str, list[Span]]:
    """Insert one ``before + value + after + " "`` at each of ``points`` (descending, so earlier offsets
    stay valid); ``snippet()`` gives ``(kind, before, value, after, extra)``. Returns the text and the
    spans of the values (``start, end, type, value`` and ``extra``), sorted by start."""
    spans: list[Span] = []
    for pos in points:
        kind, before, value, after, extra = snippet()
        snip = before + value + after + " "
        text = text[:pos] + snip + text[pos:]
        for s in spans:
            s["start"] += len(snip)
            s["end"] += len(snip)
        start = pos + len(before)
        spans.append({"start": start, "end": start + len(value), "type": kind, "value": value, **extra})
    spans.sort(key=lambda s: s["start"])
    return text, spans


class PIIPlanter:
    """Plant realistic PII values (Faker, seeded) into text and return their exact spans."""

    TYPES = ("EMAIL_ADDRESS", "PHONE_NUMBER", "CREDIT_CARD", "IBAN_CODE", "US_SSN", "IP_ADDRESS")
    TEMPLATES = {
        "EMAIL_ADDRESS": ["Contact {v} for a copy.", "E-mail: {v}", "mail {v} or write to us.", "<{v}>"],
        "PHONE_NUMBER": ["Call {v} today.", "Tel. {v}", "phone: {v}, fax none.", "(ph. {v})"],
        "CREDIT_CARD": ["Card: {v}", "paid with card {v} on the 3rd.", "CC {v}"],
        "IBAN_CODE": ["IBAN {v}", "Transfer to {v} please.", "account {v}."],
        "US_SSN": ["SSN {v}", "social security no. {v}.", "ssn: {v}"],
        "IP_ADDRESS": ["from {v} at noon", "host {v}", "IP: {v}."],
    }
    PHONE_LOCALES = {"en_US": "US", "en_GB": "GB", "de_DE": "DE", "fr_FR": "FR", "en_CA": "CA"}
    CARD_TYPES = ("visa16", "visa13", "mastercard", "amex", "discover", "diners", "jcb16", "jcb15")

    def __init__(self, seed: int = 0, types: Iterable[str] = TYPES) -> None:
        from faker import Faker

        self.types = list(types)
        self.rng = random.Random(seed)
        self.fakers = {loc: Faker(loc) for loc in ("en_US", "en_GB", "de_DE", "fr_FR", "en_CA")}
        for i, f in enumerate(self.fakers.values()):
            f.seed_instance(seed * 7919 + i)

    def _phone(self) -> str:
        import phonenumbers

        while True:
            loc = self.rng.choice(list(self.PHONE_LOCALES))
            value = self.fakers[loc].phone_number()
            try:
                if phonenumbers.is_valid_number(phonenumbers.parse(value, self.PHONE_LOCALES[loc])):
                    return value
            except phonenumbers.NumberParseException:
                continue

    def value(self, kind: str) -> str:
        """One value of ``kind`` in a format people write it in."""
        us, r = self.fakers["en_US"], self.rng
        if kind == "EMAIL_ADDRESS":
            return r.choice([us.email, us.free_email, us.company_email, self.fakers["de_DE"].email])()
        if kind == "PHONE_NUMBER":
            return self._phone()
        if kind == "CREDIT_CARD":
            num = us.credit_card_number(card_type=r.choice(self.CARD_TYPES))
            assert luhn_ok(num), num
            return grouped16(num, r, 0.4)
        if kind == "IBAN_CODE":
            return maybe_group4(self.fakers[r.choice(["en_GB", "de_DE", "fr_FR"])].iban(), r, 0.4)
        if kind == "US_SSN":
            return us.ssn()
        if kind == "IP_ADDRESS":
            return ip_value(us, r)
        raise ValueError(f"unknown PII type {kind!r}; valid: {list(self.TEMPLATES)}")

    def plant(self, text: str, n: int) -> tuple[str, list[Span]]:
        """Insert ``n`` PII snippets at line or sentence boundaries; return the text and spans."""
        chosen = sorted(self.rng.choices(boundaries(text), k=n), reverse=True)

        def snippet() -> tuple[str, str, str, str, dict[str, Any]]:
            kind = self.rng.choice(self.types)
            value = self.value(kind)
            before, _, after = self.rng.choice(self.TEMPLATES[kind]).partition("{v}")
            return kind, before, value, after, {}

        return insert_snippets(text, chosen, snippet)

    def plant_corpus(self, texts: Sequence[str], *, rate: float = 0.3,
                     max_per_doc: int = 3) -> tuple[list[str], list[list[Span]]]:
        """Plant 1..``max_per_doc`` values into a ``rate`` share of ``texts``."""
        out_t, out_s = [], []
        for t in texts:
            if self.rng.random() < rate:
                t, s = self.plant(t, self.rng.randint(1, max_per_doc))
            else:
                s = []
            out_t.append(t)
            out_s.append(s)
        return out_t, out_s


# ---------------------------------------------------------------------------------------------
# An evaluation set independent of the detector's formats (bench/bench_pii.py, tests)

# Phone formats written down from national numbering plans (ITU-T E.164 country pages, Ofcom,
# TRAI, MIIT, MIC Japan, Bundesnetzagentur, ARCEP, Anatel, Rossvyaz, IFT Mexico, Kominfo, BTRC,
# NANPA): '#' is a random digit, the rest literal. Together with Faker's own phone_number() and
# msisdn() formats of the LOCALES below they make the phone values.
SPEC_PHONE_FORMATS = (
    "+1 ###-###-####", "1-800-###-####", "(###) ###-#### ext. ###", "###-###-#### x####", "001-###-###-####",
    "+44 20 #### ####", "07### ######", "+44 7### ######", "0161 ### ####",
    "+91 9#### #####", "09#### #####", "+91-11-####-####",
    "+86 13# #### ####", "010-####-####", "+86 10 #### ####",
    "03-####-####", "090-####-####", "+81 90-####-####",
    "+49 30 #######", "030 #######", "+49 151 ########", "0151/########",
    "01 ## ## ## ##", "+33 6 ## ## ## ##", "06.##.##.##.##",
    "(11) 9####-####", "+55 21 9####-####",
    "8 (495) ###-##-##", "+7 9## ###-##-##",
    "55 #### ####", "+52 55 #### ####",
    "0812-####-####", "+62 21 #######",
    "01###-######", "+880 1### ######",
    "+34 6## ### ###", "+39 3## ### ####",
)
# the 10 most populous countries' Faker locales plus the largest European ones (Faker has no
# Pakistani or Nigerian phone provider)
LOCALES = ("zh_CN", "hi_IN", "en_US", "id_ID", "pt_BR", "bn_BD", "ru_RU", "es_MX", "ja_JP", "de_DE",
           "fr_FR", "en_GB", "es_ES", "it_IT")
# card issuers from the public IIN table: (prefix, length); the rest of the number is random
# digits with a Luhn check digit
SPEC_CARDS = (("4", 16), ("4", 13), ("4", 19), ("51", 16), ("2221", 16), ("2720", 16), ("34", 15),
              ("37", 15), ("6011", 16), ("65", 16), ("62", 16), ("62", 19), ("36", 14), ("3528", 16),
              ("5018", 12), ("6759", 13), ("6304", 16), ("50", 18), ("2200", 16), ("9792", 16),
              ("81", 16), ("6080", 16))
TEMPLATES_CONTEXT = {
    "PHONE_NUMBER": ["Call {v} for details.", "Phone: {v}", "Tel.: {v}", "You can reach me at {v} after six.",
                     "Mobile {v}", "WhatsApp: {v}", "fax: {v}", "Téléphone : {v}", "Telefon: {v}",
                     "Teléfono {v}", "电话：{v}", "please phone {v} or write", "(tel {v})", "Contact: {v}"],
    "CREDIT_CARD": ["Card number: {v}", "paid by Visa {v} yesterday", "charged to my card {v}.",
                    "Kreditkarte {v}", "carte bancaire {v}", "CC#: {v}", "debit card ending... no, the full {v}"],
}
TEMPLATES_BARE = {
    "PHONE_NUMBER": ["J. Doe, Sales, {v}", "{v}", "({v})", "- {v}", "Office hours 9-5, {v}."],
    "CREDIT_CARD": ["{v}", "number {v} was used", "ref. {v}", "({v})"],
    "EMAIL_ADDRESS": ["write to {v}", "<{v}>", "{v}", "(e-mail {v})"],
    "IBAN_CODE": ["IBAN: {v}", "{v}", "pay into {v} by Friday"],
    "US_SSN": ["SSN {v}", "social security number {v}", "{v}"],
    "IP_ADDRESS": ["logged in from {v}", "{v}", "server {v} went down"],
}


class IndependentPIISet:
    """Planted PII whose formats come from Faker's locale providers and numbering-plan / IIN specs.

    Unlike ``PIIPlanter`` (whose phone numbers are pre-validated with libphonenumber, the detector's
    own validator), values are used as generated: phone_number() and msisdn() of 14 locales, spec
    formats with random digits, every Faker card type plus spec issuer prefixes of 12-19 digits,
    plain, space- or dash-grouped. ``context_share`` of phones and cards come with a word that says
    what they are ("Call", "Tel.", "Card number"), the rest bare.
    """

    def __init__(self, seed: int = 0, context_share: float = 0.75) -> None:
        from faker import Faker

        self.rng = random.Random(seed)
        self.context_share = context_share
        self.fakers = {loc: Faker(loc) for loc in LOCALES}
        for i, f in enumerate(self.fakers.values()):
            f.seed_instance(seed * 7919 + i)
        self.card_types = [t for t in Faker().provider("faker.providers.credit_card").credit_card_types
                           if t not in ("visa", "jcb")]  # aliases

    def _digits(self, fmt: str) -> str:
        return "".join(str(self.rng.randrange(10)) if c == "#" else c for c in fmt)

    def _card(self) -> str:
        r = self.rng
        if r.random() < 0.5:
            num = self.fakers["en_US"].credit_card_number(card_type=r.choice(self.card_types))
        else:
            prefix, n = r.choice(SPEC_CARDS)
            body = prefix + "".join(str(r.randrange(10)) for _ in range(n - len(prefix) - 1))
            num = body + luhn_check_digit(body)
        x = r.random()
        if x < 0.3:
            return group4(num, " ")
        if x < 0.45:
            return group4(num, "-")
        return num

    def value(self, kind: str) -> str:
        r = self.rng
        f = self.fakers[r.choice(LOCALES)]
        if kind == "PHONE_NUMBER":
            x = r.random()
            if x < 0.5:
                return f.phone_number()
            return f.msisdn() if x < 0.6 else self._digits(r.choice(SPEC_PHONE_FORMATS))
        if kind == "CREDIT_CARD":
            return self._card()
        if kind == "EMAIL_ADDRESS":
            return f.email()
        if kind == "IBAN_CODE":
            return maybe_group4(self.fakers[r.choice(["en_GB", "de_DE", "fr_FR", "es_ES", "it_IT"])].iban(), r, 0.4)
        if kind == "US_SSN":
            return self.fakers["en_US"].ssn()
        if kind == "IP_ADDRESS":
            return ip_value(f, r)
        raise ValueError(f"unknown PII type {kind!r}; valid: {list(TEMPLATES_BARE)}")

    def snippet(self, kind: str) -> tuple[str, str, str, bool]:
        """``(before, value, after, with_context)`` of one planted value in its template."""
        ctx = TEMPLATES_CONTEXT.get(kind)
        with_context = bool(ctx) and self.rng.random() < self.context_share
        before, _, after = self.rng.choice(ctx if with_context else TEMPLATES_BARE[kind]).partition("{v}")
        return before, self.value(kind), after, with_context

    def plant_corpus(self, texts: Sequence[str], *, rate: float = 0.3, max_per_doc: int = 3,
                     types: Sequence[str] = PIIPlanter.TYPES) -> tuple[list[str], list[list[Span]]]:
        """Plant 1..``max_per_doc`` values into a ``rate`` share of ``texts``."""
        out_t, out_s = [], []
        for t in texts:
            s: list[Span] = []
            if self.rng.random() < rate:
                t, s = self.plant(t, self.rng.randint(1, max_per_doc), types)
            out_t.append(t)
            out_s.append(s)
        return out_t, out_s

    def plant(self, text: str, n: int, types: Sequence[str] = PIIPlanter.TYPES) -> tuple[str, list[Span]]:
        """Insert ``n`` values as their own sentences at sentence or line boundaries of ``text``."""
        chosen = sorted(self.rng.choices(boundaries(text), k=n), reverse=True)

        def snippet() -> tuple[str, str, str, str, dict[str, Any]]:
            kind = self.rng.choice(list(types))
            before, value, after, with_context = self.snippet(kind)
            return kind, before, value, after, {"context": with_context}

        return insert_snippets(text, chosen, snippet)


class SecretPlanter:
    """Secrets in the formats their issuers document, planted as code lines into source text.

    AWS access key ids (``AKIA`` + 16) and secret keys (40 chars), GitHub tokens (``ghp_``/``gho_``/
    ``ghs_`` + 36), Slack bot tokens and webhook URLs, PEM private-key blocks (RSA, EC, PKCS#8,
    OpenSSH), JWTs (base64url JSON header and payload, random signature), passwords in connection
    URLs and in assignments. ``plant_corpus`` returns the texts and, per text, ``(kind, value)``.
    """

    KINDS = ("aws", "github", "slack", "pem", "jwt", "url_password", "assigned_password")

    def __init__(self, seed: int = 0) -> None:
        self.rng = random.Random(seed)

    def _s(self, n: int, alphabet: str) -> str:
        return "".join(self.rng.choice(alphabet) for _ in range(n))

    def value(self, kind: str) -> tuple[str, str]:
        """``(code line, secret value)``."""
        import base64
        import json as _json

        up, low, dig = "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz", "0123456789"
        b64 = up + low + dig + "+/"
        r = self.rng
        if kind == "aws":
            if r.random() < 0.5:
                v = r.choice(["AKIA", "ASIA"]) + self._s(16, up + "234567")
                return f'AWS_ACCESS_KEY_ID = "{v}"', v
            v = self._s(40, b64)
            return f'aws_secret_access_key = "{v}"', v
        if kind == "github":
            v = r.choice(["ghp_", "gho_", "ghs_"]) + self._s(36, up + low + dig)
            return f'GITHUB_TOKEN = "{v}"', v
        if kind == "slack":
            if r.random() < 0.5:
                v = f"xoxb-{self._s(11, dig)}-{self._s(13, dig)}-{self._s(24, low + up + dig)}"
                return f'client = WebClient(token="{v}")', v
            v = f"https://hooks.slack.com/services/T{self._s(8, up + dig)}/B{self._s(8, up + dig)}/{self._s(24, low + up)}"
            return f'WEBHOOK = "{v}"', v
        if kind == "pem":
            label = r.choice(["RSA PRIVATE KEY", "EC PRIVATE KEY", "PRIVATE KEY", "OPENSSH PRIVATE KEY"])
            body = "\n".join(self._s(64, b64) for _ in range(r.randint(3, 8)))
            v = f"-----BEGIN {label}-----\n{body}\n-----END {label}-----"
            return f'KEY = """{v}\n"""', v
        if kind == "jwt":
            def enc(obj: dict) -> str:
                return base64.urlsafe_b64encode(_json.dumps(obj).encode()).decode().rstrip("=")
            v = ".".join([enc({"alg": r.choice(["HS256", "RS256"]), "typ": "JWT"}),
                          enc({"sub": self._s(10, dig), "name": self._s(8, low), "iat": r.randrange(10**9, 2 * 10**9)}),
                          self._s(43, up + low + dig + "-_")])
            return f'headers = {{"Authorization": "Bearer {v}"}}', v
        if kind == "url_password":
            # RFC 3986 userinfo: unreserved characters; reserved ones must be percent-encoded
            v = self._s(r.randint(8, 16), low + up + dig + "-._~")
            if r.random() < 0.3:
                v += r.choice(["%21", "%40", "%2F", "%3A"]) + self._s(3, low + dig)
            scheme = r.choice(["postgres", "mysql", "mongodb", "redis", "amqp", "https"])
            return f'DATABASE_URL = "{scheme}://{self._s(6, low)}:{v}@db{r.randrange(9)}.internal:5432/app"', v
        if kind == "assigned_password":
            v = self._s(r.randint(10, 20), low + up + dig + "!#%&*")
            return r.choice([f'DB_PASSWORD = "{v}"', f"password: '{v}'", f'api_key = "{v}"']), v
        raise ValueError(f"unknown secret kind {kind!r}; valid: {list(self.KINDS)}")

    @staticmethod
    def material(value: str) -> list[str]:
        """The parts of ``value`` that must not survive redaction (the body lines of a PEM block)."""
        if value.startswith("-----BEGIN"):
            return [ln for ln in value.splitlines() if not ln.startswith("-----")]
        return [value]

    def plant_corpus(self, texts: Sequence[str], per_doc: int = 2) -> tuple[list[str], list[list[tuple[str, str]]]]:
        out_t, out_v = [], []
        for t in texts:
            lines = t.split("\n")
            vals = []
            for _ in range(per_doc):
                kind = self.rng.choice(self.KINDS)
                line, value = self.value(kind)
                lines.insert(self.rng.randrange(len(lines) + 1), line)
                vals.append((kind, value))
            out_t.append("\n".join(lines))
            out_v.append(vals)
        return out_t, out_v


class PIIFactory:
    """Realistic PII values (Faker, seeded) in the formats people write them."""

    TEMPLATES = {
        "EMAIL_ADDRESS": ["You can reach me at {v}.", "Contact: {v}", "Send questions to {v} before Friday."],
        "PHONE_NUMBER": ["Call {v} for details.", "Phone: {v}", "Reach the office at {v} any weekday."],
        "CREDIT_CARD": ["Card number: {v}", "Please charge {v} for the order."],
        "IBAN_CODE": ["Wire the amount to IBAN {v}.", "Account: {v}"],
        "US_SSN": ["SSN: {v}", "My social security number is {v}."],
        "IP_ADDRESS": ["The request came from {v} at noon.", "Server address: {v}"],
        "PERSON": ["Signed, {v}.", "Written by {v}."],
    }

    def __init__(self, seed: int) -> None:
        from faker import Faker

        self.fakers = {loc: Faker(loc) for loc in ("en_US", "en_GB", "de_DE")}
        for i, f in enumerate(self.fakers.values()):
            f.seed_instance(seed + i)
        self.rng = random.Random(seed)

    def _phone(self) -> str:
        import phonenumbers

        while True:
            kind = self.rng.random()
            if kind < 0.75:
                area = self.rng.randint(201, 989)
                exch = self.rng.randint(200, 999)
                line = self.rng.randint(0, 9999)
                fmt = self.rng.choice(["({a}) {e}-{l:04d}", "{a}-{e}-{l:04d}", "{a}.{e}.{l:04d}",
                                       "+1 {a} {e} {l:04d}", "+1-{a}-{e}-{l:04d}"])
                value = fmt.format(a=area, e=exch, l=line)
                region = "US"
            else:
                loc = self.rng.choice(["en_GB", "de_DE"])
                value = self.fakers[loc].phone_number()
                region = "GB" if loc == "en_GB" else "DE"
            try:
                if phonenumbers.is_valid_number(phonenumbers.parse(value, region)):
                    return value
            except phonenumbers.NumberParseException:
                pass

    def value(self, kind: str) -> str:
        us = self.fakers["en_US"]
        if kind == "EMAIL_ADDRESS":
            return us.email()
        if kind == "PHONE_NUMBER":
            return self._phone()
        if kind == "CREDIT_CARD":
            while True:
                num = us.credit_card_number(card_type=self.rng.choice(["visa16", "mastercard", "amex"]))
                if luhn_ok(num):
                    break
            return grouped16(num, self.rng, 0.4)
        if kind == "IBAN_CODE":
            return maybe_group4(self.fakers[self.rng.choice(["en_GB", "de_DE"])].iban(), self.rng, 0.4)
        if kind == "US_SSN":
            return us.ssn()
        if kind == "IP_ADDRESS":
            return ip_value(us, self.rng)
        if kind == "PERSON":
            return us.name()
        raise ValueError(kind)

    def inject(self, text: str, n: int) -> tuple[str, list[dict[str, Any]]]:
        """Insert ``n`` PII sentences at paragraph/sentence boundaries; return text and spans."""
        kinds = list(self.TEMPLATES)
        points = boundaries(text)
        chosen = sorted(self.rng.sample(points, min(n, len(points))), reverse=True)

        def snippet() -> tuple[str, str, str, str, dict[str, Any]]:
            kind = self.rng.choice(kinds)
            value = self.value(kind)
            before, _, after = self.rng.choice(self.TEMPLATES[kind]).partition("{v}")
            return kind, before, value, after, {}

        return insert_snippets(text, chosen, snippet)
