"""Sources of the ``heldout14`` split: ``heldout12``'s construction (``garbage_sources12``: every page's
whole text, menus included; round 11's garbage mixed in; the pages' navigation elements alone as the
kind ``page_chrome``) on five manuals about mail and money, read by no rule or model before: the
Claws Mail user manual, NeoMutt's manual (its chapter pages; the all-in-one ``manual.html`` repeats
them), HomeBank's help, Sylpheed's manual and FAQ, and GNU Mailutils' manual. Built to judge the per-document
commercial-spam drop (``garbage:spam`` with its offer marks) where its words are at home: accounts,
messages, payments and prices.

Fill: ``.venv/bin/python bench/lib/garbage_sources14.py --fill`` (needs ``apt-get download``).
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

CACHE = Path(os.environ.get("GARBAGE14_CACHE", "/work/garbage14_cache"))
SPLIT = "heldout14"
KINDS = g12.KINDS
DEBIAN = {"claws-mail-doc": "4.1.1-2", "neomutt": "20220429+dfsg1-4.1", "homebank-data": "5.6.2-1",
          "sylpheed-doc": "20140827-3", "mailutils-doc": "1:3.15-4"}
SITES = {  # domain: (folder under the unpacked root, glob)
    "claws_mail_manual": ("usr/share/doc/claws-mail/manual/en", "*.html"),
    "neomutt_manual": ("usr/share/doc/neomutt/html", "[!m]*.html"),
    "homebank_help": ("usr/share/doc/homebank-data/help", "*.html"),
    "sylpheed_manual": ("usr/share/doc/sylpheed-doc", "*/en/*.html"),
    "mailutils_manual": ("usr/share/doc/mailutils/mailutils.html", "*.html"),
}
NEED = {"fill": "garbage_sources14", "env": "GARBAGE14_CACHE"}


def fill_cache(cache_dir: Path | None = None) -> Path:
    return g12.fill_cache(Path(cache_dir or CACHE), DEBIAN, SITES)


def real_domains(split: str) -> dict[str, list[tuple[str, str]]]:
    if split != SPLIT:
        raise ValueError(f"garbage_sources14 holds only the {SPLIT!r} split, not {split!r}")
    return g12.site_domains(CACHE, SITES, **NEED)


def garbage_doc(kind: str, split: str, rng: random.Random) -> tuple[str, str | None]:
    """(garbage text, the clean original for mojibake, else None)."""
    if split != SPLIT:
        raise ValueError(f"garbage_sources14 holds only the {SPLIT!r} split, not {split!r}")
    return g12.chrome_or_g11(kind, rng, g12.chrome_pages(CACHE, **NEED))


if __name__ == "__main__":
    fill_cli(SPLIT, CACHE, fill_cache)
