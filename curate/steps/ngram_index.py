"""Hashed n-gram sets of evaluation benchmarks, for decontamination (``curate.steps.decontam``).

Text is normalised by lower-casing and keeping only word characters: a word is a maximal run of
``\\w`` (Unicode letters, digits, underscore), so case, punctuation and whitespace differences between
a benchmark item and its copy in the training data do not hide an overlap. An n-gram is ``n``
consecutive words; its key is a 64-bit hash (a polynomial over per-word blake2b hashes, finished
with splitmix64's mixer) so that the chance of two different n-grams colliding is about
``ngrams / 2**64`` per lookup, negligible even for billions of n-grams (a Bloom filter of the same
size would be wrong far more often: documents have thousands of n-grams each).

The index keeps one sorted, unique ``uint64`` array per benchmark, concatenated in one ``.npy``
file under a content-addressed name: 8 bytes per distinct n-gram, memory-mapped by every worker
(the OS page cache shares it between processes; the Spark engine ships the file to executors).
It is built by streaming the evaluation files in batches; ``stride`` > 1 keeps every stride-th
n-gram of each item (memory / stride; a copied span of ``n + stride - 1`` words or more is still
found) and ``max_ngrams`` bounds the index with a clear error instead of running out of memory.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from corpusmix.config import ConfigError

WORD = re.compile(r"\w+")
EVAL_SUFFIXES = (".parquet", ".jsonl", ".jsonl.gz", ".ndjson")
_P = np.uint64(0x100000001B3)  # FNV prime: odd, so the polynomial is a bijection in each word
NORMALISATION = "lower-word-v1"  # part of the index fingerprint: change it when normalisation changes


def _mix(h: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser (vectorised): every output bit depends on every input bit."""
    h = h ^ (h >> np.uint64(30))
    h = h * np.uint64(0xBF58476D1CE4E5B9)
    h = h ^ (h >> np.uint64(27))
    h = h * np.uint64(0x94D049BB133111EB)
    return h ^ (h >> np.uint64(31))


class WordHasher:
    """Stable 64-bit hashes of normalised words (cached: real text is Zipfian)."""

    def __init__(self, max_cache: int = 1_000_000) -> None:
        self.cache: dict[str, int] = {}
        self.max_cache = max_cache

    def word(self, w: str) -> int:
        h = self.cache.get(w)
        if h is None:
            h = int.from_bytes(hashlib.blake2b(w.encode("utf-8"), digest_size=8).digest(), "little")
            if len(self.cache) < self.max_cache:
                self.cache[w] = h
        return h

    def words(self, text: str) -> list[int]:
        ws = WORD.findall(text.lower())
        out = list(map(self.cache.get, ws))  # one C-level pass; only unseen words reach Python
        if None in out:
            word = self.word
            out = [h if h is not None else word(w) for h, w in zip(out, ws, strict=True)]
        return out


def ngram_hashes(word_hashes: np.ndarray, n: int, owner: np.ndarray | None = None) -> np.ndarray:
    """Hashes of every n-gram of ``word_hashes``; with ``owner`` (item index per word), n-grams that
    cross from one item into the next are left out. Returns an empty array for fewer than n words."""
    m = len(word_hashes) - n + 1
    if m <= 0:
        return np.empty(0, np.uint64)
    acc = word_hashes[:m].copy()
    for j in range(1, n):
        acc *= _P
        acc += word_hashes[j:j + m]
    out = _mix(acc)
    if owner is not None:
        out = out[owner[:m] == owner[n - 1:]]
    return out


# ---------------------------------------------------------------------------------------- reading

