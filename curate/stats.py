"""Per-step curation statistics (docs/formats.md "Curation stats"), metering of step generators.

``StepStats`` counts ``docs_in``, ``bytes_in``, ``kept``, ``dropped`` by reason and ``seconds`` of
one step in one task; ``meter`` wraps a datatrove step's ``run`` so that the counts come from the
documents that really flow (and the step's own exclusion writer for drops). ``merge_stats`` adds up
the per-task JSON files into ``stats.json``, checking the conservation invariant
``docs_in == kept + dropped`` for every step.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from datatrove.data import Document


@dataclass
class StepStats:
    docs_in: int = 0
    bytes_in: int = 0
    kept: int = 0
    dropped: Counter = field(default_factory=Counter)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"docs_in": self.docs_in, "bytes_in": self.bytes_in, "kept": self.kept,
                "dropped": dict(sorted(self.dropped.items())), "seconds": round(self.seconds, 4)}

    def check(self, step: str) -> None:
        if self.docs_in != self.kept + sum(self.dropped.values()):
            raise AssertionError(f"step {step!r}: docs_in={self.docs_in} != kept={self.kept} + "
                                 f"dropped={sum(self.dropped.values())}")


class DropSink:
    """Collects ``(id, step, reason, domain)`` rows of one task."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, str, str, str]] = []

    def add(self, doc_id: str, step: str, reason: str, domain: str | None) -> None:
        self.rows.append((str(doc_id), step, reason, domain or "unknown"))


class StepDrops:
    """A datatrove exclusion writer (duck-typed) that records drops in a sink and the step's stats."""

    def __init__(self, step: str, stats: StepStats, sink: DropSink) -> None:
        self.step, self.stats, self.sink = step, stats, sink

    def __enter__(self) -> StepDrops:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def write(self, doc: Document, rank: int = 0, **_: Any) -> None:
        reason = doc.metadata.pop("filter_reason", None) or "unspecified"
        self.stats.dropped[reason] += 1
        self.sink.add(doc.id, self.step, reason, doc.metadata.get("domain"))


def meter(step: Any, upstream: Iterable[Document], stats: StepStats, sink: DropSink, *,
          rank: int = 0, world_size: int = 1) -> Iterator[Document]:
    """Run a datatrove filter step over ``upstream``, counting in/out/drops and its own seconds."""
    up_time = [0.0]

    def feed() -> Iterator[Document]:
        it = iter(upstream)
        while True:
            t0 = time.perf_counter()
            doc = next(it, None)
            up_time[0] += time.perf_counter() - t0
            if doc is None:
                return
            stats.docs_in += 1
            stats.bytes_in += len(doc.text.encode("utf-8"))
            yield doc

    step.exclusion_writer = StepDrops(step.step_name, stats, sink)
    gen = step.run(feed(), rank, world_size)
    while True:
        t0 = time.perf_counter()
        u0 = up_time[0]
        doc = next(gen, None)
        stats.seconds += (time.perf_counter() - t0) - (up_time[0] - u0)
        if doc is None:
            return
        stats.kept += 1
        yield doc


def write_task_stats(path: Path, stats: dict[str, StepStats]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({k: v.to_dict() for k, v in stats.items()}))
    tmp.replace(path)


def merge_stats(files: list[Path], order: list[str] | None = None) -> dict[str, dict[str, Any]]:
    """Sum per-task stats files (step -> counts); steps follow ``order`` then first appearance."""
    total: dict[str, StepStats] = {}
    for f in files:
        for step, d in json.loads(Path(f).read_text()).items():
            s = total.setdefault(step, StepStats())
            s.docs_in += d["docs_in"]
            s.bytes_in += d["bytes_in"]
            s.kept += d["kept"]
            s.dropped.update(d["dropped"])
            s.seconds += d["seconds"]
    keys = [k for k in (order or []) if k in total] + [k for k in total if k not in (order or [])]
    for k in keys:
        total[k].check(k)
    return {k: total[k].to_dict() for k in keys}


def stats_document(steps: dict[str, dict[str, Any]], *, kept: int) -> dict[str, Any]:
    """The ``stats.json`` document: per-step counts plus totals (docs_in of the first step)."""
    first = next(iter(steps.values()), {"docs_in": 0})
    dropped = sum(sum(s["dropped"].values()) for s in steps.values())
    return {"steps": steps, "totals": {"docs_in": first["docs_in"], "kept": kept, "dropped": dropped}}
