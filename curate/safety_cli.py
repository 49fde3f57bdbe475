"""``corpusmix curate toxicity|decontam``: the safety steps alone, on a file or folder.

Input needs ``id`` and ``text`` (Parquet or JSONL). The output Parquet keeps every readable input row
and column, adds the step's columns and ``<step>_keep`` (bool) / ``<step>_reason`` (string, null when
kept) instead of removing rows, so a threshold can be inspected before it is used in the chain. In
``decontam`` remove mode the text of kept rows is the cut text. Records the reader cannot use are
counted and listed in ``<output>.drops.parquet``. Configs: ``params.yaml`` sections ``toxicity`` and
``decontam``; flags override them.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from corpusmix.config import add_config_args, config_from, load_params
from curate import io as cio


def run_safety(name: str, *, inputs: str | Path, output: str | Path, cfg: Any) -> dict[str, int]:
    """Score and decide every document with the ``toxicity`` or ``decontam`` step(s)."""
    import pyarrow as pa

    if name == "toxicity":
        from curate.steps.toxicity import toxicity_steps

        steps = toxicity_steps(cfg)
    else:
        from curate.steps.decontam import Decontaminator

        steps = [Decontaminator(cfg)]
    out = Path(output)
    drops: list[tuple[str, str, str, str]] = []
    counts = {"docs": 0, "read_drops": 0, "flagged": 0}

    def flush(batch: list) -> None:
        results: list[Any] = [True] * len(batch)
        for step in steps:  # every step sees every document: the verdict is the first failing step's
            for i, res in enumerate(step.filter_batch(batch)):
                if results[i] is True and res is not True:
                    results[i] = res
        for doc, res in zip(batch, results, strict=True):
            ok = res is True or (isinstance(res, tuple) and res[0])
            doc.metadata[f"{name}_keep"] = bool(ok)
            doc.metadata[f"{name}_reason"] = None if ok else res[1]
            counts["flagged"] += not ok
        t = cio.docs_to_table(batch)
        # all-null columns of a batch (no lang list, a clean batch) keep their contract types
        types = {**cio.ANNOTATION_TYPES, f"{name}_reason": pa.string()}
        for i, col in enumerate(t.column_names):
            if col in types and t.column(i).type != types[col]:
                t = t.set_column(i, col, t.column(i).cast(types[col]))
        w.write_table(t)

    with cio.AtomicParquetWriter(out) as w:
        batch = []
        for rec in cio.read_documents(inputs):
            if isinstance(rec, cio.Drop):
                drops.append((rec.id, cio.READ_STEP, rec.reason, rec.domain))
                counts["read_drops"] += 1
                continue
            counts["docs"] += 1
            batch.append(rec)
            if len(batch) >= 256:
                flush(batch)
                batch = []
        if batch:
            flush(batch)
        if w.rows == 0:
            w.write_table(pa.table({"id": pa.array([], pa.string()), "text": pa.array([], pa.string())}))
    cio.atomic_write_table(cio.drops_table(drops), out.with_name(out.name.removesuffix(".parquet") + ".drops.parquet"))
    return counts


def register(sub: argparse._SubParsersAction) -> None:
    from curate.steps.decontam import DecontamConfig
    from curate.steps.toxicity import ToxicityConfig

    for name, cls, help_txt in (
            ("toxicity", ToxicityConfig, "toxicity / NSFW scores (model + shipped word lists): add toxicity, "
                                         "badwords, toxicity_keep, toxicity_reason"),
            ("decontam", DecontamConfig, "n-gram overlap with evaluation sets: add contam_benchmarks, "
                                         "contam_ngrams, decontam_keep, decontam_reason")):
        p = sub.add_parser(name, help=help_txt, description=help_txt)
        p.add_argument("--input", required=True, help="Parquet/JSONL file or folder with id and text")
        p.add_argument("--output", required=True, help="output Parquet file")
        p.add_argument("--params", default="params.yaml")
        add_config_args(p, cls)

        def _cmd(args: argparse.Namespace, name: str = name, cls: type = cls) -> int:
            cfg = config_from(cls, params=load_params(args.params, name), args=args, where=name)
            print(json.dumps(run_safety(name, inputs=args.input, output=args.output, cfg=cfg)))
            return 0

        p.set_defaults(func=_cmd)
