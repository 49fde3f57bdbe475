"""``corpusmix inspect``'s page: one self-contained HTML file per curation run, usable offline.

:func:`load_run` reads only what a run wrote (``stats.json``, ``calibration.json``,
``inspect.json``; for runs without ``inspect.json``, ``drops.parquet``'s counts; for a run that did
not finish, the states its finished tasks left in ``work/``) and says what is missing.
:func:`render_page` embeds the data as JSON in the page together with the page's own CSS and
JavaScript (``assets/``): no server, no external resource, nothing fetched. Texts are placed with
``textContent`` only, so no document text can become markup.
"""

from __future__ import annotations

import html
import json
from collections import defaultdict
from importlib.resources import files as package_files
from pathlib import Path
from typing import Any

from curate.inspection.finish import VERSION as INSPECT_VERSION


def _read_json(path: Path, notes: list[dict[str, str]], what: str) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        notes.append({"level": "missing", "text": f"{path.name} is unreadable ({type(exc).__name__}: "
                                                  f"{str(exc)[:120]}): {what} not shown"})
        return None
    if not isinstance(obj, dict):
        notes.append({"level": "missing", "text": f"{path.name} is not a JSON object: {what} not shown"})
        return None
    return obj


def _counts_from_drops(run: Path, notes: list[dict[str, str]]) -> dict[str, dict[str, dict[str, Any]]]:
    """``{step: {domain: {"dropped": {reason: n}}}}`` from ``drops.parquet`` (a file or a Spark folder)."""
    import pyarrow.parquet as pq

    path = run / "drops.parquet"
    if not path.exists():
        notes.append({"level": "missing", "text": "drops.parquet is missing: no drop counts per domain"})
        return {}
    try:
        t = pq.read_table(path, columns=["step", "reason", "domain"])
    except Exception as exc:  # any unreadable Parquet: say so, render the rest
        notes.append({"level": "missing", "text": f"drops.parquet is unreadable ({type(exc).__name__}): "
                                                  "no drop counts per domain"})
        return {}
    out: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for row in t.group_by(["step", "domain", "reason"]).aggregate([("reason", "count")]).to_pylist():
        c = out[row["step"]].setdefault(row["domain"] or "unknown", {"docs_in": None, "kept": None, "dropped": {}})
        c["dropped"][row["reason"]] = row["reason_count"]
    return dict(out)


def _partial_states(run: Path, notes: list[dict[str, str]]) -> dict[str, Any] | None:
    """The inspection of a run that stopped: merged states of its finished tasks, texts withheld."""
    from curate.inspection.collect import InspectConfig
    from curate.inspection.finish import inspection_document

    files = sorted((run / "work").glob("[ab]/inspect/*.json"))
    if not files:
        return None
    states = []
    for f in files:
        try:
            states.append(json.loads(f.read_text()))
        except (json.JSONDecodeError, UnicodeDecodeError):
            notes.append({"level": "missing", "text": f"unreadable task state {f.relative_to(run)}: not counted"})
    if not states:
        return None
    cfg = InspectConfig(bins=int(states[0].get("bins", 60)), samples_per_rule=0, near_misses_per_rule=0,
                        top_clusters=0)
    try:
        doc = inspection_document(states, cfg, order=[])
    except (ValueError, KeyError, TypeError) as exc:
        notes.append({"level": "missing", "text": f"task states of another version ({exc}): not shown"})
        return None
    notes.append({"level": "missing", "text": (
        f"the run did not finish: counts and histograms below come from the {len(states)} task state(s) it "
        "left in work/ (only the tasks that finished); texts are not shown, since the run never reached "
        "the step that redacts them")})
    return doc


def load_run(run: str | Path) -> dict[str, Any]:
    """Everything the page shows for the run folder ``run``, with ``notes`` on what is missing."""
    run = Path(run)
    if not run.is_dir():
        raise FileNotFoundError(2, "No such file or directory", str(run))
    notes: list[dict[str, str]] = []
    stats = _read_json(run / "stats.json", notes, "per-step totals")
    if stats is None and not (run / "stats.json").exists():
        notes.append({"level": "missing", "text": "stats.json is missing: the run did not finish (a failed step "
                                                  "or a kill), or this is not a run folder"})
    calibration = _read_json(run / "calibration.json", notes, "per-domain calibration")
    insp = _read_json(run / "inspect.json", notes, "samples and histograms")
    if insp is not None and insp.get("inspect_version") != INSPECT_VERSION:
        notes.append({"level": "missing", "text": f"inspect.json has version {insp.get('inspect_version')!r}, this "
                                                  f"view reads {INSPECT_VERSION}: samples and histograms not shown"})
        insp = None
    if insp is None and not (run / "inspect.json").exists():
        if stats is not None:
            notes.append({"level": "missing", "text": (
                "inspect.json is missing: the run was written by a version that did not record inspection "
                "data (or with curate.inspect.enabled: false). Histograms, thresholds and examples are not "
                "shown; counts per domain come from drops.parquet. Re-run `corpusmix curate run` to record them")})
        else:
            insp = _partial_states(run, notes)
    data = _page_data(run, stats, calibration, insp, notes)
    return data


