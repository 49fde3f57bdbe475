"""The curation chain: which steps run, with which typed configs; shared by every engine.

``params.yaml`` is read once, at the command's edge, into a :class:`ChainConfig` (one typed config
per section the chain needs); :func:`build_steps` turns it into the step objects of stage ``a``
(before the global dedup) or ``b`` (after it). Both engines (``curate.engine_local`` with datatrove,
``curate.spark.engine`` with Spark) and ``corpusmix curate calibrate`` build their steps here, so they
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
from curate.steps.base import CurationStep

ALL_STEPS = ("normalize", "decontam", "langid", "filters", "toxicity", "quality", "dedup", "pii")
#: params.yaml sections that decide a run's output (the local engine's resume fingerprint)
CHAIN_SECTIONS = ("curate", "dedup", "pii", "quality", "toxicity", "decontam")


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

    def __post_init__(self) -> None:
        bad = [s for s in self.steps if s not in ALL_STEPS]
        if bad:
            raise ConfigError(f"curate.engine.steps: unknown step(s) {bad}; valid: {list(ALL_STEPS)}")
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
    normalize: Any = None
    decontam: Any = None
    langid: Any = None
    filters: Any = None
    toxicity: Any = None
    quality: Any = None
    pii: Any = None
    dedup: Any = None  # curate.dedup.DedupConfig when "dedup" is a step
    inspect: Any = None  # curate.inspection.collect.InspectConfig: what OUT/inspect.json records
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
        if "normalize" in on:
            from curate.steps.normalize import NormalizeConfig

            cfg.normalize = typed(NormalizeConfig, "curate.normalize")
        if "decontam" in on:
            from curate.steps.decontam import DecontamConfig

            cfg.decontam = typed(DecontamConfig, "decontam")
        if "langid" in on:
            from curate.steps.langid import LangIdConfig

            cfg.langid = typed(LangIdConfig, "curate.langid")
        if "filters" in on:
            from curate.steps.filters import FilterConfig

            cfg.filters = typed(FilterConfig, "curate.filters")
        if "toxicity" in on:
            from curate.steps.toxicity import ToxicityConfig

            cfg.toxicity = typed(ToxicityConfig, "toxicity")
        if "quality" in on and engine.quality_models_dir:
            cfg.quality = typed(_step_config("quality", "QualityConfig"), "quality")
        if "pii" in on:
            cfg.pii = typed(_step_config("pii", "PIIConfig"), "pii")
        if "dedup" in on:
            from curate.dedup import DedupConfig

            cfg.dedup = typed(DedupConfig, "dedup")
        return cfg


def _step_config(step: str, name: str) -> type:
    """The config class ``name`` of ``curate.steps.<step>``, whose import needs optional packages
    (fastText/KenLM, presidio): a clear error naming the step when they are missing."""
    import importlib

    try:
        return getattr(importlib.import_module(f"curate.steps.{step}"), name)
    except ImportError as exc:
        raise ConfigError(f"step {step!r} is enabled but curate.steps.{step} cannot be imported ({exc}); "
                          "remove it from curate.engine.steps") from exc


def build_steps(chain: ChainConfig, *, stage: str = "a") -> list[CurationStep]:
    """The per-document steps of stage ``a`` (before dedup) or ``b`` (after dedup)."""
    if stage not in ("a", "b"):
        raise ValueError(f"stage must be 'a' or 'b', got {stage!r}")
    steps: list[CurationStep] = []
    if stage == "b":
        if chain.pii is not None:
            from curate.steps.pii import PIIRedactor

            steps.append(PIIRedactor(chain.pii))
        return steps
    if chain.normalize is not None:
        from curate.steps.normalize import Normalizer

        steps.append(Normalizer(chain.normalize))
    if chain.decontam is not None:  # right after normalisation: every planted copy is judged, before other drops
        from curate.steps.decontam import Decontaminator

        steps.append(Decontaminator(chain.decontam))
    if chain.langid is not None:
        from curate.steps.langid import LanguageFilter, LanguageID

        steps += [LanguageID(chain.langid), LanguageFilter(chain.langid)]
    if chain.filters is not None:
        from curate.steps.filters import make_filter

        steps.append(make_filter(chain.filters))
    if chain.toxicity is not None:
        from curate.steps.toxicity import toxicity_steps

        steps += toxicity_steps(chain.toxicity)
    if chain.quality is not None:
        from curate.steps.quality import quality_filters, quality_scorers

        models = chain.engine.quality_models_dir
        if not Path(models).is_dir():
            raise ConfigError(f"curate.engine.quality_models_dir {models!r} does not exist; "
                              "train the models first or set it to ''")
        steps += quality_scorers(models, chain.quality) + quality_filters(chain.quality)
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
