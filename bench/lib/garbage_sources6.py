"""A sixth held-out split, ``heldout6``: OCR damage made by a real OCR engine, inside real domains no
earlier split used.

``bench/bench_garbage_heldout.py --split heldout6`` builds its set from here; the interface is the one of
``bench/lib/garbage_sources.py`` (``KINDS``, ``real_domains(split)``, ``garbage_doc(kind, split, rng)``).
This round judges one kind, ``ocr_noise``, and the real documents kept: every garbage document of the set
is OCR output, so its "eight kinds" figure is the OCR figure.

OCR damage in rounds 1-5 came from confusion tables (nlpaug's ``OcrAug``, noisocr/typo, Tesseract's
``unicharambigs``) applied to words. Here it comes from an OCR engine reading an image of the text:
each document is rendered with Pillow in a DejaVu font at a small size, degraded (downscaled and
upsampled, blurred, speckled, slightly rotated; every setting drawn per document from fixed ranges)
and read back by Tesseract 5.3.0 (Debian ``tesseract-ocr``, ``tesseract-ocr-eng``, LSTM engine,
``--psm 6``). What Tesseract gets wrong is whatever it gets wrong: no error of it is chosen here.

Real domains (documents of 400-6000 characters, long texts cut at paragraph breaks), from Debian
bookworm packages (``apt-get download``), none used by an earlier split, by the dev set or by
``bench/bench_unseen_domains.py``:

* ``postgres_manual``: the PostgreSQL 15 manual (``postgresql-doc-15`` 15.20, its HTML pages as text);
* ``r_manuals``: the R manuals (``r-doc-html`` 4.2.2: R-intro, R-lang, R-data, R-admin, R-exts, R-ints,
  R-FAQ, as text);
* ``crawl_descriptions``: the English description database of Dungeon Crawl Stone Soup
  (``crawl-common`` 0.28.0, ``dat/descript/*.txt``: monsters, items, spells, gods, quotes...), entries
  in file order joined into documents of up to 3,000 characters (as are Freeciv's);
* ``freeciv_help``: the help texts of Freeciv 3.0 (``freeciv-data`` 3.0.6: ``helpdata.txt``, the
  ``helptext`` of the civ2civ3 ruleset's units, buildings, techs, terrain and governments, and the
  nations' legends), joined into documents;
* ``debian_faq_history``: the Debian FAQ (``debian-faq`` 11.1) and "A Brief History of Debian"
  (``debian-history`` 2.28), English HTML as text.

Everything is read from a cache folder (``GARBAGE6_CACHE``, default ``/work/garbage6_cache``) that holds the
five packages unpacked under ``x/`` (``apt-get download`` then ``dpkg-deb -x``, done by ``--fill``); the
build needs ``tesseract`` on the PATH (``apt-get install tesseract-ocr``) and BeautifulSoup 4 (``pip
install --target /tmp/benchpkgs beautifulsoup4``), neither a dependency of the project.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

SPLIT = "heldout6"
PACKAGES = ("postgresql-doc-15", "r-doc-html", "crawl-common", "freeciv-data", "debian-faq", "debian-history")
KINDS = ("ocr_noise",)
MIN_DOC, MAX_DOC = 400, 6000
GROUPED_DOC = 3000  # short entries (descriptions, help texts) are joined up to this many characters
FONTS = ("DejaVuSerif.ttf", "DejaVuSans.ttf", "DejaVuSansCondensed.ttf", "DejaVuSerifCondensed.ttf")
FONT_DIR = Path("/usr/share/fonts/truetype/dejavu")


def _x(*parts: str) -> Path:
    return ROUND.x(*parts)


def _chunks(text: str, max_doc: int = MAX_DOC) -> list[str]:
    """``text`` cut at paragraph breaks into documents of MIN_DOC-``max_doc`` characters (not
    ``garbage_common.chunks``, which keeps short pieces and long paragraphs: the registered round-6 set
    was cut with this one)."""
    out, cur = [], ""
    for para in re.split(r"\n\s*\n", text):
        para = para.strip()
        if not para:
            continue
        if cur and len(cur) + len(para) + 2 > max_doc:
            if len(cur) >= MIN_DOC:
                out.append(cur)
            cur = ""
        cur = f"{cur}\n\n{para}" if cur else para[:max_doc]
    if len(cur) >= MIN_DOC:
        out.append(cur)
    return out


def _html_text(path: Path) -> str:
    """The visible text of an HTML page, blocks as paragraphs, runs of spaces collapsed."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(path.read_text(errors="replace"), "html.parser")
    for tag in soup(["script", "style", "head", "nav"]):
        tag.decompose()
    for tag in soup.find_all(["p", "div", "pre", "li", "h1", "h2", "h3", "h4", "tr", "dt", "dd", "table"]):
        tag.insert_before("\n\n")
    text = soup.get_text()
    paras = [re.sub(r"[ \t\r\f\v]+", " ", re.sub(r"\s*\n\s*", "\n", p)).strip() for p in re.split(r"\n\s*\n", text)]
    return "\n\n".join(p for p in paras if p)


