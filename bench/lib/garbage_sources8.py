"""An eighth held-out split, ``heldout8``: OCR damage made by a real OCR engine from fonts no earlier split
rendered, inside real domains no earlier split used.

``bench/bench_garbage_heldout.py --split heldout8`` builds its set from here; the interface is the one of
``bench/lib/garbage_sources.py`` (``KINDS``, ``real_domains(split)``, ``garbage_doc(kind, split, rng)``).
As in ``heldout6`` and ``heldout7`` every garbage document is OCR output, so the set judges one kind,
``ocr_noise``, and the real documents kept. The rendering, degradation and Tesseract settings are
``heldout6``'s (its ``render`` and ``tesseract``), with other fonts: URW's Nimbus Roman and Nimbus Sans
(``fonts-urw-base35``) and Carlito and Caladea (``fonts-crosextra-carlito``, ``fonts-crosextra-caladea``).

Real domains (documents of 400-6000 characters, long texts cut at paragraph breaks), from Debian bookworm
packages (``apt-get download``), none used by an earlier split, by the dev set or by
``bench/bench_unseen_domains.py``:

* ``postfix_docs``: Postfix's manual pages and READMEs (``postfix-doc`` 3.7.11, HTML as text);
* ``exim_spec``: the Exim specification (``exim4-doc-html`` 4.96, ``spec_html``, HTML as text);
* ``hg_help``: Mercurial's help topics (``mercurial-common`` 6.3.2, ``mercurial/helptext/*.txt``), in
  documents of up to 2,500 characters;
* ``emacs_etc``: Emacs's ``PROBLEMS``, ``DEBUG``, ``TODO`` and ``NEWS.24``-``NEWS.27`` (``emacs-common`` 28.2; ``TODO`` is the name of its wish-list file);
* ``kitten_items``: robotfindskitten's non-kitten items (``robotfindskitten``, ``vanilla.nki``), in file
  order, joined into documents of up to 600 characters.

Everything is read from a cache folder (``GARBAGE8_CACHE``, default ``/work/garbage8_cache``) that holds the
packages unpacked under ``x/`` (filled by ``--fill``); the build needs ``tesseract`` on the PATH and
BeautifulSoup 4, as ``heldout6``'s.
"""

from __future__ import annotations

from pathlib import Path

from lib.garbage_sources6 import OcrSplit, _chunks, _html_text

SPLIT = "heldout8"
PACKAGES = ("postfix-doc", "exim4-doc-html", "mercurial-common", "emacs-common", "robotfindskitten",
            "fonts-urw-base35", "fonts-crosextra-carlito", "fonts-crosextra-caladea")
KINDS = ("ocr_noise",)
FONT_FILES = (("opentype", "urw-base35", "NimbusRoman-Regular.otf"), ("opentype", "urw-base35", "NimbusSans-Regular.otf"),
              ("truetype", "crosextra", "Carlito-Regular.ttf"), ("truetype", "crosextra", "Caladea-Regular.ttf"))


def _x(*parts: str) -> Path:
    return ROUND.x(*parts)


def _real() -> dict[str, list[tuple[str, str]]]:
    doc = _x("usr", "share", "doc")
    postfix = sorted((doc / "postfix" / "html").glob("*.html"))
    exim = sorted((doc / "exim4-doc-html" / "spec_html").glob("*.html"))
    hg = sorted(_x("usr", "lib", "python3", "dist-packages", "mercurial", "helptext").glob("*.txt"))
    etc = sorted(_x("usr", "share", "emacs").glob("*/etc"))[0]
    # Emacs's own files of those names (its known problems, debugging notes, wish list, release notes)
    emacs = [etc / n for n in ("PROBLEMS", "DEBUG", "TODO", "NEWS.24", "NEWS.25", "NEWS.26", "NEWS.27")]
    nki = _x("usr", "share", "games", "robotfindskitten", "vanilla.nki").read_text(errors="replace")
    out: dict[str, list[tuple[str, str]]] = {
        "postfix_docs": [(c, p.name) for p in postfix for c in _chunks(_html_text(p))],
        "exim_spec": [(c, p.name) for p in exim for c in _chunks(_html_text(p))],
        "hg_help": [(c, p.name) for p in hg for c in _chunks(p.read_text(errors="replace"), 2500)],
        "emacs_etc": [(c, p.name) for p in emacs for c in _chunks(p.read_text(errors="replace"))],
        "kitten_items": [(c, "vanilla.nki") for c in _chunks("\n\n".join(
            ln.strip() for ln in nki.splitlines() if ln.strip()), 600)],
    }
    return out


ROUND = OcrSplit(SPLIT, "garbage_sources8", "GARBAGE8_CACHE", PACKAGES, _real, FONT_FILES)
real_domains, garbage_doc = ROUND.real_domains, ROUND.garbage_doc

if __name__ == "__main__":
    ROUND.main()
