"""Which domains a mixture is optimised and judged for (``mix.target_domains``).

One definition serves the RegMix target, the ablation's average loss and the report, so a mixture
is scored the same way everywhere::

    from mix.targets import TargetConfig, resolve_targets
    targets = resolve_targets(domains, TargetConfig(target_domains=[], garbage_domains=["noise"]))

A garbage domain (named in ``mix.garbage_domains``, or judged mostly garbage by the curation's
domain verdict and listed in the pools' ``garbage_domains``: :func:`flagged_garbage`) is never a
target: its own validation loss falls as its weight rises (learnable spam, tables and blobs are easy
to fit), so an objective that includes it rewards garbage. Naming a domain in both user lists is an
error; naming a domain the curation judged garbage as a target overrides the verdict (logged).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from corpusmix.config import ConfigError
from corpusmix.logging import get_logger

log = get_logger("mix.targets")


@dataclass
class TargetConfig:
    """Target and garbage domains (``params.yaml``: ``mix.target_domains``, ``mix.garbage_domains``)."""

    target_domains: list[str] = field(default_factory=list, metadata={
        "help": "domains the mixture is optimised and judged for ([] = every domain not flagged as garbage)"})
    garbage_domains: list[str] = field(default_factory=list, metadata={
        "help": "domains that are never a target by default (planted or known garbage)"})


def resolve_targets(domains: Sequence[str], cfg: TargetConfig) -> list[str]:
    """The target domains: ``cfg.target_domains`` if given (each must exist), else every domain
    not in ``cfg.garbage_domains``. Clear errors for unknown names and for an empty target."""
    domains = list(domains)
    unknown = sorted(set(cfg.target_domains) - set(domains))
    if unknown:
        raise ConfigError(f"target domain(s) {unknown} are not in the pools {domains}; fix "
                          "mix.target_domains in params.yaml")
    if cfg.target_domains:
        named_garbage = sorted(set(cfg.target_domains) & set(cfg.garbage_domains))
        if named_garbage:
            raise ConfigError(f"domain(s) {named_garbage} are both targets and garbage domains: a garbage domain's "
                              "loss falls as its weight rises, so it cannot be a target; remove them from "
                              "mix.target_domains or mix.garbage_domains (or the flags)")
        return [d for d in domains if d in set(cfg.target_domains)]
    targets = [d for d in domains if d not in set(cfg.garbage_domains)]
    if not targets:
        raise ConfigError(f"every domain of {domains} is marked as garbage; name the targets in "
                          "mix.target_domains")
    return targets


def flagged_garbage(pools_dir: str | Path) -> list[str]:
    """The domains the curation judged mostly garbage (``pools.json`` ``garbage_domains``, from the
    curated folder's ``domain_verdicts.json``); [] for pools built without verdicts."""
    p = Path(pools_dir) / "pools.json"
    if not p.is_file():
        return []
    return list(json.loads(p.read_text()).get("garbage_domains") or [])
