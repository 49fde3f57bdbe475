"""A seventh held-out split, ``heldout7``: OCR damage made by a real OCR engine from fonts no earlier split
rendered, inside real domains no earlier split used.

``bench/bench_garbage_heldout.py --split heldout7`` builds its set from here; the interface is the one of
``bench/lib/garbage_sources.py`` (``KINDS``, ``real_domains(split)``, ``garbage_doc(kind, split, rng)``).
As in ``heldout6`` every garbage document is OCR output, so the set judges one kind, ``ocr_noise``, and the
real documents kept. The rendering, degradation and Tesseract settings are ``heldout6``'s (its ``render``
and ``tesseract``), with other fonts: GNU FreeFont (``fonts-freefont-ttf``: FreeSerif, FreeSans) and
Liberation 2 (``fonts-liberation2``: Liberation Serif, Liberation Sans), regular faces.

Real domains (documents of 400-6000 characters, long texts cut at paragraph breaks), from Debian bookworm
packages (``apt-get download``), none used by an earlier split, by the dev set or by
``bench/bench_unseen_domains.py``:

* ``mutt_manual``: the Mutt manual (``mutt`` 2.2.12, ``manual.txt``);
* ``zsh_manual``: the Zsh manual (``zsh-doc`` 5.9, its HTML pages as text);
* ``lynx_docs``: Lynx's help pages and documents (``lynx-common`` 2.9.0dev.12: ``lynx_help`` HTML as text,
  ``README``, ``PROBLEMS`` and the ``docs`` texts);
* ``anarchism_quotes``: the quotations of ``fortune-anarchism`` 1.8.0, in file order, joined into documents
  of up to 1,500 characters;
* ``nethack_guidebook``: the NetHack 3.6 Guidebook (``nethack-common`` 3.6.6, ``Guidebook.txt``), in
  documents of up to 2,500 characters.

Everything is read from a cache folder (``GARBAGE7_CACHE``, default ``/work/garbage7_cache``) that holds the
packages unpacked under ``x/`` (filled by ``--fill``); the build needs ``tesseract`` on the PATH and
BeautifulSoup 4, as ``heldout6``'s.
"""

from __future__ import annotations

import gzip
from pathlib import Path

from lib.garbage_sources6 import OcrSplit, _chunks, _html_text

SPLIT = "heldout7"
PACKAGES = ("mutt", "zsh-doc", "lynx-common", "fortune-anarchism", "nethack-common", "fonts-freefont-ttf",
            "fonts-liberation2")
KINDS = ("ocr_noise",)
FONT_FILES = (("truetype", "freefont", "FreeSerif.ttf"), ("truetype", "freefont", "FreeSans.ttf"),
              ("truetype", "liberation2", "LiberationSerif-Regular.ttf"),
              ("truetype", "liberation2", "LiberationSans-Regular.ttf"))


def _x(*parts: str) -> Path:
    return ROUND.x(*parts)


def _read(path: Path) -> str:
    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    return raw.decode("utf-8", errors="replace")


def _html_gz_text(path: Path) -> str:
    if path.suffix != ".gz":
        return _html_text(path)
    tmp = ROUND.cache / "tmp.html"
    tmp.write_text(_read(path))
    return _html_text(tmp)


def _fortunes() -> list[str]:
    text = _read(_x("usr", "share", "games", "fortunes", "anarchism"))
    return _chunks("\n\n".join(q.strip() for q in text.split("\n%\n") if q.strip()), 1500)


def _real() -> dict[str, list[tuple[str, str]]]:
    doc = _x("usr", "share", "doc")
    zsh = sorted((doc / "zsh-common" / "html").glob("*.html"))
    lynx_html = sorted((doc / "lynx-common" / "lynx_help").rglob("*.html*"))
    lynx_txt = [doc / "lynx-common" / "README.gz", doc / "lynx-common" / "PROBLEMS.gz"] + sorted(
        p for p in (doc / "lynx-common" / "docs").glob("*.gz") if not p.name.startswith(("CHANGES", "README.jp")))
    out: dict[str, list[tuple[str, str]]] = {
        "mutt_manual": [(c, "manual.txt") for c in _chunks(_read(doc / "mutt" / "manual.txt.gz"))],
        "zsh_manual": [(c, p.name) for p in zsh for c in _chunks(_html_text(p))],
        "lynx_docs": [(c, p.name) for p in lynx_html for c in _chunks(_html_gz_text(p))]
        + [(c, p.name) for p in lynx_txt for c in _chunks(_read(p))],
        "anarchism_quotes": [(c, "anarchism") for c in _fortunes()],
        "nethack_guidebook": [(c, "Guidebook.txt")
                              for c in _chunks(_read(doc / "nethack-common" / "Guidebook.txt.gz"), 2500)],
    }
    return out


ROUND = OcrSplit(SPLIT, "garbage_sources7", "GARBAGE7_CACHE", PACKAGES, _real, FONT_FILES)
real_domains, garbage_doc = ROUND.real_domains, ROUND.garbage_doc

if __name__ == "__main__":
    ROUND.main()
