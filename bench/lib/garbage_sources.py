"""Real domains and garbage from sources outside the repository, in two disjoint halves.

``bench/bench_garbage_heldout.py`` builds its sets from here. Every source belongs to ONE half:

* ``dev``: what the detectors of ``curate.junk`` were developed on;
* ``heldout``: what they are judged on, never looked at while choosing rules or thresholds.

Real domains (``real_domains``):

* dev: the English files of ``/work/shared/corpora`` (literature, reference, techdocs, code, legal,
  news, quotes; PROVENANCE.md there);
* heldout: text shipped by this machine's packages that no dev source holds: Vim help, CMake's
  reStructuredText manual, Python standard-library docstrings, Debian changelogs, Perl POD,
  Markdown READMEs of node packages, GNU info manuals (``/usr/share/info``).

Garbage (``garbage_doc(kind, split, ...)``), the kinds of ``KINDS``; the two halves draw from
different sources or different generators:

* ``mojibake``: real non-ASCII text actually mis-decoded with Python's codecs. dev: UTF-8 read as
  cp1252 / Latin-1, and twice (double encoding), of the dev corpora and German/Spanish fortunes;
  heldout: UTF-8 read as mac_roman, cp437, cp1250, cp1251 (Russian text), koi8-r, and cp1252
  with ``errors="replace"`` (lossy), of the held-out domains and French/Polish/Czech/Russian text.
* ``seo_spam``: keyword-stuffed prose. dev: keywords from Faker's job/city lists in one set of
  templates; heldout: keywords from the ``keywords`` field of the package.json files of the node
  packages on this machine (real keyword lists) in another set of templates (article spinning).
* ``boilerplate``: dev: menus, cookie notices and footers assembled from item lists; heldout: the
  real navigation, sidebars and footers of HTML pages (``web_html`` of the shared corpora and the
  mdBook pages of the Rust documentation), everything outside the page's main content.
* ``pseudo_latin``: dev: Faker's ``la`` lorem ipsum; heldout: the classic Lorem ipsum passage cut
  and reshuffled, pseudo-words from a character trigram model of real Italian text, and Faker's
  English lorem (real English words in random order).
* ``logs``: real log lines. dev: ``/var/log/dpkg.log`` and ``/var/log/apt/term.log``; heldout:
  ``/var/log/alternatives.log``, ``/var/log/apt/history.log``, npm's debug logs, this project's
  own JSONL logs (a run of ``corpusmix demo-data``), OpenJDK's jtreg summary.
* ``shuffled_sentences``: a real document's sentences in random order. dev: dev domains, split on
  ``[.!?]`` + space; heldout: held-out domains, split with spaCy's rule-based sentencizer.
* ``ocr_noise``: real text with character confusions. dev: rn/m, l/1, O/0, e/c swaps and dropped
  characters; heldout: merged and split words, broken line hyphenation, stray punctuation.
* ``csv_dump``: real CSV files. dev: numpy's random test sets; heldout: numpy's umath validation
  sets and distro-info's ubuntu.csv.
* ``minified_code``: real minified JavaScript/CSS. dev: mdBook's mark, elasticlunr, clipboard;
  heldout: jquery, underscore, diff, ``index.min.js`` and the CSS of the Rust documentation.
"""

from __future__ import annotations

import ast
import gzip
import json
import random
import re
import subprocess
import sys
from collections import defaultdict
from collections.abc import Callable
from functools import cache
from pathlib import Path

from .garbage_common import MAX_DOC, chunks, layout_like, stable_hash

CORPORA = Path("/work/shared/corpora")
KINDS = ("mojibake", "seo_spam", "boilerplate", "pseudo_latin", "logs", "shuffled_sentences", "ocr_noise",
         "csv_dump", "minified_code")
DEV_DOMAINS = ("literature", "reference", "techdocs", "code", "legal", "news", "quotes")
HELDOUT_DOMAINS = ("vim_help", "rst_docs", "docstrings", "changelogs", "pod_docs", "readmes", "gnu_info")


def _read(p: Path) -> str:
    data = gzip.open(p).read() if p.suffix == ".gz" else p.read_bytes()
    return data.decode("utf-8", errors="replace")


