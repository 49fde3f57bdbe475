"""Named pause points for the kill tests: ``CORPUSMIX_PHASE_HOLD=name=seconds[,name=seconds]``.

A few steps of a run last milliseconds on small inputs (the clean-up of a curation run, the rename
of a packed shard, the rename of a checkpoint folder): a test that kills a run when it sees such a
step begin can miss it on a busy machine, and then proves nothing about that step. ``hold(name)``
sleeps for the seconds the variable gives ``name`` (nothing when it is unset, the normal case). It
only ever slows a run down; it never changes what the run writes.
"""

from __future__ import annotations

import os
import time

from corpusmix.logging import get_logger

ENV = "CORPUSMIX_PHASE_HOLD"
log = get_logger("corpusmix.holds")


def hold_seconds(name: str, spec: str | None = None) -> float:
    """Seconds ``name`` is held under ``spec`` (default: the environment variable); 0 when absent."""
    spec = os.environ.get(ENV, "") if spec is None else spec
    for item in spec.split(","):
        key, sep, seconds = item.rpartition("=")
        if sep and key.strip() == name:
            try:
                return max(0.0, float(seconds))
            except ValueError:
                log.warning(f"{ENV}: not a number of seconds", extra={"data": {"item": item}})
    return 0.0


def hold(name: str) -> None:
    """Pause at the point ``name`` when ``CORPUSMIX_PHASE_HOLD`` asks for it (module docstring)."""
    seconds = hold_seconds(name)
    if seconds > 0:
        log.info("held", extra={"data": {"point": name, "seconds": seconds}})
        time.sleep(seconds)
