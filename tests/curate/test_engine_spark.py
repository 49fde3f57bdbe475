"""The Spark engine: parity with the local engine on the demo data, model shipping, retries.

One Spark session (``local[2,2]``: 2 cores, 2 attempts per task) serves every test of the module.
The input is a deterministic slice of the demo data (whole duplicate clusters, ~630 documents).
"""

from __future__ import annotations

import json
import os
import sys
import zlib
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pyspark")

from datatrove.data import Document  # noqa: E402

from corpusmix import timing  # noqa: E402
from curate import docio as cio  # noqa: E402
from curate.chain import EngineConfig  # noqa: E402
from curate.demo.data import DemoDataConfig, build_demo_data  # noqa: E402
from curate.engine_local import run_local  # noqa: E402
from curate.runner import run_steps  # noqa: E402
from curate.spark.engine import SparkConfig, get_session, run_spark  # noqa: E402
from curate.spark.models import find_model_files  # noqa: E402
from curate.spark.submit import chain_from_params  # noqa: E402
from curate.steps.base import Annotator, CurationStep, ThresholdFilter  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


# ------------------------------------------------------------------ small steps of the test's own
class WordCount(Annotator):
    step_name = "word_count"
    columns = ("n_words",)

    def annotate(self, doc: Document) -> None:
        doc.metadata["n_words"] = len(doc.text.split())


class Lowercase(Annotator):
    """Rewrites the text (bytes_in of later steps must follow the rewritten text)."""

    step_name = "lowercase"

    def annotate(self, doc: Document) -> None:
        doc.text = " ".join(doc.text.lower().split())


class AlphaRatio(CurationStep):
    step_name = "alpha_ratio"

    def filter(self, doc: Document) -> bool | tuple[bool, str]:
        if not doc.text:
            return False, "empty"
        ratio = sum(c.isalpha() for c in doc.text) / len(doc.text)
        return True if ratio >= 0.6 else (False, "low_alpha")


class StopwordModel(Annotator):
    """Loads a 'model' (a word list file) lazily, once per process, and logs every load."""

    step_name = "stopwords"
    columns = ("stop_frac",)

    def __init__(self, model_path: str, load_log: str) -> None:
        super().__init__()
        self.model_path = model_path
        self.load_log = load_log
        self._words: set[str] | None = None

    def annotate(self, doc: Document) -> None:
        if self._words is None:
            self._words = set(Path(self.model_path).read_text().split())
            with open(self.load_log, "a") as fh:
                fh.write(f"{os.getpid()}\t{self.model_path}\n")
        words = doc.text.split()
        doc.metadata["stop_frac"] = sum(w in self._words for w in words) / max(len(words), 1)


class FailOnce(CurationStep):
    """Raises (a task failure, not a drop) the first time it sees ``doc_id``; a marker file remembers."""

    step_name = "fail_once"

    def __init__(self, doc_id: str, marker: str) -> None:
        super().__init__()
        self.doc_id = doc_id
        self.marker = marker

    def filter(self, doc: Document) -> bool:
        if doc.id == self.doc_id and not os.path.exists(self.marker):
            Path(self.marker).write_text(str(os.getpid()))
            raise RuntimeError("injected failure on the first attempt")
        return True


def chain(model: Path, load_log: Path, fail: FailOnce | None = None) -> list:
    steps = [Lowercase(), WordCount(), ThresholdFilter(column="n_words", min_value=20, step_name="min_words"),
             AlphaRatio(), StopwordModel(str(model), str(load_log)),
             ThresholdFilter(column="stop_frac", min_value=0.15, step_name="stop_frac")]
    return ([fail] if fail else []) + steps


# ---------------------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def spark():
    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # executors cannot import tests/
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    session = get_session(SparkConfig(master="local[2,2]", conf={"spark.ui.enabled": "false"}))
    yield session
    session.stop()


