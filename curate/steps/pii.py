"""PII and secret redaction with presidio-analyzer, offline, behind a cheap candidate prefilter.

``PIIRedactor`` replaces every detected e-mail address, phone number, card number, IBAN, US SSN,
IP address, optional PERSON and (``pii.secrets``) secret (``curate.steps.secrets``) with a typed
placeholder (``<EMAIL_ADDRESS>``, ``<SECRET_AWS_KEY>``, ...), in ``text`` and in the other string
columns (``pii.other_columns``), and adds ``pii_spans`` (``{start, end, type}`` on the ORIGINAL
text) and ``pii_counts`` (JSON ``{type: n}``). Detected values never reach the logs. Recognizers:
presidio's plus those of ``curate.steps.pii_recognizers``, ``pii_numbers`` and ``pii_tables``, in
one registry (``curate.steps.pii_engine``). Documents without candidates (compiled regexes) never
reach presidio; otherwise presidio sees windows around the candidates, and offsets are mapped back.
What is detected, the prefilter and the PERSON options: docs/pii.md.

Run it through ``corpusmix curate pii --input docs.parquet --output out.parquet`` or chain the step
in an engine; it is a datatrove ``PipelineStep`` like every curation step.
"""

from __future__ import annotations

import bisect
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from datatrove.data import Document

from corpusmix.columns import LABELS
from corpusmix.config import ConfigError
from curate.steps.base import Annotator
from curate.steps.pii_context import CARD_CONTEXT, PHONE_CONTEXT, SSN_CONTEXT
from curate.steps.pii_engine import build_analyzer, build_person_analyzer, offline_email_recognizer
from curate.steps.registry import step

__all__ = ["ALL_TYPES", "PATTERN_TYPES", "PIIConfig", "PIIRedactor", "build_analyzer", "build_person_analyzer",
           "offline_email_recognizer", "redact", "resolve_overlaps"]

PATTERN_TYPES = ("EMAIL_ADDRESS", "PHONE_NUMBER", "CREDIT_CARD", "IBAN_CODE", "US_SSN", "IP_ADDRESS")
ALL_TYPES = (*PATTERN_TYPES, "PERSON")

# Candidate scans. Each pattern starts with a literal or a narrow class, so that the regex engine
# skips prose at C speed (a single alternation of named groups has no such prefix and ran ~7x
# slower). Digit clusters: >= 7 digits separated by at most 4 characters of libphonenumber's
# phone punctuation (the separators its matcher accepts; card, SSN and IBAN separators are a
# subset), which covers phones, cards, SSNs and IBAN tails; dotted quads (IPv4); two digits + 4
# alphanumerics (IBAN head; two letters on its left are checked in code); two colons around a hex
# group (IPv6); an ``@`` followed by a domain character (e-mail).
_PHONE_PUNCT = "\\-x\u2010-\u2015\u2212\u30fc\uff0d-\uff0f \u00a0\u00ad\u200b\u2060\u3000()\uff08\uff09\uff3b\uff3d.\\[\\]/~\u2053\u223c\uff5e"
_DIGITS = re.compile(
    rf"\d(?:(?P<digits>(?:[{_PHONE_PUNCT}]{{0,4}}\d){{6,}})"
    r"|(?P<quad>\d{0,2}\.\d{1,3}\.\d{1,3}\.\d{1,3})"
    r"|(?P<iban>\d[ -]?[A-Za-z0-9]{4}))")
# libphonenumber's extension suffixes (" ext. 12", "x123", "#45"): a phone window reaches past
# the cluster only over one of these
_EXTENSION = re.compile(r"[ \t,]*(?:e?xt(?:ensi[oó]n)?n?|x|#|~|int)[:.]?[ \t,-]*\d{1,9}#?", re.IGNORECASE)
# A cluster that is exactly an ISO date never holds a phone for presidio: its matcher found none
# in any date 1950-2049 (as "on 2023-02-05 we" and "(2023-02-05),"; tests recheck a sample).
# Dates are the most common 8-digit cluster in real text (man page footers, changelogs).
_ISO_DATE = re.compile(r"(?:19[5-9]|20[0-4])\d-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])"
                       # year ranges ("1732-1799", "(c) 1993-2009") in prose and licence headers
                       r"|(?:1[5-9]|20)\d\d[-\u2013](?:1[5-9]|20)\d\d")
