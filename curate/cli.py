"""``corpusmix curate ...``: the curation subcommands.

Each module in ``CURATE_MODULES`` exposes ``register(subparsers)`` and adds its subcommand(s) to the
``curate`` group; a module is listed only once its command works.
"""

from __future__ import annotations

import argparse
import importlib

CURATE_MODULES: list[str] = [
    "curate.run_cli",  # run (--engine local|spark)
    "curate.steps_cli",  # normalize, langid, filter, toxicity, decontam
    "curate.calibrate_cli",
    "curate.evaluation.metrics",
    "curate.dedup.cli",
    "curate.quality_cli",
]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "curate", help="curate corpora: language ID, filters, PII, quality scores, dedup",
        description="Curation of text corpora. Documents are Parquet/JSONL with at least `id` and `text`.")
    csub = p.add_subparsers(dest="curate_command", metavar="STEP")
    for mod in CURATE_MODULES:
        importlib.import_module(mod).register(csub)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])
