#!/usr/bin/env bash
# System packages the pipeline needs beyond Python wheels, installed only when missing:
#  - Java 17+ for Spark, a C++ toolchain + Boost/zlib/bz2/lzma for building KenLM's `lmplz`,
#  - the C compiler (with g++) and Python's headers for the compiled kernels (curate/_native.c),
#  - Chromium for the headless render tests of the report and of `corpusmix inspect` (driven by
#    Playwright from PyPI with executable_path: no browser download).
# Needs root (or sudo); prints what to install otherwise.
set -euo pipefail
need=()
command -v java >/dev/null 2>&1 || need+=(openjdk-17-jre-headless)
command -v cmake >/dev/null 2>&1 || need+=(cmake)
command -v g++ >/dev/null 2>&1 || need+=(g++)
# the compiled kernels of the curation statistics (curate/_native.c) build against Python's headers
"${PYTHON:-python3}" -c 'import os, sys, sysconfig
sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' 2>/dev/null || need+=(python3-dev)
for pkg in libboost-program-options-dev libboost-system-dev libboost-thread-dev libboost-test-dev \
           zlib1g-dev libbz2-dev liblzma-dev chromium; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -eq 0 ]; then exit 0; fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO=sudo; else
    echo "missing system packages: ${need[*]} (install them as root, e.g. apt-get install ${need[*]})" >&2
    exit 1
  fi
fi
echo "installing system packages: ${need[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
