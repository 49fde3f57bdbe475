"""``corpusmix curate normalize|langid|filter|toxicity|decontam``: one curation step on a file or folder.

Input needs ``id`` and ``text`` (Parquet or JSONL); the output Parquet keeps every readable input
row and column and adds the step's columns. ``normalize`` and ``langid`` only annotate/rewrite (a
document a step fails on is dropped and listed, as in the chain). ``filter``, ``toxicity`` and
``decontam`` decide without removing rows: they add ``<name>_keep`` (bool) and ``<name>_reason``
(string, null when kept), every step of the command sees every document and the reason is the
first failing step's, so a threshold can be inspected before it is used in the chain. In
``decontam`` remove mode the text of kept rows is the cut text. Records the reader cannot use
(malformed JSON, missing text, ...) are not documents: they are counted and listed, with the
dropped documents, in ``<output>.drops.parquet``.

Steps run through :func:`curate.runner.run_steps`, the runner of both engines. Configs: the
``params.yaml`` section of the step (``curate.normalize``, ``curate.langid``, ``curate.filters``,
``toxicity``, ``decontam``), read once; flags override it.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
from datatrove.data import Document

from corpusmix.config import add_config_args, config_from, load_params
from corpusmix.logging import get_logger
from corpusmix.stats import StepStats
from curate import docio, docwrite
from curate.chain import section
from curate.runner import Outcome, run_steps
from curate.stats import count_read, drop_row

log = get_logger("curate.steps_cli")
BATCH_ROWS = 1000  # documents per written row group


@dataclass(frozen=True)
class StepCommand:
    """One single-step command: its params section, help and how it reports decisions."""

    section: str
    help: str
    #: decide without removing rows (``<name>_keep``/``<name>_reason``), counted under ``count_key``
    mark: bool = False
    count_key: str = "step_drops"


COMMANDS: dict[str, StepCommand] = {
    "normalize": StepCommand("curate.normalize", "Unicode NFC, control characters, optional ftfy"),
    "langid": StepCommand("curate.langid", "add lang, lang_score (fastText lid.176)"),
    "filter": StepCommand("curate.filters", "heuristic filters (profile auto or web): add filter_keep, "
                          "filter_reason", mark=True),
    "toxicity": StepCommand("toxicity", "toxicity / NSFW scores (model + shipped word lists): add toxicity, "
                            "badwords, toxicity_keep, toxicity_reason", mark=True, count_key="flagged"),
    "decontam": StepCommand("decontam", "n-gram overlap with evaluation sets: add contam_benchmarks, "
                            "contam_ngrams, decontam_keep, decontam_reason", mark=True, count_key="flagged"),
}


def config_class(name: str) -> type:
    """The typed config of command ``name`` (imported when the command is registered)."""
    if name == "normalize":
        from curate.steps.normalize import NormalizeConfig as cls
    elif name == "langid":
        from curate.steps.langid import LangIdConfig as cls
    elif name == "filter":
        from curate.steps.filters import FilterConfig as cls
    elif name == "toxicity":
        from curate.steps.toxicity import ToxicityConfig as cls
    else:
        from curate.steps.decontam import DecontamConfig as cls
    return cls


def build_command_steps(name: str, cfg: Any) -> list[Any]:
    """The step objects of command ``name`` (the chain's: same classes, same config)."""
    if name == "normalize":
        from curate.steps.normalize import Normalizer

        return [Normalizer(cfg)]
    if name == "langid":
        from curate.steps.langid import LanguageID

        return [LanguageID(cfg)]
    if name == "filter":
        from curate.steps.filters import make_filter

        return [make_filter(cfg)]
    if name == "toxicity":
        from curate.steps.toxicity import toxicity_steps

        return list(toxicity_steps(cfg))
    from curate.steps.decontam import Decontaminator

    return [Decontaminator(cfg)]


def run_step(name: str, *, inputs: str | Path, output: str | Path, cfg: Any) -> dict[str, int]:
    """Apply the step(s) of command ``name`` to every document; write the Parquet and its drops file.

    Returns ``{"docs": rows written, "read_drops": ..., <count_key>: documents a step failed}``.
    """
    command = COMMANDS[name]
    steps = build_command_steps(name, cfg)
    calibrating = [s for s in steps if hasattr(s, "set_calibration")]
    if calibrating:  # the auto filter profile: calibrated on this input first
        from curate.calibrate import calibrate_steps

        calibrate_steps(steps, inputs=[str(inputs)], read_cfg=docio.ReadConfig())
    out = Path(output)
    drops: list[tuple[str, str, str, str]] = []
    counts = {"docs": 0, "read_drops": 0, command.count_key: 0}
    stats: dict[str, StepStats] = {docio.READ_STEP: StepStats()}

    def records() -> Iterator[Document | Outcome]:
        for rec in docio.read_documents(inputs):
            yield count_read(stats[docio.READ_STEP], rec)

    with docwrite.AtomicParquetWriter(out) as w:
        batch: list[Document] = []
        for res in run_steps(steps, records(), stats=stats, mark_only=command.mark):
            if res.step == docio.READ_STEP:
                drops.append(drop_row(res))
                counts["read_drops"] += 1
                continue
            if not res.kept:
                counts[command.count_key] += 1
            if command.mark:
                res.doc.metadata[f"{name}_keep"] = res.kept
                res.doc.metadata[f"{name}_reason"] = res.reason
            elif not res.kept:
                drops.append(drop_row(res))
                continue
            counts["docs"] += 1
            batch.append(res.doc)
            if len(batch) >= BATCH_ROWS:
                w.write_table(_table(batch))
                batch = []
        if batch or w.rows == 0:
            w.write_table(_table(batch))
    docwrite.atomic_write_table(docwrite.drops_table(drops),
                             out.with_name(out.name.removesuffix(".parquet") + ".drops.parquet"))
    log.info("step command done", extra={"data": {"command": name, **counts,
                                                  "steps": {k: v.to_dict() for k, v in stats.items()}}})
    return counts


def _table(batch: list[Document]) -> pa.Table:
    """The batch's rows; all-null columns keep their contract types (``*_reason``: string)."""
    if not batch:
        return pa.table({"id": pa.array([], pa.string()), "text": pa.array([], pa.string())})
    t = docwrite.docs_to_table(batch)
    for i, col in enumerate(t.column_names):
        want = docwrite.ANNOTATION_TYPES.get(col, pa.string() if col.endswith("_reason") else None)
        if want is not None and t.column(i).type != want and (pa.types.is_null(t.column(i).type)
                                                               or col in docwrite.ANNOTATION_TYPES):
            t = t.set_column(i, col, t.column(i).cast(want))
    return t


def register(sub: argparse._SubParsersAction) -> None:
    for name, command in COMMANDS.items():
        cls = config_class(name)
        p = sub.add_parser(name, help=command.help, description=command.help)
        p.add_argument("--input", required=True, help="Parquet/JSONL file or folder with id and text")
        p.add_argument("--output", required=True, help="output Parquet file")
        p.add_argument("--params", default="params.yaml")
        add_config_args(p, cls)

        def _cmd(args: argparse.Namespace, name: str = name, command: StepCommand = command, cls: type = cls) -> int:
            params = load_params(args.params)  # read once, here
            cfg = config_from(cls, params=section(params, command.section), args=args, where=command.section)
            print(json.dumps(run_step(name, inputs=args.input, output=args.output, cfg=cfg)))
            return 0

        p.set_defaults(func=_cmd)
