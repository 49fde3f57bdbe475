"""Decontamination: the n-gram index, both modes, bad evaluation files, bounded memory."""

from __future__ import annotations

import gzip
import json
import random
import tracemalloc
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from datatrove.data import Document

from corpusmix.config import ConfigError
from corpusmix.procs import pid_alive
from curate.steps import ngram_index as ngi
from curate.steps.decontam import DecontamConfig, Decontaminator

ROOT = Path(__file__).resolve().parents[2]
EVAL = ROOT / "data" / "demo" / "eval"


def _real_sentences(n: int = 40) -> list[str]:
    """Real prose from the shipped demo (news), none of it in the evaluation set."""
    rows = pq.read_table(ROOT / "data/demo/en/news.parquet", columns=["text"]).to_pylist()
    return [" ".join(r["text"].split()) for r in rows[:n]]


def _step(tmp_path: Path, **kw) -> Decontaminator:
    return Decontaminator(DecontamConfig(eval_sets=[str(EVAL)], index_dir=str(tmp_path / "idx"), **kw))


def _doc(text: str, i: str = "d") -> Document:
    return Document(text=text, id=i, metadata={"domain": "news"})


def test_shipped_eval_set_is_indexed(tmp_path: Path) -> None:
    step = _step(tmp_path)
    assert step.benchmarks == ["define", "quotes_qa", "reading"]
    assert all(step.info["items"][b] == 150 for b in step.benchmarks)
    arr = ngi.load_array(step.index_path)
    for b in range(3):  # each benchmark's slice is sorted and unique
        part = np.asarray(arr[step.offsets[b]:step.offsets[b + 1]])
        assert len(part) > 1000 and np.all(part[1:] > part[:-1])


def test_drop_mode_finds_reformatted_copies_and_keeps_clean_text(tmp_path: Path) -> None:
    step = _step(tmp_path)
    item = pq.read_table(EVAL / "reading.parquet").to_pylist()[7]
    clean = _real_sentences()
    # case, punctuation spacing and line breaks differ from the benchmark file
    copy = item["passage"].upper().replace(",", " ,").replace(". ", ".\n")
    doc = _doc(clean[0] + "\n\n" + copy + "\n\n" + clean[1])
    assert step.filter(doc) == (False, "contaminated:reading")
    assert doc.metadata["contam_benchmarks"] == "reading" and doc.metadata["contam_ngrams"] > 10
    for k, text in enumerate(clean):
        d = _doc(text, str(k))
        assert step.filter(d) is True and d.metadata["contam_benchmarks"] == ""
    # 12 words of an item are below the 13-gram size: not an overlap
    words = item["passage"].split()
    assert step.filter(_doc(clean[2] + " " + " ".join(words[:12]) + " " + clean[3])) is True


def test_remove_mode_cuts_the_span(tmp_path: Path) -> None:
    step = _step(tmp_path, mode="remove", min_chars_after_removal=100)
    item = pq.read_table(EVAL / "define.parquet").to_pylist()[3]
    clean = _real_sentences()
    doc = _doc(clean[4] + "\n" + item["answer"] + "\n" + clean[5])
    assert step.filter(doc) is True
    assert doc.metadata["contam_benchmarks"] == "define"
    # what is left is the clean text and holds no n-gram of the item any more
    assert clean[4][:200] in doc.text and clean[5][-200:] in doc.text
    assert step.filter(_doc(doc.text)) is True
    short = _doc("Intro. " + item["answer"])
    assert step.filter(short) == (False, "contaminated:define")


def test_jsonl_and_parquet_give_the_same_index(tmp_path: Path) -> None:
    rows = pq.read_table(EVAL / "quotes_qa.parquet").to_pylist()
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "a" / "q.parquet")
    with gzip.open(tmp_path / "b" / "q.jsonl.gz", "wt") as fh:
        for r in rows:
            fh.write(json.dumps(r) + "\n")
    a = Decontaminator(DecontamConfig(eval_sets=[str(tmp_path / "a")], index_dir=str(tmp_path / "i")))
    b = Decontaminator(DecontamConfig(eval_sets=[str(tmp_path / "b")], index_dir=str(tmp_path / "i")))
    assert a.index_path != b.index_path  # different files: different content hash
    assert np.array_equal(np.asarray(ngi.load_array(a.index_path)), np.asarray(ngi.load_array(b.index_path)))


