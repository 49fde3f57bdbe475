# One command each for a fresh machine (see README):
#   make demo   install everything, then run the whole pipeline on the shipped demo data (dvc repro)
#   make test   install everything, then run the test suite
# Both are idempotent: a second run reuses the virtual environment.

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# What setup installs (scripts/install.sh says which and why; README "Installing"):
#   TORCH=auto|cpu|cuda   torch's build: auto = CUDA when nvidia-smi lists a GPU, else the CPU build
#   TORCH_INDEX=URL       where the CPU build comes from (PyTorch's CPU wheel index)
#   LOCK=auto|none|FILE   auto = the pinned, hash-checked requirements/<cpu|cuda>-py<XY>.lock that fits this
#                         Python and platform (else the ranges, with a warning); none = pyproject.toml's ranges
# On a CUDA machine setup then installs the gpu extra (flash-attn), or prints why FlashAttention stays off.
TORCH       ?= auto
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
LOCK        ?= auto
export TORCH TORCH_INDEX LOCK

.PHONY: setup demo test test-fast lint system-deps lmplz clean-venv lock

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml setup.py curate/_native.c $(wildcard requirements/*.lock) | $(BIN)/python
	bash scripts/install.sh $(BIN)/python
	bash scripts/gpu-extra.sh $(BIN)/python  # CUDA torch + GPU: the gpu extra (flash-attn), else says why not
	touch $@

system-deps:
	PYTHON=$(PYTHON) bash scripts/system-deps.sh

setup: system-deps $(VENV)/.installed lmplz

lmplz: $(VENV)/.installed
	$(BIN)/corpusmix curate build-lmplz

# Both run inside a network namespace with only loopback (scripts/offline.sh): proof that nothing
# is downloaded at run time. Where no namespace can be made they FAIL with the fix in the message;
# ALLOW_NETWORK=1 is the explicit opt-out (the run then proves nothing about downloads).
ALLOW_NETWORK ?= 0

demo: setup
	. $(BIN)/activate && CORPUSMIX_ALLOW_NETWORK=$(ALLOW_NETWORK) scripts/offline.sh dvc repro && dvc metrics show

test: setup
	. $(BIN)/activate && CORPUSMIX_ALLOW_NETWORK=$(ALLOW_NETWORK) scripts/offline.sh python -m pytest -q --durations=30 tests

# the tests not marked slow (no Spark cluster, torchrun, lmplz or end-to-end searches): a quick check
test-fast: setup
	. $(BIN)/activate && CORPUSMIX_ALLOW_NETWORK=$(ALLOW_NETWORK) scripts/offline.sh python -m pytest -q -m "not slow" --durations=15 tests

lint: $(VENV)/.installed
	$(BIN)/ruff check .

clean-venv:
	rm -rf $(VENV)

# refresh requirements/*.lock from pyproject.toml's ranges (needs uv and the network; scripts/lock.sh)
lock:
	bash scripts/lock.sh
