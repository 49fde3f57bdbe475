"""Numbers named by their context: SSNs after a word that names them, and table columns.

``ContextNumbers.spans(text, low)`` returns ``(start, end, type, score)``:

* ``US_SSN`` (score 0.6): nine digits with or without separators (``078-05-1121``,
  ``078 05 1121``, ``078051121``) with an SSN word (``pii.ssn_context``: SSN, Social Security
  No., ``"ssn":``) on the same line within ``context_chars`` before them;
* cells of CSV / TSV / ``;`` / ``|`` tables under a header that names their content, down to the
  table's end (a blank line): ``US_SSN`` under an SSN header (``ssn``, ``customer_ssn``,
  ``Social Security Number``), ``CREDIT_CARD`` (score 0.8) under a card header (Luhn-valid 12-19
  digits, any issuer), ``PHONE_NUMBER`` (score 0.46) under a phone header (7-15 digits in phone
  punctuation, with an extension).

SSNs that presidio's ``UsSsnRecognizer`` rejects (area 000/666, group 00, serial 0000, one repeated
digit, published samples) are not SSNs here either.
"""

from __future__ import annotations

import re

from curate.steps.gate_scan import folded, literal
from curate.steps.pii_recognizers import luhn_ok

_SSN = re.compile(r"(?<![\w\-./])\d{3}(?P<s>[- .]?)\d{2}(?P=s)\d{4}(?![\d]|[\-./]\d)")
_DELIMS = (",", ";", "\t", "|")
_CARD_HEADER = re.compile(r"(?i)(?<![^\W\d_])(?:card|cc|pan|visa|mastercard|amex|credit[ _]?card)(?![^\W\d_])")
_PHONE_HEADER = re.compile(r"(?i)(?<![^\W\d_])(?:phone|tel|telephone|mobile|cell|fax|msisdn|contact[ _]?number"
                           r"|phone[ _]?number|whatsapp)(?![^\W\d_])")
_PHONE_CELL = re.compile(r"^\s*[\"']?(\+?[\d()][\d()\-. /]{5,22}\d(?:\s*(?:ext\.?|x|#)\s*\d{1,6})?)[\"']?\s*$",
                         re.IGNORECASE)
_CARD_CELL = re.compile(r"^\s*[\"']?(\d[\d -]{10,22}\d)[\"']?\s*$")
_MAX_HEADER = 2000
_CELL_EDGE = ",;\t|\n\r"
_HEADER_WORDS = ("ssn", "soc", "ss#", "ss no", "card", "cc", "pan", "visa", "master", "amex", "phone", "tel", "mobile",
                 "cell", "fax", "msisdn", "whatsapp", "contact")