_SHAPES = (("US_SSN", re.compile(r"\d{3}[- .]?\d{2}[- .]?\d{4}|\d{5}-\d{4}|\d{3}-\d{6}")),
           ("IP_ADDRESS", re.compile(r"\d\.\d{1,3}\.\d{1,3}\.\d")),
           ("IBAN_CODE", re.compile(r"[A-Za-z]{2}\d{2}")))
_AT = re.compile(r"@[\w.-]")
_SPACE = re.compile(r"\s")
_LAST_SPACE = re.compile(r"\s(?=\S*\Z)")  # the last whitespace before a search's endpos
_IBAN_TAIL = re.compile(r"(?:[ -]?[A-Za-z0-9]{1,4}){0,8}")
_COLONS = re.compile(r":[0-9A-Fa-f]{0,4}:")
_PHONE_SCORE = 0.4  # presidio's PhoneRecognizer.SCORE
_SSN_CONTEXT_SCORE = 0.6  # above any phone (0.45) and presidio's SSN pattern (0.5), below a card (1.0)
_COLUMN_PHONE_SCORE = 0.46  # a phone under a phone column header (curate.steps.pii_tables)
# which kinds of number (curate.steps.pii_numbers) a detection of each type is dropped over: a
# run of digits without separators is a phone only next to a phone word, but may be a card, and a
# Luhn-valid card with an issuer prefix after "ref." or "order" is still a card
_NOT_PHONE = frozenset({"date", "timestamp", "version", "isbn", "doi", "id", "ref_number", "port_range", "hex",
                        "decimal", "quantity", "bare_number"})
_DROPPED_OVER = {"PHONE_NUMBER": _NOT_PHONE, "CREDIT_CARD": _NOT_PHONE - {"quantity", "bare_number", "ref_number"},
                 "US_SSN": _NOT_PHONE - {"bare_number"}, "IP_ADDRESS": frozenset({"version"})}


def _drop_other_numbers(found: list[tuple[int, int, str, float]],
                        numbers: list[tuple[int, int, str]]) -> list[tuple[int, int, str, float]]:
    """``found`` less the detections that overlap a number of another kind (a date, a version, an
    id); context SSNs and column phones, named as such by the text, stay."""
    merged = {t: _disjoint([(s, e) for s, e, k in numbers if k in kinds]) for t, kinds in _DROPPED_OVER.items()}
    out = []
    for f in found:
        if f[2] in merged and not (f[2] == "US_SSN" and f[3] >= _SSN_CONTEXT_SCORE) \
                and not (f[2] == "PHONE_NUMBER" and f[3] >= _COLUMN_PHONE_SCORE) and _overlaps(f, merged[f[2]]):
            continue
        out.append(f)
    return out


_TOKEN_START = re.compile(r"\S{0,64}\Z")
_TOKEN_END = re.compile(r"\S{0,64}")


def _token_regions(text: str, spans: list[tuple[int, int]], before: int = 24) -> list[tuple[int, int]]:
    """``spans`` widened to their whitespace-delimited tokens (at most 64 characters more on each
    side) and ``before`` characters to the left (a "version " or "ISBN " prefix), merged."""
    out = []
    for s, e in spans:
        m = _TOKEN_START.search(text, max(0, s - 64), s)
        s2 = m.start() if m else s
        e2 = _TOKEN_END.match(text, e).end()  # type: ignore[union-attr]
        out.append((max(0, s2 - before), e2))
    return _disjoint(out)


