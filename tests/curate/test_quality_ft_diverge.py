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
