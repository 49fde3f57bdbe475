"""Damaged words (OCR, conversion) and navigation labels: the statistics behind
``garbage:damaged_words`` and ``garbage:navigation`` (curate.ocrstats, curate.junkstats)."""

from __future__ import annotations

import random
import zlib

import pytest

from curate import junkstats as js
from curate import ocrstats
from curate.textstats import doc_stats

PROSE = (
    "The committee met on Tuesday to discuss the proposal for the new library. Several members "
    "argued that the building should be placed near the school, because the children would use it "
    "most often. Others preferred a site close to the station, where people who work in the city "
    "could stop on their way home. After a long debate the chair asked for a vote, and the majority "
    "chose the site near the school. The decision will be reviewed next year, when the cost of the "
    "land is known. Everyone agreed that the library should open before the end of the decade, and "
    "that the old building would be kept as a museum for the history of the town and its people."
)


def _damage(text: str, rate: float, seed: int) -> str:
    """OCR-like damage from a confusion table (not the one the statistic knows: it knows none)."""
    rng = random.Random(seed)
    conf = {"m": "rn", "h": "li", "e": "c", "u": "ii", "d": "cl", "w": "vv", "l": "1"}
    out = []
    for w in text.split(" "):
        if rng.random() < rate and any(c in w for c in conf):
            c = rng.choice([c for c in conf if c in w])
            w = w.replace(c, conf[c], 1)
        elif rng.random() < rate / 3:
            out.append(w + rng.choice(["the", "of", "and"]))
            continue
        out.append(w)
    return " ".join(out)


def test_clean_prose_has_no_damage() -> None:
    s = doc_stats(PROSE, "en")
    assert s["damaged_share"] is not None and s["damaged_share"] < 0.02


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_ocr_damage_is_measured(seed: int) -> None:
    s = doc_stats(_damage(PROSE, 0.15, seed), "en")
    assert s["damaged_share"] > 0.04


def test_repeated_identifiers_are_not_damage() -> None:
    # jargon the document repeats (an identifier, a name) is its vocabulary, not damage
    text = PROSE + " " + " ".join(["The nread value and the pfile handle are set by telldir."] * 3)
    assert doc_stats(text, "en")["damaged_share"] < 0.02


def test_near_miss_index() -> None:
    idx = ocrstats.near_miss_index("en")
    assert idx is not None
    split, near1, near2 = idx.judge("perrnission")  # rn for m: two for one
    assert not split and "permission" in near2 and "permission" not in near1
    assert "the" in idx.judge("tbe")[1]
    assert not idx.judge("sirup")[0]
    assert not idx.judge("incrust")[0] and not idx.judge("candire")[0]
    assert idx.judge("ofthe")[0] and idx.judge("andmake")[0]
    assert ocrstats.near_miss_index("xx-not-a-language") is None


def test_long_near_misses_count_without_their_word_in_the_document() -> None:
    """A 7+ letter word one edit from a frequent word counts though the document never spells that
    word (a typo of a word used once); a short one, and a rare real word, do not."""
    words = PROSE.split(" ")
    typos = {"discuss": "discusss", "children": "chilren", "station,": "stattion,", "majority": "majoritty",
             "reviewed": "reviewd", "history": "histoy"}  # words the document uses once
    damaged = " ".join(typos.get(w, w) for w in words)
    dmg = doc_stats(damaged, "en")
    assert dmg["damaged_words"] >= 5 and dmg["damaged_share"] > 0.03
    rare = PROSE.replace("museum", "palimpsest").replace("library.", "athenaeum.")  # real, if rare, words
    assert doc_stats(rare, "en")["damaged_words"] == doc_stats(PROSE, "en")["damaged_words"]
    assert ocrstats.LONG_NEAR_LETTERS == 7


def test_digits_for_letters_and_case_flips() -> None:
    text = PROSE.replace("library", "1ibrary", 1).replace("decision", "dEC1SION", 1).replace("school", "sCHOOL", 1)
    assert doc_stats(text, "en")["damaged_share"] > doc_stats(PROSE, "en")["damaged_share"]


