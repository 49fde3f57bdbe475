"""Wall-clock values out of DVC outputs: a document's timing fields go to an untracked sidecar.

DVC hashes an output's bytes, so an output must be a pure function of the stage's inputs and params:
the same on every run and machine. Seconds, rates and phase times are still worth keeping, beside the
output: :func:`write_json` writes ``name.json`` without them and ``name.timing.json`` (no stage tracks
it) with them, under the same nesting. Same naming as ``corpusmix.mixture.timing_path``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from corpusmix.mixture import timing_path

# keys whose values are wall-clock measurements wherever they appear in a document
TIMING_KEYS = ("seconds", "created", "phases", "tokens_per_s", "build_s")


def split(doc: Any, keys: Iterable[str] = TIMING_KEYS) -> tuple[Any, Any]:
    """``(doc without the timing keys, {the same path: value} of what was removed or None)``."""
    keys = tuple(keys)
    if not isinstance(doc, dict):
        return doc, None
    pure: dict[str, Any] = {}
    removed: dict[str, Any] = {}
    for k, v in doc.items():
        if k in keys:
            removed[k] = v
            continue
        p, r = split(v, keys)
        pure[k] = p
        if r:
            removed[k] = r
    return pure, removed or None


def write_json(path: str | Path, doc: dict[str, Any], *, keys: Iterable[str] = TIMING_KEYS, indent: int = 2
               ) -> dict[str, Any]:
    """Write ``path`` without the timing keys and its ``.timing.json`` sidecar with them (atomically,
    each under a temporary name then renamed); returns the pure document."""
    path = Path(path)
    pure, removed = split(doc, keys)
    path.parent.mkdir(parents=True, exist_ok=True)
    for target, data in ((path, pure), (timing_path(path), removed)):
        if data is None:
            continue
        tmp = target.with_name(f".{target.name}.tmp{os.getpid()}")
        tmp.write_text(json.dumps(data, indent=indent, default=str) + "\n")
        tmp.replace(target)
    return pure