def test_bad_evaluation_files_are_clear_errors(tmp_path: Path) -> None:
    def build(path: Path, **kw) -> None:
        Decontaminator(DecontamConfig(eval_sets=[str(path)], index_dir=str(tmp_path / "idx"), **kw))

    with pytest.raises(ConfigError, match="does not exist"):
        build(tmp_path / "missing.parquet")
    pq.write_table(pa.table({"question": pa.array([], pa.string())}), tmp_path / "empty.parquet")
    with pytest.raises(ConfigError, match="no rows"):
        build(tmp_path / "empty.parquet")
    (tmp_path / "empty.jsonl").write_text("")
    with pytest.raises(ConfigError, match="empty"):
        build(tmp_path / "empty.jsonl")
    pq.write_table(pa.table({"prompt": ["a b c"], "completion": ["d"]}), tmp_path / "cols.parquet")
    with pytest.raises(ConfigError, match=r"none of the columns .* it has \['prompt', 'completion'\]"):
        build(tmp_path / "cols.parquet")
    (tmp_path / "cols.jsonl").write_text(json.dumps({"prompt": "x"}) + "\n")
    with pytest.raises(ConfigError, match="none of the columns"):
        build(tmp_path / "cols.jsonl")
    (tmp_path / "bad.jsonl").write_text('{"question": "x"}\nnot json\n')
    with pytest.raises(ConfigError, match="bad.jsonl:2"):
        build(tmp_path / "bad.jsonl")
    (tmp_path / "latin1.jsonl").write_bytes(b'{"question": "ok"}\n{"question": "caf\xe9"}\n')
    with pytest.raises(ConfigError, match="latin1.jsonl:2: not valid UTF-8"):
        build(tmp_path / "latin1.jsonl")
    pq.write_table(pa.table({"question": ["too short to hold a 13-gram"]}), tmp_path / "short.parquet")
    with pytest.raises(ConfigError, match="no item with 13\\+ words"):
        build(tmp_path / "short.parquet")
    (tmp_path / "dir").mkdir()
    with pytest.raises(ConfigError, match="holds no"):
        build(tmp_path / "dir")
    with pytest.raises(ConfigError, match="eval_sets is empty"):
        Decontaminator(DecontamConfig(eval_sets=[]))
    with pytest.raises(ConfigError, match="stride"):
        DecontamConfig(eval_sets=["x"], stride=13)


def _synthetic_set(path: Path, items: int, seed: int = 0) -> list[list[str]]:
    """A proxy of a large benchmark: items of 20-40 words from a 50k-word vocabulary."""
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(50_000)]
    texts = [[rng.choice(vocab) for _ in range(rng.randint(20, 40))] for _ in range(items)]
    pq.write_table(pa.table({"question": [" ".join(t) for t in texts]}), path)
    return texts


def test_large_set_bounded_memory_stride_and_cap(tmp_path: Path) -> None:
    texts = _synthetic_set(tmp_path / "big.parquet", 20_000)
    n_grams = sum(len(t) - 12 for t in texts)
    tracemalloc.start()
    step = Decontaminator(DecontamConfig(eval_sets=[str(tmp_path / "big.parquet")], index_dir=str(tmp_path / "i")))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    size = step.offsets[-1]
    assert size == pytest.approx(n_grams, rel=0.01)  # random items: (almost) all n-grams distinct
    # the index (8 B per n-gram) plus per-batch temporaries; bench/bench_decontam.py measures 10 M items
    assert peak < 3 * 8 * size + 48 * 2**20, f"peak {peak / 2**20:.0f} MiB for {8 * size / 2**20:.0f} MiB of index"
    # stride 4 keeps about a quarter of the n-grams and still finds every copy of n + 3 words
    s4 = Decontaminator(DecontamConfig(eval_sets=[str(tmp_path / "big.parquet")], index_dir=str(tmp_path / "i"),
                                       stride=4))
    assert s4.offsets[-1] < 0.3 * size
    rng = random.Random(1)
    for t in rng.sample(texts, 200):
        start = rng.randint(0, len(t) - 16)
        assert s4.filter(_doc("lead in words " + " ".join(t[start:start + 16]) + " tail")) is not True
    with pytest.raises(ConfigError, match="max_ngrams"):
        Decontaminator(DecontamConfig(eval_sets=[str(tmp_path / "big.parquet")], index_dir=str(tmp_path / "j"),
                                      max_ngrams=50_000))


