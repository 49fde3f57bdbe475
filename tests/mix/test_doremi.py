"""Numerics of DoReMi's Group-DRO update (mix/doremi.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from bench.lib.pools import write_pools
from mix.doremi import DoReMiConfig, GroupDRO, domain_excess_loss
from mix.doremi_search import iterate_rounds


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


def test_smoothed_excess_and_average_after_warmup():
    dro = GroupDRO(2, eta=1.0, smoothing=0.0, ema=0.5, average_from=2)
    dro.update(np.array([1.0, 0.0]))  # first observation taken as is
    np.testing.assert_allclose(dro.last_excess, [1.0, 0.0])
    dro.update(np.array([0.0, 1.0]))
    np.testing.assert_allclose(dro.last_excess, [0.5, 0.5])  # 0.5 * previous + 0.5 * new
    dro.update(np.array([0.0, 0.0]), present=np.array([False, True]))
    np.testing.assert_allclose(dro.last_excess, [0.5, 0.25])  # absent domain keeps its smoothed excess
    dro.update(np.array([0.0, 0.0]))
    # the output averages the steps after the first two only
    np.testing.assert_allclose(dro.average(), np.mean(dro.history[2:], axis=0), rtol=1e-12)
    assert not np.allclose(dro.average(), np.mean(dro.history, axis=0))
    with pytest.raises(ValueError, match="reference_factor"):
        DoReMiConfig(reference_factor=0.5).validate()


def test_restart_resets_the_weights_when_the_averaged_steps_begin():
    dro = GroupDRO(2, eta=1.0, smoothing=0.0, average_from=2, restart=True)
    for _ in range(2):
        dro.update(np.array([3.0, 0.0]))  # warm-up: domain 0 gets a lead of 6 nats
    assert dro.weights[0] > 0.99
    dro.update(np.array([0.0, 1.0]))  # first averaged step: from uniform, not from the lead
    np.testing.assert_allclose(dro.weights, np.exp([0.0, 1.0]) / np.exp([0.0, 1.0]).sum(), rtol=1e-12)
    state = dro.state_dict()
    again = GroupDRO(2, eta=1.0, smoothing=0.0, average_from=2, restart=True)
    again.load_state_dict(state)
    again.update(np.array([0.0, 1.0]))  # resumed after the restart: no second reset
    np.testing.assert_allclose(again.weights, np.exp([0.0, 2.0]) / np.exp([0.0, 2.0]).sum(), rtol=1e-12)


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


# ----------------------------------------------------------------------------- end to end (tiny pools)

FAST = ["--preset", "micro", "--proxy-steps", "12", "--steps", "12", "--proxy-batch-size", "4",
        "--proxy-seq-len", "32", "--proxy-val-batches", "1", "--params", "/nonexistent.yaml"]


def test_probe_windows_are_fixed_spread_over_the_search_validation_split(tmp_path):
    from mix.doremi import DoReMiConfig, probe_size, probe_windows
    from proxytrain.pools import PoolSampler

    pools = write_pools(tmp_path / "pools", {"a": 6000, "b": 6000, "c": 3000})
    probe = probe_windows(pools, ["a", "b", "c"], seq_len=16, windows=5)
    again = probe_windows(pools, ["a", "b", "c"], seq_len=16, windows=5)
    assert all(torch.equal(probe[key], again[key]) for key in probe)  # no seed: the same windows every time
    val = PoolSampler(pools, seq_len=16, split="val")
    train = PoolSampler(pools, seq_len=16, split="train")
    dom = probe["domain_id"].tolist()
    for i, d in enumerate("abc"):
        lo, hi = val.check_nonempty(d)
        avail = (hi - lo) // 16
        assert dom.count(i) == min(5, avail)
        rows = probe["tokens"][probe["domain_id"] == i]
        # every row is a window of d's search-validation split, starting on a window boundary
        starts = [lo + (j * avail // min(5, avail)) * 16 for j in range(min(5, avail))]
        for r, st in zip(rows, starts, strict=True):
            assert torch.equal(r, val.stack([val.window(i, st)])["tokens"][0])
        assert len(set(starts)) == len(starts) and starts[-1] > lo + (hi - lo) // 2  # spread, not the first windows
        assert train.check_nonempty(d)[1] <= lo  # disjoint from the training split
    # a split with fewer windows than asked gives all it has
    few = probe_windows(pools, ["a", "b", "c"], seq_len=16, windows=10 ** 6)
    assert few["domain_id"].tolist().count(2) == (lambda r: (r[1] - r[0]) // 16)(val.check_nonempty("c"))
    # automatic size: the balanced batch's windows per domain x update_every (cost of the replaced forward)
    assert probe_size(DoReMiConfig(update_every=8), batch_rows=20, k=5) == 32
    assert probe_size(DoReMiConfig(update_every=8, probe_windows=3), batch_rows=20, k=5) == 3
    with pytest.raises(ValueError, match="excess_source"):
        DoReMiConfig(excess_source="train").validate()
    with pytest.raises(ValueError, match="update_every"):
        DoReMiConfig(update_every=0).validate()


def test_probe_objective_updates_every_n_steps_from_the_probe_excess(tmp_path):
    """The excess of a probe update is the clipped per-token excess of the proxy over the reference
    on the probe windows (computed here independently); between updates the weights are held, one
    history entry per step; a repeated step (skipped batch) neither updates twice nor records twice."""
    from mix.doremi import DROObjective, probe_windows
    from mix.proxy import ProxyConfig, build_proxy_model
    from proxytrain.loss import per_token_loss

    pools = write_pools(tmp_path / "pools", {"a": 6000, "b": 6000, "c": 3000})
    cfg = ProxyConfig(model_preset="tiny", d_model=32, n_layers=1, n_heads=2, seq_len=16)
    ref, proxy = build_proxy_model(pools, cfg, 0), build_proxy_model(pools, cfg, 1)
    probe = probe_windows(pools, ["a", "b", "c"], seq_len=16, windows=4)
    dro = GroupDRO(3, eta=2.0 * 3, smoothing=0.0)
    obj = DROObjective(dro, ref, ["a", "b", "c"], probe=probe, update_every=3)
    with torch.no_grad():
        lp, mask = per_token_loss(proxy(probe["tokens"], probe["segment_ids"]), probe["tokens"], probe["segment_ids"])
        lr_, _ = per_token_loss(ref(probe["tokens"], probe["segment_ids"]), probe["tokens"], probe["segment_ids"])
    tok = (lp - lr_).clamp(min=0) * mask
    want = np.array([float(tok[probe["domain_id"] == i].sum() / mask[probe["domain_id"] == i].sum())
                     for i in range(3)])
    proxy.train()
    obj.begin_step(0, proxy)
    assert proxy.training  # eval mode only while scoring the probe
    np.testing.assert_allclose(dro.last_excess, want, rtol=1e-5)
    w0 = dro.weights.copy()
    expect = np.exp(6.0 * want) / np.exp(6.0 * want).sum()
    np.testing.assert_allclose(w0, expect, rtol=1e-5)
    obj.begin_step(0, proxy)  # step 0 again (its batch was skipped): no second update, one record
    np.testing.assert_allclose(dro.weights, w0)
    for step in (1, 2):
        obj.begin_step(step, proxy)
    assert len(dro.history) == 3 and all(np.array_equal(h, w0) for h in dro.history)
    obj.begin_step(3, proxy)  # the next update: same proxy, same probe -> same excess again
    np.testing.assert_allclose(dro.weights, np.exp(12.0 * want) / np.exp(12.0 * want).sum(), rtol=1e-5)
    # the training loss is only reweighted (no reference forward on the batch)
    batch = {"domain_id": torch.tensor([0, 2])}
    out = obj.token_loss(3, batch, torch.ones(2, 4), torch.ones(2, 4, dtype=torch.bool))
    np.testing.assert_allclose(out[:, 0].numpy(), 3 * dro.weights[[0, 2]], rtol=1e-6)
    state = json.loads(json.dumps(obj.state_dict()))  # JSON-able, with the step of the last update
    fresh = DROObjective(GroupDRO(3, eta=6.0, smoothing=0.0), ref, ["a", "b", "c"], probe=probe, update_every=3)
    fresh.load_state_dict(state)
    fresh.begin_step(3, proxy)  # resumed on the step of the last update: not applied twice
    np.testing.assert_allclose(fresh.dro.weights, dro.weights)


def test_doremi_cli_writes_mixture_and_trajectory_and_resumes(tmp_path):
    import json

    from corpusmix.cli import main
    from corpusmix.mixture import load_mixture

    pools = write_pools(tmp_path / "pools", {"a": 6000, "b": 6000, "c": 3000})
    out = tmp_path / "out" / "mixture.json"
    assert main(["mix", "doremi", "--input", str(pools), "--output", str(out), *FAST]) == 0
    mix = load_mixture(out, ["a", "b", "c"])
    assert mix.method == "doremi" and mix.params["doremi"]["eta"] == 1.0
    assert mix.params["doremi"]["smoothing"] == 1e-3
    assert min(mix.weights.values()) >= 1e-3 / 3 - 1e-12
    traj = (tmp_path / "out" / "doremi_trajectory.csv").read_text().splitlines()
    assert traj[0] == "step,a,b,c" and len(traj) == 1 + 12
    rows = [list(map(float, r.split(",")[1:])) for r in traj[1:]]
    # the first seed's output averages the weights of every step (the paper's variant, the default);
    # the mixture is the mean over the seeds, whose per-domain range is reported
    prov = mix.provenance
    assert len(prov["seed_weights"]) == 3 and prov["seeds"] == [1, 2, 3]
    assert mix.params["doremi"]["variant"] == "paper" and mix.params["doremi"]["update"] == "eg"
    np.testing.assert_allclose(np.mean(rows, axis=0), prov["seed_weights"][0], atol=2e-6)
    mean = np.mean(prov["seed_weights"], axis=0)
    np.testing.assert_allclose([mix.weights[d] for d in "abc"], mean / mean.sum(), atol=1e-5)
    ptp = np.ptp(prov["seed_weights"], axis=0)
    assert prov["seed_range"] == pytest.approx(dict(zip("abc", ptp, strict=True)), abs=1e-5)
    cached = sorted(p.name for p in (tmp_path / "out" / "proxies").iterdir())
    # paired references (the default): one per DRO seed, trained with that seed
    assert sum(n.startswith("reference-") and n.endswith(".pt") for n in cached) == 3
    assert sum(n.startswith("doremi-") and n.endswith(".json") for n in cached) == 3
    dro = [json.loads((tmp_path / "out" / "proxies" / n).read_text()) for n in cached if n.startswith("doremi-")]
    assert sorted(r["seed"] for r in dro) == [1, 2, 3]
    assert len({r["reference"] for r in dro}) == 3 and {r["reference"] for r in dro} <= set(cached)
    # a re-run reads the finished round back: same weights, nothing retrained
    mtimes = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "out" / "proxies").iterdir()}
    out2 = tmp_path / "out" / "again.json"
    assert main(["mix", "doremi", "--input", str(pools), "--output", str(out2), *FAST]) == 0
    assert json.loads(out2.read_text())["weights"] == json.loads(out.read_text())["weights"]
    assert {p.name: p.stat().st_mtime_ns for p in (tmp_path / "out" / "proxies").iterdir()} == mtimes
    assert sorted(mtimes) == cached


def test_shared_reference_is_one_model_for_every_seed(tmp_path):
    import json

    from corpusmix.cli import main

    pools = write_pools(tmp_path / "pools", {"a": 6000, "b": 6000})
    cache = tmp_path / "cache"
    out = tmp_path / "m.json"
    assert main(["mix", "doremi", "--input", str(pools), "--output", str(out), "--cache", str(cache), *FAST,
                 "--seeds", "2", "--paired-reference", "false"]) == 0
    refs = sorted(p.name for p in cache.glob("reference-*.pt"))
    assert len(refs) == 1
    assert [json.loads(p.read_text())["reference"] for p in sorted(cache.glob("doremi-*.json"))] == refs * 2
    doc = json.loads(out.read_text())
    assert doc["params"]["doremi"]["paired_reference"] is False
    # the proxies share the reference's noise: their standard error is only a lower bound
    assert doc["provenance"]["n_proxies"] == 2 and doc["provenance"]["se_lower_bound"] is True


def test_group_size_averages_proxies_per_reported_seed(tmp_path):
    """group_size m: each reported seed is the mean of m proxies (own references), the range is
    taken between those means, and the mixture is the mean of every proxy."""
    import json

    from corpusmix.cli import main

    pools = write_pools(tmp_path / "pools", {"a": 6000, "b": 6000})
    cache = tmp_path / "cache"
    out = tmp_path / "m.json"
    assert main(["mix", "doremi", "--input", str(pools), "--output", str(out), "--cache", str(cache), *FAST,
                 "--seeds", "2", "--group-size", "2", "--seed", "10"]) == 0
    doc = json.loads(out.read_text())
    prov = doc["provenance"]
    assert prov["seeds"] == [11, 12, 13, 14] and prov["group_size"] == 2
    proxies = np.array(prov["proxy_weights"])
    groups = np.array(prov["seed_weights"])
    assert proxies.shape == (4, 2) and groups.shape == (2, 2)
    np.testing.assert_allclose(groups, [proxies[:2].mean(0), proxies[2:].mean(0)], atol=2e-6)
    assert [prov["seed_range"][d] for d in "ab"] == pytest.approx(np.ptp(groups, axis=0), abs=2e-6)
    mean = proxies.mean(0)
    np.testing.assert_allclose([doc["weights"][d] for d in "ab"], mean / mean.sum(), atol=1e-5)
    assert len(list(cache.glob("reference-*.pt"))) == 4  # paired: one reference per proxy
    # the mixture's standard error from the 4 independent proxies (each with its own reference)
    sd = proxies.std(axis=0, ddof=1)
    assert prov["n_proxies"] == 4 and prov["se_lower_bound"] is False
    assert [prov["proxy_sd"][d] for d in "ab"] == pytest.approx(sd, abs=2e-6)
    assert [prov["mixture_se"][d] for d in "ab"] == pytest.approx(sd / 2, abs=2e-6)
    assert sorted(json.loads(p.read_text())["seed"] for p in cache.glob("doremi-*.json")) == [11, 12, 13, 14]
    # the proxies of group_size 1 are the first seeds' proxies: their cache is reused, not retrained
    before = {p.name: p.stat().st_mtime_ns for p in cache.iterdir()}
    assert main(["mix", "doremi", "--input", str(pools), "--output", str(tmp_path / "m1.json"), "--cache",
                 str(cache), *FAST, "--seeds", "2", "--seed", "10"]) == 0
    assert {p.name: p.stat().st_mtime_ns for p in cache.iterdir()} == before
    one = json.loads((tmp_path / "m1.json").read_text())["provenance"]
    np.testing.assert_allclose(one["seed_weights"], proxies[:2], atol=2e-6)
    assert "proxy_weights" not in one
    assert "range_sizing" not in prov and "range_sizing" not in one  # under 6 proxies: too rough to size
    # 3 seeds of 2 (seeds 11-16; 11-14 cached): 6 proxies, sized from their own sd
    from mix.doremi_sizing import range_sizing

    assert main(["mix", "doremi", "--input", str(pools), "--output", str(tmp_path / "m3.json"), "--cache",
                 str(cache), *FAST, "--seeds", "3", "--group-size", "2", "--seed", "10"]) == 0
    three = json.loads((tmp_path / "m3.json").read_text())["provenance"]
    assert three["n_proxies"] == 6
    assert three["range_sizing"] == range_sizing(np.array([three["proxy_sd"][d] for d in "ab"]), seeds=3,
                                                 group_size=2, n_proxies=6)
    # two stages (max_group_size): that run is the pilot; its estimate, capped at 3, sizes the rerun,
    # whose first proxies are the pilot's (read back from the cache, not retrained)
    assert three["range_sizing"]["group_size_needed_upper"] > 3  # 2 domains of FAST proxies: a wide spread
    before = {p.name: p.stat().st_mtime_ns for p in cache.iterdir()}
    assert main(["mix", "doremi", "--input", str(pools), "--output", str(tmp_path / "auto.json"), "--cache",
                 str(cache), *FAST, "--seeds", "3", "--group-size", "2", "--max-group-size", "3",
                 "--seed", "10"]) == 0
    auto = json.loads((tmp_path / "auto.json").read_text())["provenance"]
    assert auto["pilot"] == {"group_size": 2, "n_proxies": 6, "max_group_size": 3,
                             "group_size_needed_upper": three["range_sizing"]["group_size_needed_upper"],
                             "seconds": auto["pilot"]["seconds"]}
    assert auto["group_size"] == 3 and auto["seeds"] == list(range(11, 20)) and auto["n_proxies"] == 9
    after = {p.name: p.stat().st_mtime_ns for p in cache.iterdir()}
    assert {n: t for n, t in after.items() if n in before} == before  # the pilot's 6 proxies reused
    assert len([n for n in after if n.startswith("doremi-") and n not in before]) == 3  # seeds 17-19 new
    groups = np.array(auto["seed_weights"])
    np.testing.assert_allclose(groups, np.array(auto["proxy_weights"]).reshape(3, 3, 2).mean(1), atol=2e-6)


def test_bad_inputs_are_clear_errors(tmp_path, capsys):
    from corpusmix.cli import main

    empty = write_pools(tmp_path / "empty", {"a": 3000, "b": 0})
    rc = main(["mix", "doremi", "--input", str(empty), "--output", str(tmp_path / "m.json"), *FAST])
    assert rc == 2 and "have no tokens" in capsys.readouterr().err
    one = write_pools(tmp_path / "one", {"a": 3000})
    rc = main(["mix", "doremi", "--input", str(one), "--output", str(tmp_path / "m.json"), *FAST])
    assert rc == 2 and "at least 2 domains" in capsys.readouterr().err
    rc = main(["mix", "doremi", "--input", str(tmp_path / "nope"), "--output", str(tmp_path / "m.json"), *FAST])
    assert rc == 2 and "token-pools folder" in capsys.readouterr().err
    # a group of no proxies, from the command line and from a params file
    two = write_pools(tmp_path / "two", {"a": 3000, "b": 3000})
    rc = main(["mix", "doremi", "--input", str(two), "--output", str(tmp_path / "m.json"), *FAST, "--group-size", "0"])
    assert rc == 2 and "group_size" in capsys.readouterr().err
    bad = tmp_path / "bad.yaml"
    bad.write_text("mix:\n  doremi:\n    group_size: many\n")
    rc = main(["mix", "doremi", "--input", str(two), "--output", str(tmp_path / "m.json"),
               *FAST[:-2], "--params", str(bad)])  # FAST ends with --params /nonexistent.yaml
    assert rc == 2 and "group_size" in capsys.readouterr().err
    # a pilot too small to size from, and a negative cap
    rc = main(["mix", "doremi", "--input", str(two), "--output", str(tmp_path / "m.json"), *FAST,
               "--seeds", "2", "--max-group-size", "8"])
    assert rc == 2 and "pilot of seeds x group_size proxies, which must be >= 6 (got 2 x 1)" in capsys.readouterr().err
    rc = main(["mix", "doremi", "--input", str(two), "--output", str(tmp_path / "m.json"), *FAST,
               "--max-group-size", "-1"])
    assert rc == 2 and "max_group_size must be >= 0" in capsys.readouterr().err
    assert not (tmp_path / "m.json").exists()
    # a mixture outside the simplex
    good = write_pools(tmp_path / "good", {"a": 3000, "b": 3000})
    params = tmp_path / "params.yaml"
    params.write_text("mix:\n  method: manual\n  manual:\n    weights: {a: 0.7, b: 0.7}\n")
    rc = main(["mix", "select", "--input", str(good), "--output", str(tmp_path / "m.json"), "--params", str(params)])
    assert rc == 2 and "sum to" in capsys.readouterr().err
    params.write_text("mix:\n  method: manual\n  manual:\n    weights: {a: 1.2, b: -0.2}\n")
    rc = main(["mix", "select", "--input", str(good), "--output", str(tmp_path / "m.json"), "--params", str(params)])
    assert rc == 2 and ">= 0" in capsys.readouterr().err
    from mix.proxy import ProxyConfig, train_proxy

    with pytest.raises(ValueError, match="outside the simplex"):
        train_proxy(good, [0.9, 0.3], ProxyConfig(steps=1))


def test_select_materialises_natural_uniform_and_manual(tmp_path):
    import json

    from corpusmix.cli import main

    pools = write_pools(tmp_path / "pools", {"a": 3000, "b": 1000})
    tok = json.loads((pools / "pools.json").read_text())["domains"]
    out = tmp_path / "m.json"
    assert main(["mix", "select", "--input", str(pools), "--output", str(out), "--method", "natural",
                 "--params", str(tmp_path / "none.yaml")]) == 0
    w = json.loads(out.read_text())
    assert w["method"] == "natural"
    assert w["weights"]["a"] == pytest.approx(tok["a"]["tokens"] / (tok["a"]["tokens"] + tok["b"]["tokens"]))
    assert main(["mix", "select", "--input", str(pools), "--output", str(out), "--method", "uniform",
                 "--params", str(tmp_path / "none.yaml")]) == 0
    assert json.loads(out.read_text())["weights"] == {"a": 0.5, "b": 0.5}
    params = tmp_path / "params.yaml"
    params.write_text("mix:\n  method: manual\n  manual:\n    weights: {a: 0.25, b: 0.75}\n")
    assert main(["mix", "select", "--input", str(pools), "--output", str(out), "--params", str(params)]) == 0
    got = json.loads(out.read_text())
    assert got["weights"] == {"a": 0.25, "b": 0.75} and got["provenance"]["selected"] == "manual"


def test_select_keeps_a_search_only_when_the_ablation_shows_it_better(tmp_path, capsys):
    import json

    from corpusmix.cli import main

    pools = write_pools(tmp_path / "pools", {"a": 3000, "b": 1000})
    found = tmp_path / "regmix.json"
    found.write_text(json.dumps({"weights": {"a": 0.3, "b": 0.7}, "method": "regmix"}))
    nat, uni = [5.00, 5.10, 5.05, 5.02, 5.08], [5.01, 5.12, 5.04, 5.03, 5.10]

    def run(regmix_losses: list[float]) -> dict:
        abl = tmp_path / "ablation.json"
        abl.write_text(json.dumps({"mixtures": {"natural": {"avg_per_seed": nat}, "uniform": {"avg_per_seed": uni},
                                                "regmix": {"avg_per_seed": regmix_losses}}}))
        out = tmp_path / "m.json"
        assert main(["mix", "select", "--input", str(pools), "--output", str(out), "--method", "regmix",
                     "--regmix", str(found), "--ablation", str(abl), "--params", str(tmp_path / "none.yaml")]) == 0
        return json.loads(out.read_text())

    won = run([x - 0.05 - 0.001 * i for i, x in enumerate(nat)])  # lower than both in every seed
    assert won["weights"] == {"a": 0.3, "b": 0.7} and won["provenance"]["selected"] == "regmix"
    lost = run([x + 0.01 * (-1) ** i for i, x in enumerate(nat)])  # no difference shown
    assert lost["method"] == "natural" and lost["provenance"]["requested"] == "regmix"
    assert lost["weights"]["a"] == pytest.approx(0.75, abs=0.01)  # natural: the lower-mean baseline
    assert "falling back to natural" in capsys.readouterr().err
    abl = tmp_path / "ablation.json"
    abl.write_text(json.dumps({"mixtures": {"natural": {"avg_per_seed": nat}}}))
    assert main(["mix", "select", "--input", str(pools), "--output", str(tmp_path / "x.json"), "--method", "regmix",
                 "--regmix", str(found), "--ablation", str(abl), "--params", str(tmp_path / "none.yaml")]) == 2
    assert "has no ['regmix', 'uniform'] mixture(s)" in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()


def test_iterated_doremi_uses_previous_output_as_reference(tmp_path):
    import json

    from corpusmix.cli import main

    pools = write_pools(tmp_path / "pools", {"a": 4000, "b": 4000})
    out = tmp_path / "out" / "mixture.json"
    # one shared reference per round: iteration is what is tested (paired references: another test);
    # 2 seeds of 2 proxies each: the groups are re-formed from each round's own proxies
    assert main(["mix", "doremi", "--input", str(pools), "--output", str(out), *FAST,
                 "--iterate", "true", "--max-rounds", "2", "--tol", "0", "--paired-reference", "false",
                 "--seeds", "2", "--group-size", "2"]) == 0
    got = json.loads(out.read_text())
    rounds = got["provenance"]["rounds"]
    assert [r["round"] for r in rounds] == [0, 1]
    assert rounds[1]["reference"] == pytest.approx(rounds[0]["weights"])
    assert [got["weights"][d] for d in "ab"] == pytest.approx(rounds[1]["weights"])
    proxies = np.array(got["provenance"]["proxy_weights"])  # the last round's 4 proxies
    assert proxies.shape == (4, 2)
    np.testing.assert_allclose(got["provenance"]["seed_weights"], [proxies[:2].mean(0), proxies[2:].mean(0)],
                               atol=2e-6)
    np.testing.assert_allclose(rounds[1]["weights"], proxies.mean(0) / proxies.mean(0).sum(), atol=1e-5)
    assert len((tmp_path / "out" / "doremi_trajectory.csv").read_text().splitlines()) == 1 + 2 * 12


def test_domain_too_small_for_the_splits_is_left_out_of_the_search(tmp_path):
    """Curation may leave a domain with 1-2 documents: no search-validation or evaluation document,
    so it cannot be searched or judged; the search leaves it out (weight 0) instead of failing."""
    import json

    from corpusmix.cli import main
    from mix.proxy import pool_domains

    pools = write_pools(tmp_path / "pools", {"a": 3000, "b": 3000, "tiny": 100})  # tiny: 2 docs
    assert json.loads((pools / "pools.json").read_text())["domains"]["tiny"]["val_docs"] == 0
    assert sorted(pool_domains(pools)) == ["a", "b"]
    out = tmp_path / "m.json"
    rc = main(["mix", "doremi", "--input", str(pools), "--output", str(out), "--cache", str(tmp_path / "c"), *FAST])
    assert rc == 0
    weights = json.loads(out.read_text())["weights"]
    assert sorted(weights) == ["a", "b"] and abs(sum(weights.values()) - 1) < 1e-9
    # every split's view leaves out the same domain (the ablation reads the evaluation split)
    assert sorted(pool_domains(pools, split="val")) == sorted(pool_domains(pools, split="eval")) == ["a", "b"]
    abl = tmp_path / "ablation.json"
    i = FAST.index("--steps")
    fast = FAST[:i] + FAST[i + 2:]  # the ablation has no DoReMi --steps
    rc = main(["mix", "ablation", "--input", str(pools), "--output", str(abl), "--cache", str(tmp_path / "ca"),
               "--mixture", "natural", "--mixture", f"doremi={out}", "--seeds", "1", *fast])
    assert rc == 0
    assert sorted(json.loads(abl.read_text())["domains"]) == ["a", "b"]


def test_range_sizing_matches_a_direct_simulation_of_grouped_runs():
    """The proxies per seed a seed range <= 0.05 needs, from per-proxy sds: its scaled shortcut
    agrees with simulating the grouped runs themselves (m proxies per seed, 3 seeds, another rng)."""
    from mix.doremi_sizing import range_sizing

    sd = np.array([0.052, 0.036, 0.007, 0.023, 0.029, 0.022, 0.075])  # the demo pools' per-proxy sds
    rng = np.random.default_rng(123)

    def direct(m: int, runs: int = 4000) -> float:  # share of simulated runs with every range <= 0.05
        seeds = rng.standard_normal((runs, 3, m, sd.size)).mean(axis=2) * sd
        return float(np.mean(np.ptp(seeds, axis=1).max(axis=1) <= 0.05))

    got = {m: range_sizing(sd, seeds=3, group_size=m, n_proxies=144) for m in (1, 4, 16)}
    for m, r in got.items():
        assert r["p_at_group_size"] == pytest.approx(direct(m), abs=0.03)
    assert got[1]["p_at_group_size"] < got[4]["p_at_group_size"] < got[16]["p_at_group_size"] < 0.95
    need = got[4]["group_size_needed"]
    assert need == got[16]["group_size_needed"] and 16 < need < 40
    assert range_sizing(sd, seeds=3, group_size=need, n_proxies=144)["p_at_group_size"] >= 0.95
    assert range_sizing(sd, seeds=3, group_size=need - 1, n_proxies=144)["p_at_group_size"] < 0.95
    assert range_sizing(sd, seeds=3, group_size=4, n_proxies=144) == got[4]  # fixed rng: the same answer
    flat = range_sizing(np.zeros(3), seeds=3, group_size=1, n_proxies=6)
    assert flat["p_at_group_size"] == 1.0 and flat["group_size_needed"] == flat["group_size_needed_upper"] == 1
    # the upper bound: every sd x sqrt((n-1) / chi2 quantile), the 90 % one-sided bound of a normal sd
    from scipy.stats import chi2

    for n in (6, 12, 144):
        r = range_sizing(sd, seeds=3, group_size=4, n_proxies=n)
        up = range_sizing(sd * np.sqrt((n - 1) / chi2.ppf(0.1, n - 1)), seeds=3, group_size=4, n_proxies=n)
        assert r["group_size_needed_upper"] == up["group_size_needed"] >= r["group_size_needed"]
    assert range_sizing(sd, seeds=3, group_size=4, n_proxies=12)["sd_inflation"] == pytest.approx(1.40, abs=0.01)


def test_reference_mixtures():
    from corpusmix.config import ConfigError
    from mix.doremi_search import reference_weights

    tokens = {"a": 300, "junk": 600, "b": 100}
    np.testing.assert_allclose(reference_weights("natural", tokens, None), [0.3, 0.6, 0.1])
    np.testing.assert_allclose(reference_weights("uniform", tokens, None), [1 / 3] * 3)
    # targets: equal weights on the targets, none on junk (the reference never learns junk)
    np.testing.assert_allclose(reference_weights("targets", tokens, ["a", "b"]), [0.5, 0.0, 0.5])
    # no targets named: every domain is one
    np.testing.assert_allclose(reference_weights("targets", tokens, None), [1 / 3] * 3)
    with pytest.raises(ConfigError, match="needs the target domains"):
        reference_weights("targets", tokens, ["c"])
