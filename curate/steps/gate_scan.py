"""One compiled pass per text that says which of many gate patterns occur in it.

The PII and secrets passes guard their regex work with cheap necessary conditions ("the text holds
``password``", "a whitespace-free run of 20 bytes"): a detector whose condition is absent cannot
match, so it is skipped. Checked one by one in Python that is ~100 substring scans per document.
``GateScan`` compiles every condition into one Hyperscan database (Intel's multi-pattern regex
engine, the ``hyperscan`` wheel) and scans the lower-cased text once: ``present(low)`` is the set
of the names whose pattern matches somewhere.

The patterns are bytes patterns of the subset both engines read the same way (literals, classes,
bounded repeats, alternation; no look-around, no back-references) over the text's UTF-8 bytes, so
where ``hyperscan`` cannot be imported each pattern is searched with Python's ``re`` on the same
bytes and the answer is the same set (``tests/curate/test_gate_scan.py`` checks both engines
agree). A gate only ever says "may match": every detector still runs its own exact check, so the
detections do not depend on the engine. Matching is exact (no CPU-dependent result): Hyperscan
picks its code path by CPU at run time, its answers do not.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

_BUILD_LOCK = threading.Lock()


def _hyperscan() -> Any:
    try:
        import hyperscan
    except ImportError:  # a platform without the wheel: the re fallback gives the same answers
        return None
    return hyperscan


class GateScan:
    """``present(text)``: the names of ``patterns`` (name -> bytes-regex source) found in ``text``."""

    def __init__(self, patterns: Mapping[str, str], *, engine: str = "auto", open_on_re: Iterable[str] = ()) -> None:
        """``open_on_re``: names reported present without a search on the ``re`` engine (patterns
        Python's backtracking would take quadratic time on, as ``a[^\\n]*b`` on a long line; an
        open gate only means the detector runs its own check)."""
        self.names = tuple(patterns)
        self.open_on_re = frozenset(open_on_re)
        self.sources = tuple(patterns[n] for n in self.names)
        if engine not in ("auto", "hyperscan", "re"):
            raise ValueError(f"GateScan engine {engine!r}: choose auto, hyperscan or re")
        self.engine = engine
        self._db: Any = None
        self._compiled: list[re.Pattern[bytes]] | None = None
        self._always: frozenset[str] = frozenset()
        self._local = threading.local()
        self._hs: Any = None

    def __getstate__(self) -> dict[str, Any]:  # a compiled database does not pickle: rebuilt on use
        return {**self.__dict__, "_db": None, "_compiled": None, "_always": frozenset(), "_local": None, "_hs": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._local = threading.local()

    def _scratch(self) -> Any:
        """This thread's Hyperscan scratch space (a scratch serves one scan at a time: two threads
        sharing one get ``ScratchInUseError``)."""
        scratch = getattr(self._local, "scratch", None)
        if scratch is None:
            scratch = self._local.scratch = self._hs.Scratch(self._db)
        return scratch

    def _build(self) -> None:
        with _BUILD_LOCK:  # threads sharing a scan build it once
            if self._db is None and self._compiled is None:
                self._compile()

    def _compile(self) -> None:
        hs = _hyperscan() if self.engine != "re" else None
        if hs is None:
            if self.engine == "hyperscan":
                raise RuntimeError("GateScan engine 'hyperscan': the hyperscan package is not installed")
            self._always = frozenset(n for n in self.names if n in self.open_on_re)
            self._compiled = [re.compile(s.encode(), re.DOTALL) for s in self.sources]
            return
        db = hs.Database(mode=hs.HS_MODE_BLOCK)
        n = len(self.sources)
        db.compile(expressions=[s.encode() for s in self.sources], ids=list(range(n)), elements=n,
                   flags=[hs.HS_FLAG_SINGLEMATCH | hs.HS_FLAG_DOTALL] * n)
        self._hs = hs
        self._db = db  # last: other threads take a set _db as built

    @property
    def uses_hyperscan(self) -> bool:
        if self._db is None and self._compiled is None:
            self._build()
        return self._db is not None

    def lowered(self, text: str) -> tuple[str, frozenset[str]]:
        """``(low, present)``: ``text`` lower-cased at the same offsets and the gates found in it.
        U+0130 (the one character whose lower case is two) is kept as it stands, and then every
        gate is reported present: the supersets are written for texts that keep their length."""
        if "\u0130" in text:
            return "".join(c if c == "\u0130" else c.lower() for c in text), frozenset(self.names)
        low = text.lower()
        return low, self.present(low)

    def present(self, text: str) -> frozenset[str]:
        """Names whose pattern occurs in ``text`` (searched in its UTF-8 bytes; lone surrogates
        are encoded as they stand, so no text is refused)."""
        if self._db is None and self._compiled is None:
            self._build()
        data = text.encode("utf-8", "surrogatepass")
        names = self.names
        if self._db is None:
            assert self._compiled is not None
            always = self._always
            return always | frozenset(names[i] for i, rx in enumerate(self._compiled)
                                      if names[i] not in always and rx.search(data))
        hits: list[int] = []
        self._db.scan(data, match_event_handler=_collect, context=hits, scratch=self._scratch())
        return frozenset(names[i] for i in hits)


def _collect(pid: int, start: int, end: int, flags: int, hits: list[int]) -> None:
    hits.append(pid)


def literal(word: str) -> str:
    """A bytes-regex source matching ``word`` as it stands."""
    return "".join(f"\\x{b:02x}" if not (chr(b).isalnum() and b < 128) else chr(b) for b in word.encode())


# bytes classes of the lower-cased text's UTF-8 that hold every character Python's ``\s`` and
# ``\w`` hold there (ASCII as Python reads it; any non-ASCII byte for the rest)
SPACE = r"(?:[\x09-\x0d\x1c-\x20]|[\x80-\xff])"
WORD = r"(?:[a-z0-9_]|[\x80-\xff])"


def folded(word: str) -> str:
    """A bytes-regex source matching, in lower-cased text, what ``word`` (lower-case ASCII) matches
    under ``re.IGNORECASE``: Python also lets ``s`` match U+017F and ``i`` match U+0131, which stay
    as they are when lower-cased (U+212A K lower-cases to ``k``, U+0130 changes the text's length)."""
    extra = {"s": r"\xc5\xbf", "i": r"\xc4\xb1"}
    return "".join(f"(?:{c}|{extra[c]})" if c in extra else literal(c) for c in word)


def anchored(rx: re.Pattern[str], text: str, low: str, heads: tuple[str, ...], starts: tuple[int, ...] | None
             ) -> Iterator[re.Match[str]]:
    """``rx.finditer(text)``, for a pattern each of whose matches holds one of ``heads`` (lower
    case) one of ``starts`` characters after the match's start; ``low``: ``text`` lower-cased at the
    same offsets. Only those starts are tried (``rx.match`` at each, in order, from the end of the
    last match on: what ``finditer`` does at the positions where a match can start). Python's regex
    engine finds no literal prefix in a pattern that opens with ``\\b``, so ``finditer`` would try
    every position of the text. ``starts`` None: ``finditer`` itself."""
    if starts is None:
        yield from rx.finditer(text)
        return
    at: set[int] = set()
    for h in heads:
        q = low.find(h)
        while q >= 0:
            at.update(q - k for k in starts if q >= k)
            q = low.find(h, q + 1)
    end = 0
    for p in sorted(at):
        if p < end:
            continue
        m = rx.match(text, p)
        if m is not None:
            yield m
            end = max(m.end(), p + 1)


def literal_words(rx: re.Pattern[str]) -> tuple[str, ...]:
    """The words of ``rx``, an alternation of plain literals none of which is a prefix of another
    (so at most one of them matches at any position); ``ValueError`` for any other pattern."""
    words = tuple(rx.pattern.split("|"))
    if rx.flags & ~re.UNICODE or any(not w or re.escape(w) != w for w in words) \
            or any(a != b and b.startswith(a) for a in words for b in words):
        raise ValueError(f"not an alternation of plain, prefix-free literals: {rx.pattern!r}")
    return words


def literal_spans(low: str, words: tuple[str, ...]) -> list[tuple[int, int]]:
    """The spans of ``rx.finditer(low)`` for ``rx`` the alternation of ``words`` (``literal_words``):
    every occurrence of every word, found with ``str.find``, then the leftmost non-overlapping ones
    from the start on, as ``finditer`` takes them."""
    hits: list[tuple[int, int]] = []
    for w in words:
        n = len(w)
        q = low.find(w)
        while q >= 0:
            hits.append((q, q + n))
            q = low.find(w, q + 1)
    hits.sort()
    out: list[tuple[int, int]] = []
    end = 0
    for s, e in hits:
        if s >= end:
            out.append((s, e))
            end = e
    return out
