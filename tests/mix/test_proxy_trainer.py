"""Proxies are trainer runs: the same numbers as the former proxy-only loop, DoReMi under 2-rank
FSDP equal to one process, a killed DoReMi proxy resumes its trajectory, bad input refused early.

The former loop's numbers (``tests/mix/data/proxy_loop_1d15e2c.json``) were recorded by
``python bench/bench_proxy_loop.py --record ...`` from ``mix/proxy.py`` of commit 1d15e2c.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest
import torch

from bench.lib.pools import write_pools
from corpusmix.config import ConfigError
from mix.doremi import DoReMiConfig, DROObjective, GroupDRO, dro_job, load_reference
from mix.proxy import ProxyConfig, build_proxy_model, dro_rows, train_proxy
from mix.proxy_cache import pools_fingerprint, proxy_key
from mix.proxy_config import train_config

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = Path(__file__).parent / "data" / "proxy_loop_1d15e2c.json"
# the former loop and the trainer agree exactly today (0.0 difference when recorded); the margin
# leaves room for kernel-level changes of proxytrain.model / ops (summation order)
TOL = 1e-4


@pytest.fixture(scope="module")
def fx() -> dict:
    return json.loads(FIXTURE.read_text())


@pytest.fixture(scope="module")
def pools(tmp_path_factory, fx) -> Path:
    return write_pools(tmp_path_factory.mktemp("fx") / "pools", fx["pools"])


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")


def test_regmix_proxies_equal_the_former_loop(pools: Path, fx: dict):
    cfg = ProxyConfig(**{"val_windows": "first", **fx["config"]}, device="cpu")  # as recorded
    for run in fx["runs"]:
        _, res = train_proxy(pools, run["weights"], cfg, seed=run["seed"])
        for d, v in run["val_loss"].items():
            assert res["val_loss"][d] == pytest.approx(v, abs=TOL), (run["weights"], run["seed"], d)
        got, want = np.array(res["curve"]), np.array(run["curve"])
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, atol=TOL)  # curves are rounded to 5 decimals
        assert res["train_loss_last"] == pytest.approx(run["train_loss_last"], abs=TOL)


def test_doremi_proxy_equals_the_former_loop(pools: Path, fx: dict):
    cfg = ProxyConfig(**{"val_windows": "first", **fx["config"]}, device="cpu")  # as recorded
    ref, ref_res = train_proxy(pools, fx["reference"]["weights"], cfg, seed=0)
    for d, v in fx["reference"]["val_loss"].items():
        assert ref_res["val_loss"][d] == pytest.approx(v, abs=TOL)
    f = fx["doremi"]
    dro = GroupDRO(3, eta=f["eta"], smoothing=f["smoothing"], average_from=f["average_from"])
    _, res = train_proxy(pools, None, cfg, seed=f["seed"], objective=DROObjective(dro, ref, ["a", "b", "c"]))
    np.testing.assert_allclose(np.array(dro.history), np.array(f["history"]), atol=1e-5)
    np.testing.assert_allclose(dro.average(), f["average"], atol=1e-5)
    for d, v in f["val_loss"].items():
        assert res["val_loss"][d] == pytest.approx(v, abs=TOL)


def _doremi_jobs(pools: Path, cache: Path, pcfg: ProxyConfig, steps: int) -> dict:
    """A reference (trained here, in process) and the job of one DRO proxy against it."""
    from mix.dispatch import run_job

    cfg = DoReMiConfig(steps=steps)
    rcfg = pcfg
    ref_w = np.array([0.4, 0.4, 0.2])
    fp = pools_fingerprint(pools)
    ref_job = {"kind": "reference", "runner": "mix.doremi:run_doremi_job", "key": f"reference-{proxy_key(fp, ref_w, rcfg, 0, 'reference')}",
               "pools": str(pools), "weights": ref_w.tolist(), "seed": 0, "cfg": asdict(rcfg)}
    cache.mkdir(parents=True, exist_ok=True)
    run_job(ref_job, cache)
    return dro_job(pools, cfg, pcfg, 1, ref_w, cache / f"{ref_job['key']}.pt", rcfg, fp, 0)


def _write_job(cache: Path, job: dict) -> None:
    (cache / "jobs").mkdir(parents=True, exist_ok=True)
    (cache / "jobs" / f"{job['key']}.json").write_text(json.dumps(job))


MICRO = dict(model_preset="tiny", d_model=32, n_layers=2, n_heads=2, batch_size=6, seq_len=32, lr=3e-3, warmup=3,
             val_batches=1, device="cpu")


@pytest.mark.slow
def test_doremi_under_two_rank_fsdp_gives_the_single_process_trajectory(tmp_path: Path):
    from mix.dispatch import run_job

    pools = write_pools(tmp_path / "pools", {"a": 6000, "b": 6000, "c": 3000})
    pcfg = ProxyConfig(**MICRO, steps=12)  # 6 rows = 2 per domain: 1 per domain on each rank
    single = tmp_path / "single"
    job = _doremi_jobs(pools, single, pcfg, 12)
    run_job(job, single)
    want = json.loads((single / f"{job['key']}.json").read_text())
    two = tmp_path / "two"
    two.mkdir()
    shutil.copy(single / job["reference"], two / job["reference"])
    _write_job(two, job)
    proc = subprocess.run([sys.executable, "-m", "corpusmix.cli", "mix", "proxy-run", "--cache", str(two),
                           "--key", job["key"], "--nproc", "2"], env=_env(), capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads((two / f"{job['key']}.json").read_text())
    assert len(got["history"]) == 12
    np.testing.assert_allclose(np.array(got["history"]), np.array(want["history"]), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(got["weights"], want["weights"], rtol=1e-5, atol=1e-7)
    for d in "abc":
        assert got["val_loss"][d] == pytest.approx(want["val_loss"][d], rel=1e-5)
    assert not any(p.name.startswith("work-") for p in two.iterdir())  # the trainer's folder is cleaned up


@pytest.mark.slow
def test_killed_doremi_proxy_resumes_with_its_weights_and_average(tmp_path: Path):
    """SIGKILL of a DoReMi proxy (its own process) after a checkpoint; the re-run resumes from it
    (DRO weights, their history for the running average, data cursor, RNG) and ends with exactly
    the trajectory of an uninterrupted run."""
    from mix.dispatch import run_job
    from proxytrain.checkpoint import latest_checkpoint

    pools = write_pools(tmp_path / "pools", {"a": 6000, "b": 6000, "c": 3000})
    pcfg = ProxyConfig(**MICRO, steps=40, ckpt_every=5)
    whole = tmp_path / "whole"
    job = _doremi_jobs(pools, whole, pcfg, 40)
    run_job(job, whole)
    want = json.loads((whole / f"{job['key']}.json").read_text())

    cache = tmp_path / "killed"
    cache.mkdir()
    shutil.copy(whole / job["reference"], cache / job["reference"])
    _write_job(cache, job)
    cmd = [sys.executable, "-m", "corpusmix.cli", "mix", "proxy-run", "--cache", str(cache), "--key", job["key"]]
    proc = subprocess.Popen(cmd, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ckpts = cache / f"work-{job['key']}" / "checkpoints"
    deadline = time.time() + 240
    while latest_checkpoint(ckpts) is None and proc.poll() is None and time.time() < deadline:
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (cache / f"{job['key']}.json").exists(), "the proxy finished before it could be killed"
    # the run may have gone on a few steps before the kill landed (the newest checkpoint is kept)
    at = latest_checkpoint(ckpts)
    assert at is not None and int(at.name.split("-")[1]) < 40
    again = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-3000:]
    assert '"resumed"' in again.stderr  # the trainer's log: it continued from a checkpoint
    got = json.loads((cache / f"{job['key']}.json").read_text())
    assert got["history"] == want["history"]  # every step's weights, bit for bit (CPU)
    assert got["weights"] == want["weights"]  # the post-warm-up average
    assert got["val_loss"] == want["val_loss"]
    assert len(got["curve"]) == len(want["curve"])
    np.testing.assert_allclose(np.array(got["curve"]), np.array(want["curve"]), atol=1e-12)


def test_reference_from_another_vocabulary_or_shape_is_refused_before_training(tmp_path: Path):
    from mix.dispatch import run_job

    pools = write_pools(tmp_path / "pools", {"a": 6000, "b": 6000, "c": 3000})  # vocab 64
    pcfg = ProxyConfig(**MICRO, steps=4)
    other_vocab = tmp_path / "vocab.pt"
    torch.save(build_proxy_model(pools, pcfg, vocab_size=128).state_dict(), other_vocab)
    with pytest.raises(ConfigError, match="vocabulary of 128 tokens, the proxies use 64"):
        load_reference(other_vocab, pools, pcfg)
    other_shape = tmp_path / "shape.pt"
    torch.save(build_proxy_model(pools, ProxyConfig(**{**MICRO, "d_model": 64})).state_dict(), other_shape)
    with pytest.raises(ConfigError, match="another model shape"):
        load_reference(other_shape, pools, pcfg)
    # through a DoReMi job: refused before the trainer starts (no work folder)
    cache = tmp_path / "cache"
    cache.mkdir()
    shutil.copy(other_vocab, cache / "reference-bad.pt")
    job = dro_job(pools, DoReMiConfig(steps=4), pcfg, 1, np.array([0.4, 0.4, 0.2]), cache / "reference-bad.pt",
                   pcfg, pools_fingerprint(pools), 0)
    with pytest.raises(ConfigError, match="vocabulary"):
        run_job(job, cache)
    assert not any(p.name.startswith("work-") for p in cache.iterdir())


def test_world_size_that_does_not_divide_the_batch_and_domains_missing_on_a_rank_are_refused():
    with pytest.raises(ConfigError, match="multiple of the world size"):
        train_config(ProxyConfig(**MICRO, steps=2), vocab_size=64, seed=0, out_dir="x", rows=5, world=2)
    cfg = train_config(ProxyConfig(**MICRO, steps=2), vocab_size=64, seed=0, out_dir="x", rows=6, world=2)
    assert cfg.micro_batch_size == 3 and cfg.threads == 1 and cfg.device == "cpu"
    assert dro_rows(6, 3, 2) == 6  # 2 windows per domain: one per rank
    assert dro_rows(4, 3, 1) == 6  # rounded up to a multiple of the domain count
    with pytest.raises(ConfigError, match="some rank would have no token of some domain"):
        dro_rows(3, 3, 2)  # 1 window per domain, 2 ranks


def test_plan_prints_one_command_per_missing_proxy_and_proxy_run_runs_one(tmp_path: Path, capsys):
    from corpusmix.cli import main

    pools = write_pools(tmp_path / "pools", {"a": 6000, "b": 6000, "c": 3000})
    out = tmp_path / "out" / "regmix.json"
    argv = ["regmix", "--input", str(pools), "--output", str(out), "--preset", "micro",
            "--params", str(tmp_path / "none.yaml"), "--proxy-steps", "4", "--proxy-batch-size", "4",
            "--proxy-seq-len", "32", "--proxy-val-batches", "1", "--num-proxies", "8", "--candidates", "500",
            "--top-k", "10", "--max-epochs", "50", "--final-tokens", "20000"]
    assert main(["mix", "plan", *argv]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 8 and all(line.startswith("corpusmix mix proxy-run --cache ") for line in lines)
    assert not out.exists()  # planning trains nothing
    keys = [line.split("--key ")[1] for line in lines]
    assert main(["mix", "proxy-run", "--cache", str(tmp_path / "out" / "proxies"), "--key", keys[0]]) == 0
    assert (tmp_path / "out" / "proxies" / f"{keys[0]}.json").exists()
    assert main(["mix", "plan", *argv]) == 0
    assert len(capsys.readouterr().out.strip().splitlines()) == 7  # one fewer to run
    rc = main(["mix", "proxy-run", "--cache", str(tmp_path / "out" / "proxies"), "--key", "proxy-nope"])
    assert rc == 2 and "corpusmix mix plan" in capsys.readouterr().err
