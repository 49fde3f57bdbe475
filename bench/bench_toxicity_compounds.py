"""English root compounds of the toxicity step on sources the rule never read.

``curate.steps.toxicity_words`` counts an English word made of a root and another word
(``dickhead``) where a text writes it in lower case. Two checks (criteria in docs/curation.md,
"English root compounds"):

* real text: the cookie files of the Debian package ``fortunes`` (each file a domain; consecutive
  cookies joined into documents of ``--min-words``+ words): documents that gain a hit from the rule
  (a token the rule reads, written in lower case), and the share the whole step flags per domain;
* a dictionary: SCOWL's ``american-english-huge`` (Debian package ``wamerican-huge``): the rule's
  words that the dictionary lists in lower case (read by hand: each must have a vulgar sense).

The packages are not dependencies; fetch and unpack them first::

    apt-get download fortunes wamerican-huge && for f in *.deb; do dpkg -x $f x; done
    .venv/bin/python bench/bench_toxicity_compounds.py --root x
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import harness

ROOT = Path(__file__).resolve().parents[1]


def cookie_domains(folder: Path, min_words: int) -> dict[str, list[str]]:
    """Cookie file name -> documents: consecutive cookies (split at ``%`` lines) joined until a
    document has ``min_words`` words (the last, shorter one kept)."""
    out: dict[str, list[str]] = {}
    for f in sorted(folder.iterdir()):
        if not f.is_file() or f.suffix in (".dat", ".u8") or f.is_symlink():
            continue
        text = f.read_text(encoding="utf-8", errors="replace")
        cookies = [c.strip() for c in text.split("\n%\n") if c.strip() and c.strip() != "%"]
        docs, cur = [], []
        for c in cookies:
            cur.append(c)
            if sum(len(x.split()) for x in cur) >= min_words:
                docs.append("\n\n".join(cur))
                cur = []
        if cur:
            docs.append("\n\n".join(cur))
        out[f.name] = docs
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", required=True, help="where the two packages were unpacked (dpkg -x)")
    ap.add_argument("--min-words", type=int, default=100)
    ap.add_argument("--out", default=str(ROOT / "bench" / "out" / "bench_toxicity_compounds.json"))
    args = ap.parse_args()
    from datatrove.data import Document

    from curate.steps.toxicity import ToxicityConfig, toxicity_steps
    from curate.steps.toxicity_words import LOWER

    root = Path(args.root)
    domains = cookie_domains(root / "usr" / "share" / "games" / "fortunes", args.min_words)
    scorer, filt = toxicity_steps(ToxicityConfig())
    scorer.count_badwords("x", "en")
    ob = scorer._codes["en"].obfuscated
    res: dict = {"domains": {}, "gained": [], "compounds": len(ob.lower_only)}
    for dom, texts in domains.items():
        docs = [Document(text=t, id=str(i), metadata={"lang": "en"}) for i, t in enumerate(texts)]
        flagged = 0
        for k in range(0, len(docs), 64):
            batch = docs[k:k + 64]
            scorer.filter_batch(batch)
            flagged += sum(filt.filter(d) is not True for d in batch)
        gained = 0
        for t in texts:
            toks, orig = t.lower().split(), t.split()
            words = [x for x, o in zip(toks, orig, strict=True) if x == o and ob.flags(x) & LOWER]
            if words:
                gained += 1
                res["gained"].append({"domain": dom, "words": sorted(set(words))})
        res["domains"][dom] = {"documents": len(texts), "flagged": round(flagged / max(len(texts), 1), 4),
                               "gained": gained}
    res["documents"] = sum(d["documents"] for d in res["domains"].values())
    res["documents_gained"] = len(res["gained"])
    res["flagged_max"] = max(d["flagged"] for d in res["domains"].values())
    dictionary = root / "usr" / "share" / "dict" / "american-english-huge"
    listed = {w.strip() for w in dictionary.read_text(encoding="utf-8", errors="replace").splitlines()}
    res["in_dictionary_lower_case"] = sorted(w for w in ob.lower_only if w in listed)
    harness.write_record("toxicity_compounds", res, args.out)
    print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
