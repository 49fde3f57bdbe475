"""What ``dvc metrics show`` and ``dvc plots show`` give a newcomer, on the repository's own definitions.

A scratch DVC project gets dvc.yaml's ``plots:`` section, the report stage's metric, the custom vega-lite
templates and the offline page (plots/offline.html, named by .dvc/config) of this repository; the data
are written by the report's own writers (report/summary.py, report/plotdata.py) from small synthetic
inputs. Then:

- ``dvc metrics show`` prints the summary in fewer than 120 columns, with no failure line;
- ``dvc plots show`` writes a page that headless Chromium, with every non-file request refused, draws:
  each of the five plots (funnel, weights per method, ablation intervals, training loss, DoReMi
  trajectory) renders a vega view, with no script error (screenshot kept as a test artefact).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from report.inputs import MixtureRuns, ReportInputs
from report.plotdata import write_plot_data
from report.summary import summary_metrics, write_summary

ROOT = Path(__file__).resolve().parents[2]
ARTEFACTS = Path(os.environ.get("CORPUSMIX_TEST_ARTIFACTS", ROOT / "out" / "test-artifacts"))
DOMAINS = ["code", "legal", "literature", "news"]
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]


def _runs() -> list[MixtureRuns]:
    out = []
    for i, name in enumerate(("natural", "uniform", "regmix", "doremi")):
        avg = [5.21 + 0.013 * i + 0.004 * s for s in range(3)]
        out.append(MixtureRuns(name=name, weights={d: 0.25 for d in DOMAINS}, seed_losses={},
                               mean_loss={d: 5.2 + 0.01 * i for d in DOMAINS}, std_loss={d: 0.01 for d in DOMAINS},
                               avg_per_seed=avg, worst_per_seed=[a + 0.4 for a in avg], curves={}))
    return out


def _inputs() -> ReportInputs:
    steps = {"read": (7216, 7213), "normalize": (7213, 7213), "decontam": (7213, 7153), "langid": (7153, 7010),
             "filters": (7010, 6120), "toxicity": (6120, 6071), "dedup": (6071, 5702), "pii": (5702, 5702)}
    stats = {"steps": {s: {"docs_in": a, "kept": b, "dropped": {"x": a - b}} for s, (a, b) in steps.items()},
             "totals": {"docs_in": 7216, "kept": 5702, "dropped": 1514}}
    metrics = {"curation.json": {"junk": {"precision": 0.9871, "recall": 0.9512},
                                 "pii": {"ALL": {"fn": 118, "tp": 500}}},
               "dedup.json": {"demo/ours_verified": {"planted": {"precision": 0.9934, "recall": 0.9761}}}}
    traj = [{"step": float(i), **{d: 0.25 + 0.01 * (i % 3) * (j - 1.5) for j, d in enumerate(DOMAINS)}}
            for i in range(30)]
    mixtures = {"mix/regmix.json": {"method": "regmix", "weights": {d: 0.1 + 0.1 * j for j, d in enumerate(DOMAINS)}},
                "mix/mixture.json": {"method": "uniform", "weights": {d: 0.25 for d in DOMAINS},
                                     "provenance": {"selected": "uniform"}}}
    logs = {"train_log.jsonl": [{"step": i, "loss": 8.3 - 0.02 * i} for i in range(120)]}
    return ReportInputs(stats={"stats.json": stats}, metrics=metrics, trajectories={"doremi_trajectory.csv": traj},
                        mixtures=mixtures, train_logs=logs)


def _project(tmp: Path) -> Path:
    proj = tmp / "proj"
    (proj / "plots").mkdir(parents=True)
    shutil.copytree(ROOT / "plots" / "templates", proj / "plots" / "templates")
    shutil.copy(ROOT / "plots" / "offline.html", proj / "plots" / "offline.html")
    spec = yaml.safe_load((ROOT / "dvc.yaml").read_text())
    report = spec["stages"]["report"]
    (proj / "dvc.yaml").write_text(yaml.safe_dump({
        "stages": {"report": {"cmd": "true", "metrics": report["metrics"]}}, "plots": spec["plots"]}))
    dvc = [sys.executable, "-m", "dvc"]
    subprocess.run([*dvc, "init", "--no-scm", "-q"], cwd=proj, check=True, timeout=120)
    cfg = (ROOT / ".dvc" / "config").read_text()
    (proj / ".dvc" / "config").write_text(cfg[cfg.index("[plots]"):])
    inputs, runs = _inputs(), _runs()
    hl = SimpleNamespace(use="uniform", chosen="regmix", comparisons=[])
    write_summary(proj / "out" / "summary.json", summary_metrics(inputs, hl, runs))
    write_plot_data(proj / "out" / "plots", inputs, runs)
    tsv = proj / "out" / "train" / "dvclive" / "plots" / "metrics" / "loss.tsv"
    tsv.parent.mkdir(parents=True)
    tsv.write_text("step\tloss\n" + "".join(f"{i}\t{8.3 - 0.02 * i}\n" for i in range(120)))
    return proj


def test_metrics_fit_120_columns_and_the_plots_draw_offline(tmp_path):
    proj = _project(tmp_path)
    dvc = [sys.executable, "-m", "dvc"]
    shown = subprocess.run([*dvc, "metrics", "show"], cwd=proj, capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    lines = (shown.stdout + shown.stderr).splitlines()
    assert len(lines) == 2 and max(map(len, lines)) < 120, lines
    assert not [ln for ln in lines if "fail" in ln.lower() or "error" in ln.lower()]
    assert set(json.loads((proj / "out" / "summary.json").read_text())) == {
        "kept", "junk_p", "junk_r", "dedup_p", "dedup_r", "pii_leaks", "mixture", "margin", "loss"}
    made = subprocess.run([*dvc, "plots", "show"], cwd=proj, capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stderr
    page = proj / "out" / "dvc_plots" / "index.html"
    html = page.read_text()
    assert "cdn.jsdelivr" not in html and "vegaEmbed" in html
    _draw(page)


def _draw(page: Path) -> None:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sync_playwright = None
    if exe is None or sync_playwright is None:
        if os.environ.get("CI"):
            pytest.fail("CI must run the browser test: chromium or playwright missing")
        pytest.skip("chromium or playwright missing")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=FLAGS, headless=True)
        ctx = browser.new_context(viewport={"width": 1200, "height": 900})
        outside: list[str] = []
        ctx.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file://")
                  else (outside.append(r.request.url), r.abort()))
        tab = ctx.new_page()
        errors: list[str] = []
        tab.on("pageerror", lambda e: errors.append(str(e)))
        tab.goto(page.as_uri())
        tab.wait_for_function("document.querySelectorAll('.vega-embed svg, .vega-embed canvas').length >= 5",
                              timeout=30_000)
        drawn = tab.locator(".vega-embed").count()
        marks = tab.evaluate("document.querySelectorAll('.vega-embed svg .mark-rect path, .vega-embed canvas').length")
        ARTEFACTS.mkdir(parents=True, exist_ok=True)
        tab.screenshot(path=str(ARTEFACTS / "dvc-plots.png"), full_page=True)
        browser.close()
    assert drawn == 5 and marks >= 1 and not errors and not outside, (drawn, marks, errors, outside)
