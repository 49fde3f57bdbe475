"""A page of menus is dropped as ``garbage:navigation``; a page of content with its menus is not
(``junkstats.prose_chars``, ``CalibratedFilter.content_with_menus``)."""

from __future__ import annotations

import pytest
from datatrove.data import Document

from curate import junkstats as js
from curate.steps.filters import FilterConfig
from curate.steps.garbage import CalibratedFilter

STOP = js.stopwords("en")
MENU = ["Home", "Products", "Download", "Documentation", "Getting Started", "User Guide", "Reference Manual",
        "Release Notes", "Community", "Mailing Lists", "Report a Bug", "Previous topic", "Next topic",
        "Table of Contents", "Show Source", "Quick search", "Contact us", "Privacy Policy", "Terms of Use",
        "Site Map"]
# a hard-wrapped paragraph: its lines end without punctuation, its last line is short
WRAPPED = """The server reads its configuration file when it starts, and again when it
receives a signal to reload. Each directive applies to the context in which
it appears, so a setting made inside a virtual host does not change the
behaviour of the other hosts that the same server answers for on its
addresses. When two directives disagree, the one that appears later in the
file wins, which is why the order of the included files matters more than
most people expect.
"""
PARAGRAPHS = [
    "Before you change a setting, make a copy of the file so that you can go back to the version that worked. "
    "The server checks the syntax of the whole file before it replaces the running configuration, and it keeps "
    "the old one when it finds a mistake.",
    "A module adds directives of its own. If a directive is not recognised, the most likely cause is that the "
    "module which provides it has not been loaded, and the error message names the line where it was found.",
    WRAPPED.strip(),
]


def _doc(text: str) -> Document:
    return Document(text=text, id="d", metadata={"domain": "manual", "lang": "en", "lang_score": 0.99})


def _reason(filt: CalibratedFilter, text: str) -> str | None:
    doc = _doc(text)
    return filt.doc_garbage(doc, filt.measure(doc), None, "manual")


def test_wrapped_paragraphs_are_prose_and_labels_are_not() -> None:
    prose, total = js.prose_chars(WRAPPED, STOP)
    assert prose == total == sum(len(ln) for ln in WRAPPED.splitlines())  # one run, the short last line too
    assert js.prose_chars("\n".join(MENU), STOP)[0] == 0
    assert js.prose_chars("Home | About us | Contact us | The quick brown fox jumps over the lazy dog.", STOP)[0] == 0
    # eight words of names without grammar are not a sentence, whatever their punctuation
    assert js.prose_chars("Apache Tomcat Jetty Nginx Lighttpd Caddy Traefik Envoy.", STOP)[0] == 0
    # a run must end a sentence: a cut paragraph is not counted
    assert js.prose_chars(WRAPPED.rsplit("\n", 2)[0], STOP)[0] == 0


@pytest.mark.parametrize("text", ["", "\n\n\n", "x" * 200_000, "\u0301" * 5000, "a\n" * 50_000])
def test_bad_input(text: str) -> None:
    prose, total = js.prose_chars(text, STOP)
    assert 0 <= prose <= total <= js.PROSE_PREFIX


def test_a_menu_is_dropped_and_a_page_with_its_menus_is_kept() -> None:
    filt = CalibratedFilter(FilterConfig())
    menu = "\n".join(MENU * 2)
    assert _reason(filt, menu) == "garbage:navigation"
    # the same menus around three paragraphs of content: labels are most of its segments, not of its text
    page = "\n".join(MENU[:12]) + "\n\n" + "\n\n".join(PARAGRAPHS) + "\n\n" + "\n".join(MENU[12:] + MENU[:10])
    s = filt.measure(_doc(page))
    assert s["label_share"] > 0.4 and s["label_char_share"] > 0.15  # what the navigation rule reads
    assert _reason(filt, page) is None
    # a sentence or two beside the menus is not enough: below navigation_keep_prose_chars
    short = "\n".join(MENU[:12]) + "\n\n" + PARAGRAPHS[1] + "\n\n" + "\n".join(MENU[12:] + MENU[:10])
    assert _reason(filt, short) == "garbage:navigation"
    # switched off, the page is judged by the label share alone, as before the exception
    assert _reason(CalibratedFilter(FilterConfig(navigation_keep_prose_chars=None)), page) == "garbage:navigation"
    # a larger share bar than the page's prose holds
    assert _reason(CalibratedFilter(FilterConfig(navigation_keep_prose_share=0.95)), page) == "garbage:navigation"


def test_a_repeated_footer_counts_once_and_questions_are_headings() -> None:
    footer = ("This page is licensed under the terms of the licence that comes with the software and its manual.\n"
              "See the history and the licence for more information about what you may do with the text.")
    once = js.prose_chars(footer, STOP)[0]
    assert once == len(footer) - 1  # two runs, the newline not counted
    assert js.prose_chars("\n\n".join([footer] * 5), STOP)[0] == once
    questions = "\n".join(["Why was the program created in the first place?", "What is the program good for?",
                           "How do I get a copy of the source code?",
                           "Is there a mailing list devoted to the program?"] * 3)
    assert js.prose_chars(questions, STOP)[0] == 0  # entries of a table of contents, under PROSE_MIN_WORDS each
