"""Locate or build KenLM's ``lmplz`` and ``build_binary`` (needed to TRAIN KenLM models).

``pip install kenlm`` only builds the Python scorer; training a model needs the C++ tools from
the same source distribution. ``find_kenlm_tools()`` looks in ``$CORPUSMIX_KENLM_BIN``, then
``tools/bin`` (of the current directory and of the source checkout), then ``$PATH``.
``build_kenlm_tools()`` downloads the kenlm sdist with pip (sdist only, no dependencies), then
runs ``cmake`` + ``make lmplz build_binary`` and copies both binaries into ``tools/bin``.

Run it as ``corpusmix curate build-lmplz`` (about 2 minutes on 2 cores). It needs cmake, a C++
compiler and the Debian packages in ``APT_PACKAGES``::

    apt-get update && apt-get install -y cmake g++ libboost-program-options-dev \
        libboost-system-dev libboost-thread-dev libboost-test-dev zlib1g-dev libbz2-dev liblzma-dev
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from corpusmix.logging import get_logger

log = get_logger("curate.lmplz")

APT_PACKAGES = (
    "cmake", "g++", "libboost-program-options-dev", "libboost-system-dev", "libboost-thread-dev",
    "libboost-test-dev", "zlib1g-dev", "libbz2-dev", "liblzma-dev",
)
TOOLS = ("lmplz", "build_binary")
FIX = ("build it with `corpusmix curate build-lmplz` (or `make lmplz`); that needs "
       f"`apt-get update && apt-get install -y {' '.join(APT_PACKAGES)}`; or set "
       "$CORPUSMIX_KENLM_BIN to a folder that holds lmplz and build_binary")


class KenLMToolsMissing(RuntimeError):
    """lmplz / build_binary are not installed; the message says how to get them."""


def default_tools_dir() -> Path:
    """Where ``build_kenlm_tools`` installs by default: ``./tools/bin``."""
    return Path.cwd() / "tools" / "bin"


def _candidate_dirs() -> list[Path]:
    dirs = []
    env = os.environ.get("CORPUSMIX_KENLM_BIN")
    if env:
        dirs.append(Path(env))
    dirs.append(default_tools_dir())
    dirs.append(Path(__file__).resolve().parents[1] / "tools" / "bin")  # source checkout
    return dirs


def find_kenlm_tools() -> dict[str, Path]:
    """Return ``{"lmplz": path, "build_binary": path}`` or raise ``KenLMToolsMissing``."""
    for d in _candidate_dirs():
        paths = {t: d / t for t in TOOLS}
        if all(p.is_file() and os.access(p, os.X_OK) for p in paths.values()):
            return paths
    found = {t: shutil.which(t) for t in TOOLS}
    if all(found.values()):
        return {t: Path(p) for t, p in found.items()}  # type: ignore[arg-type]
    searched = ", ".join(str(d) for d in _candidate_dirs())
    raise KenLMToolsMissing(f"KenLM's lmplz/build_binary not found (searched {searched} and $PATH); {FIX}")


def _run(cmd: list[str], cwd: Path) -> None:
    log.info("run", extra={"data": {"cmd": " ".join(cmd), "cwd": str(cwd)}})
    proc = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        tail = "\n".join(proc.stdout.splitlines()[-25:])
        raise KenLMToolsMissing(
            f"building KenLM failed at `{' '.join(cmd)}` (exit {proc.returncode}):\n{tail}\n"
            f"Install the build dependencies: apt-get update && apt-get install -y {' '.join(APT_PACKAGES)}")


def build_kenlm_tools(*, dest: str | Path | None = None, sdist: str | Path | None = None,
                      jobs: int | None = None, version: str = "") -> dict[str, Path]:
    """Build lmplz and build_binary from the kenlm source distribution into ``dest``.

    ``sdist`` is a local ``kenlm-*.tar.gz``; without it pip downloads one (no dependencies, no
    wheels). ``version`` pins it (e.g. ``"0.3.0"``). Returns the installed tool paths.
    """
    dest = Path(dest) if dest else default_tools_dir()
    for tool in ("cmake", "make"):
        if shutil.which(tool) is None:
            raise KenLMToolsMissing(f"`{tool}` is not installed; {FIX}")
    jobs = jobs or max(1, os.cpu_count() or 1)
    with tempfile.TemporaryDirectory(prefix="kenlm-build-") as tmp:
        work = Path(tmp)
        if sdist is None:
            spec = f"kenlm=={version}" if version else "kenlm"
            # --no-binary only for kenlm: --no-binary :all: would rebuild cmake from source too.
            # Reading the sdist's metadata needs its build backend: try the current environment
            # first (fast, offline-friendly), then pip's isolated build environment.
            base = [sys.executable, "-m", "pip", "download", spec, "--no-deps", "--no-binary", "kenlm",
                    "-d", str(work)]
            try:
                _run([*base, "--no-build-isolation"], work)
            except KenLMToolsMissing:
                _run(base, work)
            sdists = sorted(work.glob("kenlm-*.tar.gz"))
            if not sdists:
                raise KenLMToolsMissing("pip did not produce a kenlm-*.tar.gz source distribution")
            sdist = sdists[0]
        with tarfile.open(sdist) as tf:
            if hasattr(tarfile, "data_filter"):  # Python >= 3.10.12 / 3.11.4
                tf.extractall(work / "src", filter="data")
            else:
                tf.extractall(work / "src")  # noqa: S202 - the sdist comes from the package index
        roots = [p.parent for p in (work / "src").glob("*/CMakeLists.txt")]
        if not roots:
            raise KenLMToolsMissing(f"{sdist} has no CMakeLists.txt; is it the kenlm sdist?")
        build = roots[0] / "build"
        build.mkdir()
        _run(["cmake", "..", "-DCMAKE_BUILD_TYPE=Release", "-DCOMPILE_TESTS=OFF"], build)
        _run(["make", f"-j{jobs}", "lmplz", "build_binary"], build)
        dest.mkdir(parents=True, exist_ok=True)
        out = {}
        for tool in TOOLS:
            (built,) = list(build.glob(f"bin/{tool}")) or list(build.rglob(tool))[:1] or [None]
            if built is None:
                raise KenLMToolsMissing(f"make finished but {tool} was not produced in {build}")
            target = dest / tool
            shutil.copy2(built, target)
            target.chmod(0o755)
            out[tool] = target
    log.info("kenlm tools built", extra={"data": {k: str(v) for k, v in out.items()}})
    return out
