"""Text normalisation step: mojibake repaired (ftfy), Unicode NFC, control characters stripped.

Runs first in ``corpusmix curate run`` and alone as ``corpusmix curate normalize --input F --output F``.
Tab, newline and carriage return are kept (``\\r\\n`` and lone ``\\r`` become ``\\n``); every other
Unicode ``Cc`` character is removed. Config: ``params.yaml`` ``curate.normalize``.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from datatrove.data import Document

from curate.steps.base import Annotator
from curate.steps.registry import step

# every C0/C1 control except \t \n \r (handled by newline normalisation)
_CONTROL = {c: None for c in list(range(0x00, 0x20)) + list(range(0x7F, 0xA0)) if c not in (9, 10, 13)}
# one C-level scan finds whether there is any: most texts have none, and str.translate with a
# dict table costs a lookup per character (~20 MB/s)
_HAS_CONTROL = re.compile("[" + "".join(re.escape(chr(c)) for c in sorted(_CONTROL)) + "]")


@dataclass
class NormalizeConfig:
    nfc: bool = field(default=True, metadata={"help": "Unicode NFC normalisation"})
    strip_control: bool = field(default=True, metadata={"help": "remove control characters except tab/newline"})
    newlines: bool = field(default=True, metadata={"help": "\\r\\n and \\r become \\n"})
    repair_mojibake: bool = field(default=True, metadata={
        "help": "ftfy.fix_encoding on texts that ftfy's badness measure flags (non-ASCII texts only)"})
    ftfy: bool = field(default=False, metadata={"help": "ftfy.fix_text on every text: every fix of ftfy (slow)"})


def repair_mojibake(text: str) -> str:
    """``ftfy.fix_encoding`` when ftfy's badness regex finds a mojibake sequence, else ``text``.

    Only the encoding fixes (wrong codec, C1 controls, lossy sequences), none of ftfy's other
    rewrites (quotes, ligatures, widths stay as they are); ftfy changes a text only when the fix
    is less "bad" than the input, so text that merely looks odd (box drawings) is left alone.
    Runs before control characters are stripped: the C1 bytes of Latin-1 mojibake are its clue."""
    from curate.junkstats import MOJIBAKE_CHARS, MOJIBAKE_PREFIX

    # the first 32 KiB decide (mojibake runs through a text; the scan of a huge text stays bounded)
    head = text[:MOJIBAKE_PREFIX]
    if MOJIBAKE_CHARS.search(head) is None:
        return text  # only typographic punctuation outside ASCII: no single-byte mojibake possible
    from ftfy import fix_encoding

    from curate.badness import is_bad  # ftfy's is_bad, scanning only where a match can be

    return fix_encoding(text) if is_bad(head) else text


def normalize_text(text: str, cfg: NormalizeConfig) -> str:
    if cfg.ftfy:
        import ftfy

        text = ftfy.fix_text(text, normalization="NFC" if cfg.nfc else None)
    elif cfg.repair_mojibake and not text.isascii():
        text = repair_mojibake(text)
    if cfg.newlines and "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if cfg.strip_control and _HAS_CONTROL.search(text) is not None:
        text = text.translate(_CONTROL)
    if cfg.nfc and not (text.isascii() or unicodedata.is_normalized("NFC", text)):
        text = unicodedata.normalize("NFC", text)
    return text


@step("normalize", config=NormalizeConfig, section="curate.normalize", order=10)
class Normalizer(Annotator):
    """Rewrites ``doc.text``; an empty result is a drop (``empty_after_normalize``)."""

    step_name = "normalize"
    name = "normalize"

    def __init__(self, cfg: NormalizeConfig | None = None) -> None:
        super().__init__()
        self.cfg = cfg or NormalizeConfig()

    def annotate(self, doc: Document) -> None:
        doc.text = normalize_text(doc.text, self.cfg)

    def filter(self, doc: Document) -> bool | tuple[bool, str]:
        res = super().filter(doc)
        if res is True and not doc.text.strip():
            return False, "empty_after_normalize"
        return res


__all__ = ["NormalizeConfig", "Normalizer", "normalize_text"]

