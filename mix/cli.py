"""``corpusmix mix ...``: mixture search and selection.

    corpusmix mix doremi   --input POOLS --output mixture.json [--preset tiny] [--seed 0]
    corpusmix mix regmix   --input POOLS --output mixture.json [--preset tiny] [--target avg]
    corpusmix mix select   --input POOLS --output mixture.json [--method natural] [--doremi F] [--regmix F]
    corpusmix mix ablation --input POOLS --mixture NAME=FILE ... --output ablation.json [--seeds 5]

``POOLS`` is a token-pools folder (``corpusmix tokenize pools``). Settings: the chosen preset
(``mix.preset``, defined in :mod:`mix.presets`), then explicit keys of ``mix.proxy`` / ``mix.doremi`` /
``mix.regmix`` in ``params.yaml`` (``--params``), then command-line flags. Proxy runs are cached under ``--cache``
(default: ``<output dir>/proxies``) so an interrupted search resumes without retraining.

Targets: ``mix.target_domains`` (``[]`` = every domain not in ``mix.garbage_domains`` nor judged garbage by
the curation, pools.json ``garbage_domains``) define the
RegMix target and the ablation's average (:mod:`mix.targets`). RegMix's epoch caps are for the
final run: ``pack.tokens`` and ``pack.max_epochs`` of the same params file (flags override).
The ablation scores on the pools' evaluation split with seeds no search uses.

Outputs next to ``mixture.json``: DoReMi writes its weight trajectory (``--trajectory``, a CSV with
``step`` and one column per domain, for ``dvc plots``); RegMix writes its fit report
(``--report``: held-out Spearman/Pearson of LightGBM and linear, every run's weights and losses).
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import sys
from pathlib import Path
from typing import Any

from corpusmix.config import ConfigError, add_config_args, load_params
from corpusmix.logging import get_logger
from mix.presets import DEFAULT_PRESET, resolve

log = get_logger("mix.cli")

METHODS = ("doremi", "regmix", "uniform", "natural", "manual")
# where the pipeline (dvc.yaml) writes the searches' mixtures; mix.select.<method> or a flag overrides
SELECT_DEFAULTS = {"doremi": "out/mix/doremi.json", "regmix": "out/mix/regmix.json"}


def _provenance(pools_dir: str, extra: dict[str, Any]) -> dict[str, Any]:
    from corpusmix import __version__
    from corpusmix.environment import environment
    from mix.proxy_cache import pools_fingerprint

    meta = json.loads((Path(pools_dir) / "pools.json").read_text())
    return {"input": str(pools_dir), "pools_sha": pools_fingerprint(pools_dir),
            "tokenizer_sha256": meta.get("tokenizer_sha256"),
            "tokens": {d: v["tokens"] for d, v in meta["domains"].items()},
            "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "corpusmix": __version__, "environment": environment(), **extra}


# the keys of params.yaml's mix: section (docs/mix.md); another is a typo and refused
MIX_KEYS = ("method", "preset", "target_domains", "garbage_domains", "proxy", "doremi", "regmix", "manual", "select",
            "presets")


def check_mix_keys(params: dict[str, Any]) -> None:
    unknown = sorted(str(k) for k in params if k not in MIX_KEYS)
    if unknown:
        raise ConfigError(f"unknown parameter(s) {unknown} in mix; valid: {sorted(k for k in MIX_KEYS if k != 'presets')}")


def targets_for(params: dict[str, Any], domains: list[str], args: argparse.Namespace | None = None,
                pools_dir: str | Path | None = None) -> list[str]:
    """The target domains (:mod:`mix.targets`): ``--target-domains`` / ``--garbage-domains`` when
    given, else ``mix.target_domains`` (or the older ``mix.regmix.target_domains``) and
    ``mix.garbage_domains`` of params; plus, as garbage, the domains the curation judged mostly
    garbage (``pools_dir``'s pools.json), unless named as targets."""
    from corpusmix.config import config_from
    from mix.targets import TargetConfig, flagged_garbage, resolve_targets

    data = {"target_domains": list(params.get("target_domains") or (params.get("regmix") or {}).get("target_domains")
                                   or []),
            "garbage_domains": list(params.get("garbage_domains") or [])}
    cfg = config_from(TargetConfig, params=data, args=args, where="mix targets")
    absent = sorted(set(cfg.garbage_domains) - set(domains))
    if absent and getattr(args, "garbage_domains", None) is not None:  # typed on the command line: a typo
        raise ConfigError(f"--garbage-domains names domain(s) {absent} that are not in the pools {sorted(domains)}")
    if absent:  # from params: curation may have emptied a garbage domain, so only a warning
        log.warning("garbage domain(s) not in the pools, nothing to leave out",
                    extra={"data": {"absent": absent, "pools": sorted(domains)}})
    judged = [d for d in (flagged_garbage(pools_dir) if pools_dir else []) if d not in cfg.target_domains]
    overridden = sorted(set(flagged_garbage(pools_dir) if pools_dir else []) & set(cfg.target_domains))
    if overridden:
        log.warning("target named although the curation judged it garbage", extra={"data": {"domains": overridden}})
    cfg.garbage_domains = sorted(set(cfg.garbage_domains) | set(judged))
    return resolve_targets(domains, cfg)


def _target_args(p: argparse.ArgumentParser, *, targets: bool = True) -> None:
    """``--target-domains`` (unless the command's config already has it) and ``--garbage-domains``."""
    if targets:
        p.add_argument("--target-domains", default=None,
                       help="comma-separated target domains (default: mix.target_domains; [] = all but garbage)")
    p.add_argument("--garbage-domains", default=None,
                   help="comma-separated domains that are never a target (default: mix.garbage_domains, plus the "
                        "domains the curation judged mostly garbage)")


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--input", required=True, help="token-pools folder (pools.json + <domain>.bin)")
    p.add_argument("--output", required=True, help="mixture.json to write")
    p.add_argument("--params", default="params.yaml", help="params file (section mix)")


def _search_args(p: argparse.ArgumentParser) -> None:
    from mix.proxy import ProxyConfig

    _common(p)
    p.add_argument("--preset", default=None, help="a preset of mix/presets.py (default: mix.preset or tiny)")
    p.add_argument("--cache", default=None, help="proxy-run cache folder (default: <output dir>/proxies)")
    add_config_args(p, ProxyConfig, prefix="proxy-")


def _setup(args: argparse.Namespace):
    from mix.proxy import ProxyConfig

    params = load_params(args.params, "mix")
    check_mix_keys(params)
    preset = args.preset or params.get("preset", DEFAULT_PRESET)
    pcfg = resolve("proxy", ProxyConfig, params, preset, args, prefix="proxy-")
    out = Path(args.output)
    cache = Path(args.cache) if args.cache else out.parent / "proxies"
    return params, preset, pcfg, out, cache


def cmd_doremi(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from corpusmix.mixture import save_mixture
    from mix.doremi import DoReMiConfig
    from mix.doremi_search import run_doremi

    params, preset, pcfg, out, cache = _setup(args)
    cfg = resolve("doremi", DoReMiConfig, params, preset, args)
    try:
        cfg.validate()
        from mix.proxy import pool_domains

        targets = targets_for(params, list(pool_domains(args.input)), args, pools_dir=args.input)
        res = run_doremi(args.input, cfg, pcfg, seed=args.seed, cache_dir=cache, targets=targets)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    traj = Path(args.trajectory) if args.trajectory else out.parent / "doremi_trajectory.csv"
    write_trajectory(traj, res["trajectory"], res["domains"])
    save_mixture(out, res["weights"], method="doremi",
                 params={"doremi": asdict(cfg), "proxy": asdict(pcfg), "preset": preset, "seed": args.seed},
                 provenance=_provenance(args.input, {"rounds": res["rounds"], "seconds": res["seconds"],
                                                      "seeds": res["seeds"], "seed_weights": res["seed_weights"],
                                                      "seed_range": res["seed_range"], "cost": res["cost"],
                                                      **{k: res[k] for k in ("group_size", "proxy_weights",
                                                                             "n_proxies", "proxy_sd", "mixture_se",
                                                                             "se_lower_bound", "range_sizing", "pilot")
                                                         if k in res},
                                                      "trajectory_file": str(traj)}))
    print(json.dumps({"weights": res["weights"], "seed_range": res["seed_range"],
                      **{k: res[k] for k in ("mixture_se", "range_sizing") if k in res},
                      "seconds": res["seconds"]}, indent=1))
    return 0


def _refuse_foreign(path: Path, keys: tuple[str, ...], what: str, flag: str) -> None:
    """A clear error when ``path`` exists and is not ``what`` (a JSON object with ``keys``): never overwritten."""
    if not path.exists():
        return
    try:
        ok = isinstance(doc := json.loads(path.read_text()), dict) and all(k in doc for k in keys)
    except (OSError, ValueError):
        ok = False
    if not ok:
        raise ConfigError(f"{path} exists and is not {what}: not overwritten; name another file with {flag} "
                          "or move it away")


def write_trajectory(path: Path, trajectory: list[dict[str, Any]], domains: list[str]) -> None:
    """DoReMi weights per DRO step as CSV (``step, <domains>``; ``step`` counts on over iterated
    rounds, each round has ``doremi.steps`` rows; the rounds are listed in the mixture's provenance)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["step", *domains])
        for i, rec in enumerate(trajectory):
            w.writerow([i, *(f"{rec[d]:.6f}" for d in domains)])


def cmd_regmix(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from corpusmix.mixture import save_mixture
    from mix.proxy import pool_domains
    from mix.regmix import RegMixConfig, run_regmix

    params, preset, pcfg, out, cache = _setup(args)
    cfg = resolve("regmix", RegMixConfig, params, preset, args)
    # caps for the final run: pack.tokens / pack.max_epochs unless given as flags
    pack = load_params(args.params, "pack")
    if args.final_tokens is None and pack.get("tokens"):
        cfg.final_tokens = int(float(pack["tokens"]))
    if args.max_epochs is None and pack.get("max_epochs"):
        cfg.max_epochs = float(pack["max_epochs"])
    # a file at the report's path that is not a RegMix report is refused before the search, never overwritten
    report = Path(args.report) if args.report else out.parent / "regmix_report.json"
    _refuse_foreign(report, ("fit", "search"), "a RegMix fit report", "--report")
    try:
        cfg.validate()
        targets = targets_for(params, list(pool_domains(args.input)), args, pools_dir=args.input)
        res = run_regmix(args.input, cfg, pcfg, seed=args.seed, cache_dir=cache, targets=targets)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    report.parent.mkdir(parents=True, exist_ok=True)
    seconds = res["report"].pop("seconds", None)  # wall time: kept out of this DVC-tracked file
    report.write_text(json.dumps(res["report"], indent=1))
    save_mixture(out, res["weights"], method="regmix",
                 params={"regmix": asdict(cfg), "proxy": asdict(pcfg), "preset": preset, "seed": args.seed},
                 provenance=_provenance(args.input, {"fit": res["report"]["fit"], "search": res["report"]["search"],
                                                      "cost": res["report"]["cost"],
                                                      "report_file": str(report),
                                                      "seconds": seconds}))
    print(json.dumps({"weights": res["weights"], "fit": res["report"]["fit"]}, indent=1))
    return 0


def cmd_select(args: argparse.Namespace) -> int:
    """Materialise the pipeline's chosen mixture (``mix.method``) into ``--output``."""
    from corpusmix.mixture import load_mixture, natural_mixture, save_mixture, uniform_mixture
    from mix.proxy import pool_domains

    params = load_params(args.params, "mix")
    check_mix_keys(params)
    method = args.method or params.get("method", "natural")
    if method not in METHODS:
        raise ConfigError(f"mix method must be one of {list(METHODS)}, got {method!r}")
    try:
        tokens = pool_domains(args.input)
    except (ValueError, FileNotFoundError) as exc:
        raise ConfigError(str(exc)) from None
    prov = _provenance(args.input, {"selected": method})
    if method == "natural":
        save_mixture(args.output, natural_mixture(tokens), method="natural", provenance=prov)
    elif method == "uniform":
        save_mixture(args.output, uniform_mixture(tokens), method="uniform", provenance=prov)
    elif method == "manual":
        weights = (params.get("manual") or {}).get("weights")
        if not weights:
            raise ConfigError("mix.method is manual but mix.manual.weights is empty in params.yaml; "
                              "give {domain: weight} summing to 1")
        w = {d: float(weights.get(d, 0.0)) for d in tokens} | {d: float(v) for d, v in weights.items()}
        from corpusmix.mixture import validate_mixture

        save_mixture(args.output, validate_mixture(w, tokens), method="manual", provenance=prov)
    else:
        src = getattr(args, method) or (params.get("select") or {}).get(method) or SELECT_DEFAULTS[method]
        m = load_mixture(src, tokens)
        abl = args.ablation or (params.get("select") or {}).get("ablation")
        decision = searched_or_baseline(method, abl) if abl else None
        if decision is not None and decision["selected"] != method:
            base = natural_mixture(tokens) if decision["selected"] == "natural" else uniform_mixture(tokens)
            save_mixture(args.output, base, method=decision["selected"],
                         provenance={**prov, **decision, "selected_from": str(abl)})
            print(f"mix select: {decision['reason']}", file=sys.stderr)
        else:
            save_mixture(args.output, m.weights, method=m.method, params=m.params,
                         provenance={**m.provenance, "selected": method, "selected_from": str(src),
                                     **(decision or {})})
    print(Path(args.output).read_text())
    return 0


def searched_or_baseline(method: str, ablation_path: str | Path) -> dict[str, Any]:
    """Keep the searched mixture ``method`` only when the ablation shows it better than every
    baseline (natural, uniform), paired over seeds with Holm's correction; else the baseline with
    the lower mean loss. Returns ``{"selected", "requested", "reason", "comparisons"}``."""
    from mix.paired import compare_all, sentence

    rep = json.loads(Path(ablation_path).read_text())
    arms = {n: s["avg_per_seed"] for n, s in rep.get("mixtures", {}).items()}
    missing = [n for n in (method, "natural", "uniform") if n not in arms]
    if missing:
        raise ConfigError(f"ablation {ablation_path} has no {missing} mixture(s): run the ablation stage with the "
                          f"searched mixture and both baselines, or select without --ablation")
    rows = compare_all(arms, pairs=[(method, "natural"), (method, "uniform")])
    said = "; ".join(sentence(r) for r in rows)
    if all(r["verdict"] == "better" for r in rows):
        return {"selected": method, "requested": method, "reason": f"{method} is better than both baselines: {said}",
                "comparisons": rows}
    base = min(("natural", "uniform"), key=lambda n: sum(arms[n]) / len(arms[n]))
    return {"selected": base, "requested": method, "comparisons": rows,
            "reason": f"falling back to {base} (the baseline with the lower mean loss): {method} is not shown better "
                      f"than both baselines on the evaluation split ({said})"}


def cmd_ablation(args: argparse.Namespace) -> int:
    from corpusmix.mixture import load_mixture, natural_mixture, uniform_mixture
    from mix.ablation import ablation_seeds, run_ablation
    from mix.proxy import pool_domains

    params, preset, pcfg, out, cache = _setup(args)
    try:
        tokens = pool_domains(args.input)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    mixtures: dict[str, dict[str, float]] = {}
    searches: dict[str, dict[str, Any]] = {}  # RegMix's predictions, to set beside the realised gains
    for spec in args.mixture or ["natural", "uniform"]:
        name, _, path = spec.partition("=")
        if name == "natural" and not path:
            mixtures[name] = natural_mixture(tokens)
        elif name == "uniform" and not path:
            mixtures[name] = uniform_mixture(tokens)
        elif path:
            m = load_mixture(path, tokens)
            mixtures[name] = m.weights
            if isinstance(m.provenance.get("search"), dict):
                searches[name] = m.provenance["search"]
        else:
            raise ConfigError(f"--mixture {spec!r}: use NAME=FILE, or the built-ins natural / uniform")
    if args.avg_over and args.target_domains is None:
        args.target_domains = args.avg_over
    avg_over = targets_for(params, list(tokens), args, pools_dir=args.input)
    try:
        rep = run_ablation(args.input, mixtures, pcfg, seeds=ablation_seeds(args.seeds), cache_dir=cache,
                           workers=args.workers, domains_for_avg=avg_over, eval_split=args.split)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    rep["predicted_vs_realised"] = predicted_vs_realised(rep, searches)
    from corpusmix.environment import environment

    rep["environment"] = environment()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rep, indent=1))
    print(f"average {args.split} loss over the target domains {avg_over}:")
    for name, s in rep["mixtures"].items():
        print(f"{name:>10s}  avg {s['avg']:.4f}  range {s['avg_range']:.4f}")
    print("\n".join(rep["verdicts"]))
    return 0


