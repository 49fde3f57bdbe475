"""A large corpus of DISTINCT realistic documents, with planted duplicates at known rates.

    python bench/gen_corpus.py --out /tmp/gen100 --mb 100 [--seed 0] [--source DIR] [--exact 0.03] [--near 0.03]

Layout (the one ``corpusmix demo-data`` writes, read by ``corpusmix curate run --input OUT/docs``):

* ``OUT/docs/part-XXXXX.parquet``: ``id``, ``text``, ``domain``, ``source`` (zstd, ``--part-mb`` MB
  of text per part, row groups of 1,000 documents);
* ``OUT/ground_truth.parquet``: one row per planted copy: ``id``, ``dup_of`` (the original's id),
  ``kind`` (``exact``: byte copy or whitespace variant; ``near``: ``--near-edit`` of the words
  replaced), ``edit_rate``;
* ``OUT/manifest.json``: seed, sizes, counts, sources, every parameter.

How documents are made: every English domain file of ``--source`` (default the shared corpora,
``/work/shared/corpora``; the shipped ``data/demo/en`` works too) is cut into *segments* (runs of
whole lines, about 40-250 words, blank lines and newlines kept). A new document of domain ``d``
takes the word count of a random real document of ``d`` as its target and concatenates at least
three random segments of ``d`` (never one segment twice) until it reaches it; then every word is
replaced, with probability ``--perturb`` (5 %), by a random word of the domain's vocabulary,
whitespace kept. Two generated documents therefore share at most a few segments, each under
different edits: at threshold 0.8 they are distinct (the dedup benchmark measures the accidental
duplicate rate on unplanted documents and reports it). Domains are drawn in proportion to the
source's text size.

Planted copies: after each original, with probability ``--exact`` an exact copy and with
``--near`` a near copy of an original drawn uniformly from a reservoir of ``--reservoir`` earlier
originals (Algorithm R over the whole stream so far), so copies land far from their originals.

Deterministic from ``--seed`` (numpy ``default_rng``; no hash-seeded Python state). Streaming:
memory is the segment pools (about 3x the source text, ~300 MB for the shared corpora), the
reservoir and one part, whatever ``--mb``. 10 GB: ``--mb 10000 --part-mb 256`` (about 3.5 GB of
zstd Parquet on disk; generation time scales linearly, see BENCHMARKS.md).
"""

from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from tqdm import tqdm

from corpusmix.paths import SHARED_CORPORA

EN_DOMAINS = ("literature", "reference", "techdocs", "code", "legal", "news", "quotes")
_TOKENS = re.compile(r"(\s+)")
_WORD = re.compile(r"[A-Za-z][a-z]{2,14}")
SCHEMA = pa.schema([("id", pa.string()), ("text", pa.string()), ("domain", pa.string()), ("source", pa.string())])
TRUTH_SCHEMA = pa.schema([("id", pa.string()), ("dup_of", pa.string()), ("kind", pa.string()),
                          ("edit_rate", pa.float64())])


def segments(text: str, *, min_words: int = 40, max_words: int = 250) -> list[str]:
    """Runs of whole lines of ``text``: a run ends at a blank line once it has ``min_words`` words,
    or once it reaches ``max_words``. The last short run is kept only when it is the whole text."""
    out, cur, n = [], [], 0
    for line in text.splitlines(keepends=True):
        cur.append(line)
        n += len(line.split())
        if n >= max_words or (n >= min_words and not line.strip()):
            out.append("".join(cur))
            cur, n = [], 0
    if cur and (n >= min_words or not out):
        out.append("".join(cur))
    return [s for s in out if s.strip()]


