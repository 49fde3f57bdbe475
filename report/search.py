"""The mixture search diagnostics section of the report: each search's cost, DoReMi's output with its
seed spread and weight trajectory, and the RegMix regression fit."""

from __future__ import annotations

import json
import math

import numpy as np

from report import figures as figs
from report.inputs import ReportInputs
from report.render import Figure, Section, Table

# the per-domain seed range DoReMi's output is held to (docs/mix.md); shown as met or not. The same
# number as mix.doremi_sizing.SEED_RANGE_TARGET (the report reads files, it does not import the searches)
DOREMI_RANGE_TARGET = 0.05


def doremi_spread_table(label: str, mix: dict) -> Table | None:
    """A DoReMi mixture's output with its spread: per domain the weight, +- 2 standard errors over
    the DRO proxies, one proxy's sd, and the range between the reported seeds; None when the
    file carries no per-seed weights (not a DoReMi search, or an older file)."""
    prov = mix.get("provenance")
    rng = prov.get("seed_range") if isinstance(prov, dict) else None
    if not isinstance(rng, dict) or not rng or not isinstance(prov.get("seed_weights"), list):
        return None

    def nums(key: str) -> dict:  # a per-domain map of numbers; anything else (a malformed file) shows blank
        v = prov.get(key)
        return {d: x for d, x in v.items() if _is_num(x)} if isinstance(v, dict) else {}

    weights = mix.get("weights") or {}
    se, sd, rng = nums("mixture_se"), nums("proxy_sd"), nums("seed_range")
    doms = sorted(weights)
    rows = [[d, weights[d], 2 * se[d] if d in se else "", sd.get(d, ""), rng.get(d, "")] for d in doms]
    worst = max((d for d in doms if d in rng), key=lambda d: rng[d], default=None)
    m, n = prov.get("group_size", 1), prov.get("n_proxies")
    m = m if isinstance(m, int) and not isinstance(m, bool) else 1
    k = len(prov["seed_weights"])
    parts = [f"{k} reported seed{'s' if k != 1 else ''}" + (f", each the mean of {m} DRO proxies" if m > 1 else "")
             + (f" ({n} proxies in all)" if isinstance(n, int) and not isinstance(n, bool) else "") + "."]
    if worst is not None:
        ok = rng[worst] <= DOREMI_RANGE_TARGET
        parts.append(f"Largest seed range {rng[worst]:.3f} ({worst}): "
                     f"{'within' if ok else 'ABOVE'} the {DOREMI_RANGE_TARGET} target.")
    sizing = prov.get("range_sizing")
    if isinstance(sizing, dict) and all(_is_num(sizing.get(x)) for x in
                                        ("target", "probability", "p_at_group_size", "group_size_needed", "n_proxies")):
        parts.append(f"From the sd of its {int(sizing['n_proxies'])} proxies, a run of this size meets the "
                     f"{sizing['target']} target in about {100 * sizing['p_at_group_size']:.0f} % of runs; "
                     f"{int(sizing['group_size_needed'])} proxies per seed (mix.doremi.group_size) would meet it in "
                     f"{100 * sizing['probability']:.0f} %"
                     + (f" ({int(sizing['group_size_needed_upper'])} at the sd's "
                        f"{100 * sizing['confidence']:.0f} % upper confidence bound; "
                        if _is_num(sizing.get("group_size_needed_upper")) and _is_num(sizing.get("confidence")) else " (")
                     + "an estimate: normal proxies, sd from this run).")
    pilot = prov.get("pilot")
    if isinstance(pilot, dict) and all(_is_num(pilot.get(x)) for x in
                                       ("group_size", "n_proxies", "group_size_needed_upper", "max_group_size")):
        parts.append(f"The group size was set by a pilot of {int(pilot['n_proxies'])} proxies (group size "
                     f"{int(pilot['group_size'])}), which estimated {int(pilot['group_size_needed_upper'])} for 95 % "
                     f"from the upper confidence bound of its sd (mix.doremi.max_group_size caps it at "
                     f"{int(pilot['max_group_size'])}).")
    if se:
        parts.append("± 2 SE is the mixture's uncertainty from the proxies' random seeds alone"
                     + (" (a lower bound: the proxies share one reference model)" if prov.get("se_lower_bound")
                        else " (each proxy with its own reference)")
                     + "; it does not cover the proxies' training setup (model size, learning rate, steps), "
                     "to which DoReMi's answer is sensitive at proxy scale (docs/mix.md).")
    return Table(f"DoReMi output and its seed spread ({label})",
                 ["domain", "weight", "± 2 SE", "sd of one proxy", "seed range"], rows, " ".join(parts),
                 alert=worst is not None and rng[worst] > DOREMI_RANGE_TARGET)


