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
import hashlib
import os
import subprocess
import sys
from functools import cache
from pathlib import Path

from lib.garbage_sources6 import _chunks, _html_text, render, tesseract

SPLIT = "heldout7"
CACHE = Path(os.environ.get("GARBAGE7_CACHE", "/work/garbage7_cache"))
PACKAGES = ("mutt", "zsh-doc", "lynx-common", "fortune-anarchism", "nethack-common", "fonts-freefont-ttf",
            "fonts-liberation2")
KINDS = ("ocr_noise",)
FONT_FILES = (("freefont", "FreeSerif.ttf"), ("freefont", "FreeSans.ttf"),
              ("liberation2", "LiberationSerif-Regular.ttf"), ("liberation2", "LiberationSans-Regular.ttf"))


def _x(*parts: str) -> Path:
    if not (CACHE / "x").is_dir():
        raise FileNotFoundError(f"{CACHE / 'x'} is missing: the heldout7 sources are read from a cache; fill it "
                                "with `.venv/bin/python bench/lib/garbage_sources7.py --fill` (or set GARBAGE7_CACHE)")
    return CACHE.joinpath("x", *parts)


def _read(path: Path) -> str:
    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    return raw.decode("utf-8", errors="replace")


def _html_gz_text(path: Path) -> str:
    if path.suffix != ".gz":
        return _html_text(path)
    tmp = CACHE / "tmp.html"
    tmp.write_text(_read(path))
    return _html_text(tmp)


def _fortunes() -> list[str]:
    text = _read(_x("usr", "share", "games", "fortunes", "anarchism"))
    return _chunks("\n\n".join(q.strip() for q in text.split("\n%\n") if q.strip()), 1500)


@cache
def heldout7_real() -> dict[str, list[tuple[str, str]]]:
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
    for d, docs in out.items():
        out[d] = sorted(dict.fromkeys(docs), key=lambda t: hashlib.sha1(t[0].encode()).hexdigest())
    return out


def real_domains(split: str) -> dict[str, list[tuple[str, str]]]:
    if split != SPLIT:
        raise ValueError(f"garbage_sources7 holds only the {SPLIT!r} split, not {split!r}")
    return heldout7_real()


def ocr_noise(rng) -> str:
    docs = heldout7_real()
    dom = rng.choice(sorted(docs))
    src = rng.choice(docs[dom])[0][:2500]
    fonts = tuple(_x("usr", "share", "fonts", "truetype", d, f) for d, f in FONT_FILES)
    return tesseract(render(src, rng, rng.randint(60, 95), fonts))


def garbage_doc(kind: str, split: str, rng) -> tuple[str, str | None]:
    """(garbage text, None): every garbage document of this split is OCR output."""
    if split != SPLIT or kind != "ocr_noise":
        raise ValueError(f"garbage_sources7 makes only ocr_noise for {SPLIT!r}, not {kind!r} for {split!r}")
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