def test_marks_accents_and_two_letter_digit_words() -> None:
    """Stray marks in or at a word (``wa^s``, ``out˙``), accented misreadings of frequent words
    (``ín``, ``óur``) and two-letter words with a digit (``0f``, ``t0``) count; the same marks in
    real words (``don't``, ``co-op``, ``and/or``, ``e.g.``), a dictionary's stress and syllable
    marks (``de"cent*ly``), accented words of the language (``café``, ``naïve``) and numbers with
    units (``1s``, ``5m``) do not."""
    base = doc_stats(PROSE, "en")["damaged_words"]
    cases = {"met": "m^et", "argued": "arg~ued", "most": "most˙", "people": "·people", "in": "ín", "their": "théir",
             "of": "0f", "to": "t0"}
    for word, bad in cases.items():
        text = PROSE.replace(f" {word} ", f" {bad} ", 1)
        assert text != PROSE, word
        assert doc_stats(text, "en")["damaged_words"] == base + 1, (word, bad)
    real = PROSE.replace(" the new ", ' the naïve café\'s don\'t co-op and/or e.g. 1s 5m 2d de"cent*ly new ', 1)
    assert doc_stats(real, "en")["damaged_words"] == base
    # a two-letter accented word of the language itself is not damage (French "où")
    assert ocrstats._kind("où") == (ocrstats.ACCENT, "où") and not ocrstats.misread_accents("où", {"où": 5, "ou": 9})
    assert doc_stats("Je ne sais pas où il est. " * 12, "fr")["damaged_words"] == 0


def test_one_capital_and_lost_letters() -> None:
    """One capital inside a lower-case word that reads as a word without it (``pubLic``: OCR's L for
    l) and a bracket, brace or underscore where a letter belongs (``informa[ion``) count; brand names
    (``iPhone``), camel case (``getElementById``), snake case (``user_name``, ``week_day``) and short
    code (``x[i``, ``p_n``) do not."""
    base = doc_stats(PROSE, "en")["damaged_words"]
    cases = {"committee": "commiTtee", "members": "memBers", "building": "buil[ing", "decision": "deci_ion",
             "history": "hist{ry"}
    for word, bad in cases.items():
        text = PROSE.replace(f" {word} ", f" {bad} ", 1)
        assert text != PROSE, word
        assert doc_stats(text, "en")["damaged_words"] == base + 1, (word, bad)
    real = PROSE.replace(" the new ", " the iPhone getElementById user_name week_day x[i p_n new ", 1)
    assert doc_stats(real, "en")["damaged_words"] == base


def test_spaces_read_as_punctuation() -> None:
    """What an OCR engine makes of a space or a speck: two words joined by a mark, a full stop or an
    apostrophe (``met:on``, ``the.chair``, ``to'discuss``), a full stop after a word that never ends a
    sentence (``the. proposal``), a stop standing alone (``school . because``) and an opening quote
    that nothing closes (``‘Several``) each count once; the same characters in real text do not
    (``os.path``, ``a.out``, ``don't``, ``o'clock``, Python's ``from . import``, ``git add .``, quotes
    that are closed, a quotation glued to the word before it (``the‘shout'``), an apostrophe, an
    abbreviation before a lower-case word)."""
    base = doc_stats(PROSE, "en")["damaged_words"]
    cases = {" met on ": " met:on ", " the chair ": " the.chair ", "school, because": "school . because",
             " for the new ": " for the. new ", " to discuss ": " to'discuss ", "Several": "\u2018Several",
             " near the ": " near.the "}
    for good, bad in cases.items():
        text = PROSE.replace(good, bad, 1)
        assert text != PROSE, good
        assert doc_stats(text, "en")["damaged_words"] == base + 1, (good, bad)
    real = PROSE.replace(" the new ", " the os.path a.out don't o'clock \u2018new\u2019 dogs\u2019 etc. "
                                      "the\u2018glued' new ", 1)
    real += "\nfrom . import tools\ngit add .\nThey won\u2019t."
    assert doc_stats(real, "en")["damaged_words"] == base
    # the open words are English: a full stop after "the" in a French text is not judged by them
    assert ocrstats.stray_stops("le chat the. noir", frozenset()) == 0
    assert ocrstats.stray_stops("le chat the. noir") == 1