def _is_num(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def final_run_flops(inputs: ReportInputs) -> float | None:
    """Training FLOPs of the final run, summed over its logged steps (``flops`` per step record)."""
    totals = [sum(float(r.get("flops", 0.0)) for r in recs if "event" not in r) for recs in inputs.train_logs.values()]
    totals = [t for t in totals if t > 0]
    return max(totals) if totals else None


def cost_table(inputs: ReportInputs) -> Table | None:
    """Each search's training FLOPs (its proxies; ``cost`` in the mixture's provenance) as a share of
    the final run's."""
    final = final_run_flops(inputs)
    rows = []
    for label, m in inputs.mixtures.items():
        cost = (m.get("provenance") or {}).get("cost")
        if not isinstance(cost, dict) or (m.get("provenance") or {}).get("selected"):
            continue
        share = f"{100 * cost['flops'] / final:.1f}%" if final else "n/a (no training log)"
        rows.append([str(m.get("method") or label), cost.get("proxy_runs"), cost.get("tokens"),
                     f"{cost['flops']:.3g}", share])
    if not rows:
        return None
    return Table("Search cost: proxy training FLOPs (6N + attention per token, DoReMi's reference forward passes "
                 "included)" + (f"; final run {final:.3g} FLOPs" if final else ""),
                 ["search", "proxy runs", "tokens", "FLOPs", "share of the final run"], rows)


def search_section(inputs: ReportInputs) -> Section | None:
    spreads = [t for label, mix in inputs.mixtures.items() if (t := doremi_spread_table(label, mix)) is not None]
    cost = cost_table(inputs)
    if not inputs.trajectories and not inputs.regmix_fits and not spreads and cost is None:
        return None
    sec = Section("search", "Mixture search diagnostics")
    if cost is not None:
        sec.blocks.append(cost)
    sec.blocks.extend(spreads)
    for i, (label, traj) in enumerate(inputs.trajectories.items()):
        doms = [k for k in traj[0] if k not in ("step", "round") and isinstance(traj[0][k], (int, float))]
        rounds = len({r.get("round") for r in traj})
        xs = list(range(len(traj))) if rounds > 1 else [float(r.get("step", j)) for j, r in enumerate(traj)]
        sec.blocks.append(Figure(f"trajectory_{i}", f"DoReMi weight trajectory ({label})", figs.trajectory_figure(
            xs, {d: [float(r.get(d, 0.0)) for r in traj] for d in doms},
            title="Group-DRO domain weights per step" + (f" ({rounds} rounds, concatenated)" if rounds > 1 else "")),
            "The first DRO proxy's weights; the output mixture is the mean, over every DRO proxy, of each "
            "one's weights averaged over its steps (after mix.doremi.average_from of them). One domain "
            "taking all the weight is DoReMi's known failure mode."))
        mean = {d: float(np.mean([r.get(d, 0.0) for r in traj])) for d in doms}
        sec.blocks.append(Table(f"DoReMi weights of the first proxy ({label})", ["domain", "last step", "mean over steps"],
                                [[d, float(traj[-1].get(d, 0.0)), mean[d]] for d in doms]))
    seen: dict[str, str] = {}
    for label, fit in inputs.regmix_fits.items():
        key = json.dumps(fit, sort_keys=True, default=str)
        if key in seen:  # the same fit copied into a mixture's provenance
            sec.blocks.append(f"The RegMix fit in {label} is the same as in {seen[key]}.")
            continue
        seen[key] = label
        models = [m for m in ("hybrid", "lightgbm", "linear", "domainwise") if isinstance(fit.get(m), dict)]
        rows = [[m + (" (search)" if fit.get("regressor", "lightgbm") == m else ""),
                 fit[m].get("spearman"), fit[m].get("pearson"), fit[m].get("mae"), fit.get("n_fit"),
                 fit.get("n_heldout")] for m in models]
        how = (f"{fit['folds']}-fold cross-validation: every run predicted by models fitted on the other folds"
               if fit.get("folds") else "a held-out slice of the runs")
        sec.blocks.append(Table(f"RegMix regression fit on held-out proxy runs ({label})",
                                ["regressor", "Spearman", "Pearson", "MAE", "fit runs", "held-out runs"], rows,
                                f"Scored by {how}. The paper reports Spearman around 0.9; far lower means the "
                                "searched mixture rests on a weak regression."))
    return sec
