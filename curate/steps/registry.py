"""The curation steps' registry: each step declares itself in its own module.

A step module calls :func:`register` (or decorates its step class with :func:`step`) at import
time with the step's name, config type, ``params.yaml`` section, stage and order, and how its
objects are built. ``curate.chain`` builds the chain from :func:`specs`, which imports once every
module of ``curate.steps`` that imports this one, so adding a step is adding a module there (and
its params section). Calibration hooks are methods of the step's classes (``fit``,
``set_calibration``, ``calibration_key``), defined in its module; ``curate.calibrate`` calls them
on the built steps. See docs/curation.md ("Adding a step").
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: ``a``: per-document, before the global dedup; ``dedup``: the global dedup itself (run by the
#: engines); ``b``: per-document, after it
STAGES = ("a", "dedup", "b")


@dataclass(frozen=True)
class StepSpec:
    """One step of the chain.

    ``build(config, chain)`` returns the step's objects (``None`` for the global dedup, which the
    engines run); ``enabled(engine_config)`` says whether an enabled step is configured at all
    (``None``: always); ``module`` is the module that registered it."""

    name: str
    config: type
    section: str
    stage: str
    order: int
    build: Callable[[Any, Any], list[Any]] | None = None
    enabled: Callable[[Any], bool] | None = None
    module: str = ""


STEPS: dict[str, StepSpec] = {}
#: step modules whose import failed: module short name -> the error (an enabled step of that name
#: is then a clear ConfigError, a disabled one costs nothing)
BROKEN: dict[str, ImportError] = {}
_discovered = False


def register(spec: StepSpec) -> StepSpec:
    """Add ``spec``; a name registered by another module is an error (the same module may re-register)."""
    if spec.stage not in STAGES:
        raise ValueError(f"step {spec.name!r}: stage must be one of {STAGES}, got {spec.stage!r}")
    old = STEPS.get(spec.name)
    if old is not None and old.module != spec.module:
        raise ValueError(f"step {spec.name!r} is registered by {old.module} and {spec.module}")
    STEPS[spec.name] = spec
    return spec


def step(name: str, *, config: type, section: str, order: int, stage: str = "a") -> Callable[[type], type]:
    """Class decorator: register the decorated step class, built as ``[cls(config)]``."""

    def add(cls: type) -> type:
        register(StepSpec(name=name, config=config, section=section, stage=stage, order=order,
                          build=lambda cfg, chain: [cls(cfg)], module=cls.__module__))
        return cls

    return add


def discover() -> None:
    """Import, once, every module of ``curate.steps`` that names this registry (the step modules;
    the others, helpers with heavy imports such as presidio's recognizers, are left alone)."""
    global _discovered
    if _discovered:
        return
    _discovered = True
    import curate.steps as pkg

    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
        if info.name == "registry" or info.ispkg:
            continue
        # the source through the module's loader: a folder or a zip shipped with --py-files alike
        name = f"{pkg.__name__}.{info.name}"
        source = info.module_finder.find_spec(name).loader.get_source(name)  # type: ignore[union-attr,call-arg]
        if not source or __name__ not in source:
            continue
        try:
            importlib.import_module(f"{pkg.__name__}.{info.name}")
        except ImportError as exc:
            BROKEN[info.name] = exc


def specs() -> list[StepSpec]:
    """Every registered step, in chain order."""
    discover()
    return sorted(STEPS.values(), key=lambda s: (s.order, s.name))


def names() -> tuple[str, ...]:
    """The registered step names, in chain order."""
    return tuple(s.name for s in specs())
