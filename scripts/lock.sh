#!/usr/bin/env bash
# Refresh the pinned, hash-checked environments that `make setup` installs (README "Installing"):
#   requirements/cpu-py311.lock   torch's CPU build (PyTorch's CPU wheel index) + every other dependency
#   requirements/cuda-py311.lock  torch's default build from PyPI (CUDA) + the same dependencies
# Both for CPython 3.11 on Linux x86-64 (manylinux_2_28), with the spark and dev extras, made by uv from
# the ranges in pyproject.toml (which stay loose for library users). Review the diff, run `make test`, commit.
#   usage: scripts/lock.sh            (needs uv on PATH or `pip install uv`; reaches PyPI and PyTorch's CPU index)
#   TORCH_VERSION=2.13.0              the torch release both locks pin
#   TORCH_CPU_INDEX=URL               PyTorch's CPU wheel index (default https://download.pytorch.org/whl/cpu)
#   TORCH_FIND_LINKS=DIR              a folder holding the CPU wheel, used instead of the CPU index (a mirror)
#   PYTHON_VERSION=3.11               another CPython minor makes requirements/*-py3XX.lock
set -euo pipefail
cd "$(dirname "$0")/.."
UV=${UV:-uv}
command -v "$UV" >/dev/null 2>&1 || { echo "lock.sh: uv not found; pip install uv (or UV=/path/to/uv)" >&2; exit 2; }
TORCH_VERSION=${TORCH_VERSION:-2.13.0}
PYTHON_VERSION=${PYTHON_VERSION:-3.11}
TORCH_CPU_INDEX=${TORCH_CPU_INDEX:-https://download.pytorch.org/whl/cpu}
tag="py${PYTHON_VERSION/./}"
common=(pyproject.toml --extra spark --extra dev --generate-hashes --python-version "$PYTHON_VERSION"
        --python-platform x86_64-manylinux_2_28 --index-url https://pypi.org/simple --no-annotate --quiet)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
echo "torch==${TORCH_VERSION}+cpu" > "$tmp/cpu.txt"
echo "torch==${TORCH_VERSION}" > "$tmp/cuda.txt"
if [ -n "${TORCH_FIND_LINKS:-}" ]; then cpu_src=(--find-links "$TORCH_FIND_LINKS")
else cpu_src=(--extra-index-url "$TORCH_CPU_INDEX" --index-strategy unsafe-best-match); fi
header() {
  echo "# corpusmix $1 lock: CPython ${PYTHON_VERSION}, Linux x86-64 (manylinux_2_28), extras spark + dev."
  echo "# Made by scripts/lock.sh (uv pip compile) from pyproject.toml; installed by make setup with"
  echo "# pip --require-hashes. $2"
}
"$UV" pip compile "${common[@]}" "${cpu_src[@]}" --override "$tmp/cpu.txt" -o "$tmp/cpu.lock"
{ header cpu "torch comes from PyTorch's CPU wheel index (TORCH_INDEX in the Makefile)."; grep -v '^#' "$tmp/cpu.lock"; } \
  > "requirements/cpu-${tag}.lock"
"$UV" pip compile "${common[@]}" --override "$tmp/cuda.txt" -o "$tmp/cuda.lock"
{ header cuda "torch and its nvidia-* / triton wheels come from PyPI (CUDA build)."; grep -v '^#' "$tmp/cuda.lock"; } \
  > "requirements/cuda-${tag}.lock"
echo "lock.sh: wrote requirements/cpu-${tag}.lock and requirements/cuda-${tag}.lock"
