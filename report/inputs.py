"""Find and read the artefacts that ``corpusmix report`` summarises.

Library module of :mod:`report.build`. :func:`collect_inputs` takes files and/or folders (folders are
searched recursively) and sorts every file it understands into a :class:`ReportInputs` by its
*content*, not only its name, so renamed or nested pipeline outputs are still found:

==========================  =================================================================
curation stats              JSON ``{"steps": {step: {"docs_in", "kept", "dropped", ...}}}``
drop decisions              Parquet with columns ``id, step, reason`` (``domain`` optional)
demo ground truth           Parquet with ``id, domain, defects`` (documents per domain, planted
                            defects per kind)
curated documents           Parquet with ``id, text, domain`` (only ``domain`` is read: the
                            documents kept per domain, for the per-domain funnel)
mixtures                    JSON ``{"weights": {domain: w}, "method", ...}`` (``mixture.json``)
DoReMi trajectory           JSON with ``"trajectory": [{"step", domain: w, ...}]`` or a CSV with
                            a ``step`` column and one column per domain
RegMix fit report           JSON with ``"lightgbm"`` and ``"linear"`` scores (top level or
                            under ``fit`` / ``fit_report``, also inside a mixture's provenance)
ablation                    JSON ``{"mixtures": {name: {...}}}`` (see :func:`normalise_ablation`)
train logs                  ``*.jsonl`` with one ``{"step", "loss", ...}`` record per line
token counts                ``pools.json`` (``domains.<d>.tokens``) or a shards ``manifest.json``
quality metrics             any other JSON object holding numbers (rendered as tidy tables): from
                            folders only when named like a metric file (``*metrics*``, ``*eval*``,
                            ``*quality*``, ``*stats*``, ``*score*``, or under ``metrics/``); files
                            passed directly are always taken
==========================  =================================================================

Files that are not report material (proxy-run caches, DVC internals, unreadable files) are skipped
and listed in ``ReportInputs.skipped`` with the reason, so nothing disappears silently.
"""

from __future__ import annotations

import csv
import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corpusmix.columns import DOMAIN, DROP_COLUMNS, REQUIRED
from corpusmix.config import ConfigError

SKIP_DIRS = {".git", ".dvc", ".venv", "__pycache__", "node_modules", ".pytest_cache"}
STATE_DIRS = {
    "work": "work folder of a run (per-task parts, stats and drops; the run's outputs merge them)",
    "_work": "work folder of a run (per-task parts, stats and drops; the run's outputs merge them)",
    "logs": "logs of a run", "tmp": "temporary files", "checkpoints": "training checkpoints",
    "dvclive": "dvclive output (train_log.jsonl holds the same metrics)",
}
MAX_JSON_BYTES = 50_000_000
METRIC_NAME = re.compile(r"metric|eval|quality|stats|score|accuracy|precision|recall", re.IGNORECASE)


class ReportInputError(ConfigError):
    """An input the report cannot use; the message says how to fix it."""


@dataclass
class ReportInputs:
    """Everything found, keyed by a display label (the file path relative to its input)."""

    stats: dict[str, dict[str, Any]] = field(default_factory=dict)
    drops: dict[str, Any] = field(default_factory=dict)  # label -> pandas DataFrame
    documents: dict[str, dict[str, int]] = field(default_factory=dict)  # document parquet -> docs per domain
    mixtures: dict[str, dict[str, Any]] = field(default_factory=dict)
    trajectories: dict[str, list[dict[str, float]]] = field(default_factory=dict)
    regmix_fits: dict[str, dict[str, Any]] = field(default_factory=dict)
    ablations: dict[str, dict[str, Any]] = field(default_factory=dict)
    train_logs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    tokens: dict[str, dict[str, int]] = field(default_factory=dict)
    eval_docs: dict[str, dict[str, int]] = field(default_factory=dict)  # pools.json: evaluation-split documents
    metrics: dict[str, Any] = field(default_factory=dict)
    scaling: dict[str, dict[str, Any]] = field(default_factory=dict)  # corpusmix scale fit/predict JSON
    inspections: dict[str, dict[str, Any]] = field(default_factory=dict)  # a curation run's inspect.json
    skipped: list[tuple[str, str]] = field(default_factory=list)
    ground_truth: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)
    used_documents: set[str] = field(default_factory=set)  # document files the funnel paired with stats

    def is_empty(self) -> bool:
        return not any((self.stats, self.drops, self.mixtures, self.trajectories, self.regmix_fits,
                        self.ablations, self.train_logs, self.tokens, self.metrics, self.ground_truth,
                        self.scaling, self.inspections))


