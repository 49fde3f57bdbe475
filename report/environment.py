"""The report's "Environment" section: the software that computed the results it shows.

Every pipeline output that records its environment (``corpusmix.environment``: curation stats, metrics,
mixtures, the ablation) is listed with its lock file, numerics mode and package versions; outputs that
disagree (made under different locks or numerics) are flagged, since their numbers are not comparable.
"""

from __future__ import annotations

import json
from typing import Any

from report.inputs import ReportInputs
from report.render import Section, Table


def _recorded(inputs: ReportInputs) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for group in (inputs.stats, inputs.ablations):
        for label, doc in group.items():
            if isinstance(doc, dict) and isinstance(doc.get("environment"), dict):
                found[label] = doc["environment"]
    for label, doc in inputs.mixtures.items():
        env = (doc.get("provenance") or {}).get("environment") if isinstance(doc, dict) else None
        if isinstance(env, dict):
            found[label] = env
    for label, doc in inputs.metrics.items():
        if isinstance(doc, dict) and isinstance(doc.get("environment"), dict):
            found[label] = doc["environment"]
    return found


def environment_section(inputs: ReportInputs) -> Section | None:
    found = _recorded(inputs)
    if not found:
        return None
    sec = Section("environment", "Environment")
    distinct = {json.dumps(e, sort_keys=True) for e in found.values()}
    rows = []
    for label, env in sorted(found.items()):
        num = env.get("numerics") or {}
        rows.append([label, env.get("lock") or "none (not from a lock)", env.get("python", ""),
                     f"{num.get('mode', '?')}{'' if num.get('at_reference') else ' (not at the reference ISA)'}",
                     num.get("kernels", "")])
    if len(distinct) > 1:
        sec.blocks.append("These outputs were not all made in the same environment (lock, numerics or package "
                          "versions differ): their numbers are not comparable bit for bit.")
    sec.blocks.append(Table("Outputs and the environment that made them",
                            ["output", "lock", "python", "numerics", "fused CPU kernels"], rows,
                            collapsed=len(rows) > 8))
    first = next(iter(found.values()))
    sec.blocks.append(Table("Package versions", ["package", "version"],
                            [[k, v] for k, v in sorted((first.get("packages") or {}).items())], collapsed=True))
    return sec
