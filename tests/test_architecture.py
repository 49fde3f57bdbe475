"""The rooms' import layering (docs/architecture.md), checked on the source with an AST walk.

Every ``import`` counts, module-level and function-local alike: a local import hides an edge from
a reader, not from this test. Layers, bottom first::

    corpusmix  <-  curate
    corpusmix  <-  proxytrain  <-  mix  <-  report

A room may import its own modules and the rooms below it, never one above or beside it, and no
private (``_name``) member of another room.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ROOMS = ("corpusmix", "curate", "proxytrain", "mix", "report")
# which rooms each room may import (itself included)
ALLOWED: dict[str, set[str]] = {
    "corpusmix": {"corpusmix"},
    "curate": {"corpusmix", "curate"},
    "proxytrain": {"corpusmix", "proxytrain"},
    "mix": {"corpusmix", "proxytrain", "mix"},
    "report": {"corpusmix", "proxytrain", "mix", "report"},
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _sources() -> dict[str, Path]:
    out = {}
    for room in ROOMS:
        for path in sorted((ROOT / room).rglob("*.py")):
            out[_module_name(path)] = path
    return out


SOURCES = _sources()


def _resolve(module: str, level: int, current: str, is_pkg: bool) -> str:
    if not level:
        return module
    base = current.split(".")
    base = base if is_pkg else base[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join([*base, module] if module else base)


def imports_of(name: str, path: Path) -> list[tuple[str, str | None, int]]:
    """``(target module, imported name or None, line)`` for every import in the file."""
    tree = ast.parse(path.read_text(), filename=str(path))
    out: list[tuple[str, str | None, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, None, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            mod = _resolve(node.module or "", node.level, name, path.name == "__init__.py")
            for a in node.names:
                sub = f"{mod}.{a.name}"
                # ``from pkg import module`` imports the module; ``from module import name`` a member
                out.append((sub, None, node.lineno) if sub in SOURCES else (mod, a.name, node.lineno))
    return out


def _room(module: str) -> str | None:
    top = module.split(".")[0]
    return top if top in ROOMS else None


def _private_members() -> dict[str, set[str]]:
    """Room -> private names (``_x``, not dunders) defined in it: functions, classes, class members."""
    out: dict[str, set[str]] = defaultdict(set)
    for name, path in SOURCES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                n = node.name
            elif isinstance(node, ast.Assign):
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
                n = names[0] if names else ""
            else:
                continue
            if n.startswith("_") and not n.startswith("__"):
                out[_room(name) or ""].add(n)
    return out


def _violations() -> tuple[list[str], list[str], dict[str, set[str]]]:
    layering, private = [], []
    edges: dict[str, set[str]] = defaultdict(set)
    privates = _private_members()
    for name, path in SOURCES.items():
        room = _room(name)
        assert room is not None
        rel = path.relative_to(ROOT)
        for target, member, line in imports_of(name, path):
            troom = _room(target)
            if troom is None:
                continue
            if troom != room:
                edges[room].add(troom)
            if troom not in ALLOWED[room]:
                layering.append(f"{rel}:{line}: {room} imports {target}")
            if troom != room and member and member.startswith("_") and not member.startswith("__"):
                private.append(f"{rel}:{line}: private {target}.{member} of room {troom}")
        # attribute access to a private member that only another room defines (e.g. obj._helper())
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
                if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                    continue
                owners = {r for r, names in privates.items() if node.attr in names}
                if owners and room not in owners:
                    private.append(f"{rel}:{node.lineno}: private member .{node.attr} of room "
                                   f"{'/'.join(sorted(owners))}")
    return layering, private, edges


LAYERING, PRIVATE, EDGES = _violations()

# Known violations in modules that are being changed elsewhere at the moment ("<file>: <what>",
# without the line number); remove an entry when its module is fixed. Anything NOT listed fails.
PENDING: set[str] = set()


def _unexpected(found: list[str]) -> list[str]:
    out = []
    for v in found:
        where, what = v.split(": ", 1)
        if f"{where.rsplit(':', 1)[0]}: {what}" not in PENDING:
            out.append(v)
    return out


def test_import_walk_sees_function_local_imports() -> None:
    src = ROOT / "proxytrain" / "cli.py"
    targets = {t for t, _, _ in imports_of("proxytrain.cli", src)}
    # proxytrain.cli imports its work modules inside the handlers only
    assert "proxytrain.pack" in targets and "corpusmix.mixture" in targets


def test_rooms_import_only_rooms_below() -> None:
    assert not _unexpected(LAYERING), "\n".join(LAYERING)


def test_no_cycle_between_rooms() -> None:
    seen: dict[str, int] = {}

    def visit(room: str, stack: list[str]) -> None:
        seen[room] = 1
        for nxt in sorted(EDGES.get(room, ())):
            if seen.get(nxt) == 1:
                pytest.fail("import cycle between rooms: " + " -> ".join([*stack, room, nxt]))
            if nxt not in seen:
                visit(nxt, [*stack, room])
        seen[room] = 2

    for room in ROOMS:
        if room not in seen:
            visit(room, [])


def test_no_private_member_of_another_room() -> None:
    assert not _unexpected(PRIVATE), "\n".join(PRIVATE)


def _module_cycles() -> list[list[str]]:
    """Strongly connected groups of more than one module in the import graph (function-local and
    type-only imports included), sorted."""
    edges: dict[str, set[str]] = defaultdict(set)
    for name, path in SOURCES.items():
        for target, _, _ in imports_of(name, path):
            t = target
            while t and t not in SOURCES:  # ``from pkg import name``: the package's module
                t = t.rsplit(".", 1)[0] if "." in t else ""
            if t and t != name:
                edges[name].add(t)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    groups: list[list[str]] = []

    def strong(v: str) -> None:  # Tarjan
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(SOURCES):
        if v not in index:
            strong(v)
    return sorted(groups)


# Module cycles that remain, each with why it is still there; any other cycle fails, and an entry
# whose cycle is gone fails too (remove it). None remains: any cycle fails.
PENDING_CYCLES: dict[tuple[str, ...], str] = {}


def test_no_import_cycle_between_modules() -> None:
    found = {tuple(g) for g in _module_cycles()}
    assert not found - set(PENDING_CYCLES), f"new import cycle(s): {sorted(found - set(PENDING_CYCLES))}"
    assert not set(PENDING_CYCLES) - found, f"gone, remove from PENDING_CYCLES: {sorted(set(PENDING_CYCLES) - found)}"


def _doc_layers() -> dict[str, set[str]]:
    """The rooms each room may import, from docs/architecture.md's ``Layers:`` line (bottom first)."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    lines = [ln for ln in text.splitlines() if ln.startswith("Layers (checked")]
    assert len(lines) == 1, "docs/architecture.md must hold one 'Layers (checked ...):' line"
    allowed: dict[str, set[str]] = defaultdict(set)
    for chain in lines[0].split(":", 1)[1].split(";"):
        rooms = [r.strip(" `./") for r in chain.split("<-")]
        for i, room in enumerate(rooms):
            allowed[room] |= set(rooms[: i + 1])
    return dict(allowed)


def test_the_documented_layers_are_the_tested_ones() -> None:
    assert _doc_layers() == ALLOWED
