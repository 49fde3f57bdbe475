"""The compiled kernels of the curation statistics, or their Python reference definitions.

``curate/_native.c`` (built at install time by ``setup.py``) computes, for the hot loops of
``curate.textstats`` and ``curate.junkstats``, exactly what the Python functions below compute;
those stay the reference (``tests/curate/test_native.py`` requires equal results on random and
real text). The compiled module is used when ``CORPUSMIX_NATIVE`` is not ``0`` and it was built
from the kernels' source this code came with (:func:`load`); otherwise the reference runs, with the
same results, slower.

Under ``spark-submit`` the code comes from a ``--py-files`` zip, from which an extension cannot be
imported: the module travels beside it with ``--files`` under the name :data:`SHIPPED`
(``python -m curate.spark.submit package`` writes both) and is loaded from the executors' (and,
once the session exists, the driver's) ``SparkFiles`` folder.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import logging
import os
import pkgutil
import re
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

import numpy as np

_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")
_MIX = np.uint64(0x9E3779B97F4A7C15)
# junkstats.TERMINAL (the characters that close a sentence or clause), kept equal by tests/curate/test_native.py
TERMINAL = (".", "!", "?", ":", ";", '"', "'", ")", "\u201d", "\u2019", "\u3002", "\uff01", "\uff1f", "\u2026")

#: the file name under which ``spark-submit --files`` ships the compiled module (ABI tag included)
SHIPPED = "corpusmix-native" + importlib.machinery.EXTENSION_SUFFIXES[0]
_log = logging.getLogger("corpusmix.curate.native")


def source_digest() -> str | None:
    """sha256 of the kernels' source this code came with: ``_native.c`` beside this module (a source
    tree), else the ``_native.sha256`` that ``curate.spark.submit.build_zip`` writes into a zip of the
    code; None where neither is there (an installed wheel: module and code were built together)."""
    src = Path(__file__).with_name("_native.c")
    if src.is_file():
        return hashlib.sha256(src.read_bytes()).hexdigest()
    try:
        data = pkgutil.get_data("curate", "_native.sha256")
    except OSError:
        return None
    return data.decode().strip() if data else None


def _shipped() -> ModuleType | None:
    """The module shipped with ``--files`` (:data:`SHIPPED`) in Spark's ``SparkFiles`` folder, if any."""
    if "pyspark" not in sys.modules:
        return None
    try:
        from pyspark import SparkFiles

        path = Path(SparkFiles.getRootDirectory()) / SHIPPED
    except Exception:  # no SparkContext yet on the driver, or not under Spark
        return None
    if not path.is_file():
        return None
    loader = importlib.machinery.ExtensionFileLoader("curate._native", str(path))
    spec = importlib.util.spec_from_file_location("curate._native", str(path), loader=loader)
    try:
        mod = importlib.util.module_from_spec(spec)
        loader.exec_module(mod)
        return mod
    except ImportError as e:  # another Python or platform than the one it was built for
        _log.warning("shipped compiled kernels not loadable", extra={"data": {"path": str(path), "error": str(e)}})
        return None


def _package() -> ModuleType | None:
    try:
        from curate import _native as mod
    except ImportError:  # not built (a source tree without `pip install -e .`, a zip on a Spark executor)
        return None
    return mod


def load(*, shipped: bool = True) -> tuple[ModuleType | None, str]:
    """``(module, origin)``: the compiled module that may decide and where it came from (``package``:
    ``curate/_native*.so`` of the install, ``shipped``: the file Spark shipped, :func:`_shipped`), or
    ``(None, "reference")``.

    Code imported from a zip (``spark-submit --py-files``) takes the shipped file first (it comes
    from the same ``package`` command as the zip), then the package's build; an installed tree the
    reverse. A module is used only if its ``SOURCE_SHA256`` equals :func:`source_digest` where that
    is known: a build older than the source (``_native.c`` edited and not rebuilt), or shipped from
    another checkout than the zip, is passed over with a warning, so a stale build never decides."""
    if os.environ.get("CORPUSMIX_NATIVE", "1") == "0":
        return None, "reference"
    zipped = not Path(__file__).parent.is_dir()
    order = [("package", _package)]
    if shipped:
        order.insert(0 if zipped else 1, ("shipped", _shipped))
    want = source_digest()
    for origin, find in order:
        mod = find()
        if mod is None:
            continue
        built = getattr(mod, "SOURCE_SHA256", "")
        if built and (want is None or built == want):
            return mod, origin
        _log.warning("compiled kernels built from another source are not used (rebuild: pip install -e .)",
                     extra={"data": {"module": getattr(mod, "__file__", ""), "built": built, "source": want}})
    return None, "reference"


def use_shipped() -> bool:
    """Load the module Spark shipped, where none is in use yet (the driver under spark-submit, once
    its session exists); whether the compiled kernels are in use."""
    global compiled, ORIGIN
    if compiled is None:
        compiled, ORIGIN = load()
    return compiled is not None


#: the compiled module, or None: callers with a kernel of their own (junkstats, textstats) test
#: ``native.compiled`` at each call and otherwise run their Python definition
compiled, ORIGIN = load()