def _parquet_texts(path: Path, column: str = "text") -> list[str]:
    import pyarrow.parquet as pq

    return pq.read_table(path, columns=[column]).column(column).to_pylist()


@cache
def dev_real() -> dict[str, list[tuple[str, str]]]:
    import pyarrow.parquet as pq

    out: dict[str, list[tuple[str, str]]] = {}
    for dom in DEV_DOMAINS:
        t = pq.read_table(CORPORA / f"{dom}.parquet", columns=["id", "text"]).to_pylist()
        docs = []
        for r in t:
            docs += chunks(r["text"], r["id"]) if len(r["text"]) > MAX_DOC else [(r["text"], r["id"])]
        out[dom] = docs
    return out


@cache
def heldout_real() -> dict[str, list[tuple[str, str]]]:
    srcs: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for p in sorted(Path("/usr/share/vim").glob("vim*/doc/*.txt")):
        srcs["vim_help"] += chunks(_read(p), str(p))
    for p in sorted(Path("/usr/share").glob("cmake-*/Help/**/*.rst")):
        srcs["rst_docs"] += chunks(_read(p), str(p))
    for p in sorted(Path("/usr/share/perl").glob("**/*.pod")):
        srcs["pod_docs"] += chunks(_read(p), str(p))
    for p in sorted(Path("/usr/lib/node_modules").glob("**/README.md")):
        srcs["readmes"] += chunks(_read(p), str(p))
    for p in sorted(Path("/usr/share/doc").glob("*/changelog.Debian.gz")):
        srcs["changelogs"] += chunks(_read(p)[:MAX_DOC * 2], str(p))
    for p in sorted(Path("/usr/share/info").glob("*.info*.gz")):
        text = re.sub(r"[\x00-\x08\x1f]", "", _read(p))  # info node separators
        srcs["gnu_info"] += chunks(text, str(p))
    for p in sorted(Path("/usr/lib").glob("python3*/*.py")):
        try:
            tree = ast.parse(_read(p))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node)
                if doc and len(doc) >= 300:
                    srcs["docstrings"].append((doc, f"{p}:{getattr(node, 'name', 'module')}"))
    return {d: srcs[d] for d in HELDOUT_DOMAINS if len(srcs[d]) >= 30}


HELDOUT2_DOMAINS = ("pypi_readmes", "rust_book", "debian_news", "copyright_files", "node_changelogs")


@cache
def heldout2_real() -> dict[str, list[tuple[str, str]]]:
    srcs: dict[str, list[tuple[str, str]]] = defaultdict(list)
    metas = sorted(Path("/root/.pyenv").glob("versions/*/lib/python3*/site-packages/*.dist-info/METADATA"))
    for p in metas:
        text = p.read_text(errors="replace")
        head, _, body = text.partition("\n\n")
        if len(body.split()) >= 30:
            srcs["pypi_readmes"] += chunks(body, str(p))
    rust = sorted(Path("/root/.rustup").glob("toolchains/*/share/doc/rust/html/book/ch*.html"))
    rust += sorted(Path("/root/.rustup").glob("toolchains/*/share/doc/rust/html/reference/*.html"))
    for p in rust:
        t = _main_text(p.read_text(errors="replace"))
        srcs["rust_book"] += chunks(t, str(p))
    for p in sorted(Path("/usr/share/doc").glob("*/NEWS*")):
        srcs["debian_news"] += chunks(_read(p)[:MAX_DOC * 3], str(p))
    for p in sorted(Path("/usr/share/doc").glob("*/copyright")):
        srcs["copyright_files"] += chunks(_read(p)[:MAX_DOC * 2], str(p))
    for p in sorted(Path("/usr/lib/node_modules").glob("**/*.md")):
        if p.name.lower() != "readme.md":
            srcs["node_changelogs"] += chunks(_read(p), str(p))
    return {d: srcs[d] for d in HELDOUT2_DOMAINS if len(srcs[d]) >= 30}


def real_domains(split: str) -> dict[str, list[tuple[str, str]]]:
    return {"dev": dev_real, "heldout": heldout_real, "heldout2": heldout2_real}[split]()


# -- mojibake ------------------------------------------------------------------------------------

