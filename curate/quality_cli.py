"""``corpusmix curate pii | score | train-quality | build-lmplz``: PII and quality commands.

* ``pii --input IN --output OUT``: redact PII; adds ``pii_spans``, ``pii_counts`` (params ``pii``).
* ``score --input IN --output OUT --models DIR``: adds ``quality_ft``, ``ppl``, ``ppl_bucket``
  (params ``quality``). Scoring only: thresholds are applied by the pipeline's filter steps.
* ``train-quality --reference PATH --raw PATH --output DIR``: trains the fastText classifier and the
  KenLM model (positives: documents of ``quality.reference_domains`` in ``--reference``) on text
  redacted first by the PII step (params ``pii``): the models are DVC outputs and their
  vocabularies would otherwise keep e-mail local parts, phone digits and keys of the raw text.
* ``build-lmplz``: builds KenLM's ``lmplz``/``build_binary`` into ``tools/bin`` when missing.

Single-file commands keep every input column and every readable row and add their columns; rows
that cannot be read or processed are written with their reason to ``--drops`` (default
``<output>.drops.parquet``) and counted in the printed JSON summary.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

from corpusmix.config import ConfigError, add_config_args, config_from, load_params
from corpusmix.logging import get_logger
from curate.chain import section

log = get_logger("curate.quality_cli")


def _run_steps(args: argparse.Namespace, steps: list[Any], step_label: str) -> int:
    """Read ``--input``, run ``steps`` on every document, write ``--output`` and the drops."""
    import pyarrow as pa
    from tqdm import tqdm

    from corpusmix.stats import StepStats
    from curate.docio import read_documents
    from curate.docwrite import atomic_write_table, docs_to_table, drops_table
    from curate.runner import run_steps
    from curate.stats import count_read, drop_row

    t0 = time.time()
    kept, drops = [], []
    reasons: Counter[str] = Counter()
    read_stats = StepStats()
    records = (count_read(read_stats, r)
               for r in tqdm(read_documents(args.input), desc=step_label, unit="doc", mininterval=2.0))
    for res in run_steps(steps, records):
        if res.kept:
            kept.append(res.doc)
            continue
        drops.append(drop_row(res))
        reasons[f"{res.step}:{res.reason}"] += 1
    n_in = read_stats.docs_in
    table = docs_to_table(kept)
    if "pii_spans" in table.column_names:
        span_t = pa.list_(pa.struct([("start", pa.int32()), ("end", pa.int32()), ("type", pa.string())]))
        table = table.set_column(table.column_names.index("pii_spans"), "pii_spans",
                                 pa.array(table.column("pii_spans").to_pylist(), span_t))
    atomic_write_table(table, args.output)
    drops_path = Path(args.drops) if args.drops else Path(str(args.output) + ".drops.parquet")
    atomic_write_table(drops_table(drops), drops_path)
    summary: dict[str, Any] = {"docs_in": n_in, "kept": len(kept), "dropped": dict(reasons),
                               "seconds": round(time.time() - t0, 2), "output": str(args.output),
                               "drops": str(drops_path)}
    for step in steps:
        if hasattr(step, "type_counts"):
            summary["pii_counts"] = dict(sorted(step.type_counts.items()))  # counts only, never values
    assert n_in == len(kept) + len(drops)
    log.info(f"{step_label} done", extra={"data": summary})  # counts only, never PII values
    print(json.dumps(summary))
    return 0


def _pii(args: argparse.Namespace) -> int:
    from curate.steps.pii import PIIConfig, PIIRedactor

    cfg = config_from(PIIConfig, params=section(load_params(args.params), "pii"), args=args, where="params pii")
    return _run_steps(args, [PIIRedactor(cfg)], "pii")


def _score(args: argparse.Namespace) -> int:
    from curate.steps.quality import QualityConfig, quality_scorers

    cfg = config_from(QualityConfig, params=section(load_params(args.params), "quality"), args=args,
                      where="params quality")
    return _run_steps(args, quality_scorers(args.models, cfg), "score")


def _read_texts(paths: list[str], domains: list[str] | None, redactor: Any = None,
                memo: dict[str, str] | None = None) -> list[str]:
    """Texts of ``paths`` (of ``domains``), PII-redacted by ``redactor`` (each text once: ``memo``)."""
    from curate.docio import Drop as ReadDrop
    from curate.docio import read_documents
    from curate.steps.pii import redact

    memo = {} if memo is None else memo
    out = []
    for p in paths:
        for item in read_documents(p):
            if isinstance(item, ReadDrop):
                continue  # unreadable records cannot be training text; read drops are reported by `pii`/`score`
            if domains is None or item.metadata.get("domain") in domains:
                text = item.text
                if redactor is not None:
                    if text not in memo:
                        spans = redactor.detect(text)
                        redactor.type_counts.update(t for _, _, t in spans)
                        memo[text] = redact(text, spans) if spans else text
                    text = memo[text]
                out.append(text)
    return out


def _train(args: argparse.Namespace) -> int:
    from curate.steps.pii import PIIConfig, PIIRedactor
    from curate.steps.quality import QualityConfig, train_quality_models

    params = load_params(args.params)  # read once, here
    cfg = config_from(QualityConfig, params=section(params, "quality"), args=args, where="params quality")
    # the same redaction as the pipeline's PII step, so no raw value reaches a model file
    redactor = PIIRedactor(config_from(PIIConfig, params=section(params, "pii"), where="params pii"))
    memo: dict[str, str] = {}
    ref = _read_texts(args.reference, cfg.reference_domains or None, redactor, memo)
    if not ref:
        raise ConfigError(f"no documents of domains {cfg.reference_domains} in {args.reference}; set "
                          "quality.reference_domains to domains present there (or [] for all documents)")
    raw = _read_texts(args.raw, None, redactor, memo)
    manifest = train_quality_models(reference_texts=ref, raw_texts=raw, out_dir=args.output, cfg=cfg)
    pii_counts = dict(sorted(redactor.type_counts.items()))  # counts only, never values
    log.info("quality training text redacted", extra={"data": {"docs": len(memo), "pii_counts": pii_counts}})
    print(json.dumps({**{k: manifest[k] for k in ("positives", "negatives", "fasttext", "kenlm")},
                      "redacted": pii_counts}))
    return 0


def _build_lmplz(args: argparse.Namespace) -> int:
    from curate.lmplz import KenLMToolsMissing, build_kenlm_tools, find_kenlm_tools

    if not args.force:
        try:
            tools = find_kenlm_tools()
            print(json.dumps({k: str(v) for k, v in tools.items()} | {"built": False}))
            return 0
        except KenLMToolsMissing:
            pass
    tools = build_kenlm_tools(dest=args.dest, sdist=args.sdist, version=args.version or "")
    print(json.dumps({k: str(v) for k, v in tools.items()} | {"built": True}))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    from curate.steps.pii import PIIConfig
    from curate.steps.quality import QualityConfig

    def io_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("--input", required=True, help="Parquet/JSONL file or folder of documents")
        p.add_argument("--output", required=True, help="output Parquet file")
        p.add_argument("--drops", default=None, help="drops Parquet (default: <output>.drops.parquet)")
        p.add_argument("--params", default="params.yaml", help="params file")

    p = sub.add_parser("pii", help="redact PII (presidio, offline) and add pii_spans / pii_counts")
    io_args(p)
    add_config_args(p, PIIConfig)
    p.set_defaults(func=_pii)

    p = sub.add_parser("score", help="add quality_ft, ppl and ppl_bucket with trained quality models")
    io_args(p)
    p.add_argument("--models", required=True, help="folder written by train-quality")
    add_config_args(p, QualityConfig)
    p.set_defaults(func=_score)

    p = sub.add_parser("train-quality", help="train the fastText quality classifier and the KenLM model")
    p.add_argument("--reference", nargs="+", required=True, help="documents holding the reference set")
    p.add_argument("--raw", nargs="+", required=True, help="raw documents (negatives are sampled here)")
    p.add_argument("--output", required=True, help="output folder for the models")
    p.add_argument("--params", default="params.yaml", help="params file")
    add_config_args(p, QualityConfig)
    p.set_defaults(func=_train)

    p = sub.add_parser("build-lmplz", help="build KenLM's lmplz/build_binary into tools/bin when missing")
    p.add_argument("--dest", default=None, help="install folder (default ./tools/bin)")
    p.add_argument("--sdist", default=None, help="a local kenlm-*.tar.gz (default: pip download kenlm)")
    p.add_argument("--version", default=None, help="kenlm version to download (default: latest)")
    p.add_argument("--force", action="store_true", help="rebuild even when the tools are found")
    p.set_defaults(func=_build_lmplz)
