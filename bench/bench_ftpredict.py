"""fastText's own predict against the compiled kernel (curate/ftpredict.py), same texts, same run.

For every input (a Parquet file or a folder of them, ``text`` column, else ``html``): the language-ID model on
each text's first 20,000 characters (as ``curate.steps.langid`` calls it) and, with
``--quality-model``, the quality classifier on ``ft_text`` of each text (as
``curate.steps.quality`` calls it). Prints, per input and model, the texts whose label or
probability differ in any bit (the kernel's claim is none), the CPU seconds of each side and
their ratio; ``--json`` writes the same as a record.

    ../shared/tools/quiet-bench python bench/bench_ftpredict.py --inputs ../shared/corpora/multilingual \\
        --quality-model out/models/quality_ft.bin
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import fasttext  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from curate import ftpredict  # noqa: E402
from curate.steps.langid import PACKAGED_MODEL  # noqa: E402
from curate.steps.quality import POS, ft_text  # noqa: E402

MAX_CHARS = 20_000


def texts_of(path: Path) -> list[str]:
    files = sorted(path.glob("*.parquet")) if path.is_dir() else [path]
    out: list[str] = []
    for f in files:
        names = pq.read_schema(f).names
        col = "text" if "text" in names else "html"  # the shared web pages hold their HTML as such
        out += [t for t in pq.read_table(f, columns=[col]).column(col).to_pylist() if isinstance(t, str)]
    return out


def cpu(fn):
    t = time.process_time()
    res = fn()
    return time.process_time() - t, res


def lid_side(ft, compiled, texts: list[str]) -> dict:
    cut = [t[:MAX_CHARS] for t in texts]

    def ref():
        out = []
        for t in cut:
            labels, probs = ft.predict(t.replace("\n", " "), k=1)
            out.append((labels[0].removeprefix("__label__"), float(probs[0])) if len(labels) else None)
        return out

    t_ref, want = cpu(ref)
    t_ours, got = cpu(lambda: [compiled.predict(t) for t in cut])
    return {"texts": len(cut), "differ": sum(a != b for a, b in zip(want, got, strict=True)),
            "label_differ": sum((a or ("",))[0] != (b or ("",))[0] for a, b in zip(want, got, strict=True)),
            "fasttext_s": round(t_ref, 3), "kernel_s": round(t_ours, 3), "ratio": round(t_ref / max(t_ours, 1e-9), 2)}


def quality_side(ft, compiled, texts: list[str]) -> dict:
    inputs = [ft_text(t) for t in texts]

    def ref():
        labels, probs = ft.predict(inputs, k=2)
        return [float(dict(zip(lab, pr, strict=True)).get(POS, 0.0)) for lab, pr in zip(labels, probs, strict=True)]

    t_ref, want = cpu(ref)
    pos = POS.removeprefix("__label__")
    t_ours, got = cpu(lambda: [compiled.probabilities(t).get(pos, 0.0) for t in inputs])
    return {"texts": len(inputs), "differ": sum(a != b for a, b in zip(want, got, strict=True)),
            "fasttext_s": round(t_ref, 3), "kernel_s": round(t_ours, 3), "ratio": round(t_ref / max(t_ours, 1e-9), 2)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--inputs", nargs="+", type=Path, required=True)
    ap.add_argument("--quality-model", type=Path, help="the quality classifier (train-quality's quality_ft.bin)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    lid_ft, lid_k = fasttext.load_model(str(PACKAGED_MODEL)), ftpredict.load(PACKAGED_MODEL)
    q_ft = q_k = None
    if args.quality_model:
        q_ft, q_k = fasttext.load_model(str(args.quality_model)), ftpredict.load(args.quality_model)
    if lid_k is None or (args.quality_model and q_k is None):
        print("the compiled kernel is not built or does not take the model", file=sys.stderr)
        return 2
    record: dict = {}
    for path in args.inputs:
        texts = texts_of(path)
        mb = sum(len(t.encode("utf-8", "surrogatepass")) for t in texts) / 1e6
        row = {"mb": round(mb, 2), "langid": lid_side(lid_ft, lid_k, texts)}
        if q_k is not None:
            row["quality"] = quality_side(q_ft, q_k, texts)
        record[str(path)] = row
        print(f"{path}: {len(texts)} texts, {mb:.1f} MB")
        for name in ("langid", "quality"):
            if name in row:
                r = row[name]
                print(f"  {name:8s} differ {r['differ']} of {r['texts']}   fastText {r['fasttext_s']:.2f} s, "
                      f"kernel {r['kernel_s']:.2f} s, ratio {r['ratio']:.2f}x")
    if args.json:
        args.json.write_text(json.dumps(record, indent=1) + "\n")
    return 1 if any(r[n]["differ"] for r in record.values() for n in ("langid", "quality") if n in r) else 0


if __name__ == "__main__":
    sys.exit(main())