@pytest.fixture(scope="module")
def raw(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Demo documents of every 12th duplicate cluster (originals with all their copies), 3 files."""
    full = tmp_path_factory.mktemp("demo")
    build_demo_data(DemoDataConfig(source_dir=str(ROOT / "data/demo"), output=str(full)))
    cluster = {r["id"]: r["dup_cluster"] for r in pq.read_table(full / "ground_truth.parquet").to_pylist()}
    table = pq.read_table(full / "docs")
    keep = [zlib.crc32(cluster[i].encode()) % 12 == 0 for i in table.column("id").to_pylist()]
    table = table.filter(pa.array(keep))
    out = tmp_path_factory.mktemp("raw")
    (out / "docs").mkdir()
    third = table.num_rows // 3 + 1
    for k in range(3):
        pq.write_table(table.slice(k * third, third), out / "docs" / f"part-{k}.parquet", row_group_size=100)
    return out


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("models") / "stopwords.bin"
    p.write_text("the of and a to in is that it for as with was on be by this are")
    return p


def reference(docs: list[dict], steps: list) -> tuple[set[str], dict[str, tuple[str, str]], dict[str, dict]]:
    """A plain datatrove run: each step's own ``run`` generator, drops read from its exclusion writer."""

    class Sink:
        def __init__(self) -> None:
            self.rows: list[Document] = []

        def __enter__(self):
            return self

        def __exit__(self, *exc) -> None:
            return None

        def write(self, doc: Document, rank: int = 0) -> None:
            self.rows.append(doc)

    data = [Document(text=d["text"], id=d["id"], metadata={k: d[k] for k in ("domain", "source")}) for d in docs]
    drops: dict[str, tuple[str, str]] = {}
    counts: dict[str, dict] = {}
    for step in steps:
        sink = Sink()
        step.exclusion_writer = sink
        n_in = len(data)
        data = list(step.run(iter(data)))
        for d in sink.rows:
            drops[d.id] = (step.step_name, d.metadata["filter_reason"])
        counts[step.step_name] = {"docs_in": n_in, "kept": len(data)}
    return {d.id for d in data}, drops, counts


def read_outputs(out: Path) -> tuple[dict[str, dict], dict[str, tuple[str, str]], dict]:
    kept = {}
    for folder in sorted((out / "curated").glob("*.parquet")):
        for row in pq.read_table(folder).to_pylist():
            assert row["domain"] == folder.name[:-len(".parquet")]
            kept[row["id"]] = row
    drops = {r["id"]: (r["step"], r["reason"]) for r in pq.read_table(out / "drops.parquet").to_pylist()}
    return kept, drops, json.loads((out / "stats.json").read_text())


@pytest.fixture(scope="module")
def spark_run(spark, raw: Path, model: Path, tmp_path_factory: pytest.TempPathFactory):
    """The test's chain on Spark; its first step fails the first attempt of one task (fault injection)."""
    tmp = tmp_path_factory.mktemp("spark_run")
    log = tmp / "loads.log"
    ids = pq.read_table(raw / "docs", columns=["id"]).column("id").to_pylist()
    fail = FailOnce(ids[len(ids) // 2], str(tmp / "failed-once"))
    stats = run_spark(inputs=[str(raw / "docs")], output=str(tmp / "out"), steps=chain(model, log, fail),
                      cfg=SparkConfig(partitions=4), spark=spark)
    return tmp / "out", stats, log


# ------------------------------------------------------------------------------------------- tests
@pytest.mark.slow  # the whole chain twice, with dedup's Spark shuffles: minutes on 2 busy cores
def test_parity_with_local_engine_on_demo_data(spark, raw: Path, tmp_path: Path) -> None:
    """The real chain from params.yaml: same kept ids, same drops, same per-step counts, same columns."""
    params = str(ROOT / "params.yaml")
    local = run_local(inputs=raw / "docs", output=tmp_path / "local", params_path=params,
                      cfg=EngineConfig(tasks=2, workers=1, keep_work=False))
    steps, dedup, after = chain_from_params(params)
    assert dedup is not None and [s.step_name for s in after] == ["pii"]
    spk = run_spark(inputs=[str(raw / "docs")], output=str(tmp_path / "spark"), steps=steps, dedup=dedup,
                    steps_after=after, spark=spark)
    assert list(spk["steps"]) == list(local["steps"])
    for name, st in local["steps"].items():
        want = {k: v for k, v in st.items() if k != "seconds"}
        assert {k: v for k, v in spk["steps"][name].items() if k != "seconds"} == want, name
    assert spk["totals"] == local["totals"]
    assert local["steps"]["dedup"]["dropped"], "the slice holds duplicates"
    assert sum(local["steps"]["filters"]["dropped"].values()) > 0
    kept_l, drops_l, _ = read_outputs(tmp_path / "local")
    kept_s, drops_s, _ = read_outputs(tmp_path / "spark")
    assert set(kept_s) == set(kept_l) and drops_s == drops_l
    assert 0 < len(kept_l) < sum(1 for _ in pq.read_table(raw / "docs").column("id"))
    assert sorted((tmp_path / "spark" / "curated").glob("*.parquet")) != []
    assert [p.name for p in sorted((tmp_path / "spark" / "curated").glob("*.parquet"))] == \
        [p.name for p in sorted((tmp_path / "local" / "curated").glob("*.parquet"))]
    for doc_id, row in kept_l.items():
        other = kept_s[doc_id]
        assert set(other) == set(row), doc_id
        for col in ("text", "lang", "domain", "source", "dup_cluster", "is_duplicate", "pii_counts"):
            assert other[col] == row[col], (doc_id, col)
        assert other["lang_score"] == pytest.approx(row["lang_score"], abs=1e-6)
        for col in ("contam_benchmarks", "contam_ngrams", "badwords"):  # safety steps, when in the chain
            assert other.get(col) == row.get(col), (doc_id, col)
        if row.get("toxicity") is not None:
            assert other["toxicity"] == pytest.approx(row["toxicity"], abs=1e-6)
    ldrops = pq.read_table(tmp_path / "local" / "drops.parquet").to_pylist()
    sdrops = pq.read_table(tmp_path / "spark" / "drops.parquet").to_pylist()
    assert sorted(map(tuple, (d.values() for d in sdrops))) == sorted(map(tuple, (d.values() for d in ldrops)))
    # the inspection data (curate.inspection): the same counts, histograms, samples (smallest sha1 of
    # the id, redacted), near-misses and clusters from both engines, whatever their partitioning
    insp_l = json.loads((tmp_path / "local" / "inspect.json").read_text())
    insp_s = json.loads((tmp_path / "spark" / "inspect.json").read_text())
    assert (insp_l.pop("engine"), insp_s.pop("engine")) == ("local", "spark")
    assert insp_s == insp_l


def test_inspection_of_a_spark_run(spark_run, tmp_path: Path) -> None:
    """inspect.json from the partitions' states (one partition failed once and was retried): its
    counts are stats.json's, the threshold rule has its histogram, the page renders."""
    from curate.inspection.view import load_run, write_page

    out, stats, _ = spark_run
    data = load_run(out)
    assert data["has_inspect"] and data["engine"] == "spark"
    assert not [n for n in data["notes"] if n["level"] == "missing" or "disagree" in n["text"]]
    for step, st in stats["steps"].items():
        got: dict[str, int] = {}
        for c in data["counts"].get(step, {}).values():
            for r, n in c["dropped"].items():
                got[r] = got.get(r, 0) + n
        assert got == {r: n for r, n in st["dropped"].items() if n}, step
    dom = next(iter(data["rules"]["min_words"]))
    assert data["rules"]["min_words"][dom][0]["threshold"] == 20
    assert sum(data["hist"]["min_words"][dom]["n_words"]["counts"]) == data["counts"]["min_words"][dom]["docs_in"]
    assert any(data["samples"]["min_words"][d] for d in data["samples"]["min_words"])
    write_page(out, tmp_path / "view.html")
    assert (tmp_path / "view.html").stat().st_size < 5_000_000


def test_same_decisions_as_datatrove_run(spark_run, raw: Path, model: Path, tmp_path: Path) -> None:
    out, stats, _ = spark_run
    docs = pq.read_table(raw / "docs").to_pylist()
    want_kept, want_drops, want_counts = reference(docs, chain(model, tmp_path / "ref.log"))
    kept, drops, written = read_outputs(out)
    pure, timings = timing.split(stats)  # wall-clock values: stats.timing.json beside stats.json
    assert written == json.loads(json.dumps(pure)) and timings["engine"]["seconds"] > 0
    assert json.loads((out / "stats.timing.json").read_text()) == json.loads(json.dumps(timings))
    assert set(kept) == want_kept
    assert drops == want_drops
    assert 0 < len(kept) < len(docs) and len({s for s, _ in drops.values()}) >= 3
    for name, c in want_counts.items():
        assert stats["steps"][name]["docs_in"] == c["docs_in"], name
        assert stats["steps"][name]["kept"] == c["kept"], name
        st = stats["steps"][name]
        assert st["docs_in"] == st["kept"] + sum(st["dropped"].values())
        reasons = {}
        for step, reason in want_drops.values():
            if step == name:
                reasons[reason] = reasons.get(reason, 0) + 1
        assert st["dropped"] == reasons
    assert stats["totals"] == {"docs_in": len(docs), "kept": len(want_kept), "dropped": len(want_drops)}
    # bytes_in follows the text as rewritten by earlier steps
    lowered = sum(len(" ".join(d["text"].lower().split()).encode()) for d in docs)
    assert stats["steps"]["word_count"]["bytes_in"] == lowered
    assert stats["steps"]["lowercase"]["bytes_in"] == sum(len(d["text"].encode()) for d in docs)


def test_output_schema_and_values(spark_run, raw: Path) -> None:
    out, _, _ = spark_run
    kept, _, _ = read_outputs(out)
    first = pq.read_table(next((out / "curated").glob("*.parquet")))
    assert first.column_names[:4] == ["id", "text", "domain", "source"]
    assert first.schema.field("n_words").type == "int64"
    assert first.schema.field("stop_frac").type == "double"
    assert not any(c.startswith("_") for c in first.column_names)
    docs = {r["id"]: r for r in pq.read_table(raw / "docs").to_pylist()}
    for doc_id, row in list(kept.items())[:200]:
        text = " ".join(docs[doc_id]["text"].lower().split())
        assert row["text"] == text and row["n_words"] == len(text.split())
        assert row["source"] == docs[doc_id]["source"]


def test_models_shipped_and_loaded_once_per_process(spark_run, model: Path) -> None:
    _, _, log = spark_run
    loads = [line.split("\t") for line in log.read_text().splitlines()]
    executor = [(pid, path) for pid, path in loads if pid != str(os.getpid())]
    assert executor, "the executors loaded the model"
    assert all(path != str(model) and Path(path).name == model.name for _, path in executor), \
        "executors read the shipped SparkFiles copy, not the driver's path"
    pids = [pid for pid, _ in executor]
    assert len(pids) == len(set(pids)), "one load per executor Python process"
    assert len(pids) < 4, "fewer loads than partitions: workers kept the model between tasks"
    assert find_model_files(chain(model, log)) == [str(model.resolve())]


def test_failed_task_is_retried_with_identical_output(spark_run, raw: Path, model: Path, tmp_path: Path) -> None:
    """The run above lost one task's first attempt (spark.task.maxFailures via local[2,2]); Spark
    retried it and the output equals a plain datatrove run, statistics counted once."""
    out, stats, log = spark_run
    assert (log.parent / "failed-once").exists(), "the first attempt failed"
    docs = pq.read_table(raw / "docs").to_pylist()
    marker = tmp_path / "never"
    marker.write_text("")  # exists: the reference run never fails
    want_kept, want_drops, want_counts = reference(docs, chain(model, tmp_path / "ref.log",
                                                               FailOnce(docs[0]["id"], str(marker))))
    kept, drops, _ = read_outputs(out)
    assert set(kept) == want_kept and drops == want_drops
    assert stats["steps"]["fail_once"] == {**stats["steps"]["fail_once"], "docs_in": len(docs), "kept": len(docs),
                                           "dropped": {}}
    assert stats["steps"]["read"]["docs_in"] == len(docs) == stats["totals"]["docs_in"]
    for name, c in want_counts.items():
        assert (stats["steps"][name]["docs_in"], stats["steps"][name]["kept"]) == (c["docs_in"], c["kept"])


def test_run_steps_counts_every_document() -> None:
    docs = [Document(text=t, id=str(i)) for i, t in enumerate(["", "abc def", "123 456 789 0"])]
    stats: dict = {}
    res = list(run_steps([AlphaRatio()], docs, stats=stats))
    assert [(o.doc.id, o.step, o.reason) for o in res] == [
        ("0", "alpha_ratio", "empty"), ("1", None, None), ("2", "alpha_ratio", "low_alpha")]
    assert stats["alpha_ratio"].docs_in == 3 and stats["alpha_ratio"].kept == 1
    assert stats["alpha_ratio"].dropped == {"empty": 1, "low_alpha": 1}


def test_curate_run_engine_spark_command(spark, raw: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """``corpusmix curate run --engine spark`` (flags of the local engine's command still apply)."""
    from corpusmix.cli import main

    rc = main(["curate", "run", "--engine", "spark", "--master", "local[2,2]", "--input", str(raw / "docs"),
               "--output", str(tmp_path / "out"), "--params", str(ROOT / "params.yaml"), "--steps", "normalize"])
    assert rc == 0
    totals = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    stats = json.loads((tmp_path / "out" / "stats.json").read_text())
    n = pq.read_metadata(raw / "docs" / "part-0.parquet").num_rows
    assert list(stats["steps"]) == ["read", "normalize"] and totals == stats["totals"]
    assert stats["engine"]["name"] == "spark" and totals["docs_in"] >= n
    # executors started with the driver's Python import the package's own build of the kernels
    assert set(stats["engine"]["kernels"]) == {"package"}, stats["engine"]["kernels"]
    assert totals["kept"] == stats["steps"]["normalize"]["kept"] == stats["steps"]["read"]["kept"]


def test_submit_argv_and_zip(tmp_path: Path) -> None:
    """The spark-submit command is a list (no shell quoting); the zip holds the packages' sources."""
    import zipfile

    from curate.spark.submit import build_zip, submit_argv

    z = build_zip(tmp_path / "dist" / "corpusmix.zip")
    names = zipfile.ZipFile(z).namelist()
    assert {"curate/spark/engine.py", "curate/steps/base.py", "corpusmix/config.py"} <= set(names)
    assert not [n for n in names if n.endswith((".ftz", ".pyc"))], "models travel with --files, not in the zip"
    argv = submit_argv(master="spark://127.0.0.1:7077", inputs=["in a", "hdfs:///b"], output="out dir",
                       py_files=z, files=[ROOT / "curate/models/lid.176.ftz"], params="params.yaml",
                       spark_submit="spark-submit")
    assert argv[:5] == ["spark-submit", "--master", "spark://127.0.0.1:7077", "--py-files", str(z)]
    assert argv[argv.index("--files") + 1] == str((ROOT / "curate/models/lid.176.ftz").resolve())
    script = argv.index(str(ROOT / "curate" / "spark" / "submit.py"))
    assert argv[script + 1:] == ["--input", "in a", "--input", "hdfs:///b", "--output", "out dir",
                                 "--params", "params.yaml"]
    assert f"spark.pyspark.python={sys.executable}" in argv


def test_calibration_sample_read_by_the_executors(spark, raw: Path, tmp_path: Path) -> None:
    """The executors' calibration sample (two Spark passes) is the driver reader's: the same
    documents in the same order and the same counts; and an input given as a ``file://`` URI, which
    the driver does not read itself, is calibrated that way (same calibration as the driver's)."""
    from curate.calibrate import calibrate_steps, sample_input
    from curate.chain import ChainConfig, build_steps
    from curate.spark.engine import sample_on_executors
    from curate.spark.read import read_documents

    df = read_documents(spark, [str(raw / "docs")], scratch=str(tmp_path / "scratch"))
    for k in (3, 40):
        want, want_n = sample_input([str(raw / "docs")], cio.ReadConfig(), k)
        got, got_n = sample_on_executors(spark, df, None, k)
        assert {d: [x.id for x in v] for d, v in got.items()} == {d: [x.id for x in v] for d, v in want.items()}
        assert [x.text for v in got.values() for x in v] == [x.text for v in want.values() for x in v]
        assert got_n == want_n and min(len(v) for v in got.values()) == min(k, min(want_n.values()))

    def steps() -> list:
        chain_cfg = ChainConfig.load(str(ROOT / "params.yaml"), engine=EngineConfig(steps=["normalize", "filters"]))
        return build_steps(chain_cfg, stage="a")

    driver = calibrate_steps(steps(), inputs=[str(raw / "docs")], read_cfg=cio.ReadConfig())
    stats = run_spark(inputs=[(raw / "docs").as_uri()], output=str(tmp_path / "out"), steps=steps(), spark=spark)
    assert json.loads((tmp_path / "out" / "calibration.json").read_text()) == json.loads(json.dumps(driver))
    assert stats["totals"]["docs_in"] == stats["totals"]["kept"] + stats["totals"]["dropped"] > 0
    assert "calibrate" in stats["engine"]["phases"]
