"""The weight updates of DoReMi's Group DRO (``mix.doremi.update``): the softmax closed form of the
KL-regularised step, its limits, the warm-up switch of ``eg_softmax``, config errors and resume."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from mix.doremi import DoReMiConfig, GroupDRO, softmax_weights


def test_softmax_is_the_closed_form_maximiser_of_the_kl_regularised_dro_step():
    e = np.array([0.30, 0.10, 0.25, 0.05])
    c, t = 1e-3, 0.5
    tau = t * e.mean()
    w = softmax_weights(e, temperature=t, smoothing=c)
    raw = np.exp(e / tau) / np.exp(e / tau).sum()
    np.testing.assert_allclose(w, (1 - c) * raw + c / 4, rtol=1e-12)
    assert w.sum() == pytest.approx(1.0)

    # raw maximises <a, e> - tau * KL(a || uniform) over the simplex: no random point does better
    def objective(a):
        return float(a @ e - tau * np.sum(a * np.log(a * 4)))

    best = objective(raw)
    rng = np.random.default_rng(0)
    for a in rng.dirichlet(np.ones(4), size=2000):
        assert objective(a) <= best + 1e-12
    for eps in (1e-3, -1e-3):  # and it is a stationary point along the simplex
        d = np.array([eps, -eps, 0.0, 0.0])
        assert objective(raw + d) < best


def test_softmax_limits_and_unit_free_temperature():
    e = np.array([0.4, 0.2, 0.2, 0.0])
    # tau -> infinity: uniform
    np.testing.assert_allclose(softmax_weights(e, temperature=1e9, smoothing=1e-3), 0.25, atol=1e-8)
    # a large excess gap favours that domain
    w = softmax_weights(np.array([2.0, 0.1, 0.1, 0.1]), temperature=0.1, smoothing=0.0)
    assert w[0] > 0.999
    # a domain with zero excess (learnt garbage) among domains that still have some gets ~ c / k
    c = 0.01
    g = softmax_weights(np.array([0.3, 0.25, 0.35, 0.0]), temperature=0.1, smoothing=c)
    assert g[3] == pytest.approx(c / 4, rel=1e-3) and g[3] >= c / 4
    # no excess at all (the proxy matches the reference everywhere): uniform, not a division by 0
    np.testing.assert_allclose(softmax_weights(np.zeros(4), temperature=0.5, smoothing=1e-3), 0.25)
    # tau is a fraction of the mean excess: the weights do not depend on the excess's unit
    np.testing.assert_allclose(softmax_weights(e * 7.3, temperature=0.5, smoothing=1e-3),
                               softmax_weights(e, temperature=0.5, smoothing=1e-3), rtol=1e-12)
    # equal excesses give uniform weights whatever the temperature
    np.testing.assert_allclose(softmax_weights(np.full(4, 0.2), temperature=0.01, smoothing=0.0), 0.25)


def test_softmax_update_has_no_memory_and_eg_softmax_switches_after_warm_up():
    e1, e2 = np.array([0.9, 0.1, 0.2]), np.array([0.2, 0.3, 0.1])
    dro = GroupDRO(3, eta=4.0, smoothing=1e-3, update="softmax", temperature=0.5)
    dro.update(e1)
    dro.update(e1)  # exponentiated gradient would compound the lead of domain 0; the softmax does not
    np.testing.assert_allclose(dro.weights, softmax_weights(e1, temperature=0.5, smoothing=1e-3), rtol=1e-12)
    dro.update(e2)  # the weights answer the current excess only
    np.testing.assert_allclose(dro.weights, softmax_weights(e2, temperature=0.5, smoothing=1e-3), rtol=1e-12)

    hyb = GroupDRO(3, eta=4.0, smoothing=1e-3, update="eg_softmax", temperature=0.5, average_from=2)
    eg = GroupDRO(3, eta=4.0, smoothing=1e-3, update="eg", average_from=2)
    for _ in range(2):  # warm-up: the paper's exponentiated gradient
        hyb.update(e1)
        eg.update(e1)
    np.testing.assert_allclose(hyb.weights, eg.weights, rtol=1e-12)
    assert hyb.weights[0] > 0.99
    hyb.update(e2)  # the averaged steps: the closed form from the current excess, the warm-up's lead is gone
    np.testing.assert_allclose(hyb.weights, softmax_weights(e2, temperature=0.5, smoothing=1e-3), rtol=1e-12)
    np.testing.assert_allclose(hyb.average(), hyb.weights, rtol=1e-12)
    # held steps (probe excess between updates) keep the weights in both rules
    hyb.hold()
    assert np.array_equal(hyb.history[-1], hyb.weights)


def test_update_config_errors_are_clear():
    with pytest.raises(ValueError, match="update must be one of eg, softmax, eg_softmax"):
        DoReMiConfig(update="sgd").validate()
    for bad in (0.0, -0.5, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="temperature must be a finite number > 0"):
            DoReMiConfig(temperature=bad).validate()
    with pytest.raises(ValueError, match="restart only applies to update: eg"):
        DoReMiConfig(update="softmax", restart=True).validate()
    DoReMiConfig(update="eg", restart=True).validate()
    with pytest.raises(ValueError, match="update must be one of"):
        GroupDRO(3, update="adam")


@pytest.mark.parametrize("update", ["softmax", "eg_softmax"])
def test_resumed_state_continues_the_same_trajectory(update):
    rng = np.random.default_rng(3)
    excess = rng.random((10, 4)) * 0.5
    full = GroupDRO(4, eta=4.0, smoothing=1e-3, update=update, temperature=0.35, average_from=4, ema=0.3)
    for e in excess:
        full.update(e)
    half = GroupDRO(4, eta=4.0, smoothing=1e-3, update=update, temperature=0.35, average_from=4, ema=0.3)
    for e in excess[:5]:
        half.update(e)
    resumed = GroupDRO(4, eta=4.0, smoothing=1e-3, update=update, temperature=0.35, average_from=4, ema=0.3)
    resumed.load_state_dict(json.loads(json.dumps(half.state_dict())))  # as the trainer's checkpoint holds it
    for e in excess[5:]:
        resumed.update(e)
    np.testing.assert_array_equal(resumed.weights, full.weights)
    np.testing.assert_array_equal(resumed.average(), full.average())


def test_cached_dro_runs_are_keyed_by_the_update(tmp_path):
    from mix.doremi import dro_job
    from mix.proxy import ProxyConfig

    pcfg = ProxyConfig(steps=10)
    ref_w = np.array([0.5, 0.5])
    keys = set()
    for cfg in (DoReMiConfig(update="eg"), DoReMiConfig(update="softmax"), DoReMiConfig(update="eg_softmax"),
                DoReMiConfig(update="eg_softmax", temperature=0.25)):
        job = dro_job(tmp_path, cfg, pcfg, 1, ref_w, tmp_path / "reference-x.pt", pcfg, "fp", 0)
        assert job["doremi"] == dataclasses.asdict(cfg)
        keys.add(job["key"])
    assert len(keys) == 4  # a changed update or temperature trains new proxies, never reads another's


def test_domain_clip_takes_the_mean_excess_before_clipping():
    import torch

    from mix.doremi import domain_excess_loss, domain_excess_sums, excess_from_sums

    proxy = torch.tensor([[3.0, 1.0, 2.0, 9.0], [1.0, 1.0, 5.0, 5.0], [1.0, 1.0, 1.0, 1.0]])
    ref = torch.tensor([[1.0, 2.0, 1.0, 0.0], [2.0, 2.0, 1.0, 1.0], [2.0, 2.0, 2.0, 2.0]])
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1], [1, 1, 0, 0]], dtype=torch.bool)
    dom = torch.tensor([0, 0, 1])
    # domain 0, per token: (2, -1, 1) + (-1, -1, 4, 4): clipped per token 11 / 7, mean first 8 / 7
    tok, _ = domain_excess_loss(proxy, ref, mask, dom, 3)
    dom_excess, present = excess_from_sums(domain_excess_sums(proxy, ref, mask, dom, 3, clip="domain"))
    assert tok[0] == pytest.approx(11 / 7) and dom_excess[0] == pytest.approx(8 / 7)
    # domain 1: the proxy is better everywhere: 0 either way, never negative
    assert tok[1] == 0 and dom_excess[1] == 0
    assert present.tolist() == [True, True, False] and dom_excess[2] == 0
    # two models that agree on average: the per-token clip leaves a floor of mean |difference| / 2,
    # largest on the domain whose per-token losses differ most; the domain clip does not
    rng = np.random.default_rng(0)
    diff = torch.tensor(rng.normal(0.0, [[0.2], [1.0]], size=(2, 4000)), dtype=torch.float32)
    diff -= diff.mean(dim=1, keepdim=True)
    full = torch.ones(2, 4000, dtype=torch.bool)
    floor, _ = domain_excess_loss(diff, torch.zeros(2, 4000), full, torch.tensor([0, 1]), 2)
    np.testing.assert_allclose(floor, [0.2 / np.sqrt(2 * np.pi), 1.0 / np.sqrt(2 * np.pi)], rtol=0.05)
    none, _ = excess_from_sums(domain_excess_sums(diff, torch.zeros(2, 4000), full, torch.tensor([0, 1]), 2,
                                                  clip="domain"))
    np.testing.assert_allclose(none, 0.0, atol=1e-6)
    with pytest.raises(ValueError, match="excess clip must be one of token, domain"):
        domain_excess_sums(proxy, ref, mask, dom, 3, clip="sample")
    with pytest.raises(ValueError, match="excess_clip must be one of"):
        DoReMiConfig(excess_clip="row").validate()
