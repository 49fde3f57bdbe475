"""``DedupConfig``: the one typed config of deduplication (params.yaml section ``dedup``).

Read with ``corpusmix.config.config_from(DedupConfig, params=load_params(path, "dedup"), args=...)``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from functools import lru_cache

from corpusmix.config import ConfigError

ENGINES = ("local", "spark")


@lru_cache(maxsize=64)
def optimal_bands_rows(threshold: float, num_perm: int, fp_weight: float, fn_weight: float) -> tuple[int, int]:
    """datasketch's ``_optimal_param`` (numerical integration; cached, it takes ~0.2 s)."""
    from datasketch.lsh import _optimal_param

    return tuple(_optimal_param(threshold, num_perm, fp_weight, fn_weight))


@dataclass
class DedupConfig:
    threshold: float = field(default=0.8, metadata={"help": "Jaccard threshold of near-duplicates"})
    ngram: int = field(default=5, metadata={"help": "words per shingle"})
    num_perm: int = field(default=128, metadata={"help": "MinHash permutations"})
    seed: int = field(default=1, metadata={"help": "seed of the permutation family"})
    verify: bool = field(default=True, metadata={"help": "verify candidate pairs by exact shingle Jaccard"})
    fp_weight: float = field(default=0.2, metadata={"help": "weight of false positives in the band/row choice"})
    fn_weight: float = field(default=0.8, metadata={"help": "weight of false negatives in the band/row choice"})
    exact: bool = field(default=True, metadata={"help": "exact dedup on case/whitespace-folded text"})
    near: bool = field(default=True, metadata={"help": "near dedup with MinHash-LSH"})
    engine: str = field(default="local", metadata={"help": "local or spark"})
    workers: int = field(default=1, metadata={"help": "processes of the local engine"})
    batch_docs: int = field(default=2000, metadata={"help": "documents per signature batch"})
    batch_mb: float = field(default=4.0, metadata={"help": "about this many MB of text per signature batch"})
    max_bucket_pairs: int = field(default=64, metadata={
        "help": "LSH buckets up to this size emit all pairs; larger ones a star around the smallest doc"})
    quality_column: str = field(default="quality_ft", metadata={
        "help": "representative = highest value of this column when present (ties and absent: smallest id)"})
    spark_driver_edges: int = field(default=200_000, metadata={
        "help": "Spark: finish connected components on the driver once at most this many edges remain (0: never)"})
    spill_dir: str = field(default="", metadata={"help": "folder for spilled band keys (default: a temp dir)"})

    def __post_init__(self) -> None:
        if not 0.0 < self.threshold < 1.0:
            raise ConfigError(f"dedup.threshold must be in (0, 1), got {self.threshold}")
        if self.ngram < 1:
            raise ConfigError(f"dedup.ngram must be >= 1, got {self.ngram}")
        if self.num_perm < 2:
            raise ConfigError(f"dedup.num_perm must be >= 2, got {self.num_perm}")
        if self.engine not in ENGINES:
            raise ConfigError(f"dedup.engine must be one of {ENGINES}, got {self.engine!r}")
        if self.workers < 1 or self.batch_docs < 1:
            raise ConfigError("dedup.workers and dedup.batch_docs must be >= 1")
        if self.fp_weight < 0 or self.fn_weight < 0 or self.fp_weight + self.fn_weight <= 0:
            raise ConfigError("dedup.fp_weight and dedup.fn_weight must be >= 0 and not both 0")

    def bands_rows(self) -> tuple[int, int]:
        """(bands, rows) minimising weighted false positives + negatives (datasketch's method)."""
        w = self.fp_weight + self.fn_weight
        return optimal_bands_rows(self.threshold, self.num_perm, self.fp_weight / w, self.fn_weight / w)

    def hashing_key(self) -> str:
        """Hash of everything that changes signatures or band keys (stored in incremental indexes)."""
        b, r = self.bands_rows()
        blob = json.dumps({"ngram": self.ngram, "num_perm": self.num_perm, "seed": self.seed,
                           "bands": b, "rows": r, "v": 1}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]
