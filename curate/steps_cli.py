"""``corpusmix curate normalize|langid|filter``: one curation step on a file or folder.

Input needs ``id`` and ``text`` (Parquet or JSONL); the output Parquet keeps every input row and
column and adds the step's columns. ``langid`` and ``normalize`` only annotate/rewrite; ``filter``
adds ``filter_keep`` (bool) and ``filter_reason`` (string, null when kept) instead of removing
rows. Records the reader cannot use (malformed JSON, missing text, ...) are not documents: they
are counted and listed in ``<output>.drops.parquet``. Configs: ``params.yaml`` ``curate.<step>``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from corpusmix.config import add_config_args, config_from, load_params
from corpusmix.logging import get_logger
from curate import io as cio

log = get_logger("curate.steps_cli")


def run_step(step_name: str, *, inputs: str | Path, output: str | Path, cfg: object) -> dict[str, int]:
    """Apply one step to every document; write the annotated Parquet and the read drops."""
    from curate.steps.filters import make_filter
    from curate.steps.langid import LanguageID
    from curate.steps.normalize import Normalizer

    step = {"normalize": Normalizer, "langid": LanguageID, "filter": make_filter}[step_name](cfg)
    if hasattr(step, "set_calibration"):  # the auto filter profile: calibrated on this input first
        from curate.calibrate import calibrate_steps

        calibrate_steps([step], inputs=[str(inputs)], read_cfg=cio.ReadConfig())
    out = Path(output)
    drops: list[tuple[str, str, str, str]] = []
    counts = {"docs": 0, "read_drops": 0, "step_drops": 0}
    with cio.AtomicParquetWriter(out) as w:
        batch = []
        for rec in cio.read_documents(inputs):
            if isinstance(rec, cio.Drop):
                drops.append((rec.id, cio.READ_STEP, rec.reason, rec.domain))
                counts["read_drops"] += 1
                continue
            res = step.filter(rec)
            ok, reason = res if isinstance(res, tuple) else (res, None)
            if step_name == "filter":
                rec.metadata["filter_keep"] = bool(ok)
                rec.metadata["filter_reason"] = reason
            elif not ok:
                drops.append((rec.id, step.step_name, reason or "unspecified", rec.metadata.get("domain", "")))
                counts["step_drops"] += 1
                continue
            counts["step_drops"] += 0 if ok else 1
            counts["docs"] += 1
            batch.append(rec)
            if len(batch) >= 1000:
                w.write_table(_table(batch))
                batch = []
        if batch or w.rows == 0:
            w.write_table(_table(batch))
    cio.atomic_write_table(cio.drops_table(drops), out.with_name(out.name.removesuffix(".parquet") + ".drops.parquet"))
    return counts


def _table(batch):
    import pyarrow as pa

    if not batch:
        return pa.table({"id": pa.array([], pa.string()), "text": pa.array([], pa.string())})
    t = cio.docs_to_table(batch)
    if "filter_reason" in t.column_names:  # all-null in a batch of kept docs: keep it a string column
        i = t.column_names.index("filter_reason")
        t = t.set_column(i, "filter_reason", t.column(i).cast(pa.string()))
    return t


def register(sub: argparse._SubParsersAction) -> None:
    from curate.steps.filters import FilterConfig
    from curate.steps.langid import LangIdConfig
    from curate.steps.normalize import NormalizeConfig

    for name, section, cls, help_txt in (
            ("normalize", "normalize", NormalizeConfig, "Unicode NFC, control characters, optional ftfy"),
            ("langid", "langid", LangIdConfig, "add lang, lang_score (fastText lid.176)"),
            ("filter", "filters", FilterConfig, "heuristic filters (profile auto or web): add filter_keep, filter_reason")):
        p = sub.add_parser(name, help=help_txt, description=help_txt)
        p.add_argument("--input", required=True, help="Parquet/JSONL file or folder with id and text")
        p.add_argument("--output", required=True, help="output Parquet file")
        p.add_argument("--params", default="params.yaml")
        add_config_args(p, cls)

        def _cmd(args: argparse.Namespace, name=name, section=section, cls=cls) -> int:
            cfg = config_from(cls, params=load_params(args.params, f"curate.{section}"), args=args,
                              where=f"curate.{section}")
            counts = run_step(name, inputs=args.input, output=args.output, cfg=cfg)
            print(json.dumps(counts))
            return 0

        p.set_defaults(func=_cmd)