class ContextNumbers:
    """SSNs, cards and phones named by a word before them or by their table column's header."""

    def __init__(self, ssn_words: tuple[str, ...] | list[str], context_chars: int = 40) -> None:
        from presidio_analyzer.predefined_recognizers import UsSsnRecognizer

        self._words = tuple(ssn_words)
        alts = "|".join(re.escape(w) for w in sorted(ssn_words, key=len, reverse=True))
        self._ssn_words = re.compile(rf"(?<![^\W\d_])(?:{alts})(?![^\W\d_])", re.IGNORECASE)
        self.context_chars = context_chars
        self._invalid = UsSsnRecognizer().invalidate_result

    def gate_patterns(self) -> dict[str, str]:
        """Gates for ``curate.steps.gate_scan.GateScan`` on the lower-cased text: ``@ssn`` (a superset
        of the SSN words; open when a word is not ASCII, whose case folds differ) and ``@header``
        (a header word: without one no column is named)."""
        words = [w.lower() for w in self._words]
        # the words' regex has no letter on either side of a match; no character but a letter
        # lower-cases to an ASCII letter, so none stands there in the lower-cased text either
        ssn = (r"(?:^|[^a-z])(?:" + "|".join(folded(w) for w in words) + r")(?:[^a-z]|$)"
               if all(w.isascii() for w in words) and words else r"[\x00-\xff]")
        return {"@ssn": ssn, "@header": "|".join(literal(w) for w in _HEADER_WORDS)}

    def spans(self, text: str, low: str, clusters: list[tuple[int, int]] | None = None,
              present: frozenset[str] | None = None) -> list[tuple[int, int, str, float]]:
        """``clusters``: where the digit runs are (the PII step's candidates); only their lines are
        looked at as table rows. ``None``: every line. ``present``: the gates of ``gate_patterns``
        found in ``low`` (``None``: look everywhere)."""
        out: list[tuple[int, int, str, float]] = []
        if (present is None or "@ssn" in present) and (
                "ssn" in low or "social s" in low or "soc" in low and "sec" in low or "ss#" in low or "ss no" in low) \
                and self._ssn_words.search(text):
            for m in _SSN.finditer(text):
                lo = max(0, m.start() - self.context_chars)
                nl = text.rfind("\n", lo, m.start())
                if not self._invalid(m.group(0)) and self._ssn_words.search(text, nl + 1 if nl >= 0 else lo, m.start()):
                    out.append((m.start(), m.end(), "US_SSN", 0.6))
        if present is not None and "@header" not in present:
            return sorted(set(out))
        if clusters is None:
            clusters = [(m.start(), m.end()) for m in re.finditer(r"\d{3}", text)]
        out += self._columns(text, clusters)
        return sorted(set(out))

    def _kind(self, header_cell: str) -> str | None:
        cell = header_cell.strip().strip("\"'").replace("_", " ")
        if self._ssn_words.search(cell) or self._ssn_words.search(header_cell):
            return "US_SSN"
        if _CARD_HEADER.search(cell):
            return "CREDIT_CARD"
        if _PHONE_HEADER.search(cell):
            return "PHONE_NUMBER"
        return None

    def _cell(self, kind: str, text: str, s: int, e: int) -> list[tuple[int, int, str, float]]:
        cell = text[s:e]
        if kind == "US_SSN":
            return [(m.start(), m.end(), kind, 0.6) for m in _SSN.finditer(text, s, e) if not self._invalid(m.group(0))]
        if kind == "CREDIT_CARD":
            m = _CARD_CELL.match(cell)
            digits = re.sub(r"\D", "", m.group(1)) if m else ""
            return [(s + m.start(1), s + m.end(1), kind, 0.8)] if m and 12 <= len(digits) <= 19 and luhn_ok(digits) else []
        m = _PHONE_CELL.match(cell)
        n = sum(c.isdigit() for c in m.group(1).split("x")[0]) if m else 0
        return [(s + m.start(1), s + m.end(1), kind, 0.46)] if m and 7 <= n <= 15 else []

    def _columns(self, text: str, clusters: list[tuple[int, int]]) -> list[tuple[int, int, str, float]]:
        """Cells of columns whose header names SSNs, cards or phones: the rows are the delimited
        lines holding a digit cluster, the header the first line of their block (lines up to a blank
        line). Blocks and headers are found once each, in one pass over the text."""
        out: list[tuple[int, int, str, float]] = []
        n = len(text)
        block_start, scanned = 0, 0  # start of the current block; blank lines searched up to here
        headers: dict[int, tuple[str | None, dict[int, str]]] = {}
        done_line = -1
        for cs, ce in sorted(clusters):
            # a table cell starts after a delimiter (or the line start) and ends before one
            i = cs - 1
            while i >= 0 and text[i] in " \"'+(":
                i -= 1
            j = ce
            while j < n and text[j] in " \"')":
                j += 1
            if not ((i < 0 or text[i] in _CELL_EDGE) and (j >= n or text[j] in _CELL_EDGE or text[j] in "xX#e")):
                continue
            r = text.rfind("\n", scanned, cs)  # no newline since the last line start: the same line
            ls = r + 1 if r >= 0 else scanned
            if ls == done_line:
                continue
            done_line = ls
            blank = text.rfind("\n\n", scanned, ls)
            if blank >= 0:
                block_start = blank + 2
            scanned = ls
            if block_start not in headers:
                he = text.find("\n", block_start)
                header = text[block_start:n if he < 0 else he]
                low = header.lower()
                delim = next((d for d in _DELIMS if d in header), None) \
                    if len(header) <= _MAX_HEADER and any(w in low for w in _HEADER_WORDS) else None
                kinds = {k: kind for k, c in enumerate(header.split(delim)) if (kind := self._kind(c))} if delim else {}
                headers[block_start] = (delim, kinds)
            delim, kinds = headers[block_start]
            if not kinds or ls == block_start:
                continue
            le = text.find("\n", ls)
            le = n if le < 0 else le
            start = ls
            for k, cell in enumerate(text[ls:le].split(delim)):
                if k in kinds:
                    out += self._cell(kinds[k], text, start, start + len(cell))
                start += len(cell) + 1
        return out