def eval_files(paths: list[str]) -> list[Path]:
    """Evaluation files named by ``paths`` (files, or folders searched for EVAL_SUFFIXES)."""
    if not paths:
        raise ConfigError("decontam.eval_sets is empty; list Parquet/JSONL files or folders of benchmark items "
                          "(or remove `decontam` from curate.engine.steps)")
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found = sorted(f for f in p.iterdir() if f.name.endswith(EVAL_SUFFIXES))
            if not found:
                raise ConfigError(f"decontam.eval_sets: folder {str(p)!r} holds no {'/'.join(EVAL_SUFFIXES)} file")
            files += found
        elif p.is_file():
            if not p.name.endswith(EVAL_SUFFIXES):
                raise ConfigError(f"decontam.eval_sets: {str(p)!r} is not one of {EVAL_SUFFIXES}; convert it")
            files.append(p)
        else:
            raise ConfigError(f"decontam.eval_sets: {str(p)!r} does not exist; fix the path in params.yaml")
    names = [benchmark_name(f) for f in files]
    dup = sorted({x for x in names if names.count(x) > 1})
    if dup:
        raise ConfigError(f"decontam.eval_sets: two files give the benchmark name(s) {dup}; rename one")
    return files


def benchmark_name(path: Path) -> str:
    name = path.name
    for suf in EVAL_SUFFIXES:
        if name.endswith(suf):
            return name[: -len(suf)]
    return path.stem


def read_items(path: Path, columns: list[str], batch_rows: int = 8192) -> Iterator[list[str]]:
    """Batches of item texts: the named columns present in the file, joined in ``columns`` order.

    Raises ConfigError when the file has none of the columns (the message lists what it has)."""
    if path.name.endswith(".parquet"):
        import pyarrow.parquet as pq

        pf = pq.ParquetFile(path)
        have = [c for c in columns if c in pf.schema_arrow.names]
        if not have:
            raise ConfigError(f"{path}: none of the columns {columns} (decontam.columns) is in the file; it has "
                              f"{pf.schema_arrow.names}; set decontam.columns to the text columns")
        for batch in pf.iter_batches(batch_size=batch_rows, columns=have):
            cols = [batch.column(c).to_pylist() for c in have]
            yield [" \n ".join(str(v) for v in row if v is not None) for row in zip(*cols, strict=True)]
        return
    opener = gzip.open if path.name.endswith(".gz") else open
    have_any = False
    records = 0
    seen_keys: set[str] = set()
    batch: list[str] = []
    with opener(path, "rt", encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ConfigError(f"{path}:{lineno}: not a JSON object ({exc.msg}); fix or remove the line") from exc
            if not isinstance(rec, dict):
                raise ConfigError(f"{path}:{lineno}: a JSON line must be an object with {columns} keys")
            records += 1
            seen_keys.update(rec)
            vals = [rec[c] for c in columns if rec.get(c) is not None]
            have_any = have_any or any(c in rec for c in columns)
            batch.append(" \n ".join(str(v) for v in vals))
            if len(batch) >= batch_rows:
                yield batch
                batch = []
    if batch:
        yield batch
    if records == 0:
        raise ConfigError(f"{path}: the evaluation file is empty; fill it or remove it from decontam.eval_sets")
    if not have_any:
        raise ConfigError(f"{path}: none of the columns {columns} (decontam.columns) is in the file; its records "
                          f"have {sorted(seen_keys)}; set decontam.columns to the text columns")


# ------------------------------------------------------------------------------------------ index

@dataclass
class IndexInfo:
    """What a built index holds (kept on the step; the arrays stay in the file)."""

    path: str
    n: int
    benchmarks: list[str]
    offsets: list[int]  # benchmark b's sorted hashes are array[offsets[b]:offsets[b + 1]]
    items: dict[str, int]  # items per benchmark that have at least n words
    short_items: dict[str, int]  # items too short to hold one n-gram (cannot be detected)


def _fingerprint(files: list[Path], columns: list[str], n: int, stride: int) -> str:
    h = hashlib.sha256(json.dumps([NORMALISATION, columns, n, stride]).encode())
    for f in files:
        h.update(benchmark_name(f).encode() + b"\0")
        with open(f, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 22), b""):
                h.update(chunk)
    return h.hexdigest()[:20]


