"""Benchmark: what recording the inspection data costs a curation run (``curate.inspect.enabled``).

    python bench/bench_inspect_overhead.py --input data/raw/docs [--params params.yaml] [--repeats 3]

Runs ``corpusmix curate run`` (local engine, the params' chain, ``workers`` 1, no quality models)
on the same input with ``curate.inspect.enabled`` true and false, alternating, ``--repeats`` times
each, in fresh output folders; reports per run the CPU seconds of the whole process tree (this
process and its children) and wall seconds, the median of each arm, the ratio, and the size of
``inspect.json``. The decisions of both arms must be identical (checked: same ``stats.json``
counts). Results go to ``bench/out/bench_inspect_overhead.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import harness
import yaml

ROOT = Path(__file__).resolve().parents[1]


def one_run(inp: str, params: dict, enabled: bool, tmp: Path, k: int) -> dict:
    p = json.loads(json.dumps(params))
    p.setdefault("curate", {}).setdefault("inspect", {})["enabled"] = enabled
    p["curate"].setdefault("engine", {}).update(quality_models_dir="", workers=1)
    pfile = tmp / f"params-{enabled}-{k}.yaml"
    pfile.write_text(yaml.safe_dump(p))
    out = tmp / f"out-{enabled}-{k}"
    c0, t0 = harness.cpu_all(), time.perf_counter()
    subprocess.run([sys.executable, "-m", "corpusmix", "curate", "run", "--input", inp, "--output", str(out),
                    "--params", str(pfile)], check=True, cwd=ROOT, capture_output=True)
    cpu, wall = harness.cpu_all() - c0, time.perf_counter() - t0
    stats = json.loads((out / "stats.json").read_text())
    counts = {s: {k: v for k, v in st.items() if k != "seconds"} for s, st in stats["steps"].items()}
    size = (out / "inspect.json").stat().st_size if (out / "inspect.json").exists() else 0
    return {"enabled": enabled, "cpu_s": round(cpu, 3), "wall_s": round(wall, 3), "inspect_bytes": size,
            "counts": counts}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--input", required=True)
    ap.add_argument("--params", default=str(ROOT / "params.yaml"))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--output", default=str(ROOT / "bench" / "out" / "bench_inspect_overhead.json"))
    a = ap.parse_args()
    params = yaml.safe_load(Path(a.params).read_text())
    runs = []
    with tempfile.TemporaryDirectory() as d:
        for k in range(a.repeats):
            for enabled in harness.order(k, (True, False)):  # alternate which arm goes first
                runs.append(one_run(a.input, params, enabled, Path(d), k))
    on = [r for r in runs if r["enabled"]]
    off = [r for r in runs if not r["enabled"]]
    if any(r["counts"] != off[0]["counts"] for r in runs):
        raise SystemExit("the arms decided differently: inspection must only observe")
    res = {"input": a.input, "repeats": a.repeats,
           "cpu_s_median": {"on": statistics.median(r["cpu_s"] for r in on), "off": statistics.median(r["cpu_s"] for r in off)},
           "wall_s_median": {"on": statistics.median(r["wall_s"] for r in on), "off": statistics.median(r["wall_s"] for r in off)},
           "inspect_bytes": on[0]["inspect_bytes"],
           "runs": [{k: v for k, v in r.items() if k != "counts"} for r in runs]}
    res["cpu_ratio"] = round(res["cpu_s_median"]["on"] / res["cpu_s_median"]["off"], 4)
    harness.write_record("inspect_overhead", res, a.output)
    print(json.dumps({k: v for k, v in res.items() if k != "runs"}))


if __name__ == "__main__":
    main()
