"""Toxicity recall on toxic words from a list the step does not ship, and real documents flagged.

The toxicity step (``curate.steps.toxicity``) matches the shipped LDNOOBW lists and scores with
alt-profanity-check's linear model. Toxic documents here take their words from another maintained
list, better-profanity's ``profanity_wordlist.txt`` (a dev dependency), split by a hash of the word
into two halves (``dev``/``heldout``), each word inserted into real prose as it is or obfuscated
(``--judge surge``: surge-ai/profanity's entries rated Strong or Severe, vendored under
``bench/data/surge-profanity``; ``--judge cuss``: the npm package cuss's entries rated 2, vendored
under ``bench/data/cuss``; ``--judge profane-words``: the npm package profane-words's entries, vendored
under ``bench/data/profane-words``; instead):

* ``plain``: the word; ``asterisk``: inner vowels as ``*`` (``f*ck``); ``leet``: a->4, e->3, i->1,
  o->0, s->$ (``sh1t``); ``spaced``: letters separated by spaces; ``stretched``: a letter repeated.

Each toxic document is 3-8 real sentences (from the English real domains of
``bench/lib/garbage_sources.py``) with 2-4 such words placed between words, or one templated insult.
Real documents are that half's real domains (``dev``: the dev domains; ``heldout``: the heldout2
domains), or with ``--real S1,S2`` the real domains of those garbage bench splits (their source caches
must be filled, ``bench/lib/garbage_sources6.py --fill`` and so on). "Shipped" is the step's effective
English list (LDNOOBW plus the vendored larger lexicon): judge words outside it measure generalisation,
judge words inside it measure the matching.
Reported: recall per variant for judge words in / not in the shipped list and for all judge words,
and the share of real documents flagged per domain.

Run (about a minute per half; develop on ``dev``)::

    .venv/bin/python bench/bench_toxicity_sources.py --half dev [--per-domain 150] [--toxic 400]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
from pathlib import Path

import harness

ROOT = Path(__file__).resolve().parents[1]

VARIANTS = ("plain", "asterisk", "leet", "spaced", "stretched")
LEET = str.maketrans({"a": "4", "e": "3", "i": "1", "o": "0", "s": "$"})
INSULTS = ["You are such a {w}.", "Shut up, {w}!", "What a {w} you are, honestly.", "Nobody likes you, {w}."]


def other_list() -> list[str]:
    import better_profanity

    p = Path(better_profanity.__file__).parent / "profanity_wordlist.txt"
    return sorted({w.strip().lower() for w in p.read_text().splitlines() if w.strip().isalpha() and len(w) >= 3})


SURGE = ROOT / "bench" / "data" / "surge-profanity" / "profanity_en.csv"


def surge_list() -> list[str]:
    """surge-ai/profanity's single-word entries of 3+ letters (letters only) rated Strong or Severe."""
    import csv

    with open(SURGE, encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    return sorted({r["text"].strip().lower() for r in rows
                   if r["severity_description"].strip() in ("Strong", "Severe")
                   and r["text"].strip().isalpha() and r["text"].strip().isascii() and len(r["text"].strip()) >= 3})


CUSS = ROOT / "bench" / "data" / "cuss" / "index.js"


def cuss_list() -> list[str]:
    """The npm package cuss's single-word entries of 3+ letters (letters only) rated 2 (likely profane)."""
    entry = re.compile(r"^\s*'?([^':]+?)'?:\s*([0-2]),?\s*$")
    words = set()
    for line in CUSS.read_text(encoding="utf-8").splitlines():
        m = entry.match(line)
        if m and m.group(2) == "2":
            w = m.group(1).strip().lower()
            if w.isalpha() and w.isascii() and len(w) >= 3:
                words.add(w)
    return sorted(words)


PROFANE_WORDS = ROOT / "bench" / "data" / "profane-words" / "words.json"


def profane_words_list() -> list[str]:
    """The npm package profane-words's single-word entries of 3+ letters (letters only)."""
    words = json.loads(PROFANE_WORDS.read_text(encoding="utf-8"))
    return sorted({w.strip().lower() for w in words
                   if w.strip().isalpha() and w.strip().isascii() and len(w.strip()) >= 3})


def real_of(split: str) -> dict[str, list[tuple[str, str]]]:
    """The real domains of a garbage bench split (``bench/lib/garbage_sources*.py``)."""
    import importlib

    mod = {"heldout3": "3", "heldout4": "4", "heldout5": "5", "heldout6": "6", "heldout7": "7",
           "heldout8": "8"}.get(split, "")
    return importlib.import_module(f"lib.garbage_sources{mod}").real_domains(split)


def half(word: str) -> str:
    return "dev" if int(hashlib.sha1(word.encode()).hexdigest()[:8], 16) % 2 == 0 else "heldout"


def obfuscate(word: str, variant: str, rng: random.Random) -> str:
    if variant == "asterisk":
        inner = [i for i in range(1, len(word) - 1) if word[i] in "aeiou"] or [len(word) // 2]
        i = rng.choice(inner)
        return word[:i] + "*" + word[i + 1:]
    if variant == "leet":
        return word.translate(LEET)
    if variant == "spaced":
        return " ".join(word)
    if variant == "stretched":
        i = rng.randrange(len(word))
        return word[:i] + word[i] * rng.randint(3, 5) + word[i + 1:]
    return word


def toxic_doc(words: list[str], variant: str, prose: list[str], rng: random.Random) -> str:
    if rng.random() < 0.3:
        return " ".join(rng.choice(INSULTS).format(w=obfuscate(rng.choice(words), variant, rng))
                        for _ in range(rng.randint(1, 3)))
    toks = " ".join(rng.choice(prose) for _ in range(rng.randint(3, 8))).split()
    for _ in range(rng.randint(2, 4)):
        toks.insert(rng.randrange(len(toks) + 1), obfuscate(rng.choice(words), variant, rng))
    return " ".join(toks)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--per-domain", type=int, default=150)
    ap.add_argument("--toxic", type=int, default=400, help="toxic documents per half and variant group")
    ap.add_argument("--seed", type=int, default=44)
    ap.add_argument("--half", choices=("dev", "heldout"), default="dev")
    ap.add_argument("--judge", choices=("better-profanity", "surge", "cuss", "profane-words"),
                    default="better-profanity",
                    help="the list toxic documents take their words from (surge: rated Strong/Severe only; "
                         "cuss: rated 2 only)")
    ap.add_argument("--real", default="", help="comma-separated garbage bench splits whose real domains are "
                    "measured for real documents flagged instead of the half's (e.g. heldout6,heldout7,heldout8)")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    tag = ("" if args.judge == "better-profanity" else f"_{args.judge}") + (
        "_real-" + args.real.replace(",", "-") if args.real else "")
    args.out = args.out or str(ROOT / "bench" / "out" / f"bench_toxicity_sources{tag}_{args.half}.json")
    from datatrove.data import Document
    from lib.garbage_sources import real_domains

    from curate.steps.toxicity import ToxicityConfig, toxicity_steps

    rng = random.Random(args.seed)
    scorer, filt = toxicity_steps(ToxicityConfig())
    shipped = set(scorer.lists["en"])
    words = {"better-profanity": other_list, "surge": surge_list, "cuss": cuss_list,
             "profane-words": profane_words_list}[args.judge]()
    real: dict[str, list[str]] = {}
    prose_src: list[str] = []
    for split in ("dev", "heldout2"):
        for dom, docs in real_domains(split).items():
            docs = list(docs)
            rng.shuffle(docs)
            if dom in ("literature", "news"):  # the prose toxic words are inserted into (both halves)
                prose_src += [t for t, _ in docs[:args.per_domain]]
            if split == {"dev": "dev", "heldout": "heldout2"}[args.half]:
                real[dom] = [t for t, _ in docs[:args.per_domain]]
    if args.real:  # real documents of other splits' domains instead of the half's
        real = {}
        for split in args.real.split(","):
            for dom, docs in real_of(split).items():
                docs = list(docs)
                rng.shuffle(docs)
                real[f"{split}:{dom}"] = [t for t, _ in docs[:args.per_domain]]
    prose = [s for t in prose_src for s in re.split(r"(?<=[.!?])\s+", t) if 5 <= len(s.split()) <= 40]

    def flagged(texts: list[str]) -> list[bool]:
        docs = [Document(text=t, id=str(i), metadata={"lang": "en"}) for i, t in enumerate(texts)]
        out = []
        for k in range(0, len(docs), 64):
            batch = docs[k:k + 64]
            scorer.filter_batch(batch)
            out += [filt.filter(d) is not True for d in batch]
        return out

    res: dict = {"half": args.half, "judge": args.judge, "real_flagged": {}, "recall": {}}
    for dom, texts in sorted(real.items()):
        f = flagged(texts)
        res["real_flagged"][dom] = round(sum(f) / len(f), 4)
    pool = [w for w in words if half(w) == args.half]
    groups = {"not_shipped": [w for w in pool if w not in shipped], "shipped": [w for w in pool if w in shipped],
              "all": pool}
    res["judge_words"] = {g: len(ws) for g, ws in groups.items()}
    res["judge_overlap_with_shipped"] = round(len(groups["shipped"]) / max(len(pool), 1), 4)
    for group, ws in groups.items():
        for variant in VARIANTS:
            texts = [toxic_doc(ws, variant, prose, rng) for _ in range(args.toxic // len(VARIANTS))]
            f = flagged(texts)
            res["recall"][f"{group}/{variant}"] = round(sum(f) / len(f), 4)
        vals = [v for k, v in res["recall"].items() if k.startswith(group + "/")]
        res[f"recall_{group}_mean"] = round(sum(vals) / len(vals), 4)
    res["real_flagged_max"] = max(res["real_flagged"].values())
    harness.write_record(f"toxicity_sources_{args.half}", res, args.out)
    print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
