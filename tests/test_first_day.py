"""Bad input a newcomer meets on the first day: one clear line, exit code 2, nothing written; and the
warnings that replace silence (a file all of whose records are dropped, a too-small evaluation split).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from corpusmix.cli import main
from corpusmix.paths import DEMO


def _malformed(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "a.jsonl").write_text('{"id": "x", "te\nnot json\n[1, 2]\n')
    (folder / "b.jsonl").write_text("garbage\n" * 30)
    return folder


def test_an_input_folder_of_malformed_files_is_refused_before_any_work(tmp_path, capsys):
    inp = _malformed(tmp_path / "in")
    out = tmp_path / "out"
    assert main(["curate", "run", "--input", str(inp), "--output", str(out), "--params", str(tmp_path / "no.yaml")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "every input file is malformed" in err[0] and "nothing written" in err[0]
    assert not out.exists()


def test_a_file_whose_every_record_is_dropped_is_a_warning(tmp_path, caplog):
    inp = _malformed(tmp_path / "in")
    (inp / "b.jsonl").unlink()
    rows = pq.read_table(DEMO / "en" / "news.parquet", columns=["id", "text", "domain"]).slice(0, 3).to_pylist()
    (inp / "good.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    caplog.set_level(logging.WARNING, logger="corpusmix.curate.docio")
    assert main(["curate", "normalize", "--input", str(inp), "--output", str(tmp_path / "n.parquet")]) == 0
    hits = [r.getMessage() for r in caplog.records if "was dropped when read" in r.getMessage()]
    assert len(hits) == 1 and "a.jsonl" in hits[0] and "malformed_json: 3" in hits[0]
    assert pq.read_table(tmp_path / "n.parquet").num_rows == 3


@pytest.mark.parametrize("params,needle", [
    ("trian:\n  steps: 3\n", "unknown section(s) ['trian']"),
    ("mix:\n  methd: regmix\n", "unknown parameter(s) ['methd'] in mix"),
    ("train: [1, 2\n", "is not valid YAML"),
])
def test_a_params_file_with_an_unknown_key_is_refused(tmp_path, capsys, params, needle):
    (tmp_path / "params.yaml").write_text(params)
    out = tmp_path / "m.json"
    rc = main(["mix", "select", "--params", str(tmp_path / "params.yaml"), "--input", str(tmp_path / "pools"),
               "--output", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and needle in err[0] and not out.exists()


def test_regmix_never_overwrites_a_file_that_is_not_its_report(tmp_path, capsys):
    from bench.lib.pools import write_pools

    pools = write_pools(tmp_path / "pools", {"a": 3000, "b": 3000})
    out = tmp_path / "out" / "regmix.json"
    out.parent.mkdir()
    mine = out.parent / "regmix_report.json"
    mine.write_text('{"my": "notes"}')
    rc = main(["mix", "regmix", "--input", str(pools), "--output", str(out), "--params", str(tmp_path / "none.yaml"),
               "--preset", "micro", "--num-proxies", "4"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and "is not a RegMix fit report: not overwritten" in err[-1]
    assert mine.read_text() == '{"my": "notes"}' and not out.exists()
    mine.unlink()
    rc = main(["mix", "regmix", "--input", str(pools), "--output", str(out), "--params", str(tmp_path / "none.yaml"),
               "--garbage-domains", "c"])
    assert rc == 2 and "--garbage-domains names domain(s) ['c'] that are not in the pools" in capsys.readouterr().err


def test_the_report_flags_a_too_small_evaluation_split():
    from report.inputs import ReportInputs, small_eval_splits

    inputs = ReportInputs(eval_docs={"pools.json": {"code": 4, "news": 180}})
    msg = small_eval_splits(inputs, ["code", "news"])
    assert msg and "code (4 documents)" in msg and "news" not in msg
    assert small_eval_splits(inputs, ["news"]) is None
