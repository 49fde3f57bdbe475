#!/usr/bin/env bash
# Install the `gpu` extra (flash-attn) when the venv's torch is a CUDA build on a machine with a GPU;
# otherwise say plainly that FlashAttention is off and why. Never fails the setup: training falls
# back to PyTorch SDPA, and `corpusmix train` logs which attention backend it uses.
#   usage: scripts/gpu-extra.sh VENV_PYTHON
set -uo pipefail
py="${1:?usage: scripts/gpu-extra.sh VENV_PYTHON}"
state=$("$py" - <<'PY'
import torch
if torch.version.cuda is None:
    print("cpu-build")
elif not torch.cuda.is_available():
    print("no-gpu")
else:
    try:
        import flash_attn  # noqa: F401
        print("present")
    except ImportError:
        print("install")
PY
)
torch_v=$("$py" -c "import torch; print(torch.__version__)")
case "$state" in
  cpu-build)
    echo "setup: FlashAttention is OFF: torch $torch_v is a CPU build (no GPU at setup, or TORCH=cpu). On a CUDA" \
         "machine run 'make clean-venv && make setup TORCH=cuda' to get it." ;;
  no-gpu)
    echo "setup: FlashAttention is OFF: torch $torch_v has CUDA but no GPU is visible here; rerun" \
         "'make setup' on the GPU machine to install the gpu extra." ;;
  present)
    echo "setup: flash-attn already installed: FlashAttention is ON for CUDA training." ;;
  install)
    echo "setup: CUDA torch $torch_v with a GPU: installing the gpu extra (flash-attn) ..."
    # flash-attn's build needs the installed torch, hence no build isolation; its setup fetches a
    # prebuilt wheel matching torch/CUDA/Python when one exists, else compiles (needs nvcc, slow)
    if "$py" -m pip install --quiet --no-build-isolation -e ".[gpu]"; then
      echo "setup: flash-attn installed: FlashAttention is ON for CUDA training."
    else
      echo "setup: WARNING: FlashAttention is OFF: installing flash-attn failed for torch $torch_v (no" \
           "prebuilt wheel for this torch/CUDA/Python and no working nvcc build). Training uses PyTorch SDPA." \
           "Fix: a torch with a flash-attn wheel (LOCK=FILE), or install the CUDA toolkit and rerun." >&2
    fi ;;
esac
exit 0
