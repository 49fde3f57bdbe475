"""Sources of the ``heldout12``-``heldout14`` splits: manuals as a naive crawl reads them (every page's
whole text, menus and sidebars included), the garbage of ``heldout11`` mixed in, and the page chrome of
the same manuals as a garbage kind of its own. No rule or model was developed on these packages before
each split's run. Pinned Debian 12 packages per split (``ROUNDS``), downloaded once by ``--fill``:

* real domains (every page's text by an HTML-to-text that drops only scripts, styles and the
  head; cut into documents of at most MAX_DOC characters at paragraph breaks).
  ``heldout12`` (judged the navigation rule's exception for pages of content with their menus,
  ``curate.junkstats.prose_chars``): the Apache HTTP Server 2.4 manual (English pages), the Python 3.11
  documentation (every page including its indexes), the GIMP 2.10 user manual, KiCad 6's eight manuals.
  ``heldout13`` (judged that exception's revision): The Rust Programming Language (Debian's
  ``rust-doc``), Wireshark's user's and developer's guides, the C++ Annotations, HAProxy's docs.
  ``heldout14`` (judged the per-document spam drop where its words are at home): the Claws Mail
  manual, NeoMutt's manual, HomeBank's help, Sylpheed's manual and FAQ, GNU Mailutils' manual;
* ``page_chrome``: the text of the same pages' navigation elements alone (``nav``/``header``/
  ``footer``/``aside`` and elements whose class or id names a menu, sidebar, header, footer,
  breadcrumb, table of contents or related links), 800-MAX_DOC characters running on across pages
  (``garbage_common.nav_window``): what a crawl keeps of a page whose content failed to load;
* the other kinds: ``heldout11``'s generators and cache (mojibake, SEO spam, boilerplate,
  pseudo-Latin, logs, shuffled sentences, OCR noise, CSV dumps, minified code).

Fill: ``.venv/bin/python bench/lib/garbage_sources12.py --fill [--split heldout13]`` (needs ``apt-get download``). Round 11's
cache must be filled too, and the bench runs with round 11's ``PYTHONPATH`` (nupunkt, for its shuffled
sentences)::

    PYTHONPATH=/tmp/benchpkgs11 .venv/bin/python bench/bench_garbage_heldout.py --split heldout12 --work W
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
from functools import cache
from pathlib import Path

if not __package__:  # run as a script (--fill): import the shared helpers as bench/lib's module
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from lib import garbage_sources11 as g11  # noqa: E402
from lib.garbage_common import MAX_DOC, cap, chunks, nav_window  # noqa: E402
from lib.garbage_sources5 import _Html  # noqa: E402  (code only: no source of heldout5)

MIN_DOC = 400
KINDS = (*g11.KINDS, "page_chrome")
# split: (cache folder, its environment variable, pinned Debian 12 packages, {domain: (folder under the
# unpacked root, glob)})
ROUNDS = {
    "heldout12": ("/work/garbage12_cache", "GARBAGE12_CACHE",
                  {"apache2-doc": "2.4.71-1~deb12u1", "python3.11-doc": "3.11.2-6+deb12u9",
                   "gimp-help-en": "2.10.34-2", "kicad-doc-en": "6.0.11+dfsg-1"},
                  {"apache_manual": ("usr/share/doc/apache2-doc/manual/en", "**/*.html"),
                   "python_docs": ("usr/share/doc/python3.11/html", "**/*.html"),
                   "gimp_help": ("usr/share/gimp/2.0/help/en", "*.html"),
                   "kicad_docs": ("usr/share/doc/kicad/help/en", "*.html")}),
    # built after round 12 had been used to revise the navigation exception
    "heldout13": ("/work/garbage13_cache", "GARBAGE13_CACHE",
                  {"rust-doc": "1.63.0+dfsg1-2", "wireshark-doc": "4.0.17-0+deb12u3",
                   "c++-annotations-html": "12.2.0-2", "haproxy-doc": "2.6.12-1+deb12u4"},
                  {"rust_book": ("usr/share/doc/rust-doc/html/book", "**/*.html"),
                   "wireshark_guides": ("usr/share/doc/wireshark", "**/*.html"),
                   "cpp_annotations": ("usr/share/doc/c++-annotations/html", "*.html"),
                   "haproxy_docs": ("usr/share/doc/haproxy/html", "*.html")}),
    # mail and money, where the spam model's words are at home (judges the per-document spam drop);
    # NeoMutt's chapter pages only: its all-in-one manual.html repeats them
    "heldout14": ("/work/garbage14_cache", "GARBAGE14_CACHE",
                  {"claws-mail-doc": "4.1.1-2", "neomutt": "20220429+dfsg1-4.1", "homebank-data": "5.6.2-1",
                   "sylpheed-doc": "20140827-3", "mailutils-doc": "1:3.15-4"},
                  {"claws_mail_manual": ("usr/share/doc/claws-mail/manual/en", "*.html"),
                   "neomutt_manual": ("usr/share/doc/neomutt/html", "[!m]*.html"),
                   "homebank_help": ("usr/share/doc/homebank-data/help", "*.html"),
                   "sylpheed_manual": ("usr/share/doc/sylpheed-doc", "*/en/*.html"),
                   "mailutils_manual": ("usr/share/doc/mailutils/mailutils.html", "*.html")}),
}


def _cache(split: str) -> Path:
    if split not in ROUNDS:
        raise ValueError(f"garbage_sources12 holds the splits {sorted(ROUNDS)}, not {split!r}")
    default, env, _debian, _sites = ROUNDS[split]
    return Path(os.environ.get(env, default))


_CHROME = re.compile(r"nav|sidebar|menu|header|footer|breadcrumb|toc|related|toplang|bottomlang|path")


def _chrome(tag: str, a: dict) -> bool:
    """A navigation element by tag, ARIA role, or a class or id naming one."""
    if tag in ("nav", "header", "footer", "aside") or a.get("role") in ("navigation", "banner", "contentinfo",
                                                                         "search"):
        return True
    return _CHROME.search(f"{a.get('class', '')} {a.get('id', '')}".lower()) is not None


def _texts(path: Path) -> tuple[str, str]:
    """(the page's whole text, its navigation elements' text)."""
    html = path.read_text(errors="replace")
    whole, parts = _Html(lambda _t, _a: False), _Html(_chrome)
    whole.feed(html)
    parts.feed(html)
    return whole.text("main"), parts.text("nav")


def fill_cache(split: str, cache_dir: Path | None = None) -> Path:
    """Download the pinned packages of ``split`` and write ``real/<domain>.json`` ([source, text] per
    document) and ``chrome_pages.json`` ([domain, page, navigation text] per page) under ``cache_dir``
    (default: the split's cache)."""
    _default, _env, debian, sites = ROUNDS[split]
    out = Path(cache_dir or _cache(split))
    tmp = out.with_name(out.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    (tmp / "real").mkdir(parents=True)
    with tempfile.TemporaryDirectory() as dl:
        d = Path(dl)
        subprocess.run(["apt-get", "download", *(f"{n}={v}" for n, v in debian.items())], cwd=d, check=True,
                       capture_output=True, timeout=900)
        for n in debian:
            subprocess.run(["dpkg-deb", "-x", str(sorted(d.glob(f"{n}_*.deb"))[0]), str(d / "root")], check=True)
        pages = []
        for dom, (sub, pattern) in sites.items():
            base = d / "root" / sub
            docs = []
            for p in sorted(base.glob(pattern)):
                whole, nav = _texts(p)
                rel = str(p.relative_to(base))
                docs += [[s, t] for t, s in chunks(whole, f"{dom}/{rel}", MAX_DOC) if len(t) >= MIN_DOC]
                if nav.strip():
                    pages.append([dom, rel, nav])
            (tmp / "real" / f"{dom}.json").write_text(json.dumps(docs))
        (tmp / "chrome_pages.json").write_text(json.dumps(pages))
    (tmp / "MANIFEST.json").write_text(json.dumps({"debian": debian}, indent=1))
    if out.exists():
        shutil.rmtree(out)
    tmp.rename(out)
    return out


def _need(split: str, rel: str) -> Path:
    p = _cache(split) / rel
    if not p.exists():
        raise FileNotFoundError(f"{p} is missing: fill it with `.venv/bin/python bench/lib/garbage_sources12.py --fill "
                                f"--split {split}` (or set {ROUNDS[split][1]} to a filled folder)")
    return p


def real_domains(split: str) -> dict[str, list[tuple[str, str]]]:
    """The real domains of ``split``'s filled cache: (text, source) per document."""
    return {dom: [(t, s) for s, t in json.loads(_need(split, f"real/{dom}.json").read_text())]
            for dom in ROUNDS[split][3]}


@cache
def _chrome_pages(split: str) -> list[list[str]]:
    """The navigation lines of each page of ``split``'s filled cache."""
    return [[ln for ln in nav.splitlines() if ln.strip()] for _dom, _page, nav in
            json.loads(_need(split, "chrome_pages.json").read_text()) if nav.strip()]


def garbage_doc(kind: str, split: str, rng: random.Random) -> tuple[str, str | None]:
    """(garbage text, the clean original for mojibake, else None): ``page_chrome`` from ``split``'s pages,
    every other kind from ``heldout11``'s generators."""
    _cache(split)
    if kind == "page_chrome":
        return cap(nav_window(_chrome_pages(split), rng)), None
    return g11.garbage_doc(kind, g11.SPLIT, rng)


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description="Fill the caches of the heldout12-14 sources.")
    ap.add_argument("--fill", action="store_true", required=True)
    ap.add_argument("--split", choices=sorted(ROUNDS), action="append", help="default: every split")
    for sp in ap.parse_args().split or sorted(ROUNDS):
        print(fill_cache(sp))