# ----------------------------------------------------------------------------- discovery

def _state_dir(name: str) -> str | None:
    """Why a folder met while searching is a run's intermediate state, or None."""
    if name in STATE_DIRS:
        return STATE_DIRS[name]
    if name.startswith("cache"):
        return "cache of finished proxy runs (the ablation and mixture files summarise them)"
    if name.startswith("step-"):
        return "a checkpoint"
    return None


def _walk(root: Path, skipped: list[tuple[str, str]]) -> Iterable[Path]:
    for p in sorted(root.iterdir()):
        if p.is_dir():
            if p.name in SKIP_DIRS or p.name.startswith("."):
                continue
            why = _state_dir(p.name)
            if why:
                skipped.append((f"{p}/", why))
                continue
            yield from _walk(p, skipped)
        elif p.name.endswith(".timing.json"):
            skipped.append((str(p), "wall-clock timings of an output (not results)"))
        elif p.suffix in (".json", ".jsonl", ".parquet", ".csv"):
            yield p


def collect_inputs(paths: Iterable[str | Path]) -> ReportInputs:
    """Read every understood file under ``paths`` (files or folders) into a :class:`ReportInputs`.

    Folders met while searching that hold a run's intermediate state (``work``, ``logs``,
    ``cache*``, ``checkpoints``, ``dvclive``, ...) are not entered; they are listed as skipped. A
    folder passed directly is always searched.
    """
    out = ReportInputs()
    paths = [Path(p) for p in paths]
    if not paths:
        raise ReportInputError("no inputs given: pass --inputs with pipeline output folders or files")
    for root in paths:
        if not root.exists():
            raise ReportInputError(f"input {root} does not exist; pass existing files or folders to --inputs")
        files = [root] if root.is_file() else list(_walk(root, out.skipped))
        for f in files:
            label = _label(root, f)
            try:
                _classify(f, label, out, explicit=root.is_file())
            except (OSError, ValueError, KeyError, TypeError) as exc:
                out.skipped.append((str(f), f"unreadable: {type(exc).__name__}: {exc}"))
    return out


def _label(root: Path, f: Path) -> str:
    """A file's display label: the path as given when inputs are relative (``out/mix/mixture.json``
    whether ``out`` or the file itself was passed), else ``<folder name>/<path inside>`` or the file name."""
    if not root.is_absolute():
        return f.as_posix()
    if root.is_dir():
        rel = str(f.relative_to(root))
        return f"{root.name}/{rel}" if root.name else rel
    return f.name


def _classify(path: Path, label: str, out: ReportInputs, *, explicit: bool = False) -> None:
    if path.suffix == ".parquet":
        _read_parquet(path, label, out)
    elif path.suffix == ".jsonl":
        _read_jsonl(path, label, out)
    elif path.suffix == ".csv":
        _read_csv(path, label, out)
    else:
        if path.stat().st_size > MAX_JSON_BYTES:
            out.skipped.append((str(path), f"larger than {MAX_JSON_BYTES} bytes"))
            return
        _read_json(path, label, out, explicit=explicit)


