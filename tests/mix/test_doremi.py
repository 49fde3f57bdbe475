"""Numerics of DoReMi's Group-DRO update (mix/doremi.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from mix.doremi import DoReMiConfig, GroupDRO, domain_excess_loss, iterate_rounds


def test_excess_loss_clips_per_token_and_averages_per_domain():
    proxy = torch.tensor([[3.0, 1.0, 2.0, 9.0], [1.0, 1.0, 5.0, 5.0], [2.0, 2.0, 2.0, 2.0]])
    ref = torch.tensor([[1.0, 2.0, 1.0, 0.0], [2.0, 2.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0]])
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1], [1, 1, 0, 0]], dtype=torch.bool)
    dom = torch.tensor([0, 0, 2])
    excess, present = domain_excess_loss(proxy, ref, mask, dom, 4)
    # domain 0: tokens (2, 0 [clipped from -1], 1) + (0, 0, 4, 4) over 7 target tokens
    assert excess[0] == pytest.approx(11 / 7)
    assert excess[2] == pytest.approx(1.0)
    assert present.tolist() == [True, False, True, False]
    assert excess[1] == 0 and excess[3] == 0


def test_exponentiated_gradient_step_matches_closed_form():
    dro = GroupDRO(3, eta=1.0, smoothing=1e-3)
    excess = np.array([0.5, 0.0, 1.0])
    w = dro.update(excess)
    raw = np.exp(excess) / np.exp(excess).sum()  # from uniform
    expected = (1 - 1e-3) * raw + 1e-3 / 3
    np.testing.assert_allclose(w, expected, rtol=1e-12)
    assert w.sum() == pytest.approx(1.0)
    w2 = dro.update(excess)
    raw2 = w * np.exp(excess)
    np.testing.assert_allclose(w2, (1 - 1e-3) * raw2 / raw2.sum() + 1e-3 / 3, rtol=1e-12)
    np.testing.assert_allclose(dro.average(), (w + w2) / 2, rtol=1e-12)


def test_absent_domain_reuses_last_excess():
    dro = GroupDRO(2, eta=2.0, smoothing=0.0)
    dro.update(np.array([1.0, 0.0]))
    w1 = dro.weights.copy()
    dro.update(np.array([0.0, 0.0]), present=np.array([False, True]))
    # domain 0 keeps excess 1.0, so its log-weight grows by eta * 1 again
    ratio = (dro.weights[0] / dro.weights[1]) / (w1[0] / w1[1])
    assert ratio == pytest.approx(np.exp(2.0))


def test_smoothing_bounds_weights_and_collapse_is_possible_without_it():
    dro = GroupDRO(4, eta=5.0, smoothing=0.1)
    for _ in range(50):
        dro.update(np.array([1.0, 0.0, 0.0, 0.0]))
    assert dro.weights.min() >= 0.1 / 4 - 1e-12
    raw = GroupDRO(4, eta=5.0, smoothing=0.0)
    for _ in range(50):
        raw.update(np.array([1.0, 0.0, 0.0, 0.0]))
    assert raw.weights[0] > 0.999  # the known failure mode smoothing guards against


def test_loss_weights_are_k_times_weights():
    dro = GroupDRO(3)
    dro.update(np.array([0.0, 0.3, 0.0]))
    lw = dro.loss_weights(torch.tensor([1, 0, 1]))
    assert lw.tolist() == pytest.approx([3 * dro.weights[1], 3 * dro.weights[0], 3 * dro.weights[1]], rel=1e-6)


def test_iterated_rounds_stop_on_tolerance():
    targets = [np.array([0.7, 0.3]), np.array([0.6, 0.4]), np.array([0.59, 0.41]), np.array([0.5, 0.5])]
    seen = []

    def run_round(ref, r):
        seen.append(ref.copy())
        return targets[r]

    final, rounds = iterate_rounds(run_round, np.array([0.5, 0.5]), max_rounds=4, tol=0.05)
    assert len(rounds) == 3  # |round2 - round1| = 0.02 < 0.05
    np.testing.assert_allclose(final, [0.59, 0.41])
    np.testing.assert_allclose(seen[1], targets[0])  # each round's reference = previous output
    assert rounds[1]["l1_change"] == pytest.approx(0.2)


def test_bad_config_and_one_domain_are_clear_errors():
    with pytest.raises(ValueError, match="at least 2 domains"):
        GroupDRO(1)
    with pytest.raises(ValueError, match="smoothing"):
        DoReMiConfig(smoothing=1.5).validate()
    with pytest.raises(ValueError, match="reference_mixture"):
        DoReMiConfig(reference_mixture="best").validate()
