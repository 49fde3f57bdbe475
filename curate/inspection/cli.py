"""``corpusmix inspect``: the offline HTML view of a curation run, sample export and labelled scores.

Usage::

    corpusmix inspect --run out/curate [--output view.html] [--export samples.parquet]
                      [--labelled labelled.parquet] [--scores scores.json]

Options come from :class:`InspectViewConfig` (``params.yaml`` section ``inspect``; flags win). The
page (:mod:`curate.inspection.view`) reads only the run folder. ``--export`` writes the samples for
labelling; ``--labelled`` reads them back with ``should_drop`` filled and adds precision and recall
per rule to the page (and to ``--scores`` as JSON).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from pathlib import Path

from corpusmix.config import UserError, add_config_args, config_from, load_params


@dataclass
class InspectViewConfig:
    """``corpusmix inspect`` (``params.yaml`` section ``inspect``)."""

    output: str = field(default="", metadata={"help": "HTML file to write (default: RUN/inspect.html)"})
    title: str = field(default="corpusmix inspect", metadata={"help": "page title"})
    export: str = field(default="", metadata={"help": "also write the samples as Parquet for labelling"})
    labelled: str = field(default="", metadata={"help": "labelled samples (should_drop filled): scores per rule"})
    scores: str = field(default="", metadata={"help": "write the labelled scores as JSON here"})


def run(args: argparse.Namespace) -> int:
    from curate.inspection.labels import export_samples, score_labels
    from curate.inspection.view import write_page

    cfg = config_from(InspectViewConfig, params=load_params(args.params, "inspect"), args=args, where="inspect")
    run_dir = Path(args.run)
    if not run_dir.is_dir():
        raise UserError(f"--run {str(run_dir)!r} is not a folder (a curation run's output folder)")
    insp_file = run_dir / "inspect.json"
    needs_samples = cfg.export or cfg.labelled
    insp = json.loads(insp_file.read_text()) if needs_samples and insp_file.is_file() else None
    if needs_samples and insp is None:
        raise UserError(f"{str(insp_file)!r} is missing: this run recorded no samples to export or score")
    scores = score_labels(cfg.labelled, insp) if cfg.labelled else None
    output = cfg.output or str(run_dir / "inspect.html")
    write_page(run_dir, output, title=cfg.title, scores=scores)
    if cfg.export:
        n = export_samples(insp, cfg.export)
        print(json.dumps({"export": cfg.export, "rows": n}))
    if scores is not None and cfg.scores:
        Path(cfg.scores).parent.mkdir(parents=True, exist_ok=True)
        Path(cfg.scores).write_text(json.dumps(scores, indent=1) + "\n")
    print(output)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("inspect", help="offline HTML view of a curation run: per domain and rule, examples, "
                                       "histograms and thresholds", description=__doc__.split("\n\n")[0])
    p.add_argument("--run", required=True, help="a curation run's output folder (stats.json, inspect.json, ...)")
    p.add_argument("--params", default="params.yaml", help="params file; section 'inspect'")
    add_config_args(p, InspectViewConfig)
    p.set_defaults(func=run)
