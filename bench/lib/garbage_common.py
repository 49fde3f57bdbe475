"""What the garbage held-out splits share (``garbage_sources``, ``garbage_sources3``, ``garbage_sources4``):
document cutting, a stable hash, the capping of generated garbage and the cache-filling command line."""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Callable
from pathlib import Path

MAX_DOC = 6000  # characters per document, real or garbage


def stable_hash(s: str) -> int:
    """32 bits of sha1 (the same on every run and machine, unlike ``hash``)."""
    return int(hashlib.sha1(s.encode()).hexdigest()[:8], 16)


def chunks(text: str, source: str, max_chars: int = MAX_DOC) -> list[tuple[str, str]]:
    """A long text cut at paragraph breaks into documents of at most ~max_chars (5+ words each)."""
    text = text.replace("\r\n", "\n").strip()
    out, cur, size = [], [], 0
    for para in re.split(r"\n\s*\n", text):
        if size + len(para) > max_chars and cur:
            out.append("\n\n".join(cur))
            cur, size = [], 0
        cur.append(para[:max_chars * 2])
        size += len(para) + 2
    if cur:
        out.append("\n\n".join(cur))
    return [(t, f"{source}#{i}") for i, t in enumerate(out) if len(t.split()) >= 5]


def cap(text: str) -> str:
    """At most MAX_DOC characters, cut at a line break where one is near."""
    if len(text) <= MAX_DOC:
        return text
    cut = text.rfind("\n", 0, MAX_DOC)
    return text[:cut if cut > MAX_DOC // 2 else MAX_DOC].rstrip()


def file_chunk(rng: random.Random, files: list[Path]) -> str:
    """A random window of 1500-MAX_DOC characters of one of ``files`` (CSV dumps, minified code)."""
    text = rng.choice(files).read_text(errors="replace")
    n = rng.randint(1500, MAX_DOC)
    i = rng.randrange(max(1, len(text) - n))
    return text[i:i + n]


def fill_cli(split: str, cache: Path, fill_cache: Callable[[Path], Path]) -> None:
    """``python bench/lib/garbage_sourcesN.py --fill [--cache DIR]``."""
    import argparse

    ap = argparse.ArgumentParser(description=f"Fill the cache of the {split} sources.")
    ap.add_argument("--fill", action="store_true", help=f"download and write the sources to {cache}")
    ap.add_argument("--cache", default=str(cache))
    args = ap.parse_args()
    if not args.fill:
        ap.error("nothing to do: pass --fill")
    print(fill_cache(Path(args.cache)))
