"""Model files of the Spark curation engine: found in the steps, shipped to executors, loaded once.

Steps name their model files by path (fastText language ID and quality, KenLM, the decontamination
index). On the driver, :func:`ship_model_files` finds every attribute of the steps (two levels deep)
that names an existing file with a model suffix and adds it with ``SparkContext.addFile``. On an
executor, :func:`process_steps` unpickles the broadcast steps ONCE per Python process (a cache
keyed by the chain's hash, so a reused Python worker keeps its lazily loaded models from one task to
the next) and :func:`localise_model_paths` points those attributes at the local ``SparkFiles`` copy:
steps never know where they run.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Iterator, Sequence
from pathlib import Path, PurePath
from typing import Any

from corpusmix.logging import get_logger

log = get_logger("curate.spark")

#: file suffixes of models that are shipped to executors when a step attribute names such a file
#: (``.bin`` also covers the decontamination step's n-gram index: shipped as a file, memory-mapped
#: by each executor, instead of riding in the broadcast pickle of the steps)
MODEL_SUFFIXES = (".ftz", ".bin", ".arpa", ".klm", ".binary", ".model", ".json")

# chains unpickled in this Python process, keyed by the hash of their pickle: a reused Spark Python
# worker keeps its steps (and their lazily loaded models) from one task to the next.
_PROCESS_CHAINS: dict[str, list[Any]] = {}


def _walk_values(obj: Any, depth: int = 0) -> Iterator[tuple[Any, str, Any]]:
    """(owner, attribute, value) for attributes of step objects, two levels deep."""
    if depth > 2 or not hasattr(obj, "__dict__"):
        return
    for name, value in list(vars(obj).items()):
        yield obj, name, value
        if hasattr(value, "__dict__") and not isinstance(value, type) and value.__class__.__module__.split(".")[0] in (
                "curate", "datatrove", "corpusmix"):
            yield from _walk_values(value, depth + 1)


def find_model_files(steps: Sequence[Any]) -> list[str]:
    """Absolute paths of model files that step attributes name (shipped to executors as Spark files)."""
    found: list[str] = []
    for step in steps:
        for _, _, value in _walk_values(step):
            if isinstance(value, str | PurePath) and str(value).lower().endswith(MODEL_SUFFIXES):
                p = Path(value)
                if p.is_file() and str(p.resolve()) not in found:
                    found.append(str(p.resolve()))
    return found


def localise_model_paths(steps: Sequence[Any], shipped: dict[str, str]) -> int:
    """On an executor: point step attributes that name a shipped model at its local SparkFiles copy."""
    if not shipped:
        return 0
    from pyspark import SparkFiles

    changed = 0
    for step in steps:
        for owner, name, value in _walk_values(step):
            if isinstance(value, str | PurePath):
                key = str(Path(value).resolve()) if str(value) else ""
                if key in shipped:
                    local = SparkFiles.get(shipped[key])
                    if os.path.exists(local):
                        setattr(owner, name, type(value)(local) if isinstance(value, PurePath) else local)
                        changed += 1
    return changed


def process_steps(key: str, blob: bytes, shipped: dict[str, str]) -> list[Any]:
    """On an executor: the chain's steps, unpickled once per Python process, models localised."""
    steps = _PROCESS_CHAINS.get(key)
    if steps is None:
        steps = pickle.loads(blob)
        localise_model_paths(steps, shipped)
        _PROCESS_CHAINS[key] = steps
    return steps


def ship_model_files(sc: Any, steps: Sequence[Any], extra: Sequence[str] = ()) -> dict[str, str]:
    """Add the model files the steps name (and ``extra``) to ``sc``; ``{absolute path: shipped name}``."""
    files = list(dict.fromkeys([*find_model_files(steps), *[str(Path(f).resolve()) if "://" not in f else f
                                                          for f in extra]]))
    shipped: dict[str, str] = {}
    already = set(_added_files(sc))
    for f in files:
        base = os.path.basename(f)
        if base in shipped.values() and shipped.get(f) != base:
            raise ValueError(f"two model files share the name {base!r}; rename one so executors can tell them apart")
        if base not in already:
            sc.addFile(f)
        shipped[f] = base
    if shipped:
        log.info("shipping model files to executors", extra={"data": {"files": sorted(shipped)}})
    return shipped


def _added_files(sc: Any) -> list[str]:
    """Names of the files already added (``--files`` / ``spark.files``, earlier runs)."""
    names = [os.path.basename(str(k)) for k in (getattr(sc, "listFiles", None) or [])]
    names += [os.path.basename(f) for f in (sc.getConf().get("spark.files", "") or "").split(",") if f]
    return names
