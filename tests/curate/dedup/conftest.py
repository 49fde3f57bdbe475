"""Shared fixtures of the dedup tests: small real documents and a synthetic controlled-Jaccard set."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from corpusmix.paths import DEMO

# the shipped demo text: the dedup tests never skip
CORPORA = DEMO / "en"


def unique_words(prefix: str, n: int) -> list[str]:
    return [f"{prefix}{k}" for k in range(n)]


def pair_with_jaccard(tag: str, length: int, shared: int, ngram: int = 5) -> tuple[str, str, float]:
    """Two texts of ``length`` distinct words sharing their first ``shared`` words.

    Every shingle is distinct, so the shingle Jaccard is exactly
    ``(shared - ngram + 1) / (2 * (length - ngram + 1) - (shared - ngram + 1))``.
    """
    head = unique_words(f"{tag}h", shared)
    a = head + unique_words(f"{tag}a", length - shared)
    b = head + unique_words(f"{tag}b", length - shared)
    s, n = shared - ngram + 1, length - ngram + 1
    return " ".join(a), " ".join(b), s / (2 * n - s)


@pytest.fixture(scope="session")
def real_docs() -> pa.Table:
    """~250 real documents (demo legal + quotes) with planted exact and near duplicates."""
    path = CORPORA / "quotes.parquet"
    t = pq.read_table(CORPORA / "legal.parquet", columns=["id", "text"]).slice(0, 150)
    q = pq.read_table(path, columns=["id", "text"]).slice(0, 150)
    rows = t.to_pylist() + q.to_pylist()
    extra = []
    for k, r in enumerate(rows[:40]):
        words = r["text"].split()
        if k % 2 == 0:
            extra.append({"id": f"copy/{k:03d}", "text": "  ".join(words).upper()})
        elif len(words) > 60:
            words[len(words) // 2] = "EDITED"
            extra.append({"id": f"near/{k:03d}", "text": " ".join(words)})
    return pa.Table.from_pylist(rows + extra)
