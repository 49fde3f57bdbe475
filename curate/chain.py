"""The curation chain: which steps run, with which typed configs; shared by every engine.

``params.yaml`` is read once, at the command's edge, into a :class:`ChainConfig` (one typed config
per section the chain needs); :func:`build_steps` turns it into the step objects of stage ``a``
(before the global dedup) or ``b`` (after it). The steps, their configs and order come from the
registry (``curate.steps.registry``): each step module declares its own. Both engines
(``curate.engine_local`` with datatrove, ``curate.spark.engine`` with Spark) and
``corpusmix curate calibrate`` build their steps here, so they
run the same objects::

    read -> normalize -> decontam -> langid -> filters -> toxicity -> quality
         -> [global] dedup -> DedupApply -> pii

:class:`DedupApply` applies the global dedup verdicts in stage b (the local engine reads them from
per-task files, the Spark engine from joined columns: :class:`ColumnDedupApply`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from datatrove.data import Document

from corpusmix.config import ConfigError, config_from, load_params
from curate.docio import ReadConfig
from curate.steps import registry
from curate.steps.base import CurationStep

#: the registered steps, in chain order
ALL_STEPS = registry.names()
#: params.yaml sections that decide a run's output (the local engine's resume fingerprint): ``curate``
#: and the top-level sections of the registered steps
CHAIN_SECTIONS = ("curate", *dict.fromkeys(s.section.split(".")[0] for s in registry.specs()
                                           if not s.section.startswith("curate.")))


@dataclass
class EngineConfig:
    steps: list[str] = field(default_factory=lambda: list(ALL_STEPS), metadata={
        "help": f"steps to run, in chain order, from {ALL_STEPS}"})
    tasks: int = field(default=4, metadata={"help": "datatrove tasks (units of resumable work)"})
    workers: int = field(default=1, metadata={"help": "processes running tasks"})
    batch_docs: int = field(default=1000, metadata={"help": "documents per output part file"})
    quality_models_dir: str = field(default="", metadata={
        "help": "folder with the trained quality models (empty: quality step skipped)"})
    keep_work: bool = field(default=True, metadata={"help": "keep OUT/work after a finished run"})
    restart_stale: bool = field(default=False, metadata={
        "help": "OUT/work holds a run with other inputs, params or code (e.g. after a params edit or an "
                "upgrade): discard it and start over instead of stopping (the DVC stage sets it; a run with "
                "the same ones resumes)"})

    def __post_init__(self) -> None:
        valid = registry.names()
        bad = [s for s in self.steps if s not in valid]
        for step in bad:
            if step in registry.BROKEN:
                raise ConfigError(f"step {step!r} is enabled but curate.steps.{step} cannot be imported "
                                  f"({registry.BROKEN[step]}); remove it from curate.engine.steps")
        if bad:
            raise ConfigError(f"curate.engine.steps: unknown step(s) {bad}; valid: {list(valid)}")
        if self.tasks < 1 or self.workers < 1 or self.batch_docs < 1:
            raise ConfigError("curate.engine.tasks, workers and batch_docs must be >= 1")


def section(params: dict[str, Any], dotted: str) -> dict[str, Any]:
    """One dotted section (``curate.engine``) of loaded params; ``{}`` when absent."""
    data: Any = params
    for part in dotted.split("."):
        data = (data or {}).get(part, {}) if isinstance(data, dict) else {}
    return dict(data or {})


@dataclass
class ChainConfig:
    """Every typed config the chain needs; the configs of disabled steps stay ``None``."""

    engine: EngineConfig = field(default_factory=EngineConfig)
    read: ReadConfig = field(default_factory=ReadConfig)
    calibrate: Any = None  # curate.calibrate.CalibrateConfig
    inspect: Any = None  # curate.inspection.collect.InspectConfig: what OUT/inspect.json records
    #: step name -> its typed config, for the enabled steps (``chain.<step>`` reads it, ``None`` if off)
    configs: dict[str, Any] = field(default_factory=dict)
    #: the params sections of CHAIN_SECTIONS as read (what a resumable run is fingerprinted by)
    params: dict[str, Any] = field(default_factory=dict)
    #: the file they were read from ("" when built from a mapping)
    params_path: str = ""

    @classmethod
    def load(cls, path: str | Path = "params.yaml", *, engine: EngineConfig | None = None,
             read: ReadConfig | None = None) -> ChainConfig:
        """Read ``path`` once and build the chain's configs (:meth:`from_params`)."""
        return cls.from_params(load_params(path), engine=engine, read=read, params_path=str(path))

    @classmethod
    def from_params(cls, params: dict[str, Any], *, engine: EngineConfig | None = None,
                    read: ReadConfig | None = None, params_path: str = "") -> ChainConfig:
        """Typed configs from loaded params; ``engine``/``read`` override their sections (CLI flags).

        Raises :class:`ConfigError` (unknown keys, bad values, a step that cannot be imported)
        before any work starts.
        """
        from curate.calibrate import CalibrateConfig
        from curate.inspection.collect import InspectConfig

        def typed(cls_: type, where: str) -> Any:
            return config_from(cls_, params=section(params, where), where=where)

        engine = engine or typed(EngineConfig, "curate.engine")
        on = set(engine.steps)
        if "engine" in section(params, "dedup"):
            raise ConfigError("params dedup.engine is not read by `corpusmix curate run`: its dedup runs on the "
                              "run's own engine (`curate run --engine local|spark`); remove dedup.engine from the "
                              "params file (the standalone command takes `corpusmix curate dedup --engine ...`)")
        cfg = cls(engine=engine, read=read or typed(ReadConfig, "curate.read"),
                  calibrate=typed(CalibrateConfig, "curate.calibrate"),
                  inspect=typed(InspectConfig, "curate.inspect"),
                  params={k: params.get(k) or {} for k in CHAIN_SECTIONS}, params_path=params_path)
        # in chain order, the global dedup's section last
        for spec in sorted(registry.specs(), key=lambda sp: sp.stage == "dedup"):
            if spec.name in on and (spec.enabled is None or spec.enabled(engine)):
                cfg.configs[spec.name] = typed(spec.config, spec.section)
        return cfg

    def __getattr__(self, name: str) -> Any:
        """``chain.<step>``: the step's config, ``None`` when the step is off (registered steps only)."""
        configs = self.__dict__.get("configs")
        if configs is None or name.startswith("_") or name not in registry.STEPS:
            raise AttributeError(name)
        return configs.get(name)


