"""The corpusmix report: one self-contained HTML page (plus a Markdown twin) that answers "which
mixture should I use, and how much better is it?" and shows the evidence behind the answer.

Run as ``corpusmix report --output report.html --inputs out/ [more files or folders]`` (see
:mod:`report.cli`), or from Python::

    from report.build import ReportConfig, build_report, write_report
    from report.inputs import collect_inputs
    report = build_report(collect_inputs(["out/"]), ReportConfig())
    write_report(report, "report.html")          # also report.md + report_files/*.png

Sections, in order: the headline box (the pipeline's mixture: ``mix.method``, as written by
``corpusmix mix select``; ``report.chosen`` names another; the lowest-loss mixture only when no
pipeline mixture is found), its average and worst-domain evaluation loss against the natural and
uniform mixtures, the difference in units of the seed spread and a plain
verdict), the mixture ablation (per-domain loss table and heatmap, seed spread, loss curves), the
mixture weights per method, the search diagnostics (DoReMi weight trajectory, RegMix fit quality),
training logs, the curation funnel and quality metrics (:mod:`report.curation`) and the list of
input files used and skipped. Inputs are found by :mod:`report.inputs`, the headline computed by
:mod:`report.headline`, sections built by :mod:`report.sections`, :mod:`report.search` and
:mod:`report.curation`, figures drawn by :mod:`report.figures`, pages written by
:mod:`report.render`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from report.curation import funnel_section, quality_section, tidy_tables
from report.environment import environment_section
from report.headline import Headline, headline, headline_callout, noise_verdict
from report.inputs import MixtureRuns, ReportInputError, ReportInputs, normalise_ablation, small_eval_splits
from report.inspection import inspection_section
from report.render import Callout, Report, Section, fmt, write_report
from report.scaling import scaling_section
from report.search import search_section
from report.sections import ablation_section, inputs_section, training_section, weights_section

__all__ = ["ReportConfig", "build_report", "headline", "noise_verdict", "tidy_tables", "write_report"]


@dataclass
class ReportConfig:
    """``corpusmix report`` (``params.yaml`` section ``report``)."""

    output: str = field(default="out/report/report.html", metadata={"help": "HTML file to write"})
    inputs: list[str] = field(default_factory=lambda: ["out"],
                              metadata={"help": "files or folders with pipeline outputs"})
    title: str = field(default="corpusmix report", metadata={"help": "page title"})
    chosen: str = field(default="", metadata={
        "help": "ablation mixture the headline is about; empty: the pipeline's mixture (mix.method, as written "
                "by `corpusmix mix select`), or the lowest mean average loss when no pipeline mixture is found"})
    baselines: list[str] = field(default_factory=lambda: ["natural", "uniform"],
                                 metadata={"help": "ablation mixtures the chosen one is compared to"})
    markdown: bool = field(default=True, metadata={"help": "also write <output>.md with PNGs next to it"})
    summary: str = field(default="", metadata={
        "help": "also write the headline figures to this JSON (the DVC metric; report/summary.py); empty: no"})
    plots: str = field(default="", metadata={
        "help": "also write the data of `dvc plots show` (CSVs) to this folder (report/plotdata.py); empty: no"})


def pipeline_choice(inputs: ReportInputs, runs: Sequence[MixtureRuns]) -> tuple[str, str] | None:
    """The ablation mixture the pipeline packs with, and why: the mixture file ``corpusmix mix select``
    wrote (``provenance.selected`` = ``mix.method``), matched to an ablation run by its weights, else by
    the method's name. None when no such file was found or no ablation run matches it."""
    for label, m in inputs.mixtures.items():
        sel = (m.get("provenance") or {}).get("selected")
        if not sel:
            continue
        w = m.get("weights") or {}
        for r in runs:
            if r.weights and set(r.weights) == set(w) and all(abs(r.weights[d] - w[d]) <= 1e-9 for d in w):
                return r.name, f"{r.name} is the pipeline's mixture (mix.method: {sel}; {label})."
        if any(r.name == sel for r in runs):
            return str(sel), f"{sel} is the pipeline's mixture (mix.method: {sel}; {label})."
    return None


