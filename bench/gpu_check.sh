#!/usr/bin/env bash
# One-shot GPU check of the trainer, sized for one call on a lent GPU machine. Steps run in order of
# importance under one deadline (DEADLINE seconds, default 420): each step gets its own timeout, cut
# to what is left, and the script always goes on; a step with under 20 s left is skipped (SKIP).
#
#   1. environment: GPU, torch/CUDA, flash-attn or PyTorch's built-in FlashAttention varlen kernel
#   2. FlashAttention varlen vs SDPA on packed rows with document masks, bf16, outputs and gradients
#      (bench/gpu_attn_agreement.py, then pytest -m gpu tests/proxytrain/test_attention.py)
#   3. 2-step FSDP2 smoke run on NCCL with bf16 params vs one unsharded process (bench/gpu_fsdp_smoke.py)
#   4. the trainer (`train` subcommand) for 3 steps on CUDA (bf16, compile, monitor)
#   5. bench/bench_gpu_125m.py: tokens/s, MFU and a profile of the 125M model (bf16, flash varlen, compile)
#   6. bench/bench_gpu_proxy.py: one ~50M DoReMi proxy: tokens/s, share of time outside the kernels
#      (needs token pools in POOLS, default .gpu/rep/pools; build them with mix.replication)
#   7. more 125M variants while time is left: batch 16, then SDPA
#
#   bash bench/gpu_check.sh [OUTDIR]        # default $OUT (device tool) or /tmp/gpu_check
#   PYTHON=/path/to/python DEADLINE=600 bash bench/gpu_check.sh
#
# Results: OUTDIR/summary.txt (one line per step: PASS/FAIL/SKIP + figure) and one log per step.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-${OUT:-/tmp/gpu_check}}"
mkdir -p "$out"
summary="$out/summary.txt"
: > "$summary"
start=$SECONDS
deadline=${DEADLINE:-420}
pools=${POOLS:-.gpu/rep/pools}
if [ -z "${PYTHON:-}" ]; then
  PYTHON=python3
  if [ -x .venv/bin/python ] && .venv/bin/python -c "import torch,sys; sys.exit(not torch.cuda.is_available())" 2>/dev/null; then
    PYTHON=.venv/bin/python
  fi
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
export TORCHINDUCTOR_CACHE_DIR="${TORCHINDUCTOR_CACHE_DIR:-/tmp/inductor-cache}"
note() { echo "$*" | tee -a "$summary"; }
# step NAME TIMEOUT LOG CMD...: run CMD under min(TIMEOUT, time left); PASS/FAIL with the log's last JSON line
step() {
  local name=$1 t=$2 log=$3; shift 3
  local left=$(( deadline - (SECONDS - start) ))
  if [ "$left" -lt 20 ]; then note "SKIP $name: deadline ($deadline s) reached"; return 1; fi
  [ "$t" -gt "$left" ] && t=$left
  local t0=$SECONDS
  if timeout "$t" "$@" > "$out/$log" 2>&1; then
    note "PASS $name ($(( SECONDS - t0 )) s): $(grep '^{' "$out/$log" | grep -v '"ts"' | tail -2 | tr '\n' ' ')"
  else
    note "FAIL $name ($(( SECONDS - t0 )) s, limit $t): $(grep -v '"ts"' "$out/$log" | tail -4 | tr '\n' ' ')"
  fi
}

# 1. environment
{
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv 2>&1 || echo "nvidia-smi missing"
  "$PYTHON" - <<'PY'
import importlib, torch
print("python torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available(),
      "gpus", torch.cuda.device_count())
from proxytrain.attention import flash_impl
print("flash_impl", flash_impl())
for m in ("flash_attn", "triton", "numpy", "yaml", "pyarrow", "tqdm", "pytest"):
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
note "env: $(sed -n 2p "$out/env.txt") | $(grep '^python torch' "$out/env.txt") | $(grep '^flash_impl' "$out/env.txt")"

# 2. FlashAttention varlen vs SDPA (bf16, document masks, outputs and gradients)
step flash-vs-sdpa 90 agreement.log "$PYTHON" bench/gpu_attn_agreement.py
step flash-vs-sdpa-pytest 60 agreement_pytest.log "$PYTHON" -m pytest -q -p no:cacheprovider -m gpu \
  tests/proxytrain/test_attention.py

# 3. FSDP2 smoke (NCCL, bf16 params, 2 steps) vs one process
nproc=$(( ngpu >= 2 ? 2 : 1 ))
step "fsdp-smoke-${nproc}rank" 120 fsdp_smoke.log "$PYTHON" -m torch.distributed.run --standalone \
  --nproc_per_node="$nproc" bench/gpu_fsdp_smoke.py

# 4. the trainer itself on CUDA: bf16 autocast, per-block compile, monitor every step
step train-3-steps 120 train.log "$PYTHON" - <<'PY'
import argparse, sys
from proxytrain import train_cli  # the `train` subcommand alone: the others need curation packages
p = argparse.ArgumentParser()
train_cli.register(p.add_subparsers())
a = p.parse_args("train --params /nonexistent.yaml --model tiny --seq-len 512 --steps 3 --warmup-steps 1 "
                 "--vocab-size 512 --compile --monitor-every 1 --ckpt-every 0 --eval-every 3 --dvclive false "
                 "--progress false --out-dir /tmp/gpu_train".split())
sys.exit(a.func(a))
PY

# 5. 125M: tokens/s, MFU, profile (FlashAttention varlen + compile)
step mfu-125m-flash-b8 200 mfu_125m.log "$PYTHON" bench/bench_gpu_125m.py --attn flash --batch 8 --warmup 6 \
  --steps 20 --profile "$out/profile_125m.txt"

# 6. one ~50M DoReMi proxy
if [ -f "$pools/pools.json" ]; then
  step doremi-proxy-50m 120 proxy.log "$PYTHON" bench/bench_gpu_proxy.py --pools "$pools" --steps 60 \
    --trace "$out/profile_proxy.txt"
else
  note "SKIP doremi-proxy-50m: no pools at $pools"
fi

# 7. variants while time is left
step mfu-125m-flash-b16 150 mfu_125m_b16.log "$PYTHON" bench/bench_gpu_125m.py --attn flash --batch 16 \
  --warmup 6 --steps 20
step mfu-125m-sdpa-b8 150 mfu_125m_sdpa.log "$PYTHON" bench/bench_gpu_125m.py --attn sdpa --batch 8 \
  --warmup 6 --steps 20
echo "---- summary ($summary), $(( SECONDS - start )) s"
cat "$summary"
! grep -q '^FAIL' "$summary"
