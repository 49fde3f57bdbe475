"""Safety plantings of the demo data: toxic documents and contaminated copies of a held-out evaluation set.

Used by ``corpusmix demo-data`` (``curate.demo.data``), with a random stream of its own (seeded
from the demo seed) drawn after every other planting, so the other planted documents stay
byte-identical. Planted documents are new documents (never edits of the real ones), recorded in
the ground truth with defects ``toxic:<kind>`` and ``contaminated:<benchmark>``:

* ``toxic:inserted`` — a collage of real prose sentences from the demo with words of the shipped
  English LDNOOBW list inserted; ``toxic:abusive`` — templated abusive comments (insults built from
  the same list) between real sentences. Both are synthetic and generated offline.
* ``contaminated:<benchmark>`` — items of ``data/demo/eval/<benchmark>.parquet`` either dumped as a
  question/answer page (``dump``) or inserted between real sentences (``inserted``), with case,
  punctuation and line-break changes that decontamination's normalisation must see through.

``build_eval_sets`` (``corpusmix demo-data --build-eval CORPORA``) (re)builds the shipped evaluation
set from the full corpora: real text of documents that are NOT in the demo subset, cut into
benchmark items, keeping only items that share no 13-gram with the demo's English text (so the
ground truth's "clean" documents really are clean). See ``data/demo/PROVENANCE.md``.
"""

from __future__ import annotations

import hashlib
import random
import re
from pathlib import Path
from typing import Any

SENT = re.compile(r"(?<=[.!?])\s+")
PROSE_DOMAINS = ("literature", "news", "reference")
BENCHMARKS = ("define", "reading", "quotes_qa")

ABUSE = [
    "Shut up, you {w}.", "Nobody asked you, {w}.", "You are a worthless {w} and everyone here knows it.",
    "Go away, {w}, and take your {w2} opinions with you.", "What a {w} thing to say, you {w2}.",
    "I hope you choke on it, {w}.", "Only a {w} would post this {w2}.", "Get lost, {w2}.",
]


def _sentences(originals: list[tuple[str, dict]]) -> list[str]:
    out = []
    for d, r in originals:
        if d not in PROSE_DOMAINS:
            continue
        for s in SENT.split(" ".join(r["text"].split())):
            if 6 <= len(s.split()) <= 40 and s[:1].isupper():
                out.append(s)
    return out


def _collage(rng: random.Random, sentences: list[str], k: int) -> list[str]:
    return [rng.choice(sentences) for _ in range(k)]


def _english_badwords() -> list[str]:
    from curate.steps.toxicity import load_badwords

    return [w for w in load_badwords()["en"] if re.fullmatch(r"[a-z]+", w) and len(w) >= 4]


def make_toxic(kind: str, rng: random.Random, sentences: list[str], words: list[str]) -> str:
    if kind == "inserted":
        sents = _collage(rng, sentences, rng.randint(8, 14))
        for i in rng.sample(range(len(sents)), rng.randint(2, 4)):
            toks = sents[i].split()
            toks.insert(rng.randint(0, len(toks)), rng.choice(words))
            sents[i] = " ".join(toks)
        return " ".join(sents)
    if kind == "abusive":
        lines = []
        for _ in range(rng.randint(4, 7)):
            lines.append(rng.choice(sentences))
            lines.append(rng.choice(ABUSE).format(w=rng.choice(words), w2=rng.choice(words)))
        return "\n".join(lines)
    raise ValueError(kind)


def _format_noise(text: str, rng: random.Random) -> str:
    """Changes that normalisation (lower-case word characters) must see through."""
    kind = rng.randrange(4)
    if kind == 1:
        return text.upper()
    if kind == 2:
        return re.sub(r"([,.;:!?])", r" \1 ", text).replace("  ", " ")
    if kind == 3:
        words = text.split()
        for i in rng.sample(range(1, len(words)), min(3, len(words) - 1)) if len(words) > 1 else []:
            words[i] = "\n" + words[i]
        return " ".join(words)
    return text


def _item_text(item: dict[str, Any]) -> str:
    return "\n".join(str(item[c]) for c in ("passage", "question", "answer") if item.get(c))


def make_contaminated(kind: str, items: list[dict[str, Any]], rng: random.Random, sentences: list[str]) -> str:
    if kind == "dump":
        parts = ["Practice set with answers."]
        for k, it in enumerate(items, 1):
            q = f"{it['passage']}\n{it['question']}" if it.get("passage") else it["question"]
            parts.append(_format_noise(f"{k}. {q}\nAnswer: {it['answer']}", rng))
        return "\n\n".join(parts)
    if kind == "inserted":
        sents = _collage(rng, sentences, rng.randint(6, 12))
        sents.insert(rng.randint(0, len(sents)), _format_noise(_item_text(items[0]), rng))
        return " ".join(sents)
    raise ValueError(kind)


def read_eval_sets(eval_dir: Path) -> dict[str, list[dict[str, Any]]]:
    import pyarrow.parquet as pq

    return {p.stem: pq.read_table(p).to_pylist() for p in sorted(eval_dir.glob("*.parquet"))}