def _selected_note(inputs: ReportInputs, hl: Headline) -> str:
    """Which mixture the pipeline packs with, when the headline is about another one (``report.chosen``)."""
    for label, m in inputs.mixtures.items():
        sel = (m.get("provenance") or {}).get("selected")
        if sel:
            note = f" The pipeline currently packs with {sel} (mix.method; {label})."
            if hl.use and str(sel) != hl.use:
                note += f" Set mix.method: {hl.use} in params.yaml to use the recommended mixture."
            return note
    return ""


def _lowest_note(runs: Sequence[MixtureRuns], hl: Headline) -> str:
    """The lowest-loss ablation mixture, when the headline is about another one."""
    best = min(runs, key=lambda r: float(np.mean(r.avg_per_seed)))
    if best.name == hl.chosen:
        return ""
    return (f" Lowest mean average loss in the ablation: {best.name} ({fmt(float(np.mean(best.avg_per_seed)))} "
            f"against {fmt(hl.avg)}); set mix.method: {best.name} in params.yaml to pack with it.")


def headline_for(inputs: ReportInputs, runs: Sequence[MixtureRuns], cfg: ReportConfig,
                 avg_over: Sequence[str] | None = None) -> tuple[Headline, Callout]:
    """The headline and its box: about ``report.chosen`` when set, else the pipeline's mixture
    (:func:`pipeline_choice`), else (no pipeline mixture found) the lowest mean average loss."""
    chosen, why = cfg.chosen, ""
    if not chosen:
        chosen, why = pipeline_choice(inputs, runs) or ("", "")
    hl = headline(runs, chosen=chosen, baselines=cfg.baselines, avg_over=avg_over, why=why)
    callout = headline_callout(hl)
    if cfg.chosen:
        callout.note += _selected_note(inputs, hl)
    elif not chosen:
        callout.note += " No pipeline mixture (the output of `corpusmix mix select`) matches an ablation run."
    callout.note += _lowest_note(runs, hl)
    return hl, callout


def build_report(inputs: ReportInputs, cfg: ReportConfig) -> Report:
    """Assemble the report (callout, tables, figures) from the collected inputs."""
    if inputs.is_empty():
        raise ReportInputError(
            f"nothing to report in {cfg.inputs}: no curation stats, mixtures, ablation, train logs or metrics "
            "were found; run the pipeline first (dvc repro) or pass the right folders with --inputs")
    sections: list[Section] = []
    callout = None
    runs: list[MixtureRuns] = []
    hl: Headline | None = None
    if inputs.ablations:
        label, obj = next(iter(inputs.ablations.items()))
        inputs.skipped += [(lbl, "a second ablation file; the report uses the first one found")
                           for lbl in list(inputs.ablations)[1:]]
        domains, avg_over, runs = normalise_ablation(obj, where=label)
        hl, callout = headline_for(inputs, runs, cfg, avg_over)
        sections.append(ablation_section(domains, avg_over, runs, hl, label))
        if small := small_eval_splits(inputs, domains):
            sections[-1].blocks.insert(0, small)
    for sec in (weights_section(inputs, runs), search_section(inputs), training_section(inputs),
                scaling_section(inputs.scaling), funnel_section(inputs), inspection_section(inputs),
                quality_section(inputs), environment_section(inputs)):
        if sec is not None:
            sections.append(sec)
    sections.append(inputs_section(inputs))
    if cfg.summary:
        from report.summary import summary_metrics, write_summary

        write_summary(cfg.summary, summary_metrics(inputs, hl, runs, cfg.baselines))
    if cfg.plots:
        from report.plotdata import write_plot_data

        write_plot_data(cfg.plots, inputs, runs)
    return Report(cfg.title, callout, sections)
