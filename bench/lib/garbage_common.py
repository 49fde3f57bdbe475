"""What the garbage held-out splits share (``garbage_sources``, ``garbage_sources3`` ... ``garbage_sources5``):
document cutting, a stable hash, the capping of generated garbage, shuffled sentences laid out like their
source, text mis-decoded by a chain of codecs, the cached file lists, the ``garbage_doc`` dispatch and the
cache-filling command line."""

from __future__ import annotations

import hashlib
import random
import re
import statistics
import textwrap
from collections.abc import Callable
from functools import cache
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


def layout_like(src: str, sents: list[str]) -> str:
    """``sents`` in as many paragraphs as ``src`` has, wrapped like it when it is wrapped."""
    paras = [p for p in re.split(r"\n\s*\n", src.strip()) if p.strip()]
    lines = [ln for ln in src.splitlines() if ln.strip()]
    width = int(statistics.median(len(ln) for ln in lines)) if len(lines) > len(paras) else 0
    n_par = max(1, min(len(paras), len(sents) // 2))
    cut = [round(k * len(sents) / n_par) for k in range(n_par + 1)]
    out = []
    for a, b in zip(cut, cut[1:], strict=False):
        text = " ".join(sents[a:b])
        out.append(textwrap.fill(text, width=max(40, width)) if width else text)
    return "\n\n".join(out)


def mis_decode(rng: random.Random, real: dict[str, list[str]], by_lang: dict[str, list[str]],
               legacy: dict[str, str], read_as: list[str], utf8_read_as: list[tuple[str, int]],
               pick: Callable[[random.Random, dict[str, list[str]]], str]) -> tuple[str, str]:
    """(mis-decoded text, the original): a legacy-encoded language read as ``read_as`` (35 %), else real
    UTF-8 text (``real`` 20 %, ``by_lang``'s other languages 45 %) read once or more as a codec of
    ``utf8_read_as``; a source a codec cannot take is drawn again."""
    latin = sorted(x for x in by_lang if x not in legacy)
    legacy_langs = sorted(x for x in by_lang if x in legacy)
    for _ in range(100):
        r = rng.random()
        if r < 0.35:
            lang = rng.choice(legacy_langs)
            src = rng.choice(by_lang[lang])[:MAX_DOC]
            steps = [(legacy[lang], rng.choice(read_as))]
        else:
            src = (pick(rng, real) if r < 0.55 else rng.choice(by_lang[rng.choice(latin)]))[:MAX_DOC]
            codec, times = rng.choice(utf8_read_as)
            steps = [("utf-8", codec)] * times
        out = src
        try:
            for enc, read in steps:
                out = out.encode(enc).decode(read)
        except (UnicodeEncodeError, UnicodeDecodeError):
            continue
        if out != src and len(out) >= 200:
            return out, src
    raise RuntimeError("no mis-decodable source")


@cache
def big_files(folder: Path) -> list[Path]:
    """The files of ``folder`` over 1,000 bytes, sorted (CSV dumps, minified code)."""
    return [p for p in sorted(folder.iterdir()) if p.is_file() and p.stat().st_size > 1000]


def dispatch(kind: str, split: str, own_split: str, module: str, rng: random.Random,
             generators: dict[str, Callable[[random.Random], str]],
             mojibake: Callable[[random.Random], tuple[str, str]]) -> tuple[str, str | None]:
    """``garbage_doc`` of a one-split module: (garbage text, the clean original for mojibake, else None)."""
    if split != own_split:
        raise ValueError(f"{module} holds only the {own_split!r} split, not {split!r}")
    if kind == "mojibake":
        return mojibake(rng)
    return cap(generators[kind](rng)), None


def spam_layout(lines: list[str], rng: random.Random, p_lines: float = 0.35) -> str:
    """Spam lines as they appear on a page: one per line (``p_lines`` of pages) or run into paragraphs of 2-5."""
    if rng.random() < p_lines:
        return "\n".join(lines)
    paras, i = [], 0
    while i < len(lines):
        n = rng.randint(2, 5)
        paras.append(" ".join(lines[i:i + n]))
        i += n
    return "\n\n".join(paras)


def nav_window(pages: list[list[str]], rng: random.Random) -> str:
    """800-MAX_DOC characters of navigation lines from a random line of a random page, running on
    into the next pages as a crawl's dump would."""
    p = rng.randrange(len(pages))
    lines, want = pages[p], rng.randint(800, MAX_DOC)
    i = rng.randrange(len(lines))
    out, size = [], 0
    while size < want and len(out) < 3000:
        if i >= len(lines):  # the page ended: go on with the next page
            p = (p + 1) % len(pages)
            lines, i = pages[p], 0
            continue
        out.append(lines[i])
        size += len(lines[i]) + 1
        i += 1
    return "\n".join(out)[:MAX_DOC]


def log_groups(folder: Path) -> list[list[str]]:
    """The non-blank lines of each ``*.log`` file of ``folder`` (20+ lines), in name order."""
    groups = []
    for p in sorted(folder.glob("*.log")):
        lines = [ln for ln in p.read_text(errors="replace").splitlines() if ln.strip()]
        if len(lines) >= 20:
            groups.append(lines)
    return groups


def log_window(groups: list[list[str]], rng: random.Random) -> str:
    """10-60 consecutive lines of one log."""
    lines, k = rng.choice(groups), rng.randint(10, 60)
    i = rng.randrange(max(1, len(lines) - k))
    return "\n".join(lines[i:i + k])[:MAX_DOC]
