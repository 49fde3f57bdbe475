"""The shard reader: trainer-batch contract, rank/worker split, exact resume, URIs, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import torch

from proxytrain.pack import PackConfig, pack
from proxytrain.shards import ShardBatchSource, ShardDataset, ShardError, ShardLoader

SEQ = 32


@pytest.fixture(scope="module")
def shards(tmp_path_factory) -> Path:
    """~300 packed rows of 3 domains in ~10 shards; tokens are a running counter (traceable)."""
    root = tmp_path_factory.mktemp("sh")
    rng = np.random.default_rng(0)
    nxt, domains = 3, {}
    (root / "pools").mkdir()
    for d, n in (("a", 200), ("b", 120), ("c", 60)):
        lens = rng.integers(2, 60, size=n)
        np.arange(nxt, nxt + lens.sum(), dtype=np.uint32).tofile(root / "pools" / f"{d}.bin")
        np.save(root / "pools" / f"{d}.idx.npy", np.concatenate([[0], np.cumsum(lens)]).astype(np.int64))
        nxt += int(lens.sum())
        domains[d] = {"tokens": int(lens.sum()), "docs": n, "val_docs": 0}
    (root / "pools" / "pools.json").write_text(json.dumps({
        "tokenizer_sha256": "cd" * 32, "vocab_size": nxt, "dtype": "uint32", "bos_id": 0, "eos_id": 1,
        "pad_id": 2, "domains": domains}))
    total = sum(v["tokens"] for v in domains.values())
    pack(root / "pools", {"weights": {d: v["tokens"] / total for d, v in domains.items()}}, root / "shards",
         PackConfig(seq_len=SEQ, tokens=total, shard_max_bytes=20_000, batch_rows=8))
    return root / "shards"


def all_rows(path: Path) -> tuple[dict, np.ndarray, list[list[int]], list[str]]:
    manifest = json.loads((path / "manifest.json").read_text())
    tables = [pa.ipc.open_file(pa.memory_map(str(path / s["file"]))).read_all() for s in manifest["shards"]]
    t = pa.concat_tables(tables)
    return (manifest, np.array(t.column("tokens").to_pylist()), t.column("doc_lens").to_pylist(),
            t.column("domain").to_pylist())


def manifest_shards(path: Path) -> list[dict]:
    return json.loads((path / "manifest.json").read_text())["shards"]


def batches(loader, n=None):
    out = []
    for b in loader:
        out.append(b)
        if n is not None and len(out) == n:
            break
    return out


def same(xs, ys):
    return len(xs) == len(ys) and all(all(torch.equal(x[k], y[k]) for k in ("tokens", "segment_ids", "domain_id"))
                                      for x, y in zip(xs, ys, strict=True))


def test_rows_follow_the_trainer_batch_contract(shards):
    manifest, tokens, doc_lens, domains = all_rows(shards)
    assert len(manifest["shards"]) >= 5
    rows = list(ShardDataset(shards))  # the mixed order: one epoch visits every manifest row once
    assert len(rows) == manifest["rows"] == len(tokens)
    assert sorted(int(r["row"]) for r in rows) == list(range(len(tokens)))
    for r in rows:
        i = int(r["row"])
        assert r["tokens"].dtype == torch.int64 and r["tokens"].shape == (SEQ,)
        assert r["segment_ids"].dtype == torch.int32 and r["domain_id"].dtype == torch.int64
        assert (r["tokens"].numpy() == tokens[i]).all()
        expect = np.full(SEQ, -1)
        expect[:sum(doc_lens[i])] = np.repeat(np.arange(len(doc_lens[i])), doc_lens[i])
        assert (r["segment_ids"].numpy() == expect).all()
        assert manifest["domains"][int(r["domain_id"])] == domains[i]


def test_ranks_split_without_overlap_or_gap(shards):
    manifest, tokens, _, _ = all_rows(shards)
    seen = []
    for rank in range(3):
        ds = ShardDataset(shards, rank=rank, world_size=3, batch_size=4)
        got = [r["tokens"][0].item() for b in ShardLoader(ds, num_workers=2) for r in
               [{"tokens": t} for t in b["tokens"]]]
        assert abs(len(got) - manifest["rows"] / 3) <= 1
        seen += got
    assert sorted(seen) == sorted(tokens[:, 0].tolist())  # first tokens are unique per row


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_batches_do_not_depend_on_worker_count(shards, workers):
    ref = batches(ShardLoader(ShardDataset(shards, batch_size=5), num_workers=0))
    got = batches(ShardLoader(ShardDataset(shards, batch_size=5), num_workers=workers))
    assert same(ref, got) and sum(len(b["tokens"]) for b in got) == all_rows(shards)[0]["rows"]


@pytest.mark.parametrize("before, after", [(0, 2), (2, 3), (3, 0)])
def test_resume_at_step_k_with_other_worker_count(shards, before, after):
    k = 7
    ref = batches(ShardLoader(ShardDataset(shards, batch_size=4, epochs=2), num_workers=0))
    loader = ShardLoader(ShardDataset(shards, batch_size=4, epochs=2), num_workers=before)
    first = batches(loader, k)
    state = json.loads(json.dumps(loader.state_dict()))  # a checkpoint stores plain JSON-able state
    resumed = ShardLoader(ShardDataset(shards, batch_size=4, epochs=2), num_workers=after)
    resumed.load_state_dict(state)
    assert same(first + batches(resumed), ref)


def test_in_process_cursor_and_other_world_size(shards):
    manifest, tokens, _, _ = all_rows(shards)
    firsts = []
    states = []
    for rank in range(2):  # two ranks consume 10 rows each, then the job restarts on 3 ranks
        ds = ShardDataset(shards, rank=rank, world_size=2)
        it = iter(ds)
        firsts += [next(it)["tokens"][0].item() for _ in range(10)]
        states.append(ds.state_dict())
    assert states[0]["cursor"] == states[1]["cursor"] == 20
    for rank in range(3):
        ds = ShardDataset(shards, rank=rank, world_size=3)
        ds.load_state_dict(states[0])
        firsts += [r["tokens"][0].item() for r in ds]
    assert sorted(firsts) == sorted(tokens[:, 0].tolist())


def test_batch_source_for_the_trainer(shards):
    manifest, tokens, _, _ = all_rows(shards)
    src = ShardBatchSource(shards, rank=1, world_size=2, expect_tokenizer_sha256="cd" * 32, order="manifest")
    b = src.next_batch(3)
    assert b["tokens"].shape == (3, SEQ) and (b["tokens"].numpy() == tokens[[1, 3, 5]]).all()
    state = src.state_dict()
    nxt = src.next_batch(4)
    src2 = ShardBatchSource(shards, rank=1, world_size=2, order="manifest")
    src2.load_state_dict(state)
    assert same([nxt], [src2.next_batch(4)])
    n = manifest["rows"]
    for _ in range(n // 2 // 4 + 2):  # endless by default: wraps to the next epoch
        src2.next_batch(4)
    evals = src.eval_batches(8, 2)
    assert len(evals) == 2 and (evals[0]["tokens"].numpy() == tokens[:8]).all()
    finite = ShardBatchSource(shards, epochs=1)
    with pytest.raises(ShardError, match="only"):
        finite.next_batch(n + 1)


def test_fsspec_and_file_uris(shards):
    import fsspec

    ref = list(ShardDataset(shards))[:40]
    via_uri = list(ShardDataset(shards.resolve().as_uri()))[:40]
    mem = fsspec.filesystem("memory")
    for f in shards.iterdir():
        if f.is_file():
            mem.pipe(f"/shards-test/{f.name}", f.read_bytes())
    via_mem = list(ShardDataset("memory://shards-test"))[:40]
    assert same(ref, via_uri) and same(ref, via_mem)


def test_bad_input(shards, tmp_path):
    with pytest.raises(ShardError, match="tokenizer"):
        ShardDataset(shards, expect_tokenizer_sha256="ef" * 32)
    with pytest.raises(ShardError, match="no manifest.json"):
        ShardDataset(tmp_path)
    with pytest.raises(ShardError, match="rank 2 is outside"):
        ShardDataset(shards, rank=2, world_size=2)
    other = tmp_path / "other"
    other.mkdir()
    for f in shards.iterdir():
        if f.is_file():
            (other / f.name).write_bytes(f.read_bytes())
    ds = ShardDataset(shards)
    next(iter(ds))
    state = ds.state_dict()
    m = json.loads((other / "manifest.json").read_text())
    m["shards"] = m["shards"][:-1]
    (other / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(ShardError, match="the folder mixes shards of different packs"):
        ShardDataset(other)  # the manifest's tokens per domain still count the dropped shard
    last = pa.ipc.open_file(pa.memory_map(str(shards / manifest_shards(shards)[-1]["file"]))).read_all()
    for d, lens in zip(last.column("domain").to_pylist(), last.column("doc_lens").to_pylist(), strict=True):
        m["tokens_per_domain"][d] -= sum(lens)
    (other / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(ShardError, match="another shard set"):
        ShardDataset(other).load_state_dict(state)
    m["complete"] = False
    (other / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(ShardError, match="incomplete"):
        ShardDataset(other)
    m["complete"] = True
    (other / "manifest.json").write_text(json.dumps(m))
    data = bytearray((other / "shard-00000.arrow").read_bytes())
    data[200] ^= 0xFF
    (other / "shard-00000.arrow").write_bytes(bytes(data))
    with pytest.raises(ShardError, match="sha256"):
        next(iter(ShardDataset(other, verify=True)))
