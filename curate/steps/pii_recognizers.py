"""presidio recognizers for card numbers and phone numbers as people write them.

presidio's own recognizers miss formats that occur in real text: card numbers of 12-19 digits
(Maestro, UnionPay, 19-digit Visa, Mastercard's 2-series), phone numbers whose area code
libphonenumber rejects although the text presents them as a phone number ("call", "tel:"), NANP
numbers with ``001-`` prefixes, dotted groups or ``x123`` extensions. The two recognizers here are
ordinary presidio ``EntityRecognizer`` classes, registered in the same ``RecognizerRegistry`` as
presidio's (``curate.steps.pii.build_analyzer``), so presidio's ``AnalyzerEngine`` runs them on the
whole text exactly as the prefiltered path runs them on candidate windows.

* ``CardRecognizer``: a plain or space/dash-grouped run of 12-19 digits that passes Luhn and
  starts with an issuer prefix of the public IIN table at a length that issuer uses (score 1.0);
  with a card word (``card``, ``visa``, ``carte``, ...) within ``context_chars`` before it, Luhn
  alone is enough (score 0.8).
* ``ContextPhoneRecognizer``: a run of 7-15 digits joined by phone punctuation, with an optional
  extension (``x123``, ``ext. 12``, ``#45``), is a phone number (score 0.45) when (a) a phone word
  (configurable: ``call``, ``phone``, ``tel``, ``reach``, ``mobile``, ...) occurs within
  ``context_chars`` before it, or (b) it is written internationally (``+`` and a country code
  libphonenumber knows, or a ``00``/``011`` prefix), or (c) it has the NANP shape with
  separators (``555-123-4567``, ``(555) 123.4567``, ``001-555-123-4567``) whatever the area
  code. Everything else is left to presidio's libphonenumber ``PhoneRecognizer``.

Both recognizers look at ``context_chars`` characters before a candidate only, so a window that
starts ``context_chars`` before the candidate sees what the whole text shows them.
"""

from __future__ import annotations

import re
from typing import Any

from presidio_analyzer import EntityRecognizer, RecognizerResult

from curate.steps.pii_context import CARD_CONTEXT, PHONE_CONTEXT

# Issuer prefixes and lengths from the public IIN table (ISO/IEC 7812 registrations as listed by
# the networks: Visa, Mastercard incl. 2221-2720, Amex, Diners 300-305/3095/36/38/39, Discover
# 6011/644-649/65/622126-622925, JCB 3528-3589 and 2131/1800, UnionPay 62, Maestro 50/56-69,
# RuPay 60/65/81/82/508, Mir 2200-2204, Troy 9792, Humo 9860, Uzcard 8600, UATP 1).
# ``(low, high, lengths)``: the number's first len(str(low)) digits lie in [low, high].
_ISSUERS: tuple[tuple[int, int, frozenset[int]], ...] = (
    (4, 4, frozenset({13, 16, 19})),                      # Visa (incl. Electron)
    (51, 55, frozenset({16})),                            # Mastercard
    (2221, 2720, frozenset({16})),                        # Mastercard 2-series
    (2200, 2205, frozenset({16, 17, 18, 19})),            # Mir, Borica
    (34, 34, frozenset({15})), (37, 37, frozenset({15})),  # American Express
    (300, 305, frozenset({14, 15, 16, 17, 18, 19})),      # Diners Club
    (3095, 3095, frozenset({14, 15, 16, 17, 18, 19})),
    (36, 36, frozenset({14, 15, 16, 17, 18, 19})),
    (38, 39, frozenset({14, 16, 17, 18, 19})),
    (35, 35, frozenset({16, 17, 18, 19})),                # JCB 3528-3589, RuPay-JCB 353/356, LankaPay 357
    (31, 31, frozenset({19})),                            # China T-Union
    (2131, 2131, frozenset({15})), (1800, 1800, frozenset({15})),  # JCB 15-digit
    (1, 1, frozenset({15})),                              # UATP
    (50, 50, frozenset(range(12, 20))), (56, 69, frozenset(range(12, 20))),  # Maestro, Discover, UnionPay
    (81, 82, frozenset({16})), (8600, 8600, frozenset({16})),  # RuPay, Uzcard
    (9792, 9792, frozenset({16})), (9860, 9860, frozenset({16})),  # Troy, Humo
)

# a comma on either side is a CSV field separator, never a thousands separator: 12-19 digits are
# not a 3-digit group
_CARD = re.compile(r"(?<![\w.+/-])(\d{4}([ -])\d{2,7}(?:\2\d{1,7}){0,3}|\d{12,19})(?![\w/]|[.-]\d)")
# digits joined by phone punctuation; optional international head; optional extension
_PHONE = re.compile(
    r"(?<![\w.+/-])(?:\+ ?|\(\+?)?\d(?:[ \-.()/\u00a0\u2010-\u2015]{0,3}\d){6,18}\)?"
    r"(?:[ \t,]*(?:ext(?:ension)?\.?|extn\.?|x|#|доб\.?)[ \t:]*\d{1,6})?(?![\w+]|[.,]\d)",
    re.IGNORECASE)
