"""PII detection metrics and a planted PII evaluation set.

* ``score_pii(pred_spans, true_spans)`` compares predicted and true spans document by document and
  returns per-type precision / recall (and an ``ALL`` row where a true span counts as found when
  ANY predicted span overlaps it, i.e. the value was redacted whatever its label).
* ``PIIPlanter`` inserts realistic PII values (Faker, fixed seed) into real text at sentence or
  line boundaries and returns the exact spans: the evaluation set of ``bench/bench_pii.py`` and
  ``tests/curate/test_pii.py``. Phone numbers are kept only when libphonenumber says they are
  valid for their country (unassigned area codes are not phone numbers people write).

A prediction matches a true span when both have the same type and overlap; each true span and
each prediction is matched at most once. ``exact`` counts matches with identical offsets.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Sequence
from typing import Any

Span = dict[str, Any]  # {"start": int, "end": int, "type": str, ...}


def _overlap(a: Span, b: Span) -> bool:
    return a["start"] < b["end"] and b["start"] < a["end"]


def score_pii(pred_spans: Sequence[Sequence[Span]], true_spans: Sequence[Sequence[Span]], *,
              total_bytes: int | None = None, types: Iterable[str] | None = None) -> dict[str, dict[str, float]]:
    """Per-type ``tp, fp, fn, exact, precision, recall`` (+ ``fp_per_mb`` given ``total_bytes``).

    ``pred_spans[i]`` and ``true_spans[i]`` are the spans of document ``i``. ``types`` restricts
    scoring to those types (e.g. leave out PERSON when no NER model ran).
    """
    if len(pred_spans) != len(true_spans):
        raise ValueError(f"pred_spans has {len(pred_spans)} documents, true_spans {len(true_spans)}; "
                         "pass one span list per document, in the same order")
    if types is not None:
        keep = set(types)
        pred_spans = [[p for p in doc if p["type"] in keep] for doc in pred_spans]
        true_spans = [[t for t in doc if t["type"] in keep] for doc in true_spans]
    stats: dict[str, dict[str, float]] = {}

    def row(t: str) -> dict[str, float]:
        return stats.setdefault(t, {"tp": 0, "fp": 0, "fn": 0, "exact": 0})

    any_found = any_total = 0
    for preds, trues in zip(pred_spans, true_spans, strict=True):
        used: set[int] = set()
        for t in trues:
            hit = next((j for j, p in enumerate(preds)
                        if j not in used and p["type"] == t["type"] and _overlap(p, t)), None)
            r = row(t["type"])
            if hit is None:
                r["fn"] += 1
            else:
                used.add(hit)
                r["tp"] += 1
                r["exact"] += int(preds[hit]["start"] == t["start"] and preds[hit]["end"] == t["end"])
            any_total += 1
            any_found += int(any(_overlap(p, t) for p in preds))
        for j, p in enumerate(preds):
            if j not in used:
                row(p["type"])["fp"] += 1
    for r in stats.values():
        r["precision"] = r["tp"] / (r["tp"] + r["fp"]) if r["tp"] + r["fp"] else 1.0
        r["recall"] = r["tp"] / (r["tp"] + r["fn"]) if r["tp"] + r["fn"] else 1.0
        if total_bytes:
            r["fp_per_mb"] = r["fp"] / (total_bytes / 1e6)
    tot = {k: sum(r[k] for r in stats.values()) for k in ("tp", "fp", "fn", "exact")}
    tot["precision"] = tot["tp"] / (tot["tp"] + tot["fp"]) if tot["tp"] + tot["fp"] else 1.0
    tot["recall"] = tot["tp"] / (tot["tp"] + tot["fn"]) if tot["tp"] + tot["fn"] else 1.0
    tot["redacted_any_type"] = any_found / any_total if any_total else 1.0
    if total_bytes:
        tot["fp_per_mb"] = tot["fp"] / (total_bytes / 1e6)
    stats["ALL"] = tot
    return stats


def _luhn_ok(num: str) -> bool:
    total = 0
    for i, c in enumerate(reversed([int(c) for c in num if c.isdigit()])):
        d = c * 2 if i % 2 else c
        total += d - 9 if d > 9 else d
    return total % 10 == 0


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
            assert _luhn_ok(num), num
            if len(num) == 16 and r.random() < 0.4:
                sep = r.choice([" ", "-"])
                num = sep.join(num[i:i + 4] for i in range(0, 16, 4))
            return num
        if kind == "IBAN_CODE":
            iban = self.fakers[r.choice(["en_GB", "de_DE", "fr_FR"])].iban()
            return " ".join(iban[i:i + 4] for i in range(0, len(iban), 4)) if r.random() < 0.4 else iban
        if kind == "US_SSN":
            return us.ssn()
        if kind == "IP_ADDRESS":
            return us.ipv4_public() if r.random() < 0.7 else us.ipv6()
        raise ValueError(f"unknown PII type {kind!r}; valid: {list(self.TEMPLATES)}")

    def plant(self, text: str, n: int) -> tuple[str, list[Span]]:
        """Insert ``n`` PII snippets at line or sentence boundaries; return the text and spans."""
        points = [m.end() for m in re.finditer(r"\n|[.!?] ", text)] or [len(text)]
        chosen = sorted(self.rng.choices(points, k=n), reverse=True)
        spans: list[Span] = []
        for pos in chosen:  # from the end, so earlier offsets stay valid
            kind = self.rng.choice(self.types)
            value = self.value(kind)
            before, _, after = self.rng.choice(self.TEMPLATES[kind]).partition("{v}")
            snippet = before + value + after + " "
            text = text[:pos] + snippet + text[pos:]
            for s in spans:
                s["start"] += len(snippet)
                s["end"] += len(snippet)
            start = pos + len(before)
            spans.append({"start": start, "end": start + len(value), "type": kind, "value": value})
        spans.sort(key=lambda s: s["start"])
        return text, spans

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
