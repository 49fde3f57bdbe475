"""``corpusmix demo-data``: the raw demo input with planted, labelled defects.

It reads the shipped real-text subset in ``data/demo/`` (see ``data/demo/PROVENANCE.md``) and
writes, with a fixed seed:

* ``OUT/docs/part-XXXX.parquet`` — the raw documents (``id``, ``text``, ``domain``, ``source``),
  shuffled into a few parts so that engines can split the work;
* ``OUT/ground_truth.parquet`` — per document: planted defect types, duplicate cluster, edit rate
  and measured word 5-shingle Jaccard of near-duplicates, injected PII spans with offsets, true
  language (schema in ``docs/formats.md``).

Planted defects: exact duplicates (byte copies and case/whitespace variants) and near-duplicates
at known word-edit rates, within and across domains; PII generated with Faker; junk documents
(navigation boilerplate, spam keyword lists, garbled characters, symbol lines, very short / very
long lines); non-English documents inside English domains; a pure-noise domain of random
words that mixture search must learn to avoid; and toxic documents and contaminated copies of the
held-out evaluation set ``data/demo/eval`` (``curate.demo.safety``). Every later curation step is
scored against it.

``corpusmix demo-data --build-subset SHARED_CORPORA`` (re)builds ``data/demo/`` itself from the
full corpora, deterministically.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corpusmix.config import add_config_args, config_from, load_params
from corpusmix.logging import get_logger
from curate.evaluation.planters import PIIFactory

log = get_logger("demo_data")

EN_DOMAINS = ("literature", "reference", "techdocs", "code", "legal", "news", "quotes")
FOREIGN_LANGS = ("de", "fr", "ru", "zh")
EDIT_RATES = (0.01, 0.03, 0.05, 0.1, 0.2, 0.3)


@dataclass
class DemoDataConfig:
    """Knobs of the planted-defect generator (``params.yaml`` section ``demo_data``)."""

    seed: int = field(default=1234, metadata={"help": "seed of every random choice"})
    source_dir: str = field(default="data/demo", metadata={"help": "shipped real-text subset"})
    output: str = field(default="data/raw", metadata={"help": "output folder"})
    parts: int = field(default=4, metadata={"help": "number of raw Parquet parts"})
    exact_dup_frac: float = field(default=0.03, metadata={"help": "share of docs copied exactly"})
    near_dup_frac: float = field(default=0.04, metadata={"help": "share of docs copied with edits"})
    cross_domain_frac: float = field(default=0.3, metadata={"help": "share of copies put in another domain"})
    pii_frac: float = field(default=0.06, metadata={"help": "share of prose docs given PII"})
    junk_docs: int = field(default=120, metadata={"help": "number of junk documents"})
    foreign_docs: int = field(default=120, metadata={"help": "non-English docs put in English domains"})
    noise_docs: int = field(default=300, metadata={"help": "docs in the pure-noise domain"})
    noise_domain: str = field(default="noise", metadata={"help": "name of the pure-noise domain"})
    toxic_docs: int = field(default=60, metadata={"help": "planted toxic documents (half inserted slurs, half abuse)"})
    contaminated_docs: int = field(default=60, metadata={
        "help": "planted documents holding items of the evaluation set (eval_dir)"})
    eval_dir: str = field(default="data/demo/eval", metadata={"help": "held-out evaluation set (benchmark files)"})


# ---------------------------------------------------------------------------------------------
# shingles and edits


def word_shingles(text: str, n: int = 5) -> set[tuple[str, ...]]:
    words = text.lower().split()
    if len(words) < n:
        return {tuple(words)} if words else set()
    return {tuple(words[i:i + n]) for i in range(len(words) - n + 1)}


def jaccard(a: str, b: str, n: int = 5) -> float:
    sa, sb = word_shingles(a, n), word_shingles(b, n)
    if not sa and not sb:
        return 1.0
    return len(sa & sb) / len(sa | sb)


def expected_jaccard(edit_rate: float, n: int = 5) -> float:
    """Jaccard expected after independent per-word edits at ``edit_rate`` (shingle survives
    when none of its n words is edited)."""
    s = (1.0 - edit_rate) ** n
    return s / (2.0 - s)


def edit_words(text: str, rate: float, rng: random.Random, vocab: list[str]) -> str:
    """Replace / delete / insert words with probability ``rate`` each, keeping whitespace."""
    parts = re.split(r"(\s+)", text)
    out: list[str] = []
    for tok in parts:
        if not tok or tok.isspace() or rng.random() >= rate:
            out.append(tok)
            continue
        op = rng.random()
        if op < 0.5:
            out.append(rng.choice(vocab))
        elif op < 0.75:
            out.append("")
        else:
            out.append(tok + " " + rng.choice(vocab))
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# junk and noise


def make_junk(kind: str, rng: random.Random, vocab: list[str]) -> str:
    if kind == "nav":
        items = ["Home", "About us", "Contact", "Login", "Sign up", "Privacy policy", "Terms of use",
                 "Cookies", "Careers", "Blog", "Shop", "Cart", "Help", "FAQ", "Sitemap", "Newsletter"]
        lines = [" | ".join(rng.sample(items, rng.randint(4, 9))) for _ in range(rng.randint(15, 40))]
        lines += ["Copyright © 2024 All rights reserved.", "Follow us on social media"]
        return "\n".join(lines)
    if kind == "spam":
        kw = ["cheap", "casino", "bonus", "free", "viagra", "loans", "crypto", "win", "prize", "click",
              "best", "deal", "discount", "replica", "watches", "pills", "bitcoin", "earn", "money", "now"]
        return "\n".join(" ".join(rng.choice(kw) for _ in range(rng.randint(6, 14)))
                         for _ in range(rng.randint(20, 50)))
    if kind == "garbled":
        alphabet = "ÃƒÂ¢â‚¬Å“Ã©Ã¨ï¿½Â¤Â§Ð¿Ñ€Ð¸Ð²ÐµÑ‚\ufffd" + "".join(chr(c) for c in range(0x2500, 0x2580))
        return "\n".join("".join(rng.choice(alphabet) for _ in range(rng.randint(40, 90)))
                         for _ in range(rng.randint(10, 30)))
    if kind == "symbols":
        return "\n".join(rng.choice("#*=-_~+.") * rng.randint(20, 80) for _ in range(rng.randint(20, 60)))
    if kind == "short_lines":
        return "\n".join(rng.choice(vocab) for _ in range(rng.randint(80, 200)))
    if kind == "long_line":
        return " ".join(rng.choice(vocab[:30]) for _ in range(rng.randint(3000, 6000)))
    raise ValueError(kind)


JUNK_KINDS = ("nav", "spam", "garbled", "symbols", "short_lines", "long_line")


def make_noise(rng: random.Random, word_bag: list[str]) -> str:
    """Words drawn independently from the corpus' unigram distribution (``word_bag`` holds word
    occurrences), in sentence-shaped lines: it has the stop words and punctuation that shallow
    quality heuristics look for, but no structure a language model can learn beyond unigrams."""
    lines = []
    for _ in range(rng.randint(4, 12)):
        words = [rng.choice(word_bag) for _ in range(rng.randint(8, 25))]
        lines.append(" ".join(words).capitalize() + ".")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# the build


def _read_source(source_dir: Path) -> tuple[dict[str, list[dict]], dict[str, list[dict]]]:
    import pyarrow.parquet as pq

    en: dict[str, list[dict]] = {}
    foreign: dict[str, list[dict]] = {}
    for d in EN_DOMAINS:
        p = source_dir / "en" / f"{d}.parquet"
        if not p.exists():
            raise FileNotFoundError(f"demo subset file {p} is missing; rebuild it with "
                                    "`corpusmix demo-data --build-subset PATH/TO/corpora`")
        en[d] = pq.read_table(p).to_pylist()
    for lang in FOREIGN_LANGS:
        p = source_dir / "foreign" / f"{lang}.parquet"
        if p.exists():
            foreign[lang] = pq.read_table(p).to_pylist()
    return en, foreign


def build_demo_data(cfg: DemoDataConfig) -> dict[str, int]:
    """Write the raw demo documents and the ground truth; return counts per defect type."""
    rng = random.Random(cfg.seed)
    pii = PIIFactory(cfg.seed)
    en, foreign = _read_source(Path(cfg.source_dir))

    docs: list[dict[str, Any]] = []
    truth: dict[str, dict[str, Any]] = {}

    def add(doc_id: str, text: str, domain: str, source: str, *, defects: list[str], cluster: str | None = None,
            edit_rate: float = 0.0, jac: float = 1.0, spans: list | None = None, lang: str = "en") -> None:
        docs.append({"id": doc_id, "text": text, "domain": domain, "source": source})
        truth[doc_id] = {"id": doc_id, "domain": domain, "defects": defects, "dup_cluster": cluster or doc_id,
                         "edit_rate": edit_rate, "jaccard": jac, "pii_spans": spans or [], "lang": lang}

    originals = [(d, r) for d in EN_DOMAINS for r in en[d]]
    word_bag = [w for d, r in originals[::7] if d != "code" for w in re.findall(r"[A-Za-z]{1,12}", r["text"])]
    vocab = sorted(set(word_bag))
    prose = [i for i, (d, _) in enumerate(originals) if d not in ("code",)]
    n = len(originals)
    idx = list(range(n))
    rng.shuffle(idx)
    n_exact, n_near = int(n * cfg.exact_dup_frac), int(n * cfg.near_dup_frac)
    exact_src = idx[:n_exact]
    near_src = idx[n_exact:n_exact + n_near]
    copied = set(exact_src) | set(near_src)
    pii_pool = [i for i in prose if i not in copied]
    pii_docs = set(rng.sample(pii_pool, int(len(prose) * cfg.pii_frac)))

    # originals (some with PII)
    for i, (d, r) in enumerate(originals):
        if i in pii_docs:
            text, spans = pii.inject(r["text"], rng.randint(1, 3))
            add(r["id"], text, d, r["source"], defects=["pii"], spans=spans)
        else:
            add(r["id"], r["text"], d, r["source"], defects=[])

    _plant_copies(add, originals, exact_src, near_src, rng, vocab, cfg)
    _plant_defects(add, foreign, rng, vocab, word_bag, cfg)

    # toxic and contaminated documents: their own random stream, so everything above stays byte-identical
    from curate.demo.safety import plant_safety

    plant_safety(add, originals, EN_DOMAINS, seed=cfg.seed, toxic_docs=cfg.toxic_docs,
                 contaminated_docs=cfg.contaminated_docs, eval_dir=Path(cfg.eval_dir))

    out = Path(cfg.output)
    rows = _write_demo(docs, truth, out, cfg)
    counts: dict[str, int] = {"docs": len(docs)}
    for r in rows:
        for dft in r["defects"]:
            key = dft.split(":")[0]
            counts[key] = counts.get(key, 0) + 1
    counts["pii_values"] = sum(len(r["pii_spans"]) for r in rows)
    log.info("demo data written", extra={"data": {"output": str(out), **counts}})
    return counts


def _plant_copies(add: Callable[..., None], originals: list[tuple[str, dict[str, Any]]], exact_src: list[int],
                  near_src: list[int], rng: random.Random, vocab: list[str], cfg: DemoDataConfig) -> None:
    """Exact copies (some case/whitespace variants) and near copies (word edits) of originals."""

    def copy_domain(d: str) -> str:
        return rng.choice([x for x in EN_DOMAINS if x != d]) if rng.random() < cfg.cross_domain_frac else d

    for k, i in enumerate(exact_src):
        d, r = originals[i]
        text = r["text"]
        if rng.random() < 0.3:  # a case/whitespace variant: equal after normalisation
            text = re.sub(r"[ \t]+", "  ", text.upper() if rng.random() < 0.5 else text) + "\n"
        add(f"dup/exact/{k:05d}", text, copy_domain(d), r["source"], defects=["exact_dup"], cluster=r["id"])
    for k, i in enumerate(near_src):
        d, r = originals[i]
        rate = EDIT_RATES[k % len(EDIT_RATES)]
        text = edit_words(r["text"], rate, rng, vocab)
        add(f"dup/near/{k:05d}", text, copy_domain(d), r["source"], defects=["near_dup"], cluster=r["id"],
            edit_rate=rate, jac=round(jaccard(r["text"], text), 6))


def _plant_defects(add: Callable[..., None], foreign: dict[str, list[dict[str, Any]]], rng: random.Random,
                   vocab: list[str], word_bag: list[str], cfg: DemoDataConfig) -> None:
    """Junk documents, foreign-language documents in English domains, and the pure-noise domain."""
    for k in range(cfg.junk_docs):
        kind = JUNK_KINDS[k % len(JUNK_KINDS)]
        add(f"junk/{kind}/{k:05d}", make_junk(kind, rng, vocab), rng.choice(EN_DOMAINS), "planted-junk",
            defects=[f"junk:{kind}"])

    foreign_rows = [(lang, r) for lang in sorted(foreign) for r in foreign[lang]]
    for k, (lang, r) in enumerate(rng.sample(foreign_rows, min(cfg.foreign_docs, len(foreign_rows)))):
        add(f"foreign/{lang}/{k:05d}", r["text"], rng.choice(EN_DOMAINS), r["source"],
            defects=[f"foreign:{lang}"], lang=lang)

    for k in range(cfg.noise_docs):
        add(f"noise/{k:05d}", make_noise(rng, word_bag), cfg.noise_domain, "planted-noise", defects=["noise"])


def _write_demo(docs: list[dict[str, Any]], truth: dict[str, dict[str, Any]], out: Path,
                cfg: DemoDataConfig) -> list[dict[str, Any]]:
    """The raw Parquet parts (deterministic shuffle) and the ground truth; returns the truth rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    # deterministic shuffle into parts
    docs.sort(key=lambda x: hashlib.sha1(f"{cfg.seed}:{x['id']}".encode()).hexdigest())
    (out / "docs").mkdir(parents=True, exist_ok=True)
    for old in (out / "docs").glob("part-*.parquet"):
        old.unlink()
    schema = pa.schema([("id", pa.string()), ("text", pa.string()), ("domain", pa.string()), ("source", pa.string())])
    for p in range(cfg.parts):
        chunk = docs[p::cfg.parts]
        pq.write_table(pa.Table.from_pylist(chunk, schema=schema), out / "docs" / f"part-{p:04d}.parquet",
                       compression="zstd")
    span_t = pa.struct([("start", pa.int32()), ("end", pa.int32()), ("type", pa.string()), ("value", pa.string())])
    gt_schema = pa.schema([("id", pa.string()), ("domain", pa.string()), ("defects", pa.list_(pa.string())),
                           ("dup_cluster", pa.string()), ("edit_rate", pa.float64()), ("jaccard", pa.float64()),
                           ("pii_spans", pa.list_(span_t)), ("lang", pa.string())])
    rows = [truth[d["id"]] for d in docs]
    pq.write_table(pa.Table.from_pylist(rows, schema=gt_schema), out / "ground_truth.parquet", compression="zstd")
    return rows


