"""``curate.chain``: params read once into typed configs, the steps both engines run, clear errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from corpusmix.config import ConfigError
from curate import engine_local, run_cli
from curate.chain import ChainConfig, ColumnDedupApply, DedupApply, EngineConfig, build_steps

ROOT = Path(__file__).resolve().parents[2]


def test_chain_from_loaded_params_needs_no_file() -> None:
    params = {"curate": {"engine": {"steps": ["normalize", "langid", "filters", "dedup", "pii"]},
                         "filters": {"profile": "web"}},
              "dedup": {"threshold": 0.7}}
    chain = ChainConfig.from_params(params)
    assert chain.params_path == "" and chain.dedup.threshold == 0.7 and chain.filters.profile == "web"
    assert chain.decontam is None and chain.toxicity is None and chain.quality is None  # disabled steps
    assert [s.step_name for s in build_steps(chain, stage="a")] == ["normalize", "langid", "langid_filter", "filters"]
    assert [s.step_name for s in build_steps(chain, stage="b")] == ["pii"]
    assert chain.params["dedup"] == {"threshold": 0.7} and chain.params["pii"] == {}


def test_engine_flags_override_the_params_section() -> None:
    chain = ChainConfig.from_params({"curate": {"engine": {"steps": ["normalize", "filters"]}}},
                                    engine=EngineConfig(steps=["normalize"]))
    assert chain.filters is None and [s.step_name for s in build_steps(chain)] == ["normalize"]


SHOUT_MODULE = """
from dataclasses import dataclass

from curate.steps.base import Annotator
from curate.steps.registry import step


@dataclass
class ShoutConfig:
    loud: bool = True


@step("shout", config=ShoutConfig, section="curate.shout", order=35)
class Shout(Annotator):
    step_name = "shout"

    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg

    def annotate(self, doc):
        doc.text = doc.text.upper() if self.cfg.loud else doc.text
