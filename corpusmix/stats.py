"""The curation statistics contract (``stats.json``, a DVC metric; docs/formats.md "Curation stats").

One type, :class:`StepStats`, counts what one step saw in one unit of work (a datatrove task, a
Spark partition, a single-step command): ``docs_in``, ``bytes_in`` (UTF-8 bytes of the text the step
received), ``kept``, ``dropped`` by reason and ``seconds``. Units are summed with
:func:`merge_stats`, which checks the conservation invariant ``docs_in == kept + dropped`` of every
step, and :func:`stats_document` turns the sum into the ``stats.json`` document::

    {"steps": {step: {"docs_in", "bytes_in", "kept", "dropped": {reason: n}, "seconds"}, ...},
     "totals": {"docs_in": <docs_in of the first step>, "kept": <documents written>, "dropped": <all drops>}}

Engines may add entries next to ``steps`` and ``totals`` (``guard``, ``domains``, ``engine``).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: the counters of one step, in the order stats.json lists them
FIELDS = ("docs_in", "bytes_in", "kept", "dropped", "seconds")


class StatsError(AssertionError):
    """Statistics that do not add up: a bug in an engine or a step, never a user error."""


@dataclass
class StepStats:
    """What one step saw in one unit of work; ``add`` sums units."""

    docs_in: int = 0
    bytes_in: int = 0
    kept: int = 0
    dropped: Counter = field(default_factory=Counter)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"docs_in": self.docs_in, "bytes_in": self.bytes_in, "kept": self.kept,
                "dropped": dict(sorted(self.dropped.items())), "seconds": round(self.seconds, 4)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> StepStats:
        return cls(docs_in=int(d["docs_in"]), bytes_in=int(d["bytes_in"]), kept=int(d["kept"]),
                   dropped=Counter({str(k): int(v) for k, v in d["dropped"].items()}),
                   seconds=float(d["seconds"]))

    def add(self, other: StepStats) -> None:
        self.docs_in += other.docs_in
        self.bytes_in += other.bytes_in
        self.kept += other.kept
        self.dropped.update(other.dropped)
        self.seconds += other.seconds

    def check(self, step: str) -> None:
        """Raise :class:`StatsError` unless ``docs_in == kept + dropped``."""
        if self.docs_in != self.kept + sum(self.dropped.values()):
            raise StatsError(f"step {step!r}: docs_in={self.docs_in} != kept={self.kept} + "
                             f"dropped={sum(self.dropped.values())}")


def merge_stats(parts: Iterable[Mapping[str, StepStats | Mapping[str, Any]]],
                order: Iterable[str] = ()) -> dict[str, dict[str, Any]]:
    """Sum per-unit statistics (step -> counts); checked, as plain dicts for ``stats.json``.

    Steps named in ``order`` come first, in that order (with zero counts when no unit reported
    them), then the other steps in order of first appearance.
    """
    order = list(order)
    total: dict[str, StepStats] = {name: StepStats() for name in order}
    for part in parts:
        for name, st in part.items():
            total.setdefault(name, StepStats()).add(st if isinstance(st, StepStats) else StepStats.from_dict(st))
    for name, st in total.items():
        st.check(name)
    return {name: st.to_dict() for name, st in total.items()}


def stats_document(steps: dict[str, dict[str, Any]], *, kept: int) -> dict[str, Any]:
    """The ``stats.json`` document: per-step counts plus totals (``docs_in`` of the first step)."""
    first = next(iter(steps.values()), {"docs_in": 0})
    dropped = sum(sum(s["dropped"].values()) for s in steps.values())
    return {"steps": steps, "totals": {"docs_in": first["docs_in"], "kept": kept, "dropped": dropped}}


def write_stats(path: str | Path, stats: Mapping[str, StepStats]) -> None:
    """One unit's statistics as JSON (written under a temporary name, then renamed)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({k: v.to_dict() for k, v in stats.items()}))
    tmp.replace(path)


def read_stats(path: str | Path) -> dict[str, StepStats]:
    """A file written by :func:`write_stats`."""
    return {k: StepStats.from_dict(v) for k, v in json.loads(Path(path).read_text()).items()}
