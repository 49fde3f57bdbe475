"""Sources of the ``heldout13`` split: ``heldout12``'s construction (``garbage_sources12``: every page's
whole text, menus included; round 11's garbage mixed in; the pages' navigation elements alone as the
kind ``page_chrome``) on four other manuals, read by no rule or model before: The Rust Programming
Language (the book of Debian's ``rust-doc``), Wireshark's user's and developer's guides, Frank Brokken's
C++ Annotations, and HAProxy's documentation. Built to judge the navigation rule's exception after
round 12 had been used to revise it.

Fill: ``.venv/bin/python bench/lib/garbage_sources13.py --fill`` (needs ``apt-get download``).
"""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

if not __package__:  # run as a script (--fill): import the shared helpers as bench/lib's module
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from lib import garbage_sources12 as g12  # noqa: E402
from lib.garbage_common import fill_cli  # noqa: E402

CACHE = Path(os.environ.get("GARBAGE13_CACHE", "/work/garbage13_cache"))
SPLIT = "heldout13"
KINDS = g12.KINDS
DEBIAN = {"rust-doc": "1.63.0+dfsg1-2", "wireshark-doc": "4.0.17-0+deb12u3", "c++-annotations-html": "12.2.0-2",
          "haproxy-doc": "2.6.12-1+deb12u4"}
SITES = {  # domain: (folder under the unpacked root, glob)
    "rust_book": ("usr/share/doc/rust-doc/html/book", "**/*.html"),
    "wireshark_guides": ("usr/share/doc/wireshark", "**/*.html"),
    "cpp_annotations": ("usr/share/doc/c++-annotations/html", "*.html"),
    "haproxy_docs": ("usr/share/doc/haproxy/html", "*.html"),
}
NEED = {"fill": "garbage_sources13", "env": "GARBAGE13_CACHE"}


def fill_cache(cache_dir: Path | None = None) -> Path:
    return g12.fill_cache(Path(cache_dir or CACHE), DEBIAN, SITES)


def real_domains(split: str) -> dict[str, list[tuple[str, str]]]:
    if split != SPLIT:
        raise ValueError(f"garbage_sources13 holds only the {SPLIT!r} split, not {split!r}")
    return g12.site_domains(CACHE, SITES, **NEED)


def garbage_doc(kind: str, split: str, rng: random.Random) -> tuple[str, str | None]:
    """(garbage text, the clean original for mojibake, else None)."""
    if split != SPLIT:
        raise ValueError(f"garbage_sources13 holds only the {SPLIT!r} split, not {split!r}")
    return g12.chrome_or_g11(kind, rng, g12.chrome_pages(CACHE, **NEED))


if __name__ == "__main__":
    fill_cli(SPLIT, CACHE, fill_cache)
