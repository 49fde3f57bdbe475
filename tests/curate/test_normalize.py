"""Normalisation: NFC, control characters, newlines, optional ftfy; empty result is a drop."""

from __future__ import annotations

import unicodedata

from datatrove.data import Document

from curate.steps.normalize import NormalizeConfig, Normalizer, normalize_text


def test_nfc_and_controls_and_newlines():
    text = "Cafe\u0301 au lait\x00\x07 costs\u0085 two\r\nfrancs.\rDone\tnow"
    out = normalize_text(text, NormalizeConfig())
    assert out == "Caf\u00e9 au lait costs two\nfrancs.\nDone\tnow"
    assert unicodedata.is_normalized("NFC", out)


def test_switches_off():
    text = "Cafe\u0301\x07"
    assert normalize_text(text, NormalizeConfig(nfc=False, strip_control=False)) == text


def test_ftfy_repairs_mojibake():
    broken = "The Mona Lisa doesnÃ¢â‚¬â„¢t have eyebrows."
    assert normalize_text(broken, NormalizeConfig(ftfy=True)) == "The Mona Lisa doesn't have eyebrows."


def test_step_rewrites_text_and_drops_empty_result():
    step = Normalizer()
    doc = Document(text="Cafe\u0301", id="a")
    assert step.filter(doc) is True and doc.text == "Caf\u00e9"
    assert step.filter(Document(text="\x00\x01\x02", id="b")) == (False, "empty_after_normalize")
