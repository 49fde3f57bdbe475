"""A ninth held-out split, ``heldout9``: OCR damage made by a real OCR engine from fonts no earlier split
rendered, inside real domains no earlier split used.

``bench/bench_garbage_heldout.py --split heldout9`` builds its set from here; the interface is the one of
``bench/lib/garbage_sources.py`` (``KINDS``, ``real_domains(split)``, ``garbage_doc(kind, split, rng)``).
As in ``heldout6``-``heldout8`` every garbage document is OCR output, so the set judges one kind,
``ocr_noise``, and the real documents kept. The rendering, degradation and Tesseract settings are
``heldout6``'s (its ``render`` and ``tesseract``), with other fonts: Lato, Open Sans, EB Garamond and Roboto
(``fonts-lato``, ``fonts-open-sans``, ``fonts-ebgaramond``, ``fonts-roboto-unhinted``), regular faces.

Real domains (documents of 400-6000 characters, long texts cut at paragraph breaks), from Debian bookworm
packages (``apt-get download``), none used by an earlier split, by the dev set or by
``bench/bench_unseen_domains.py``:

* ``sqlite_docs``: SQLite's documentation (``sqlite3-doc`` 3.40.1, the top-level HTML pages as text);
* ``octave_manual``: the GNU Octave manual (``octave-doc`` 7.3.0, ``octave.html``, HTML as text);
* ``maxima_manual``: the Maxima manual (``maxima-doc`` 5.46.0, HTML as text);
* ``prolog_manual``: the SWI-Prolog manual (``swi-prolog-doc`` 9.0.4, ``doc/Manual``, HTML as text);
* ``gnome_help``: GNOME's desktop help (``gnome-user-docs`` 43.0, ``help/C/gnome-help/*.page``, Mallard
  pages as text).

Everything is read from a cache folder (``GARBAGE9_CACHE``, default ``/work/garbage9_cache``) that holds the
packages unpacked under ``x/`` (filled by ``--fill``); the build needs ``tesseract`` on the PATH and
BeautifulSoup 4, as ``heldout6``'s.
"""

from __future__ import annotations

from pathlib import Path

from lib.garbage_sources6 import OcrSplit, _chunks, _html_text

SPLIT = "heldout9"
PACKAGES = ("sqlite3-doc", "octave-doc", "maxima-doc", "swi-prolog-doc", "gnome-user-docs", "fonts-lato",
            "fonts-open-sans", "fonts-ebgaramond", "fonts-roboto-unhinted")
KINDS = ("ocr_noise",)
FONT_FILES = (("truetype", "lato", "Lato-Regular.ttf"), ("truetype", "open-sans", "OpenSans-Regular.ttf"),
              ("opentype", "ebgaramond", "EBGaramond12-Regular.otf"),
              ("truetype", "roboto", "unhinted", "RobotoTTF", "Roboto-Regular.ttf"))


def _x(*parts: str) -> Path:
    return ROUND.x(*parts)


def _real() -> dict[str, list[tuple[str, str]]]:
    doc = _x("usr", "share", "doc")
    sqlite = sorted((doc / "sqlite3").glob("*.html"))
    octave = sorted((doc / "octave" / "octave.html").glob("*.html"))
    maxima = sorted((doc / "maxima-doc" / "html").glob("*.html"))
    prolog = sorted(_x("usr", "share", "swi-prolog", "doc", "Manual").glob("*.html"))
    gnome = sorted(_x("usr", "share", "help", "C", "gnome-help").glob("*.page"))
    out: dict[str, list[tuple[str, str]]] = {
        "sqlite_docs": [(c, p.name) for p in sqlite for c in _chunks(_html_text(p))],
        "octave_manual": [(c, p.name) for p in octave for c in _chunks(_html_text(p))],
        "maxima_manual": [(c, p.name) for p in maxima for c in _chunks(_html_text(p))],
        "prolog_manual": [(c, p.name) for p in prolog for c in _chunks(_html_text(p))],
        "gnome_help": [(c, p.name) for p in gnome for c in _chunks(_html_text(p))],
    }
    return out


ROUND = OcrSplit(SPLIT, "garbage_sources9", "GARBAGE9_CACHE", PACKAGES, _real, FONT_FILES)
real_domains, garbage_doc = ROUND.real_domains, ROUND.garbage_doc

if __name__ == "__main__":
    ROUND.main()
