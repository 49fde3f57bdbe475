"""``kill -9`` of the local curation engine at random points, then a re-run: byte-identical output.

Input: a slice of the shipped demo corpus (every English domain, German and French paragraphs,
an exact copy under a new id, malformed JSON lines), chain normalize -> langid -> filters -> dedup
-> pii, 4 datatrove tasks in 2 processes. An uninterrupted run is the reference (its wall time sets
the range of kill times). Each trial kills ``corpusmix curate run`` with SIGKILL at a seeded random
time (some trials twice in a row, the second kill hitting the resumed run), then re-runs it to the
end; the curated Parquet files and drops.parquet must equal the reference byte for byte, and
stats.json must equal it apart from the timings. The phase each kill hit (stage a, global dedup,
stage b, merge, clean-up) is read from the work folder and printed; set
``CORPUSMIX_KILL_REPORT=path.json`` to keep it.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "data" / "demo"
TRIALS = 5
SEED = 20261130

PARAMS = """
curate:
  engine:
    steps: [normalize, langid, filters, dedup, pii]
    tasks: 4
    workers: 2
    batch_docs: 16
    keep_work: false
  langid:
    skip_domains: [code]
  filters:
    per_domain:
      code: {gopher_quality: false, c4: false, fineweb: false}
dedup:
  threshold: 0.8
  workers: 1
"""

pytestmark = pytest.mark.slow


def _make_input(root: Path) -> Path:
    inp = root / "in"
    inp.mkdir()
    tables = []
    for f in sorted((DEMO / "en").glob("*.parquet")) + [DEMO / "foreign" / "de.parquet", DEMO / "foreign" / "fr.parquet"]:
        t = pq.read_table(f, columns=["id", "text", "domain", "source"])
        tables.append(t.slice(0, 30 if "en" in f.parent.name else 15))
    table = pa.concat_tables(tables)
    copy = table.slice(0, 1).set_column(0, "id", pa.array(["copy-of-first"]))
    pq.write_table(pa.concat_tables([table, copy]), inp / "docs.parquet", row_group_size=20)
    bad = ['{"id": "broken", "te', json.dumps({"id": "num", "text": 5}), json.dumps({"id": "e", "text": ""})]
    (inp / "extra.jsonl").write_text("\n".join(bad) + "\n")
    (root / "params.yaml").write_text(PARAMS)
    return inp


def _cmd(inp: Path, out: Path, params: Path) -> list[str]:
    return [sys.executable, "-m", "corpusmix.cli", "curate", "run", "--input", str(inp), "--output", str(out),
            "--params", str(params)]


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT))


def _digest(out: Path) -> dict[str, str]:
    files = sorted((out / "curated").glob("*.parquet")) + [out / "drops.parquet"]
    got = {f.relative_to(out).as_posix(): hashlib.sha256(f.read_bytes()).hexdigest() for f in files}
    stats = json.loads((out / "stats.json").read_text())
    for s in stats["steps"].values():
        s.pop("seconds", None)
    got["stats.json (without timings)"] = hashlib.sha256(json.dumps(stats, sort_keys=True).encode()).hexdigest()
    return got


def _phase(out: Path) -> str:
    """Where the killed run was: read from what it left in the work folder."""
    work = out / "work"
    if (out / "stats.json").exists():
        return "clean-up" if work.exists() or any(out.glob(".work-trash-*")) else "finished"
    if not work.exists():
        return "start-up"
    done_a = len(list((work / "logs" / "a" / "completions").glob("*")))
    done_b = len(list((work / "logs" / "b" / "completions").glob("*")))
    if done_a < 4:
        return f"stage a ({done_a}/4 tasks done)"
    if not (work / "dedup" / ".done").exists():
        return "global dedup"
    if done_b < 4:
        return f"stage b ({done_b}/4 tasks done)"
    return "merge"


def test_random_kills_then_rerun_is_byte_identical(tmp_path: Path) -> None:
    inp = _make_input(tmp_path)
    params = tmp_path / "params.yaml"
    ref = tmp_path / "ref"
    t0 = time.monotonic()
    subprocess.run(_cmd(inp, ref, params), cwd=ROOT, env=_env(), check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    t_ref = time.monotonic() - t0
    want = _digest(ref)
    assert not (ref / "work").exists() and not list(ref.glob(".work-trash-*"))
    # the annotation columns follow the contract of docs/formats.md (int32 span offsets)
    span = pq.read_schema(sorted((ref / "curated").glob("*.parquet"))[0]).field("pii_spans").type.value_type
    assert span.field("start").type == pa.int32() and span.field("end").type == pa.int32()

    rng = random.Random(SEED)
    report = {"reference_seconds": round(t_ref, 2), "trials": []}
    for trial in range(TRIALS):
        out = tmp_path / f"trial{trial}"
        kills = []
        for _ in range(1 if trial % 2 == 0 else 2):
            at = rng.uniform(0.05, 0.95) * t_ref
            # its own process group: the kill takes datatrove's worker processes with it, as a crash would
            proc = subprocess.Popen(_cmd(inp, out, params), cwd=ROOT, env=_env(), stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL, start_new_session=True)
            try:
                proc.wait(timeout=at)
                kills.append({"after_s": round(at, 2), "phase": "finished before the kill"})
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                kills.append({"after_s": round(at, 2), "phase": _phase(out)})
        subprocess.run(_cmd(inp, out, params), cwd=ROOT, env=_env(), check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        got = _digest(out)
        report["trials"].append({"kills": kills, "identical": got == want})
        assert got == want, f"trial {trial} (kills {kills}) differs from the uninterrupted run"
        assert not (out / "work").exists() and not list(out.glob(".work-trash-*"))
    print(json.dumps(report, indent=1))
    if os.environ.get("CORPUSMIX_KILL_REPORT"):
        Path(os.environ["CORPUSMIX_KILL_REPORT"]).write_text(json.dumps(report, indent=1))
    hit = [k for t in report["trials"] for k in t["kills"] if k["phase"] not in ("finished before the kill",)]
    assert len(hit) >= TRIALS, f"too few kills interrupted a run: {report}"

