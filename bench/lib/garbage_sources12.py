"""Sources of the ``heldout12`` split: four manuals as a naive crawl reads them (every page's whole
text, menus and sidebars included), the garbage of ``heldout11`` mixed in, and the page chrome of
the same manuals as a garbage kind of its own.

Built to judge the navigation rule's exception for pages of content with their menus
(``curate.junkstats.prose_chars``); no rule or model was developed on these packages. Pinned Debian
12 packages (``DEBIAN``), downloaded once by ``--fill`` into ``CACHE``:

* real domains (every page's text by an HTML-to-text that drops only scripts, styles and the
  head; cut into documents of at most MAX_DOC characters at paragraph breaks):
  ``apache_manual`` (the Apache HTTP Server 2.4 manual, English pages), ``python_docs`` (the Python
  3.11 documentation, every page including its indexes), ``gimp_help`` (the GIMP 2.10 user manual),
  ``kicad_docs`` (KiCad 6's eight manuals, one page each);
* ``page_chrome``: the text of the same pages' navigation elements alone (``nav``/``header``/
  ``footer``/``aside`` and elements whose class or id names a menu, sidebar, header, footer,
  breadcrumb, table of contents or related links), 800-MAX_DOC characters running on across pages
  (``garbage_common.nav_window``): what a crawl keeps of a page whose content failed to load;
* the other kinds: ``heldout11``'s generators and cache (mojibake, SEO spam, boilerplate,
  pseudo-Latin, logs, shuffled sentences, OCR noise, CSV dumps, minified code).

Fill: ``.venv/bin/python bench/lib/garbage_sources12.py --fill`` (needs ``apt-get download``). Round 11's
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
from lib.garbage_common import MAX_DOC, cap, chunks, fill_cli, nav_window  # noqa: E402
from lib.garbage_sources5 import _Html  # noqa: E402  (code only: no source of heldout5)

CACHE = Path(os.environ.get("GARBAGE12_CACHE", "/work/garbage12_cache"))
SPLIT = "heldout12"
MIN_DOC = 400
KINDS = (*g11.KINDS, "page_chrome")
DEBIAN = {"apache2-doc": "2.4.71-1~deb12u1", "python3.11-doc": "3.11.2-6+deb12u9", "gimp-help-en": "2.10.34-2",
          "kicad-doc-en": "6.0.11+dfsg-1"}
SITES = {  # domain: (folder under the unpacked root, glob)
    "apache_manual": ("usr/share/doc/apache2-doc/manual/en", "**/*.html"),
    "python_docs": ("usr/share/doc/python3.11/html", "**/*.html"),
    "gimp_help": ("usr/share/gimp/2.0/help/en", "*.html"),
    "kicad_docs": ("usr/share/doc/kicad/help/en", "*.html"),
}
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


def fill_cache(cache_dir: Path | None = None, debian: dict[str, str] = DEBIAN,
               sites: dict[str, tuple[str, str]] = SITES) -> Path:
    """Download the pinned packages ``debian`` and write ``real/<domain>.json`` ([source, text] per
    document) and ``chrome_pages.json`` ([domain, page, navigation text] per page) of ``sites`` under
    ``cache_dir``."""
    out = Path(cache_dir or CACHE)
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


def _need(rel: str, cache_dir: Path = CACHE, fill: str = "garbage_sources12", env: str = "GARBAGE12_CACHE") -> Path:
    p = cache_dir / rel
    if not p.exists():
        raise FileNotFoundError(f"{p} is missing: fill it with `.venv/bin/python bench/lib/{fill}.py --fill` (or set "
                                f"{env} to a filled folder)")
    return p


def site_domains(cache_dir: Path, sites: dict[str, tuple[str, str]], **need) -> dict[str, list[tuple[str, str]]]:
    """The real domains of a filled cache: (text, source) per document."""
    return {dom: [(t, s) for s, t in json.loads(_need(f"real/{dom}.json", cache_dir, **need).read_text())]
            for dom in sites}


@cache
def chrome_pages(cache_dir: Path, **need) -> list[list[str]]:
    """The navigation lines of each page of a filled cache."""
    return [[ln for ln in nav.splitlines() if ln.strip()] for _dom, _page, nav in
            json.loads(_need("chrome_pages.json", cache_dir, **need).read_text()) if nav.strip()]


def chrome_or_g11(kind: str, rng: random.Random, pages: list[list[str]]) -> tuple[str, str | None]:
    """A ``page_chrome`` document drawn from ``pages``, or a document of ``heldout11``'s kind ``kind``."""
    if kind == "page_chrome":
        return cap(nav_window(pages, rng)), None
    return g11.garbage_doc(kind, g11.SPLIT, rng)


def real_domains(split: str) -> dict[str, list[tuple[str, str]]]:
    if split != SPLIT:
        raise ValueError(f"garbage_sources12 holds only the {SPLIT!r} split, not {split!r}")
    return site_domains(CACHE, SITES)


def garbage_doc(kind: str, split: str, rng: random.Random) -> tuple[str, str | None]:
    """(garbage text, the clean original for mojibake, else None)."""
    if split != SPLIT:
        raise ValueError(f"garbage_sources12 holds only the {SPLIT!r} split, not {split!r}")
    return chrome_or_g11(kind, rng, chrome_pages(CACHE))


if __name__ == "__main__":
    fill_cli(SPLIT, CACHE, fill_cache)
