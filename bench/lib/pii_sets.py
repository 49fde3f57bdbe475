"""Real text for the PII benches: the demo corpus and the shared corpora by set (prose, code), and
recall split by whether a value was planted with its context words."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from corpusmix.paths import SHARED_CORPORA
from curate.evaluation.pii_metrics import score_pii

ROOT = Path(__file__).resolve().parents[2]

SETS = {"prose": ("literature", "news", "legal", "reference", "quotes"), "code": ("code", "techdocs")}


def load(domains: tuple[str, ...], mb: float, shared_mb: float) -> list[str]:
    out: list[str] = []
    for base, budget in ((ROOT / "data" / "demo" / "en", mb), (SHARED_CORPORA, shared_mb)):
        per = budget * 1e6 / len(domains)
        for d in domains:
            path = base / f"{d}.parquet"
            if budget <= 0 or not path.exists():
                continue
            got = 0
            for t in pq.read_table(path, columns=["text"]).column("text").to_pylist():
                if got >= per:
                    break
                if isinstance(t, str) and t.strip():
                    out.append(t[:20000])  # whole documents, long ones cut: presidio's cost is per char
                    got += len(out[-1].encode())
    return out


def split_scores(pred: list, true: list, flag: bool) -> dict:
    keep = [[s for s in doc if s.get("context") is flag] for doc in true]
    return {t: round(score_pii(pred, keep, types=[t])[t]["recall"], 4)
            for t in ("PHONE_NUMBER", "CREDIT_CARD") if any(s["type"] == t for d in keep for s in d)}
