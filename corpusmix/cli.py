"""The ``corpusmix`` console command: one command, subcommands registered by each room.

Each module listed in ``COMMAND_MODULES`` exposes ``register(subparsers)`` and adds its own
subcommand(s) with a handler in ``set_defaults(func=...)``. A subcommand is listed here only once
it works. Heavy dependencies are imported inside the handlers, so ``--help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from corpusmix import __version__
from corpusmix.config import ConfigError
from corpusmix.logging import configure

COMMAND_MODULES: list[str] = [
    "curate.demo_data",
    "curate.cli",
    "proxytrain.cli",
    "proxytrain.train_cli",
    "report.cli",
    "mix.cli",
    "proxytrain.scale_cli",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="corpusmix",
        description="Curate, mix and pack text corpora for LLM pretraining, and train on them.")
    parser.add_argument("--version", action="version", version=f"corpusmix {__version__}")
    parser.add_argument("--log-level", default="INFO", help="logging level of the JSONL logs on stderr")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for mod in COMMAND_MODULES:
        importlib.import_module(mod).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    configure(args.log_level)
    try:
        rc = args.func(args)
    except ConfigError as exc:
        print(f"corpusmix: error: {exc}", file=sys.stderr)
        return 2
    return int(rc or 0)


if __name__ == "__main__":
    sys.exit(main())
