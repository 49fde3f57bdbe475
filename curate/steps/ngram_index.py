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
It is built by an external sort: the evaluation files are streamed in batches into sorted runs on
disk, which a k-way merge writes into the index file, so the build's memory does not grow with the
index. ``stride`` > 1 keeps every stride-th n-gram of each item (index size / stride; a copied span
of ``n + stride - 1`` words or more is still found) and ``max_ngrams`` bounds the index with a clear
error.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import re
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from corpusmix.config import ConfigError
from corpusmix.procs import pid_alive
from curate import native

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
        self.ctable, self.carena, self.ccount = bytearray(), bytearray(), 0  # array's cache, compiled

    @staticmethod
    def hash(w: str) -> int:
        return int.from_bytes(hashlib.blake2b(w.encode("utf-8"), digest_size=8).digest(), "little")

    def word(self, w: str) -> int:
        h = self.cache.get(w)
        if h is None:
            h = self.hash(w)
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

    def array(self, text: str) -> np.ndarray:
        """``np.asarray(self.words(text), np.uint64)``: compiled, only unseen words reach Python."""
        if native.compiled is None:
            return np.asarray(self.words(text), np.uint64)
        buf, missing = native.compiled.word_hashes(text.lower(), self.ctable, self.carena)
        out = np.frombuffer(buf, np.uint64)
        if missing:  # the cache: a token table of its own, bounded as the dict (full, it takes no more)
            new = {w: self.hash(w) for w in dict.fromkeys(w for _, w in missing)}
            out[[i for i, _ in missing]] = [new[w] for _, w in missing]
            keep = list(new)[:max(0, self.max_cache - self.ccount)]
            if keep:
                vals = np.array([new[w] for w in keep], np.uint64).view(np.int64)
                native.compiled.tok_put(self.ctable, self.carena, keep, vals)
                self.ccount += len(keep)
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

        # pre_buffer=False: with it, the reader keeps the buffers of every row group it has read
        # (memory grows with the file); without, one row group at a time
        pf = pq.ParquetFile(path, pre_buffer=False)
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
    with opener(path, "rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ConfigError(f"{path}:{lineno}: not valid UTF-8 (byte {exc.start} of the line); re-encode the "
                                  "file as UTF-8 or remove the line") from exc
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


RUN_HASHES = 1 << 24  # hashes per sorted run on disk: a 128 MiB buffer while the runs are made
MERGE_HASHES = 1 << 23  # hashes held by the k-way merge over all runs together (64 MiB)
_NPY_HEADER = 128  # bytes of a 1-D uint64 .npy header (numpy pads it to a multiple of 64)


def _sorted_unique(chunks: list[np.ndarray]) -> np.ndarray:
    """Sorted unique values of the concatenated chunks: one copy, sorted in place (np.unique makes more)."""
    arr = np.concatenate(chunks) if len(chunks) != 1 else chunks[0].copy()
    chunks.clear()
    if len(arr) < 2:
        return arr
    arr.sort()
    keep = np.empty(len(arr), bool)
    keep[0] = True
    np.not_equal(arr[1:], arr[:-1], out=keep[1:])
    return arr[keep]


def _run_prefix() -> str:
    """Name prefix of this process's run files: host and pid, so a later build can tell stale ones."""
    return f".run-{socket.gethostname()}-{os.getpid()}-"


def _remove_stale_runs(folder: Path) -> int:
    """Remove run files left by a build of this host that was killed (its pid no longer exists)."""
    removed = 0
    host = f".run-{socket.gethostname()}-"
    for f in folder.glob(".run-*.u64"):
        if not f.name.startswith(host):
            continue  # another machine's build on a shared folder: not ours to judge
        try:
            pid = int(f.name[len(host):].split("-", 1)[0])
        except ValueError:
            continue
        if pid != os.getpid() and not pid_alive(pid):
            f.unlink(missing_ok=True)
            removed += 1
    return removed