def _read_parquet(path: Path, label: str, out: ReportInputs) -> None:
    import pyarrow.parquet as pq

    names = set(pq.read_schema(path).names)
    if set(DROP_COLUMNS) <= names:
        cols = [*DROP_COLUMNS] + ([DOMAIN] if DOMAIN in names else [])
        out.drops[label] = pq.read_table(path, columns=cols).to_pandas()
    elif {"id", "domain", "defects"} <= names:
        # the demo ground truth: documents per domain and planted defects (docs/formats.md)
        t = pq.read_table(path, columns=["domain", "defects"]).to_pydict()
        per_domain: dict[str, int] = {}
        defects: dict[str, int] = {}
        for dom, ds in zip(t["domain"], t["defects"], strict=True):
            per_domain[str(dom)] = per_domain.get(str(dom), 0) + 1
            for d in ds or ["clean"]:
                defects[str(d)] = defects.get(str(d), 0) + 1
        out.ground_truth[label] = {"docs_per_domain": dict(sorted(per_domain.items())),
                                   "defects": dict(sorted(defects.items()))}
    elif set(REQUIRED) <= names:
        # documents: only the domain column is read, to count them per domain for the funnel
        counts = pq.read_table(path, columns=["domain"]).column("domain").value_counts().to_pylist()
        out.documents[label] = {str(c["values"]): int(c["counts"]) for c in counts}
    else:
        out.skipped.append((str(path), "parquet that is neither documents (id, text, domain) nor drops "
                                       "(id, step, reason)"))


def _read_jsonl(path: Path, label: str, out: ReportInputs) -> None:
    records, bad, first = [], 0, True
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                bad += 1
                continue
            if first and not (isinstance(rec, dict) and "step" in rec):
                break  # e.g. a documents file: do not read it all
            first = False
            if isinstance(rec, dict) and isinstance(rec.get("step"), (int, float)):
                records.append(rec)
    if records and any(_is_num(r.get("loss")) or any(k.startswith("val_loss") for k in r) for r in records):
        out.train_logs[label] = records
        if bad:
            out.skipped.append((str(path), f"{bad} malformed line(s) ignored in a train log"))
    else:
        out.skipped.append((str(path), "jsonl without step/loss records (not a train log)"))


# fewer evaluation documents than this in a domain: its loss rests on too little text to tell mixtures apart
MIN_EVAL_DOCS = 20


def small_eval_splits(inputs: ReportInputs, domains: Iterable[str]) -> str | None:
    """A warning naming the domains whose evaluation split (in the pools) is too small to judge, or None."""
    counts = next(iter(inputs.eval_docs.values()), {})
    small = {d: counts[d] for d in domains if d in counts and counts[d] < MIN_EVAL_DOCS}
    if not small:
        return None
    listed = ", ".join(f"{d} ({n} document{'s' * (n != 1)})" for d, n in sorted(small.items()))
    return (f"Too small to judge: the evaluation split of {listed} holds fewer than {MIN_EVAL_DOCS} documents, so "
            "the evaluation loss of that domain rests on too little text to tell the mixtures apart; read its "
            "per-domain differences as noise, or add data (pools.eval_fraction).")


def _read_csv(path: Path, label: str, out: ReportInputs) -> None:
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    if not rows or "step" not in rows[0]:
        out.skipped.append((str(path), "csv without a step column (not a weight trajectory)"))
        return
    traj = []
    for r in rows:
        rec: dict[str, float] = {}
        for k, v in r.items():
            try:
                rec[k] = float(v)
            except (TypeError, ValueError):
                continue
        traj.append(rec)
    out.trajectories[label] = traj


