"""Tests of curate/steps/quality.py, curate/lmplz.py and `corpusmix curate train-quality|score`.

Trains on the project's shipped demo subset (data/demo/en, real text). The KenLM tests need
lmplz (`make lmplz` / `corpusmix curate build-lmplz`, done by `make setup`).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from datatrove.data import Document

from curate.lmplz import KenLMToolsMissing, find_kenlm_tools
from curate.steps.quality import (
    FastTextQualityScorer,
    KenLMScorer,
    QualityConfig,
    ft_text,
    lm_lines,
    quality_filters,
    train_fasttext,
    train_quality_models,
)

DEMO = Path(__file__).resolve().parents[2] / "data" / "demo" / "en"
CFG = dict(max_reference_docs=150, negative_docs=150, max_chars=3000, ft_epoch=20, ft_lr=0.5, ft_dim=16,
           heldout_frac=0.2)


def _texts(domain: str, n: int) -> list[str]:
    return pq.read_table(DEMO / f"{domain}.parquet", columns=["text"]).column("text").to_pylist()[:n]


def _need_lmplz() -> None:
    try:
        find_kenlm_tools()
    except KenLMToolsMissing as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    _need_lmplz()
    ref = _texts("literature", 60) + _texts("news", 60)
    raw = ref[::3] + _texts("code", 40) + _texts("legal", 60) + _texts("quotes", 60)
    out = tmp_path_factory.mktemp("qm")
    manifest = train_quality_models(reference_texts=ref, raw_texts=raw, out_dir=out, cfg=QualityConfig(**CFG))
    return out, manifest


def test_normalisation() -> None:
    assert ft_text("Hello,  World!\nNew line") == "hello , world ! new line"
    assert lm_lines("Café 1984 costs\n\n  $12.50 ") == ["cafe 0000 costs", "$ 00 . 00"]


def test_manifest_and_files(models: tuple[Path, dict]) -> None:
    out, m = models
    assert {p.name for p in out.iterdir()} == {"quality_ft.bin", "kenlm.bin", "kenlm_quantiles.json",
                                                "quality_models.json"}
    assert m["positives"] == 120 and m["negatives"] == 150  # reference texts are never negatives
    assert m["fasttext"]["heldout_auc"] > 0.8
    assert m["kenlm"]["order"] == 5 and m["kenlm"]["lines"] > 200 and m["kenlm"]["tokens"] > 30000
    q = json.loads((out / "kenlm_quantiles.json").read_text())["quantiles"]
    assert len(q) == 101 and q == sorted(q)


def test_scores_rank_prose_above_code(models: tuple[Path, dict]) -> None:
    out, _ = models
    ft = FastTextQualityScorer(model_path=out / "quality_ft.bin", max_chars=3000)
    lm = KenLMScorer(model_path=out / "kenlm.bin", percentiles=(33, 66), max_chars=3000)
    prose = _texts("literature", 80)[70:80]  # not used in training
    code = _texts("code", 49)[40:49]
    docs = {k: [Document(text=t, id=f"{k}{i}") for i, t in enumerate(v)] for k, v in (("p", prose), ("c", code))}
    for d in docs["p"] + docs["c"]:
        assert ft.filter(d) is True and lm.filter(d) is True
        assert 0.0 <= d.metadata["quality_ft"] <= 1.0 and d.metadata["ppl"] > 1.0
        assert d.metadata["ppl_bucket"] in ("head", "middle", "tail")

    def mean(k: str, col: str) -> float:
        return sum(d.metadata[col] for d in docs[k]) / len(docs[k])

    assert mean("p", "quality_ft") > mean("c", "quality_ft") + 0.3
    assert mean("p", "ppl") < mean("c", "ppl")
    assert sum(d.metadata["ppl_bucket"] == "head" for d in docs["p"]) > sum(
        d.metadata["ppl_bucket"] == "head" for d in docs["c"])
    # a line's perplexity from KenLM directly, CCNet's formula
    import kenlm

    model = kenlm.Model(str(out / "kenlm.bin"))
    line = "it was the best of times"
    assert lm.perplexity(line) == round(10 ** (-model.score(line, bos=True, eos=True) / 7), 1)


def test_buckets_follow_percentiles(models: tuple[Path, dict]) -> None:
    out, _ = models
    q = json.loads((out / "kenlm_quantiles.json").read_text())["quantiles"]
    lm = KenLMScorer(model_path=out / "kenlm.bin", percentiles=(10, 90))
    assert lm.cuts == (q[10], q[90])
    assert lm.bucket(q[10]) == "head" and lm.bucket(q[50]) == "middle" and lm.bucket(q[90] + 1) == "tail"


def test_drop_reason_no_text(models: tuple[Path, dict]) -> None:
    out, _ = models
    for step in (FastTextQualityScorer(model_path=out / "quality_ft.bin"), KenLMScorer(model_path=out / "kenlm.bin")):
        assert step.filter(Document(text=None, id="x")) == (False, "no_text")  # type: ignore[arg-type]


def test_fasttext_is_deterministic(tmp_path: Path) -> None:
    pos, neg = _texts("news", 40), _texts("code", 40)
    cfg = QualityConfig(**CFG)
    r1 = train_fasttext(pos, neg, tmp_path / "a.bin", cfg)
    r2 = train_fasttext(pos, neg, tmp_path / "b.bin", cfg)
    digest = [hashlib.sha256((tmp_path / n).read_bytes()).hexdigest() for n in ("a.bin", "b.bin")]
    assert digest[0] == digest[1] and r1 == r2


def test_thresholds_from_params() -> None:
    assert quality_filters(QualityConfig()) == []
    ft_min, ppl_max = quality_filters(QualityConfig(min_quality_ft=0.2, max_ppl=1000.0))
    assert ft_min.filter(Document(text="x", id="1", metadata={"quality_ft": 0.1})) == (False, "quality_ft_below_0.2")
    assert ft_min.filter(Document(text="x", id="2", metadata={"quality_ft": 0.3})) is True
    assert ppl_max.filter(Document(text="x", id="3", metadata={"ppl": 5000.0})) == (False, "ppl_above_1000")
    with pytest.raises(ValueError, match="percentiles"):
        QualityConfig(percentiles=[70, 30])


def test_missing_models_and_tools_are_clear_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="train-quality"):
        FastTextQualityScorer(model_path=tmp_path / "nope.bin")
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("CORPUSMIX_KENLM_BIN", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    import curate.lmplz as lmplz

    monkeypatch.setattr(lmplz, "_candidate_dirs", lambda: [tmp_path])
    with pytest.raises(KenLMToolsMissing, match="build-lmplz.*apt-get install"):
        lmplz.find_kenlm_tools()


def test_cli_train_then_score(tmp_path: Path) -> None:
    _need_lmplz()
    from corpusmix.cli import main

    rows = []
    for d in ("literature", "news", "code", "legal"):
        rows += [{"id": f"{d}/{i}", "text": t, "domain": d, "source": "demo"} for i, t in enumerate(_texts(d, 40))]
    rows.append({"id": "bad", "text": None, "domain": "code", "source": "demo"})
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "docs.parquet")
    flags = ["--params", str(tmp_path / "none.yaml"), "--max-chars", "3000", "--ft-epoch", "20", "--ft-lr", "0.5",
             "--reference-domains", "literature,news"]
    assert main(["curate", "train-quality", "--reference", str(tmp_path / "docs.parquet"),
                 "--raw", str(tmp_path / "docs.parquet"), "--output", str(tmp_path / "m"), *flags]) == 0
    manifest = json.loads((tmp_path / "m" / "quality_models.json").read_text())
    assert manifest["positives"] == 80 and manifest["negatives"] == 80
    assert main(["curate", "score", "--input", str(tmp_path / "docs.parquet"), "--output", str(tmp_path / "s.parquet"),
                 "--models", str(tmp_path / "m"), *flags]) == 0
    out = pq.read_table(tmp_path / "s.parquet")
    assert out.num_rows == 160 and {"domain", "source", "quality_ft", "ppl", "ppl_bucket"} <= set(out.column_names)
    assert pq.read_table(tmp_path / "s.parquet.drops.parquet").column("reason").to_pylist() == ["missing_text"]


def test_build_lmplz_errors_are_clear(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tarfile

    from curate.lmplz import build_kenlm_tools

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "README").write_text("not kenlm")
    with tarfile.open(tmp_path / "kenlm-0.0.tar.gz", "w:gz") as tf:
        tf.add(tmp_path / "pkg", arcname="kenlm-0.0")
    with pytest.raises(KenLMToolsMissing, match="no CMakeLists.txt"):
        build_kenlm_tools(dest=tmp_path / "bin", sdist=tmp_path / "kenlm-0.0.tar.gz")
    monkeypatch.setenv("PATH", str(tmp_path))  # no cmake, no make
    with pytest.raises(KenLMToolsMissing, match="`cmake` is not installed.*apt-get install"):
        build_kenlm_tools(dest=tmp_path / "bin", sdist=tmp_path / "kenlm-0.0.tar.gz")


def test_text_without_tokens(models: tuple[Path, dict]) -> None:
    out, _ = models
    lm = KenLMScorer(model_path=out / "kenlm.bin")
    ft = FastTextQualityScorer(model_path=out / "quality_ft.bin")
    doc = Document(text="  \n\n ", id="blank")
    assert lm.filter(doc) is True and ft.filter(doc) is True
    assert doc.metadata["ppl"] is None and doc.metadata["ppl_bucket"] == "tail"
    assert 0.0 <= doc.metadata["quality_ft"] < 0.5


def test_lm_lines_equal_a_findall_per_line():
    """lm_lines' one findall over the joined lines gives each line's tokens, for every kind of line break."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from curate.steps import quality as q

    def per_line(text: str) -> list[str]:
        out = []
        for line in q._DIGIT.sub("0", q._strip_accents(text[:20000].lower())).splitlines():
            toks = q._TOKEN.findall(line)
            if toks:
                out.append(" ".join(toks))
        return out

    @settings(max_examples=1500, deadline=None)
    @given(st.text(alphabet="ab Z9.,-_'\n\r\t\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029\u00e9\u0301\u00a0\u0663", max_size=60))
    def check(text: str) -> None:
        assert q.lm_lines(text) == per_line(text)

    check()
