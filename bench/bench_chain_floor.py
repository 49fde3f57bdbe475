"""Benchmark: the floor of the curation chain's cost per MB, set by the native libraries it must call.

    python bench/bench_chain_floor.py --input /tmp/gen1000/docs --models out/models \
        [--run /tmp/bct/out_ours_0] [--chain bench/out/bench_chain_throughput.json] [--mb 0]

The default chain calls three native models on every document that reaches them, in the base tree
and in ours alike, with the same inputs (the decisions must stay identical): fastText language ID
(``lid.176.ftz`` on the first ``max_chars`` characters, newlines as spaces), the fastText quality
classifier (on ``curate.steps.quality.ft_text``) and KenLM (``model.score`` of each line of
``lm_lines``). This script times, in CPU seconds of this one process (one core), exactly those
calls on the input's documents, each apart from the Python that prepares its input: fastText's own
``predict`` and, where the compiled module is built, the chain's compiled prediction
(``curate.ftpredict``, the same bits; the floor counts that one), plus the
Parquet read and one Python regex tokenisation pass (``\\w+|[^\\w\\s]`` over the lowercased text:
the unit of work every text step of the chain does at least once).

``--run`` (a ``corpusmix curate run`` output folder of the same input, e.g. one side of
``bench_chain_throughput.py``) restricts each model to the documents that reached its step (those
not dropped by an earlier step of the run's ``drops.parquet``); without it every document counts,
which overstates the quality models' share by the share dropped before them.

``--chain`` (the JSON that ``bench_chain_throughput.py`` wrote for the same input) adds the
whole-chain CPU seconds per MB of both sides of that run and prints: the budget per MB that
``ratio`` x the base's throughput leaves (default 4), what is left of it after the floor, and the
ratio the chain would reach if every step's own Python cost nothing (base s/MB over the floor).
Results go to ``bench/out/bench_chain_floor.json``.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path

import harness
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent

def cpu(fn: Callable[[], object]) -> tuple[float, object]:
    t0 = time.process_time()
    out = fn()
    return time.process_time() - t0, out


def reached(run: Path | None, ids: list[str], step: str) -> list[bool]:
    """Which documents reached ``step`` in ``run`` (not dropped by a step before it)."""
    if run is None:
        return [True] * len(ids)
    # the run's own step order (stats.json lists its steps as they ran); a document dropped by a
    # step never reaches the later ones
    order = list(json.loads((run / "stats.json").read_text())["steps"])
    if step not in order:
        raise SystemExit(f"{run}: step {step!r} is not in this run's chain {order}")
    drops = pq.read_table(run / "drops.parquet", columns=["id", "step"]).to_pylist()
    before = set(order[:order.index(step)])
    gone = {d["id"] for d in drops if d["step"] in before}
    return [i not in gone for i in ids]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--input", required=True, type=Path, help="folder of Parquet documents (gen_corpus.py docs/)")
    ap.add_argument("--models", required=True, type=Path, help="quality models folder (train-quality output)")
    ap.add_argument("--run", type=Path, default=None, help="a curate run output of the same input (drops.parquet)")
    ap.add_argument("--chain", type=Path, default=None, help="bench_chain_throughput.py JSON of the same input")
    ap.add_argument("--ratio", type=float, default=4.0, help="target ratio to the base tree")
    ap.add_argument("--mb", type=float, default=0.0, help="first MB of text of the input (0 = all)")
    ap.add_argument("--max-chars", type=int, default=20000, help="characters given to each model (params: 20000)")
    args = ap.parse_args()

    import fasttext
    import kenlm

    from curate.steps.langid import PACKAGED_MODEL
    from curate.steps.quality import _TOKEN, ft_text, lm_lines

    files = sorted(args.input.glob("*.parquet")) if args.input.is_dir() else [args.input]
    t_read, tables = cpu(lambda: [pq.read_table(f, columns=["id", "text"]) for f in files])
    ids, texts = [], []
    budget = args.mb * 1e6 if args.mb else float("inf")
    for t in tables:
        for i, s in zip(t.column("id").to_pylist(), t.column("text").to_pylist(), strict=True):
            if budget <= 0:
                break
            if not isinstance(s, str):
                continue
            ids.append(str(i))
            texts.append(s)
            budget -= len(s.encode())
    mb = sum(len(s.encode()) for s in texts) / 1e6
    # the read is timed over whole files: with --mb, its share for the documents taken
    read_mb = sum(len(s.encode()) for t in tables for s in t.column("text").to_pylist() if isinstance(s, str)) / 1e6
    t_read *= mb / read_mb
    print(f"input {args.input}: {len(texts):,} documents, {mb:.1f} MB of text", flush=True)
    mc = args.max_chars
    res: dict = {"mb": round(mb, 2), "docs": len(texts), "run": str(args.run) if args.run else None}
    s_per_mb: dict[str, float] = {"parquet read": t_read / mb}

    lid = fasttext.load_model(str(PACKAGED_MODEL))
    qft = fasttext.load_model(str(args.models / "quality_ft.bin"))
    klm = kenlm.Model(str(args.models / "kenlm.bin"))

    from curate import ftpredict

    # the compiled prediction (curate.ftpredict: fastText's bits), which the chain calls where the
    # compiled module is built; None without it
    lid_c = ftpredict.load(PACKAGED_MODEL)
    qft_c = ftpredict.load(args.models / "quality_ft.bin")

    sel = reached(args.run, ids, "langid")
    docs = [t for t, k in zip(texts, sel, strict=True) if k]
    t_prep, prep = cpu(lambda: [t[:mc].replace("\n", " ") for t in docs])
    t_lid, _ = cpu(lambda: [lid.predict(t, k=1) for t in prep])
    s_per_mb["langid: fastText predict"] = t_lid / mb
    s_per_mb["langid: its input (slice, newlines)"] = t_prep / mb
    if lid_c is not None:  # the chain's call: the slice, newlines read as spaces by the kernel
        t_c, _ = cpu(lambda: [lid_c.predict(t[:mc]) for t in docs])
        s_per_mb["langid: compiled predict"] = t_c / mb

    sel = reached(args.run, ids, "quality_ft")
    docs = [t for t, k in zip(texts, sel, strict=True) if k]
    res["docs_reaching_quality"] = len(docs)
    t_prep, prep = cpu(lambda: [ft_text(t, mc) for t in docs])
    t_q, _ = cpu(lambda: [qft.predict(t, k=2) for t in prep])
    s_per_mb["quality: fastText predict"] = t_q / mb
    s_per_mb["quality: its input (ft_text)"] = t_prep / mb
    if qft_c is not None:
        t_c, _ = cpu(lambda: [qft_c.probabilities(t) for t in prep])
        s_per_mb["quality: compiled predict"] = t_c / mb

    t_prep, lines = cpu(lambda: [lm_lines(t, mc) for t in docs])
    t_k, _ = cpu(lambda: [sum(klm.score(x, bos=True, eos=True) for x in ls) for ls in lines])
    s_per_mb["kenlm: model.score"] = t_k / mb
    s_per_mb["kenlm: its input (lm_lines)"] = t_prep / mb

    t_tok, _ = cpu(lambda: [_TOKEN.findall(t[:mc].lower()) for t in texts])
    s_per_mb["one regex tokenisation pass (reference)"] = t_tok / mb

    # the floor: the read and the native calls the chain makes (the compiled prediction where it
    # is built, else fastText's); fastText's own calls give the floor of the code before it
    fasttext_keys = ["parquet read", "langid: fastText predict", "quality: fastText predict", "kenlm: model.score"]
    floor_keys = [k.replace("fastText predict", "compiled predict") if k.replace(
        "fastText predict", "compiled predict") in s_per_mb else k for k in fasttext_keys]
    floor = sum(s_per_mb[k] for k in floor_keys)
    res["s_per_mb"] = {k: round(v, 4) for k, v in s_per_mb.items()}
    res["floor_s_per_mb"] = round(floor, 4)
    res["floor_parts"] = floor_keys
    res["floor_with_fasttext_s_per_mb"] = round(sum(s_per_mb[k] for k in fasttext_keys), 4)
    print(f"\n{'CPU s per MB of input':42s} {'s/MB':>7s}")
    for k, v in s_per_mb.items():
        print(f"{k:42s} {v:7.4f}{'  (floor)' if k in floor_keys else ''}")
    print(f"{'floor: read + the three native calls':42s} {floor:7.4f}  ({1 / floor:.2f} MB/s per core at most)")
    print(f"{'  the same with fastText own predict':42s} {res['floor_with_fasttext_s_per_mb']:7.4f}")

    if args.chain:
        ch = json.loads(args.chain.read_text())
        ch = ch.get("result", ch)  # harness.write_record's record: {"bench", "env", "result"}
        base = 1.0 / ch["chain_mb_per_s_per_core"]["base"]
        ours = 1.0 / ch["chain_mb_per_s_per_core"]["ours"]
        budget_s = base / args.ratio
        res["chain"] = {"base_s_per_mb": round(base, 4), "ours_s_per_mb": round(ours, 4),
                        "target_ratio": args.ratio, "target_s_per_mb": round(budget_s, 4),
                        "left_after_floor_s_per_mb": round(budget_s - floor, 4),
                        "ratio_if_only_the_floor_cost": round(base / floor, 2),
                        "ours_above_floor_s_per_mb": round(ours - floor, 4)}
        print(f"\nchain ({args.chain}, {ch['mb']} MB): base {base:.3f} s/MB, ours {ours:.3f} s/MB "
              f"({ch['chain_ratio']:.2f}x)")
        print(f"{args.ratio:g}x the base = {budget_s:.3f} s/MB; after the floor {budget_s - floor:.3f} s/MB are left "
              f"for every step's own work (ours spends {ours - floor:.3f}); "
              f"ratio if only the floor cost: {base / floor:.2f}x; one regex pass costs "
              f"{s_per_mb['one regex tokenisation pass (reference)']:.3f} s/MB")
    out = ROOT / "bench" / "out"
    out.mkdir(parents=True, exist_ok=True)
    harness.write_record("chain_floor", res, out / "bench_chain_floor.json")


if __name__ == "__main__":
    main()