def token_ids(tokens: list[str], index: dict[str, int] | bytearray, arena: bytearray | None = None
              ) -> tuple[np.ndarray, int]:
    """(``index``'s id of each token, -1 where absent, as int64; how many are absent). ``index``: a
    dict, or (compiled module only) a token table of ``compiled.tok_add`` with its ``arena``."""
    if compiled is not None:
        buf, missing = compiled.token_ids(tokens, index) if arena is None else compiled.token_ids(tokens, index, arena)
        return np.frombuffer(buf, np.int64), missing
    if not isinstance(index, dict):
        raise TypeError("token_ids: a token table needs the compiled module")
    return ref_token_ids(tokens, index)


def word_ids(text: str, index: dict[str, int], other: int, table: bytes | None = None) -> np.ndarray:
    """``index``'s id of each word of ``text`` (``_WORD``'s matches), ``other`` where absent, int64;
    ``table``: ``str_table(index)``, read by the compiled kernel in place of the dict."""
    if compiled is not None:
        return np.frombuffer(compiled.word_ids(text, index if table is None else table, other), np.int64)
    return ref_word_ids(text, index, other)


def utf8_len(text: str) -> int:
    """``len(text.encode("utf-8", "surrogatepass"))``, counted without encoding."""
    if text.isascii():
        return len(text)
    if compiled is not None:
        return compiled.utf8_len(text)
    return len(text.encode("utf-8", "surrogatepass"))


def str_table(index: dict[str, int]) -> bytes | None:
    """``index`` as the compiled kernels' read-only table (None without the compiled module): a
    fixed dict looked up without a str object per word."""
    return compiled.str_table(index) if compiled is not None else None


def unique_counts(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_counts=True)`` of an int64 array (sorted distinct values, counts)."""
    if compiled is not None:
        u, c = compiled.unique_counts(np.ascontiguousarray(values, np.int64))
        return np.frombuffer(u, np.int64), np.frombuffer(c, np.int64)
    return np.unique(np.asarray(values, np.int64), return_counts=True)


def rep_ngram_cover(ids: np.ndarray, n: int) -> int:
    """Tokens of ``ids`` covered by an n-gram (hashed as in ``junkstats.rep_ngram_share``) that occurs
    twice or more."""
    if compiled is not None:
        return compiled.rep_ngram_cover(np.ascontiguousarray(ids, np.int64), n)
    return ref_rep_ngram_cover(ids, n)


def text_lines(text: str) -> tuple[list[str], int]:
    """(the lines of ``text.split("\\n")`` with a non-space character, how many of them end in one of
    ``junkstats.TERMINAL`` once trailing spaces are stripped)."""
    if compiled is not None:
        return compiled.text_lines(text)
    lines = [ln for ln in text.split("\n") if ln.strip()]
    return lines, sum(ln.rstrip().endswith(TERMINAL) for ln in lines)


def dup_line_counts(lines: list[str]) -> tuple[int, int]:
    """(characters of the stripped lines that an earlier line repeats, characters of all stripped lines)."""
    if compiled is not None:
        return compiled.dup_line_counts(lines)
    seen: set[str] = set()
    dup_chars = 0
    for ln in lines:
        s = ln.strip()
        if s in seen:
            dup_chars += len(s)
        else:
            seen.add(s)
    return dup_chars, sum(len(ln.strip()) for ln in lines)


def char_counts(text: str) -> list[int]:
    """How often each distinct character of ``text`` occurs, in the order of first occurrence (the
    values of ``Counter(text)``)."""
    if compiled is not None:
        return compiled.char_counts(text)
    if text.isascii():  # numpy.bincount, about 20x faster than a Counter over characters
        counts = np.bincount(np.frombuffer(text.encode("ascii"), np.uint8), minlength=128).tolist()
        return [c for _, c in sorted((text.find(chr(b)), c) for b, c in enumerate(counts) if c)]
    return list(Counter(text).values())


# ------------------------------------------------------------------------------- the reference

def ref_token_ids(tokens: list[str], index: dict[str, int]) -> tuple[np.ndarray, int]:
    got = [index.get(t, -1) for t in tokens]
    return np.array(got, dtype=np.int64), got.count(-1)


def ref_word_ids(text: str, index: dict[str, int], other: int) -> np.ndarray:
    return np.array([index.get(w, other) for w in _WORD.findall(text)], dtype=np.int64)


def ref_rep_ngram_cover(ids: Sequence[int] | np.ndarray, n: int) -> int:
    lows = np.asarray(ids, np.int64)
    m = len(lows) - n + 1
    if m <= 0:
        return 0
    x = lows.astype(np.uint64)
    h = np.zeros(m, np.uint64)
    with np.errstate(over="ignore"):
        for k in range(n):
            h = h * _MIX + x[k:k + m] + np.uint64(k + 1)
    _, inv, counts = np.unique(h, return_inverse=True, return_counts=True)
    rep = counts[inv] >= 2
    cover = np.zeros(len(lows), bool)
    for k in range(n):
        cover[k:k + m] |= rep
    return int(cover.sum())