def test_external_sort_gives_the_in_memory_index_byte_for_byte(tmp_path: Path) -> None:
    """Many small sorted runs merged on disk give exactly np.save of the unique hashes of every item."""
    per_file = []
    for k, items in enumerate((3000, 40, 900)):
        texts = _synthetic_set(tmp_path / f"b{k}.parquet", items, seed=k)
        per_file.append(texts)
    files = sorted(tmp_path.glob("b*.parquet"))
    small = ngi.build_index(files, columns=["question"], n=8, stride=1, max_ngrams=10**9,
                            index_dir=tmp_path / "small", run_hashes=2000)  # dozens of runs per benchmark
    hasher = ngi.WordHasher()
    expected = []
    for texts in per_file:
        hs = [ngi.ngram_hashes(np.asarray(hasher.words(" ".join(t)), np.uint64), 8) for t in texts]
        expected.append(np.unique(np.concatenate(hs)))
    ref = tmp_path / "ref.npy"
    np.save(ref, np.concatenate(expected))
    assert Path(small.path).read_bytes() == ref.read_bytes()
    assert small.offsets == np.cumsum([0] + [len(e) for e in expected]).tolist()
    one = ngi.build_index(files, columns=["question"], n=8, stride=1, max_ngrams=10**9, index_dir=tmp_path / "one")
    assert Path(one.path).read_bytes() == ref.read_bytes()
    assert sorted(p.name for p in (tmp_path / "small").iterdir()) == sorted(
        [Path(small.path).name, Path(small.path).with_suffix(".json").name])  # no run or temporary file left
    with pytest.raises(ConfigError, match="max_ngrams"):
        ngi.build_index(files, columns=["question"], n=8, stride=1, max_ngrams=5000, index_dir=tmp_path / "cap",
                        run_hashes=2000)
    assert list((tmp_path / "cap").iterdir()) == []  # the failed build removed its runs


def test_a_killed_build_leaves_runs_that_the_next_build_removes(tmp_path: Path) -> None:
    import os
    import socket

    _synthetic_set(tmp_path / "b.parquet", 50)
    folder = tmp_path / "idx"
    folder.mkdir()
    dead = next(pid for pid in range(4_000_000, 4_100_000) if not pid_alive(pid))
    stale = folder / f".run-{socket.gethostname()}-{dead}-0.u64"
    stale.write_bytes(b"\0" * 64)
    mine = folder / f".run-{socket.gethostname()}-{os.getpid()}-9.u64"  # a live process's run: kept
    mine.write_bytes(b"\0" * 8)
    other = folder / ".run-some-other-host-1-0.u64"  # another machine's build on a shared folder: kept
    other.write_bytes(b"\0" * 8)
    ngi.build_index([tmp_path / "b.parquet"], columns=["question"], n=8, stride=1, max_ngrams=10**9,
                    index_dir=folder)
    assert not stale.exists() and mine.exists() and other.exists()


def test_pickled_step_reopens_the_index(tmp_path: Path) -> None:
    import pickle

    step = _step(tmp_path)
    item = pq.read_table(EVAL / "quotes_qa.parquet").to_pylist()[0]
    assert step.filter(_doc(item["question"] + " " + item["answer"])) is not True
    blob = pickle.dumps(step)
    assert len(blob) < 20_000  # the array travels as a file, never in the pickle
    again = pickle.loads(blob)
    assert again.filter(_doc(item["question"] + " " + item["answer"])) == (False, "contaminated:quotes_qa")


