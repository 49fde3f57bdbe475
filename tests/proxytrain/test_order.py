"""The global row order: a seeded permutation per epoch, the mixture's shares in every prefix, accounting.

The bound checked is the one docs/formats.md states for the ``mixed`` order, on the index of a real
``corpusmix pack`` output and on random indices with many, very unequal domains; the ``manifest``
order (the pack's random shuffle) is checked against the same bound as a contrast.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from proxytrain.order import GlobalOrder, RowIndex
from proxytrain.shards import ShardBatchSource, ShardDataset
from tests.helpers.pack import WEIGHTS, make_pack


@pytest.fixture(scope="module")
def shards(tmp_path_factory) -> Path:
    return make_pack(tmp_path_factory.mktemp("order"))


def prefix_gap(index: RowIndex, order: np.ndarray) -> np.ndarray:
    """Max over the prefixes of ``order`` of ``|C_d - w_d T|`` per domain."""
    onehot = np.zeros((order.size, index.n_domains))
    onehot[np.arange(order.size), index.domain[order]] = index.tokens[order]
    cum = np.cumsum(onehot, axis=0)
    total = cum.sum(axis=1, keepdims=True)
    shares = index.domain_tokens() / index.tokens.sum()
    return np.abs(cum - total * shares).max(axis=0)


def bound(index: RowIndex) -> np.ndarray:
    shares = index.domain_tokens() / index.tokens.sum()
    k = int((index.domain_tokens() > 0).sum())
    return index.tokens.max() / 2 * (1 + (k - 2) * shares)


def random_index(seed: int, rows: int = 20_000, shards: int = 13) -> RowIndex:
    rng = np.random.default_rng(seed)
    w = np.array([0.6, 0.2, 0.1, 0.05, 0.03, 0.015, 0.005])
    dom = rng.choice(w.size, size=rows, p=w)
    tok = rng.integers(1, 65, size=rows)
    cuts = np.sort(rng.choice(np.arange(1, rows), size=shards - 1, replace=False))
    return RowIndex(domain=dom, tokens=tok, first_rows=[0, *cuts.tolist(), rows], n_domains=w.size)


def test_epochs_are_seeded_permutations(shards):
    idx = ShardDataset(shards).reader.index()
    a, b = GlobalOrder(idx, "mixed", seed=1), GlobalOrder(idx, "mixed", seed=1)
    r = idx.rows
    e0, e1 = a.rows(np.arange(r)), a.rows(np.arange(r, 2 * r))
    assert sorted(e0.tolist()) == list(range(r)) and sorted(e1.tolist()) == list(range(r))
    assert (b.rows(np.arange(r)) == e0).all()  # deterministic
    assert not (e1 == e0).all()  # every epoch its own order
    assert not (GlobalOrder(idx, "mixed", seed=2).rows(np.arange(r)) == e0).all()
    m = GlobalOrder(idx, "manifest")
    assert (m.rows(np.arange(2 * r)) == np.tile(np.arange(r), 2)).all()


@pytest.mark.parametrize("which", ["pack", "random0", "random1"])
def test_every_prefix_keeps_the_mixture_within_the_bound(shards, which):
    idx = ShardDataset(shards).reader.index() if which == "pack" else random_index(int(which[-1]))
    for seed in (0, 1):
        order = GlobalOrder(idx, "mixed", seed=seed)
        for e in (0, 1):
            assert (prefix_gap(idx, order.rows(np.arange(e * idx.rows, (e + 1) * idx.rows))) <= bound(idx) + 1e-6).all()
    # the pack's random shuffle alone (manifest order) is far outside it
    assert (prefix_gap(idx, np.arange(idx.rows)) > 3 * bound(idx)).any()


def test_the_plan_is_met_within_0p1_percent_past_the_stated_size(shards):
    idx = ShardDataset(shards).reader.index()
    order = GlobalOrder(idx, "mixed", seed=0)
    shares = order.shares
    need = 500 * idx.tokens.max() * (1 + (3 - 2) * shares) / shares  # docs/formats.md: tokens of the whole stream
    n = np.arange(1, 2 * idx.rows + 1, 97)
    for k in n.tolist():
        c, p = order.consumed(k), order.planned(k)
        ok = c.sum() * shares >= need
        assert (np.abs(c - p)[ok] <= 1e-3 * p[ok]).all()
    assert (n * 15 > need.max()).any()  # the sizes checked reach past the threshold


@pytest.mark.parametrize("kind", ["mixed", "manifest"])
def test_consumed_counts_the_rows_of_the_stream(shards, kind):
    idx = ShardDataset(shards).reader.index()
    order = GlobalOrder(idx, kind, seed=3)
    for n in (0, 1, 777, idx.rows, idx.rows + 5, 2 * idx.rows + 123):
        rows = order.rows(np.arange(n))
        want = np.bincount(idx.domain[rows], weights=idx.tokens[rows], minlength=idx.n_domains)
        assert (order.consumed(n) == want).all()
    assert (order.consumed(idx.rows) == idx.domain_tokens()).all()
    assert order.planned(idx.rows) == pytest.approx(idx.domain_tokens())


def test_index_matches_the_shards_and_the_pack(shards):
    manifest = json.loads((shards / "manifest.json").read_text())
    idx = ShardDataset(shards).reader.index()
    assert idx.rows == manifest["rows"]
    assert dict(zip(manifest["domains"], idx.domain_tokens().tolist(), strict=True)) == manifest["tokens_per_domain"]
    eff = manifest["effective_mixture"]
    assert all(abs(eff[d] - w) < 5e-3 for d, w in WEIGHTS.items())  # the pack met the mixture asked for


def test_domains_advance_together_so_shards_are_decoded_about_once(tmp_path):
    """The mixed order reads each shard about once per epoch with a small cache (locality)."""
    shards = make_pack(tmp_path, tokens=120_000, shard_max_bytes=200_000)
    n_shards = len(json.loads((shards / "manifest.json").read_text())["shards"])
    src = ShardBatchSource(shards, epochs=1)
    rows = src.dataset.reader.rows
    for _ in range(rows // 64):
        src.next_batch(64)
    assert n_shards >= 4 and src.dataset.reader.decodes <= n_shards + 2