def plant_safety(add: Any, originals: list[tuple[str, dict]], domains: tuple[str, ...], *, seed: int,
                 toxic_docs: int, contaminated_docs: int, eval_dir: Path) -> None:
    """Add the toxic and contaminated documents through ``add`` (demo_data's recorder)."""
    rng = random.Random(f"{seed}:safety")
    sentences = _sentences(originals)
    if toxic_docs:
        words = _english_badwords()
        for k in range(toxic_docs):
            kind = ("inserted", "abusive")[k % 2]
            add(f"toxic/{kind}/{k:05d}", make_toxic(kind, rng, sentences, words), rng.choice(domains),
                "planted-toxic", defects=[f"toxic:{kind}"])
    if not contaminated_docs:
        return
    sets = read_eval_sets(eval_dir)
    if not sets:
        raise FileNotFoundError(f"no evaluation set in {eval_dir}; rebuild it with "
                                "`corpusmix demo-data --build-eval PATH/TO/corpora` or set contaminated_docs: 0")
    pools = {b: rng.sample(items, len(items)) for b, items in sets.items()}
    names = sorted(pools)
    for k in range(contaminated_docs):
        bench = names[k % len(names)]
        kind = ("dump", "inserted")[(k // len(names)) % 2]
        take = rng.randint(2, 4) if kind == "dump" else 1
        if len(pools[bench]) < take:
            raise ValueError(f"evaluation set {bench!r} has too few items for {contaminated_docs} contaminated docs")
        items = [pools[bench].pop() for _ in range(take)]
        add(f"contam/{bench}/{kind}/{k:05d}", make_contaminated(kind, items, rng, sentences), rng.choice(domains),
            f"planted-contamination:{bench}", defects=[f"contaminated:{bench}"])


# ------------------------------------------------------------------------------- the shipped eval set

def _words(text: str) -> list[str]:
    return text.split()


def _eval_candidates(corpora: Path, demo_ids: set[str], rng: random.Random) -> dict[str, list[dict]]:
    import pyarrow.parquet as pq

    def rows(name: str) -> list[dict]:
        t = pq.read_table(corpora / f"{name}.parquet", columns=["id", "source", "license", "text"]).to_pylist()
        t = [r for r in t if r["id"] not in demo_ids]
        t.sort(key=lambda r: hashlib.sha1(f"eval:{r['id']}".encode()).hexdigest())
        return t

    out: dict[str, list[dict]] = {b: [] for b in BENCHMARKS}
    for r in rows("reference"):
        lines = [x.strip() for x in r["text"].splitlines() if x.strip()]
        body = " ".join(" ".join(lines[1:]).split())
        if lines and 15 <= len(body.split()) <= 90:
            out["define"].append({"id": f"define/{len(out['define']):04d}", "question":
                                  f"What is meant by: {lines[0][:80]}?", "answer": body,
                                  "source_id": r["id"], "license": r["license"]})
    by_source: dict[str, list[dict]] = {}
    for name in ("literature", "news"):  # (every news article of the corpora is in the demo: none held out)
        for r in rows(name):
            sents = [s for s in SENT.split(" ".join(r["text"].split())) if s]
            if len(sents) < 6:
                continue
            i = rng.randrange(0, len(sents) - 4)
            passage = " ".join(sents[i:i + 3])
            if 30 <= len(passage.split()) <= 120 and 5 <= len(sents[i + 3].split()) <= 40:
                by_source.setdefault(r["source"], []).append({"passage": passage, "question": "Which sentence follows the passage?",
                            "answer": sents[i + 3], "source_id": r["id"], "license": r["license"]})
    queues = [by_source[k] for k in sorted(by_source)]
    mixed = [q[i] for i in range(max(map(len, queues), default=0)) for q in queues if i < len(q)]
    for k, c in enumerate(mixed):  # round-robin over sources: not only the longest book
        out["reading"].append({"id": f"reading/{k:04d}", **c})
    for r in rows("quotes"):
        w = _words(r["text"])
        if 26 <= len(w) <= 80:  # both halves hold a 13-gram of their own (an "Answer:" label may split them)
            h = len(w) // 2
            out["quotes_qa"].append({"id": f"quotes_qa/{len(out['quotes_qa']):04d}", "question":
                                     "Complete the quotation: " + " ".join(w[:h]), "answer": " ".join(w[h:]),
                                     "source_id": r["id"], "license": r["license"]})
    return out


def build_eval_sets(corpora: Path, demo_dir: Path, out: Path, *, items: int = 150, seed: int = 1234) -> dict[str, int]:
    """Write ``out/<benchmark>.parquet`` from documents held out of the demo subset."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from curate.steps import ngram_index as ngi

    demo_rows = [r for p in sorted((demo_dir / "en").glob("*.parquet")) for r in pq.read_table(p).to_pylist()]
    demo_ids = {r["id"] for r in demo_rows}
    hasher = ngi.WordHasher()
    demo_grams = np.unique(np.concatenate([ngi.ngram_hashes(np.asarray(hasher.words(r["text"]), np.uint64), 13)
                                           for r in demo_rows]))
    rng = random.Random(f"{seed}:eval")
    counts = {}
    out.mkdir(parents=True, exist_ok=True)
    for bench, cands in _eval_candidates(corpora, demo_ids, rng).items():
        kept: list[dict] = []
        for c in cands:
            h = ngi.ngram_hashes(np.asarray(hasher.words(_item_text(c)), np.uint64), 13)
            if len(h) and not ngi.contains(demo_grams, h).any():  # held out: no shared 13-gram
                kept.append(c)
            if len(kept) >= items:
                break
        pq.write_table(pa.Table.from_pylist(kept), out / f"{bench}.parquet", compression="zstd",
                       compression_level=9)
        counts[bench] = len(kept)
    return counts
