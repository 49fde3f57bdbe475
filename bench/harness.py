"""What every bench measures the same way: wall and CPU seconds of a callable or a child command, the
load average before and after, base and ours alternated in rounds, and the record of a run (the
commit, package versions, the machine) written as JSON plus one Markdown table row.

Benches run as ``python bench/<name>.py`` from the repository root with the package installed
(bench/README.md); this module is imported as ``harness``.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("corpusmix", "numpy", "pyarrow", "torch", "datatrove")
OUT = ROOT / "bench" / "out"  # where records go unless a bench is told otherwise


def loadavg() -> tuple[float, float, float]:
    """The 1, 5 and 15 minute load averages."""
    return os.getloadavg()


def load1() -> float:
    """The 1 minute load average."""
    return os.getloadavg()[0]


def cpu_seconds(who: int = resource.RUSAGE_CHILDREN) -> float:
    """User + system CPU seconds of ``who`` (``RUSAGE_CHILDREN``: the reaped child processes; ``RUSAGE_SELF``)."""
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


def cpu_all() -> float:
    """CPU seconds of this process plus its reaped children."""
    return cpu_seconds(resource.RUSAGE_SELF) + cpu_seconds(resource.RUSAGE_CHILDREN)


@contextmanager
def measured() -> Iterator[dict[str, Any]]:
    """A dict filled when the block ends: ``wall_s``, ``cpu_s_self``, ``cpu_s_children`` (reaped children
    only), ``cpu_s`` (both) and ``loadavg_start`` / ``loadavg_end``."""
    m: dict[str, Any] = {"loadavg_start": loadavg()}
    s0, c0 = cpu_seconds(resource.RUSAGE_SELF), cpu_seconds(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    try:
        yield m
    finally:
        m["wall_s"] = time.perf_counter() - t0
        m["cpu_s_self"] = cpu_seconds(resource.RUSAGE_SELF) - s0
        m["cpu_s_children"] = cpu_seconds(resource.RUSAGE_CHILDREN) - c0
        m["cpu_s"] = m["cpu_s_self"] + m["cpu_s_children"]
        m["loadavg_end"] = loadavg()


def timed(fn: Callable[[], Any]) -> tuple[Any, dict[str, Any]]:
    """``fn()`` and its measures (``measured``)."""
    with measured() as m:
        out = fn()
    return out, m


def run_child(cmd: Sequence[str], **kwargs: Any) -> tuple[subprocess.CompletedProcess, dict[str, Any]]:
    """``subprocess.run(cmd, **kwargs)`` and its measures; ``cpu_s_children`` is the child's CPU seconds."""
    with measured() as m:
        proc = subprocess.run(list(cmd), **kwargs)
    return proc, m


def order(r: int, names: Sequence[str]) -> tuple[str, ...]:
    """The variants' order in round ``r``: as given in even rounds, reversed in odd ones (the machine is
    shared and its speed drifts, so neither variant always runs first)."""
    return tuple(names) if r % 2 == 0 else tuple(reversed(names))


def rotate(r: int, names: Sequence[str]) -> list[str]:
    """The variants' order in round ``r`` when there are more than two: shifted by ``r``, so each goes first
    in turn."""
    k = r % len(names)
    return list(names[k:]) + list(names[:k])


def alternate(rounds: int, variants: Mapping[str, Callable[[], Any]],
              on_run: Callable[[dict[str, Any]], None] | None = None) -> list[dict[str, Any]]:
    """Each variant once per round, in ``order``; a row per run: ``round``, ``variant``, ``result`` (what
    the callable returned) and the measures. ``on_run`` sees each row as it is made."""
    rows = []
    for r in range(rounds):
        for name in order(r, list(variants)):
            out, m = timed(variants[name])
            rows.append({"round": r, "variant": name, "result": out, **m})
            if on_run is not None:
                on_run(rows[-1])
    return rows


def commit(tree: Path = ROOT) -> str:
    """``git rev-parse --short HEAD`` of ``tree``, ``+dirty`` when it has changes; ``unknown`` outside git."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=tree, capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=tree,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def versions(packages: Sequence[str] = PACKAGES) -> dict[str, str]:
    """Installed versions of ``packages`` (those not installed are left out)."""
    out = {}
    for p in packages:
        try:
            out[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            pass
    return out


def environment(packages: Sequence[str] = PACKAGES) -> dict[str, Any]:
    """Where a run ran: commit, python, package versions, machine, CPU count."""
    return {"commit": commit(), "python": platform.python_version(), "versions": versions(packages),
            "machine": platform.node(), "cpus": os.cpu_count()}


def markdown_row(cells: Sequence[Any]) -> str:
    """One Markdown table row: ``| a | b |``."""
    return "| " + " | ".join(str(c) for c in cells) + " |"


def summary_row(bench: str, env: Mapping[str, Any], result: Mapping[str, Any], limit: int = 6) -> list[str]:
    """Cells of a bench's default table row: its name, the commit, the UTC date and up to ``limit`` of the
    result's top-level numbers and strings as ``key=value``."""
    scalars = [f"{k}={v}" for k, v in result.items() if isinstance(v, (int, float, str)) and not isinstance(v, bool)]
    return [bench, env["commit"], time.strftime("%Y-%m-%d", time.gmtime()), ", ".join(scalars[:limit])]


def write_record(bench: str, result: Mapping[str, Any], out: str | Path | None = None,
                 row: Sequence[Any] | None = None, packages: Sequence[str] = PACKAGES) -> dict[str, Any]:
    """The record of a run, ``{"bench", "env", "result"}``, written as JSON to ``out`` (when given), and one
    Markdown table row printed to stderr: ``row``, or ``summary_row`` when none is given. Returns the record."""
    record = {"bench": bench, "env": environment(packages), "result": dict(result)}
    if out is not None:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(json.dumps(record, indent=1, default=str, ensure_ascii=False) + "\n")
    print(markdown_row(row if row is not None else summary_row(bench, record["env"], result)), file=sys.stderr)
    return record


def emit(bench: str, result: Mapping[str, Any], *, indent: int | None = None,
         out: str | Path | None = None) -> dict[str, Any]:
    """Print ``result`` as JSON on stdout, then ``write_record`` it to ``out`` (default
    ``bench/out/bench_<bench>.json``)."""
    print(json.dumps(result, indent=indent), flush=True)
    return write_record(bench, result, out if out is not None else OUT / f"bench_{bench}.json")
