"""Token pools from real curated Parquet (write-then-read) and the pool samplers."""

from __future__ import annotations

import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from corpusmix.config import ConfigError
from corpusmix.mixture import MixtureError
from corpusmix.paths import DEMO
from proxytrain.pools import (
    PoolDataset,
    PoolSampler,
    PoolsConfig,
    TokenPool,
    build_pools,
    read_pools_json,
    split_doc_counts,
)
from proxytrain.tokenizer import TokenizerConfig, load_tokenizer, tokenizer_sha256, train_tokenizer

CORPORA = DEMO / "en"  # shipped with the repository: never skips
DOMAINS = ("code", "news", "quotes")
N_DOCS = 30


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("pools")
    curated = root / "curated"
    curated.mkdir()
    for d in DOMAINS:
        t = pq.read_table(CORPORA / f"{d}.parquet", columns=["id", "text", "domain", "source"]).slice(0, N_DOCS)
        texts = [s[:2000] for s in t.column("text").to_pylist()]
        if d == "news":  # bad input: a null and an empty text become counted drops
            texts[3], texts[7] = None, ""
        pq.write_table(t.set_column(1, "text", pa.array(texts, pa.string())), curated / f"{d}.parquet")
    pq.write_table(pa.table({"id": ["e1", "e2"], "text": ["", ""], "domain": ["empty"] * 2,
                             "source": ["s"] * 2}), curated / "empty.parquet")
    train_tokenizer(curated, root / "tok.json", TokenizerConfig(vocab_size=400))
    meta = build_pools(curated, root / "tok.json", root / "pools",
                       PoolsConfig(val_fraction=0.1, eval_fraction=0.1, workers=2))
    return root, curated, meta


def test_pools_format(built):
    root, curated, meta = built
    tok = load_tokenizer(root / "tok.json")
    assert meta == read_pools_json(root / "pools")
    assert meta["tokenizer_sha256"] == tokenizer_sha256(root / "tok.json")
    assert (meta["vocab_size"], meta["dtype"], meta["bos_id"], meta["eos_id"], meta["pad_id"]) == \
        (400, "uint16", 0, 1, 2)
    assert sorted(meta["domains"]) == ["code", "empty", "news", "quotes"]
    assert meta["domains"]["news"]["docs"] == N_DOCS - 2
    assert meta["domains"]["news"]["dropped"] == {"null_text": 1, "empty_text": 1}
    assert meta["domains"]["empty"] == {"tokens": 0, "docs": 0, "val_docs": 0, "eval_docs": 0,
                                        "split_tokens": {"train": 0, "val": 0, "eval": 0},
                                        "dropped": {"empty_text": 2}}
    assert (meta["domains"]["code"]["val_docs"], meta["domains"]["code"]["eval_docs"]) == (3, 3)
    for d in DOMAINS:
        toks = np.fromfile(root / "pools" / f"{d}.bin", dtype=np.uint16)
        idx = np.load(root / "pools" / f"{d}.idx.npy")
        assert idx.dtype == np.int64 and idx[0] == 0 and idx[-1] == toks.size == meta["domains"][d]["tokens"]
        assert idx.size == meta["domains"][d]["docs"] + 1
        assert (toks[idx[:-1]] == 0).all() and (toks[idx[1:] - 1] == 1).all()  # BOS doc EOS
        texts = [t for t in pq.read_table(curated / f"{d}.parquet").column("text").to_pylist() if t]
        for i in (0, len(texts) - 1):  # document order is the file's order
            assert tok.decode(toks[idx[i] + 1: idx[i + 1] - 1].tolist()) == texts[i]


def test_rebuild_skips_finished_domains(built, tmp_path):
    root, curated, _ = built
    before = {d: os.stat(root / "pools" / f"{d}.bin").st_mtime_ns for d in DOMAINS}
    build_pools(curated, root / "tok.json", root / "pools", PoolsConfig(val_fraction=0.1, eval_fraction=0.1,
                                                                        workers=1))
    assert before == {d: os.stat(root / "pools" / f"{d}.bin").st_mtime_ns for d in DOMAINS}
    # another tokenizer invalidates the markers: the domain is rebuilt
    train_tokenizer(curated, tmp_path / "tok2.json", TokenizerConfig(vocab_size=300))
    out = tmp_path / "pools2"
    out.mkdir()
    for f in (root / "pools").iterdir():
        (out / f.name).write_bytes(f.read_bytes())
    meta = build_pools(curated, tmp_path / "tok2.json", out, PoolsConfig(workers=1))
    assert meta["tokenizer_sha256"] == tokenizer_sha256(tmp_path / "tok2.json")
    assert meta["domains"]["code"]["tokens"] > json.loads((root / "pools" / "pools.json").read_text())[
        "domains"]["code"]["tokens"]  # a smaller vocabulary needs more tokens


