"""Benchmark decontamination: drop (or cut) training documents that share n-grams with evaluation sets.

As in GPT-3 and Llama practice, a document overlaps a benchmark when one of its word n-grams (13 by
default, on lower-cased word characters; see ``curate.steps.ngram_index``) occurs in a benchmark
item. Evaluation sets are Parquet or JSONL(.gz) files of items with text columns (``question``,
``answer``, ``passage`` by default; the columns an item has are joined, so n-grams that run from a
question into its answer count too); each file is one benchmark, named by its file name.

``mode: drop`` drops the document with reason ``contaminated:<benchmark>``; ``mode: remove``
cuts the overlapping spans (plus ``margin_chars`` either side) out of the text and keeps the rest,
unless fewer than ``min_chars_after_removal`` characters remain (then it is dropped with the same
reason). Kept documents get ``contam_benchmarks`` (comma-separated names, "" when clean) and
``contam_ngrams`` (overlapping n-gram positions found).

Run alone with ``corpusmix curate decontam --input F --output F``; in the chain by
``corpusmix curate run`` (params ``decontam``, step ``decontam`` in ``curate.engine.steps``).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from datatrove.data import Document

from corpusmix.config import ConfigError
from curate.steps import ngram_index as ngi
from curate.steps.base import CurationStep
from curate.steps.registry import step
from curate.textstats import Memo, text_key

MODES = ("drop", "remove")


@dataclass
class DecontamConfig:
    """Decontamination settings (``params.yaml`` section ``decontam``)."""

    eval_sets: list[str] = field(default_factory=list, metadata={
        "help": "Parquet/JSONL(.gz) files or folders of benchmark items (one benchmark per file)"})
    columns: list[str] = field(default_factory=lambda: ["question", "answer", "passage"], metadata={
        "help": "text columns of an item (those present are joined in this order)"})
    ngram: int = field(default=13, metadata={"help": "words per n-gram (GPT-3: 13)"})
    mode: str = field(default="drop", metadata={"help": "drop | remove (cut the overlapping spans)"})
    margin_chars: int = field(default=0, metadata={"help": "remove mode: characters also cut either side of a span"})
    min_chars_after_removal: int = field(default=200, metadata={
        "help": "remove mode: drop the document when less text than this remains"})
    stride: int = field(default=1, metadata={"help": "index every stride-th n-gram of an item (memory / stride)"})
    max_ngrams: int = field(default=500_000_000, metadata={
        "help": "most distinct n-grams per benchmark (8 bytes each); a bigger set is a clear error"})
    index_dir: str = field(default="", metadata={
        "help": "folder of built indexes, reused across runs ('' = <tmp>/corpusmix-decontam)"})

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ConfigError(f"decontam.mode must be one of {MODES}, got {self.mode!r}")
        if self.ngram < 1 or self.stride < 1 or self.max_ngrams < 1:
            raise ConfigError("decontam.ngram, stride and max_ngrams must be >= 1")
        if self.stride >= self.ngram:
            raise ConfigError(f"decontam.stride={self.stride} must be below ngram={self.ngram}, or copies of a "
                              "single n-gram's length can be missed entirely")
        if not self.columns:
            raise ConfigError("decontam.columns is empty; name the text columns of the benchmark items")


# right after normalisation: every planted copy is judged, before other drops
@step("decontam", config=DecontamConfig, section="decontam", order=20)
class Decontaminator(CurationStep):
    """Drops (or cuts) documents that share an n-gram with an evaluation set; see the module docstring."""

    step_name = "decontam"
    name = "decontaminate"
    columns = ("contam_benchmarks", "contam_ngrams")

    def __init__(self, cfg: DecontamConfig) -> None:
        super().__init__()
        self.cfg = cfg
        files = ngi.eval_files(list(cfg.eval_sets))
        index_dir = cfg.index_dir or str(Path(tempfile.gettempdir()) / "corpusmix-decontam")
        info = ngi.build_index(files, columns=list(cfg.columns), n=cfg.ngram, stride=cfg.stride,
                               max_ngrams=cfg.max_ngrams, index_dir=index_dir)
        # a file path (not the array): engines pickle steps cheaply, Spark ships the file to executors
        self.index_path: str = info.path
        self.benchmarks = info.benchmarks
        self.offsets = info.offsets
        self.info = {"items": info.items, "short_items": info.short_items}
        self._parts: list[np.ndarray] | None = None
        self._prefilter: ngi.Prefilter | None = None
        self._hasher: ngi.WordHasher | None = None
        self._memo = Memo(50_000)  # text digest -> _decide's answer

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_parts"] = None  # the memory map is re-opened where the step runs
        state["_prefilter"] = None
        state["_hasher"] = None
        return state

    def _lookup(self, keys: np.ndarray) -> list[np.ndarray]:
        if self._parts is None:
            arr = ngi.load_array(self.index_path)
            self._parts = [arr[self.offsets[b]:self.offsets[b + 1]] for b in range(len(self.benchmarks))]
            self._prefilter = ngi.Prefilter(arr)
        # only the keys the bit array lets through are searched: the same masks, fewer binary searches
        cand = np.flatnonzero(self._prefilter.maybe(keys))
        out = []
        for part in self._parts:
            hit = np.zeros(len(keys), bool)
            if len(cand):
                hit[cand] = ngi.contains(part, keys[cand])
            out.append(hit)
        return out

    def filter(self, doc: Document) -> bool | tuple[bool, str]:
        # memoised by the text's digest: the calibration runs this step over its sample, which the
        # run sees again (and exact duplicates repeat); the decision is a function of the text alone
        key = text_key(doc.text)
        hit = self._memo.get(key)
        if hit is None:
            hit = self._decide(doc.text)
            if hit[3] is None:  # a cut text is not kept: the memo stays small whatever the documents' size
                self._memo.put(key, hit)
        result, benchmarks, ngrams, text = hit
        doc.metadata["contam_benchmarks"] = benchmarks
        doc.metadata["contam_ngrams"] = ngrams
        if text is not None:
            doc.text = text
        return result

    def _decide(self, text: str) -> tuple[bool | tuple[bool, str], str, int, str | None]:
        """(the filter's result, contam_benchmarks, contam_ngrams, the cut text or None when uncut)."""
        if self._hasher is None:
            self._hasher = ngi.WordHasher()
        n = self.cfg.ngram
        words = self._hasher.array(text)
        if len(words) < n:
            return True, "", 0, None
        hits = self._lookup(ngi.ngram_hashes(words, n))
        counts = [int(h.sum()) for h in hits]
        if not any(counts):
            return True, "", 0, None
        found = sorted((b for b, c in enumerate(counts) if c), key=lambda b: (-counts[b], self.benchmarks[b]))
        first = self.benchmarks[found[0]]
        benchmarks = ",".join(sorted(self.benchmarks[b] for b in found))
        any_hit = np.logical_or.reduce(hits)
        ngrams = int(any_hit.sum())
        if self.cfg.mode == "drop":
            return (False, f"contaminated:{first}"), benchmarks, ngrams, None
        # offsets only for the (rare) documents that are cut: the words of text.lower() can differ in
        # length from the text's own, so the spans come from the original text
        spans = [(m.start(), m.end()) for m in ngi.WORD.finditer(text)]
        if len(spans) != len(words):  # case mapping changed the word split: cannot cut safely
            return (False, f"contaminated:{first}"), benchmarks, ngrams, None
        cut = self._cut(text, spans, np.flatnonzero(any_hit), n)
        if len(cut.strip()) < self.cfg.min_chars_after_removal:
            return (False, f"contaminated:{first}"), benchmarks, ngrams, cut
        return True, benchmarks, ngrams, cut

    def _cut(self, text: str, spans: list[tuple[int, int]], starts: np.ndarray, n: int) -> str:
        """Remove the character ranges covered by the hit n-grams (merged), with the margin."""
        m = self.cfg.margin_chars
        ranges: list[list[int]] = []
        for s in starts.tolist():
            a, b = max(spans[s][0] - m, 0), min(spans[s + n - 1][1] + m, len(text))
            if ranges and a <= ranges[-1][1]:
                ranges[-1][1] = max(ranges[-1][1], b)
            else:
                ranges.append([a, b])
        out, pos = [], 0
        for a, b in ranges:
            out.append(text[pos:a])
            pos = b
        out.append(text[pos:])
        return "\n".join(p.strip(" \t") for p in out if p.strip())
