"""``corpusmix report``: write the HTML report (and its Markdown twin) from pipeline outputs.

Usage::

    corpusmix report --output report.html --inputs data/ [file_or_folder ...] [--chosen regmix]

Options come from :class:`report.build.ReportConfig`, with defaults from the ``report`` section of
``--params`` (``params.yaml``); flags typed on the command line win. Folders are searched
recursively for the artefacts listed in :mod:`report.inputs`.
"""

from __future__ import annotations

import argparse

from corpusmix.config import add_config_args, config_from, load_params
from corpusmix.logging import get_logger

log = get_logger("report")


def register(subparsers: argparse._SubParsersAction) -> None:
    from report.build import ReportConfig

    p = subparsers.add_parser(
        "report", help="HTML + Markdown report: which mixture to use and the evidence",
        description="Build a self-contained HTML page (figures embedded) and a Markdown twin from the "
                    "curation stats, quality metrics, mixtures, search diagnostics, ablation and train logs "
                    "found under --inputs.", conflict_handler="resolve")
    p.add_argument("--params", default="params.yaml", help="params file; section 'report' (default: params.yaml)")
    add_config_args(p, ReportConfig)
    # several paths after one flag reads better than a comma-separated list
    p.add_argument("--inputs", nargs="+", default=None, metavar="PATH",
                   help="files or folders with pipeline outputs, searched recursively (default: report.inputs in params, else ['out'])")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from report.build import ReportConfig, build_report, write_report
    from report.inputs import collect_inputs

    cfg = config_from(ReportConfig, params=load_params(args.params, "report"), args=args, where="report")
    inputs = collect_inputs(cfg.inputs)  # a ReportInputError is a ConfigError: reported, exit code 2
    report = build_report(inputs, cfg)
    written = write_report(report, cfg.output, markdown=cfg.markdown)
    for path, why in inputs.skipped:
        log.info("input skipped", extra={"data": {"file": path, "reason": why}})
    c = report.callout
    log.info("report written", extra={"data": {
        **written, "sections": [s.key for s in report.sections], "headline": c.title if c else None,
        "verdict": c.verdict if c else None, "skipped": len(inputs.skipped)}})
    print(written["html"])
    return 0