def _page_data(run: Path, stats: dict[str, Any] | None, calibration: dict[str, Any] | None,
               insp: dict[str, Any] | None, notes: list[dict[str, str]]) -> dict[str, Any]:
    steps_stats = (stats or {}).get("steps") or {}
    if insp is not None:
        counts, domains = insp.get("counts") or {}, dict(insp.get("domains") or {})
        steps = list(insp.get("steps") or [])
        steps = [s for s in steps_stats if s in counts or s == "read"] + [s for s in steps if s not in steps_stats]
    else:
        counts = _counts_from_drops(run, notes) if stats is not None else {}
        domains = {d: v.get("docs_in") for d, v in ((stats or {}).get("domains") or {}).items()}
        if not domains and calibration:
            domains = dict(calibration.get("domain_docs") or {})
        steps = list(steps_stats) or sorted(counts)
        if not domains:
            domains = {d: None for by in counts.values() for d in by}
    langs = {}
    lcal = ((calibration or {}).get("steps") or {}).get("langid") or {}
    for d, v in (lcal.get("domains") or {}).items():
        langs[d] = v.get("language")
    fallback = {d: v.get("fallback") for d, v in ((((calibration or {}).get("steps") or {}).get("filters") or {})
                                                  .get("domains") or {}).items() if v.get("fallback")}
    if calibration is None and insp is not None:
        notes.append({"level": "warn", "text": "calibration.json is missing: domain languages and calibration "
                                               "fallbacks are not shown"})
    if stats is not None and insp is not None:
        _check_counts(stats, insp, notes)
    return {
        "run": str(run), "engine": (insp or {}).get("engine") or ((stats or {}).get("engine") or {}).get("name", "local"),
        "notes": notes, "steps": steps, "domains": domains, "counts": counts,
        "totals": (stats or {}).get("totals"), "step_totals": steps_stats,
        "rules": (insp or {}).get("rules") or {}, "hist": (insp or {}).get("hist") or {},
        "samples": (insp or {}).get("samples") or {}, "near": (insp or {}).get("near") or {},
        "lang": (insp or {}).get("lang") or {}, "domain_lang": langs, "fallback": fallback,
        "decontam": (insp or {}).get("decontam") or {}, "clusters": (insp or {}).get("clusters") or {},
        "pii": (insp or {}).get("pii") or {}, "budget": (insp or {}).get("budget") or {},
        "guard": (stats or {}).get("guard") or [], "has_inspect": insp is not None, "scores": None,
    }


def _check_counts(stats: dict[str, Any], insp: dict[str, Any], notes: list[dict[str, str]]) -> None:
    """Warn on any step whose drops by reason differ between ``stats.json`` and ``inspect.json``."""
    bad = []
    for step, st in (stats.get("steps") or {}).items():
        mine: dict[str, int] = defaultdict(int)
        for c in (insp.get("counts") or {}).get(step, {}).values():
            for r, n in c["dropped"].items():
                mine[r] += n
        if dict(mine) != {r: n for r, n in st.get("dropped", {}).items() if n}:
            bad.append(step)
    if bad:
        notes.append({"level": "warn", "text": f"inspect.json and stats.json disagree on the drops of {bad}: "
                                               "the files come from different runs"})


def _asset(name: str) -> str:
    return package_files("curate.inspection").joinpath("assets", name).read_text(encoding="utf-8")


def _script_json(obj: Any) -> str:
    """JSON safe inside ``<script type="application/json">``: no ``</`` nor ``<!--`` can end it."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")


def render_page(data: dict[str, Any], *, title: str = "corpusmix inspect") -> str:
    """The page: static skeleton, inlined CSS and JavaScript, the data as JSON."""
    csp = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<meta http-equiv=\"Content-Security-Policy\" content=\"{csp}\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<title>{html.escape(title)}</title><style>{_asset('view.css')}</style></head><body>"
        f"<header><h1>{html.escape(title)}</h1><p id=\"run\"></p><div id=\"notes\" role=\"status\"></div></header>"
        "<nav id=\"domains\" aria-label=\"domains\"></nav>"
        "<main><section id=\"domain\" aria-live=\"polite\"></section>"
        "<section id=\"detail\"></section>"
        "<section id=\"lang\"></section><section id=\"clusters\"></section>"
        "<section id=\"safety\"></section><section id=\"scores\"></section></main>"
        f"<script type=\"application/json\" id=\"data\">{_script_json(data)}</script>"
        f"<script>{_asset('view.js')}</script></body></html>\n")


def write_page(run: str | Path, output: str | Path, *, title: str = "corpusmix inspect",
               scores: dict[str, Any] | None = None) -> dict[str, Any]:
    """Load ``run``, render and write the page to ``output``; returns the page data."""
    data = load_run(run)
    data["scores"] = scores
    out = Path(output)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(render_page(data, title=title), encoding="utf-8")
    tmp.replace(out)
    return data
