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

import hashlib
import os
import subprocess
import sys
from functools import cache
from pathlib import Path

from lib.garbage_sources6 import _chunks, _html_text, render, tesseract

SPLIT = "heldout9"
CACHE = Path(os.environ.get("GARBAGE9_CACHE", "/work/garbage9_cache"))
PACKAGES = ("sqlite3-doc", "octave-doc", "maxima-doc", "swi-prolog-doc", "gnome-user-docs", "fonts-lato",
            "fonts-open-sans", "fonts-ebgaramond", "fonts-roboto-unhinted")
KINDS = ("ocr_noise",)
FONT_FILES = (("truetype", "lato", "Lato-Regular.ttf"), ("truetype", "open-sans", "OpenSans-Regular.ttf"),
              ("opentype", "ebgaramond", "EBGaramond12-Regular.otf"),
              ("truetype", "roboto", "unhinted", "RobotoTTF", "Roboto-Regular.ttf"))


def _x(*parts: str) -> Path:
    if not (CACHE / "x").is_dir():
        raise FileNotFoundError(f"{CACHE / 'x'} is missing: the heldout9 sources are read from a cache; fill it "
                                "with `.venv/bin/python bench/lib/garbage_sources9.py --fill` (or set GARBAGE9_CACHE)")
    return CACHE.joinpath("x", *parts)


@cache
def heldout9_real() -> dict[str, list[tuple[str, str]]]:
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
    for d, docs in out.items():
        out[d] = sorted(dict.fromkeys(docs), key=lambda t: hashlib.sha1(t[0].encode()).hexdigest())
    return out


def real_domains(split: str) -> dict[str, list[tuple[str, str]]]:
    if split != SPLIT:
        raise ValueError(f"garbage_sources9 holds only the {SPLIT!r} split, not {split!r}")
    return heldout9_real()


def ocr_noise(rng) -> str:
    docs = heldout9_real()
    dom = rng.choice(sorted(docs))
    src = rng.choice(docs[dom])[0][:2500]
    fonts = tuple(_x("usr", "share", "fonts", *f) for f in FONT_FILES)
    return tesseract(render(src, rng, rng.randint(60, 95), fonts))


def garbage_doc(kind: str, split: str, rng) -> tuple[str, str | None]:
    """(garbage text, None): every garbage document of this split is OCR output."""
    if split != SPLIT or kind != "ocr_noise":
        raise ValueError(f"garbage_sources9 makes only ocr_noise for {SPLIT!r}, not {kind!r} for {split!r}")
    return ocr_noise(rng), None


def fill() -> None:
    """Download the packages and unpack them under CACHE/x."""
    debs = CACHE / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    subprocess.run(["apt-get", "download", *PACKAGES], cwd=debs, check=True)
    for f in sorted(debs.glob("*.deb")):
        subprocess.run(["dpkg-deb", "-x", str(f), str(CACHE / "x")], check=True)


if __name__ == "__main__":
    if sys.argv[1:] == ["--fill"]:
        fill()
    else:
        print(f"usage: {sys.argv[0]} --fill   (fills {CACHE})", file=sys.stderr)
        sys.exit(2)
