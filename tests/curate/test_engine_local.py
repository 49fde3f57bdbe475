"""``corpusmix curate run``: conservation of documents, drops file, stats, resume after a kill."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from corpusmix.config import ConfigError
from curate.chain import EngineConfig
from curate.engine_local import run_local

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "data" / "demo"  # shipped with the repository: these tests never skip

PARAMS = """
curate:
  engine:
    steps: [normalize, langid, filters, dedup]
    tasks: 4
    batch_docs: 7
  filters:
    per_domain:
      code: {gopher_quality: false, c4: false, fineweb: false}
dedup:
  threshold: 0.8
"""


def _make_input(tmp: Path) -> Path:
    inp = tmp / "in"
    inp.mkdir()
    tables = []
    for dom in ("news", "literature", "code", "legal"):
        t = pq.read_table(DEMO / "en" / f"{dom}.parquet", columns=["id", "text", "domain", "source"])
        tables.append(t.filter(pa.compute.less(pa.compute.utf8_length(t.column("text")), 6000)).slice(0, 12))
    de = pq.read_table(DEMO / "foreign" / "de.parquet", columns=["id", "text", "domain", "source"])
    tables.append(de.filter(pa.compute.greater(pa.compute.utf8_length(de.column("text")), 300)).slice(0, 5))
    table = pa.concat_tables(tables)
    # an exact copy under a new id, so that dedup drops something
    copy = table.slice(0, 1).set_column(0, "id", pa.array(["copy-of-first"]))
    pq.write_table(pa.concat_tables([table, copy]), inp / "docs.parquet", row_group_size=10)
    bad = [json.dumps({"id": "j1", "text": table.column("text")[3].as_py(), "domain": "news"}), '{"id": "x", "te',
           json.dumps({"id": "j2", "text": 7}), json.dumps({"id": "j3", "text": ""})]
    (inp / "more.jsonl").write_text("\n".join(bad) + "\n")
    return inp


def _read_run(out: Path) -> tuple[dict, list, dict]:
    curated = {f.name: pq.read_table(f).to_pylist() for f in sorted((out / "curated").glob("*.parquet"))}
    drops = sorted(tuple(r.values()) for r in pq.read_table(out / "drops.parquet").to_pylist())
    stats = json.loads((out / "stats.json").read_text())
    timing = json.loads((out / "stats.timing.json").read_text())  # wall-clock seconds: beside the DVC output
    assert set(timing["steps"]) == set(stats["steps"]) and not any("seconds" in s for s in stats["steps"].values())
    stats.pop("environment")  # the numerics state differs between in-process runs and the CLI's
    return curated, drops, stats


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("engine")
    inp = _make_input(tmp)
    params = tmp / "params.yaml"
    params.write_text(PARAMS)
    out = tmp / "out"
    run_local(inputs=inp, output=out, params_path=str(params))
    return inp, params, out


def test_conservation_and_outputs(clean_run):
    inp, _, out = clean_run
    curated, drops, stats = _read_run(out)
    n_records = pq.read_metadata(inp / "docs.parquet").num_rows + 4
    kept_ids = [r["id"] for rows in curated.values() for r in rows]
    drop_ids = [d[0] for d in drops]
    # every record is either kept or dropped exactly once
    assert len(kept_ids) + len(drop_ids) == n_records
    assert len(set(kept_ids) | set(drop_ids)) == n_records
    for name, s in stats["steps"].items():
        assert s["docs_in"] == s["kept"] + sum(s["dropped"].values()), name
    assert stats["totals"] == {"docs_in": n_records, "kept": len(kept_ids), "dropped": len(drop_ids)}
    steps = list(stats["steps"])
    assert steps == ["read", "normalize", "langid", "langid_filter", "filters", "dedup"]
    # consecutive steps chain: what one keeps the next receives
    for a, b in zip(steps, steps[1:], strict=False):
        assert stats["steps"][a]["kept"] == stats["steps"][b]["docs_in"]
    reasons = {(d[1], d[2]) for d in drops}
    assert {("read", "malformed_json"), ("read", "non_string_text"), ("read", "empty_text"),
            ("dedup", "exact_duplicate"), ("langid_filter", "lang:de")} <= reasons
    # all input columns plus annotations, per domain
    assert set(curated) <= {"news.parquet", "literature.parquet", "code.parquet", "legal.parquet"}
    row = next(iter(curated.values()))[0]
    assert {"id", "text", "domain", "source", "lang", "lang_score", "dup_cluster", "is_duplicate"} <= set(row)
    assert all(r["domain"] + ".parquet" == f for f, rows in curated.items() for r in rows)


def test_kill_then_rerun_equals_uninterrupted(clean_run, tmp_path):
    inp, params, ref_out = clean_run
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "corpusmix.cli", "curate", "run", "--input", str(inp), "--output", str(out),
           "--params", str(params)]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    # its own process group: the kill takes datatrove's worker processes with it, as a crash would
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    marker = out / "work" / "logs" / "a" / "completions" / "00000"
    deadline = time.time() + 240
    while not marker.exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    killed = proc.poll() is None
    if killed:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert killed, "the run finished before it could be killed"
    assert not (out / "stats.json").exists()
    assert marker.exists()  # killed after task 0 finished, before the run completed
    subprocess.run(cmd, cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert _read_run(out) == _read_run(ref_out)


def test_unknown_params_fail_before_work(tmp_path):
    p = tmp_path / "params.yaml"
    # decontam (in the default chain) needs user evaluation sets: leave it out to reach the filters' check
    p.write_text("curate:\n  engine:\n    steps: [normalize, langid, filters]\n  filters:\n    gopher_min_words: 3\n")
    (tmp_path / "d.jsonl").write_text(json.dumps({"id": "a", "text": "hello there"}) + "\n")
    with pytest.raises(ConfigError, match="gopher_min_words"):
        run_local(inputs=tmp_path / "d.jsonl", output=tmp_path / "out", params_path=str(p))
    assert not (tmp_path / "out").exists()
    with pytest.raises(ConfigError, match="unknown step"):
        EngineConfig(steps=["normalize", "spellcheck"])


def test_missing_text_column_fails_before_work(tmp_path):
    pq.write_table(pa.table({"id": ["a"], "body": ["x"]}), tmp_path / "d.parquet")
    with pytest.raises(ConfigError, match="no 'text' column"):
        run_local(inputs=tmp_path / "d.parquet", output=tmp_path / "out", params_path=str(tmp_path / "none.yaml"))


def test_rerun_with_other_params_is_refused(clean_run, tmp_path):
    inp, _, out = clean_run
    p = tmp_path / "p.yaml"
    p.write_text(PARAMS.replace("threshold: 0.8", "threshold: 0.7"))
    with pytest.raises(ConfigError, match="other inputs, params or code"):
        run_local(inputs=inp, output=out, params_path=str(p))


def test_restart_stale_discards_the_work_of_other_params(clean_run, tmp_path):
    """``restart_stale`` (the DVC stage's setting): a params edit starts the run over, with the output
    of a fresh run under the new params; the same params still resume."""
    import shutil

    inp, _, out = clean_run
    stale = tmp_path / "out"
    shutil.copytree(out, stale)
    p = tmp_path / "p.yaml"
    p.write_text(PARAMS.replace("threshold: 0.8", "threshold: 0.7").replace("    tasks: 4\n",
                                                                          "    tasks: 4\n    restart_stale: true\n"))
    doc = run_local(inputs=inp, output=stale, params_path=str(p))
    fresh = run_local(inputs=inp, output=tmp_path / "fresh", params_path=str(p))
    assert doc["totals"] == fresh["totals"]
    assert _read_run(stale)[:2] == _read_run(tmp_path / "fresh")[:2]
    assert not list(stale.glob(".work-trash-*"))
    again = run_local(inputs=inp, output=stale, params_path=str(p))  # same params: resumes, same result
    assert again["totals"] == doc["totals"]


def test_changed_code_is_not_resumed(clean_run, tmp_path, monkeypatch):
    """The fingerprint holds a digest of the package source: after a code change, the finished work of
    the old code is refused (or, with ``restart_stale``, discarded and rerun), never resumed."""
    import shutil

    from corpusmix.environment import source_digest
    from curate import engine_local

    inp, params, out = clean_run
    assert len(source_digest("curate", "corpusmix")) == 16
    assert source_digest("curate", "corpusmix") != source_digest("corpusmix")
    stale = tmp_path / "out"
    shutil.copytree(out, stale)
    p = tmp_path / "p.yaml"
    p.write_text(PARAMS.replace("    tasks: 4\n", "    tasks: 4\n    restart_stale: true\n"))
    (stale / "work" / "old-code-marker").write_text("x")  # any file of the old work
    run_local(inputs=inp, output=stale, params_path=str(p))  # same code: resumed, the old work kept
    assert (stale / "work" / "old-code-marker").exists()
    monkeypatch.setattr(engine_local, "source_digest", lambda *names: "0" * 16)  # other code
    with pytest.raises(ConfigError, match="other inputs, params or code"):
        run_local(inputs=inp, output=stale, params_path=str(params))
    doc = run_local(inputs=inp, output=stale, params_path=str(p))
    assert not (stale / "work" / "old-code-marker").exists()  # discarded and rerun, not resumed
    assert doc["totals"] == json.loads((out / "stats.json").read_text())["totals"]
    assert not list(stale.glob(".work-trash-*"))


def test_one_big_jsonl_file_is_shared_by_tasks(tmp_path):
    """One JSONL file over ``curate.read.jsonl_split_bytes`` is cut at line starts into units that
    several tasks share: the same curated rows and drops as one task reading it whole."""
    texts = pq.read_table(DEMO / "en" / "news.parquet", columns=["text"]).column("text").to_pylist()[:60]
    lines = [json.dumps({"id": f"d{i}", "text": t, "domain": "news"}) for i, t in enumerate(texts)]
    lines[5] = lines[4].replace('"d4"', '"d4-copy"')  # an exact copy across units: dedup drops it
    lines[9] = '{"id": "x", "te'
    (tmp_path / "one.jsonl").write_text("\n".join(lines) + "\n")
    runs = []
    for name, tasks, split in (("whole", 1, 0), ("split", 3, 4000)):
        p = tmp_path / f"{name}.yaml"
        p.write_text(f"curate:\n  engine:\n    steps: [normalize, dedup]\n    tasks: {tasks}\n"
                     f"  read:\n    jsonl_split_bytes: {split}\ndedup:\n  threshold: 0.8\n")
        run_local(inputs=tmp_path / "one.jsonl", output=tmp_path / name, params_path=str(p))
        curated, drops, stats = _read_run(tmp_path / name)
        runs.append(({k: sorted(v, key=lambda r: r["id"]) for k, v in curated.items()}, drops,
                     stats["totals"]))
    assert runs[0] == runs[1]
    assert ("d4-copy", "dedup", "exact_duplicate", "news") in runs[0][1] or \
        ("d4", "dedup", "exact_duplicate", "news") in runs[0][1]
    assert len(list((tmp_path / "split" / "work" / "a" / "stats").glob("*.json"))) == 3


def test_units_are_listed_once_per_run(tmp_path, monkeypatch):
    """A big JSONL file is cut into units by counting its lines: run_local does it once and hands
    the units to the calibration and to every stage-a task (not once per task)."""
    from curate import docio as cio

    texts = pq.read_table(DEMO / "en" / "news.parquet", columns=["text"]).column("text").to_pylist()[:40]
    (tmp_path / "one.jsonl").write_text("".join(json.dumps({"id": f"d{i}", "text": t, "domain": "news"}) + "\n"
                                                for i, t in enumerate(texts)))
    calls = []
    real = cio.list_units
    monkeypatch.setattr(cio, "list_units", lambda *a, **k: calls.append(a) or real(*a, **k))
    p = tmp_path / "p.yaml"
    p.write_text("curate:\n  engine:\n    steps: [normalize, filters]\n    tasks: 3\n    workers: 1\n"
                 "  read:\n    jsonl_split_bytes: 4000\n")
    stats = run_local(inputs=tmp_path / "one.jsonl", output=tmp_path / "out", params_path=str(p))
    assert len(calls) == 1
    assert stats["totals"]["kept"] + stats["totals"]["dropped"] == 40
    assert (tmp_path / "out" / "calibration.json").exists()
