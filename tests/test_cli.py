"""Every registered subcommand prints a useful --help; the root refuses unknown commands."""

from __future__ import annotations

import argparse
import subprocess
import sys

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
