"""Mixture materialisation and shard writing: contents, mixture, padding, atomicity, resume, errors."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from corpusmix.config import ConfigError
from corpusmix.mixture import MixtureError
from corpusmix.paths import DEMO
from proxytrain.pack import PackConfig, pack

CORPORA = DEMO / "en"  # shipped with the repository: never skips


def write_pools(root: Path, doc_lengths: dict[str, list[int]], val_fraction: float = 0.0) -> Path:
    """A pools folder (docs/formats.md) whose tokens are all distinct (a running counter from 3),

    so that every packed chunk can be traced back to its document and offset.
    """
    from proxytrain.pools import val_doc_count

    root.mkdir(parents=True, exist_ok=True)
    nxt, domains = 3, {}
    for d, lens in sorted(doc_lengths.items()):
        total = int(sum(lens))
        (np.arange(nxt, nxt + total, dtype=np.uint32)).tofile(root / f"{d}.bin")
        np.save(root / f"{d}.idx.npy", np.concatenate([[0], np.cumsum(lens)]).astype(np.int64))
        nxt += total
        domains[d] = {"tokens": total, "docs": len(lens), "val_docs": val_doc_count(len(lens), val_fraction)}
    (root / "pools.json").write_text(json.dumps({
        "version": 1, "tokenizer_sha256": "ab" * 32, "vocab_size": nxt, "dtype": "uint32",
        "bos_id": 0, "eos_id": 1, "pad_id": 2, "val_fraction": val_fraction, "domains": domains}))
    return root


def lognormal_lengths(seed: int, n: int, mean: float = 5.0) -> list[int]:
    return (np.random.default_rng(seed).lognormal(mean, 1.2, size=n).astype(int) + 2).tolist()


def read_shards(out: Path) -> tuple[dict, pa.Table]:
    manifest = json.loads((out / "manifest.json").read_text())
    tables = [pa.ipc.open_file(pa.memory_map(str(out / s["file"]))).read_all() for s in manifest["shards"]]
    return manifest, pa.concat_tables(tables)


@pytest.fixture(scope="module")
def pools(tmp_path_factory):
    root = tmp_path_factory.mktemp("p")
    return write_pools(root / "pools", {"a": lognormal_lengths(0, 800), "b": lognormal_lengths(1, 400, 6.0),
                                         "small": lognormal_lengths(2, 20)})


def test_shards_hold_exactly_the_selected_documents(pools, tmp_path):
    idx = {d: np.load(pools / f"{d}.idx.npy") for d in ("a", "b", "small")}
    avail = {d: int(v[-1]) for d, v in idx.items()}
    budget = sum(avail.values())
    weights = {d: n / budget for d, n in avail.items()}
    cfg = PackConfig(seq_len=256, tokens=budget, shard_max_bytes=60_000, seed=5)
    m = pack(pools, {"weights": weights, "method": "natural"}, tmp_path / "s", cfg)
    manifest, table = read_shards(tmp_path / "s")
    assert m == manifest and manifest["complete"] and manifest["version"] == 1
    assert manifest["domains"] == ["a", "b", "small"] and manifest["tokenizer_sha256"] == "ab" * 32
    assert manifest["mixture"]["weights"] == weights and manifest["seq_len"] == 256
    assert len(manifest["shards"]) > 3 and table.num_rows == manifest["rows"]
    assert all((tmp_path / "s" / s["file"]).stat().st_size <= cfg.shard_max_bytes for s in manifest["shards"])
    # every token of every document exactly once (one epoch of everything), in contiguous chunks
    tokens = np.array(table.column("tokens").to_pylist())
    assert tokens.shape == (manifest["rows"], 256)
    seen = {d: np.zeros(avail[d], dtype=np.int64) for d in avail}
    base = {d: int(np.fromfile(pools / f"{d}.bin", dtype=np.uint32, count=1)[0]) for d in avail}
    for row, lens, dom in zip(tokens, table.column("doc_lens").to_pylist(), table.column("domain").to_pylist(),
                              strict=True):
        assert sum(lens) <= 256 and (row[sum(lens):] == 2).all()
        pos = 0
        for n in lens:
            chunk = row[pos:pos + n] - base[dom]
            assert (np.diff(chunk) == 1).all()  # a contiguous slice of the pool
            doc = np.searchsorted(idx[dom], chunk[0], side="right") - 1
            assert chunk[-1] < idx[dom][doc + 1]  # ... inside one document
            if n < 256:  # a short chunk is a whole document or the tail of a long one
                assert chunk[-1] + 1 == idx[dom][doc + 1]
            seen[dom][chunk] += 1
            pos += n
    assert all((v == 1).all() for v in seen.values())
    assert manifest["tokens_per_domain"] == avail and manifest["tokens"] == budget
    assert sum(s["tokens"] for s in manifest["shards"]) == budget
    assert manifest["pad_fraction"] <= 0.01
    for d in avail:  # truncation only where a document exceeds a row
        assert manifest["per_domain"][d]["docs_split"] == int((np.diff(idx[d]) > 256).sum())
        assert manifest["per_domain"][d]["docs_split_needlessly"] == 0
    doms = table.column("domain").to_pylist()
    assert doms != sorted(doms)  # rows are shuffled globally


def test_mixture_and_max_epochs_cap(pools, tmp_path):
    small = int(np.load(pools / "small.idx.npy")[-1])
    budget = 60_000
    cfg = PackConfig(seq_len=128, tokens=budget, max_epochs=2.0)
    m = pack(pools, {"weights": {"a": 0.5, "b": 0.3, "small": 0.2}}, tmp_path / "s", cfg)
    per = m["per_domain"]
    assert per["small"]["epochs"] <= 2.0 and m["tokens_per_domain"]["small"] <= 2 * small < 0.2 * budget
    for d, w in (("a", 0.5), ("b", 0.3)):
        assert w * budget <= m["tokens_per_domain"][d] < w * budget + 3000  # whole docs: overshoot < 1 doc
    eff = m["effective_mixture"]
    assert sum(eff.values()) == pytest.approx(1.0) and eff["small"] < 0.2 and eff["a"] > 0.5
    assert m["tokens"] == sum(m["tokens_per_domain"].values())
    # a domain needing more than one epoch repeats whole epochs within the cap
    m2 = pack(pools, {"weights": {"a": 0.0, "b": 0.0, "small": 1.0}}, tmp_path / "s2",
              PackConfig(seq_len=128, tokens=int(1.5 * small), max_epochs=4.0))
    assert m2["tokens_per_domain"]["small"] >= 1.5 * small and 1.5 <= m2["per_domain"]["small"]["epochs"] < 1.6


def test_same_seed_same_shards_other_seed_other_order(pools, tmp_path):
    w = {"weights": {"a": 0.6, "b": 0.4}}
    cfg = PackConfig(seq_len=128, tokens=40_000, shard_max_bytes=50_000)
    m1 = pack(pools, w, tmp_path / "x", cfg)
    m2 = pack(pools, w, tmp_path / "y", cfg)
    m3 = pack(pools, w, tmp_path / "z", PackConfig(seq_len=128, tokens=40_000, shard_max_bytes=50_000, seed=1))
    assert [s["sha256"] for s in m1["shards"]] == [s["sha256"] for s in m2["shards"]]
    assert [s["sha256"] for s in m1["shards"]] != [s["sha256"] for s in m3["shards"]]


def test_resume_after_interruption(pools, tmp_path):
    w = {"weights": {"a": 0.5, "b": 0.5}}
    cfg = PackConfig(seq_len=128, tokens=50_000, shard_max_bytes=40_000)
    full = pack(pools, w, tmp_path / "full", cfg)
    assert len(full["shards"]) >= 4
    # a real crash: the path of shard 2 is taken by a folder, so the rename fails mid-run
    out = tmp_path / "crash"
    (out / "shard-00002.arrow").mkdir(parents=True)
    with pytest.raises(OSError):
        pack(pools, w, out, cfg)
    partial = json.loads((out / "manifest.json").read_text())
    assert not partial["complete"] and [s["file"] for s in partial["shards"]] == ["shard-00000.arrow",
                                                                                 "shard-00001.arrow"]
    assert [s["sha256"] for s in partial["shards"]] == [s["sha256"] for s in full["shards"][:2]]
    (out / "shard-00002.arrow").rmdir()
    kept = os.stat(out / "shard-00001.arrow").st_mtime_ns
    done = pack(pools, w, out, cfg)
    assert done["complete"] and done["shards"] == full["shards"]
    assert os.stat(out / "shard-00001.arrow").st_mtime_ns == kept  # finished shards are not rewritten
    assert not list(out.glob(".*.tmp"))
    # a listed shard that no longer matches its sha256 is rewritten
    (out / "shard-00000.arrow").write_bytes(b"garbage")
    assert pack(pools, w, out, cfg)["shards"] == full["shards"]


def test_validation_split_shards_hold_only_held_out_documents(tmp_path):
    pools = write_pools(tmp_path / "pv", {"a": lognormal_lengths(3, 200), "b": lognormal_lengths(4, 100)},
                        val_fraction=0.1)
    meta = json.loads((pools / "pools.json").read_text())
    cut = {d: int(np.load(pools / f"{d}.idx.npy")[m["docs"] - m["val_docs"]]) for d, m in meta["domains"].items()}
    val_tokens = {d: meta["domains"][d]["tokens"] - cut[d] for d in cut}
    total = sum(val_tokens.values())
    m = pack(pools, {"weights": {d: n / total for d, n in val_tokens.items()}}, tmp_path / "val",
             PackConfig(seq_len=64, tokens=total, split="val"))
    assert m["split"] == "val" and m["tokens_per_domain"] == val_tokens
    _, table = read_shards(tmp_path / "val")
    base = {d: int(np.fromfile(pools / f"{d}.bin", dtype=np.uint32, count=1)[0]) for d in cut}
    for row, lens, dom in zip(table.column("tokens").to_pylist(), table.column("doc_lens").to_pylist(),
                              table.column("domain").to_pylist(), strict=True):
        assert min(row[:sum(lens)]) - base[dom] >= cut[dom]  # never a training-split token
    train = pack(pools, {"weights": {"a": 0.5, "b": 0.5}}, tmp_path / "train", PackConfig(seq_len=64, tokens=5000))
    assert train["split"] == "train"


def test_bad_input(pools, tmp_path):
    cfg = PackConfig(seq_len=64, tokens=1000)
    with pytest.raises(MixtureError, match="unknown domain"):
        pack(pools, {"weights": {"a": 0.5, "web": 0.5}}, tmp_path / "o", cfg)
    with pytest.raises(MixtureError, match="sum to"):
        pack(pools, {"weights": {"a": 0.5, "b": 0.3}}, tmp_path / "o", cfg)
    with pytest.raises(ConfigError, match="token budget"):
        pack(pools, {"weights": {"a": 1.0}}, tmp_path / "o", PackConfig(tokens=0))
    with pytest.raises(ConfigError, match="does not exist"):
        pack(tmp_path / "nopools", {"weights": {"a": 1.0}}, tmp_path / "o", cfg)
    empty = write_pools(tmp_path / "ep", {"a": [5, 6], "e": []})
    with pytest.raises(MixtureError, match="empty domain"):
        pack(empty, {"weights": {"a": 0.5, "e": 0.5}}, tmp_path / "o", cfg)
    pack(pools, {"weights": {"a": 1.0}}, tmp_path / "o2", cfg)
    with pytest.raises(ConfigError, match="different pack"):
        pack(pools, {"weights": {"b": 1.0}}, tmp_path / "o2", cfg)
    with pytest.raises(ConfigError, match="cannot hold one row"):
        pack(pools, {"weights": {"a": 1.0}}, tmp_path / "o3", PackConfig(seq_len=64, tokens=1000,
                                                                           shard_max_bytes=500))


def test_cli_end_to_end_on_real_corpora(tmp_path, capsys):
    from corpusmix.cli import main
    from proxytrain.shards import ShardDataset
    from proxytrain.tokenizer import load_tokenizer

    curated = tmp_path / "curated"
    curated.mkdir()
    for d in ("legal", "news"):
        t = pq.read_table(CORPORA / f"{d}.parquet", columns=["id", "text", "domain", "source"]).slice(0, 25)
        pq.write_table(t, curated / f"{d}.parquet")
    params = tmp_path / "params.yaml"
    params.write_text("tokenizer:\n  vocab_size: 350\npools:\n  workers: 1\npack:\n  seq_len: 128\n")
    tok = tmp_path / "tokenizer.json"
    assert main(["tokenize", "train", "--params", str(params), "--curated", str(curated), "--output", str(tok)]) == 0
    assert load_tokenizer(tok).get_vocab_size() == 350
    assert main(["tokenize", "pools", "--params", str(params), "--curated", str(curated), "--tokenizer", str(tok),
                 "--output", str(tmp_path / "pools")]) == 0
    mix = tmp_path / "mixture.json"
    mix.write_text(json.dumps({"weights": {"legal": 0.7, "news": 0.3}, "method": "manual"}))
    assert main(["pack", "--params", str(params), "--pools", str(tmp_path / "pools"), "--mixture", str(mix),
                 "--tokens", "2e4", "--output", str(tmp_path / "shards")]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["shards"] >= 1 and out["pad_fraction"] <= 0.02 and set(out["effective_mixture"]) == {"legal", "news"}
    # a row decodes back to real document text
    row = next(iter(ShardDataset(tmp_path / "shards")))
    first = int((row["segment_ids"] == 0).sum())
    text = load_tokenizer(tok).decode(row["tokens"][:first].tolist())
    texts = pq.read_table(curated / f"{['legal', 'news'][int(row['domain_id'])]}.parquet").column("text").to_pylist()
    assert any(text[:200] in t for t in texts)
    # natural mixture by name, and pools built on the fly from --curated
    assert main(["pack", "--params", str(params), "--curated", str(curated), "--tokenizer", str(tok),
                 "--mixture", "natural", "--tokens", "10000", "--output", str(tmp_path / "shards2")]) == 0
    assert (tmp_path / "shards2" / "pools" / "pools.json").exists()


def test_regmix_mixtures_within_final_caps_pack_as_searched(pools, tmp_path):
    """RegMix caps epochs for the final run (pack.tokens, training-split tokens, pack.max_epochs):
    every mixture it may return, including ones at a cap, packs to an effective mixture within
    0.01 per domain of the searched one."""
    from mix.proxy import pool_domains
    from mix.regmix import epoch_caps, sample_mixtures, search

    tokens = pool_domains(pools)
    domains = list(tokens)
    avail = np.array([tokens[d] for d in domains], dtype=np.float64)
    cfg = PackConfig(seq_len=128, tokens=int(avail.sum() * 0.8), max_epochs=2.0)
    caps = epoch_caps(avail, cfg.tokens, cfg.max_epochs)
    assert caps[domains.index("small")] < 0.05  # the small domain's cap binds
    prior = avail / avail.sum()

    class _Favour:  # a regressor that wants as much of `small` as the caps allow
        def predict(self, x):
            return -x[:, domains.index("small")]

    top, _ = search(_Favour(), prior, candidates=5000, top_k=5, concentrations=[1.0],
                    rng=np.random.default_rng(0), caps=caps)
    mixes = [top, *sample_mixtures(prior, 2, concentrations=[0.3], rng=np.random.default_rng(1), caps=caps)]
    assert top[domains.index("small")] > 0.9 * caps[domains.index("small")]
    for i, w in enumerate(mixes):
        m = pack(pools, {"weights": dict(zip(domains, w.tolist(), strict=True))}, tmp_path / f"s{i}", cfg)
        eff = np.array([m["effective_mixture"][d] for d in domains])
        assert np.abs(eff - w).max() <= 0.01, (w, eff)
