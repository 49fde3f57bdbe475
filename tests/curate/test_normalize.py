"""Normalisation: NFC, control characters, newlines, optional ftfy; empty result is a drop."""

from __future__ import annotations

import unicodedata

from datatrove.data import Document

from curate.steps.normalize import NormalizeConfig, Normalizer, normalize_text


def test_nfc_and_controls_and_newlines():
    text = "Cafe\u0301 au lait\x00\x07 costs\u0085 two\r\nfrancs.\rDone\tnow"
    out = normalize_text(text, NormalizeConfig(repair_mojibake=False))
    assert out == "Caf\u00e9 au lait costs two\nfrancs.\nDone\tnow"
    assert unicodedata.is_normalized("NFC", out)
    # by default a C1 control is first read as the cp1252 character it stands for (ftfy's fix_c1_controls)
    assert normalize_text(text, NormalizeConfig()) == "Caf\u00e9 au lait costs\u2026 two\nfrancs.\nDone\tnow"


def test_mojibake_repaired_by_default_other_text_untouched():
    for codec in ("cp1252", "latin-1"):
        src = "Gr\u00fc\u00dfe aus M\u00fcnchen \u2013 \u201cso sch\u00f6n\u201d, sagte sie."
        broken = src.encode("utf-8").decode(codec, errors="ignore" if codec == "cp1252" else "strict")
        assert broken != src
        out = normalize_text(broken, NormalizeConfig())
        assert out == src or codec == "cp1252"  # cp1252 lost undefined bytes: repaired as far as ftfy can
    # curly quotes, ligatures, box drawings and foreign scripts are not rewritten (only fix_encoding runs)
    for text in ("\u201cquoted\u201d \ufb01ne", "\u250c\u2500\u2510 \u2502:-)\u2502",
                 "\u041f\u0440\u0438\u0432\u0435\u0442", "caf\u00e9 na\u00efve"):
        assert normalize_text(text, NormalizeConfig()) == text


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


def test_control_scan_finds_exactly_the_stripped_characters():
    """The text is only translated when the scan finds a control character: the scan's class must
    hold exactly the table's characters, else a text would keep one (or be copied for nothing)."""
    from curate.steps.normalize import _CONTROL, _HAS_CONTROL

    found = {c for c in range(0x110000) if _HAS_CONTROL.match(chr(c))}
    assert found == set(_CONTROL)
    for text in ("plain ascii text\n", "é\tß\u2028", "x\x7fy", "\x9f", "a\x1bb"):
        assert normalize_text(text, NormalizeConfig(repair_mojibake=False)) == unicodedata.normalize(
            "NFC", text.replace("\r\n", "\n").replace("\r", "\n").translate(_CONTROL))
