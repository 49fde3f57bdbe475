"""The building blocks of the PII evaluation set (:mod:`curate.evaluation.pii_eval`): a labelled document
built piece by piece (:class:`Doc`) and the values planted into it (:class:`Values`: Faker for
everything Faker makes, the providers' published formats for tokens). The file shapes that use
them are :mod:`curate.evaluation.pii_eval_shapes`."""

from __future__ import annotations

import base64
import json
import random
import string
from typing import Any

from curate.evaluation.planters import grouped16, luhn_check_digit, maybe_group4

Span = dict[str, Any]
UP, LOW, DIG = string.ascii_uppercase, string.ascii_lowercase, string.digits
ALNUM, B64, B64URL, HEX = UP + LOW + DIG, UP + LOW + DIG + "+/", UP + LOW + DIG + "-_", "0123456789abcdef"


class Doc:
    """A document built piece by piece, with labelled spans at exact offsets."""

    def __init__(self, kind: str) -> None:
        self.kind, self.parts, self.spans, self.n = kind, [], [], 0

    def add(self, text: str, **label: Any) -> Doc:
        if label:
            self.spans.append({"start": self.n, "end": self.n + len(text), **label})
        self.parts.append(text)
        self.n += len(text)
        return self

    def line(self, *pieces: str | tuple[str, dict]) -> Doc:
        for p in pieces:
            if isinstance(p, tuple):
                self.add(p[0], **p[1])
            else:
                self.add(p)
        return self.add("\n")

    def out(self) -> dict[str, Any]:
        return {"kind": self.kind, "text": "".join(self.parts), "spans": self.spans}