def test_command_keeps_rows_and_marks_verdicts(tmp_path: Path) -> None:
    from curate.steps_cli import run_step

    item = pq.read_table(EVAL / "reading.parquet").to_pylist()[0]
    clean = _real_sentences(3)
    rows = [{"id": "a", "text": clean[0]}, {"id": "b", "text": clean[1] + " " + item["passage"]},
            {"id": "c", "text": None}]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = DecontamConfig(eval_sets=[str(EVAL)], index_dir=str(tmp_path / "idx"))
    counts = run_step("decontam", inputs=tmp_path / "in.jsonl", output=tmp_path / "out.parquet", cfg=cfg)
    assert counts == {"docs": 2, "read_drops": 1, "flagged": 1}
    out = {r["id"]: r for r in pq.read_table(tmp_path / "out.parquet").to_pylist()}
    assert out["a"]["decontam_keep"] and out["a"]["decontam_reason"] is None
    assert not out["b"]["decontam_keep"] and out["b"]["decontam_reason"] == "contaminated:reading"
    assert pq.read_table(tmp_path / "out.drops.parquet").column("id").to_pylist() == ["c"]


def test_safety_metrics_on_a_hand_built_run(tmp_path: Path) -> None:
    from curate.evaluation.metrics import curation_metrics

    gt = pa.table({
        "id": ["r1", "r2", "r3", "r4", "t1", "t2", "c1", "c2", "c3"],
        "domain": ["news", "news", "news", "code", "news", "code", "news", "code", "news"],
        "defects": [[], [], [], [], ["toxic:inserted"], ["toxic:abusive"], ["contaminated:qa"],
                    ["contaminated:qa"], ["contaminated:rc"]],
        "lang": ["en"] * 9,
    })
    pq.write_table(gt, tmp_path / "gt.parquet")
    run = tmp_path / "run"
    (run / "curated").mkdir(parents=True)
    pq.write_table(pa.table({"id": ["r1", "r4", "t2", "c3"], "text": ["a"] * 4,
                             "contam_benchmarks": ["", "", "", "rc"]}), run / "curated" / "all.parquet")
    pq.write_table(pa.table({"id": ["c1", "c2", "r2", "r3", "t1"],
                             "step": ["decontam", "filters", "toxicity", "filters", "toxicity"],
                             "reason": ["contaminated:qa", "gopher_short_doc", "toxicity_above_0.95",
                                        "top_2_gram", "c4_badwords"],
                             "domain": ["news", "code", "news", "news", "news"]}), run / "drops.parquet")
    steps = ["read", "normalize", "decontam", "langid", "filters", "toxicity_score", "toxicity"]
    (run / "stats.json").write_text(json.dumps({"steps": {s: {} for s in steps}}))
    m = curation_metrics(run, tmp_path / "gt.parquet")
    tox = m["toxicity"]
    # t2 reached the step and was kept: recall 1/2; r2 is a real news document dropped: precision 1/2
    assert tox["recall"] == 0.5 and tox["precision"] == 0.5 and tox["planted_reached"] == 2
    # r3 was dropped by the filters before the step: news share = 1 flagged / 2 reached
    assert tox["real_flagged"]["news"] == {"flagged": 1, "docs": 2, "share": 0.5}
    assert tox["real_flagged"]["code"]["share"] == 0.0 and tox["loud"] == ["news"]
    dc = m["decontam"]
    # c2 was dropped by the filters AFTER decontam missed it: it counts as missed (recall 2/3)
    assert dc["recall"] == round(2 / 3, 6) and dc["clean_flagged"] == 0 and dc["precision"] == 1.0
    assert dc["per_benchmark"] == {"qa": {"planted_reached": 2, "recall": 0.5},
                                   "rc": {"planted_reached": 1, "recall": 1.0}}
    assert dc["per_benchmark_domain"] == {"qa": {"news": 1}, "rc": {"news": 1}}