def build_steps(chain: ChainConfig, *, stage: str = "a") -> list[CurationStep]:
    """The per-document steps of stage ``a`` (before dedup) or ``b`` (after dedup), in chain order."""
    if stage not in ("a", "b"):
        raise ValueError(f"stage must be 'a' or 'b', got {stage!r}")
    steps: list[CurationStep] = []
    for spec in registry.specs():
        cfg = chain.configs.get(spec.name)
        if spec.stage == stage and cfg is not None and spec.build is not None:
            steps += spec.build(cfg, chain)
    return steps


class DedupApply(CurationStep):
    """Applies the global dedup verdicts of this task: adds ``dup_cluster``/``is_duplicate``, drops copies."""

    step_name = "dedup"
    name = "dedup (apply verdicts)"
    columns = ("dup_cluster", "is_duplicate")

    def __init__(self, verdicts: dict[str, tuple[str, bool, str | None]] | None = None, *,
                 stream: Iterator[tuple[str, str, bool, str | None]] | None = None) -> None:
        """``verdicts``: id -> (cluster, is_duplicate, kind), a missing id is a unique document; or
        ``stream``: one ``(id, cluster, is_duplicate, kind)`` row per document in the order the
        documents come (the local engine's per-task verdict file), so nothing per document is held."""
        super().__init__()
        self.verdicts = verdicts or {}
        self.stream = stream

    def decide(self, doc: Document, cluster: str, is_dup: bool, kind: str | None) -> bool | tuple[bool, str]:
        doc.metadata["dup_cluster"] = cluster
        doc.metadata["is_duplicate"] = is_dup
        if is_dup:
            return False, "near_duplicate" if kind == "near" else "exact_duplicate"
        return True

    def filter(self, doc: Document) -> bool | tuple[bool, str]:
        if self.stream is None:
            return self.decide(doc, *self.verdicts.get(doc.id, (doc.id, False, None)))
        row = next(self.stream, None)
        if row is None or row[0] != doc.id:
            raise RuntimeError(f"dedup verdicts out of step with this task's documents (document {doc.id!r}, "
                               f"verdict {row[0] if row else 'none left'!r}): the dedup output does not match "
                               "stage a's; delete OUT/work/dedup and OUT/work/b and re-run")
        return self.decide(doc, *row[1:])


class ColumnDedupApply(DedupApply):
    """:class:`DedupApply` (same columns, reasons, counts) with verdicts joined onto the documents as
    ``dup_cluster``/``is_duplicate``/``dup_kind`` metadata (the Spark engine's join)."""

    def __init__(self) -> None:
        super().__init__({})

    def filter(self, doc: Document) -> bool | tuple[bool, str]:
        m = doc.metadata
        cluster, is_dup, kind = m.pop("dup_cluster", None), m.pop("is_duplicate", None), m.pop("dup_kind", None)
        if cluster is None:
            return self.decide(doc, doc.id, False, None)
        return self.decide(doc, cluster, bool(is_dup), kind)