class Values:
    """Values: Faker for everything Faker makes, the providers' published formats for tokens."""

    def __init__(self, seed: int) -> None:
        from faker import Faker

        self.r = random.Random(seed)
        self.fk = Faker(["en_US", "de_DE", "fr_FR", "en_GB", "es_ES", "it_IT", "nl_NL", "pt_BR"])
        self.fk.seed_instance(seed)
        self.us = Faker("en_US")
        self.us.seed_instance(seed + 1)

    def s(self, n: int, alphabet: str) -> str:
        return "".join(self.r.choice(alphabet) for _ in range(n))

    def password(self) -> str:
        r, fk = self.r, self.us
        pick = r.random()
        if pick < 0.5:
            return fk.password(length=r.randint(8, 22), special_chars=r.random() < 0.7)
        if pick < 0.8:  # what people choose: a word, digits, a symbol
            return f"{fk.word().capitalize()}{r.randint(1, 9999)}{r.choice(['', '!', '#', '$', '*', '?', '.'])}"
        return self.s(r.randint(12, 32), ALNUM)

    # provider formats: (family, value); prefixes and lengths as the providers document them
    def token(self, family: str) -> str:
        r, s = self.r, self.s
        if family == "aws_key_id":
            return r.choice(["AKIA", "ASIA"]) + s(16, UP + "234567")
        if family == "aws_secret":
            return s(40, B64)
        if family == "github":
            if r.random() < 0.5:
                return "github_pat_" + s(22, ALNUM) + "_" + s(59, ALNUM)
            return r.choice(["ghp_", "gho_", "ghs_", "ghu_"]) + s(36, ALNUM)
        if family == "gitlab":
            return "glpat-" + s(20, ALNUM + "-_")
        if family == "google":
            return "AIza" + s(35, ALNUM + "-_") if r.random() < 0.8 else "GOCSPX-" + s(28, ALNUM + "-_")
        if family == "slack":
            if r.random() < 0.6:
                return f"xox{r.choice('bpa')}-{s(12, DIG)}-{s(13, DIG)}-{s(24, LOW + DIG)}"
            return f"https://hooks.slack.com/services/T{s(8, UP + DIG)}/B{s(10, UP + DIG)}/{s(24, ALNUM)}"
        if family == "stripe":
            return r.choice(["sk_live_", "rk_live_", "sk_test_"]) + s(r.choice([24, 99]), ALNUM)
        if family == "openai":
            if r.random() < 0.5:
                return "sk-proj-" + s(74, ALNUM + "-_") + "T3BlbkFJ" + s(74, ALNUM + "-_")
            return "sk-" + s(20, ALNUM) + "T3BlbkFJ" + s(20, ALNUM)
        if family == "anthropic":
            return "sk-ant-api03-" + s(93, ALNUM + "-_") + "AA"
        if family == "huggingface":
            return "hf_" + s(34, UP + LOW)
        if family == "npm":
            return "npm_" + s(36, ALNUM)
        if family == "pypi":
            return "pypi-AgEIcHlwaS5vcmc" + s(r.randint(70, 150), B64URL)
        if family == "sendgrid":
            return f"SG.{s(22, B64URL)}.{s(43, B64URL)}"
        if family == "twilio":
            return r.choice(["AC", "SK"]) + s(32, HEX)
        if family == "azure":
            return s(3, ALNUM) + r.choice(DIG) + "Q~" + s(34, ALNUM + "_~.-")
        if family == "digitalocean":
            return r.choice(["dop_v1_", "doo_v1_"]) + s(64, HEX)
        if family == "shopify":
            return r.choice(["shpat_", "shpca_", "shppa_"]) + s(32, HEX)
        if family == "databricks":
            return "dapi" + s(32, HEX)
        if family == "hashicorp":
            return "hvs." + s(r.randint(90, 100), ALNUM + "_-")
        if family == "discord":
            return r.choice("MNO") + s(23, ALNUM) + "." + s(6, B64URL) + "." + s(27, B64URL)
        if family == "telegram":
            return f"{r.randint(10 ** 8, 10 ** 10 - 1)}:AA{s(33, B64URL)}"
        if family == "mailchimp":
            return s(32, HEX) + f"-us{r.randint(1, 21)}"
        if family == "jwt":
            def enc(o: dict) -> str:
                return base64.urlsafe_b64encode(json.dumps(o).encode()).decode().rstrip("=")
            return ".".join([enc({"alg": r.choice(["HS256", "RS256"]), "typ": "JWT"}),
                             enc({"sub": self.us.user_name(), "iat": r.randint(1_500_000_000, 1_800_000_000)}), s(43, B64URL)])
        if family == "generic":
            return s(r.choice([32, 40, 48, 64]), r.choice([ALNUM, HEX, B64URL]))
        raise ValueError(f"unknown family {family!r}")

    def pem(self) -> str:
        label = self.r.choice(["RSA PRIVATE KEY", "EC PRIVATE KEY", "PRIVATE KEY", "OPENSSH PRIVATE KEY"])
        body = "\n".join(self.s(64, B64) for _ in range(self.r.randint(4, 12)))
        return f"-----BEGIN {label}-----\n{body}\n-----END {label}-----"

    def luhn(self, prefix: str, n: int) -> str:
        body = prefix + "".join(str(self.r.randrange(10)) for _ in range(n - len(prefix) - 1))
        return body + luhn_check_digit(body)

    def card(self) -> str:
        return grouped16(self.us.credit_card_number(), self.r, 0.3)

    def iban(self) -> str:
        if self.r.random() < 0.25:  # Luxembourg: 3-digit bank code, 13 alphanumerics
            bban = self.s(3, DIG) + self.s(13, DIG + UP)
            n = int("".join(str(int(c, 36)) for c in bban + "LU00"))
            iban = f"LU{98 - n % 97:02d}{bban}"
        else:
            iban = self.fk.iban()
        return maybe_group4(iban, self.r, 0.5)

    def ssn(self, sep: bool) -> str:
        v = self.us.ssn()
        return v if sep else v.replace("-", "")

    def date(self, fmt: str | None = None) -> str:
        fmt = fmt or self.r.choice(["%d.%m.%Y", "%m/%d/%Y", "%d/%m/%Y", "%Y-%m-%d", "%Y/%m/%d", "%d-%m-%Y",
                                    "%Y%m%d", "%Y.%m.%d"])
        return self.when().strftime(fmt)

    def when(self) -> Any:
        """A moment between 1995 and 2026 (fixed bounds: the same seed gives the same documents any day)."""
        import datetime as dt

        return dt.datetime(1995, 1, 1) + dt.timedelta(seconds=self.r.randrange(32 * 365 * 86400))

    def version(self) -> str:
        r = self.r
        base = ".".join(str(r.randint(0, x)) for x in (r.choice([2, 9, 24, 2023]), 40, r.choice([20, 999, 19045])))
        return base + r.choice(["", f"-{r.randint(1, 30)}", f"-{r.randint(1, 9)}+deb12u{r.randint(1, 9)}",
                                f".{r.randint(100, 9999)}", f"-{r.randint(1, 5)}ubuntu{r.randint(1, 3)}"])

    def timestamp(self) -> str:
        t = self.r.randint(1_000_000_000, 1_990_000_000)
        return str(t) if self.r.random() < 0.6 else str(t * 1000 + self.r.randint(0, 999))

    def issn(self) -> str:
        d = [self.r.randrange(10) for _ in range(7)]
        c = (11 - sum((8 - i) * x for i, x in enumerate(d)) % 11) % 11
        return "".join(map(str, d[:4])) + "-" + "".join(map(str, d[4:])) + ("X" if c == 10 else str(c))

    def negative(self, kind: str) -> str:
        r, fk = self.r, self.us
        return {
            "date": self.date, "timestamp": self.timestamp, "version": self.version,
            "isbn10": fk.isbn10, "isbn13": fk.isbn13, "issn": self.issn, "ean13": fk.ean13,
            "doi": lambda: f"10.{r.randint(1000, 99999)}/{fk.bothify(r.choice(['????.####.#####', 's#####-###-####-#', 'j.####.##.###']))}",
            "order_id": lambda: fk.bothify(r.choice(["PO-####-######", "INV-####-#####", "ORD-########", "SO#########",
                                                     "RMA-#######", "CASE-########"])),
            "port_range": lambda: (lambda a: f"{a}-{a + r.randint(10, 999)}")(r.randint(1024, 60000)),
            "hash": lambda: r.choice([fk.sha1, fk.md5, fk.sha256, lambda: fk.sha1()[:r.randint(7, 12)]])(),
            "uuid": fk.uuid4,
            "luhn_invalid": lambda: (lambda n: n[:-1] + str((int(n[-1]) + r.randint(1, 9)) % 10))(self.luhn("4", 16)),
            "byte_count": lambda: str(r.randint(10 ** 6, 10 ** 11)),
            "bare_order_number": lambda: str(r.randint(10 ** 6, 10 ** 10)),
        }[kind]()