def _grouped(entries: list[str]) -> list[str]:
    """Short entries joined in order into documents of MIN_DOC-GROUPED_DOC characters."""
    return _chunks("\n\n".join(e.strip() for e in entries if e.strip()), GROUPED_DOC)


def _crawl() -> list[str]:
    entries = []
    for f in sorted(_x("usr", "share", "crawl", "dat", "descript").glob("*.txt")):
        for e in f.read_text(errors="replace").split("%%%%"):
            lines = [ln for ln in e.strip().split("\n") if not ln.startswith("#")]
            if len(lines) >= 3:  # a key line, a blank line, the description
                entries.append("\n".join(lines))
    return _grouped(entries)


_STRING = re.compile(r'_\("((?:[^"\\]|\\.)*)"\)', re.S)


def _freeciv() -> list[str]:
    base = _x("usr", "share", "games", "freeciv")
    entries = []
    files = [base / "helpdata.txt"] + [base / "civ2civ3" / f"{n}.ruleset" for n in
                                        ("units", "buildings", "techs", "terrain", "governments")]
    files += sorted((base / "nation").glob("*.ruleset"))  # the nations' legends
    for f in files:
        text = f.read_text(errors="replace")
        for block in re.split(r"\n\[", text):
            strings = [s.replace("\\\n", "").replace('\\"', '"').replace("\\n", "\n")
                       for s in _STRING.findall(block)]
            body = [s for s in strings if len(s.split()) >= 8]  # help paragraphs, not names
            if body:
                entries.append("\n\n".join(body))
    return _grouped(entries)


def _real() -> dict[str, list[tuple[str, str]]]:
    doc = _x("usr", "share", "doc")
    pg = sorted((doc / "postgresql-doc-15" / "html").glob("*.html"))
    r = sorted((doc / "r-doc-html" / "manual").glob("R-*.html"))
    deb = sorted((doc / "debian" / "FAQ").glob("*.en.html")) + sorted(
        (doc / "debian-history" / "docs").glob("*.en.html"))
    out: dict[str, list[tuple[str, str]]] = {
        "postgres_manual": [(c, p.name) for p in pg for c in _chunks(_html_text(p))],
        "r_manuals": [(c, p.name) for p in r for c in _chunks(_html_text(p))],
        "debian_faq_history": [(c, p.name) for p in deb for c in _chunks(_html_text(p))],
        "crawl_descriptions": [(c, "descript") for c in _crawl()],
        "freeciv_help": [(c, "help") for c in _freeciv()],
    }
    return out


# -- OCR by Tesseract of a degraded rendering ------------------------------------------------------------

def render(text: str, rng, width_chars: int, fonts: tuple[Path, ...] | None = None) -> bytes:
    """A PNG of ``text`` wrapped at ``width_chars`` in one of ``fonts`` (default: DejaVu's FONTS), degraded
    with settings drawn from ``rng``."""
    import textwrap

    from PIL import Image, ImageDraw, ImageFilter, ImageFont

    font_file = rng.choice(fonts) if fonts else FONT_DIR / rng.choice(FONTS)
    font = ImageFont.truetype(str(font_file), rng.randint(12, 22))
    lines = []
    for para in text.split("\n"):
        lines.extend(textwrap.wrap(para, width_chars) or [""])
    asc, desc = font.getmetrics()
    lh = asc + desc + rng.randint(1, 4)
    w = int(max((font.getlength(ln) for ln in lines), default=10)) + 40
    img = Image.new("L", (w, lh * len(lines) + 40), 255)
    draw = ImageDraw.Draw(img)
    for i, ln in enumerate(lines):
        draw.text((20, 20 + i * lh), ln, font=font, fill=rng.randint(0, 70))
    scale = rng.uniform(0.55, 1.0)  # a low-resolution scan
    small = img.resize((max(1, int(img.width * scale)), max(1, int(img.height * scale))), Image.BILINEAR)
    img = small.resize(img.size, Image.BILINEAR).rotate(rng.uniform(-0.8, 0.8), fillcolor=255)
    img = img.filter(ImageFilter.GaussianBlur(rng.uniform(0.2, 0.9)))
    px = img.load()
    for _ in range(int(img.width * img.height * rng.uniform(0.002, 0.01))):  # specks and drop-outs
        x, y = rng.randrange(img.width), rng.randrange(img.height)
        px[x, y] = 0 if rng.random() < 0.5 else 255
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def tesseract(png: bytes) -> str:
    """Tesseract's English reading of a PNG (LSTM engine, one uniform block of text)."""
    if shutil.which("tesseract") is None:
        raise FileNotFoundError("tesseract is not on the PATH: the heldout6 OCR noise needs it "
                                "(apt-get install tesseract-ocr tesseract-ocr-eng)")
    got = subprocess.run(["tesseract", "stdin", "stdout", "-l", "eng", "--oem", "1", "--psm", "6"],
                         input=png, capture_output=True, timeout=300, env=dict(os.environ, OMP_THREAD_LIMIT="1"))
    if got.returncode != 0:
        raise RuntimeError(f"tesseract failed: {got.stderr.decode(errors='replace')[-300:]}")
    return got.stdout.decode("utf-8", errors="replace").strip()