def test_drawn_tables_and_line_end_hyphens_are_layout() -> None:
    """A table drawn with box characters is measured as its cells' text (no mojibake from ``│<key>``,
    no repetition from its rules), and the second half of a word hyphenated at a line's end is not
    a damaged word; box characters
    that single-byte mojibake leaves (no run of one rule character) are still counted."""
    rows = ["\u2502<next-entry>  \u2502j           \u2502move to the next entry in the list       \u2502",
            "\u2502<prev-entry>  \u2502k           \u2502move to the previous entry of the list   \u2502"]
    rule = "\u251c" + "\u2500" * 14 + "\u253c" + "\u2500" * 12 + "\u253c" + "\u2500" * 41 + "\u2524"
    table = "\n".join([PROSE, rule] + [r for row in rows for r in (row, rule)] * 6)
    plain = "\n".join([PROSE] + [" ".join(row.replace("\u2502", " ").split()) for row in rows] * 6)
    got, want = doc_stats(table, "en"), doc_stats(plain, "en")
    drawn = len(table.encode()) / len(zlib.compress(table.encode(), 6))  # the table with its rules
    assert got["mojibake"] == 0.0 and abs(got["compress_ratio"] / want["compress_ratio"] - 1) < 0.05
    assert drawn > 1.3 * got["compress_ratio"]
    assert got["n_chars"] == len(table)
    from curate.textstats import token_lows
    lows, words, _ = token_lows(table)  # the next reader gets the original text's tokens
    assert [words[i] for i in lows.tolist()] == table.lower().split()
    mojibake = PROSE + " \u2568\u2510\u2564\u00c7\u2568\u2555 \u2568\u2510\u2564\u00c7\u2568\u2555 " * 3
    assert doc_stats(mojibake, "en")["mojibake"] > 0
    hyphen = PROSE.replace(" proposal ", " pro-\n     posal ", 1).replace(" majority ", " major-\n ity ", 1)
    assert doc_stats(hyphen, "en")["damaged_words"] == doc_stats(PROSE, "en")["damaged_words"]


def test_no_dictionary_no_statistic() -> None:
    assert doc_stats(PROSE, None)["damaged_share"] is None


NAV = "\n".join(["Home", "About us", "Previous topic", "Next topic", "Show Source", "Quick search",
                 "Table of Contents", "Contact", "Privacy Policy", "Terms of Use"])


def test_navigation_labels() -> None:
    assert js.label_share(NAV.split("\n")) == (1.0, 1.0)
    assert js.label_share([PROSE]) == (None, None)  # too few segments to judge
    lines = "\n".join((PROSE + " " + PROSE).split(". "))
    assert js.label_share(lines.split("\n")) == (0.0, 0.0)


def test_headings_of_an_article_are_not_navigation() -> None:
    paragraph = PROSE.replace("\n", " ")
    article = "\n".join(x for h in ("History", "Early life", "Career", "Later years", "Legacy", "See also",
                                     "References", "External links") for x in (h, paragraph))
    share, chars = js.label_share(article.split("\n"))
    assert share == 0.5 and chars < 0.05


def test_code_lists_and_tables_are_not_labels() -> None:
    code = "\n".join(["def f(x):", "    return x + 1", "", "class A:", "    pass", "x = f(2)", "print(x)",
                      "import os", "os.path.join(a, b)", "CONFIG = {}"])
    table = "\n".join(f"Row {i} {i * 3} {i * 7}" for i in range(12))
    assert js.label_share(code.split("\n"))[0] < 0.5
    assert js.label_share(table.split("\n"))[0] == 0.0


@pytest.mark.parametrize("text", ["", "\u0301" * 5000, "a" * 5_000_000, "x\n" * 100_000, "Home\n" * 50_000])
def test_bad_input(text: str) -> None:
    s = doc_stats(text, "en")
    assert s["damaged_share"] is None or 0.0 <= s["damaged_share"] <= 1.0
    assert s["label_share"] is None or 0.0 <= s["label_share"] <= 1.0


def test_damage_does_not_depend_on_what_was_measured_before() -> None:
    """The count follows the document's own word order, not the token table's history."""
    import subprocess
    import sys

    text = _damage(PROSE + " " + PROSE.replace("library", "archive"), 0.2, 7)
    other = _damage(PROSE[::-1], 0.3, 8)
    code = ("import sys; from curate.textstats import doc_stats; t, o = sys.argv[1:3]; "
            "[doc_stats(o, 'en') for _ in range(int(sys.argv[3]))]; print(doc_stats(t, 'en')['damaged_words'])")
    runs = {subprocess.run([sys.executable, "-c", code, text, other, str(k)], capture_output=True, text=True,
                           check=True).stdout for k in (0, 1)}
    assert len(runs) == 1 and float(runs.pop()) >= 3