@cache
def _multilingual(lang: str) -> list[str]:
    p = CORPORA / "multilingual" / f"{lang}.parquet"
    return [t for t in _parquet_texts(p) if 200 <= len(t)] if p.exists() else []


def _nonascii_sources(split: str) -> list[str]:
    real = [t for docs in real_domains(split).values() for t, _ in docs
            if sum(not c.isascii() for c in t) >= 5]
    langs = {"dev": ("de", "es"), "heldout": ("fr", "pl", "cs"), "heldout2": ("it", "nl")}[split]
    for lang in langs:
        real += _multilingual(lang)[:300]
    return real


def _mis_decode(text: str, read_as: str, *, errors: str = "strict") -> str | None:
    try:
        return text.encode("utf-8").decode(read_as, errors=errors)
    except UnicodeDecodeError:
        return None


def mojibake(rng: random.Random, split: str) -> tuple[str, str]:
    """(mis-decoded text, the original)."""
    if split == "dev":
        codecs = [("cp1252", 1), ("latin-1", 1), ("cp1252", 2)]
        pool = _nonascii_sources(split)
    elif split == "heldout2":
        codecs = [("iso8859_15", 1), ("cp850", 1), ("cp1257", 1), ("iso8859_2", 1), ("latin-1", 2)]
        pool = _nonascii_sources(split)
        if rng.random() < 0.25:
            pool, codecs = _multilingual("ru")[300:600], [("cp866", 1), ("mac_cyrillic", 1), ("cp1252", 1)]
    else:
        codecs = [("mac_roman", 1), ("cp437", 1), ("cp1250", 1), ("koi8_r", 1), ("cp1252-replace", 1)]
        pool = _nonascii_sources(split)
        if rng.random() < 0.25:
            pool, codecs = _multilingual("ru")[:300], [("cp1251", 1), ("koi8_r", 1), ("latin-1", 1)]
    for _ in range(50):
        src = rng.choice(pool)[:MAX_DOC]
        codec, times = rng.choice(codecs)
        out: str | None = src
        for _ in range(times):
            if out is None:
                break
            out = (_mis_decode(out, "cp1252", errors="replace") if codec == "cp1252-replace"
                   else _mis_decode(out, codec))
        if out is not None and out != src:
            return out, src
    raise RuntimeError("no mis-decodable source")


# -- SEO spam --------------------------------------------------------------------------------------

@cache
def _npm_keywords() -> list[str]:
    kws: set[str] = set()
    for p in Path("/usr/lib/node_modules").glob("**/package.json"):
        try:
            k = json.loads(p.read_text()).get("keywords") or []
        except (ValueError, UnicodeDecodeError):
            continue
        kws.update(w.strip() for w in k if isinstance(w, str) and 3 <= len(w.strip()) <= 30)
    return sorted(kws)


DEV_SPAM = [
    "Looking for the best {kw} in {place}? Our {kw} experts offer cheap {kw} services in {place}.",
    "Top rated {kw} {place} - affordable {kw} near me, {kw} deals and {kw} discounts today.",
    "Why choose our {kw}? Because we are the number one {kw} company in {place} for {kw}.",
    "Call now for a free {kw} quote! Best {kw} prices guaranteed. {kw} {place}, {kw} online.",
    "Our {kw} team provides professional {kw} and {kw2} services to customers in {place}.",
    "Get {kw} fast. {kw2} and {kw} at the lowest price. Buy {kw} online now.",
]
HELDOUT_SPAM = [
    "When it comes to {kw}, nothing beats {kw}. Many people search for {kw} every day because {kw} matters.",
    "{kw} is one of the most important things about {kw2}. Learn more about {kw} and {kw2} here.",
    "If you need {kw}, you have come to the right place for {kw}. Our {kw} guide covers {kw} tips.",
    "Discover the ultimate {kw} resource: {kw} reviews, {kw} tutorials, free {kw} downloads.",
    "The best {kw} of {year}: {kw}, {kw2}, {kw} tools and {kw} plugins compared.",
    "Related searches: {kw}, {kw} free, {kw} download, {kw} {year}, best {kw2}, {kw2} online.",
    "Read our complete review of {kw}. {kw} helps with {kw2}, and {kw2} works great with {kw}.",
]


