"""The software a run used, recorded in its outputs (stats, metrics, mixtures, the report).

:func:`environment` is a small, deterministic block: the Python minor version, the versions of the
packages that decide the numbers, whether they are exactly those of one of the repository's lock files
(``requirements/*.lock``, installed by ``make setup``) and the numerics mode (``corpusmix.numerics``).
It holds no time, host or path, so two runs on the same inputs, lock and numerics write the same
bytes; a run outside the lock says so (``"lock": null``) instead of silently differing.
"""

from __future__ import annotations

import hashlib
import re
import sys
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

from corpusmix import __version__, numerics
from corpusmix.paths import ROOT

# the packages whose versions change what the pipeline computes
PACKAGES = ("torch", "numpy", "scipy", "pyarrow", "datatrove", "tokenizers", "lightgbm", "scikit-learn",
            "fasttext-numpy2-wheel", "kenlm", "presidio-analyzer", "detect-secrets", "datasketch", "xxhash",
            "alt-profanity-check", "wordfreq", "ftfy")
LOCK_DIR = ROOT / "requirements"
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)")


def norm_name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def installed(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def lock_pins(path: Path) -> dict[str, str]:
    """``{normalised name: version}`` of a pip requirements lock (``name==version`` lines)."""
    pins: dict[str, str] = {}
    for line in path.read_text().splitlines():
        m = _PIN.match(line.strip())
        if m:
            pins[norm_name(m.group(1))] = m.group(2)
    return pins


@cache
def lock_status() -> dict[str, Any]:
    """Which lock file the installed packages match exactly (name and a hash of its pins), or why none."""
    locks = sorted(LOCK_DIR.glob("*.lock")) if LOCK_DIR.is_dir() else []
    best: tuple[int, str] | None = None
    for path in locks:
        pins = lock_pins(path)
        differ = sorted(n for n, v in pins.items() if installed(n) != v)
        if not differ:
            digest = hashlib.sha256(json_pins(pins).encode()).hexdigest()[:12]
            return {"lock": path.name, "lock_pins_sha256": digest}
        if best is None or len(differ) < best[0]:
            best = (len(differ), path.name)
    return {"lock": None, "nearest_lock": best[1] if best else None, "packages_off_lock": best[0] if best else None}


def json_pins(pins: dict[str, str]) -> str:
    return "\n".join(f"{n}=={v}" for n, v in sorted(pins.items()))


@cache
def source_digest(*packages: str) -> str:
    """sha256 (16 hex) over the relative path and bytes of every file of the named packages (source
    and package data, no ``__pycache__``): what a resumable run holds as its code version, so a
    changed step or word list never resumes work written by other code."""
    import importlib

    h = hashlib.sha256()
    for name in packages:
        root = Path(importlib.import_module(name).__file__ or "").parent
        for f in sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts
                        and p.suffix not in (".pyc", ".pyo")):
            h.update(f"{name}/{f.relative_to(root).as_posix()}\0".encode())
            h.update(hashlib.sha256(f.read_bytes()).digest())
    return h.hexdigest()[:16]


def environment() -> dict[str, Any]:
    """The block recorded in outputs (module docstring)."""
    st = numerics.state()
    return {"corpusmix": __version__, "python": f"{sys.version_info.major}.{sys.version_info.minor}",
            **lock_status(),
            "packages": {p: v for p in PACKAGES if (v := installed(p)) is not None},
            "numerics": {k: st[k] for k in ("mode", "reference", "at_reference", "kernels") if k in st}}
