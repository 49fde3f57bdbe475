"""``corpusmix report`` (report/): input discovery, headline numbers and verdicts, funnel and
metric tables, HTML + Markdown output, and a headless-Chromium render of the page.

The inputs are small but realistic pipeline outputs written by the test in the documented formats
(docs/formats.md and mix.ablation's summary), with losses chosen so that the expected numbers can
be recomputed here with numpy.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from corpusmix.cli import main
from mix.ablation import compare
from mix.cli import write_trajectory
from report.build import ReportConfig, build_report, headline_for, write_report
from report.curation import domain_funnel, tidy_tables
from report.figures import group_reasons
from report.headline import headline
from report.inputs import ReportInputError, collect_inputs, normalise_ablation

DOMAINS = ["code", "legal", "literature", "news", "reference"]
# per-mixture base loss per domain; seeds add the offsets below (same for every domain of a seed)
BASE = {
    "natural": [3.10, 3.60, 4.40, 4.10, 3.90],
    "uniform": [3.05, 3.55, 4.52, 4.12, 3.92],
    "doremi": [3.08, 3.50, 4.42, 4.05, 3.86],
    "regmix": [3.02, 3.45, 4.35, 4.00, 3.80],
    "manual": [3.20, 3.70, 4.30, 4.15, 3.95],
}
SEED_OFFSETS = {"0": 0.0, "1": 0.012, "2": -0.008}
# a zero-mean seed x mixture term (same for every domain of a run): paired differences are not constant
MIX_SEED_NOISE = {"natural": [0.003, -0.003, 0.0], "uniform": [-0.002, 0.004, -0.002],
                  "doremi": [0.004, 0.0, -0.004], "regmix": [0.0, 0.002, -0.002], "manual": [0.01, -0.01, 0.0]}
WEIGHTS = {
    "natural": [0.30, 0.10, 0.35, 0.15, 0.10],
    "uniform": [0.2] * 5,
    "doremi": [0.12, 0.28, 0.20, 0.22, 0.18],
    "regmix": [0.18, 0.22, 0.25, 0.17, 0.18],
    "manual": [0.10, 0.10, 0.50, 0.20, 0.10],
}


def _ablation_per_seed(base: dict[str, list[float]] = BASE) -> dict:
    mixtures = {}
    for name, losses in base.items():
        seeds = {}
        for i, (s, off) in enumerate(SEED_OFFSETS.items()):
            off += MIX_SEED_NOISE[name][i]
            curve = [[step, round(float(np.mean(losses)) + off + 6.0 * np.exp(-step / 25), 5)]
                     for step in range(0, 101, 10)]
            seeds[s] = {"val_loss": {d: round(x + off, 5) for d, x in zip(DOMAINS, losses, strict=True)},
                        "curve": curve}
        mixtures[name] = {"weights": dict(zip(DOMAINS, WEIGHTS[name], strict=True)), "seeds": seeds}
    return {"mixtures": mixtures, "seeds": [0, 1, 2], "domains": DOMAINS}


def _write(path: Path, obj) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2))
    return path


STATS = {
    "steps": {
        "normalise": {"docs_in": 1200, "bytes_in": 2_400_000, "kept": 1195, "dropped": {"error:UnicodeError": 5},
                      "seconds": 1.5},
        "langid": {"docs_in": 1195, "bytes_in": 2_390_000, "kept": 1080, "dropped": {"not_en": 115}, "seconds": 4.2},
        "quality": {"docs_in": 1080, "bytes_in": 2_200_000, "kept": 980,
                    "dropped": {"gopher_short": 40, "gopher_symbol_ratio": 35, "c4_curly_bracket": 25},
                    "seconds": 2.0},
        "dedup": {"docs_in": 980, "bytes_in": 2_000_000, "kept": 900, "dropped": {"exact_dup": 30, "near_dup": 50},
                  "seconds": 6.1},
    },
    "totals": {"docs_in": 1200, "kept": 900, "dropped": 300},
}


def _drops() -> pd.DataFrame:
    rows = []
    doms = DOMAINS
    for step, reasons in ((s, v["dropped"]) for s, v in STATS["steps"].items()):
        i = 0
        for reason, n in reasons.items():
            for _ in range(n):
                rows.append({"id": f"{step}/{i}", "step": step, "reason": reason, "domain": doms[i % len(doms)]})
                i += 1
    return pd.DataFrame(rows)


def _pipeline_outputs(root: Path) -> Path:
    """A pipeline output folder with one file of every kind, nested as a pipeline would nest them."""
    _write(root / "curated" / "stats.json", STATS)
    _drops().to_parquet(root / "curated" / "drops.parquet")
    # the curated output, one file per domain as the curation engines write it: 180 kept per domain
    (root / "curated" / "curated").mkdir()
    for d in DOMAINS:
        pd.DataFrame({"id": [f"{d}/{i}" for i in range(180)], "text": ["some kept text"] * 180,
                      "domain": [d] * 180, "source": ["demo"] * 180}).to_parquet(
            root / "curated" / "curated" / f"{d}.parquet")
    pd.DataFrame({"a": [1], "b": ["x"]}).to_parquet(root / "curated" / "other.parquet")
    _write(root / "metrics" / "quality_metrics.json", {
        "langid": {"accuracy": 0.975, "docs": 400},
        "junk": {"precision": 0.91, "recall": 0.84},
        "pii": {"EMAIL": {"precision": 1.0, "recall": 0.97, "support": 60},
                "PHONE": {"precision": 0.93, "recall": 0.88, "support": 41}},
        "dedup": {"pairs": {"precision": 0.99, "recall": 0.9, "f1": 0.9429}},
    })
    for name in ("natural", "uniform", "manual"):
        _write(root / "mix" / name / "mixture.json",
               {"weights": dict(zip(DOMAINS, WEIGHTS[name], strict=True)), "method": name, "params": {}})
    # DoReMi: two rounds of 10 steps, written by the mix CLI's own trajectory writer (CSV)
    traj = [{"round": s // 10, **dict(zip(DOMAINS, np.roll([0.3, 0.2, 0.2, 0.15, 0.15], s // 5).tolist(),
                                          strict=True))} for s in range(20)]
    write_trajectory(root / "mix" / "doremi" / "doremi_trajectory.csv", traj, DOMAINS)
    _write(root / "mix" / "doremi" / "mixture.json",
           {"weights": dict(zip(DOMAINS, WEIGHTS["doremi"], strict=True)), "method": "doremi",
            "params": {"eta": 1.0, "smoothing": 0.001},
            "provenance": {"trajectory_file": "doremi_trajectory.csv", "group_size": 2, "n_proxies": 6,
                           "seed_weights": [[0.10, 0.31, 0.20, 0.21, 0.18], [0.13, 0.25, 0.21, 0.23, 0.18],
                                            [0.13, 0.28, 0.19, 0.22, 0.18]],
                           "seed_range": dict(zip(DOMAINS, [0.03, 0.06, 0.02, 0.02, 0.0], strict=True)),
                           "proxy_sd": dict(zip(DOMAINS, [0.02, 0.05, 0.01, 0.02, 0.01], strict=True)),
                           "mixture_se": dict(zip(DOMAINS, [0.008, 0.02, 0.004, 0.008, 0.004], strict=True)),
                           "se_lower_bound": False,
                           "range_sizing": {"target": 0.05, "probability": 0.95, "n_proxies": 6,
                                            "p_at_group_size": 0.31, "group_size_needed": 9,
                                            "group_size_needed_upper": 14, "confidence": 0.9},
                           "pilot": {"group_size": 1, "n_proxies": 3, "group_size_needed_upper": 2, "max_group_size": 4,
                                     "seconds": 1.0}}})
    # RegMix: the fit report (`corpusmix mix regmix --report`) and the same fit in the mixture's provenance
    fit = {"lightgbm": {"spearman": 0.87, "pearson": 0.9, "mae": 0.012},
           "linear": {"spearman": 0.8, "pearson": 0.83, "mae": 0.02}, "n_fit": 24, "n_heldout": 8}
    search = {"candidates": 100_000, "top_k": 100, "best_predicted": 3.71, "topk_mean_predicted": 3.72}
    _write(root / "mix" / "regmix" / "mixture.json",
           {"weights": dict(zip(DOMAINS, WEIGHTS["regmix"], strict=True)), "method": "regmix",
            "params": {"num_proxies": 32}, "provenance": {"fit": fit, "search": search}})
    _write(root / "mix" / "regmix" / "regmix_report.json",
           {"domains": DOMAINS, "target": "avg", "fit": fit, "search": search,
            "runs": [{"weights": WEIGHTS["uniform"], "val_loss": dict.fromkeys(DOMAINS, 3.9), "target": 3.9,
                      "heldout": False}]})
    _write(root / "mix" / "selected" / "mixture.json",  # what `corpusmix mix select` writes (mix.method)
           {"weights": dict(zip(DOMAINS, WEIGHTS["regmix"], strict=True)), "method": "regmix", "params": {},
            "provenance": {"selected": "regmix", "pools": "data/pools"}})
    pd.DataFrame({"id": ["a", "b", "c", "d"], "domain": ["code", "code", "legal", "noise"],
                  "defects": [[], ["exact_dup"], ["pii", "near_dup"], ["noise"]],
                  "lang": ["en"] * 4}).to_parquet(root / "ground_truth.parquet")
    _write(root / "shards" / "manifest.json", {"version": 1, "seq_len": 128, "rows": 10,
                                                "tokens_per_domain": {"code": 300, "legal": 980}})
    _write(root / "pools" / "code.done.json", {"domain": "code", "tokens": 10_000})  # a completion marker
    _write(root / "mix" / "cache" / "0123abcd.json", {"val_loss": {"code": 3.0}, "config": {}, "seed": 0})
    _write(root / "ablation" / "ablation.json", _ablation_per_seed())
    _write(root / "pools" / "pools.json", {"vocab_size": 4096, "domains": {
        d: {"tokens": 10_000 * (i + 1), "docs": 10} for i, d in enumerate(DOMAINS)}})
    log = root / "train" / "train_log.jsonl"
    log.parent.mkdir(parents=True)
    with open(log, "w") as fh:
        for step in range(1, 51):
            rec = {"step": step, "loss": 8.0 * np.exp(-step / 20) + 3.0, "lr": 1e-3, "grad_norm": 1.0,
                   "tokens_per_s": 2700.0 + step}
            if step % 25 == 0:
                rec.update({f"val_loss/{d}": 3.5 + i * 0.1 for i, d in enumerate(DOMAINS)})
            fh.write(json.dumps(rec) + "\n")
        fh.write("{truncated\n")
    _write(root / "train" / "dvclive" / "metrics.json", {"step": 50, "loss": 3.3})
    # a run's intermediate state: per-task stats and drops in work/, proxy caches: never read
    _write(root / "curated" / "work" / "a" / "stats" / "00000.json", STATS)
    _drops().to_parquet(root / "curated" / "work" / "a" / "drops-00000.parquet")
    return root


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> Path:
    return _pipeline_outputs(tmp_path_factory.mktemp("pipeline"))


@pytest.fixture(scope="module")
def full_report(outputs: Path):
    return build_report(collect_inputs([outputs]), ReportConfig())


@pytest.fixture(scope="module")
def written(full_report, tmp_path_factory) -> dict[str, str]:
    out = tmp_path_factory.mktemp("report") / "report.html"
    paths = write_report(full_report, out)
    assert paths == {"html": str(out), "markdown": str(out.with_suffix(".md")),
                     "figures": str(out.parent / "report_files")}
    return {"html": str(out), "md": str(out.with_suffix(".md")), "files": str(out.parent / "report_files")}


def test_collect_inputs_sorts_every_file_by_content(outputs: Path):
    inp = collect_inputs([outputs])
    assert list(inp.stats) == [f"{outputs.name}/curated/stats.json"]
    assert len(inp.drops) == 1 and len(next(iter(inp.drops.values()))) == 300
    assert sorted(m["method"] for m in inp.mixtures.values()) == ["doremi", "manual", "natural", "regmix",
                                                                 "regmix", "uniform"]
    assert len(inp.trajectories) == 1 and len(next(iter(inp.trajectories.values()))) == 20
    # the fit is found both in its own report and inside regmix's mixture provenance
    assert len(inp.regmix_fits) == 2
    assert len(inp.ablations) == 1 and len(inp.train_logs) == 1 and len(inp.metrics) == 1
    assert next(iter(inp.tokens.values()))["reference"] == 50_000
    skipped = {Path(p.rstrip("/")).name: why for p, why in inp.skipped}
    assert "cache of finished proxy runs" in skipped["cache"] and "work folder" in skipped["work"]
    assert "neither documents" in skipped["other.parquet"]
    assert inp.documents[f"{outputs.name}/curated/curated/legal.parquet"] == {"legal": 180}
    assert "1 malformed line" in skipped["train_log.jsonl"]
    assert "dvclive" in skipped["dvclive"]
    assert "not a metrics file by name" in skipped["code.done.json"]
    # a file passed directly is taken as metrics whatever its name
    assert list(collect_inputs([outputs / "pools" / "code.done.json"]).metrics) == ["code.done.json"]


def test_headline_picks_lowest_average_and_measures_it_in_seed_spreads():
    domains, avg_over, runs = normalise_ablation(_ablation_per_seed())
    hl = headline(runs, avg_over=avg_over)
    avg = {n: np.array([np.mean(np.array(b) + o + e) for o, e in zip(SEED_OFFSETS.values(), MIX_SEED_NOISE[n],
                                                                    strict=True)]) for n, b in BASE.items()}
    assert hl.chosen == "regmix" == min(avg, key=lambda n: avg[n].mean())
    assert hl.avg == pytest.approx(avg["regmix"].mean(), abs=1e-9)
    assert hl.worst_domain == "literature"
    assert hl.worst == pytest.approx(4.35 + np.mean(list(SEED_OFFSETS.values())), abs=1e-9)
    nat = next(c for c in hl.comparisons if c.other == "natural")
    assert nat.avg_delta == pytest.approx(avg["natural"].mean() - avg["regmix"].mean(), abs=1e-9)
    diffs = avg["natural"] - avg["regmix"]
    half = stats.t.ppf(0.975, 2) * diffs.std(ddof=1) / np.sqrt(3)
    assert nat.ci == pytest.approx((diffs.mean() - half, diffs.mean() + half), abs=1e-9)
    assert nat.wins == 3 and nat.n_seeds == 3
    assert nat.worst_delta == pytest.approx(4.40 - 4.35, abs=1e-9)
    assert nat.relative == pytest.approx(100 * nat.avg_delta / avg["natural"].mean(), rel=1e-9)
    assert (nat.domains_lower, nat.n_domains) == (5, 5)
    uni = next(c for c in hl.comparisons if c.other == "uniform")
    assert uni.domains_lower == 5 and uni.worst_delta == pytest.approx(4.52 - 4.35, abs=1e-9)
    assert [c.other for c in hl.comparisons] == ["natural", "uniform"]
    assert all(c.verdict == "better" for c in hl.comparisons)
    assert hl.verdict.startswith("Use regmix") and hl.use == "regmix" and hl.clear


def test_verdict_says_when_the_lead_is_within_noise():
    base = {"natural": BASE["natural"], "uniform": BASE["uniform"],
            "doremi": [x - 0.005 for x in BASE["natural"]]}  # 0.005 lower on average; per-seed 0.004, 0.002, 0.009
    _, avg_over, runs = normalise_ablation(_ablation_per_seed(base))
    hl = headline(runs, avg_over=avg_over)
    assert hl.chosen == "doremi"
    nat = next(c for c in hl.comparisons if c.other == "natural")
    assert nat.avg_delta == pytest.approx(0.005, abs=1e-9) and nat.wins == 3
    assert nat.verdict == "no difference shown" and nat.ci[0] < 0 < nat.ci[1]
    # the verdict names the mixture to use: the better-meaned baseline, not the unproven search
    assert not hl.clear and hl.use == "natural" and "Use natural: doremi's gain over every baseline" in hl.verdict
    assert hl.title == "Use: natural (doremi does not beat every baseline, paired over seeds)"
    # a single seed gives no noise estimate at all, and the verdict says so
    one = {"mixtures": {n: {"seeds": {"0": {"val_loss": dict(zip(DOMAINS, b, strict=True))}}}
                        for n, b in BASE.items()}}
    hl1 = headline(normalise_ablation(one)[2])
    assert "one seed" in hl1.verdict and all(c.verdict.startswith("one seed") for c in hl1.comparisons)
    assert hl1.title == "Use: regmix (one seed: noise unknown)"
    # a mixture named by the user that is worse than natural (paired) says so, and names natural
    hl2 = headline(normalise_ablation(_ablation_per_seed())[2], chosen="manual")
    assert next(c for c in hl2.comparisons if c.other == "natural").verdict == "worse"
    assert "manual is the chosen mixture is worse" not in hl2.verdict and "is worse than natural" in hl2.verdict
    assert hl2.use == "natural" and hl2.title.startswith("Use: natural")


def test_summary_shape_of_mix_ablation_agrees_with_its_compare_rule():
    per_seed = _ablation_per_seed()
    summaries = {}
    for name, m in per_seed["mixtures"].items():
        avg = [float(np.mean(list(s["val_loss"].values()))) for s in m["seeds"].values()]
        summaries[name] = {"weights": m["weights"], "val_loss": dict(zip(DOMAINS, BASE[name], strict=True)),
                           "val_loss_std": dict.fromkeys(DOMAINS, 0.01), "avg": float(np.mean(avg)),
                           "avg_per_seed": avg, "avg_std": float(np.std(avg, ddof=1)),
                           "avg_range": float(np.ptp(avg))}
    # manual: a hair behind regmix, unevenly over seeds: no difference shown
    manual = [x + o for x, o in zip(summaries["regmix"]["avg_per_seed"], [0.0, 0.03, 0.01], strict=True)]
    summaries["manual"].update(avg_per_seed=manual, avg=float(np.mean(manual)), avg_range=float(np.ptp(manual)))
    obj = {"mixtures": summaries, "domains": DOMAINS, "avg_over": DOMAINS, "seeds": [0, 1, 2],
           "comparisons": compare(summaries)}
    _, _, runs = normalise_ablation(obj)
    hl = headline(runs, baselines=["natural", "uniform", "doremi", "manual"])
    assert hl.chosen == "regmix"
    for c in hl.comparisons:
        rule = next(r for r in obj["comparisons"] if {r["a"], r["b"]} == {"regmix", c.other})
        sign = 1 if rule["a"] == "regmix" else -1
        assert c.avg_delta == pytest.approx(sign * rule["mean_diff"], abs=1e-5)
        assert c.wins == (rule["wins"] if sign > 0 else rule["losses"])
        assert c.worst_ci is None  # no per-seed domain losses in the summary shape
    assert next(c for c in hl.comparisons if c.other == "manual").verdict == "no difference shown"


def test_funnel_and_metric_tables_hold_the_input_numbers(outputs: Path, full_report):
    sec = {s.key: s for s in full_report.sections}
    assert list(sec) == ["ablation", "weights", "search", "training", "funnel", "quality", "inputs"]
    tables = {b.title.split(" (")[0]: b for b in sec["funnel"].blocks if hasattr(b, "rows")}
    steps = tables["Documents per step"].rows
    assert [r[0] for r in steps] == ["normalise", "langid", "quality", "dedup"]
    assert steps[2][1:5] == [1080, 980, 100, f"{100 * 100 / 1080:.2f}%"]
    assert all(r[-1] == "ok" for r in steps)  # docs_in = kept + dropped everywhere
    per_dom = tables["Dropped documents per step and domain"]
    assert per_dom.columns == ["step", *DOMAINS, "total"]
    dedup = next(r for r in per_dom.rows if r[0] == "dedup")
    assert dedup[1:] == [16, 16, 16, 16, 16, 80]
    # documents entering each step per domain, rebuilt from drops + curated output; 1200 = 5 x 240
    entering = tables["Documents entering each step, per domain"]
    assert entering.columns == ["step", *DOMAINS, "total", "check"]
    assert entering.rows[0] == ["normalise", 240, 240, 240, 240, 240, 1200, "ok"]
    assert entering.rows[2] == ["quality", 216, 216, 216, 216, 216, 1080, "ok"]
    assert entering.rows[-1] == ["kept", 180, 180, 180, 180, 180, 900, "ok"]
    gt = {b.title.split(" (")[0]: b for b in sec["quality"].blocks if hasattr(b, "rows")}
    assert gt["Ground truth: raw documents per domain"].rows[0] == ["code", 2, 0.5]
    assert gt["Ground truth: planted defects"].rows == [["clean", 1], ["exact_dup", 1], ["near_dup", 1],
                                                         ["noise", 1], ["pii", 1]]
    assert tables["Tokens per domain in the packed shards"].rows[1] == ["legal", 980, pytest.approx(980 / 1280)]
    toks = tables["Tokens per domain after curation"].rows
    assert toks[0] == ["code", 10_000, pytest.approx(10_000 / 150_000)]
    quality = {b.title: b for b in sec["quality"].blocks if hasattr(b, "rows")}
    flat = dict((r[0], r[1]) for r in quality[f"{outputs.name}/metrics/quality_metrics.json"].rows)
    assert flat == {"langid.accuracy": 0.975, "langid.docs": 400, "junk.precision": 0.91, "junk.recall": 0.84,
                    "dedup.pairs.precision": 0.99, "dedup.pairs.recall": 0.9, "dedup.pairs.f1": 0.9429}
    pii = next(t for n, t in quality.items() if n.endswith(": pii"))
    assert pii.columns == ["", "precision", "recall", "support"]
    assert pii.rows == [["EMAIL", 1.0, 0.97, 60], ["PHONE", 0.93, 0.88, 41]]
    weights = next(b for b in sec["weights"].blocks if hasattr(b, "rows"))
    assert {r[0] for r in weights.rows} == set(BASE)
    spread = next(b for b in sec["search"].blocks if hasattr(b, "rows") and b.title.startswith("DoReMi output"))
    assert spread.columns == ["domain", "weight", "± 2 SE", "sd of one proxy", "seed range"]
    assert spread.rows[1] == ["legal", 0.28, pytest.approx(0.04), 0.05, 0.06]
    assert spread.alert and "Largest seed range 0.060 (legal): ABOVE the 0.05 target" in spread.note
    assert "3 reported seeds, each the mean of 2 DRO proxies (6 proxies in all)" in spread.note
    assert ("From the sd of its 6 proxies, a run of this size meets the 0.05 target in about 31 % of runs; "
            "9 proxies per seed (mix.doremi.group_size) would meet it in 95 % (14 at the sd's 90 % upper "
            "confidence bound; an estimate: normal proxies, sd from this run).") in spread.note
    assert ("The group size was set by a pilot of 3 proxies (group size 1), which estimated 2 for 95 % from "
            "the upper confidence bound of its sd (mix.doremi.max_group_size caps it at 4).") in spread.note
    # only DoReMi's file carries per-seed weights: no spread table for the other mixtures
    assert sum(hasattr(b, "rows") and b.title.startswith("DoReMi output") for b in sec["search"].blocks) == 1
    doremi = next(b for b in sec["search"].blocks if hasattr(b, "rows") and b.title.startswith("DoReMi weights"))
    assert doremi.columns == ["domain", "last step", "mean over steps"]
    assert doremi.rows[0] == ["code", 0.2, pytest.approx(0.2)]
    assert doremi.rows[3] == ["news", 0.3, pytest.approx((0.15 + 0.2 + 0.2 + 0.3) / 4)]
    fits = [b for b in sec["search"].blocks if hasattr(b, "rows") and b.title.startswith("RegMix")]
    assert len(fits) == 1 and fits[0].rows[0][:3] == ["lightgbm (search)", 0.87, 0.9]  # the copy in provenance is not repeated
    assert any(isinstance(b, str) and "is the same as in" in b for b in sec["search"].blocks)


def test_doremi_spread_of_a_malformed_file_shows_blanks_not_a_crash():
    from report.search import doremi_spread_table

    weights = {"a": 0.6, "b": 0.4}
    assert doremi_spread_table("x", {"weights": weights, "provenance": "oops"}) is None
    assert doremi_spread_table("x", {"weights": weights, "provenance": {"seed_range": {"a": 0.1}}}) is None
    t = doremi_spread_table("x", {"weights": weights, "provenance": {
        "seed_weights": [[0.6, 0.4]], "seed_range": {"a": "wide", "b": 0.01}, "mixture_se": "n/a",
        "proxy_sd": {"a": None, "b": 0.02}, "group_size": "four", "n_proxies": 2.5,
        "range_sizing": {"target": 0.05, "p_at_group_size": "high"}, "pilot": {"group_size": None}}})
    assert t is not None and t.rows == [["a", 0.6, "", "", ""], ["b", 0.4, "", 0.02, 0.01]]
    assert t.note.startswith("1 reported seed.") and "0.010 (b): within" in t.note and not t.alert
    assert "From the sd" not in t.note and "pilot" not in t.note  # a malformed sizing is left out


def test_broken_stats_are_flagged_and_a_list_of_records_is_a_table(tmp_path: Path):
    bad = json.loads(json.dumps(STATS))
    bad["steps"]["dedup"]["kept"] = 899
    _write(tmp_path / "stats.json", bad)
    rep = build_report(collect_inputs([tmp_path / "stats.json"]), ReportConfig())
    rows = next(b for b in rep.sections[0].blocks if getattr(b, "title", "").startswith("Documents")).rows
    assert rows[-1][-1] == "docs_in ≠ kept + dropped" and rep.callout is None
    t = tidy_tables({"per_lang": [{"lang": "de", "acc": 0.9}, {"lang": "fr", "acc": 0.95}], "n": 3}, "lid")
    assert t[0].rows == [["n", 3]] and t[1].columns == ["lang", "acc"] and t[1].rows[1] == ["fr", 0.95]
    # the shape `corpusmix curate dedup-eval` writes: settings, then one nested object per dataset/method
    prf = {"precision": 0.98, "recall": 0.91, "f1": 0.9437, "tp": 91, "fp": 2, "fn": 9}
    dedup = {"threshold": 0.8, "num_perm": 128,
             "demo/ours": {"pair": prf, "planted": {**prf, "recall": 0.95}, "true_pairs": 100, "seconds": 1.2},
             "demo/datasketch": {"pair": {**prf, "tp": 90}, "planted": prf, "true_pairs": 100}}
    t = tidy_tables(dedup, "dedup")
    assert t[0].rows == [["threshold", 0.8], ["num_perm", 128]]
    assert t[1].columns == ["metric", "demo/ours", "demo/datasketch"]  # 14 metrics: one row each
    rows = {r[0]: r[1:] for r in t[1].rows}
    assert rows["pair.tp"] == [91, 90] and rows["planted.recall"] == [0.95, 0.91]
    assert rows["seconds"] == [1.2, None] and len(rows) == 14


def test_drop_reason_chart_sums_the_long_tail():
    reasons = {"lang": {f"lang:{c}": n for c, n in zip("abcdef", [9, 1, 1, 2, 1, 1], strict=True)},
               "filters": {"short": 5, "symbols": 3}}
    series = group_reasons(["lang", "filters"], reasons, 3)
    assert series == [("lang:a", [9, 0]), ("short", [0, 5]), ("symbols", [0, 3]),
                      ("other (5 reasons)", [6, 0])]
    assert sum(sum(v) for _, v in series) == 23  # nothing lost


def test_domain_funnel_adds_later_drops_back_per_domain():
    drops = pd.DataFrame({"id": list("abcdef"), "step": ["lang", "lang", "lang", "lang", "dedup", "dedup"],
                          "reason": ["not_en"] * 4 + ["near_dup"] * 2,
                          "domain": ["code", "code", "code", "legal", "code", "legal"]})
    domains, mat = domain_funnel(["lang", "dedup"], drops, {"code": 5, "legal": 2, "news": 4})
    assert domains == ["code", "legal", "news"]
    assert mat.tolist() == [[9, 4, 4], [6, 3, 4], [5, 2, 4]]


def test_headline_is_about_the_pipelines_mixture_not_the_lowest_loss(outputs: Path):
    inputs = collect_inputs([outputs])
    runs = normalise_ablation(next(iter(inputs.ablations.values())))[2]
    selected = inputs.mixtures[f"{outputs.name}/mix/selected/mixture.json"]
    selected["weights"] = dict(zip(DOMAINS, WEIGHTS["natural"], strict=True))
    selected["provenance"]["selected"] = "natural"
    _, c = headline_for(inputs, runs, ReportConfig())
    assert "natural is the pipeline's mixture (mix.method: natural; " in c.note
    assert c.title.startswith("Use: natural")  # natural is a baseline: compared with uniform only
    assert "Lowest mean average loss in the ablation: regmix" in c.note
    assert "set mix.method: regmix in params.yaml to pack with it" in c.note
    # report.chosen names another mixture: the note says what the pipeline packs with
    _, c = headline_for(inputs, runs, ReportConfig(chosen="regmix"))
    assert c.title.startswith("Use: regmix")
    assert "The pipeline currently packs with natural (mix.method; " in c.note
    # no pipeline mixture found: the lowest loss, and the report says why
    del inputs.mixtures[f"{outputs.name}/mix/selected/mixture.json"]
    _, c = headline_for(inputs, runs, ReportConfig())
    assert c.title.startswith("Use: regmix") and "No pipeline mixture" in c.note


def test_html_and_markdown_carry_the_same_figures(written: dict[str, str]):
    page = Path(written["html"]).read_text()
    imgs = re.findall(r'<img alt="([^"]+)" src="data:image/png;base64,([^"]+)"', page)
    assert len(imgs) >= 7
    for _, data in imgs:
        assert base64.b64decode(data)[:8] == b"\x89PNG\r\n\x1a\n"
    assert 'class="headline"' in page and "Use: regmix" in page and "Use regmix: it is better than natural" in page
    assert "<script" not in page and "http://" not in page and "https://" not in page  # self-contained
    assert "<details><summary>Files skipped (" in page  # the long list of skipped files is folded
    md = Path(written["md"]).read_text()
    links = re.findall(r"!\[[^\]]*\]\((report_files/[^)]+\.png)\)", md)
    assert len(links) == len(imgs)
    for link in links:
        assert (Path(written["md"]).parent / link).read_bytes()[:4] == b"\x89PNG"
    assert "> **Use: regmix (2.5–2.8% lower average loss than the baselines, paired over seeds)**" in md
    assert "Why regmix: regmix is the pipeline's mixture (mix.method: regmix; " in md
    assert "Lowest mean average loss in the ablation" not in md  # the pipeline's mixture is the lowest
    assert "| normalise | 1,200 | 1,195 | 5 |" in md


def test_cli_refuses_empty_inputs_with_a_fix(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    (tmp_path / "empty").mkdir()
    rc = main(["report", "--params", str(tmp_path / "none.yaml"), "--output", str(tmp_path / "r.html"),
               "--inputs", str(tmp_path / "empty")])
    assert rc == 2 and "nothing to report" in capsys.readouterr().err
    with pytest.raises(ReportInputError, match="does not exist"):
        collect_inputs([tmp_path / "missing"])
    _, _, runs = normalise_ablation(_ablation_per_seed())
    with pytest.raises(ReportInputError, match="not in the ablation"):
        headline(runs, chosen="dsir")


def test_cli_writes_html_only_with_params_and_flags(outputs: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]):
    params = tmp_path / "params.yaml"
    params.write_text(f"report:\n  inputs: [{outputs / 'ablation'}]\n  markdown: false\n  title: ablation only\n")
    out = tmp_path / "r.html"
    assert main(["report", "--params", str(params), "--output", str(out), "--chosen", "natural"]) == 0
    assert capsys.readouterr().out.strip() == str(out)
    assert not (tmp_path / "r.md").exists() and not (tmp_path / "r_files").exists()
    page = out.read_text()
    assert "<title>ablation only</title>" in page and page.count("<img ") == 4  # heatmap, spread, curves, weights
    assert 'class="headline caution"' in page and "Use: natural (natural does not beat every baseline" in page
    # compared with the baselines only; natural leads uniform by 0.012 on average, unevenly over seeds
    assert "natural shows no difference from uniform (mean difference +0.0120" in page
    assert "Use natural: it needs no search, and natural has the lower mean loss" in page
    assert "named explicitly" in page
    assert "regmix is" not in page and "manual is" not in page


CHECK_SCRIPT = """<script>
window.addEventListener('load', () => {
  const imgs = Array.from(document.images);
  const ok = imgs.filter(i => i.complete && i.naturalWidth > 0).length;
  const out = document.createElement('pre');
  out.id = 'imgcheck';
  out.textContent = 'IMAGES ' + ok + '/' + imgs.length + ' ' + imgs.map(i => i.naturalWidth).join(',');
  document.body.appendChild(out);
});
</script></body>"""


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def _chromium_cmd(binary: str, profile: Path) -> list[str]:
    return [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--disable-dev-shm-usage", f"--user-data-dir={profile}", "--virtual-time-budget=5000"]


def test_page_renders_in_headless_chromium(written: dict[str, str], tmp_path: Path):
    binary = _chromium()
    if binary is None:
        pytest.skip("chromium is not installed (apt-get install chromium, or `make system-deps`)")
    from PIL import Image

    page = Path(written["html"]).read_text()
    n_imgs = page.count("<img ")
    probe = tmp_path / "probe.html"
    probe.write_text(page.replace("</body>", CHECK_SCRIPT, 1))
    dom = subprocess.run([*_chromium_cmd(binary, tmp_path / "p1"), "--dump-dom", probe.as_uri()],
                         capture_output=True, text=True, timeout=120)
    m = re.search(r"IMAGES (\d+)/(\d+) ([\d,]*)", dom.stdout)
    assert m, f"no image check in the dumped DOM; chromium said: {dom.stderr[-2000:]}"
    assert int(m.group(1)) == int(m.group(2)) == n_imgs
    assert all(int(w) >= 300 for w in m.group(3).split(","))
    shot = tmp_path / "shot.png"
    res = subprocess.run([*_chromium_cmd(binary, tmp_path / "p2"), f"--screenshot={shot}",
                          "--window-size=1280,4000", Path(written["html"]).as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert shot.exists() and shot.stat().st_size > 10_000, res.stderr[-2000:]
    rgb = np.asarray(Image.open(shot).convert("RGB"), dtype=np.float64)
    px = rgb.mean(axis=2)
    assert px.shape == (4000, 1280)
    assert px.std() > 20  # not a blank page
    assert (px < 128).mean() > 0.01  # text, tables and figures put real ink on it
    # the headline box (background #f1f8f2) is styled and sits in the first screenful
    box = np.all(np.abs(rgb[:900] - [0xF1, 0xF8, 0xF2]) <= 2, axis=2)
    assert box.mean() > 0.1


def test_relative_inputs_are_labelled_by_their_path_whether_folder_or_file(tmp_path: Path, monkeypatch):
    # the pipeline passes exact files (dvc.yaml); a hand run passes their folder: same labels, so the
    # funnel pairs the same stats, drops and documents either way
    monkeypatch.chdir(tmp_path)
    _write(tmp_path / "out" / "curate" / "stats.json", STATS)
    by_folder = collect_inputs(["out"])
    by_file = collect_inputs(["out/curate/stats.json"])
    assert list(by_folder.stats) == list(by_file.stats) == ["out/curate/stats.json"]


def test_inspection_section_from_inspect_json(tmp_path: Path):
    from report.build import ReportConfig, build_report

    insp = {"inspect_version": 1, "engine": "local", "domains": {"news": 100, "legal": 50},
            "pii": {"redacted": True, "note": "every text was redacted by the run's PII step before it was cut"},
            "counts": {"filters": {"news": {"docs_in": 100, "kept": 90, "dropped": {"garbage:not_words": 10}},
                                   "legal": {"docs_in": 50, "kept": 50, "dropped": {}}},
                       "langid_filter": {"news": {"docs_in": 100, "kept": 96, "dropped": {"lang:de": 4}}}},
            "rules": {"filters": {"news": [{"reason": "garbage:not_words", "stat": "dict_share", "side": "low",
                                            "threshold": 0.2, "global_threshold": 0.2}]},
                      "langid_filter": {"news": [{"reason": "lang:*", "stat": "foreign_lang_score", "side": "high",
                                                  "threshold": 0.6, "global_threshold": 0.65}]}},
            "samples": {"filters": {"news": {"garbage:not_words": [{"id": "a", "text": "xq zv <EMAIL_ADDRESS>"}]}}}}
    _write(tmp_path / "run" / "inspect.json", insp)
    inputs = collect_inputs([tmp_path / "run"])
    assert list(inputs.inspections) == ["run/inspect.json"] and not inputs.skipped
    table = next(iter(build_report(inputs, ReportConfig()).tables("inspection").values()))
    assert table.rows == [["news", "filters", "garbage:not_words", 10, "10.0%", "dict_share < 0.2", 1],
                          ["news", "langid_filter", "lang:de", 4, "4.0%", "foreign_lang_score > 0.6 (global 0.65)", 0]]
    assert "corpusmix inspect --run run" in table.note


def test_search_cost_is_a_share_of_the_final_runs_flops():
    from report.inputs import ReportInputs
    from report.search import cost_table

    inputs = ReportInputs()
    inputs.mixtures["mix/regmix.json"] = {"method": "regmix", "weights": {"a": 1.0},
                                          "provenance": {"cost": {"proxy_runs": 4, "tokens": 1000, "flops": 2.0e9}}}
    inputs.mixtures["mix/mixture.json"] = {"method": "regmix", "weights": {"a": 1.0},  # the selected copy: once
                                           "provenance": {"selected": "regmix", "cost": {"flops": 2.0e9}}}
    inputs.train_logs["train/train_log.jsonl"] = [{"step": i, "flops": 1.0e9} for i in range(4)] + [
        {"step": 2, "event": "skip", "flops": 5.0e9}]
    t = cost_table(inputs)
    assert t.rows == [["regmix", 4, 1000, "2e+09", "50.0%"]]