@cache
def _pypi_keywords() -> list[str]:
    kws: set[str] = set()
    for p in Path("/root/.pyenv").glob("versions/*/lib/python3*/site-packages/*.dist-info/METADATA"):
        for ln in p.read_text(errors="replace").splitlines():
            if ln.startswith("Keywords:"):
                kws.update(w.strip() for w in re.split(r"[,;]| (?=\w)", ln[9:]) if 3 <= len(w.strip()) <= 30)
            if ln.startswith("Classifier: Topic ::"):
                kws.add(ln.rsplit("::", 1)[-1].strip().lower())
    return sorted(kws)


HELDOUT2_SPAM = [
    "Top 10 {kw} tips for {year}. Tip 1: use {kw}. Tip 2: learn {kw}. Tip 3: compare {kw} and {kw2}.",
    "Q: What is the best {kw}? A: The best {kw} is our {kw}, rated number one {kw} by {kw} users.",
    "Buy {kw} online at the best price. Free shipping on all {kw} orders. {kw} sale ends soon!",
    "{kw} {kw2} {kw} download {kw} free {kw} crack {kw} serial {kw} full version {year}",
    "Everything you need to know about {kw}: {kw} guide, {kw} tutorial, {kw} examples and {kw} tricks.",
    "Our experts reviewed every {kw} so you do not have to. Here is why {kw} beats {kw2} in {year}.",
]


def seo_spam(rng: random.Random, split: str) -> str:
    if split == "dev":
        from faker import Faker

        fk = Faker()
        fk.seed_instance(rng.randrange(1 << 30))
        kws = [fk.job().split(",")[0].lower() for _ in range(3)]
        place = fk.city()
        templates = DEV_SPAM
    elif split == "heldout":
        kws = rng.sample(_npm_keywords(), 3)
        place = ""
        templates = HELDOUT_SPAM
    else:
        kws = rng.sample(_pypi_keywords(), 3)
        place = ""
        templates = HELDOUT2_SPAM
    kw = kws[0]
    sents = []
    for _ in range(rng.randint(6, 25)):
        sents.append(rng.choice(templates).format(kw=kw, kw2=rng.choice(kws[1:]), place=place,
                                                  year=rng.randint(2015, 2025)))
    paras = []
    while sents:
        k = rng.randint(2, 5)
        paras.append(" ".join(sents[:k]))
        sents = sents[k:]
    return "\n\n".join(paras)


# -- boilerplate ---------------------------------------------------------------------------------

DEV_MENU = ["Home", "About us", "Services", "Blog", "Contact", "Shop", "Cart", "My account", "Careers", "News",
            "Login", "Register", "FAQ", "Help center", "Sitemap", "Privacy", "Terms", "Newsletter", "Follow us",
            "Facebook", "Twitter", "Instagram", "LinkedIn", "YouTube", "Share", "Print this page", "Top"]
DEV_NOTICES = [
    "This website uses cookies to improve your experience. By continuing to browse you agree to our use of cookies.",
    "We use cookies to personalise content and ads. Accept all | Reject | Manage preferences",
    "Subscribe to our newsletter and never miss an update!",
    "Copyright {year} {org}. All rights reserved.",
    "Privacy Policy | Terms of Service | Cookie Policy | Imprint",
    "You are here: Home > {org} > News",
    "Skip to main content",
    "Please enable JavaScript to view this site.",
]


def _dev_boilerplate(rng: random.Random) -> str:
    from faker import Faker

    fk = Faker()
    fk.seed_instance(rng.randrange(1 << 30))
    org = fk.company()
    lines = []
    for _ in range(rng.randint(6, 20)):
        if rng.random() < 0.5:
            lines.append(rng.choice([" | ", " · ", " • ", "  "]).join(rng.sample(DEV_MENU, rng.randint(3, 8))))
        else:
            lines.append(rng.choice(DEV_NOTICES).format(year=rng.randint(2005, 2025), org=org))
    return "\n".join(lines)


