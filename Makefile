# One command each for a fresh machine (see README):
#   make demo   install everything, then run the whole pipeline on the shipped demo data (dvc repro)
#   make test   install everything, then run the test suite
# Both are idempotent: a second run reuses the virtual environment.

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# The CPU wheel of torch; installed first so that the `torch>=2.5` range in pyproject.toml does not
# pull a multi-GB CUDA build. Override on a GPU machine: make setup TORCH_SPEC="torch" (then setup
# also installs the gpu extra, flash-attn, or prints why FlashAttention stays off).
TORCH_SPEC ?= torch==2.13.0

.PHONY: setup demo test lint system-deps lmplz clean-venv

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/python -m pip install --quiet "$(TORCH_SPEC)"
	$(BIN)/python -m pip install --quiet -e ".[spark,dev]"
	bash scripts/gpu-extra.sh $(BIN)/python  # CUDA torch + GPU: the gpu extra (flash-attn), else says why not
	touch $@

system-deps:
	bash scripts/system-deps.sh

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

lint: $(VENV)/.installed
	$(BIN)/ruff check .

clean-venv:
	rm -rf $(VENV)