def predicted_vs_realised(rep: dict[str, Any], searches: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Per searched mixture with predictions (RegMix): its predicted gain over natural and uniform
    (search-validation split, the search's regressor) beside the realised gain in the ablation
    (evaluation split, mean over seeds); positive = the searched mixture's loss is lower."""
    out: dict[str, Any] = {}
    arms = rep["mixtures"]
    for name, info in searches.items():
        if name not in arms or "predicted_chosen" not in info:
            continue
        row = {}
        for base, key in (("natural", "predicted_prior"), ("uniform", "predicted_uniform")):
            if base in arms and key in info:
                row[f"vs_{base}"] = {"predicted": round(info[key] - info["predicted_chosen"], 5),
                                     "realised": round(arms[base]["avg"] - arms[name]["avg"], 5)}
        out[name] = row
    return out


def register(sub: argparse._SubParsersAction) -> None:
    from mix.doremi import DoReMiConfig
    from mix.regmix import RegMixConfig

    p = sub.add_parser("mix", help="mixture search (DoReMi, RegMix), selection and ablation",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    msub = p.add_subparsers(dest="mix_command", metavar="METHOD")
    d = msub.add_parser("doremi", help="DoReMi: Group-DRO proxy against a reference model")
    _search_args(d)
    d.add_argument("--seed", type=int, default=0, help="seed of the search's proxies")
    d.add_argument("--trajectory", default=None, help="weight trajectory CSV (default: next to --output)")
    add_config_args(d, DoReMiConfig)
    _target_args(d)
    d.set_defaults(func=cmd_doremi)
    r = msub.add_parser("regmix", help="RegMix: regression over many tiny proxy runs")
    _search_args(r)
    r.add_argument("--seed", type=int, default=0, help="seed of the search's proxies")
    r.add_argument("--report", default=None, help="fit report JSON (default: regmix_report.json next to --output; an "
                   "existing file there that is not a RegMix report is refused, not overwritten)")
    add_config_args(r, RegMixConfig)
    _target_args(r, targets=False)  # --target-domains comes with RegMixConfig
    r.set_defaults(func=cmd_regmix)
    s = msub.add_parser("select", help="write the pipeline's chosen mixture (mix.method) to --output")
    _common(s)
    s.add_argument("--method", default=None, choices=METHODS, help="default: mix.method in params")
    s.add_argument("--doremi", default=None, help="DoReMi mixture.json (method doremi)")
    s.add_argument("--regmix", default=None, help="RegMix mixture.json (method regmix)")
    s.add_argument("--ablation", default=None,
                   help="ablation.json: keep a searched mixture only when it is better than natural and uniform "
                        "there (paired), else fall back to the better baseline (default: mix.select.ablation)")
    s.set_defaults(func=cmd_select)
    a = msub.add_parser("ablation", help="train the same proxy on each mixture with several seeds")
    _search_args(a)
    a.add_argument("--mixture", action="append", help="NAME=mixture.json, or natural / uniform (repeatable)")
    a.add_argument("--seeds", type=int, default=5, help="seeds per mixture (1000, 1001, ...: no search uses them)")
    a.add_argument("--workers", type=int, default=2)
    a.add_argument("--avg-over", default="", help="the same as --target-domains (kept for older scripts)")
    _target_args(a)
    a.add_argument("--split", default="eval", choices=("eval", "val"),
                   help="held-out split scored (default eval: never read by the searches)")
    a.set_defaults(func=cmd_ablation)
    from mix.dispatch import register as register_dispatch

    register_dispatch(msub)  # plan (cluster fan-out) and proxy-run (one proxy by key)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])
