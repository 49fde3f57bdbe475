"""The fast paths of the toxicity and PII steps leave a demo slice exactly as the reference paths do.

Fast: toxicity scored from the model's linear weights, detect-secrets' plugins behind their gates.
Reference: the sklearn pipeline, and every plugin run on every text. Same kept documents, same
columns (scores, spans, counts), same redacted text.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
from datatrove.data import Document

from curate.evaluation.planters import PIIPlanter
from curate.steps.pii import PIIConfig, PIIRedactor
from curate.steps.toxicity import ToxicityConfig, WindowFeatures, toxicity_steps
from curate.steps.toxicity_linear import LinearWindowModel

DEMO = Path(__file__).resolve().parents[2] / "data" / "demo" / "en"
pc = pytest.importorskip("profanity_check.profanity_check")


def _slice() -> list[tuple[str, str, str]]:
    rows = []
    for f in sorted(DEMO.glob("*.parquet")):
        t = pq.read_table(f, columns=["id", "text"]).slice(0, 12).to_pylist()
        rows += [(r["id"], r["text"][:3000], f.stem) for r in t]
    texts, _ = PIIPlanter(seed=3).plant_corpus([r[1] for r in rows], rate=0.5)  # some PII to find
    texts[-1] += "\nyou stupid fucking idiot"
    return [(i, t, d) for (i, _, d), t in zip(rows, texts, strict=True)]


def _run(rows: list[tuple[str, str, str]], pii: PIIRedactor, *, reference: bool) -> list[tuple[str, str, dict]]:
    docs = [Document(text=t, id=i, metadata={"domain": d, "source": f"demo/{d}"}) for i, t, d in rows]
    scorer, filt = toxicity_steps(ToxicityConfig())
    if reference:
        scorer._model = (WindowFeatures(pc.vectorizer), pc.model)
    scorer.filter_batch(docs)
    if not reference:
        assert isinstance(scorer._model, LinearWindowModel)
    kept = [d for d in docs if filt.filter(d) is True]
    assert all(pii.filter(d) is True for d in kept)
    return [(d.id, d.text, dict(d.metadata)) for d in kept]


def test_fast_paths_give_the_reference_outputs(monkeypatch: pytest.MonkeyPatch) -> None:
    import curate.steps.secrets as sec

    rows = _slice()
    pii = PIIRedactor(PIIConfig())
    fast = _run(rows, pii, reference=False)
    monkeypatch.setattr(sec, "GATES", {})
    pii._secrets = None  # rebuilt without gates (the presidio engines are reused)
    ref = _run(rows, pii, reference=True)
    assert fast == ref
    assert len(fast) < len(rows)  # the toxic document is dropped
    assert sum(len(m["pii_spans"]) for _, _, m in fast) >= 10  # planted PII is found and redacted