_NANP = re.compile(r"(?:\+?1[ .-]?|001[ .-]?)?(?:\(\d{3}\) ?|\d{3}([.-]))\d{3}(?(1)\1|[.-])\d{4}")
_INTL_PREFIX = re.compile(r"(?:00|011)[ -]?[1-9]")
_EXT = re.compile(r"[ \t,]*(?:ext(?:ension)?\.?|extn\.?|x|#|доб\.?)[ \t:]*\d{1,6}$", re.IGNORECASE)
_DATE = re.compile(r"\d{4}[-./]\d{1,2}[-./]\d{1,2}|\d{1,2}[-./]\d{1,2}[-./]\d{2,4}|\d{4}[-/]\d{4}|\d{1,2}:\d{2}")


def luhn_ok(digits: str) -> bool:
    """The Luhn checksum of a string of digits (any Unicode digits)."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch) * (2 if i % 2 else 1)
        total += d - 9 if d > 9 else d
    return total % 10 == 0


def issuer_ok(digits: str) -> bool:
    """True when ``digits`` start with a known issuer prefix at a length that issuer uses."""
    n = len(digits)
    for low, high, lengths in _ISSUERS:
        k = len(str(low))
        if n in lengths and low <= int(digits[:k]) <= high:
            return True
    return False


def _context_re(words: tuple[str, ...] | list[str]) -> re.Pattern[str]:
    # a word boundary on the left only: "phone:" and "tel." count, "telescope" does not (the
    # right edge must be a non-letter)
    alts = "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))
    return re.compile(rf"(?<![^\W\d_])(?:{alts})(?![^\W\d_])", re.IGNORECASE)


class _Base(EntityRecognizer):
    ENTITY = ""

    def __init__(self, *, context_words: tuple[str, ...] | list[str], context_chars: int, name: str) -> None:
        self.context_chars = context_chars
        self._ctx = _context_re(tuple(context_words))
        super().__init__(supported_entities=[self.ENTITY], name=name, supported_language="en")

    def load(self) -> None:  # nothing to load: regexes only
        pass

    def has_context(self, text: str, start: int) -> bool:
        return self._ctx.search(text, max(0, start - self.context_chars), start) is not None

    def _result(self, s: int, e: int, score: float) -> RecognizerResult:
        return RecognizerResult(self.ENTITY, s, e, score)


class CardRecognizer(_Base):
    """Luhn-valid card numbers of 12-19 digits with a known issuer prefix, or any prefix next to
    a card word."""

    ENTITY = "CREDIT_CARD"

    def __init__(self, *, context_words: tuple[str, ...] | list[str] = CARD_CONTEXT, context_chars: int = 40) -> None:
        super().__init__(context_words=context_words, context_chars=context_chars, name="CardRecognizer")

    def analyze(self, text: str, entities: list[str], nlp_artifacts: Any = None) -> list[RecognizerResult]:
        out = []
        for m in _CARD.finditer(text):
            digits = re.sub(r"\D", "", m.group(1))
            if not 12 <= len(digits) <= 19 or not luhn_ok(digits):
                continue
            if issuer_ok(digits):
                out.append(self._result(m.start(1), m.end(1), 1.0))
            elif self.has_context(text, m.start(1)):
                out.append(self._result(m.start(1), m.end(1), 0.8))
        return out


class ContextPhoneRecognizer(_Base):
    """Phone numbers shown as such by the words before them, an international prefix, or the
    NANP shape; with extensions."""

    ENTITY = "PHONE_NUMBER"
    SCORE = 0.45  # above libphonenumber's 0.4 (this span has the extension), below an SSN's 0.5

    def __init__(self, *, context_words: tuple[str, ...] | list[str] = PHONE_CONTEXT, context_chars: int = 40,
                 min_digits: int = 7, max_digits: int = 15) -> None:
        super().__init__(context_words=context_words, context_chars=context_chars, name="ContextPhoneRecognizer")
        self.min_digits, self.max_digits = min_digits, max_digits

    def is_phone(self, text: str, s: int, e: int) -> bool:
        import phonenumbers

        cand = text[s:e]
        ext = _EXT.search(cand)
        body = cand[:ext.start()] if ext else cand
        digits = "".join(c for c in body if c.isdigit())
        if not self.min_digits <= len(digits) <= self.max_digits or _DATE.fullmatch(body.strip("()")):
            return False
        if self.has_context(text, s):
            return True
        if body.startswith(("+", "(+")):
            try:
                return phonenumbers.is_possible_number(phonenumbers.parse("+" + digits, None))
            except phonenumbers.NumberParseException:
                return False
        if _INTL_PREFIX.match(body) and len(digits) >= 10:
            return True  # international call prefix and a country code: no date, id or amount starts so
        return _NANP.fullmatch(body) is not None

    def analyze(self, text: str, entities: list[str], nlp_artifacts: Any = None) -> list[RecognizerResult]:
        out = []
        pos = 0
        while (m := _PHONE.search(text, pos)) is not None:
            s, e = m.span()
            pos = e
            if text[e - 1] == ")" and "(" not in text[s:e]:
                e -= 1  # "(call 555-123-4567)": the closing bracket is the sentence's
            if self.is_phone(text, s, e):
                out.append(self._result(s, e, self.SCORE))
                continue
            # two numbers written next to each other ("+55 21 90708-6736 115-20-8862") form one
            # run: try the run cut at its spaces, longest first, and rescan after the cut
            for cut in sorted((i for i in range(s + 1, e) if text[i] == " "), reverse=True):
                if self.is_phone(text, s, cut):
                    out.append(self._result(s, cut, self.SCORE))
                    pos = cut
                    break
        return out