class _Outside(__import__("html.parser").parser.HTMLParser):
    """Text of an HTML page outside its main content (nav, sidebars, header, footer)."""

    MAIN = re.compile(r"\b(body|content|main|bodywrapper|documentwrapper|page-wrapper)\b")

    def __init__(self) -> None:
        super().__init__()
        self.depth_main = 0
        self.stack: list[bool] = []
        self.skip = 0
        self.parts: list[str] = []

    VOID = {"br", "img", "meta", "link", "input", "hr", "wbr", "source", "area", "col", "base", "embed"}

    def handle_starttag(self, tag, attrs):
        if tag in self.VOID:
            if tag == "br":
                self.parts.append("\n")
            return
        a = dict(attrs)
        is_main = tag == "main" or a.get("role") == "main" or (
            tag == "div" and a.get("class") in ("body", "content", "main") or a.get("id") in ("content", "main"))
        self.stack.append(is_main)
        self.depth_main += is_main
        if tag in ("script", "style", "svg", "head"):
            self.skip += 1
        if tag in ("div", "p", "li", "nav", "footer", "header", "h1", "h2", "h3", "tr", "ul", "section"):
            self.parts.append("\n")

    def handle_endtag(self, tag):
        if tag in self.VOID or not self.stack:
            return
        m = self.stack.pop()
        self.depth_main -= m
        if tag in ("script", "style", "svg", "head"):
            self.skip = max(0, self.skip - 1)

    def handle_data(self, data):
        if not self.depth_main and not self.skip:
            self.parts.append(data)


def _outside_text(html: str) -> str:
    p = _Outside()
    p.feed(html)
    lines = [" ".join(ln.split()) for ln in "".join(p.parts).split("\n")]
    return "\n".join(ln for ln in lines if ln)


class _Main(_Outside):
    """Text of an HTML page inside its main content."""

    def handle_data(self, data):
        if self.depth_main and not self.skip:
            self.parts.append(data)


def _main_text(html: str) -> str:
    p = _Main()
    p.feed(html)
    lines = [" ".join(ln.split()) for ln in "".join(p.parts).split("\n")]
    return "\n".join(ln for ln in lines if ln)


@cache
def _heldout2_boilerplate_pool() -> list[str]:
    pages = sorted(p for d in ("libxslt1-dev", "valgrind", "python3-pip", "libffi-dev")
                   for p in Path("/usr/share/doc", d, "html").glob("**/*.html"))
    out = []
    for p in pages:
        t = _outside_text(p.read_text(errors="replace"))
        if len(t.split()) >= 20:
            out.append(t[:MAX_DOC])
    return out


@cache
def _heldout_boilerplate_pool() -> list[str]:
    pages = _parquet_texts(CORPORA / "web_html" / "web_html.parquet", "html")
    rust = sorted(Path("/root/.rustup").glob("toolchains/*/share/doc/rust/html/*/**/*.html"))
    rust = [p for p in rust if stable_hash(str(p)) % 7 == 0][:400]
    pages += [p.read_text(errors="replace") for p in rust]
    out = []
    for html in pages:
        t = _outside_text(html)
        if len(t.split()) >= 20:
            out.append(t[:MAX_DOC])
    return out


def boilerplate(rng: random.Random, split: str) -> str:
    if split == "dev":
        return _dev_boilerplate(rng)
    return rng.choice(_heldout_boilerplate_pool() if split == "heldout" else _heldout2_boilerplate_pool())


# -- pseudo-Latin and other fake language -------------------------------------------------------

LOREM = ("Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et "
         "dolore magna aliqua. Ut enim ad minim veniam, quis nostrud exercitation ullamco laboris nisi ut aliquip "
         "ex ea commodo consequat. Duis aute irure dolor in reprehenderit in voluptate velit esse cillum dolore eu "
         "fugiat nulla pariatur. Excepteur sint occaecat cupidatat non proident, sunt in culpa qui officia deserunt "
         "mollit anim id est laborum. Sed ut perspiciatis unde omnis iste natus error sit voluptatem accusantium "
         "doloremque laudantium, totam rem aperiam, eaque ipsa quae ab illo inventore veritatis et quasi architecto "
         "beatae vitae dicta sunt explicabo. Nemo enim ipsam voluptatem quia voluptas sit aspernatur aut odit aut "
         "fugit, sed quia consequuntur magni dolores eos qui ratione voluptatem sequi nesciunt. Neque porro quisquam "
         "est, qui dolorem ipsum quia dolor sit amet, consectetur, adipisci velit, sed quia non numquam eius modi "
         "tempora incidunt ut labore et dolore magnam aliquam quaerat voluptatem.")