class _Runs:
    """Sorted unique runs of n-gram hashes written to disk as raw little-endian uint64 files.

    Hashes are copied into one preallocated buffer (grown up to ``run_hashes``), sorted there in
    place and written without duplicates in slices: a run costs the buffer plus a byte per hash."""

    def __init__(self, folder: Path, run_hashes: int) -> None:
        self.folder, self.run_hashes = folder, run_hashes
        self.buf = np.empty(0, np.uint64)  # grown up to run_hashes as hashes arrive
        self.held = 0
        self.files: list[tuple[Path, int]] = []
        self.largest = 0  # the largest run: a lower bound of the distinct count

    def add(self, h: np.ndarray) -> None:
        while len(h):
            if self.held == len(self.buf):
                if len(self.buf) >= self.run_hashes:
                    self.flush()
                else:  # small sets never allocate the whole run buffer
                    grown = np.empty(min(self.run_hashes, max(2 * len(self.buf), self.held + len(h), 1 << 16)),
                                     np.uint64)
                    grown[:self.held] = self.buf[:self.held]
                    self.buf = grown
            k = min(len(h), len(self.buf) - self.held)
            self.buf[self.held:self.held + k] = h[:k]
            self.held += k
            h = h[k:]

    def flush(self) -> None:
        if not self.held:
            return
        arr = self.buf[:self.held]
        arr.sort()
        keep = np.empty(len(arr), bool)
        keep[0] = True
        np.not_equal(arr[1:], arr[:-1], out=keep[1:])
        path = self.folder / f"{_run_prefix()}{len(self.files)}.u64"
        count = 0
        with open(path, "wb") as fh:
            for s in range(0, len(arr), 1 << 20):
                part = arr[s:s + (1 << 20)][keep[s:s + (1 << 20)]]
                part.astype("<u8", copy=False).tofile(fh)
                count += len(part)
        self.files.append((path, count))
        self.largest = max(self.largest, count)
        self.held = 0

    def remove(self) -> None:
        for path, _ in self.files:
            path.unlink(missing_ok=True)
        self.files = []


