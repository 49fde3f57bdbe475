"""The ``mixture.json`` contract: domain weights on the simplex, plus how they were found.

Format (docs/formats.md): ``{"weights": {domain: w}, "method": "...", "params": {...},
"provenance": {...}}``; weights are non-negative and sum to 1 within 1e-6. Written by the mixture
searches and ``corpusmix mix select``, read by ``corpusmix pack``, the pool samplers and the report::

    from corpusmix.mixture import load_mixture, save_mixture, natural_mixture
    save_mixture("mixture.json", {"code": 0.3, "legal": 0.7}, method="manual")
    mix = load_mixture("mixture.json", domains={"code": 1200, "legal": 800})
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corpusmix.config import ConfigError
from corpusmix.pools import POOLS_JSON

SUM_TOLERANCE = 1e-6


class MixtureError(ConfigError):
    """A mixture that cannot be used; the message says how to fix it."""


@dataclass
class Mixture:
    """Domain weights plus the method/params/provenance that produced them."""

    weights: dict[str, float]
    method: str = "manual"
    params: dict[str, Any] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"weights": dict(self.weights), "method": self.method, "params": dict(self.params),
                "provenance": dict(self.provenance)}


def validate_mixture(weights: Mapping[str, float],
                     domains: Iterable[str] | Mapping[str, int] | None = None) -> dict[str, float]:
    """Check ``weights`` and return them as a plain ``{domain: float}`` dict.

    ``domains`` is the set of available domains, or a mapping ``{domain: tokens}`` (e.g. the
    ``domains`` of ``pools.json``); with a mapping, a positive weight on a domain with no tokens is
    an error. Raises :class:`MixtureError` for: no weights, non-numeric / negative / non-finite
    weights, a sum different from 1, domains not in ``domains``, positive weight on empty domains.
    """
    if not isinstance(weights, Mapping) or not weights:
        raise MixtureError("mixture has no weights: expected {\"weights\": {domain: weight, ...}}")
    out: dict[str, float] = {}
    for dom, w in weights.items():
        if not isinstance(dom, str) or not dom:
            raise MixtureError(f"mixture domain names must be non-empty strings, got {dom!r}")
        if isinstance(w, bool) or not isinstance(w, (int, float)):
            raise MixtureError(f"mixture weight of {dom!r} is {w!r}; weights must be numbers")
        w = float(w)
        if not math.isfinite(w) or w < 0:
            raise MixtureError(f"mixture weight of {dom!r} is {w}; weights must be finite and >= 0")
        out[dom] = w
    total = math.fsum(out.values())
    if abs(total - 1.0) > SUM_TOLERANCE:
        raise MixtureError(
            f"mixture weights sum to {total:.9g}, not 1 (tolerance {SUM_TOLERANCE}); "
            "normalise them (divide each by the sum) before saving")
    if domains is not None:
        known = dict(domains) if isinstance(domains, Mapping) else {d: None for d in domains}
        unknown = sorted(set(out) - set(known))
        if unknown:
            raise MixtureError(
                f"mixture names unknown domain(s) {unknown}; available domains: {sorted(known)}. "
                "Fix the mixture or build pools/curated data for those domains")
        if isinstance(domains, Mapping):
            empty = sorted(d for d, w in out.items() if w > 0 and not known[d])
            if empty:
                raise MixtureError(
                    f"mixture gives positive weight to empty domain(s) {empty} (0 tokens after "
                    "curation); set their weight to 0 and renormalise, or add data for them")
    return out


# Provenance fields that differ between two runs of the same inputs (wall-clock values). DVC hashes
# the mixture file's bytes, so they go to a sidecar ``<name>.timing.json`` that no stage tracks: two
# fresh clones then give the same dvc.lock hash for the mixture.
VOLATILE_PROVENANCE = ("created", "seconds")


def timing_path(path: str | Path) -> Path:
    """The untracked sidecar of ``path`` that holds its volatile provenance (creation time, seconds)."""
    path = Path(path)
    return path.with_name(path.stem + ".timing.json")


def _write_atomic(path: Path, data: Any) -> None:
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    with os.fdopen(fd, "w") as fh:
        json.dump(data, fh, indent=2, sort_keys=True)
        fh.write("\n")
    os.replace(tmp, path)


def save_mixture(path: str | Path, weights: Mapping[str, float], *, method: str = "manual",
                 params: Mapping[str, Any] | None = None,
                 provenance: Mapping[str, Any] | None = None) -> Mixture:
    """Validate and write ``mixture.json`` atomically (temp file + rename); return the Mixture.

    Volatile provenance (``VOLATILE_PROVENANCE``) goes to ``timing_path(path)``, not the file.
    """
    prov = dict(provenance or {})
    volatile = {k: prov.pop(k) for k in VOLATILE_PROVENANCE if k in prov}
    mix = Mixture(weights=validate_mixture(weights), method=method, params=dict(params or {}), provenance=prov)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    _write_atomic(path, mix.to_dict())
    if volatile:
        _write_atomic(timing_path(path), volatile)
    return mix


def mixture_from_dict(data: Any, domains: Iterable[str] | Mapping[str, int] | None = None,
                      *, where: str = "mixture") -> Mixture:
    """Build a validated :class:`Mixture` from the parsed JSON object."""
    if not isinstance(data, dict) or "weights" not in data:
        raise MixtureError(f"{where}: expected a JSON object with a \"weights\" key")
    try:
        weights = validate_mixture(data["weights"], domains)
    except MixtureError as exc:
        raise MixtureError(f"{where}: {exc}") from None
    return Mixture(weights=weights, method=str(data.get("method", "manual")),
                   params=dict(data.get("params") or {}), provenance=dict(data.get("provenance") or {}))


def load_mixture(path: str | Path,
                 domains: Iterable[str] | Mapping[str, int] | None = None) -> Mixture:
    """Read and validate ``mixture.json`` (optionally against the available ``domains``)."""
    path = Path(path)
    if not path.exists():
        raise MixtureError(f"mixture file {path} does not exist; write one with corpusmix.mixture.save_mixture "
                           "or a mixture search (corpusmix mix ...)")
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise MixtureError(f"mixture file {path} is not valid JSON: {exc}") from None
    return mixture_from_dict(data, domains, where=str(path))


def _tokens_by_domain(pools: Mapping[str, Any] | str | Path) -> dict[str, int]:
    if isinstance(pools, (str, Path)):
        p = Path(pools)
        p = p / POOLS_JSON if p.is_dir() else p
        pools = json.loads(p.read_text())
    if "domains" in pools and isinstance(pools["domains"], Mapping):
        pools = pools["domains"]
    out = {}
    for dom, v in pools.items():
        out[dom] = int(v["tokens"] if isinstance(v, Mapping) else v)
    return out


def natural_mixture(pools: Mapping[str, Any] | str | Path) -> dict[str, float]:
    """Token-share weights: each domain's share of all tokens.

    ``pools`` is ``{domain: tokens}``, the parsed ``pools.json``, or a pools folder / file path.
    """
    tokens = _tokens_by_domain(pools)
    total = sum(tokens.values())
    if total <= 0:
        raise MixtureError("cannot build a natural mixture: every domain has 0 tokens")
    weights = {d: n / total for d, n in sorted(tokens.items())}
    return _renormalise(weights)


def uniform_mixture(domains: Iterable[str]) -> dict[str, float]:
    """Equal weight on every domain."""
    doms = sorted(set(domains))
    if not doms:
        raise MixtureError("cannot build a uniform mixture over no domains")
    return _renormalise({d: 1.0 / len(doms) for d in doms})


def _renormalise(weights: dict[str, float]) -> dict[str, float]:
    total = math.fsum(weights.values())
    return {d: w / total for d, w in weights.items()}
