"""Size limits of the production code: modules, functions and module docstrings (docs/architecture.md)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ROOMS = ("corpusmix", "curate", "mix", "proxytrain", "report")
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80
MAX_DOCSTRING_LINES = 30


def _modules() -> list[tuple[str, str]]:
    out = []
    for room in ROOMS:
        for path in sorted((ROOT / room).rglob("*.py")):
            out.append((str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")))
    return out


def test_the_walk_sees_every_room() -> None:
    names = {name.split("/")[0] for name, _ in _modules()}
    assert names == set(ROOMS)


def test_no_module_over_the_limit() -> None:
    long = [f"{name}: {src.count(chr(10))} lines" for name, src in _modules()
            if src.count("\n") > MAX_MODULE_LINES]
    assert not long, f"modules over {MAX_MODULE_LINES} lines: {long}"


def test_no_function_over_the_limit() -> None:
    long = []
    for name, src in _modules():
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    long.append(f"{name}:{node.name} {n} lines")
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines: {long}"


def test_no_module_docstring_over_the_limit() -> None:
    long = []
    for name, src in _modules():
        doc = ast.get_docstring(ast.parse(src), clean=False)
        if doc and doc.count("\n") + 1 > MAX_DOCSTRING_LINES:
            long.append(f"{name}: {doc.count(chr(10)) + 1} lines")
    assert not long, f"module docstrings over {MAX_DOCSTRING_LINES} lines: {long}"