"""


def test_a_step_registered_in_its_own_module_joins_the_chain_only_when_enabled(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    from curate.steps import registry

    registry.specs()  # the built-in steps, registered before the copy below
    monkeypatch.setattr(registry, "STEPS", dict(registry.STEPS))  # the temporary step leaves with the test
    (tmp_path / "shout_step.py").write_text(SHOUT_MODULE)
    spec = importlib.util.spec_from_file_location("shout_step", tmp_path / "shout_step.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # importing the module registers its step
    assert registry.names() == ("normalize", "decontam", "langid", "shout", "filters", "toxicity", "quality",
                                "dedup", "pii")
    on = ChainConfig.from_params({"curate": {"engine": {"steps": ["normalize", "langid", "shout", "filters"]},
                                             "shout": {"loud": False}}})
    assert on.shout == mod.ShoutConfig(loud=False)
    assert [s.step_name for s in build_steps(on)] == ["normalize", "langid", "langid_filter", "shout", "filters"]
    assert build_steps(on, stage="b") == []
    off = ChainConfig.from_params({"curate": {"engine": {"steps": ["normalize", "filters"]}}})
    assert off.shout is None and [s.step_name for s in build_steps(off)] == ["normalize", "filters"]
    with pytest.raises(ConfigError, match="loudness"):  # its params section is checked like any step's
        ChainConfig.from_params({"curate": {"engine": {"steps": ["shout"]}, "shout": {"loudness": 3}}})


def test_registered_steps_are_the_chain_in_order() -> None:
    from curate.chain import ALL_STEPS, CHAIN_SECTIONS
    from curate.steps import registry

    assert ALL_STEPS == ("normalize", "decontam", "langid", "filters", "toxicity", "quality", "dedup", "pii")
    assert sorted(CHAIN_SECTIONS) == ["curate", "decontam", "dedup", "pii", "quality", "toxicity"]
    assert {s.name: s.stage for s in registry.specs()}["pii"] == "b" and not registry.BROKEN
    with pytest.raises(ValueError, match="registered by"):
        registry.register(registry.StepSpec(name="pii", config=dict, section="pii", stage="b", order=1,
                                            module="elsewhere"))


def test_dedup_engine_in_params_is_a_clear_error() -> None:
    with pytest.raises(ConfigError, match="dedup.engine is not read by `corpusmix curate run`"):
        ChainConfig.from_params({"dedup": {"engine": "spark"}})


def test_unknown_keys_of_an_enabled_step_fail() -> None:
    with pytest.raises(ConfigError, match="gopher_min_words"):
        ChainConfig.from_params({"curate": {"engine": {"steps": ["filters"]}, "filters": {"gopher_min_words": 3}}})


def test_dedup_apply_from_verdicts_and_from_columns_decide_alike() -> None:
    from datatrove.data import Document

    verdicts = {"b": ("a", True, "near"), "c": ("c2", True, None)}
    for doc_id in ("a", "b", "c"):
        d1 = Document(text="t", id=doc_id)
        d2 = Document(text="t", id=doc_id, metadata=dict(zip(("dup_cluster", "is_duplicate", "dup_kind"),
                                                             verdicts[doc_id], strict=True))
                      if doc_id in verdicts else {})
        assert DedupApply(verdicts).filter(d1) == ColumnDedupApply().filter(d2)
        assert d1.metadata == d2.metadata
    assert DedupApply(verdicts).filter(Document(text="t", id="b")) == (False, "near_duplicate")
    # streamed: one row per document in order (the local engine's verdict file), the same decisions
    rows = [(i, *verdicts.get(i, (i, False, None))) for i in ("a", "b", "c")]
    streamed, by_id = DedupApply(stream=iter(rows)), DedupApply(verdicts)
    for doc_id in ("a", "b", "c"):
        d1, d2 = Document(text="t", id=doc_id), Document(text="t", id=doc_id)
        assert streamed.filter(d1) == by_id.filter(d2) and d1.metadata == d2.metadata
    with pytest.raises(RuntimeError, match="out of step"):
        DedupApply(stream=iter(rows)).filter(Document(text="t", id="b"))
    with pytest.raises(RuntimeError, match="none left"):
        DedupApply(stream=iter([])).filter(Document(text="t", id="a"))


def test_curate_run_reads_the_params_file_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import argparse

    from corpusmix.config import load_params

    reads: list[str] = []

    def counting(path: str | Path = "params.yaml", section: str | None = None) -> dict:
        reads.append(f"{path}:{section}")
        return load_params(path, section)

    monkeypatch.setattr(run_cli, "load_params", counting)
    monkeypatch.setattr(engine_local, "load_params", counting)
    params = tmp_path / "params.yaml"
    params.write_text("curate:\n  engine:\n    steps: [normalize]\n    tasks: 1\n")
    (tmp_path / "d.jsonl").write_text(json.dumps({"id": "a", "text": "hello there"}) + "\n")
    parser = argparse.ArgumentParser()
    run_cli.register(parser.add_subparsers())  # the `curate run` command itself
    args = parser.parse_args(["run", "--input", str(tmp_path / "d.jsonl"), "--output", str(tmp_path / "out"),
                              "--params", str(params)])
    assert args.func(args) == 0
    assert reads == [f"{params}:None"]
    stats = json.loads((tmp_path / "out" / "stats.json").read_text())
    assert list(stats["steps"]) == ["read", "normalize"] and stats["totals"]["kept"] == 1


def test_spark_submit_script_runs_from_its_own_folder() -> None:
    """spark-submit puts curate/spark/ first on sys.path: no module there may shadow another (no path surgery)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    res = subprocess.run([sys.executable, str(ROOT / "curate" / "spark" / "submit.py"), "--help"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "--input" in res.stdout and "--master" in res.stdout


def test_local_run_from_loaded_params_dedups_with_the_values_read_at_the_edge(tmp_path: Path) -> None:
    """No params file at all: the dedup stage reads the section frozen in the work folder."""
    text = "The quick brown fox jumps over the lazy dog near the quiet river bank today."
    rows = [{"id": "a", "text": text}, {"id": "b", "text": text}, {"id": "c", "text": "Something else entirely here."}]
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    chain = ChainConfig.from_params({"curate": {"engine": {"steps": ["normalize", "dedup"], "tasks": 1}},
                                     "dedup": {"threshold": 0.9, "near": False}})
    doc = engine_local.run_local(inputs=tmp_path / "d.jsonl", output=tmp_path / "out", chain=chain)
    assert doc["steps"]["dedup"]["dropped"] == {"exact_duplicate": 1} and doc["totals"]["kept"] == 2
    import yaml

    frozen = yaml.safe_load((tmp_path / "out" / "work" / "params.yaml").read_text())
    assert frozen["dedup"] == {"threshold": 0.9, "near": False}


def test_the_registry_finds_every_step_inside_a_zip(tmp_path: Path) -> None:
    """Shipped as one zip (spark-submit --py-files), the package finds the same steps as from a folder."""
    from curate.steps.registry import names
    from tests.helpers.zipimport import run_from_zip

    out = run_from_zip(tmp_path, "import curate.steps.registry as r; "
                       "assert r.__file__.startswith(sys.argv[1]), r.__file__; print(','.join(r.names()))")
    assert out.strip().split(",") == list(names())