def test_copies_in_formats_the_demo_planter_never_writes(tmp_path: Path) -> None:
    """Independent of curate/demo/safety.py: items rendered as JSON lines (escaped quotes and
    newlines), HTML, Markdown and with typographic punctuation, inside real text."""
    import html

    step = _step(tmp_path)
    clean = _real_sentences(80)
    rng = random.Random(3)
    renders = {
        "jsonl": lambda it: json.dumps({"q": it.get("passage", "") + "\n" + it["question"], "a": it["answer"]}),
        "html": lambda it: f"<table><tr><td>{html.escape(it['question'])}</td><td><b>{html.escape(it['answer'])}"
                           f"</b></td></tr></table><p>{html.escape(it.get('passage') or '')}</p>",
        "markdown": lambda it: f"## Q\n> {it.get('passage') or ''}\n\n**{it['question']}**\n\n- *{it['answer']}*",
        "typographic": lambda it: (it.get("passage", "") + " " + it["question"] + " " + it["answer"]).replace(
            "'", "\u2019").replace('"', "\u201c").replace(" - ", " \u2014 "),
    }
    found = total = 0
    for bench in ("define", "reading", "quotes_qa"):
        items = pq.read_table(EVAL / f"{bench}.parquet").to_pylist()
        for it in rng.sample(items, 10):
            for render in renders.values():
                doc = _doc(rng.choice(clean) + "\n" + render(it) + "\n" + rng.choice(clean))
                total += 1
                found += step.filter(doc) == (False, f"contaminated:{bench}")
    assert found / total >= 0.99, (found, total)


def test_prefilter_passes_every_index_hash_and_lookup_equals_the_plain_search():
    import numpy as np

    from curate.steps import ngram_index as ngi

    rng = np.random.default_rng(7)
    for n in (0, 1, 17, 5000, 200_000):
        arr = np.sort(rng.integers(0, 2**64 - 1, n, dtype=np.uint64, endpoint=True))
        pf = ngi.Prefilter(arr)
        assert pf.maybe(arr).all()  # no false negative
        absent = rng.integers(0, 2**64 - 1, 20_000, dtype=np.uint64, endpoint=True)
        if n >= 5000:
            assert pf.maybe(absent).mean() < 0.15  # most absent keys stop at the bit array
        keys = np.concatenate([absent, arr[: min(n, 3000)], np.array([0, 2**64 - 1], np.uint64)])
        rng.shuffle(keys)
        got = keys[pf.maybe(keys)]
        assert np.array_equal(ngi.contains(arr, got), np.isin(got, arr))
        assert set(np.flatnonzero(np.isin(keys, arr))) <= set(np.flatnonzero(pf.maybe(keys)))


def test_a_text_seen_again_gets_the_same_decision_and_columns(tmp_path: Path) -> None:
    """The memo (the calibration's pass, then the run's) answers as a fresh step does, in both modes."""
    item = pq.read_table(EVAL / "define.parquet").to_pylist()[3]
    clean = _real_sentences()
    texts = [clean[4] + "\n" + item["answer"] + "\n" + clean[5], clean[6], "Intro. " + item["answer"]]
    for mode in ("drop", "remove"):
        seen = _step(tmp_path, mode=mode, min_chars_after_removal=100)
        seen_docs = [_doc(t, str(i)) for i, t in enumerate(texts)]
        first = [seen.filter(d) for d in seen_docs]
        for _ in range(2):  # again, on fresh documents with the same texts
            again = [_doc(t, str(i)) for i, t in enumerate(texts)]
            fresh = [_doc(t, str(i)) for i, t in enumerate(texts)]
            fresh_step = _step(tmp_path, mode=mode, min_chars_after_removal=100)
            assert [seen.filter(d) for d in again] == first == [fresh_step.filter(d) for d in fresh]
            for a, f in zip(again, fresh, strict=True):
                assert (a.text, a.metadata) == (f.text, f.metadata)
        assert len(seen._memo.items) == (3 if mode == "drop" else 1)  # a cut text is not memoised