@cache
def _trigram_model() -> dict[str, list[str]]:
    words = [w.lower() for t in _multilingual("it")[:2000] for w in re.findall(r"[^\W\d_]{3,}", t)]
    model: dict[str, list[str]] = defaultdict(list)
    for w in words:
        s = "^^" + w + "$"
        for i in range(len(s) - 2):
            model[s[i:i + 2]].append(s[i + 2])
    return dict(model)


def _pseudo_word(rng: random.Random) -> str:
    m = _trigram_model()
    s = "^^"
    while len(s) < 16:
        c = rng.choice(m.get(s[-2:], ["$"]))
        if c == "$":
            break
        s += c
    return s[2:] or "a"


def _sentences_of(words: Callable[[], str], rng: random.Random, n: int) -> str:
    out = []
    for _ in range(n):
        ws = [words() for _ in range(rng.randint(5, 16))]
        out.append(" ".join(ws).capitalize() + rng.choice([".", ".", ".", ",", "?"]))
    paras, i = [], 0
    while i < len(out):
        k = rng.randint(3, 7)
        paras.append(" ".join(out[i:i + k]))
        i += k
    return "\n\n".join(paras)


EUROPAN = ("Li Europan lingues es membres del sam familie. Lor separat existentie es un myth. Por scientie, "
           "musica, sport etc, litot Europa usa li sam vocabular. Li lingues differe solmen in li grammatica, li "
           "pronunciation e li plu commun vocabules. Omnicos directe al desirabilite de un nov lingua franca: On "
           "refusa continuar payar custosi traductores. At solmen va esser necessi far uniform grammatica, "
           "pronunciation e plu sommun paroles. Ma quande lingues coalesce, li grammatica del resultant lingue es "
           "plu simplic e regulari quam ti del coalescent lingues.")


def _syllable_word(rng: random.Random) -> str:
    cons, vow = "bdfgklmnprstvz", "aeiou"
    return "".join(rng.choice(cons) + rng.choice(vow) + (rng.choice("nrs") if rng.random() < 0.3 else "")
                   for _ in range(rng.randint(1, 4)))