class Domain:
    """Segment pool, document length distribution and vocabulary of one domain."""

    def __init__(self, name: str, texts: list[str], rng: np.random.Generator) -> None:
        self.name = name
        self.segs = [s for t in texts for s in segments(t)]
        self.seg_words = np.array([len(s.split()) for s in self.segs], dtype=np.int64)
        self.doc_words = np.array([max(1, len(t.split())) for t in texts], dtype=np.int64)
        self.bytes = sum(len(t.encode()) for t in texts)
        sample = " ".join(texts[i] for i in rng.permutation(len(texts))[:2000])
        self.vocab = sorted(set(_WORD.findall(sample)))[:20000] or ["word"]

    def document(self, rng: np.random.Generator, perturb: float) -> str:
        target = int(self.doc_words[rng.integers(len(self.doc_words))])
        picked: list[int] = []
        words = 0
        while (len(picked) < 3 or words < target) and len(picked) < min(len(self.segs), 400):
            k = int(rng.integers(len(self.segs)))
            if k in picked:
                continue
            picked.append(k)
            words += int(self.seg_words[k])
        text = "\n".join(self.segs[k].rstrip("\n") for k in picked)
        return edit_words(text, rng, perturb, self.vocab)


def edit_words(text: str, rng: np.random.Generator, rate: float, vocab: list[str], *, at_least: int = 0) -> str:
    """Replace each word by a random vocabulary word with probability ``rate`` (at least
    ``at_least`` words), keeping all whitespace."""
    toks = _TOKENS.split(text)
    pos = np.arange(0, len(toks), 2)  # a capturing split puts words at even positions ("" at the ends)
    pos = pos[[bool(toks[p]) for p in pos]] if pos.size else pos
    if pos.size == 0:
        return text
    hit = pos[rng.random(pos.size) < rate]
    if hit.size < at_least:
        hit = rng.choice(pos, size=min(at_least, pos.size), replace=False)
    for p, w in zip(hit, rng.integers(len(vocab), size=hit.size), strict=True):
        toks[p] = vocab[w] if vocab[w] != toks[p] else vocab[(w + 1) % len(vocab)]
    return "".join(toks)


def whitespace_variant(text: str, rng: np.random.Generator) -> str:
    """A copy that exact dedup (case/whitespace-folded) must still match: a byte copy, or doubled
    spaces/newlines and a trailing newline."""
    if rng.random() < 0.5:
        return text
    return text.replace(" ", "  ", 3).replace("\n", "\n\n", 2) + "\n"


def load_domains(source: Path, rng: np.random.Generator) -> dict[str, Domain]:
    doms = {}
    for d in EN_DOMAINS:
        f = source / f"{d}.parquet"
        if not f.exists():
            continue
        texts = [t for t in pq.read_table(f, columns=["text"]).column("text").to_pylist() if t and t.strip()]
        if texts:
            doms[d] = Domain(d, texts, rng)
    if not doms:
        raise SystemExit(f"no domain file ({', '.join(EN_DOMAINS)}).parquet under {str(source)!r}")
    return doms


