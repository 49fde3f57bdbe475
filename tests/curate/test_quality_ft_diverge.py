"""fastText divergence (its "Encountered NaN." error): retried, halving the learning rate, then a clear error."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from corpusmix.config import ConfigError
from curate.steps.quality import FT_LR_RETRIES, QualityConfig, train_fasttext


def _docs() -> tuple[list[str], list[str]]:
    rng = random.Random(0)
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa".split()
    pos = [" ".join(rng.choice(words[:5]) for _ in range(30)) for _ in range(200)]
    neg = [" ".join(rng.choice(words[5:]) for _ in range(30)) for _ in range(200)]
    return pos, neg


def test_divergence_is_a_clear_error(tmp_path: Path):
    pos, neg = _docs()
    cfg = QualityConfig(ft_lr=1e6, ft_bucket=1000, ft_dim=8, ft_epoch=5)
    with pytest.raises(ConfigError, match=r"diverged \(NaN\).*lower quality.ft_lr") as e:
        train_fasttext(pos, neg, tmp_path / "m.bin", cfg)
    assert str(1e6 * 0.5 ** FT_LR_RETRIES) in str(e.value)  # every halving was tried
    assert not (tmp_path / "m.bin").exists()


def test_ordinary_rate_trains_without_retry(tmp_path: Path):
    pos, neg = _docs()
    rep = train_fasttext(pos, neg, tmp_path / "m.bin", QualityConfig(ft_dim=8, ft_epoch=5))
    assert "diverged_lr" not in rep and rep["heldout_accuracy"] >= 0.9


_HEAP_SCRIPT = r"""
import ctypes, hashlib, random, sys
from pathlib import Path
from curate.steps.quality import QualityConfig, train_fasttext

libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
libc.mallopt(-3, 1 << 30)  # M_MMAP_THRESHOLD: large blocks come from the heap, so freed ones are reused
libc.mallopt(-1, (1 << 31) - 1)  # M_TRIM_THRESHOLD: the heap keeps what is freed
rng = random.Random(0)
words = "alpha beta gamma delta epsilon zeta eta theta iota kappa".split()
pos = [" ".join(rng.choice(words[:5]) for _ in range(30)) for _ in range(200)]
neg = [" ".join(rng.choice(words[5:]) for _ in range(30)) for _ in range(200)]
out, digests = Path(sys.argv[1]), []
for garbage in (None, 0x7F, 0x41):
    if garbage is not None:  # leave freed memory full of large floats where the matrix will be allocated
        p = libc.malloc(200 << 20)
        ctypes.memset(p, garbage, 200 << 20)
        libc.free(p)
    train_fasttext(pos, neg, out, QualityConfig(ft_dim=8, ft_epoch=5, ft_bucket=200000))
    digests.append(hashlib.sha256(out.read_bytes()).hexdigest())
print(" ".join(digests))
"""


def test_model_does_not_depend_on_what_the_heap_held(tmp_path: Path):
    """fastText reads most of its input matrix unwritten; training must see zeros, not earlier garbage."""
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-c", _HEAP_SCRIPT, str(tmp_path / "m.bin")], capture_output=True,
                       text=True, cwd=Path(__file__).resolve().parents[2], timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    digests = r.stdout.split()
    assert len(digests) == 3 and len(set(digests)) == 1, digests