class OcrSplit:
    """A held-out split whose garbage is Tesseract's reading of its own real documents (rounds 6-9): real
    domains built by ``build`` from Debian packages unpacked in a cache folder (``$env``, default
    ``/work/garbage<N>_cache``), every garbage document the OCR of one of them (the first 2,500
    characters of a document of a domain drawn at random), rendered in one of ``fonts`` (paths under
    ``usr/share/fonts`` of the cache; None: DejaVu, installed). ``python bench/lib/<module>.py --fill``
    downloads and unpacks the packages."""

    def __init__(self, split: str, module: str, env: str, packages: tuple[str, ...],
                 build: Callable[[], dict[str, list[tuple[str, str]]]],
                 fonts: tuple[tuple[str, ...], ...] | None = None) -> None:
        self.split, self.module, self.env, self.packages = split, module, env, packages
        self.cache = Path(os.environ.get(env, f"/work/garbage{split.removeprefix('heldout')}_cache"))
        self._build, self.fonts = build, fonts
        self._real: dict[str, list[tuple[str, str]]] | None = None

    def x(self, *parts: str) -> Path:
        """A path under the cache's unpacked packages (a clear error when the cache is not filled)."""
        if not (self.cache / "x").is_dir():
            raise FileNotFoundError(f"{self.cache / 'x'} is missing: the {self.split} sources are read from a cache; "
                                    f"fill it with `.venv/bin/python bench/lib/{self.module}.py --fill` (or set "
                                    f"{self.env})")
        return self.cache.joinpath("x", *parts)

    def real(self) -> dict[str, list[tuple[str, str]]]:
        """The real domains, each in a fixed order that does not follow the files: sha1 of the text."""
        if self._real is None:
            self._real = {d: sorted(dict.fromkeys(docs), key=lambda t: hashlib.sha1(t[0].encode()).hexdigest())
                          for d, docs in self._build().items()}
        return self._real

    def real_domains(self, split: str) -> dict[str, list[tuple[str, str]]]:
        if split != self.split:
            raise ValueError(f"{self.module} holds only the {self.split!r} split, not {split!r}")
        return self.real()

    def garbage_doc(self, kind: str, split: str, rng) -> tuple[str, str | None]:
        """(garbage text, None): every garbage document of this split is OCR output."""
        if split != self.split or kind != "ocr_noise":
            raise ValueError(f"{self.module} makes only ocr_noise for {self.split!r}, not {kind!r} for {split!r}")
        docs = self.real()
        dom = rng.choice(sorted(docs))
        src = rng.choice(docs[dom])[0][:2500]
        fonts = tuple(self.x("usr", "share", "fonts", *f) for f in self.fonts) if self.fonts else None
        return tesseract(render(src, rng, rng.randint(60, 95), fonts)), None

    def fill(self) -> None:
        """Download the packages and unpack them under the cache's ``x``."""
        debs = self.cache / "debs"
        debs.mkdir(parents=True, exist_ok=True)
        subprocess.run(["apt-get", "download", *self.packages], cwd=debs, check=True)
        for f in sorted(debs.glob("*.deb")):
            subprocess.run(["dpkg-deb", "-x", str(f), str(self.cache / "x")], check=True)

    def main(self) -> None:
        if sys.argv[1:] == ["--fill"]:
            self.fill()
        else:
            print(f"usage: {sys.argv[0]} --fill   (fills {self.cache})", file=sys.stderr)
            sys.exit(2)


ROUND = OcrSplit(SPLIT, "garbage_sources6", "GARBAGE6_CACHE", PACKAGES, _real)
real_domains, garbage_doc = ROUND.real_domains, ROUND.garbage_doc

if __name__ == "__main__":
    ROUND.main()