def _find_fit(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    prov = obj.get("provenance") if isinstance(obj.get("provenance"), Mapping) else {}
    for cand in (obj, obj.get("fit"), obj.get("fit_report"), obj.get("regression"), prov,
                 prov.get("fit"), prov.get("fit_report"), prov.get("regression")):
        if isinstance(cand, Mapping) and isinstance(cand.get("lightgbm"), Mapping) \
                and isinstance(cand.get("linear"), Mapping):
            return cand
    return None


def _is_metric_name(path: Path) -> bool:
    """Metric files found in folders: DVC-style names, or anything under a ``metrics`` folder."""
    return bool(METRIC_NAME.search(path.stem)) or "metrics" in path.parent.parts


def _read_json(path: Path, label: str, out: ReportInputs, *, explicit: bool = False) -> None:
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        out.skipped.append((str(path), f"invalid JSON: {exc}"))
        return
    if not isinstance(obj, dict):
        out.skipped.append((str(path), "JSON that is not an object"))
        return
    if "inspect_version" in obj and isinstance(obj.get("counts"), Mapping):
        out.inspections[label] = obj
        return
    steps = obj.get("steps")
    if isinstance(steps, Mapping) and steps and all(
            isinstance(s, Mapping) and "docs_in" in s for s in steps.values()):
        out.stats[label] = obj
        return
    if isinstance(obj.get("mixtures"), Mapping):
        out.ablations[label] = obj
        return
    if "val_loss" in obj and "config" in obj:
        out.skipped.append((str(path), "a single proxy-run cache record"))
        return
    from report.scaling import scaling_kind

    if scaling_kind(obj):
        out.scaling[label] = obj
        return
    used = False
    if isinstance(obj.get("weights"), Mapping) and obj["weights"] and all(
            _is_num(v) for v in obj["weights"].values()):
        out.mixtures[label] = obj
        used = True
    if isinstance(obj.get("trajectory"), list) and obj["trajectory"]:
        out.trajectories[label] = [r for r in obj["trajectory"] if isinstance(r, Mapping)]
        used = True
    fit = _find_fit(obj)
    if fit is not None:
        out.regmix_fits[label] = dict(fit)
        used = True
    if used:
        return
    if path.name == "pools.json" and isinstance(obj.get("domains"), Mapping):
        out.tokens[label] = {d: int(v.get("tokens", 0)) for d, v in obj["domains"].items()
                             if isinstance(v, Mapping)}
        out.eval_docs[label] = {d: int(v["eval_docs"]) for d, v in obj["domains"].items()
                                if isinstance(v, Mapping) and isinstance(v.get("eval_docs"), int)}
        return
    if isinstance(obj.get("tokens_per_domain"), Mapping):
        out.tokens[label] = {d: int(v) for d, v in obj["tokens_per_domain"].items()}
        return
    if not _has_number(obj):
        out.skipped.append((str(path), "no numbers to report"))
        return
    if not explicit and not _is_metric_name(path):
        # e.g. completion markers, caches: only named metric files are picked up from folders
        out.skipped.append((str(path), "not a metrics file by name (*metric*, *eval*, *quality*, *stats*, "
                                       "*score*, or under metrics/); pass the file itself to --inputs to include it"))
        return
    out.metrics[label] = obj


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _has_number(obj: Any, depth: int = 0) -> bool:
    if depth > 6:
        return False
    if _is_num(obj):
        return True
    if isinstance(obj, Mapping):
        return any(_has_number(v, depth + 1) for v in obj.values())
    if isinstance(obj, list):
        return any(_has_number(v, depth + 1) for v in obj[:50])
    return False


# ----------------------------------------------------------------------------- ablation

@dataclass
class MixtureRuns:
    """One ablation mixture: per-seed per-domain losses when known, else mean/std summaries."""

    name: str
    weights: dict[str, float]
    seed_losses: dict[str, dict[str, float]]  # seed -> domain -> loss (empty when only a summary)
    mean_loss: dict[str, float]
    std_loss: dict[str, float]
    avg_per_seed: list[float]
    worst_per_seed: list[float]
    curves: dict[str, list[tuple[float, float]]]  # seed -> [(step, loss)]


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def _std(xs: list[float]) -> float:
    if len(xs) < 2:
        return 0.0
    m = _mean(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))