def _merge_runs(files: list[tuple[Path, int]], out, limit: int, merge_hashes: int = MERGE_HASHES) -> int:
    """k-way merge of sorted unique runs into ``out`` (binary file), duplicates dropped; returns the count.

    Each round reads a block of every run, takes from each the values up to the smallest last value of a
    run that still has data on disk (so every copy of a value is taken in the same round), and writes
    their sorted union. Stops once more than ``limit`` values were written."""
    if not files:
        return 0
    block = max(1 << 14, merge_hashes // len(files))
    fhs = [open(p, "rb") for p, _ in files]  # noqa: SIM115 (closed below)
    left = [n for _, n in files]
    bufs: list[np.ndarray] = [np.empty(0, np.uint64) for _ in files]
    written = 0
    try:
        while True:
            for i, fh in enumerate(fhs):
                if len(bufs[i]) == 0 and left[i]:
                    bufs[i] = np.fromfile(fh, dtype="<u8", count=min(block, left[i])).astype(np.uint64, copy=False)
                    if not len(bufs[i]):
                        raise OSError(f"{files[i][0]}: run file ends early ({left[i]:,} hashes missing)")
                    left[i] -= len(bufs[i])
            live = [i for i in range(len(fhs)) if len(bufs[i])]
            if not live:
                return written
            pending = [bufs[i][-1] for i in live if left[i]]
            bound = min(pending) if pending else max(bufs[i][-1] for i in live)
            taken = []
            for i in live:
                j = int(np.searchsorted(bufs[i], bound, side="right"))
                if j:
                    taken.append(bufs[i][:j])
                    bufs[i] = bufs[i][j:]
            merged = _sorted_unique(taken)
            merged.astype("<u8", copy=False).tofile(out)
            written += len(merged)
            if written > limit:
                return written
    finally:
        for fh in fhs:
            fh.close()


def _benchmark_runs(path: Path, columns: list[str], n: int, stride: int, max_ngrams: int,
                    hasher: WordHasher, counts: dict[str, int], runs: _Runs) -> None:
    """Hash one file's n-grams batch by batch into sorted runs on disk (``runs``)."""
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
        runs.add(h)
        if runs.largest > max_ngrams:
            break
    runs.flush()
    runs.buf = np.empty(0, np.uint64)  # the merge does not need the run buffer


def _too_many(path: Path, n: int, max_ngrams: int, count: int) -> ConfigError:
    return ConfigError(f"{path}: more than decontam.max_ngrams={max_ngrams:,} distinct {n}-grams "
                       f"({8 * count / 2**20:,.0f} MiB so far); raise max_ngrams if the memory is there, "
                       "or set decontam.stride to 2+ (every stride-th n-gram; memory / stride)")


def build_index(files: list[Path], *, columns: list[str], n: int, stride: int, max_ngrams: int,
                index_dir: str | Path, run_hashes: int = RUN_HASHES) -> IndexInfo:
    """Build (or reuse, when the same files and settings were indexed before) the n-gram index.

    External sort: each benchmark's n-gram hashes go to sorted unique runs of ``run_hashes`` on disk
    (in ``index_dir``), then a k-way merge streams them into the index file, one benchmark after the
    other. Peak memory, whatever the index size: the run buffer (``run_hashes`` x 8 bytes) and a byte
    per hash while a run is written, then the merge's blocks (MERGE_HASHES x 8 bytes) and their sorted
    union. The runs take up to the index's size on disk while it is built and are removed afterwards."""
    fp = _fingerprint(files, columns, n, stride)
    folder = Path(index_dir)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"decontam-{fp}.bin"  # .bin: the Spark engine ships files with model suffixes
    meta_path = folder / f"decontam-{fp}.json"
    if path.exists() and meta_path.exists():
        meta = json.loads(meta_path.read_text())
        return IndexInfo(path=str(path), **meta)
    _remove_stale_runs(folder)  # runs of a build that was killed take disk space until removed
    hasher = WordHasher()
    names, items, short, offsets = [], {}, {}, [0]
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as out:
            out.write(b"\0" * _NPY_HEADER)  # the header is written last, when the count is known
            for f in files:
                name = benchmark_name(f)
                counts = {"items": 0, "short": 0}
                runs = _Runs(folder, run_hashes)
                try:
                    _benchmark_runs(f, columns, n, stride, max_ngrams, hasher, counts, runs)
                    if runs.largest > max_ngrams:
                        raise _too_many(f, n, max_ngrams, runs.largest)
                    if counts["items"] == 0 and counts["short"] == 0:
                        raise ConfigError(f"{f}: the evaluation file has no rows; fill it or remove it from "
                                          "decontam.eval_sets")
                    if counts["items"] == 0:
                        raise ConfigError(f"{f}: no item with {n}+ words in columns {columns} ({counts['short']} "
                                          "shorter items); an empty or too-short evaluation set protects nothing: "
                                          "fix the file or lower decontam.ngram")
                    count = _merge_runs(runs.files, out, max_ngrams)
                finally:
                    runs.remove()
                if count > max_ngrams:
                    raise _too_many(f, n, max_ngrams, count)
                names.append(name)
                items[name], short[name] = counts["items"], counts["short"]
                offsets.append(offsets[-1] + count)
            header = io.BytesIO()
            np.lib.format.write_array_header_1_0(
                header, {"descr": np.dtype("<u8").str, "fortran_order": False, "shape": (offsets[-1],)})
            if len(header.getvalue()) != _NPY_HEADER:  # numpy pads to 64: 128 bytes for any 1-D length
                raise RuntimeError(f"unexpected .npy header length {len(header.getvalue())}")
            out.seek(0)
            out.write(header.getvalue())
        meta = {"n": n, "benchmarks": names, "offsets": offsets, "items": items, "short_items": short}
        mtmp = meta_path.with_name(f".{meta_path.name}.{os.getpid()}.tmp")
        mtmp.write_text(json.dumps(meta))
        os.replace(tmp, path)  # the array first: a meta file always has its array
        os.replace(mtmp, meta_path)
    finally:
        tmp.unlink(missing_ok=True)
    return IndexInfo(path=str(path), **meta)


def load_array(path: str) -> np.ndarray:
    """The index array, memory-mapped (shared page cache; only the pages looked up are read)."""
    # a plain ndarray view of the map: slicing/searching skips np.memmap's Python-level overhead
    return np.asarray(np.load(path, mmap_mode="r"))


PREFILTER_BITS_PER_HASH = 16  # a bit array of >= 16 bits per index hash: ~6 % of absent keys pass it
PREFILTER_MAX_BITS = 1 << 29  # 64 MiB per process at most (larger indexes: more keys pass, none is lost)


class Prefilter:
    """A bit array over the top bits of every index hash: a key whose bit is clear is in no part
    (no false negatives), so only keys whose bit is set need the binary searches. The hashes are
    splitmix64 outputs, so their top bits are uniform."""

    def __init__(self, arr: np.ndarray) -> None:
        n = max(1, len(arr))
        bits = 1 << max(10, min(int(n * PREFILTER_BITS_PER_HASH - 1).bit_length(), PREFILTER_MAX_BITS.bit_length() - 1))
        self.shift = np.uint64(64 - (bits.bit_length() - 1))
        self.bytes = np.zeros(bits // 8, np.uint8)
        for start in range(0, len(arr), 1 << 24):  # bounded temporaries on a large index
            top = np.asarray(arr[start:start + (1 << 24)]) >> self.shift
            np.bitwise_or.at(self.bytes, top >> np.uint64(3), np.left_shift(1, (top & np.uint64(7)).astype(np.uint8)))

    def maybe(self, keys: np.ndarray) -> np.ndarray:
        """Boolean mask: keys that may be in the index (every key that is, and a few that are not)."""
        top = keys >> self.shift
        return ((self.bytes[top >> np.uint64(3)] >> (top & np.uint64(7)).astype(np.uint8)) & 1) == 1


def contains(part: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Boolean mask: which ``keys`` are in the sorted array ``part``."""
    if len(part) == 0 or len(keys) == 0:
        return np.zeros(len(keys), bool)
    idx = np.searchsorted(part, keys)
    idx[idx == len(part)] = len(part) - 1
    return part[idx] == keys
