"""The demo-data generator: deterministic, and its ground truth is consistent."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from curate.demo.data import DemoDataConfig, build_demo_data, expected_jaccard, jaccard

ROOT = Path(__file__).resolve().parents[2]


def _digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*.parquet"))}


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("raw")
    build_demo_data(DemoDataConfig(source_dir=str(ROOT / "data/demo"), output=str(out)))
    return out


def test_deterministic(demo: Path, tmp_path: Path) -> None:
    build_demo_data(DemoDataConfig(source_dir=str(ROOT / "data/demo"), output=str(tmp_path)))
    assert _digest(demo) == _digest(tmp_path)


def test_other_seed_differs(demo: Path, tmp_path: Path) -> None:
    build_demo_data(DemoDataConfig(source_dir=str(ROOT / "data/demo"), output=str(tmp_path), seed=7))
    assert _digest(demo) != _digest(tmp_path)


def test_ground_truth_consistent(demo: Path) -> None:
    docs = {r["id"]: r for p in sorted((demo / "docs").glob("*.parquet")) for r in pq.read_table(p).to_pylist()}
    gt = pq.read_table(demo / "ground_truth.parquet").to_pylist()
    assert set(docs) == {g["id"] for g in gt}, "one ground-truth row per document"
    kinds: dict[str, int] = {}
    types: set[str] = set()
    for g in gt:
        for d in g["defects"]:
            kinds[d.split(":")[0]] = kinds.get(d.split(":")[0], 0) + 1
        text = docs[g["id"]]["text"]
        for s in g["pii_spans"]:
            assert text[s["start"]:s["end"]] == s["value"], (g["id"], s)
            types.add(s["type"])
        if "exact_dup" in g["defects"]:
            orig = docs[g["dup_cluster"]]["text"]
            assert " ".join(text.lower().split()) == " ".join(orig.lower().split())
        if "near_dup" in g["defects"]:
            orig = docs[g["dup_cluster"]]["text"]
            measured = jaccard(orig, text)
            assert measured == pytest.approx(g["jaccard"], abs=1e-6)
            assert 0.01 <= g["edit_rate"] <= 0.3
            n_words = len(orig.split())
            if n_words >= 300:  # long docs: the measured Jaccard follows the edit rate closely
                assert abs(measured - expected_jaccard(g["edit_rate"])) < 0.12, (g["id"], measured)
    assert {"exact_dup", "near_dup", "pii", "junk", "foreign", "noise"} <= set(kinds)
    assert {"EMAIL_ADDRESS", "PHONE_NUMBER", "CREDIT_CARD", "IBAN_CODE", "US_SSN", "IP_ADDRESS", "PERSON"} <= types
    domains = {d["domain"] for d in docs.values()}
    assert {"literature", "reference", "techdocs", "code", "legal", "news", "quotes", "noise"} <= domains
    # near-duplicates at every planted edit rate
    rates = {g["edit_rate"] for g in gt if "near_dup" in g["defects"]}
    assert rates == {0.01, 0.03, 0.05, 0.1, 0.2, 0.3}


def test_credit_cards_pass_luhn(demo: Path) -> None:
    from curate.evaluation.planters import luhn_ok

    gt = pq.read_table(demo / "ground_truth.parquet").to_pylist()
    cards = [s["value"] for g in gt for s in g["pii_spans"] if s["type"] == "CREDIT_CARD"]
    assert cards and all(luhn_ok(c) for c in cards)


def test_jaccard_basics() -> None:
    a = "the quick brown fox jumps over the lazy dog again"
    assert jaccard(a, a) == 1.0
    assert jaccard(a, "completely different words that share nothing with it at all") == 0.0
    assert expected_jaccard(0.0) == 1.0
    assert 0 < expected_jaccard(0.1) < expected_jaccard(0.01) < 1


def _rows(folder: Path) -> dict[str, dict]:
    return {r["id"]: r for p in sorted((folder / "docs").glob("*.parquet")) for r in pq.read_table(p).to_pylist()}


def test_safety_plantings_leave_the_others_byte_identical(demo: Path, tmp_path: Path) -> None:
    build_demo_data(DemoDataConfig(source_dir=str(ROOT / "data/demo"), output=str(tmp_path), toxic_docs=0,
                                   contaminated_docs=0))
    without, with_ = _rows(tmp_path), _rows(demo)
    gt_without = {r["id"]: r for r in pq.read_table(tmp_path / "ground_truth.parquet").to_pylist()}
    gt_with = {r["id"]: r for r in pq.read_table(demo / "ground_truth.parquet").to_pylist()}
    added = set(with_) - set(without)
    assert set(without) <= set(with_) and len(added) == 120
    assert all(i.startswith(("toxic/", "contam/")) for i in added)
    assert all(with_[i] == without[i] and gt_with[i] == gt_without[i] for i in without)


def test_planted_contamination_is_found_and_clean_documents_are_not(demo: Path, tmp_path: Path) -> None:
    """The issue's target on the demo: recall of planted contaminated documents >= 0.99, no clean one dropped."""
    from datatrove.data import Document

    from curate.steps.decontam import DecontamConfig, Decontaminator

    step = Decontaminator(DecontamConfig(eval_sets=[str(ROOT / "data/demo/eval")], index_dir=str(tmp_path)))
    gt = {r["id"]: r for r in pq.read_table(demo / "ground_truth.parquet").to_pylist()}
    planted = {i: d.split(":", 1)[1] for i, g in gt.items() for d in g["defects"] if d.startswith("contaminated:")}
    assert len(planted) == 60 and set(planted.values()) == {"define", "reading", "quotes_qa"}
    flagged = {}
    for i, r in _rows(demo).items():
        res = step.filter(Document(text=r["text"], id=i, metadata={"domain": r["domain"]}))
        if res is not True:
            flagged[i] = res[1]
    assert sum(flagged.get(i) == f"contaminated:{b}" for i, b in planted.items()) / len(planted) >= 0.99
    assert set(flagged) <= set(planted), sorted(set(flagged) - set(planted))[:5]


def test_planted_toxic_documents_hold_listed_words(demo: Path) -> None:
    from curate.steps.toxicity import ToxicityConfig, ToxicityScorer

    gt = {r["id"]: r for r in pq.read_table(demo / "ground_truth.parquet").to_pylist()}
    toxic = [i for i, g in gt.items() if any(d.startswith("toxic:") for d in g["defects"])]
    kinds = {d for i in toxic for d in gt[i]["defects"]}
    assert len(toxic) == 60 and kinds == {"toxic:inserted", "toxic:abusive"}
    rows = _rows(demo)
    scorer = ToxicityScorer(ToxicityConfig(model="none"))
    assert all(scorer.count_badwords(rows[i]["text"], "en") >= 2 for i in toxic)
