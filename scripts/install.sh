#!/usr/bin/env bash
# Install corpusmix and its dependencies into a virtual environment (called by `make setup`; README
# "Installing"). By default the pinned, hash-checked lock that fits this machine:
#   requirements/<cpu|cuda>-py<XY>.lock   (scripts/lock.sh makes them from pyproject.toml's ranges)
# then corpusmix itself (editable, no dependencies). Says what it installs and why.
#   usage: scripts/install.sh VENV_PYTHON
#   TORCH=auto|cpu|cuda  which torch build (auto: cuda when nvidia-smi lists a GPU, else cpu)
#   TORCH_INDEX=URL      where the CPU build of torch comes from (PyTorch's CPU wheel index)
#   LOCK=auto|none|FILE  auto: the lock for this build, Python and platform; none: the ranges of pyproject.toml
#                        (pip picks the newest allowed versions; the CPU build of torch still comes from
#                        TORCH_INDEX); FILE: that lock
#   LOCK_DIR=requirements  where the locks are;  DRY_RUN=1: say what would be installed, install nothing
set -euo pipefail
py="${1:?usage: scripts/install.sh VENV_PYTHON}"
TORCH=${TORCH:-auto}
TORCH_INDEX=${TORCH_INDEX:-https://download.pytorch.org/whl/cpu}
LOCK=${LOCK:-auto}
LOCK_DIR=${LOCK_DIR:-requirements}
DRY_RUN=${DRY_RUN:-0}
EXTRAS=${EXTRAS:-spark,dev}
pip=("$py" -m pip install --disable-pip-version-check)
say() { echo "setup: $*"; }

case "$TORCH" in
  auto)
    if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then build=cuda
      say "a CUDA GPU is visible (nvidia-smi): torch's CUDA build (TORCH=cpu for the CPU build)"
    else build=cpu
      say "no CUDA GPU here: torch's CPU build from $TORCH_INDEX (TORCH=cuda for the CUDA build)"
    fi ;;
  cpu|cuda) build=$TORCH; say "torch's $build build (TORCH=$TORCH)" ;;
  *) echo "setup: error: TORCH=$TORCH: choose auto, cpu or cuda" >&2; exit 2 ;;
esac

pyver=$("$py" -c 'import sys; print(f"{sys.version_info[0]}{sys.version_info[1]}")')
machine=$("$py" -c 'import platform; print(platform.machine())')
glibc=$("$py" -c 'import platform; print(platform.libc_ver()[1] or "0")')
lock=""
case "$LOCK" in
  none) say "LOCK=none: installing from the version ranges of pyproject.toml (not pinned)" ;;
  auto)
    want="$LOCK_DIR/${build}-py${pyver}.lock"
    glibc_ok=$("$py" -c "print(tuple(map(int, '$glibc'.split('.')[:2])) >= (2, 28))" 2>/dev/null || echo False)
    if [ -f "$want" ] && [ "$machine" = "x86_64" ] && [ "$glibc_ok" = "True" ]; then lock=$want
    else
      have=$( (cd "$LOCK_DIR" 2>/dev/null && ls ./*.lock 2>/dev/null | sed 's|^\./||' | tr '\n' ' ') || true)
      say "WARNING: no lock fits this machine (wanted $want for Linux x86_64 with glibc >= 2.28; this is" \
          "$machine, glibc $glibc, CPython ${pyver:0:1}.${pyver:1}; locks: ${have:-none}). Installing from the" \
          "version ranges of pyproject.toml instead: runs record their package versions (\"lock\": null in" \
          "stats and metrics) and their numbers may differ from the committed dvc.lock. A lock for this" \
          "platform: scripts/lock.sh (PYTHON_VERSION=...)" >&2
    fi ;;
  *) [ -f "$LOCK" ] || { echo "setup: error: LOCK=$LOCK: no such file" >&2; exit 2; }; lock=$LOCK ;;
esac

if [ -n "$lock" ]; then
  n=$(grep -cE '^[A-Za-z0-9][A-Za-z0-9._-]*==' "$lock")
  torch_pin=$(grep -oE '^torch==[^ ]+' "$lock" || true)
  src=""; [ "$build" = cpu ] && src=" from $TORCH_INDEX"
  say "installing $n pinned packages from $lock (hash-checked), ${torch_pin:-no torch pin}$src included"
  [ "$DRY_RUN" = 1 ] && exit 0
  if [ -n "$torch_pin" ]; then
    # torch alone first: only its lookup may use the CPU index (an unreachable index costs retries per package)
    tmp=$(mktemp); trap 'rm -f "$tmp"' EXIT
    awk '/^torch==/{p=1} p{print} p && !/\\$/{exit}' "$lock" > "$tmp"
    extra=(); [ "$build" = cpu ] && extra=(--extra-index-url "$TORCH_INDEX")
    "${pip[@]}" --quiet --no-deps --require-hashes "${extra[@]}" -r "$tmp"
  fi
  "${pip[@]}" --quiet --no-deps --require-hashes -r "$lock"
  "${pip[@]}" --quiet --no-deps -e .
  "$py" -m pip check >/dev/null || { echo "setup: error: the installed packages do not fit together" \
    "('$py -m pip check'); the lock may be stale: scripts/lock.sh" >&2; exit 1; }
else
  if [ "$DRY_RUN" = 1 ]; then say "would install corpusmix[$EXTRAS] from the ranges of pyproject.toml"; exit 0; fi
  if [ "$build" = cpu ] && ! "$py" -c "import torch" 2>/dev/null; then
    say "installing torch (CPU build) from $TORCH_INDEX"
    # only that index (and pip's find-links): another index would offer the CUDA build
    PIP_EXTRA_INDEX_URL="" "${pip[@]}" --quiet torch --index-url "$TORCH_INDEX" || {
      echo "setup: error: torch's CPU build could not be installed from $TORCH_INDEX; set TORCH_INDEX to a" \
           "mirror of PyTorch's CPU wheel index, or install torch into $py first" >&2; exit 1; }
  fi
  say "installing corpusmix[$EXTRAS] from the ranges of pyproject.toml"
  "${pip[@]}" --quiet -e ".[$EXTRAS]"
fi
"$py" - <<'PY'
import importlib.metadata as md, os, sys
import torch
n = len(list(md.distributions()))
print(f"setup: installed: torch {torch.__version__} ({'CUDA ' + torch.version.cuda if torch.version.cuda else 'CPU build'}), "
      f"{n} packages, Python {sys.version.split()[0]} in {os.path.dirname(os.path.dirname(sys.executable))}")
PY