def _disjoint(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The union of ``spans`` as sorted, disjoint intervals."""
    out: list[tuple[int, int]] = []
    for s, e in sorted(spans):
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


def _overlaps(span: tuple[int, int, str, float], merged: list[tuple[int, int]]) -> bool:
    """Does ``span`` overlap one of the sorted disjoint ``merged`` intervals (binary search)?"""
    i = bisect.bisect_right(merged, (span[1], -1)) - 1  # the last interval starting before span's end
    return i >= 0 and merged[i][1] > span[0]


@dataclass
class PIIConfig:
    """Configuration of ``PIIRedactor`` (params.yaml section ``pii``)."""

    entities: list[str] = field(default_factory=lambda: list(PATTERN_TYPES),
                                metadata={"help": "PII types to redact"})
    min_score: float = field(default=0.3, metadata={"help": "presidio score threshold (weak SSN "
                                                            "patterns score 0.05, phone 0.4)"})
    margin: int = field(default=8, metadata={"help": "characters of context around a candidate"})
    max_snap: int = field(default=128, metadata={"help": "max chars a window edge moves to reach whitespace"})
    phone_regions: list[str] = field(default_factory=lambda: ["US", "GB", "DE", "FR", "IL", "IN", "CA", "BR"],
                                     metadata={"help": "phone regions (presidio's default list)"})
    person_model: str | None = field(default=None, metadata={
        "help": "PERSON detector: an installed spaCy model (name or folder), or census-names (the name lists "
                "shipped in curate/models/names); none = no PERSON"})
    phone_context: list[str] = field(default_factory=lambda: list(PHONE_CONTEXT), metadata={
        "help": "words that make a 7-15 digit run before which they stand a phone number"})
    card_context: list[str] = field(default_factory=lambda: list(CARD_CONTEXT), metadata={
        "help": "words that make a Luhn-valid 12-19 digit run with an unknown issuer a card number"})
    context_chars: int = field(default=40, metadata={"help": "how far before a number context words count"})
    ssn_context: list[str] = field(default_factory=lambda: list(SSN_CONTEXT), metadata={
        "help": "words that make a 9-digit number (separators optional) before which, or in whose table "
                "column header, they stand an SSN"})
    number_kinds: bool = field(default=True, metadata={
        "help": "never redact dates, timestamps, versions, ISBN/ISSN/DOI, order ids, port ranges, hashes "
                "as phone or card numbers (curate.steps.pii_numbers)"})
    secrets: bool = field(default=True, metadata={"help": "also redact secrets (API keys, tokens, private "
                                                          "keys, passwords) with detect-secrets"})
    other_columns: bool = field(default=True, metadata={"help": "also redact the other string columns "
                                                                 "(all but domain/lang/labels)"})
    prefilter: bool = field(default=True, metadata={"help": "analyse candidate windows only "
                                                            "(false = whole text, presidio's speed)"})

    def __post_init__(self) -> None:
        bad = sorted(set(self.entities) - set(ALL_TYPES))
        if bad:
            raise ConfigError(f"pii.entities: unknown type(s) {bad}; valid: {list(ALL_TYPES)}")
        if self.context_chars < 0 or self.margin < 0:
            raise ConfigError("pii.context_chars and pii.margin must be >= 0")
        if "PERSON" in self.entities and not self.person_model:
            raise ConfigError("pii.entities has PERSON but pii.person_model is not set; set it to "
                              "census-names, an installed spaCy model (e.g. en_core_web_sm), or remove PERSON")


def resolve_overlaps(spans: list[tuple[int, int, str, float]]) -> list[tuple[int, int, str]]:
    """Keep a non-overlapping subset: higher score first, then longer, then earlier."""
    kept: list[tuple[int, int, str]] = []
    taken: list[tuple[int, int]] = []  # sorted, disjoint: one binary search per span
    for s, e, t, _ in sorted(set(spans), key=lambda x: (-x[3], -(x[1] - x[0]), x[0], x[2])):
        i = bisect.bisect_left(taken, (s, -1))
        if (i < len(taken) and taken[i][0] < e) or (i > 0 and taken[i - 1][1] > s):
            continue
        kept.append((s, e, t))
        taken.insert(i, (s, e))
    return sorted(kept)


def redact(text: str, spans: list[tuple[int, int, str]]) -> str:
    """Replace each (sorted, non-overlapping) span by ``<TYPE>``."""
    out, pos = [], 0
    for s, e, t in spans:
        out.append(text[pos:s])
        out.append(f"<{t}>")
        pos = e
    out.append(text[pos:])
    return "".join(out)


def _gaps(text: str, span: tuple[int, int], covered: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Parts of ``span`` outside the sorted disjoint ``covered`` spans that hold at least 7 digits."""
    out, pos = [], span[0]
    first = max(0, bisect.bisect_right(covered, (span[0], -1)) - 1)  # earlier intervals end before span
    for s, e in [*covered[first:bisect.bisect_left(covered, (span[1], -1))], (span[1], span[1])]:
        if e <= pos or s > span[1]:
            continue
        if s > pos and sum(c.isdigit() for c in text[pos:min(s, span[1])]) >= 7:
            out.append((pos, min(s, span[1])))
        pos = max(pos, e)
        if pos >= span[1]:
            break
    return out


# string columns that hold labels, not free text: never redacted (``domain`` names output files)
# label columns (fixed sets of names, not free text) are left as they are: corpusmix.columns.LABELS
_STRUCTURAL = frozenset(LABELS)


@step("pii", config=PIIConfig, section="pii", order=80, stage="b")
class PIIRedactor(Annotator):
    """Redact PII in ``doc.text``; add ``pii_spans`` (original offsets) and ``pii_counts``."""

    step_name = "pii"
    name = "🔏 PII redactor"
    columns = ("pii_spans", "pii_counts")

    def __init__(self, config: PIIConfig | None = None) -> None:
        super().__init__()
        self.cfg = config or PIIConfig()
        self._types = [t for t in self.cfg.entities if t in PATTERN_TYPES]
        self._analyzers: dict[str, Any] = {}
        self._person: Any = None
        self._secrets: Any = None
        self._numbers: Any = None
        self._ssn: Any = None
        self._gates: Any = None
        self.type_counts: Counter[str] = Counter()

    # heavy objects are built on first use: steps are pickled to worker processes by the engines
    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_analyzers"] = {}
        state["_person"] = None
        state["_secrets"] = None
        state["_numbers"] = None
        state["_ssn"] = None
        state["_gates"] = None
        return state

    def engine(self, part: str) -> Any:
        """presidio ``AnalyzerEngine`` ``all``, ``cheap`` or ``matcher`` (see ``build_analyzer``)."""
        if part not in self._analyzers:
            self._analyzers[part] = build_analyzer(self.cfg, part=part)
        return self._analyzers[part]

    @property
    def analyzer(self) -> Any:
        return self.engine("all")

    @property
    def secrets(self) -> Any:
        if self._secrets is None:
            from curate.steps.secrets import SecretsDetector

            self._secrets = SecretsDetector(extra_gates=self._gate_patterns())
        return self._secrets

    def lowered(self, text: str) -> tuple[str, frozenset[str]]:
        """``text`` lower-cased at the same offsets and the gates found in it: one compiled pass for
        the SSN/table gates and, with ``pii.secrets``, every secrets gate."""
        if self.cfg.secrets:
            return self.secrets.lowered(text)
        if self._gates is None:
            from curate.steps.gate_scan import GateScan

            self._gates = GateScan(self._gate_patterns())
        return self._gates.lowered(text)

    def _gate_patterns(self) -> dict[str, str]:
        """The PII step's gates on the lower-cased text: the SSN/table ones, ``@`` (an e-mail
        candidate's) and a colon group (``_COLONS``, whose hex digits lower-case to a-f)."""
        return {**self._number_parts()[1].gate_patterns(), "@": "@", "@colons": ":[0-9a-f]{0,4}:"}

    def _number_parts(self) -> tuple[Any, Any]:
        if self._numbers is None:
            from curate.steps.pii_numbers import NumberKinds
            from curate.steps.pii_recognizers import _context_re
            from curate.steps.pii_tables import ContextNumbers

            self._numbers = NumberKinds(_context_re(tuple(self.cfg.phone_context)), self.cfg.context_chars)
            self._ssn = ContextNumbers(self.cfg.ssn_context, self.cfg.context_chars)
        return self._numbers, self._ssn

    def not_pii_numbers(self, text: str, wins: list[tuple[int, int]]) -> list[tuple[int, int, str]]:
        """Dates, timestamps, versions, ids, ... inside ``wins`` (``curate.steps.pii_numbers``)."""
        numbers, _ = self._number_parts()
        if len(wins) > 8 and sum(e - s for s, e in wins) > len(text) // 4:
            # windows cover much of the text: one pass over it costs less than a pass per window
            return numbers.spans(text, wins[0][0], wins[-1][1])
        return [sp for ws, we in wins for sp in numbers.spans(text, ws, we)]

    def _merge(self, text: str, spans: list[tuple[int, int, int]], right: int) -> list[tuple[int, int]]:
        """Widen spans ``(start, end, left)`` by ``left``/``right`` chars, snap outwards to
        whitespace, merge overlaps."""
        n, snap = len(text), self.cfg.max_snap
        out: list[tuple[int, int]] = []
        for s, e, left in sorted(spans):
            ws, we = max(0, s - left), min(n, e + right)
            # snap to whitespace so no token is cut: presidio's \b and lookarounds then see the
            # same neighbours as on the full text
            # (regex scans in C: the same whitespace as str.isspace, found without a Python loop)
            lo = max(0, ws - snap)
            if ws > lo and not text[ws - 1].isspace():
                m = _LAST_SPACE.search(text, lo, ws)
                ws = m.end() if m else lo
            hi = min(n, we + snap)
            if we < hi and not text[we].isspace():
                m = _SPACE.search(text, we, hi)
                we = m.start() if m else hi
            if out and ws <= out[-1][1]:
                out[-1] = (out[-1][0], max(out[-1][1], we))
            else:
                out.append((ws, we))
        return out

    def windows(self, text: str, present: frozenset[str] | None = None
                ) -> tuple[list[tuple[int, int]], list[tuple[int, int]], set[str]]:
        """Candidates on ``text``: ``(windows for the cheap recognizers, digit clusters, types)``.

        ``types`` are the PII types the candidates can hold (an ``@`` only an e-mail, a dotted
        quad or colon group only an IP, a digit cluster any numeric type): the cheap pass asks
        presidio for those only.

        The regex recognizers (e-mail, card, IBAN, SSN, IP) are cheap and run on windows around
        every candidate (a digit cluster may hold an IBAN tail or an IP). libphonenumber's matcher
        costs ~0.1 ms per candidate and region, so it only sees the digit clusters (with a following
        extension such as `` ext. 12``; see ``detect``).
        """
        cands: list[tuple[int, int]] = []
        digit_cands: list[tuple[int, int]] = []
        phones: list[tuple[int, int]] = []
        types: set[str] = set()
        pos = 0
        while (m := _DIGITS.search(text, pos)) is not None:
            g = m.lastgroup
            s, e = m.span()
            pos = e
            if g == "iban":
                if not (s >= 2 and text[s - 2:s].isalpha() and text[s - 2:s].isascii()):
                    # not an IBAN head ("e476 GB26" in an IPv6 address): look again one character
                    # on, or the head right after it ("26 GUAM") would be swallowed
                    pos = s + 1
                    continue
                s -= 2
                types.add("IBAN_CODE")
                # the window reaches over the whole IBAN, whose account part may hold letters
                # ("LU28 001A BC12 ...": no digit cluster covers it)
                cands.append((s, _IBAN_TAIL.match(text, e).end()))  # type: ignore[union-attr]
                continue
            elif g == "quad":
                types.add("IP_ADDRESS")
            elif not _ISO_DATE.fullmatch(text, s, e):
                ext = _EXTENSION.match(text, e)
                phones.append((s, ext.end() if ext else e))
                digit_cands.append((s, ext.end() if ext else e))
                types.update(("PHONE_NUMBER", "CREDIT_CARD"))
                # presidio's SSN, IP and IBAN patterns need these shapes inside the cluster (an IBAN
                # its country letters just before it): the cheap pass skips them otherwise
                for t, rx in _SHAPES:
                    if t not in types and rx.search(text, max(0, s - 2), e):
                        types.add(t)
                continue
            # else: an ISO date or a year range (see _ISO_DATE), no phone and no IP address; its
            # window is kept for the other candidates' types (every IP address presidio finds holds
            # a dotted quad or a colon group, and those add IP_ADDRESS themselves)
            cands.append((s, e))
        # (``present``: the gates of ``lowered(text)``; no "@" or colon group there, no candidate)
        at = [m.span() for m in _AT.finditer(text)] if present is None or "@" in present else []
        colons = [m.span() for m in _COLONS.finditer(text)] if present is None or "@colons" in present else []
        types.update(["EMAIL_ADDRESS"] if at else [])
        types.update(["IP_ADDRESS"] if colons else [])
        cands += at + colons
        m_ = self.cfg.margin
        # digit clusters take ``context_chars`` of left context: the card and phone recognizers
        # read context words that far before a number
        ctx = max(m_, self.cfg.context_chars)
        wins = self._merge(text, [*((s, e, ctx) for s, e in digit_cands), *((s, e, m_) for s, e in cands)], m_)
        return wins, phones, types

    def _analyze(self, text: str, wins: list[tuple[int, int]], types: list[str],
                 found: list[tuple[int, int, str, float]], part: str) -> None:
        """Run presidio on ``wins`` joined by blank lines; map results back to ``text``."""
        if not wins or not types:
            return
        # the separator is longer than the context reach, so no window reads context words of
        # the window before it (which the whole text holds further away)
        sep = "\n" + " " * self.cfg.context_chars + "\n"
        joined = sep.join(text[s:e] for s, e in wins)
        offsets, pos = [], 0
        for s, e in wins:
            offsets.append(pos)
            pos += e - s + len(sep)
        for r in self.engine(part).analyze(joined, language="en", entities=types):
            i = bisect.bisect_right(offsets, r.start) - 1
            ws, we = wins[i]
            s, e = ws + r.start - offsets[i], min(we, ws + r.end - offsets[i])
            if e > s:
                found.append((s, e, r.entity_type, r.score))

    def detect(self, text: str) -> list[tuple[int, int, str]]:
        """Sorted, non-overlapping ``(start, end, type)`` PII spans on ``text``."""
        found: list[tuple[int, int, str, float]] = []
        numbers: list[tuple[int, int, str]] = []
        lowered = self.lowered(text)  # one lower-casing and gate scan for every pass below
        if not self.cfg.prefilter:
            self._analyze(text, [(0, len(text))], self._types, found, "all")
            if self.cfg.number_kinds:
                numbers = self.not_pii_numbers(text, [(0, len(text))])
            self._context_ssn(text, found, lowered=lowered)
        elif self._types:
            wins, clusters, kinds = self.windows(text, lowered[1])
            self._analyze(text, wins, [t for t in self._types if t in kinds], found, "cheap")
            if clusters:
                self._context_ssn(text, found, clusters, lowered)
            if self.cfg.number_kinds and (clusters or any(f[2] == "IP_ADDRESS" for f in found)):
                # the windows that hold a digit cluster or a detection a number of another kind
                # can overrule (a dotted quad may be a version)
                # the tokens holding a digit cluster or a detection that a number of another kind can
                # overrule (a dotted quad may be a version), with the words just before them
                # (a cluster written as a phone number, "+" first or a phone word before it, needs no look)
                nk, _ = self._number_parts()
                todo = [(cs, ce) for cs, ce in clusters if "+" not in text[max(0, cs - 2):cs]
                        and not nk.phone_context(text, cs)]
                numbers = self.not_pii_numbers(text, _token_regions(text, todo)) if todo else []
                ips = [(f[0], f[1]) for f in found if f[2] == "IP_ADDRESS"]
                if ips:  # an IP is only ever overruled by a version
                    numbers += [sp for lo, hi in _token_regions(text, ips) for sp in nk.versions(text, lo, hi)]
            if "PHONE_NUMBER" in self._types and clusters:
                # A span that outscores any phone (validated card/IBAN 1.0, IP 0.6, SSN 0.5, a
                # context phone 0.45 > libphonenumber's 0.4) wins against every phone match that
                # overlaps it in resolve_overlaps, and a number of another kind (a date, a
                # version, an order id) is no phone, so the matcher only needs the parts of each
                # cluster outside those spans, and only parts that still hold 7+ digits.
                strong = _disjoint([(s, e) for s, e, _, sc in found if sc > _PHONE_SCORE]
                                   + [(s, e) for s, e, _ in numbers])
                clusters = [g for c in clusters for g in _gaps(text, c, strong)]
                # 2 chars of left context (``+ ``/``( ``); the right edge is the cluster's (with its
                # extension) snapped to the end of its token
                self._analyze(text, self._merge(text, [(s, e, 2) for s, e in clusters], 0), ["PHONE_NUMBER"],
                              found, "matcher")
        if numbers:
            found = _drop_other_numbers(found, numbers)
        if "PERSON" in self.cfg.entities:
            if self._person is None:
                self._person = build_person_analyzer(self.cfg.person_model or "", self.cfg.min_score)
            for r in self._person.analyze(text, language="en", entities=["PERSON"]):
                found.append((r.start, r.end, "PERSON", r.score))
        if self.cfg.secrets:
            # secrets outrank every PII type: a key that looks like a phone is redacted as a key
            found += [(s, e, t, 2.0) for s, e, t in self.secrets.detect(text, lowered)]
        return resolve_overlaps(found)

    def _context_ssn(self, text: str, found: list[tuple[int, int, str, float]],
                     clusters: list[tuple[int, int]] | None = None,
                     lowered: tuple[str, frozenset[str]] | None = None) -> None:
        """SSNs named by a word or a column header (separators optional, above every phone), cards
        and phones in columns whose header names them (``curate.steps.pii_tables``)."""
        _, ctx = self._number_parts()
        low, present = lowered or self.lowered(text)
        found += [sp for sp in ctx.spans(text, low, clusters, present) if sp[2] in self._types]

    def filter(self, doc: Document) -> bool | tuple[bool, str]:
        if not isinstance(doc.text, str):
            return False, "no_text"
        return super().filter(doc)

    def annotate(self, doc: Document) -> None:
        text = doc.text
        spans = self.detect(text)
        counts = Counter(t for _, _, t in spans)
        if self.cfg.other_columns:
            # every other free-text column carried forward (title, url, source, ...) is redacted
            # too; its values are counted with the text's, its spans are not kept (pii_spans are
            # offsets on ``text``)
            for key, value in list(doc.metadata.items()):
                if isinstance(value, str) and key not in _STRUCTURAL and value:
                    found = self.detect(value)
                    if found:
                        counts.update(t for _, _, t in found)
                        doc.metadata[key] = redact(value, found)
        self.type_counts.update(counts)
        for t, n in counts.items():
            self.stat_update(f"pii_{t}", value=n)
        doc.metadata["pii_spans"] = [{"start": s, "end": e, "type": t} for s, e, t in spans]
        doc.metadata["pii_counts"] = json.dumps(dict(sorted(counts.items())))
        if spans:
            doc.text = redact(text, spans)
