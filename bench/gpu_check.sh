#!/usr/bin/env bash
# One-shot GPU check of the trainer, sized for one call on a lent GPU machine (about 6-9 minutes on
# an H100/H200 with flash-attn; every step has its own timeout and the script always goes on):
#
#   1. environment: GPU, torch/CUDA, flash-attn, the Python modules the trainer imports
#   2. flash-attn vs SDPA agreement (pytest -m gpu: attention backends, MHA and GQA)
#   3. 2-step FSDP2 smoke run on NCCL with bf16 params vs one unsharded process (bench/gpu_fsdp_smoke.py)
#   4. `corpusmix train` for 3 steps on CUDA (bf16, compile, monitor), the start log names the backend
#   5. bench/bench_gpu_125m.py: tokens/s and MFU of the 125M model (bf16, flash-attn varlen, compile)
#
#   bash bench/gpu_check.sh [OUTDIR]        # default $OUT (device tool) or /tmp/gpu_check
#   PYTHON=/path/to/python bash bench/gpu_check.sh
#
# Results: OUTDIR/summary.txt (one line per step: PASS/FAIL/SKIP + figure) and one log per step;
# copy the 125M JSON line into BENCHMARKS.md (Trainer, GPU) with the GPU model.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-${OUT:-/tmp/gpu_check}}"
mkdir -p "$out"
summary="$out/summary.txt"
: > "$summary"
if [ -z "${PYTHON:-}" ]; then
  PYTHON=python3
  if [ -x .venv/bin/python ] && .venv/bin/python -c "import torch,sys; sys.exit(not torch.cuda.is_available())" 2>/dev/null; then
    PYTHON=.venv/bin/python
  fi
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
note() { echo "$*" | tee -a "$summary"; }

# 1. environment
{
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>&1 || echo "nvidia-smi missing"
  "$PYTHON" - <<'PY'
import importlib, torch
print("python torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available(),
      "gpus", torch.cuda.device_count())
for m in ("flash_attn", "numpy", "yaml", "pyarrow", "tqdm", "dvclive", "pytest"):
    try:
        mod = importlib.import_module(m)
        print(m, getattr(mod, "__version__", "?"))
    except ImportError as exc:
        print(m, "MISSING", exc)
PY
} > "$out/env.txt" 2>&1
cat "$out/env.txt"
if ! "$PYTHON" -c "import torch,sys; sys.exit(not torch.cuda.is_available())" 2>/dev/null; then
  note "FAIL env: no CUDA torch for $PYTHON (see env.txt); nothing else can run"
  exit 1
fi
ngpu=$("$PYTHON" -c "import torch; print(torch.cuda.device_count())")
flash=$("$PYTHON" -c "import flash_attn" 2>/dev/null && echo yes || echo no)
note "env: $(head -2 "$out/env.txt" | tail -1) | $(grep '^python torch' "$out/env.txt") | flash-attn: $flash"

# 2. flash-attn vs SDPA agreement
if [ "$flash" = yes ]; then
  if timeout 180 "$PYTHON" -m pytest -q -m gpu tests/proxytrain/test_attention.py > "$out/agreement.log" 2>&1; then
    note "PASS flash-vs-sdpa: $(tail -1 "$out/agreement.log")"
  else
    note "FAIL flash-vs-sdpa: $(tail -1 "$out/agreement.log") (agreement.log)"
  fi
else
  note "SKIP flash-vs-sdpa: flash-attn is not installed here (pip install 'corpusmix[gpu]')"
fi

# 3. FSDP2 smoke (NCCL, bf16 params, 2 steps) vs one process
nproc=$(( ngpu >= 2 ? 2 : 1 ))
if timeout 240 "$PYTHON" -m torch.distributed.run --standalone --nproc_per_node="$nproc" bench/gpu_fsdp_smoke.py \
     > "$out/fsdp_smoke.log" 2>&1; then
  note "PASS fsdp-smoke ($nproc rank(s)): $(grep '^{' "$out/fsdp_smoke.log" | tail -1)"
else
  note "FAIL fsdp-smoke ($nproc rank(s)): $(grep '^{' "$out/fsdp_smoke.log" | tail -1) (fsdp_smoke.log)"
fi

# 4. the trainer itself on CUDA: bf16 autocast, per-block compile, monitor every step
if timeout 240 "$PYTHON" -m corpusmix.cli train --params "$out/no-params.yaml" --model tiny --seq-len 512 --steps 3 \
     --warmup-steps 1 --vocab-size 512 --compile --monitor-every 1 --ckpt-every 0 --eval-every 3 \
     --dvclive false --progress false --out-dir "$out/train" > "$out/train.log" 2>&1; then
  note "PASS train-3-steps: $(grep -o '"attention": "[a-z]*"' "$out/train.log" | head -1) $(tail -1 "$out/train.log")"
else
  note "FAIL train-3-steps: $(tail -3 "$out/train.log" | tr '\n' ' ') (train.log)"
fi

# 5. 125M MFU: flash-attn varlen + compile (FlexAttention when flash-attn is missing), then plain SDPA
if timeout 300 "$PYTHON" bench/bench_gpu_125m.py --warmup 8 --steps 20 > "$out/mfu_125m.log" 2>&1; then
  note "PASS mfu-125m: $(grep '^{' "$out/mfu_125m.log" | tail -1)"
else
  note "FAIL mfu-125m: $(tail -3 "$out/mfu_125m.log" | tr '\n' ' ') (mfu_125m.log)"
fi
if timeout 150 "$PYTHON" bench/bench_gpu_125m.py --attn sdpa --warmup 8 --steps 20 > "$out/mfu_125m_sdpa.log" 2>&1; then
  note "PASS mfu-125m-sdpa: $(grep '^{' "$out/mfu_125m_sdpa.log" | tail -1)"
else
  note "FAIL mfu-125m-sdpa: $(tail -3 "$out/mfu_125m_sdpa.log" | tr '\n' ' ') (mfu_125m_sdpa.log)"
fi
echo "---- summary ($summary)"
cat "$summary"
! grep -q '^FAIL' "$summary"