def generate(out: Path, *, mb: float, seed: int = 0, source: Path = SHARED_CORPORA, exact: float = 0.03,
             near: float = 0.03, near_edit: float = 0.01, perturb: float = 0.05, part_mb: float = 64.0,
             reservoir: int = 2000) -> dict[str, Any]:
    """Write the corpus (see the module docstring); returns the manifest."""
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    doms = load_domains(Path(source), rng)
    names = sorted(doms)
    w = np.array([doms[d].bytes for d in names], dtype=np.float64)
    w /= w.sum()
    docs_dir = out / "docs"
    docs_dir.mkdir(parents=True, exist_ok=True)
    for old in docs_dir.glob("part-*.parquet"):
        old.unlink()
    truth_w = pq.ParquetWriter(out / "ground_truth.parquet", TRUTH_SCHEMA, compression="zstd")
    truth: list[tuple[str, str, str, float]] = []
    res: list[tuple[str, str, str]] = []  # reservoir of originals: (id, text, domain)
    buf: dict[str, list] = {c: [] for c in SCHEMA.names}
    counts = {"original": 0, "exact": 0, "near": 0}
    size = part_size = 0
    part = 0
    n_orig = 0
    budget = int(mb * 1e6)
    bar = tqdm(total=budget, unit="B", unit_scale=True, desc="gen_corpus", disable=mb < 50)

    def emit(doc_id: str, text: str, dom: str) -> None:
        nonlocal size, part_size, part
        buf["id"].append(doc_id)
        buf["text"].append(text)
        buf["domain"].append(dom)
        buf["source"].append(f"gen/{dom}")
        b = len(text.encode())
        size += b
        part_size += b
        bar.update(b)
        if part_size >= part_mb * 1e6:
            flush()

    def flush() -> None:
        nonlocal part_size, part
        if buf["id"]:
            pq.write_table(pa.table(buf, schema=SCHEMA), docs_dir / f"part-{part:05d}.parquet",
                           compression="zstd", row_group_size=1000)
            part += 1
        for v in buf.values():
            v.clear()
        if truth:
            cols = list(zip(*truth, strict=True))
            truth_w.write_table(pa.table(dict(zip(TRUTH_SCHEMA.names, cols, strict=True)), schema=TRUTH_SCHEMA))
            truth.clear()
        part_size = 0

    while size < budget:
        dom = names[int(rng.choice(len(names), p=w))]
        doc_id = f"gen{seed}-{n_orig:09d}"
        text = doms[dom].document(rng, perturb)
        emit(doc_id, text, dom)
        counts["original"] += 1
        n_orig += 1
        if len(res) < reservoir:
            res.append((doc_id, text, dom))
        else:
            j = int(rng.integers(n_orig))
            if j < reservoir:
                res[j] = (doc_id, text, dom)
        for kind, rate in (("exact", exact), ("near", near)):
            if rng.random() < rate:
                src_id, src_text, src_dom = res[int(rng.integers(len(res)))]
                counts[kind] += 1
                copy_id = f"gen{seed}-{n_orig - 1:09d}-{kind[0]}"
                if kind == "exact":
                    emit(copy_id, whitespace_variant(src_text, rng), src_dom)
                    edit = 0.0
                else:
                    emit(copy_id, edit_words(src_text, rng, near_edit, doms[src_dom].vocab, at_least=1), src_dom)
                    edit = near_edit
                truth.append((copy_id, src_id, kind, edit))
    flush()
    truth_w.close()
    bar.close()
    manifest = {"seed": seed, "mb_requested": mb, "text_bytes": size, "parts": part,
                "docs": sum(counts.values()), "counts": counts, "source": str(source),
                "domain_weights": dict(zip(names, [round(x, 4) for x in w], strict=True)),
                "params": {"exact": exact, "near": near, "near_edit": near_edit, "perturb": perturb,
                           "part_mb": part_mb, "reservoir": reservoir},
                "seconds": round(time.perf_counter() - t0, 1)}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--mb", type=float, default=100.0, help="MB of text to write")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--source", type=Path, default=SHARED_CORPORA, help="folder of <domain>.parquet files")
    ap.add_argument("--exact", type=float, default=0.03, help="probability of an exact copy after an original")
    ap.add_argument("--near", type=float, default=0.03, help="probability of a near copy after an original")
    ap.add_argument("--near-edit", type=float, default=0.01, help="share of words replaced in a near copy")
    ap.add_argument("--perturb", type=float, default=0.05, help="share of words replaced in every original")
    ap.add_argument("--part-mb", type=float, default=64.0, help="MB of text per part file")
    ap.add_argument("--reservoir", type=int, default=2000, help="originals a copy may be drawn from")
    a = ap.parse_args()
    m = generate(a.out, mb=a.mb, seed=a.seed, source=a.source, exact=a.exact, near=a.near, near_edit=a.near_edit,
                 perturb=a.perturb, part_mb=a.part_mb, reservoir=a.reservoir)
    print(json.dumps(m))


if __name__ == "__main__":
    main()