# ---------------------------------------------------------------------------------------------
# the shipped subset


def build_subset(corpora: Path, out: Path, *, en_bytes: int = 700_000, foreign_bytes: int = 150_000,
                 max_doc_bytes: int = 60_000, seed: int = 1234) -> None:
    """Deterministically sample ``data/demo/`` from the full corpora (see PROVENANCE.md)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    def take(path: Path, budget: int) -> pa.Table:
        rows = pq.read_table(path).to_pylist()
        rows.sort(key=lambda r: hashlib.sha1(f"{seed}:{r['id']}".encode()).hexdigest())
        got, size = [], 0
        for r in rows:
            b = len(r["text"].encode())
            if b > max_doc_bytes or b < 20:
                continue
            if size + b > budget:
                break
            got.append(r)
            size += b
        got.sort(key=lambda r: r["id"])
        return pa.Table.from_pylist(got)

    (out / "en").mkdir(parents=True, exist_ok=True)
    (out / "foreign").mkdir(parents=True, exist_ok=True)
    for d in EN_DOMAINS:
        pq.write_table(take(corpora / f"{d}.parquet", en_bytes), out / "en" / f"{d}.parquet",
                       compression="zstd", compression_level=9)
    for lang in FOREIGN_LANGS:
        pq.write_table(take(corpora / "multilingual" / f"{lang}.parquet", foreign_bytes),
                       out / "foreign" / f"{lang}.parquet", compression="zstd", compression_level=9)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo-data", help="build the raw demo input with planted, labelled defects",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_config_args(p, DemoDataConfig)
    p.add_argument("--params", default="params.yaml", help="params file (section `demo_data`)")
    p.add_argument("--build-subset", metavar="CORPORA", default=None,
                   help="rebuild the shipped subset in --source-dir from the full corpora folder, then exit")
    p.add_argument("--build-eval", metavar="CORPORA", default=None,
                   help="rebuild the held-out evaluation set in --eval-dir from the full corpora, then exit")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    cfg = config_from(DemoDataConfig, params=load_params(args.params, "demo_data"), args=args,
                      where="params.yaml:demo_data")
    if args.build_subset:
        build_subset(Path(args.build_subset), Path(cfg.source_dir), seed=cfg.seed)
        return 0
    if args.build_eval:
        from curate.demo.safety import build_eval_sets

        print(build_eval_sets(Path(args.build_eval), Path(cfg.source_dir), Path(cfg.eval_dir), seed=cfg.seed))
        return 0
    counts = build_demo_data(cfg)
    print(" ".join(f"{k}={v}" for k, v in counts.items()))
    return 0


__all__ = ["DemoDataConfig", "build_demo_data", "build_subset", "jaccard", "expected_jaccard"]
