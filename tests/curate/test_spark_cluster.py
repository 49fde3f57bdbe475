"""A real Spark standalone cluster on loopback: master + 2 workers, the curation job via spark-submit.

Slow (a JVM master, two worker JVMs, a driver and executors). The cluster is stopped in the
context manager's ``finally`` whatever happens, and every wait is bounded.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zlib
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

pytest.importorskip("pyspark")

from corpusmix.procs import pid_alive  # noqa: E402
from curate import native  # noqa: E402
from curate.demo.data import DemoDataConfig, build_demo_data  # noqa: E402
from curate.spark.cluster import standalone_cluster  # noqa: E402
from curate.spark.submit import build_zip, ship_native, submit_argv  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("java") is None and not os.environ.get("JAVA_HOME"),
                                 reason="Spark needs Java (scripts/system-deps.sh installs it)")]


def test_curation_job_on_standalone_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPARK_LOCAL_IP", "127.0.0.1")
    full = tmp_path / "demo"
    build_demo_data(DemoDataConfig(source_dir=str(ROOT / "data/demo"), output=str(full)))
    # every 12th duplicate cluster with all its copies (~630 documents): bounded time on 2 cores
    cluster_of = {r["id"]: r["dup_cluster"] for r in pq.read_table(full / "ground_truth.parquet").to_pylist()}
    table = pq.read_table(full / "docs")
    table = table.filter(pa.array([zlib.crc32(cluster_of[i].encode()) % 12 == 0
                                   for i in table.column("id").to_pylist()]))
    raw = tmp_path / "raw"
    (raw / "docs").mkdir(parents=True)
    half = table.num_rows // 2 + 1
    for k in range(2):
        pq.write_table(table.slice(k * half, half), raw / "docs" / f"part-{k}.parquet", row_group_size=100)
    zip_path = build_zip(tmp_path / "dist" / "corpusmix.zip")
    # the compiled kernels travel beside the zip (an extension cannot be imported from it)
    shipped = ship_native(tmp_path / "dist")
    assert shipped is not None and shipped.name == native.SHIPPED, "the install builds curate._native"
    # the job runs from an empty folder: relative paths in params.yaml (the evaluation sets of
    # decontam) are made absolute, as a user submitting from elsewhere would write them
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["decontam"]["eval_sets"] = [str(ROOT / e) for e in params["decontam"]["eval_sets"]]
    params_path = tmp_path / "params.yaml"
    params_path.write_text(yaml.safe_dump(params))
    out = tmp_path / "out"
    pids: list[int] = []
    with standalone_cluster(workers=2, cores=1, memory="768m", root=tmp_path / "cluster") as cluster:
        status = cluster.status()
        assert status["aliveworkers"] == 2 and status["cores"] == 2
        pids = [int(p.read_text()) for p in (cluster.root / "pids").glob("*.pid")]
        assert len(pids) == 3
        argv = submit_argv(
            master=cluster.master_url, inputs=[str(raw / "docs")], output=str(out), py_files=zip_path,
            files=[ROOT / "curate/models/lid.176.ftz", shipped], params=params_path,
            conf={"spark.executor.memory": "512m", "spark.driver.memory": "1g", "spark.ui.enabled": "false",
                  "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"})
        assert argv[1:3] == ["--master", cluster.master_url] and argv[-2:] == ["--params", str(params_path)]
        # run from an empty folder: the job may only use what --py-files / --files ship
        res = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=600,
                             env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
        # spark-submit forwards the Python driver's stdout and stderr to its stdout
        assert res.returncode == 0, f"spark-submit failed:\n{res.stdout[-6000:]}\n{res.stderr[-3000:]}"
        apps = cluster.status()["completedapps"]
        assert len(apps) == 1 and apps[0]["state"] == "FINISHED", apps
    assert not any(pid_alive(p) for p in pids), "the master and workers are stopped"

    docs = pq.read_table(raw / "docs").to_pylist()
    ids = {d["id"] for d in docs}
    kept = {}
    for folder in (out / "curated").glob("*.parquet"):
        for row in pq.read_table(folder).to_pylist():
            kept[row["id"]] = row
    drops = pq.read_table(out / "drops.parquet").to_pylist()
    stats = json.loads((out / "stats.json").read_text())
    assert stats["engine"]["master"] == "spark://127.0.0.1:" + cluster.master_url.rsplit(":", 1)[1]
    # every partition of both stages ran the compiled kernels of the file shipped beside the zip
    kernels = stats["engine"]["kernels"]
    assert set(kernels) == {"shipped"} and kernels["shipped"] >= 2, kernels
    assert len(drops) == len({d["id"] for d in drops}), "one (step, reason) per dropped document"
    assert set(kept) | {d["id"] for d in drops} == ids and not set(kept) & {d["id"] for d in drops}
    assert stats["totals"] == {"docs_in": len(ids), "kept": len(kept), "dropped": len(drops)}
    for name, st in stats["steps"].items():
        assert st["docs_in"] == st["kept"] + sum(st["dropped"].values()), name
        assert st["dropped"] == _count(drops, name)
    assert 0 < len(kept) < len(ids)
    assert stats["steps"]["dedup"]["dropped"], "the slice holds duplicates and dedup ran on the cluster"
    copies = [(g["id"], g["dup_cluster"]) for g in pq.read_table(full / "ground_truth.parquet").to_pylist()
              if "exact_dup" in g["defects"] and g["id"] in ids]
    assert copies and not [c for c in copies if c[0] in kept and c[1] in kept], \
        "a planted exact copy and its original are never both kept"
    print(json.dumps(stats["totals"]), file=sys.stderr)


def _count(drops: list[dict], step: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for d in drops:
        if d["step"] == step:
            out[d["reason"]] = out.get(d["reason"], 0) + 1
    return dict(sorted(out.items()))