def _benchmark_hashes(path: Path, columns: list[str], n: int, stride: int, max_ngrams: int,
                      hasher: WordHasher, counts: dict[str, int]) -> np.ndarray:
    """Sorted unique n-gram hashes of one file, built batch by batch (duplicates merged as it goes)."""
    chunks: list[np.ndarray] = []
    held = compacted = 0
    for texts in read_items(path, columns):
        flat: list[int] = []
        owner: list[int] = []
        for i, t in enumerate(texts):
            ws = hasher.words(t)
            if len(ws) < n:
                counts["short"] += 1
                continue
            counts["items"] += 1
            flat += ws
            owner += [i] * len(ws)
        if not flat:
            continue
        own = np.asarray(owner, np.int64)
        h = ngram_hashes(np.asarray(flat, np.uint64), n, own)
        if stride > 1:  # every stride-th n-gram of each item, counted from the item's first word
            starts = np.arange(len(flat) - n + 1)[own[: len(flat) - n + 1] == own[n - 1:]]
            first = np.searchsorted(own, own[starts], side="left")
            h = h[(starts - first) % stride == 0]
        chunks.append(np.unique(h))
        held += len(chunks[-1])
        if held > 2 * max(compacted, 1 << 22):  # merge duplicates across batches before they pile up
            chunks = [np.unique(np.concatenate(chunks))]
            held = compacted = len(chunks[0])
        if compacted > max_ngrams:
            break
    out = np.unique(np.concatenate(chunks)) if chunks else np.empty(0, np.uint64)
    if len(out) > max_ngrams:
        raise ConfigError(f"{path}: more than decontam.max_ngrams={max_ngrams:,} distinct {n}-grams "
                          f"({8 * len(out) / 2**20:,.0f} MiB so far); raise max_ngrams if the memory is there, "
                          "or set decontam.stride to 2+ (every stride-th n-gram; memory / stride)")
    return out


def build_index(files: list[Path], *, columns: list[str], n: int, stride: int, max_ngrams: int,
                index_dir: str | Path) -> IndexInfo:
    """Build (or reuse, when the same files and settings were indexed before) the n-gram index."""
    fp = _fingerprint(files, columns, n, stride)
    folder = Path(index_dir)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"decontam-{fp}.bin"  # .bin: the Spark engine ships files with model suffixes
    meta_path = folder / f"decontam-{fp}.json"
    if path.exists() and meta_path.exists():
        meta = json.loads(meta_path.read_text())
        return IndexInfo(path=str(path), **meta)
    hasher = WordHasher()
    arrays, names, items, short = [], [], {}, {}
    for f in files:
        name = benchmark_name(f)
        counts = {"items": 0, "short": 0}
        arr = _benchmark_hashes(f, columns, n, stride, max_ngrams, hasher, counts)
        if counts["items"] == 0 and counts["short"] == 0:
            raise ConfigError(f"{f}: the evaluation file has no rows; fill it or remove it from decontam.eval_sets")
        if counts["items"] == 0:
            raise ConfigError(f"{f}: no item with {n}+ words in columns {columns} ({counts['short']} shorter "
                              "items); an empty or too-short evaluation set protects nothing: fix the file or "
                              "lower decontam.ngram")
        arrays.append(arr)
        names.append(name)
        items[name], short[name] = counts["items"], counts["short"]
    offsets = np.cumsum([0] + [len(a) for a in arrays]).tolist()
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as fh:
        np.save(fh, np.concatenate(arrays))
    meta = {"n": n, "benchmarks": names, "offsets": offsets, "items": items, "short_items": short}
    mtmp = meta_path.with_name(f".{meta_path.name}.{os.getpid()}.tmp")
    mtmp.write_text(json.dumps(meta))
    os.replace(tmp, path)  # the array first: a meta file always has its array
    os.replace(mtmp, meta_path)
    return IndexInfo(path=str(path), **meta)


def load_array(path: str) -> np.ndarray:
    """The index array, memory-mapped (shared page cache; only the pages looked up are read)."""
    # a plain ndarray view of the map: slicing/searching skips np.memmap's Python-level overhead
    return np.asarray(np.load(path, mmap_mode="r"))


def contains(part: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Boolean mask: which ``keys`` are in the sorted array ``part``."""
    if len(part) == 0 or len(keys) == 0:
        return np.zeros(len(keys), bool)
    idx = np.searchsorted(part, keys)
    idx[idx == len(part)] = len(part) - 1
    return part[idx] == keys
