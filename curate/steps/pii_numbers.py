"""Numbers that are something else: what the PII step must not redact as a phone or card number.

``number_spans(text, lo, hi)`` returns ``(start, end, kind)`` for the numbers in ``text[lo:hi]``
that say what they are by their form or by the words before them:

* ``date``: day-month-year, month-day-year and year-month-day with ``.``, ``/`` or ``-``
  (``05.11.2023``, ``11/05/2023``, ``2023/11/05``), compact ``YYYYMMDD`` and ``YYYYMMDDhhmm[ss]``
  stamps (``20231105``, ``IMG_20231105_093012``), each checked for a real month and day;
* ``timestamp``: Unix time in seconds, milliseconds, micro- or nanoseconds (a bare ``1`` followed
  by 9, 12, 15 or 18 digits: 2001-09-09 to 2033-05-18), e.g. zsh ``: 1699999999:0;``,
  bash ``#1699999999``;
* ``version``: dotted numbers after ``v``/``version``/``==``/``@``, or with a Debian/semver
  revision (``4.19.0-18``, ``2.36-9+deb12u4``, ``1:2.3.4-1ubuntu1``);
* ``isbn``/``issn``/``doi``: ISBN-13 (978/979, check digit) and hyphenated ISBN-10 (check digit)
  anywhere, any ISBN or ISSN after its name, DOIs (``10.NNNN/...``);
* ``id``: identifiers with a letter prefix (``PO-2020-125807``, ``INV-2023-00042``, ``SO#1234567``);
* ``ref_number``: numbers after an order/invoice/ticket/tracking/bug word (``Order 123456789``,
  ``Closes: #1001961``) and ``#1234567`` references (a Luhn-valid card with an issuer prefix
  there is still a card);
* ``bare_number``/``quantity``: a run of 7-19 digits without any separator, not part of a longer
  punctuated number and not after a phone word; ``quantity`` when a count/size word stands before
  it or a unit after it;
* ``port_range``: ``8000-8100`` after a port word (port, dport, expose, listen, -p, range, ...);
* ``hex``: hashes, UUIDs, ``0x`` literals, hex strings with both letters and digits;
* ``decimal``: decimals with 5+ fractional digits (coordinates, measurements).

A phone word (``pii.phone_context``) right before a bare run of digits outranks ``timestamp``
and ``id`` (``call 1699999999``); the other kinds are settled by their form.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

_B = r"(?<![\w./:+\-])"  # not inside a larger token or number (a comma is a field separator)
_E = r"(?![\w]|[./:\-]\d)"
_DAY, _MONTH = r"(?:0?[1-9]|[12]\d|3[01])", r"(?:0?[1-9]|1[0-2])"
_YEAR = r"(?:1[5-9]|20)\d\d"
_DATES = re.compile(
    _B + rf"(?:{_DAY}(?P<s1>[./\-]){_MONTH}(?P=s1)(?:{_YEAR}|\d\d)|{_MONTH}(?P<s2>[./\-]){_DAY}(?P=s2)(?:{_YEAR}|\d\d)"
    rf"|{_YEAR}(?P<s3>[./\-]){_MONTH}(?P=s3){_DAY})" + _E
    # compact date, optionally with a time: 20231105, 20231105T093012, 20231105_0930, 20231105093012
    + rf"|(?<![\d.,]){_YEAR}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])(?:[T_\-]?(?:[01]\d|2[0-3])[0-5]\d(?:[0-5]\d)?)?"
    r"(?![\d]|[.,]\d)")
_TIMESTAMP = re.compile(r"(?<![\d.,+\-])1\d{9}(?:\d{3}|\d{6}|\d{9})?(?:\.\d+)?(?![\d])")
_VERSION = re.compile(
    r"(?:(?<![\w.])[vV]|(?<![A-Za-z])(?i:version|ver|release|rel|kernel|build)[\"']?[:=\s.\"']{1,5}|==|>=|<=|~=|!=|\^"
    r"|~|@|:(?:amd64|arm64|armhf|armel|i386|all|ppc64el|s390x|riscv64|mips64el) (?:<none> )?"  # dpkg/apt logs
    r"|(?m:^#{1,4} \[)"  # a changelog heading: "## [1.2.3] - 2024-01-05"
    r"|(?<![\w+.])[A-Za-z][\w+.]{0,60}[-_ ]\(|(?<![\w.\-/])[A-Za-z][\w.\-]{0,100}/[\w.\-/]{0,200}:)"  # pkg (1.2.3-4), registry/image:tag
    r"\s?\d+(?::\d+)?(?:\.\d+)+(?:[-+~][\w.+~:]*)?"
    r"|(?<![\w.+\-])\d+:\d+(?:\.\d+)+(?:-[\w.+~]+)?"  # epoch:version
    r"|(?<![\w.+\-])\d+(?:\.\d+){1,3}(?:-\d+[\w.+~]*|[+~][A-Za-z][\w.+~]*|-[A-Za-z][\w.+~]*)(?![\w])")
_ISBN_CTX = re.compile(r"(?i)\b(?:e?ISBN(?:-1[03])?|e?ISSN|p?ISSN|ISMN|EAN(?:-13)?|GTIN|UPC)[:#\s.]*"
                       r"(?:\(\w+\)\s*)?(?P<n>[\dX][\d\- X]{5,20}[\dX])", )
_ISBN13 = re.compile(r"(?<![\d\-])97[89](?:[- ]?\d){10}(?![\d\-])")
_ISBN10 = re.compile(r"(?<![\d\-])\d{1,5}-\d{1,7}-\d{1,7}-[\dX](?![\d\-])")
_DOI = re.compile(r"\b10\.\d{4,9}/[^\s\"'<>]+")
_ID = re.compile(r"(?<![\w\-])(?P<p>[A-Za-z]{1,8})[-_#/]?\d+(?:[-_/.]\d+)*(?![\w])")
_ID_WORDS = re.compile(
    r"(?i)\b(?:order|orders|invoice|inv|receipt|ticket|case|ref|reference|tracking|confirmation|transaction|txn"
    r"|booking|reservation|po|sku|item|part|serial|s/n|batch|lot|shipment|parcel|awb|claim|policy"
    r"|account|acct|pedido|bestellung|rechnung|commande|facture|factura|auftrag|job|build|run|pr|issue|bug"
    r"|pid|uid|gid|inode|id|closes|fixes|see)\b[\s.:#]*(?:(?:no|nr|num|number|id|#)\b[\s.:#]*)?$")
_PHONE_LETTERS = frozenset({"tel", "ph", "fax", "mob", "cell", "phone", "call", "sms", "x", "ext", "t", "f", "m"})
_PORTS = re.compile(r"(?<![\d.])(?P<a>\d{2,5})\s*(?:-|:|–|\s)\s*(?P<b>\d{2,5})(?![\d.])")
_PORT_WORDS = re.compile(r"(?i)(?:\bports?\b|\bdport\b|\bsport\b|\bexpose\b|\blisten\b|(?:^|\s)-p\b|--publish"
                         r"|\brange\b|\btcp\b|\budp\b|\bfirewall\b|\bmultiport\b|\bufw\b|\ballow\b)"
                         r"[^\n]{0,24}(?:\n[^\n]{0,24})?$")  # "ports:" may head a YAML list
# a number that is a count or a size: a word before it ("size=", "took") or a unit after it
_QUANTITY_BEFORE = re.compile(r"(?i)\b(?:size|bytes|len|length|count|total|sum|amount|qty|quantity|duration|elapsed"
                              r"|offset|seq|pid|uid|gid|inode|port|num|took|rows|records|lines|n)\s*[=:]?\s*$")
_UNIT_AFTER = re.compile(r"\s?(?i:bytes?|[kmgtp]i?b|ms|us|ns|µs|s|secs?|seconds|rows|records|lines|items|tokens|words"
                         r"|chars|characters|files|users|downloads|views|times|hits|requests)\b")
_BARE = re.compile(r"(?<![\w+./\-#])[1-9]\d{6,18}(?![\w]|\.\d)")  # a comma is a field separator here
_EAN13 = re.compile(r"(?<![\w+./\-#])0\d{12}(?![\w]|\.\d)")
_ID_NUMBER = re.compile(r"(?<![\w\-])#?\d[\d\-/]{4,}\d(?![\w])")
_HASH_REF = re.compile(r"(?<![\w&#])#\d{4,}(?![\w])")
_HEX = re.compile(r"(?<![\w\-])(?:0x[0-9a-fA-F]+|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
                  r"[0-9a-fA-F]{12}|(?=[0-9a-fA-F]*[a-fA-F])(?=[0-9a-fA-F]*\d)[0-9a-fA-F]{7,})(?![\w\-])")
_DECIMAL = re.compile(r"(?<![\d.])\d+\.\d{5,}(?![\d.])")


_PUNCT = " -./()\u00a0"
_DIGIT_DOT_DIGIT = re.compile(r"\d\.\d")
_SEVEN_DIGITS = re.compile(r"\d{7}")
_LETTER_DIGIT = re.compile(r"[A-Za-z][-_#/]?\d")  # an _ID's prefix letter, then its number


def _in_cluster(text: str, s: int, e: int) -> bool:
    """Is ``text[s:e]`` one group of a longer number (``+49 30 7359842``, ``(0)1214960966``)?"""
    i = s - 1
    while i >= max(0, s - 2) and text[i] in _PUNCT:
        i -= 1
    if i < s - 1 and i >= 0 and (text[i].isdigit() or text[i] == "+"):
        return True
    j = e
    while j < min(len(text), e + 2) and text[j] in _PUNCT:
        j += 1
    return e < j < len(text) and text[j].isdigit()


def _isbn10_ok(d: str) -> bool:
    if len(d) != 10 or not d[:9].isdigit():
        return False
    total = sum((10 - i) * int(c) for i, c in enumerate(d[:9])) + (10 if d[9] in "Xx" else int(d[9]))
    return total % 11 == 0


def _isbn13_ok(d: str) -> bool:
    return len(d) == 13 and d.isdigit() and sum((3 if i % 2 else 1) * int(c) for i, c in enumerate(d)) % 10 == 0


class NumberKinds:
    """Finds numbers that are dates, timestamps, versions, ids, ... (see the module docstring)."""

    def __init__(self, phone_words: re.Pattern[str], context_chars: int = 40) -> None:
        self._phone_words = phone_words
        self.context_chars = context_chars

    def phone_context(self, text: str, start: int) -> bool:
        """A phone word on the same line within ``context_chars`` before ``start``."""
        lo = max(0, start - self.context_chars)
        nl = text.rfind("\n", lo, start)
        return self._phone_words.search(text, nl + 1 if nl >= 0 else lo, start) is not None

    def versions(self, text: str, lo: int, hi: int) -> list[tuple[int, int, str]]:
        """The versions in ``text[lo:hi]`` (``pkg (1.2.5.1-2)``: a dotted quad that is no IP address)."""
        return [(m.start(), m.end(), "version") for m in _VERSION.finditer(text, lo, hi)]

    def spans(self, text: str, lo: int = 0, hi: int | None = None) -> list[tuple[int, int, str]]:
        """``(start, end, kind)`` of the numbers of ``text[lo:hi]`` that are not phone or card numbers."""
        hi = len(text) if hi is None else hi
        return sorted(self._find(text, lo, hi))

    def _find(self, text: str, lo: int, hi: int) -> Iterator[tuple[int, int, str]]:
        seg = text[lo:hi]  # cheap literal checks skip the patterns that cannot match here
        # necessary conditions of several patterns, each one search: a digit, a dot, a digit (every
        # version and decimal holds one); seven digits in a row (timestamps, bare runs, EAN-13)
        dot = _DIGIT_DOT_DIGIT.search(seg) is not None
        run = _SEVEN_DIGITS.search(seg) is not None
        for m in _DATES.finditer(text, lo, hi):
            yield m.start(), m.end(), "date"
        if run and "1" in seg:
            for m in _TIMESTAMP.finditer(text, lo, hi):
                if not self.phone_context(text, m.start()):
                    yield m.start(), m.end(), "timestamp"
        if dot:
            for m in _VERSION.finditer(text, lo, hi):
                yield m.start(), m.end(), "version"
        low = seg.lower()
        if "isbn" in low or "issn" in low or "ean" in low or "gtin" in low or "upc" in low or "ismn" in low:
            for m in _ISBN_CTX.finditer(text, lo, hi):
                yield m.start("n"), m.end("n"), "isbn"
        if "97" in seg:
            for m in _ISBN13.finditer(text, lo, hi):
                if _isbn13_ok(re.sub(r"\D", "", m.group(0))):
                    yield m.start(), m.end(), "isbn"
        if run and "0" in seg:
            for m in _EAN13.finditer(text, lo, hi):  # a national phone number is shorter
                if _isbn13_ok(m.group(0)):
                    yield m.start(), m.end(), "isbn"
        if "-" in seg:
            for m in _ISBN10.finditer(text, lo, hi):
                if _isbn10_ok(m.group(0).replace("-", "")):
                    yield m.start(), m.end(), "isbn"
            for m in _PORTS.finditer(text, lo, hi):
                a, b = int(m.group("a")), int(m.group("b"))
                if a <= b <= 65535 and _PORT_WORDS.search(text, max(0, m.start() - 40), m.start()):
                    yield m.start(), m.end(), "port_range"
        if "10." in seg:
            for m in _DOI.finditer(text, lo, hi):
                yield m.start(), m.end(), "doi"
        for m in _ID.finditer(text, lo, hi) if _LETTER_DIGIT.search(seg) else ():
            if m.group("p").lower() not in _PHONE_LETTERS and sum(c.isdigit() for c in m.group(0)) >= 5:
                yield m.start(), m.end(), "id"
        yield from self._bare_ids(text, lo, hi)
        for m in _HEX.finditer(text, lo, hi):
            yield m.start(), m.end(), "hex"
        if "#" in seg:
            for m in _HASH_REF.finditer(text, lo, hi):
                yield m.start(), m.end(), "ref_number"
        for m in _BARE.finditer(text, lo, hi) if run else ():
            # a run of digits without separators: only a phone word makes it a phone number
            s, e = m.span()
            if self.phone_context(text, s) or _in_cluster(text, s, e):
                continue
            quantity = _QUANTITY_BEFORE.search(text, max(0, s - 12), s) or _UNIT_AFTER.match(text, e)
            yield s, e, "quantity" if quantity else "bare_number"
        if dot:
            for m in _DECIMAL.finditer(text, lo, hi):
                yield m.start(), m.end(), "decimal"

    def _bare_ids(self, text: str, lo: int, hi: int) -> Iterator[tuple[int, int, str]]:
        """A number right after an order/invoice/ticket word (``Invoice No. 2023004512``)."""
        for m in _ID_NUMBER.finditer(text, lo, hi):
            s, e = m.span()
            if _ID_WORDS.search(text, max(0, s - 30), s) and not self.phone_context(text, s):
                yield s, e, "ref_number"


