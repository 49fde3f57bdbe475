"""Data files for ``dvc plots show`` (the top-level ``plots:`` of dvc.yaml; docs/formats.md "Plot data").

Written by the report stage from the same inputs as the report, as small CSVs under one folder:

- ``funnel.csv``: ``step, docs_in, kept, dropped`` of the curation chain (``stats.json``);
- ``weights.csv``: ``method, domain, weight`` of every mixture found (searched, selected and the
  ablation's baselines);
- ``ablation.csv``: ``mixture, loss, lo, hi, seeds``: each ablation mixture's mean average evaluation
  loss over seeds with the 95 % t-interval of that mean (``lo``, ``hi``).

- ``trajectory.csv``: ``step, domain, weight`` of the first DoReMi weight trajectory found (long format:
  one line per domain in the plot).

The training loss curve comes from the trainer's dvclive files directly.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from report.inputs import MixtureRuns, ReportInputs


def _write(path: Path, header: list[str], rows: list[list[Any]]) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    tmp.replace(path)


def _interval(xs: Sequence[float]) -> tuple[float, float, float]:
    from scipy import stats

    m = float(np.mean(xs))
    if len(xs) < 2:
        return m, m, m
    half = float(stats.t.ppf(0.975, len(xs) - 1) * np.std(xs, ddof=1) / math.sqrt(len(xs)))
    return m, m - half, m + half


def write_plot_data(folder: str | Path, inputs: ReportInputs, runs: Sequence[MixtureRuns]) -> list[str]:
    """Write the CSVs of the module docstring that the inputs allow; returns the files written."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    written: list[str] = []
    st = next(iter(inputs.stats.values()), None)
    if isinstance(st, dict) and isinstance(st.get("steps"), dict):
        rows = [[s, int(d.get("docs_in", 0)), int(d.get("kept", 0)), sum((d.get("dropped") or {}).values())]
                for s, d in st["steps"].items()]
        _write(out / "funnel.csv", ["step", "docs_in", "kept", "dropped"], rows)
        written.append("funnel.csv")
    named: dict[str, dict[str, float]] = {}
    for label, m in inputs.mixtures.items():
        name = str(m.get("method") or Path(label).stem)
        if (m.get("provenance") or {}).get("selected"):
            name = f"packed: {name}"  # the pipeline's mixture (mix select)
        named.setdefault(name, {d: float(w) for d, w in (m.get("weights") or {}).items()})
    for r in runs:
        if r.weights:
            named.setdefault(r.name, dict(r.weights))
    if named:
        _write(out / "weights.csv", ["method", "domain", "weight"],
               [[n, d, round(w, 6)] for n, ws in named.items() for d, w in sorted(ws.items())])
        written.append("weights.csv")
    if runs:
        rows = []
        for r in runs:
            m, lo, hi = _interval(r.avg_per_seed)
            rows.append([r.name, round(m, 6), round(lo, 6), round(hi, 6), len(r.avg_per_seed)])
        _write(out / "ablation.csv", ["mixture", "loss", "lo", "hi", "seeds"], rows)
        written.append("ablation.csv")
    traj = next(iter(inputs.trajectories.values()), None)
    if traj:
        _write(out / "trajectory.csv", ["step", "domain", "weight"],
               [[i, d, round(float(w), 6)] for i, rec in enumerate(traj) for d, w in rec.items() if d != "step"])
        written.append("trajectory.csv")
    return written
