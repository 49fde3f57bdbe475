"""ftfy's mojibake measure (``ftfy.badness.is_bad`` and ``badness``) with the same result on every
string, scanning only the pieces of a text where a match can be.

``ftfy.badness.BADNESS_RE`` is an alternation of short character sequences. Read off the compiled
pattern (``re._parser``), each of its branches requires at least one character of a set of
non-ASCII characters (the branch's smallest such set; their union is the *anchor* class, ~300
characters: Latin-1 letters and symbols, C1 controls, box drawing, ...), and no match is longer than
``width`` characters. So every match lies inside ``[p - width, p + width]`` of one of its anchors
``p``. The scan finds the anchors with one character-class search, merges those windows, and runs
the ftfy pattern only inside them (``Pattern.search``/``findall`` with ``pos``/``endpos``):

* every match of the whole text lies inside one merged window (its anchor's window contains it and
  overlaps the window where it starts), so the windows hold the same matches;
* ``findall`` over the windows in order finds the same non-overlapping matches as over the text:
  no match crosses a window's end, and between windows no match can start.

The pattern is checked once per process: only literals, character sets, ``.``, optional repeats,
groups, branches and ``^`` (which, as in the full scan, matches only at the real start of the text);
any other construct (a lookaround, a backreference), a flag such as IGNORECASE, a branch without a
non-ASCII anchor or an unbounded width makes both functions fall back to ftfy's own full scan. A
text that is mostly anchors costs about what the full scan costs; English text with a few accented
words costs a small fraction (``tests/curate/test_badness.py`` checks equality on random and real
texts).
"""

from __future__ import annotations

import re
from functools import lru_cache

try:  # Python >= 3.11
    from re import _constants as _sre
    from re import _parser as _sre_parse
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as _sre  # type: ignore[no-redef]
    import sre_parse as _sre_parse  # type: ignore[no-redef]

# opcodes a pattern may use for the windowed scan to be exact
_ALLOWED = {_sre.LITERAL, _sre.IN, _sre.ANY, _sre.MAX_REPEAT, _sre.MIN_REPEAT, _sre.SUBPATTERN, _sre.BRANCH,
            _sre.AT}
_MAX_WIDTH = 64  # a longer possible match is not worth windowing


def _item_set(op: object, av: object) -> frozenset[int] | None:
    """The code points one pattern item must match when they are all non-ASCII, else None."""
    if op is _sre.LITERAL:
        return frozenset((av,)) if av >= 128 else None  # type: ignore[operator]
    if op is _sre.IN:
        s: set[int] = set()
        for o, a in av:  # type: ignore[union-attr]
            if o is _sre.LITERAL:
                s.add(a)
            elif o is _sre.RANGE:
                s.update(range(a[0], a[1] + 1))
            else:  # NEGATE, CATEGORY (\s, \w): not a fixed non-ASCII set
                return None
        return frozenset(s) if s and min(s) >= 128 else None
    return None


def _only_allowed(data: list) -> bool:
    for op, av in data:
        if op not in _ALLOWED:
            return False
        if op is _sre.AT and av is not _sre.AT_BEGINNING:
            return False
        if op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT) and not _only_allowed(list(av[2].data)):
            return False
        if op is _sre.SUBPATTERN and not _only_allowed(list(av[-1].data)):
            return False
        if op is _sre.BRANCH and not all(_only_allowed(list(b.data)) for b in av[1]):
            return False
    return True


def anchor_plan(pattern: re.Pattern[str]) -> tuple[re.Pattern[str], int] | None:
    """(the anchor class as a compiled pattern, the longest possible match) of ``pattern``, or
    None when the windowed scan would not be exact for it (module docstring)."""
    if pattern.flags & ~(re.UNICODE | re.VERBOSE):
        return None
    parsed = _sre_parse.parse(pattern.pattern, pattern.flags)
    data = list(parsed.data)
    if not _only_allowed(data):
        return None
    branches = [list(b.data) for b in data[0][1][1]] if len(data) == 1 and data[0][0] is _sre.BRANCH else [data]
    anchors: set[int] = set()
    for items in branches:
        sets = [s for s in (_item_set(op, av) for op, av in items) if s is not None]
        if not sets:
            return None  # a branch that can match ASCII alone
        anchors |= min(sets, key=len)
    width = parsed.getwidth()[1]
    if width > _MAX_WIDTH:
        return None
    cls = "".join(re.escape(chr(c)) for c in sorted(anchors))
    return re.compile(f"[{cls}]"), width


@lru_cache(maxsize=1)
def _plan() -> tuple[re.Pattern[str], re.Pattern[str], int] | None:
    from ftfy.badness import BADNESS_RE

    plan = anchor_plan(BADNESS_RE)
    return None if plan is None else (BADNESS_RE, *plan)


def windows(text: str, anchor: re.Pattern[str], width: int) -> list[tuple[int, int]]:
    """Merged ``[p - width, p + width + 1)`` around every match ``p`` of ``anchor`` in ``text``."""
    out: list[list[int]] = []
    n = len(text)
    for m in anchor.finditer(text):
        p = m.start()
        a, b = max(0, p - width), min(n, p + width + 1)
        if out and a <= out[-1][1]:
            out[-1][1] = b
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def _windowed(text: str) -> tuple[re.Pattern[str], list[tuple[int, int]]] | None:
    """(ftfy's pattern, the windows of ``text`` it needs to scan), or None: use ftfy's full scan."""
    plan = _plan()
    if plan is None:
        return None
    pattern, anchor, width = plan
    return pattern, windows(text, anchor, width)


def is_bad(text: str) -> bool:
    """``ftfy.badness.is_bad(text)``: does ftfy's badness pattern match anywhere in ``text``."""
    from ftfy import badness as ftfy_badness

    got = _windowed(text)
    if got is None:
        return ftfy_badness.is_bad(text)
    pattern, wins = got
    return any(pattern.search(text, a, b) is not None for a, b in wins)


def badness(text: str) -> int:
    """``ftfy.badness.badness(text)``: the number of non-overlapping matches of ftfy's pattern."""
    from ftfy import badness as ftfy_badness

    got = _windowed(text)
    if got is None:
        return ftfy_badness.badness(text)
    pattern, wins = got
    return sum(len(pattern.findall(text, a, b)) for a, b in wins)