def normalise_ablation(obj: Mapping[str, Any], *, where: str = "ablation") -> tuple[list[str], list[str],
                                                                                        list[MixtureRuns]]:
    """Read both ablation shapes into ``(domains, avg_over, [MixtureRuns])``.

    Per-seed shape: ``{"mixtures": {name: {"seeds": {seed: {"val_loss": {d: x}, "curve":
    [[step, loss], ...]}}, "weights"?}}}``. Summary shape (``mix.ablation.run_ablation``):
    ``{"mixtures": {name: {"weights", "val_loss", "val_loss_std", "avg_per_seed", ...}},
    "domains", "avg_over"}``. The average is the unweighted mean over ``avg_over`` (default: all
    domains); the worst domain is the per-seed maximum over all domains.
    """
    mixes = obj.get("mixtures")
    if not isinstance(mixes, Mapping) or not mixes:
        raise ReportInputError(f"{where}: expected {{\"mixtures\": {{name: ...}}}} with at least one mixture")
    runs: list[MixtureRuns] = []
    all_domains: list[str] = list(obj.get("domains") or [])
    for name, m in mixes.items():
        if not isinstance(m, Mapping):
            raise ReportInputError(f"{where}: mixture {name!r} must be an object")
        seeds_obj = m.get("seeds")
        seed_losses: dict[str, dict[str, float]] = {}
        curves: dict[str, list[tuple[float, float]]] = {}
        if isinstance(seeds_obj, Mapping):
            for seed, rec in seeds_obj.items():
                vl = rec.get("val_loss") if isinstance(rec, Mapping) else None
                if not isinstance(vl, Mapping) or not vl:
                    raise ReportInputError(f"{where}: mixture {name!r} seed {seed}: missing val_loss per domain")
                seed_losses[str(seed)] = {d: float(x) for d, x in vl.items()}
                if isinstance(rec.get("curve"), list):
                    curves[str(seed)] = [(float(s), float(v)) for s, v in rec["curve"]]
        elif not isinstance(m.get("val_loss"), Mapping):
            raise ReportInputError(
                f"{where}: mixture {name!r} has neither per-seed results (\"seeds\") nor a \"val_loss\" summary")
        for d in (next(iter(seed_losses.values())) if seed_losses else m["val_loss"]):
            if d not in all_domains:
                all_domains.append(d)
        runs.append(MixtureRuns(name=str(name), weights={d: float(w) for d, w in (m.get("weights") or {}).items()},
                                seed_losses=seed_losses, mean_loss={}, std_loss={}, avg_per_seed=[],
                                worst_per_seed=[], curves=curves))
    avg_over = [d for d in (obj.get("avg_over") or all_domains)]
    for r in runs:
        m = mixes[r.name]
        if r.seed_losses:
            per = list(r.seed_losses.values())
            missing = sorted(set(all_domains) - set().union(*[set(p) for p in per]))
            if missing:
                raise ReportInputError(f"{where}: mixture {r.name!r} has no val_loss for domain(s) {missing}")
            for d in all_domains:
                xs = [p[d] for p in per if d in p]
                r.mean_loss[d], r.std_loss[d] = _mean(xs), _std(xs)
            r.avg_per_seed = [_mean([p[d] for d in avg_over]) for p in per]
            r.worst_per_seed = [max(p[d] for d in all_domains) for p in per]
        else:
            r.mean_loss = {d: float(x) for d, x in m["val_loss"].items()}
            r.std_loss = {d: float(x) for d, x in (m.get("val_loss_std") or {}).items()}
            aps = m.get("avg_per_seed")
            r.avg_per_seed = [float(x) for x in aps] if isinstance(aps, list) and aps else [
                _mean([r.mean_loss[d] for d in avg_over])]
            r.worst_per_seed = [max(r.mean_loss.values())]
    return all_domains, avg_over, runs
