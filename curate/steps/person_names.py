"""PERSON spans from name lists: a given name followed by a surname, both from the 1990 US Census.

No NER model ships offline, so this is the PERSON detector that always runs here: a run of
capitalised words separated by single spaces whose first word is a Census given name (5,163:
male and female lists), whose last word is a Census surname (88,799) and whose words between are
given names or initials (``J.``), with an optional title before (``Dr.``, ``Mrs.``) and a suffix
after (``Jr.``, ``III``, ``MD``); a title followed by a surname (``Mr. Smith``) is a PERSON too.
The lists are ``curate/models/names/{first,last}.txt.gz`` (``scripts/make_name_lists.py`` writes
them from the PyPI sdist ``names`` 0.3.0, whose Census files are public domain).

What it cannot find: names outside the lists (most non-US names), a lone given name or surname,
lower-case names. What it finds that is no person: place or brand names shaped like one
(``Virginia Beach``, ``Jack Daniels``); docs/pii.md measures both on text it was not tuned on.

Used by the PII step when ``pii.entities`` holds PERSON and ``pii.person_model`` is
``census-names``, and by the inspection view, which masks person names in every sample it shows
(:mod:`curate.inspection.finish`).
"""

from __future__ import annotations

import gzip
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

NAME_LISTS = "census-names"  # the pii.person_model value that selects this detector
_DIR = Path(__file__).resolve().parents[1] / "models" / "names"
# function words that are Census names ("In", "On", "From", "To", "Will") are never part of one
_NOT_NAMES = frozenset({
    "A", "An", "And", "As", "At", "Be", "But", "By", "Do", "For", "From", "Had", "Has", "He", "Her", "His", "If",
    "In", "Into", "Is", "It", "Its", "Me", "My", "No", "Not", "Of", "On", "Or", "Our", "She", "So", "That", "The",
    "Their", "Then", "There", "They", "This", "To", "Up", "Us", "Was", "We", "Were", "What", "When", "Who", "Why",
    "Will", "With", "You", "Your", "Street", "City", "County", "House", "Avenue", "Road", "University",
})
_MAX_WORDS = 5  # a name is at most this many words (given names, initials, surname): bounded work per word
_TITLES = r"(?:Mr|Mrs|Ms|Miss|Mx|Dr|Prof|Sir|Dame|Rev|Hon)\.?"
_SUFFIX = re.compile(r",? (?:Jr\.?|Sr\.?|II|III|IV|V|MD|M\.D\.|DDS|DVM|PhD|Ph\.D\.|Esq\.?)(?![A-Za-z])")
_WORD = r"[A-Z][a-z'’]*(?:[A-Z][a-z'’]+)?(?:-[A-Z][a-z'’]+)?"  # "Smith", "McDonald", "O'Brien", "Smith-Jones"
# a run of capitalised words (or initials) joined by single spaces, a title possibly first
_RUN = re.compile(rf"(?<![\w.’'-])(?:(?P<title>{_TITLES}) )?(?P<words>{_WORD}(?: (?:[A-Z]\.|{_WORD}))*)(?![\w’'-])")


def _key(word: str) -> str:
    return word.replace("'", "").replace("’", "").title()


@lru_cache(maxsize=1)
def name_lists() -> tuple[frozenset[str], frozenset[str]]:
    """(given names, surnames), title-cased without apostrophes."""
    out = []
    for name in ("first", "last"):
        with gzip.open(_DIR / f"{name}.txt.gz", "rt", encoding="utf-8") as f:
            out.append(frozenset(_key(w) for w in f.read().split()))
    return out[0], out[1]


def _surname(word: str, last: frozenset[str]) -> bool:
    return word not in _NOT_NAMES and any(_key(p) in last for p in word.split("-"))


def person_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of every person name the lists find in ``text``, sorted, disjoint."""
    first, last = name_lists()
    out: list[tuple[int, int]] = []
    for m in _RUN.finditer(text):
        words = m.group("words").split(" ")
        base = m.start("words")
        offs = []
        pos = base
        for w in words:
            offs.append(pos)
            pos += len(w) + 1
        i = 0
        while i < len(words):
            # the longest name that starts at word i: given name, (given names or initials), surname
            end = -1
            if words[i] not in _NOT_NAMES and _key(words[i]) in first:
                j = i + 1
                while j < min(len(words), i + _MAX_WORDS):
                    w = words[j]
                    if _surname(w, last) and w[0].isupper():
                        end = j
                    if not (len(w) == 2 and w[1] == ".") and (w in _NOT_NAMES or _key(w) not in first):
                        break
                    j += 1
            if end > i:
                s = m.start("title") if i == 0 and m.group("title") else offs[i]
                e = offs[end] + len(words[end])
                suf = _SUFFIX.match(text, e)
                out.append((s, suf.end() if suf else e))
                i = end + 1
            elif i == 0 and m.group("title") and _surname(words[0], last):
                out.append((m.start("title"), offs[0] + len(words[0])))
                i = 1
            else:
                i += 1
    return out


class NameListPersons:
    """A presidio-shaped analyzer (``analyze(text, language, entities)``) over :func:`person_spans`."""

    score = 0.6

    def analyze(self, text: str, language: str = "en", entities: list[str] | None = None) -> list[Any]:
        from presidio_analyzer import RecognizerResult

        if entities is not None and "PERSON" not in entities:
            return []
        return [RecognizerResult("PERSON", s, e, self.score) for s, e in person_spans(text)]
