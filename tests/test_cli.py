"""Every registered subcommand prints a useful --help; the root refuses unknown commands; wrong input
ends any subcommand with one line ``corpusmix: error: ...`` and exit code 2, never a traceback."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from corpusmix.cli import build_parser


def _walk(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = [prefix]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out += _walk(sub, prefix + (name,))
    return out


COMMANDS = _walk(build_parser())


def test_demo_data_is_registered() -> None:
    assert ("demo-data",) in COMMANDS
    assert ("curate",) in COMMANDS


@pytest.mark.parametrize("cmd", COMMANDS, ids=lambda c: " ".join(c) or "root")
def test_help(cmd: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args([*cmd, "--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    assert text.startswith("usage: corpusmix")
    assert len(text.splitlines()) >= 3  # a description or options, not just a usage line


def test_console_script_runs() -> None:
    res = subprocess.run([sys.executable, "-m", "corpusmix", "--version"], capture_output=True, text=True)
    assert res.returncode == 0 and res.stdout.startswith("corpusmix ")


def test_unknown_command_fails() -> None:
    res = subprocess.run([sys.executable, "-m", "corpusmix", "no-such-command"], capture_output=True, text=True)
    assert res.returncode == 2 and "invalid choice" in res.stderr


# ----------------------------------------------------------------------------- bad input: one line, exit 2

def _bad_inputs(tmp: Path) -> dict[str, list[str]]:
    """One wrong input per subcommand family: a missing file, a bad parameter value, an unknown
    domain, duplicate ids, a corrupt or misplaced file."""
    import pandas as pd

    from bench.lib.pools import write_pools

    pools = write_pools(tmp / "pools", {"a": 3000, "b": 3000})
    (tmp / "corrupt.json").write_text("{not json")
    (tmp / "unknown.json").write_text(json.dumps({"weights": {"a": 0.5, "zzz": 0.5}}))
    (tmp / "bad.yaml").write_text("pack:\n  seq_len: abc\nmix:\n  regmix:\n    num_proxies: many\n"
                                  "train:\n  steps: lots\n")
    (tmp / "manual.yaml").write_text("mix:\n  method: manual\n  manual:\n    weights: {a: 0.5, zzz: 0.5}\n")
    pd.DataFrame({"id": ["x", "x"], "text": ["one two three " * 20, "four five six " * 20],
                  "domain": ["a", "a"], "source": ["s", "s"]}).to_parquet(tmp / "dups.parquet")
    no, out, none = str(tmp / "missing"), str(tmp / "out"), str(tmp / "none.yaml")
    return {
        "curate run: missing input": ["curate", "run", "--input", no, "--output", out],
        "curate dedup: duplicate ids": ["curate", "dedup", "--input", str(tmp / "dups.parquet"), "--output", out],
        "curate metrics: missing run": ["curate", "metrics", "--run", no, "--ground-truth", no,
                                        "--output", out + ".json"],
        "tokenize pools: missing curated": ["tokenize", "pools", "--curated", no, "--tokenizer", no, "--output", out],
        "pack: bad param value": ["pack", "--pools", str(pools), "--mixture", "natural", "--output", out,
                                  "--params", str(tmp / "bad.yaml")],
        "pack: mixture is a folder": ["pack", "--pools", str(pools), "--mixture", str(tmp), "--output", out,
                                      "--params", none, "--tokens", "1000"],
        "pack: corrupt mixture": ["pack", "--pools", str(pools), "--mixture", str(tmp / "corrupt.json"),
                                  "--output", out, "--params", none, "--tokens", "1000"],
        "train: bad param value": ["train", "--data", str(pools), "--out-dir", out, "--params", str(tmp / "bad.yaml")],
        "report: missing input": ["report", "--inputs", no, "--output", out + ".html", "--params", none],
        "mix doremi: not a pools folder": ["mix", "doremi", "--input", no, "--output", out + ".json"],
        "mix regmix: bad param value": ["mix", "regmix", "--input", str(pools), "--output", out + ".json",
                                        "--params", str(tmp / "bad.yaml")],
        "mix select: unknown domain": ["mix", "select", "--input", str(pools), "--output", out + ".json",
                                       "--params", str(tmp / "manual.yaml")],
        "mix ablation: unknown domain": ["mix", "ablation", "--input", str(pools), "--output", out + ".json",
                                         "--mixture", f"x={tmp / 'unknown.json'}", "--params", none],
        "mix proxy-run: missing job": ["mix", "proxy-run", "--cache", no, "--key", "proxy-0"],
        "scale fit: missing sweep": ["scale", "fit", "--sweep", no, "--output", out + ".json"],
        "inspect: missing run": ["inspect", "--run", no, "--params", none],
    }


def test_bad_input_is_one_error_line_and_exit_code_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from corpusmix.cli import main

    cases = _bad_inputs(tmp_path)
    # every subcommand family is covered
    assert {c[0] for c in cases.values()} >= {c[0] for c in COMMANDS if c} - {"demo-data"}
    failures = []
    for name, argv in cases.items():
        rc = main(argv)
        err = capsys.readouterr().err
        errors = [ln for ln in err.splitlines() if ln.startswith("corpusmix: error: ")]
        if rc != 2 or len(errors) != 1 or "Traceback" in err:
            failures.append(f"{name}: rc={rc} stderr={err[-300:]!r}")
    assert not failures, "\n".join(failures)


def test_bad_input_in_a_real_process_has_no_traceback(tmp_path: Path) -> None:
    res = subprocess.run([sys.executable, "-m", "corpusmix", "scale", "predict", "--fit", str(tmp_path / "nope.json"),
                          "--output", str(tmp_path / "p.json")], capture_output=True, text=True)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert [ln for ln in res.stderr.splitlines() if not ln.startswith("{")] == [
        f"corpusmix: error: --fit {tmp_path / 'nope.json'} does not exist: run `corpusmix scale fit` first"]


def test_os_errors_read_as_one_line() -> None:
    from corpusmix.cli import error_line

    assert error_line(FileNotFoundError(2, "No such file or directory", "/x/y")) == "no such file or directory: /x/y"
    assert error_line(FileNotFoundError("/x/y")) == "no such file or directory: /x/y"
    assert error_line(ValueError("two\nlines")) == "two lines"


def test_building_the_command_does_not_load_torch() -> None:
    """Only the training commands need torch: every other command (``curate run`` on each worker
    included) starts without its ~1.5 s import."""
    code = ("import sys; from corpusmix.cli import build_parser; build_parser(); "
            "print(sorted(m for m in ('torch', 'presidio_analyzer', 'pyspark') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"
