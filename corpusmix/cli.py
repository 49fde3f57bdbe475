"""The ``corpusmix`` console command: one command, subcommands registered by each room.

Each module listed in ``COMMAND_MODULES`` exposes ``register(subparsers)`` and adds its own
subcommand(s) with a handler in ``set_defaults(func=...)``. A subcommand is listed here only once
it works. Heavy dependencies are imported inside the handlers, so ``--help`` stays fast. Before any of
them loads, :func:`corpusmix.numerics.configure` caps the ISA of the numeric libraries (the same bytes
on every x86-64 CPU; docs/reproducibility.md). Wrong user
input (:class:`corpusmix.config.UserError`, a missing or unreadable file) ends the command with
one line ``corpusmix: error: ...`` and exit code 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from corpusmix import __version__, numerics
from corpusmix.config import UserError
from corpusmix.logging import configure

COMMAND_MODULES: list[str] = [
    "curate.demo.data",
    "curate.cli",
    "curate.inspection.cli",
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
    numerics.configure()  # before torch and numpy load (the subcommands' modules import them)
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    configure(args.log_level)
    numerics.log_messages()
    try:
        rc = args.func(args)
    except USER_ERRORS as exc:
        print(f"corpusmix: error: {error_line(exc)}", file=sys.stderr)
        return 2
    return int(rc or 0)


# Wrong input reported as one line and exit code 2 (as argparse does for wrong flags); anything
# else is a bug and keeps its traceback.
USER_ERRORS = (UserError, FileNotFoundError, NotADirectoryError, IsADirectoryError, PermissionError)


OS_ERROR_TEXT = {FileNotFoundError: "no such file or directory", NotADirectoryError: "not a directory",
                 IsADirectoryError: "is a directory", PermissionError: "permission denied"}


def error_line(exc: BaseException) -> str:
    """One line for the user: the message of a :class:`UserError`, or what and where for an OS error."""
    msg = str(exc) or type(exc).__name__
    if isinstance(exc, OSError):
        what = (exc.strerror or OS_ERROR_TEXT.get(type(exc), "")).lower()
        where = exc.filename if exc.filename is not None else (str(exc) if not exc.strerror else "")
        msg = f"{what}: {where}" if what and where else what or msg
    return " ".join(str(msg).split())


if __name__ == "__main__":
    sys.exit(main())
