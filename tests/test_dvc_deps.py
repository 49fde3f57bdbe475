"""dvc.yaml declares the code every stage runs, so that ``dvc status`` never says "up to date" after a
change that alters a stage's results.

For each stage whose command is ``corpusmix ...``, the command line is parsed with the real CLI
parser to find its handler; the project modules the handler reaches are collected with an AST walk
(the handler's own imports and those of the same-module helpers it calls, then, transitively, every
import of every module reached, function-local ones included). Each such module must be a dep of
the stage, or lie under a folder that is one. The report stage must also declare every input it
reads.
"""

from __future__ import annotations

import ast
import shlex
from functools import cache
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
ROOMS = ("corpusmix", "curate", "proxytrain", "mix", "report")
# modules that cannot change a stage's outputs: structured logs go to stderr / $CORPUSMIX_LOG only
NO_EFFECT_ON_OUTPUTS = {"corpusmix/logging.py"}
STAGES: dict = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]


def _module_file(module: str) -> Path | None:
    base = ROOT.joinpath(*module.split("."))
    for cand in (base.with_suffix(".py"), base / "__init__.py"):
        if cand.is_file():
            return cand
    return None


def _trivial(path: Path) -> bool:
    """An ``__init__.py`` with nothing but a docstring: importing it changes nothing."""
    body = ast.parse(path.read_text()).body
    return path.name == "__init__.py" and all(
        isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant) for n in body)


def _imports(node: ast.AST, current: str, is_pkg: bool) -> set[str]:
    """Project modules imported anywhere inside ``node`` (also ``importlib.import_module("x")``)."""
    out: set[str] = set()
    for n in ast.walk(node):
        names: list[str] = []
        if isinstance(n, ast.Import):
            names = [a.name for a in n.names]
        elif isinstance(n, ast.ImportFrom):
            mod = n.module or ""
            if n.level:
                parts = current.split(".") if is_pkg else current.split(".")[:-1]
                parts = parts[: len(parts) - (n.level - 1)]
                mod = ".".join([*parts, mod] if mod else parts)
            names = [mod] + [f"{mod}.{a.name}" for a in n.names]
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "import_module" \
                and n.args and isinstance(n.args[0], ast.Constant) and isinstance(n.args[0].value, str):
            names = [n.args[0].value]
        for name in names:
            if name.split(".")[0] not in ROOMS:
                continue
            parts = name.split(".")
            for i in range(1, len(parts) + 1):  # importing a.b.c runs a, a.b and a.b.c
                if _module_file(".".join(parts[:i])) is not None:
                    out.add(".".join(parts[:i]))
    return out


@cache
def module_closure(module: str) -> frozenset[str]:
    """``module`` and every project module it imports, transitively (function-local imports too)."""
    seen: set[str] = set()
    todo = [module]
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        path = _module_file(m)
        if path is not None:
            todo += _imports(ast.parse(path.read_text()), m, path.name == "__init__.py")
    return frozenset(seen)


def handler_modules(module: str, func: str) -> set[str]:
    """Modules a handler reaches: its module's top-level imports, the imports inside the handler and
    the same-module functions and classes it uses, then the full closure of each module imported."""
    path = _module_file(module)
    assert path is not None
    tree = ast.parse(path.read_text())
    is_pkg = path.name == "__init__.py"
    defs = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    seeds = {module}
    for n in tree.body:
        if isinstance(n, (ast.Import, ast.ImportFrom)):
            seeds |= _imports(n, module, is_pkg)
    todo, done = [func], set()
    while todo:
        f = todo.pop()
        if f in done or f not in defs:
            continue
        done.add(f)
        seeds |= _imports(defs[f], module, is_pkg)
        todo += [c.id for c in ast.walk(defs[f]) if isinstance(c, ast.Name) and c.id in defs]
    out = {module}
    for s in seeds - {module}:
        out |= module_closure(s)
    return out


def _argv(cmd: str) -> list[str] | None:
    argv = shlex.split(" ".join(cmd.split()))
    return argv[1:] if argv and argv[0] == "corpusmix" else None


def _covered(path: str, deps: list[str]) -> bool:
    return any(path == d or path.startswith(d.rstrip("/") + "/") for d in deps)


def _dep_paths(stage: dict) -> list[str]:
    return [d if isinstance(d, str) else next(iter(d)) for d in stage.get("deps", [])]


def missing_code_deps(name: str) -> list[str]:
    from corpusmix.cli import build_parser

    stage = STAGES[name]
    argv = _argv(stage["cmd"])
    assert argv is not None
    func = build_parser().parse_args(argv).func
    mods = handler_modules(func.__module__, func.__name__)
    files = sorted({str(p.relative_to(ROOT)) for m in mods if (p := _module_file(m)) and not _trivial(p)})
    return [f for f in files if f not in NO_EFFECT_ON_OUTPUTS and not _covered(f, _dep_paths(stage))]


CORPUSMIX_STAGES = sorted(n for n, s in STAGES.items() if _argv(s["cmd"]) is not None)


def test_every_stage_runs_corpusmix() -> None:
    assert CORPUSMIX_STAGES == sorted(STAGES), "a stage calls something other than `corpusmix`"


def test_walk_follows_handlers_and_function_local_imports() -> None:
    # proxytrain.cli imports its work modules inside the handlers only
    mods = handler_modules("proxytrain.cli", "run_pack")
    assert {"proxytrain.pack", "proxytrain.packing", "corpusmix.mixture", "corpusmix.pools"} <= mods
    # the training handler's modules are not a dep of packing
    assert "proxytrain.train" not in mods


@pytest.mark.parametrize("stage", CORPUSMIX_STAGES)
def test_stage_declares_the_modules_it_runs(stage: str) -> None:
    missing = missing_code_deps(stage)
    assert not missing, f"dvc.yaml stage {stage} misses deps on {missing}"


def test_report_stage_declares_every_input() -> None:
    stage = STAGES["report"]
    argv = _argv(stage["cmd"])
    assert argv is not None and "--inputs" in argv
    inputs = []
    for a in argv[argv.index("--inputs") + 1:]:
        if a.startswith("--"):
            break
        inputs.append(a)
    deps = _dep_paths(stage)
    assert inputs and all(_covered(p, deps) for p in inputs), (inputs, deps)
    # and nothing it reads is produced by itself
    outs = [o if isinstance(o, str) else next(iter(o)) for o in stage.get("outs", [])]
    assert not any(_covered(o, inputs) for o in outs)