def test_sampler_windows_and_segments(built):
    root, _, meta = built
    s = PoolSampler(root / "pools", seq_len=64, seed=3)
    assert s.domains == ["code", "empty", "news", "quotes"]
    b = s.sample("quotes", batch_size=5)
    assert b["tokens"].shape == (5, 64) and b["tokens"].dtype == torch.int64
    assert b["segment_ids"].dtype == torch.int32 and b["domain_id"].tolist() == [3] * 5
    idx = np.load(root / "pools" / "quotes.idx.npy")
    toks = np.fromfile(root / "pools" / "quotes.bin", dtype=np.uint16)
    q = meta["domains"]["quotes"]
    train_end = idx[q["docs"] - q["val_docs"] - q["eval_docs"]]
    for row, seg in zip(b["tokens"].numpy(), b["segment_ids"].numpy(), strict=True):
        starts = [i for i in range(toks.size - 63) if (toks[i:i + 64] == row).all()]
        assert starts and starts[0] + 64 <= train_end  # a real window of the train split
        docs = np.searchsorted(idx, np.arange(starts[0], starts[0] + 64), side="right") - 1
        assert (seg == docs - docs[0]).all()
        assert ((row == 0)[1:] <= (np.diff(seg) == 1)).all()  # every BOS inside starts a new segment


def test_sampler_state_is_exact_and_seeded(built):
    root, _, _ = built
    a = PoolSampler(root / "pools", seq_len=32, seed=7)
    b = PoolSampler(root / "pools", seq_len=32, seed=7)
    assert torch.equal(a.sample("code", 4)["tokens"], b.sample("code", 4)["tokens"])
    state = a.state_dict()
    nxt = a.sample_weighted({"code": 0.5, "news": 0.5}, 6)
    c = PoolSampler(root / "pools", seq_len=32, seed=99)
    c.load_state_dict(state)
    again = c.sample_weighted({"code": 0.5, "news": 0.5}, 6)
    assert all(torch.equal(nxt[k], again[k]) for k in nxt)


def test_weighted_sampling_follows_weights(built):
    root, _, _ = built
    s = PoolSampler(root / "pools", seq_len=16, seed=0)
    ids = s.sample_weighted({"code": 0.8, "news": 0.2, "quotes": 0.0}, 400)["domain_id"]
    counts = torch.bincount(ids, minlength=4).tolist()
    assert counts[3] == 0 and counts[1] == 0 and 280 < counts[0] < 360
    assert s.sample_weighted([0.0, 0.0, 0.0, 1.0], 3)["domain_id"].tolist() == [3, 3, 3]


def test_eval_batches_cover_the_val_split(built):
    root, _, meta = built
    s = PoolSampler(root / "pools", seq_len=50, split="val")
    idx = np.load(root / "pools" / "code.idx.npy")
    d = meta["domains"]["code"]
    val_tokens = int(idx[d["docs"] - d["eval_docs"]] - idx[d["docs"] - d["eval_docs"] - d["val_docs"]])
    assert val_tokens == d["split_tokens"]["val"]
    batches = list(s.eval_batches("code", batch_size=4))
    assert sum(int((bt["segment_ids"] >= 0).sum()) for bt in batches) == val_tokens
    assert all(torch.equal(x["tokens"], y["tokens"]) for x, y in
               zip(batches, s.eval_batches("code", batch_size=4), strict=True))


