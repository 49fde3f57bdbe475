"""Stratified proxy sampling: exact domain shares per run and common random numbers across mixtures."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bench.lib.pools import write_pools
from mix.proxy import ProxyConfig, pool_domains
from mix.proxy_sources import MixtureSource


def _Data(pools, cfg: ProxyConfig, seed: int, weights) -> MixtureSource:
    return MixtureSource(pools, sorted(pool_domains(pools)), seq_len=cfg.seq_len,
                         seed=seed, weights=weights, sampling=cfg.sampling)


def _rows(data: MixtureSource, steps: int, batch: int = 8) -> list[tuple[int, bytes]]:
    out = []
    for _ in range(steps):
        b = data.next_batch(batch)
        out += [(int(d), t.numpy().tobytes()) for d, t in zip(b["domain_id"], b["tokens"], strict=True)]
    return out


def test_stratified_rows_match_the_weights_and_share_windows_across_mixtures(tmp_path):
    pools = write_pools(tmp_path / "pools", {"a": 6000, "b": 6000, "c": 3000, "d": 3000})
    cfg = ProxyConfig(batch_size=8, seq_len=16, sampling="stratified")
    w1, w2 = [0.5, 0.3, 0.2, 0.0], [0.4, 0.35, 0.25, 0.0]
    r1 = _rows(_Data(pools, cfg, 3, w1), 50)
    r2 = _rows(_Data(pools, cfg, 3, w2), 50)
    counts = np.bincount([d for d, _ in r1], minlength=4)
    # a low-discrepancy sequence: every domain within a couple of rows of its share of 400 rows
    assert np.all(np.abs(counts - 400 * np.asarray(w1)) <= 2), counts
    assert counts[3] == 0  # weight 0: never drawn
    # common random numbers: a domain's n-th row is the same window whatever the other weights
    for d in range(3):
        a = [t for dd, t in r1 if dd == d]
        b = [t for dd, t in r2 if dd == d]
        n = min(len(a), len(b))
        assert n > 50 and a[:n] == b[:n]
    # same seed, same weights: same batches; another seed: other windows
    assert _rows(_Data(pools, cfg, 3, w1), 5) == r1[:40]
    assert _rows(_Data(pools, cfg, 4, w1), 5) != r1[:40]


def test_iid_sampling_still_available_and_bad_mode_is_an_error(tmp_path):
    pools = write_pools(tmp_path / "pools", {"a": 3000, "b": 3000})
    cfg = ProxyConfig(batch_size=4, seq_len=16, sampling="iid")
    b = _Data(pools, cfg, 0, [0.5, 0.5]).next_batch(4)
    assert b["tokens"].shape == (4, 16) and b["tokens"].dtype == torch.int64
    with pytest.raises(ValueError, match="stratified"):
        ProxyConfig(sampling="sobol").validate()


def test_a_domain_left_out_of_the_search_is_warned_about_once_per_process(tmp_path):
    import logging

    import mix.proxy

    class Keep(logging.Handler):
        def __init__(self) -> None:
            super().__init__(logging.WARNING)
            self.records: list[logging.LogRecord] = []

        def emit(self, record: logging.LogRecord) -> None:
            self.records.append(record)

    pools = write_pools(tmp_path / "pools", {"a": 6000, "b": 6000, "tiny": 100})  # tiny: 2 docs, no held-out
    mix.proxy._LEFT_OUT_WARNED.clear()
    keep = Keep()
    logger = logging.getLogger("corpusmix.mix.proxy")  # a handler of its own: independent of propagation
    logger.addHandler(keep)
    try:
        for split in ("train", "val", "train"):  # as a search reads it, once per proxy
            assert sorted(pool_domains(pools, split)) == ["a", "b"]
    finally:
        logger.removeHandler(keep)
    warned = [r for r in keep.records if "left out of the mixture search" in r.getMessage()]
    assert len(warned) == 1 and warned[0].data == {"domains": {"tiny": 2}}
