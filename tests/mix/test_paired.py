"""Paired comparisons (mix.paired) against scipy's own paired tests and hand-computed values."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from mix.paired import compare_all, holm, paired_stats, sentence, verdict


def test_paired_stats_match_scipy():
    rng = np.random.default_rng(0)
    a = rng.normal(5.0, 0.1, 7)
    b = a + rng.normal(0.03, 0.01, 7)
    s = paired_stats(a, b)
    ref = stats.ttest_rel(b, a)
    assert s["t_p"] == pytest.approx(ref.pvalue, rel=1e-9)
    assert s["mean_diff"] == pytest.approx(float(np.mean(b - a)))
    ci = ref.confidence_interval(0.95)
    assert s["ci"] == pytest.approx([ci.low, ci.high], rel=1e-9)
    assert s["wins"] == 7 and s["losses"] == 0
    assert s["sign_p"] == pytest.approx(2 * 0.5 ** 7)


def test_holm_adjustment():
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])
    assert holm([]) == []


def test_verdicts_and_sentences():
    assert verdict(0.1, 0.01) == "better" and verdict(-0.1, 0.01) == "worse"
    assert verdict(0.1, 0.2) == "no difference shown"
    rows = compare_all({"x": [1.0, 1.1, 1.2], "y": [1.1, 1.2, 1.31], "z": [1.0, 1.1, 1.2]})
    xy = next(r for r in rows if (r["a"], r["b"]) == ("x", "y"))
    assert xy["verdict"] == "better" and "x is better than y" in sentence(xy)
    xz = next(r for r in rows if (r["a"], r["b"]) == ("x", "z"))
    assert xz["verdict"] == "no difference shown" and xz["t_p"] == 1.0


def test_bad_input_is_a_clear_error():
    with pytest.raises(ValueError, match="same seeds"):
        paired_stats([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="non-finite"):
        paired_stats([1.0, float("nan")], [1.0, 2.0])
    one = paired_stats([1.0], [1.2])
    assert one["t_p"] == 1.0 and one["n"] == 1
