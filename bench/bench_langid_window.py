"""Benchmark: how much of a document fastText language ID needs (agreement and cost of bounded windows).

    python bench/bench_langid_window.py --set dev        # the English shared corpora + a generated corpus
    python bench/bench_langid_window.py --set heldout    # the multilingual shared corpora

The reference is what ``curate.steps.langid.LanguageID`` gives today: ``lid.176.ftz`` on the first
``max_chars`` = 20,000 characters (newlines as spaces). Each variant gives the model less text:

* ``head:K``: the first K characters;
* ``spread:M:W``: M windows of W characters at evenly spaced starts over the reference's text, each
  widened to whole words (start after a space, end before one), joined by spaces.

A document's *language decision* is the triple (top label, score >= 0.60, score >= 0.65): the label
and the two thresholds the language filter uses (``foreign_min_score`` inside a domain of a kept
language, ``threshold`` elsewhere), so two predictions with the same triple keep or drop the
document alike under every rule of the step. Agreement = share of documents whose triple is the
reference's; it is reported over all documents and over those longer than the variant's text (the
others get the reference's text by construction). Cost: CPU seconds of ``predict`` per MB of input,
each variant timed on the same documents in the same process.

Writes ``bench/out/bench_langid_window_<set>.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from functools import partial
from pathlib import Path

import harness
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from curate.steps.langid import PACKAGED_MODEL  # noqa: E402

REF_CHARS = 20_000
THRESHOLDS = (0.60, 0.65)


def head(text: str, k: int) -> str:
    return text[:k]


def spread(text: str, m: int, w: int) -> str:
    """``m`` windows of about ``w`` characters, evenly spaced over ``text``, cut at spaces."""
    if len(text) <= m * w:
        return text
    step = (len(text) - w) / (m - 1) if m > 1 else 0
    parts = []
    for i in range(m):
        a = int(i * step)
        if a:
            sp = text.find(" ", a, a + 64)
            a = sp + 1 if sp >= 0 else a
        b = min(len(text), a + w)
        if b < len(text):
            sp = text.rfind(" ", max(a, b - 64), b)
            b = sp if sp > a else b
        parts.append(text[a:b])
    return " ".join(parts)


def variants(spec: list[str]) -> dict:
    """name -> (cut function, characters it keeps at most)."""
    out = {}
    for s in spec:
        kind, *args = s.split(":")
        nums = [int(x) for x in args]
        if kind == "head":
            out[s] = partial(head, k=nums[0]), nums[0]
        elif kind == "spread":
            out[s] = partial(spread, m=nums[0], w=nums[1]), nums[0] * nums[1]
        else:
            raise SystemExit(f"unknown variant {s!r}")
    return out


def load(set_name: str, gen: str | None, limit: int) -> dict[str, list[str]]:
    """Documents per source: ``dev`` the English shared corpora (+ ``--gen`` Parquet folder),
    ``heldout`` the multilingual shared corpora."""
    base = ROOT.parent / "shared" / "corpora"
    files = sorted(base.glob("*.parquet")) if set_name == "dev" else sorted((base / "multilingual").glob("*.parquet"))
    if set_name == "dev" and gen:
        files += sorted(Path(gen).glob("*.parquet"))
    out: dict[str, list[str]] = {}
    for f in files:
        texts = [t for t in pq.read_table(f, columns=["text"]).column(0).to_pylist() if t]
        name = f.stem if f.parent.name != "docs" else f"gen/{f.stem}"
        out[name] = texts[:limit] if limit else texts
    return out


def decision(label: str, score: float) -> tuple:
    return (label, *(score >= t for t in THRESHOLDS))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", choices=["dev", "heldout"], required=True)
    ap.add_argument("--gen", help="dev: also a folder of bench/gen_corpus.py Parquet parts")
    ap.add_argument("--limit", type=int, default=0, help="documents per source (0: all)")
    ap.add_argument("--variants", default="head:1000,head:2000,head:4000,spread:4:500,spread:4:1000")
    args = ap.parse_args()
    import fasttext

    model = fasttext.load_model(str(PACKAGED_MODEL))

    def predict(text: str) -> tuple[str, float]:
        labels, probs = model.predict(text.replace("\n", " "), k=1)
        return (labels[0].removeprefix("__label__"), min(float(probs[0]), 1.0)) if labels else ("unknown", 0.0)

    docs = load(args.set, args.gen, args.limit)
    vs = variants(args.variants.split(","))
    load0 = harness.loadavg()
    res: dict = {"set": args.set, "reference_chars": REF_CHARS, "thresholds": THRESHOLDS, "sources": {}}
    totals = {v: {"docs": 0, "same": 0, "long": 0, "long_same": 0, "label_same": 0, "cpu": 0.0} for v in vs}
    ref_cpu = mb_all = 0.0
    for name, texts in docs.items():
        mb = sum(len(t.encode()) for t in texts) / 1e6
        mb_all += mb
        t0 = time.process_time()
        ref = [predict(t[:REF_CHARS]) for t in texts]
        ref_cpu += time.process_time() - t0
        row = {"docs": len(texts), "mb": round(mb, 3)}
        for v, (cut, size) in vs.items():
            t0 = time.process_time()
            got = [predict(cut(t[:REF_CHARS])) for t in texts]
            cpu = time.process_time() - t0
            same = [decision(*a) == decision(*b) for a, b in zip(ref, got, strict=True)]
            long_ = [len(t[:REF_CHARS]) > size for t in texts]
            tot = totals[v]
            tot["docs"] += len(texts)
            tot["same"] += sum(same)
            tot["long"] += sum(long_)
            tot["long_same"] += sum(s for s, lg in zip(same, long_, strict=True) if lg)
            tot["label_same"] += sum(a[0] == b[0] for a, b in zip(ref, got, strict=True))
            tot["cpu"] += cpu
            row[v] = {"agreement": round(sum(same) / len(texts), 5), "long_docs": sum(long_),
                      "long_disagree": sum(1 for s, lg in zip(same, long_, strict=True) if lg and not s)}
        res["sources"][name] = row
        print(json.dumps({name: row}), flush=True)
    res["reference_s_per_mb"] = round(ref_cpu / mb_all, 4)
    res["variants"] = {v: {"agreement": round(t["same"] / t["docs"], 5),
                           "label_agreement": round(t["label_same"] / t["docs"], 5),
                           "long_docs": t["long"],
                           "agreement_long": round(t["long_same"] / t["long"], 5) if t["long"] else None,
                           "s_per_mb": round(t["cpu"] / mb_all, 4)} for v, t in totals.items()}
    res["loadavg_start"], res["loadavg_end"] = load0, harness.loadavg()
    print(json.dumps({"reference_s_per_mb": res["reference_s_per_mb"], "variants": res["variants"]}, indent=1))
    out_dir = ROOT / "bench" / "out"
    out_dir.mkdir(parents=True, exist_ok=True)
    harness.write_record("langid_window", res, out_dir / f"bench_langid_window_{args.set}.json")


if __name__ == "__main__":
    main()
