"""The toxicity step on cookies that people marked offensive, against cookies they did not.

fortune-mod keeps the cookies its editors judged offensive apart from the others
(``datfiles/off/unrotated/<category>``, the others in ``datfiles/<category>``): a human label made
without any word list. Each cookie (a ``%``-separated entry) is one document. The categories whose
label is about abuse, obscenity or sex are read as toxic (``TOXIC``: fixed before any run, from
the category names alone); the other offensive categories (religion, politics, astrology, ...) are
reported but not counted, being offensive in opinion rather than in words.

Cookies are split by their position in their file: even positions are the development half, odd
ones the held-out half (``--half``), so a rule or threshold chosen on one half is judged on the
other. Criteria and results: docs/curation.md ("Cookies people marked offensive").

Per category: the share of cookies the step flags, and the scores (the model's window maximum,
listed-word hits per word) for threshold studies (``--scores``). The repository is not a dependency;
unpack it first (any checkout of github.com/shlomif/fortune-mod)::

    .venv/bin/python bench/bench_toxicity_fortunes.py --datfiles fortune-mod/fortune-mod/datfiles --half dev
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import harness

ROOT = Path(__file__).resolve().parents[1]
# offensive categories whose label is about abuse, obscenity or sex (by name, before any run)
TOXIC = ("vulgarity", "sex", "privates", "limerick", "racism", "ethnic", "misogyny", "misandry", "hphobia")


def cookies(path: Path, half: str) -> list[str]:
    """The cookies of one fortune file (``%`` lines separate them) at even (dev) or odd (heldout) positions."""
    text = path.read_text(encoding="utf-8", errors="replace")
    items = [c.strip() for c in text.split("\n%\n") if c.strip() and c.strip() != "%"]
    return items[0 if half == "dev" else 1::2]


def categories(folder: Path, half: str) -> dict[str, list[str]]:
    return {f.name: cookies(f, half) for f in sorted(folder.iterdir())
            if f.is_file() and not f.suffix and not f.is_symlink() and f.name.islower()}


def score(texts: list[str], scorer, filt) -> list[dict]:
    from datatrove.data import Document

    docs = [Document(text=t, id=str(i), metadata={"lang": "en", "domain": "cookies"}) for i, t in enumerate(texts)]
    out = []
    for k in range(0, len(docs), 64):
        batch = docs[k:k + 64]
        scorer.filter_batch(batch)
        for d in batch:
            verdict = filt.filter(d)
            out.append({"flagged": verdict is not True, "toxicity": d.metadata.get("toxicity"),
                        "badwords": d.metadata.get("badwords"), "words": len(d.text.split())})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datfiles", required=True, help="fortune-mod's datfiles folder")
    ap.add_argument("--half", choices=("dev", "heldout"), required=True)
    ap.add_argument("--params", default="", help="a params.yaml whose toxicity section is used (default: the code's)")
    ap.add_argument("--scores", action="store_true", help="keep every cookie's scores in the record")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    from curate.steps.toxicity import ToxicityConfig, toxicity_steps

    cfg = ToxicityConfig()
    if args.params:
        from corpusmix.config import from_dict, load_params

        cfg = from_dict(ToxicityConfig, load_params(args.params, "toxicity"), where="toxicity")
    scorer, filt = toxicity_steps(cfg)
    root = Path(args.datfiles)
    res: dict = {"half": args.half, "toxic_categories": list(TOXIC), "offensive": {}, "regular": {}}
    for kind, folder in (("offensive", root / "off" / "unrotated"), ("regular", root)):
        for name, texts in categories(folder, args.half).items():
            if not texts:
                continue
            rows = score(texts, scorer, filt)
            entry = {"cookies": len(rows), "flagged": round(sum(r["flagged"] for r in rows) / len(rows), 4)}
            if args.scores:
                entry["rows"] = rows
            res[kind][name] = entry
    tox = [res["offensive"][c] for c in TOXIC if c in res["offensive"]]
    n = sum(e["cookies"] for e in tox)
    res["toxic_recall"] = round(sum(e["flagged"] * e["cookies"] for e in tox) / max(n, 1), 4)
    res["toxic_cookies"] = n
    reg = res["regular"]
    res["regular_flagged_max"] = max((e["flagged"] for e in reg.values()), default=None)
    res["regular_over_2pct"] = sorted(k for k, e in reg.items() if e["flagged"] > 0.02)
    out = args.out or str(ROOT / "bench" / "out" / f"bench_toxicity_fortunes_{args.half}.json")
    harness.write_record("toxicity_fortunes", res, out)
    brief = {k: v for k, v in res.items() if k not in ("offensive", "regular")}
    brief["offensive"] = {k: v["flagged"] for k, v in res["offensive"].items()}
    brief["regular"] = {k: v["flagged"] for k, v in reg.items()}
    print(json.dumps(brief, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