def test_spread_eval_windows_span_the_split(built):
    """``spread`` takes ``max_rows`` windows evenly over the whole split (the first ones read only its
    first documents); both are deterministic and lie inside the split."""
    root, _, _ = built
    s = PoolSampler(root / "pools", seq_len=8, split="val")
    lo, hi = s._ranges["code"]
    n = len(range(lo, hi, 8))
    assert n > 6
    first = [bt["tokens"] for bt in s.eval_batches("code", batch_size=3, max_rows=6)]
    spread = [bt["tokens"] for bt in s.eval_batches("code", batch_size=3, max_rows=6, spread=True)]
    toks = np.concatenate([np.fromfile(root / "pools" / "code.bin", dtype=np.uint16)])
    want = [lo + 8 * ((2 * i + 1) * n // 12) for i in range(6)]
    got = torch.cat(spread).numpy()
    assert all((got[i][:min(8, hi - w)] == toks[w: min(w + 8, hi)]).all() for i, w in enumerate(want))
    assert want[-1] > lo + 8 * 6 and not torch.equal(torch.cat(first), torch.cat(spread))
    again = torch.cat([bt["tokens"] for bt in s.eval_batches("code", batch_size=3, max_rows=6, spread=True)])
    assert torch.equal(again, torch.cat(spread))
    # fewer windows in the split than asked: all of them, as without spread
    assert sum(len(bt["tokens"]) for bt in s.eval_batches("code", batch_size=4, max_rows=10 * n, spread=True)) == n


def test_three_disjoint_splits(built):
    root, _, meta = built
    for d in DOMAINS:
        m = meta["domains"][d]
        pool = TokenPool(root / "pools", d, m, meta["dtype"])
        ranges = [pool.token_range(s) for s in ("train", "val", "eval")]
        # contiguous, disjoint, covering the pool, in this order; each split non-empty
        assert ranges[0][0] == 0 and ranges[0][1] == ranges[1][0] and ranges[1][1] == ranges[2][0]
        assert ranges[2][1] == m["tokens"] and all(b > a for a, b in ranges)
        assert [b - a for a, b in ranges] == [m["split_tokens"][s] for s in ("train", "val", "eval")]
    # eval windows come from the eval range only, and a sampler of one split never reads another
    ev = PoolSampler(root / "pools", seq_len=32, split="eval", seed=0)
    lo = TokenPool(root / "pools", "news", meta["domains"]["news"], meta["dtype"]).token_range("eval")[0]
    idx = np.load(root / "pools" / "news.idx.npy")
    toks = np.fromfile(root / "pools" / "news.bin", dtype=np.uint16)
    first = next(ev.eval_batches("news", batch_size=1))["tokens"][0].numpy()
    assert (first == toks[lo: lo + 32]).all() and lo >= idx[meta["domains"]["news"]["docs"] - 3]


def test_split_doc_counts_leave_training_docs():
    assert split_doc_counts(100, 0.05, 0.05) == (5, 5)
    assert split_doc_counts(3, 0.5, 0.5) == (1, 1)  # one doc each, one left to train on
    assert split_doc_counts(2, 0.1, 0.1) == (0, 1)
    assert split_doc_counts(1, 0.1, 0.1) == (0, 0)
    assert split_doc_counts(10, 0.1, 0.0) == (1, 0)
    for n in range(1, 40):
        va, ev = split_doc_counts(n, 0.3, 0.3)
        assert n - va - ev >= 1
    with pytest.raises(ConfigError, match="sum below 1"):
        build_pools("/nonexistent", "/nonexistent", "/tmp/x", PoolsConfig(val_fraction=0.5, eval_fraction=0.5))


def test_errors(built):
    root, _, _ = built
    with pytest.raises(ConfigError, match="tokenised with tokenizer"):
        PoolSampler(root / "pools", seq_len=16, expect_tokenizer_sha256="0" * 64)
    s = PoolSampler(root / "pools", seq_len=16)
    with pytest.raises(ConfigError, match="no tokens"):
        s.sample("empty", 2)
    with pytest.raises(MixtureError, match="empty domain"):
        s.sample_weighted({"code": 0.5, "empty": 0.5}, 2)
    with pytest.raises(MixtureError, match="unknown domain"):
        s.sample_weighted({"code": 0.5, "web": 0.5}, 2)
    with pytest.raises(ConfigError, match="unknown domain"):
        s.sample("web", 2)
    with pytest.raises(ConfigError, match="does not exist"):
        PoolSampler(root / "nothing", seq_len=16)


def test_pool_dataset_with_workers(built):
    root, _, _ = built
    ds = PoolDataset(root / "pools", seq_len=24, weights={"code": 0.5, "quotes": 0.5}, seed=1)
    loader = torch.utils.data.DataLoader(ds, batch_size=4, num_workers=2)
    it = iter(loader)
    b0, b1 = next(it), next(it)
    assert b0["tokens"].shape == (4, 24) and set(b0["domain_id"].tolist()) <= {0, 3}
    assert not torch.equal(b0["tokens"], b1["tokens"])  # workers draw different streams
    one = next(iter(torch.utils.data.DataLoader(PoolDataset(root / "pools", seq_len=24, domain="news"),
                                                batch_size=3)))
    assert one["domain_id"].tolist() == [2, 2, 2]
