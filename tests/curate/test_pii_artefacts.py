"""No planted PII or secret inside trained models, logs, stats or metrics.

Values (Faker e-mails and phones of several locales, spec cards, IBANs, issuer-format keys) are
planted, each several times so that an unredacted run WOULD learn them, into real demo paragraphs.
Then the real commands run on that tiny corpus: ``curate train-quality`` (fastText + KenLM via
lmplz), ``curate pii`` + ``tokenize train`` (BPE), ``curate run`` and ``curate metrics``. Checked:
fastText's word list, the KenLM binary (its vocabulary is stored as text), the tokenizer vocabulary,
every log record, stdout/stderr, ``stats.json``, ``drops.parquet``, the metrics JSON. A control
trains the same models on the unredacted text and finds the values, so the check can fail.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate.evaluation.planters import IndependentPIISet, SecretPlanter

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "data" / "demo" / "en"
pytestmark = pytest.mark.slow
PII_KINDS = ["EMAIL_ADDRESS", "EMAIL_ADDRESS", "EMAIL_ADDRESS", "PHONE_NUMBER", "PHONE_NUMBER", "CREDIT_CARD",
             "IBAN_CODE", "US_SSN", "IP_ADDRESS"]


def _corpus() -> tuple[list[dict], list[str], list[str]]:
    """Demo documents of four domains with 16 values, each planted into 6 documents."""
    gen, sec = IndependentPIISet(seed=21, context_share=1.0), SecretPlanter(seed=21)
    values: list[tuple[str, str]] = []  # (snippet, value)
    for kind in PII_KINDS:
        before, value, after, _ = gen.snippet(kind)
        values.append((before + value + after, value))
    for kind in ("aws", "github", "slack", "jwt", "url_password", "assigned_password", "pem"):
        line, value = sec.value(kind)
        values.append((line, value))
    rows = []
    for d in ("literature", "news", "legal", "code"):
        texts = pq.read_table(DEMO / f"{d}.parquet", columns=["text"]).slice(0, 16).column("text").to_pylist()
        for i, t in enumerate(texts):
            t = t[:2500]
            picks = [values[(i * 3 + k) % len(values)][0] for k in range(4)]
            cut = t.find("\n", len(t) // 2)
            cut = cut if cut >= 0 else len(t)
            rows.append({"id": f"{d}-{i}", "text": t[:cut] + "\n" + "\n".join(picks) + "\n" + t[cut:],
                         "domain": d, "source": "demo"})
    return rows, [v for _, v in values], PII_KINDS + ["SECRET"] * 7


def _needles(values: list[str], corpus_clean: str) -> list[str]:
    """Lower-cased word tokens of the values (>= 6 characters) that the clean text never holds."""
    out = set()
    for v in (part for value in values for part in SecretPlanter.material(value)):  # PEM: body, not header
        for tok in re.findall(r"\w+", v.lower()):
            if len(tok) >= 6 and not tok.isdigit() and tok not in corpus_clean:
                out.add(tok)
            if tok.isdigit() and len(tok) >= 7:
                out.add(tok)  # long digit runs (fastText keeps digits; KenLM maps them to 0)
    return sorted(out)


def _run(args: list[str], cwd: Path) -> str:
    """``corpusmix ARGS`` in this process (no interpreter start per command); returns its stdout."""
    from corpusmix.cli import main

    out = io.StringIO()
    old = Path.cwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out):
            assert main(args) == 0, args
    finally:
        os.chdir(old)
    return out.getvalue()


def _leaks(needles: list[str], haystack: str) -> list[str]:
    low = haystack.lower()
    return [n for n in needles if n in low]


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> dict:
    from curate.lmplz import KenLMToolsMissing, find_kenlm_tools

    try:
        find_kenlm_tools()
    except KenLMToolsMissing as exc:
        pytest.skip(f"KenLM tools not built: {exc}")
    root = tmp_path_factory.mktemp("pii_artefacts")
    rows, values, kinds = _corpus()
    pq.write_table(pa.Table.from_pylist(rows), root / "raw.parquet")
    clean = " ".join(pq.read_table(DEMO / f"{d}.parquet", columns=["text"]).column("text").to_pylist()[i][:2500]
                     for d in ("literature", "news", "legal", "code") for i in range(16)).lower()
    (root / "params.yaml").write_text(
        # fastText keeps its default bucket count: small tables gave NaN losses in-process
        "quality:\n  reference_domains: [literature, news]\n  ft_epoch: 5\n  ft_dim: 8\n"
        "  max_reference_docs: 200\n  negative_docs: 200\n"
        "tokenizer:\n  vocab_size: 1200\n  min_frequency: 2\n  require_redacted: true\n"
        "curate:\n  engine:\n    steps: [normalize, dedup, pii]\n    tasks: 1\n    workers: 1\n")
    gt = []
    for r in rows:  # ground truth of the planted PII (secrets are scored by the benchmark, not here)
        spans = [{"start": r["text"].find(v), "end": r["text"].find(v) + len(v), "type": t, "value": v}
                 for t, v in zip(kinds, values, strict=False) if v in r["text"]]
        gt.append({"id": r["id"], "domain": r["domain"], "lang": "en", "defects": ["pii"], "pii_spans": spans})
    pq.write_table(pa.Table.from_pylist(gt), root / "gt.parquet")

    from corpusmix.logging import JsonlFormatter

    records: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda rec: records.append(JsonlFormatter().format(rec))  # type: ignore[method-assign]
    logging.getLogger("corpusmix").addHandler(handler)
    try:
        said = _run(["curate", "train-quality", "--reference", "raw.parquet", "--raw", "raw.parquet",
                     "--output", "models", "--params", "params.yaml"], root)
        (root / "curated").mkdir()
        said += _run(["curate", "pii", "--input", "raw.parquet", "--output", "curated/all.parquet",
                      "--drops", "pii_drops.parquet", "--params", "params.yaml"], root)
        said += _run(["tokenize", "train", "--curated", "curated", "--output", "tok.json", "--params", "params.yaml"],
                     root)
        said += _run(["curate", "run", "--input", "raw.parquet", "--output", "run", "--params", "params.yaml"], root)
        said += _run(["curate", "metrics", "--run", "run", "--ground-truth", "gt.parquet", "--output", "metrics.json",
                      "--params", "params.yaml"], root)
    finally:
        logging.getLogger("corpusmix").removeHandler(handler)
    (root / "log.jsonl").write_text("\n".join(records))
    return {"root": root, "values": values, "needles": _needles(values, clean), "said": said, "rows": rows}


def test_needles_are_meaningful(work: dict) -> None:
    assert len(work["needles"]) >= 15, work["needles"]


def test_no_value_in_fasttext_or_kenlm(work: dict) -> None:
    import fasttext

    words = " ".join(fasttext.load_model(str(work["root"] / "models" / "quality_ft.bin")).get_words())
    assert _leaks(work["needles"], words) == []
    kenlm_bytes = (work["root"] / "models" / "kenlm.bin").read_bytes().decode("utf-8", "replace")
    assert _leaks(work["needles"], kenlm_bytes) == []


def test_no_value_in_tokenizer_vocabulary(work: dict) -> None:
    from tokenizers import decoders

    vocab = json.loads((work["root"] / "tok.json").read_text())["model"]["vocab"]
    dec = decoders.ByteLevel()
    words = " ".join(dec.decode([t]) for t in vocab)
    assert _leaks(work["needles"], words) == []


def test_no_value_in_logs_stats_drops_or_metrics(work: dict) -> None:
    root = work["root"]
    texts = [work["said"], (root / "log.jsonl").read_text(), (root / "run" / "stats.json").read_text(),
             (root / "metrics.json").read_text(), (root / "models" / "quality_models.json").read_text()]
    for p in (root / "run" / "drops.parquet", root / "pii_drops.parquet"):
        texts.append(json.dumps(pq.read_table(p).to_pylist(), default=str))
    for v in work["values"]:
        for t in texts:
            assert v not in t
    joined = "\n".join(texts)
    assert _leaks(work["needles"], joined) == []
    assert '"SECRET_GITHUB_TOKEN"' in (root / "run" / "stats.json").read_text() or "SECRET_" in joined


def test_curated_text_is_redacted(work: dict) -> None:
    for p in sorted((work["root"] / "run" / "curated").glob("*.parquet")):
        text = "\n".join(pq.read_table(p, columns=["text"]).column("text").to_pylist())
        assert _leaks(work["needles"], text) == []
        for v in work["values"]:
            assert v not in text


def test_control_unredacted_training_keeps_values(work: dict, tmp_path: Path) -> None:
    """The same fastText/KenLM training on the raw text learns the values: the checks above can fail."""
    import fasttext

    from curate.steps.quality import QualityConfig, train_quality_models

    texts = [r["text"] for r in work["rows"]]
    ref = [r["text"] for r in work["rows"] if r["domain"] in ("literature", "news")]
    train_quality_models(reference_texts=ref, raw_texts=texts, out_dir=tmp_path,
                         cfg=QualityConfig(ft_epoch=5, ft_dim=8, max_reference_docs=200,
                                           negative_docs=200))
    words = " ".join(fasttext.load_model(str(tmp_path / "quality_ft.bin")).get_words())
    assert len(_leaks(work["needles"], words)) >= 10
    assert _leaks(work["needles"], (tmp_path / "kenlm.bin").read_bytes().decode("utf-8", "replace"))


def test_tokenizer_refuses_unredacted_files(tmp_path: Path) -> None:
    from corpusmix.config import ConfigError
    from proxytrain.tokenizer import TokenizerConfig, train_tokenizer

    (tmp_path / "c").mkdir()
    pq.write_table(pa.table({"id": ["a"], "text": ["mail me at zq@example.org"]}), tmp_path / "c" / "x.parquet")
    with pytest.raises(ConfigError, match="not PII-redacted.*require_redacted"):
        train_tokenizer(tmp_path / "c", tmp_path / "t.json", TokenizerConfig(vocab_size=300, require_redacted=True))
