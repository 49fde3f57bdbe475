"""An independent reading of the garbage bench's "real" documents: jusText's boilerplate classifier.

The garbage bench (``bench/bench_garbage_heldout.py``) labels a document real by its source. Pages of
real manuals include tables of contents, keyword tables and index pages, which a pretraining curator
drops as navigation. This reads every real document of a finished bench run with jusText (a
maintained boilerplate classifier, not used by the step: ``pip install --target DIR justext`` and
``PYTHONPATH=DIR``), default parameters and its English stop list, each blank-line-separated
paragraph of the document one ``<p>``: a document is **content** when jusText classifies at least half
of its characters as good, else **boilerplate**. Reported per split and domain: the documents of each
reading, and the share the chain kept of each.

    PYTHONPATH=/tmp/benchpkgs_jt .venv/bin/python bench/bench_real_audit.py --work /tmp/garbage \
        --splits heldout6,heldout7 --out-name cur
"""

from __future__ import annotations

import argparse
import html
import json
from pathlib import Path

import harness
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]


def content_share(text: str, stoplist: frozenset[str]) -> float:
    """The share of the paragraphs' characters jusText classifies as good."""
    import justext

    paras = [p.strip() for p in text.split("\n\n") if p.strip()]
    if not paras:
        return 0.0
    page = "<html><body>" + "".join(f"<p>{html.escape(p)}</p>" for p in paras) + "</body></html>"
    out = justext.justext(page.encode("utf-8"), stoplist, encoding="utf-8")
    total = sum(len(p.text) for p in out)
    good = sum(len(p.text) for p in out if p.class_type == "good")
    return good / total if total else 0.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--splits", required=True)
    ap.add_argument("--out-name", default="out")
    ap.add_argument("--out", default=str(ROOT / "bench" / "out" / "bench_real_audit.json"))
    args = ap.parse_args()
    import justext

    stop = frozenset(justext.get_stoplist("English"))
    res: dict = {"out_name": args.out_name, "splits": {}}
    for split in args.splits.split(","):
        d = args.work / split
        truth = json.loads((d / "truth.json").read_text())
        docs = {r["id"]: r["text"] for r in pq.read_table(d / "docs", columns=["id", "text"]).to_pylist()}
        dropped = {r["id"] for r in pq.read_table(d / args.out_name / "drops.parquet", columns=["id"]).to_pylist()}
        per: dict = {}
        for i, t in truth.items():
            if not t["label"].startswith("real:") or i not in docs:
                continue
            reading = "content" if content_share(docs[i], stop) >= 0.5 else "boilerplate"
            c = per.setdefault(t["label"][5:], {"content": [0, 0], "boilerplate": [0, 0]})
            c[reading][0] += 1
            c[reading][1] += i not in dropped
        res["splits"][split] = {dom: {r: {"docs": n, "kept": round(k / n, 4) if n else None}
                                      for r, (n, k) in c.items()} for dom, c in sorted(per.items())}
    harness.write_record("real_audit", res, args.out)
    print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
