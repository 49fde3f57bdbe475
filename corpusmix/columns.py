"""The document columns every room shares (docs/formats.md, "Documents").

Curation reads and writes them, the tokenizer and pools read ``text`` and ``domain``, the report
counts documents per ``domain``. Steps ADD columns (``ADDED``) and never rename or remove one.
"""

from __future__ import annotations

ID = "id"  # unique string; the join key of drops, ground truth and dedup
TEXT = "text"
DOMAIN = "domain"  # the mixture unit; "unknown" when absent in the input
SOURCE = "source"

REQUIRED: tuple[str, ...] = (ID, TEXT, DOMAIN)
CORE: tuple[str, ...] = (ID, TEXT, DOMAIN, SOURCE)

# columns curation steps add, by the step that adds them
ADDED: dict[str, tuple[str, ...]] = {
    "langid": ("lang", "lang_score"),
    "quality": ("quality_ft", "ppl", "ppl_bucket"),
    "dedup": ("dup_cluster", "is_duplicate"),
    "pii": ("pii_spans", "pii_counts"),
    "toxicity": ("toxicity", "badwords"),
    "decontam": ("contam_benchmarks", "contam_ngrams"),
}

# string columns that hold names from fixed sets, not free text: PII redaction leaves them as they are
LABELS: tuple[str, ...] = (DOMAIN, "lang", "ppl_bucket", "dup_cluster", "contam_benchmarks", "pii_counts")

# drop decisions (drops.parquet): every dropped document has exactly one (step, reason)
DROP_COLUMNS: tuple[str, ...] = (ID, "step", "reason")