def pseudo_latin(rng: random.Random, split: str) -> str:
    from faker import Faker

    n = rng.randint(5, 30)
    if split == "heldout2":
        if rng.random() < 0.5:
            words = EUROPAN.replace(",", "").replace(".", "").replace(":", "").lower().split()
            return _sentences_of(lambda: rng.choice(words), rng, n)
        return _sentences_of(lambda: _syllable_word(rng), rng, n)
    if split == "dev":
        fk = Faker("la")
        fk.seed_instance(rng.randrange(1 << 30))
        return "\n\n".join(fk.paragraph(nb_sentences=rng.randint(3, 8)) for _ in range(max(1, n // 5)))
    which = rng.randrange(3)
    if which == 0:
        words = LOREM.replace(",", "").replace(".", "").lower().split()
        return _sentences_of(lambda: rng.choice(words), rng, n)
    if which == 1:
        return _sentences_of(lambda: _pseudo_word(rng), rng, n)
    fk = Faker()
    fk.seed_instance(rng.randrange(1 << 30))
    return "\n\n".join(fk.paragraph(nb_sentences=rng.randint(3, 8)) for _ in range(max(1, n // 5)))


# -- logs --------------------------------------------------------------------------------------

@cache
def _log_lines(split: str) -> list[list[str]]:
    files: list[Path] = []
    if split == "dev":
        files = [Path("/var/log/dpkg.log"), Path("/var/log/apt/term.log")]
    else:
        files = [Path("/var/log/alternatives.log"), Path("/var/log/apt/history.log")]
        files += sorted(Path("/root/.npm/_logs").glob("*.log"))
        files += sorted(Path("/usr/share/doc").glob("openjdk-*/test-*/jtreg-summary*.log"))
    groups = []
    for f in files:
        try:
            lines = [ln for ln in f.read_text(errors="replace").splitlines() if ln.strip()]
        except OSError:
            continue
        if len(lines) >= 20:
            groups.append(lines)
    if split == "heldout":
        groups.append(_own_jsonl_log())
    return groups


@cache
def _own_jsonl_log() -> list[str]:
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        r = subprocess.run([sys.executable, "-m", "corpusmix.cli", "demo-data", "--output", d], capture_output=True,
                           text=True, cwd=Path(__file__).resolve().parents[2], timeout=300)
    lines = [ln for ln in (r.stderr + r.stdout).splitlines() if ln.startswith("{")]
    return lines if len(lines) >= 5 else [ln for ln in (r.stderr + r.stdout).splitlines() if ln.strip()]


@cache
def _heldout2_logs() -> list[list[str]]:
    runs = [[sys.executable, "-X", "importtime", "-c", "import json, email.parser, http.client, asyncio"],
            ["ls", "-la", "--full-time", "/usr/bin", "/usr/lib/x86_64-linux-gnu"],
            ["find", "/usr/share/doc", "-maxdepth", "2", "-printf", "%TY-%Tm-%Td %TH:%TM:%TS %s %p\\n"]]
    groups = []
    for cmd in runs:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        lines = [ln for ln in (r.stdout + r.stderr).splitlines() if ln.strip()]
        if len(lines) >= 20:
            groups.append(lines)
    return groups


def logs(rng: random.Random, split: str) -> str:
    if split == "heldout2":
        lines = rng.choice(_heldout2_logs())
        k = rng.randint(10, 60)
        i = rng.randrange(max(1, len(lines) - k))
        return "\n".join(lines[i:i + k])
    lines = rng.choice(_log_lines(split))
    k = rng.randint(10, 60)
    i = rng.randrange(max(1, len(lines) - k))
    return "\n".join(lines[i:i + k])


# -- shuffled sentences ------------------------------------------------------------------------

_SENT = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])")


@cache
def _sentencizer():
    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.max_length = 10 ** 7
    return nlp


def shuffled_sentences(rng: random.Random, split: str) -> str:
    docs = [t for ds in real_domains(split).values() for t, _ in ds]
    for _ in range(200):
        src = rng.choice(docs)
        if split == "dev":
            sents = [s for s in _SENT.split(" ".join(src.split())) if s]
        else:
            sents = [s.text for s in _sentencizer()(" ".join(src.split())).sents if s.text.strip()]
        if len(sents) >= 6:
            order = list(range(len(sents)))
            while order == sorted(order):
                rng.shuffle(order)
            return layout_like(src, [sents[i] for i in order])
    raise RuntimeError("no document with 6+ sentences")


# -- OCR noise --------------------------------------------------------------------------------

def ocr_noise(rng: random.Random, split: str) -> str:
    docs = [t for ds in real_domains(split).values() for t, _ in ds if len(t) >= 400]
    src = rng.choice(docs)[:MAX_DOC]
    rate = rng.uniform(0.08, 0.2)
    out = []
    if split == "dev":
        swaps = {"m": "rn", "l": "1", "O": "0", "e": "c", "i": "l", "a": "o", "h": "b", "n": "ri", "t": "f"}
        for c in src:
            r = rng.random()
            if r < rate and c in swaps:
                out.append(swaps[c])
            elif r < rate * 1.3 and c.isalpha():
                continue
            else:
                out.append(c)
        return "".join(out)
    if split == "heldout2":
        pairs = [("rn", "m"), ("cl", "d"), ("li", "h"), ("vv", "w"), ("fi", "f1"), ("ri", "n"), ("u", "ii")]
        for w in src.split(" "):
            if rng.random() < rate * 2:
                a, b = rng.choice(pairs)
                w = w.replace(b, a, 1) if b in w else (w.replace(a, b, 1) if a in w else w.swapcase())
            out.append(w)
        return "".join(x + ("" if rng.random() < rate / 2 else " ") for x in out).rstrip()
    words = src.split(" ")
    i = 0
    while i < len(words):
        w = words[i]
        r = rng.random()
        if r < rate and i + 1 < len(words):
            out.append(w + words[i + 1])
            i += 2
            continue
        if r < rate * 2 and len(w) > 4:
            k = rng.randrange(1, len(w) - 1)
            w = w[:k] + rng.choice([" ", "- ", "-\n"]) + w[k:]
        if rng.random() < rate:
            w = w + rng.choice(list(",.;:'`^~|"))
        out.append(w)
        i += 1
    return " ".join(out)


# -- CSV and minified code ----------------------------------------------------------------------

def _files(split: str, kind: str) -> list[Path]:
    if split == "heldout2":
        return _heldout2_files(kind)
    if kind == "csv":
        np_data = sorted(Path(sys.prefix).glob("lib/python3*/site-packages/numpy/random/tests/data/*.csv")) + sorted(
            Path("/root/.pyenv").glob("versions/*/lib/python3*/site-packages/numpy/random/tests/data/*.csv"))
        if split == "dev":
            return np_data
        return sorted(Path("/root/.pyenv").glob("versions/*/lib/python3*/site-packages/numpy/_core/tests/data/*.csv")
                      ) + [Path("/usr/share/distro-info/ubuntu.csv")]
    found = sorted({p.name: p for p in Path("/").glob("root/.rustup/toolchains/*/share/doc/rust/html/**/*.min.*")
                    }.values()) + sorted(Path("/usr/share/javascript").glob("**/*.min.js"))
    dev_names = ("mark", "elasticlunr", "clipboard")
    return [p for p in found if p.name.startswith(dev_names) == (split == "dev")]


@cache
def _heldout2_files(kind: str) -> list[Path]:
    """heldout2: CSV written from real tables (zone files, the installed packages), minified by
    stripping the whitespace of npm's bundled JavaScript (written to a cache folder once)."""
    import csv
    import io
    import tempfile

    d = Path(tempfile.gettempdir()) / "garbage_sources_heldout2"
    d.mkdir(exist_ok=True)
    if kind == "csv":
        out = []
        for tab in sorted(Path("/usr/share/zoneinfo").glob("*.tab")):
            rows = [ln.split("\t") for ln in tab.read_text().splitlines() if ln and not ln.startswith("#")]
            buf = io.StringIO()
            csv.writer(buf).writerows(rows)
            (d / f"{tab.stem}.csv").write_text(buf.getvalue())
            out.append(d / f"{tab.stem}.csv")
        r = subprocess.run(["dpkg-query", "-W", "-f", "${Package},${Version},${Installed-Size},${Architecture}\\n"],
                           capture_output=True, text=True)
        (d / "packages.csv").write_text(r.stdout)
        return out + [d / "packages.csv"]
    out = []
    for p in sorted(Path("/usr/lib/node_modules/npm/node_modules").glob("*/lib/*.js"))[:80]:
        text = re.sub(r"/\*.*?\*/|^\s*//.*$", "", p.read_text(errors="replace"), flags=re.S | re.M)
        mini = re.sub(r"\s*([{}();,=:+\-*/<>!&|?])\s*", r"\1", " ".join(text.split()))
        if len(mini) > 2000:
            (d / f"{p.parent.parent.name}-{p.stem}.min.js").write_text(mini)
            out.append(d / f"{p.parent.parent.name}-{p.stem}.min.js")
    return out


def file_chunk(rng: random.Random, split: str, kind: str) -> str:
    files = [p for p in _files(split, kind) if p.exists() and p.stat().st_size > 1000]
    text = rng.choice(files).read_text(errors="replace")
    n = rng.randint(1500, MAX_DOC)
    i = rng.randrange(max(1, len(text) - n))
    return text[i:i + n]


GENERATORS: dict[str, Callable[[random.Random, str], str]] = {
    "mojibake": lambda rng, split: mojibake(rng, split)[0], "seo_spam": seo_spam, "boilerplate": boilerplate, "pseudo_latin": pseudo_latin,
    "logs": logs, "shuffled_sentences": shuffled_sentences, "ocr_noise": ocr_noise,
    "csv_dump": lambda rng, split: file_chunk(rng, split, "csv"),
    "minified_code": lambda rng, split: file_chunk(rng, split, "min"),
}


def garbage_doc(kind: str, split: str, rng: random.Random) -> tuple[str, str | None]:
    """(garbage text, the clean original for mojibake, else None)."""
    if kind == "mojibake":
        return mojibake(rng, split)
    return GENERATORS[kind](rng, split), None
