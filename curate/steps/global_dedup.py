"""The global dedup's place in the chain: between stage ``a`` and stage ``b``, run by the engines
(``curate.dedup``), configured by the ``dedup`` section."""

from __future__ import annotations

from curate.dedup.config import DedupConfig
from curate.steps.registry import StepSpec, register

register(StepSpec(name="dedup", config=DedupConfig, section="dedup", stage="dedup", order=70, module=__name__))
