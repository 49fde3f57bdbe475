"""Typed dataclass configs <-> params.yaml sections <-> argparse flags.

Every component has one frozen-ish dataclass config. The CLI flags are derived from it and
``params.yaml`` sections are validated against it (unknown keys are a clear error, so a typo in
params never silently falls back to a default).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import types
import typing
from pathlib import Path
from typing import Any, TypeVar

import yaml

T = TypeVar("T")


class UserError(ValueError):
    """Wrong user input (a file, a flag, a parameter, data); the message says how to fix it.

    ``corpusmix`` prints it as one line ``corpusmix: error: ...`` and exits with code 2.
    """


class ConfigError(UserError):
    """A user-facing configuration error; the message says how to fix it."""


def _base_type(tp: Any) -> Any:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return _base_type(args[0]) if len(args) == 1 else str
    return tp


def _coerce(name: str, tp: Any, value: Any) -> Any:
    base = _base_type(tp)
    if value is None:
        return None
    origin = typing.get_origin(base)
    try:
        if base is bool:
            if isinstance(value, str):
                if value.lower() in ("1", "true", "yes", "on"):
                    return True
                if value.lower() in ("0", "false", "no", "off"):
                    return False
                raise ValueError(value)
            return bool(value)
        if base in (int, float, str):
            if base is int and isinstance(value, float) and not value.is_integer():
                raise ValueError(value)
            return base(value)
        if origin in (list, tuple):
            if isinstance(value, str):
                value = json.loads(value) if value.strip().startswith("[") else [
                    v for v in value.split(",") if v]
            (inner,) = typing.get_args(base)[:1] or (str,)
            out = [_coerce(name, inner, v) for v in value]
            return tuple(out) if origin is tuple else out
        if origin is dict or base is dict:
            if isinstance(value, str):
                value = json.loads(value)
            if not isinstance(value, dict):
                raise ValueError(value)
            return dict(value)
    except (TypeError, ValueError, json.JSONDecodeError) as exc:
        raise ConfigError(f"parameter {name!r}: cannot read {value!r} as {base}") from exc
    return value


def from_dict(cls: type[T], data: dict[str, Any] | None, *, where: str = "") -> T:
    """Build ``cls`` from a mapping, refusing unknown keys (typos) with the list of valid ones."""
    data = dict(data or {})
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise ConfigError(
            f"unknown parameter(s) {unknown} in {where or cls.__name__}; valid: {sorted(fields)}")
    kwargs = {k: _coerce(k, hints[k], v) for k, v in data.items()}
    return cls(**kwargs)  # type: ignore[call-arg]


def to_dict(cfg: Any) -> dict[str, Any]:
    return dataclasses.asdict(cfg)


#: the top-level sections of params.yaml (one per stage or component); another name is a typo and refused
SECTIONS = frozenset({"demo_data", "tokenizer", "pools", "pack", "report", "mix", "scale", "pii", "toxicity",
                      "decontam", "quality", "curate", "spark", "inspect", "dedup", "dedup_labelled", "train"})


def load_params(path: str | Path = "params.yaml", section: str | None = None) -> dict[str, Any]:
    """Read ``params.yaml`` (or one dotted section of it); a missing file gives ``{}``. A top-level
    section that is not one of :data:`SECTIONS`, or a file that is not a mapping, is a clear error."""
    p = Path(path)
    if not p.exists():
        return {}
    try:
        data = yaml.safe_load(p.read_text()) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{p} is not valid YAML: {' '.join(str(exc).split())}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{p} must be a mapping of sections (demo_data:, curate:, mix:, ...), got {type(data).__name__}")
    unknown = sorted(str(k) for k in data if k not in SECTIONS)
    if unknown:
        raise ConfigError(f"unknown section(s) {unknown} in {p}; valid: {sorted(SECTIONS)}")
    if section:
        for part in section.split("."):
            data = (data or {}).get(part, {})
    return data or {}


def add_config_args(parser: argparse.ArgumentParser, cls: type, *, prefix: str = "") -> None:
    """Add one ``--flag`` per dataclass field (dashes for underscores), defaulting to None.

    None means "not given on the command line", so params.yaml values are only overridden by flags
    that the user actually typed.
    """
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        flag = "--" + prefix + f.name.replace("_", "-")
        default = f.default if f.default is not dataclasses.MISSING else (
            f.default_factory() if f.default_factory is not dataclasses.MISSING else None)  # type: ignore[misc]
        help_txt = (f.metadata.get("help", "") + f" (default: {default!r})").strip()
        base = _base_type(hints[f.name])
        if base is bool:
            parser.add_argument(flag, dest=prefix + f.name, default=None,
                                type=lambda s, n=f.name: _coerce(n, bool, s), metavar="BOOL", help=help_txt)
        else:
            parser.add_argument(flag, dest=prefix + f.name, default=None, help=help_txt)


def config_from(cls: type[T], *, params: dict[str, Any] | None = None,
                args: argparse.Namespace | None = None, prefix: str = "", where: str = "") -> T:
    """params.yaml section, then explicit CLI flags on top."""
    data = dict(params or {})
    if args is not None:
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            v = getattr(args, prefix + f.name, None)
            if v is not None:
                data[f.name] = v
    return from_dict(cls, data, where=where)
