"""Quality scoring: a DCLM-style fastText classifier and a CCNet-style KenLM perplexity model.

Training (``train_quality_models``; ``corpusmix curate train-quality``, its own DVC stage):

* fastText: positives are the documents of a reference set (params ``quality.reference_domains``,
  "high quality prose"), negatives a seeded random sample of the raw input, as in DCLM. Word
  bigrams (``wordNgrams=2``), a fixed seed and one thread. With one thread fastText draws random
  values for only the first tenth of its input matrix (``DenseMatrix::uniform``) and leaves the rest
  as allocated: upstream's ``std::vector`` zeroes it, the ``fasttext-numpy2-wheel`` build's aligned
  buffer does not, so the model would depend on what the heap held before. Training therefore runs
  with glibc's ``M_PERTURB`` set so new allocations are zeroed (``_zeroed_allocations``): upstream's
  model, the same bytes whatever ran earlier in the process. A held-out split gives accuracy and ROC
  AUC in ``quality_models.json``.
* KenLM: a 5-gram model trained with the real ``lmplz`` (modified Kneser-Ney; ``--prune``) on the
  normalised reference text, then ``build_binary``. The perplexities of the raw sample give a
  quantile table (``kenlm_quantiles.json``); the head/middle/tail cut points are read from it at
  the configured percentiles (CCNet: 33/66), so changing them needs no retraining.

Scoring (``FastTextQualityScorer`` -> ``quality_ft`` = P(reference-like); ``KenLMScorer`` -> ``ppl``,
``ppl_bucket``; a text without any token gets ``ppl`` null and bucket ``tail``) are annotators; they never drop. Thresholds live in params (``min_quality_ft``,
``max_ppl``) and become ``ThresholdFilter`` steps (``quality_filters``): scoring stays separate
from deciding. Models are loaded lazily, so steps pickle to worker processes.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import hashlib
import json
import random
import re
import subprocess
import tempfile
import time
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from datatrove.data import Document

from corpusmix.config import ConfigError
from corpusmix.logging import get_logger
from curate import native
from curate.steps.base import Annotator, ThresholdFilter
from curate.steps.registry import StepSpec, register

log = get_logger("curate.quality")

FT_MODEL = "quality_ft.bin"
FT_LR_RETRIES = 3  # fastText divergence (NaN): retry with the learning rate halved, at most this often
_M_PERTURB = -6  # glibc mallopt(3): fill new allocations with the complement of this byte
KENLM_MODEL = "kenlm.bin"
KENLM_QUANTILES = "kenlm_quantiles.json"
MANIFEST = "quality_models.json"
POS, NEG = "__label__hq", "__label__cc"


@dataclass
class QualityConfig:
    """Training and thresholds of the quality models (params.yaml section ``quality``)."""

    reference_domains: list[str] = field(default_factory=lambda: ["literature", "reference", "news"],
                                         metadata={"help": "domains of the positive (reference) set"})
    max_reference_docs: int = field(default=5000, metadata={"help": "cap on positives (seeded sample)"})
    negative_docs: int = field(default=5000, metadata={"help": "random raw documents as negatives"})
    exclude_reference: bool = field(default=True, metadata={
        "help": "never sample a reference document (same text) as a negative"})
    max_chars: int = field(default=20000, metadata={"help": "characters of a document used"})
    seed: int = 0
    heldout_frac: float = field(default=0.1, metadata={"help": "share held out to evaluate fastText"})
    ft_epoch: int = 5
    ft_lr: float = 0.1
    ft_dim: int = 64
    ft_min_count: int = 2
    ft_word_ngrams: int = 2
    # hashed n-gram buckets: fastText's default (2M x dim floats, a 0.5 GB model). Smaller tables
    # (e.g. 200k, ~50 MB) trained non-reproducibly here after other fastText models had been
    # loaded in the same process, so the default stays; lower it only where size matters more.
    ft_bucket: int = 2_000_000
    kenlm_order: int = 5
    kenlm_prune: list[int] = field(default_factory=lambda: [0, 0, 1],
                                   metadata={"help": "lmplz --prune thresholds per order (from bigrams)"})
    kenlm_memory: str = field(default="1G", metadata={"help": "lmplz -S memory"})
    percentiles: list[float] = field(default_factory=lambda: [33.0, 66.0],
                                     metadata={"help": "ppl percentiles splitting head/middle/tail"})
    min_quality_ft: float | None = field(default=None, metadata={"help": "drop below (null = keep all)"})
    max_ppl: float | None = field(default=None, metadata={"help": "drop above (null = keep all)"})

    def __post_init__(self) -> None:
        if len(self.percentiles) != 2 or not 0 <= self.percentiles[0] <= self.percentiles[1] <= 100:
            raise ConfigError(f"quality.percentiles must be two values 0 <= lo <= hi <= 100, got {self.percentiles}")
        if self.kenlm_order < 2:
            raise ConfigError(f"quality.kenlm_order must be >= 2, got {self.kenlm_order}")


# -- text normalisation ------------------------------------------------------------------------

_TOKEN = re.compile(r"\w+|[^\w\s]")
_DIGIT = re.compile(r"\d")


def ft_text(text: str, max_chars: int = 20000) -> str:
    """fastText input: lowercased tokens of the first ``max_chars`` characters on one line."""
    low = text[:max_chars].lower()
    if native.compiled is not None:
        return native.compiled.ft_tokens(low)  # the same string (tests/curate/test_native.py)
    return " ".join(_TOKEN.findall(low))


_NONSPACING: dict[int, None] | None = None  # every code point of category Mn -> deleted


def _strip_accents(s: str) -> str:
    """NFD, then every nonspacing mark (category Mn) removed; ASCII has none, the rest is one
    ``str.translate`` over a table of all Mn code points (built once) instead of a per-character
    ``unicodedata.category`` call."""
    global _NONSPACING
    s = unicodedata.normalize("NFD", s)
    if s.isascii():
        return s
    if _NONSPACING is None:
        _NONSPACING = {c: None for c in range(0x110000) if unicodedata.category(chr(c)) == "Mn"}
    return s.translate(_NONSPACING)


_NONSPACING_BITS: bytes | None = None  # bit c set: code point c is of category Mn


def _nonspacing_bits() -> bytes:
    global _NONSPACING_BITS
    if _NONSPACING_BITS is None:
        bits = np.zeros(0x110000, bool)
        bits[[c for c in range(0x110000) if unicodedata.category(chr(c)) == "Mn"]] = True
        _NONSPACING_BITS = np.packbits(bits, bitorder="little").tobytes()
    return _NONSPACING_BITS


_TOKEN_OR_BREAK = re.compile(r"\w+|[^\w\s]|\n")


def lm_lines(text: str, max_chars: int = 20000) -> list[str]:
    r"""CCNet-style KenLM input: per non-empty line, lowercased, accents stripped, digits -> 0.

    Each line is ``" ".join(_TOKEN.findall(line))`` over ``str.splitlines()``; computed with one
    ``findall`` over the lines joined by ``"\n"``: every line break of ``splitlines`` is whitespace,
    which no token holds, so the tokens between two ``"\n"`` are exactly one line's."""
    if native.compiled is not None:  # the same lines (tests/curate/test_native.py)
        return native.compiled.lm_tokens(unicodedata.normalize("NFD", text[:max_chars].lower()), _nonspacing_bits())
    # digits are never line breaks: one substitution over the text equals one per line
    lines = _DIGIT.sub("0", _strip_accents(text[:max_chars].lower())).splitlines()
    joined = " ".join(_TOKEN_OR_BREAK.findall("\n".join(lines)))
    return [ln for ln in (x.strip(" ") for x in joined.split("\n")) if ln]


def perplexity(model: Any, text: str, max_chars: int = 20000) -> float | None:
    """CCNet's doc perplexity: 10 ** (-sum of log10 probs / tokens), lines scored with <s>, </s>.

    ``None`` when the text has no token (nothing to measure).
    """
    lines = lm_lines(text, max_chars)
    if not lines:
        return None
    logp = sum(model.score(line, bos=True, eos=True) for line in lines)
    # a line is its tokens (no whitespace in any) joined by single spaces: len(line.split()) + 1
    n = sum(line.count(" ") + 2 for line in lines)
    return round(10.0 ** (-logp / n), 1)


# -- scorers -----------------------------------------------------------------------------------

class _TextAnnotator(Annotator):
    """A text annotator whose non-string text is a counted drop ``no_text``."""

    def filter(self, doc: Document) -> bool | tuple[bool, str]:
        if not isinstance(doc.text, str):
            return False, "no_text"
        return super().filter(doc)


class FastTextQualityScorer(_TextAnnotator):
    """Adds ``quality_ft``: the classifier's probability that the text is reference-like."""

    step_name = "quality_ft"
    name = "⭐ fastText quality"
    columns = ("quality_ft",)

    def __init__(self, *, model_path: str | Path, max_chars: int = 20000) -> None:
        super().__init__()
        self.model_path = Path(model_path)
        if not self.model_path.is_file():
            raise ConfigError(f"fastText quality model {self.model_path} not found; train it with "
                              "`corpusmix curate train-quality --reference ... --raw ... --output DIR`")
        self.max_chars = max_chars
        self._model: Any = None
        self._compiled: Any = None
        self._compiled_tried = False

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_model": None, "_compiled": None, "_compiled_tried": False}

    def predict(self, texts: Sequence[str]) -> np.ndarray:
        """P(reference-like) for each text (the compiled kernel's, ``curate.ftpredict``, where it takes
        the model: fastText's bits without loading fastText's copy of the matrix)."""
        if not self._compiled_tried:
            from curate import ftpredict

            fast = ftpredict.load(self.model_path)
            self._compiled = fast if fast is not None and fast.softmax and len(fast.labels) <= 2 else None
            self._compiled_tried = True
        if self._compiled is not None:
            pos = POS.removeprefix("__label__")
            return np.array([self._compiled.probabilities(ft_text(t, self.max_chars)).get(pos, 0.0) for t in texts],
                            dtype=np.float64).clip(0.0, 1.0)
        if self._model is None:
            import fasttext

            self._model = fasttext.load_model(str(self.model_path))
        labels, probs = self._model.predict([ft_text(t, self.max_chars) for t in texts], k=2)
        return np.array([dict(zip(lab, pr, strict=True)).get(POS, 0.0) for lab, pr in zip(labels, probs, strict=True)],
                        dtype=np.float64).clip(0.0, 1.0)

    def annotate(self, doc: Document) -> None:
        doc.metadata["quality_ft"] = float(self.predict([doc.text])[0])


class KenLMScorer(_TextAnnotator):
    """Adds ``ppl`` (KenLM perplexity, CCNet-style) and ``ppl_bucket`` (head/middle/tail)."""

    step_name = "kenlm"
    name = "📉 KenLM perplexity"
    columns = ("ppl", "ppl_bucket")

    def __init__(self, *, model_path: str | Path, percentiles: Sequence[float] = (33.0, 66.0),
                 quantiles_path: str | Path | None = None, max_chars: int = 20000) -> None:
        super().__init__()
        self.model_path = Path(model_path)
        if not self.model_path.is_file():
            raise ConfigError(f"KenLM model {self.model_path} not found; train it with "
                              "`corpusmix curate train-quality --reference ... --raw ... --output DIR`")
        qpath = Path(quantiles_path) if quantiles_path else self.model_path.with_name(KENLM_QUANTILES)
        if not qpath.is_file():
            raise ConfigError(f"perplexity quantiles {qpath} not found; they are written by train-quality "
                              "next to the model")
        table = json.loads(qpath.read_text())["quantiles"]
        self.cuts = (float(np.interp(percentiles[0], range(101), table)),
                     float(np.interp(percentiles[1], range(101), table)))
        self.max_chars = max_chars
        self._model: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_model": None}

    def perplexity(self, text: str) -> float | None:
        if self._model is None:
            import kenlm

            self._model = kenlm.Model(str(self.model_path))
        return perplexity(self._model, text, self.max_chars)

    def bucket(self, ppl: float | None) -> str:
        if ppl is None:  # no token at all: the bottom bucket
            return "tail"
        return "head" if ppl <= self.cuts[0] else "tail" if ppl > self.cuts[1] else "middle"

    def annotate(self, doc: Document) -> None:
        ppl = self.perplexity(doc.text)
        doc.metadata["ppl"] = ppl
        doc.metadata["ppl_bucket"] = self.bucket(ppl)


def quality_scorers(models_dir: str | Path, cfg: QualityConfig) -> list[Annotator]:
    """Both scorers for the models that ``train_quality_models`` wrote into ``models_dir``."""
    d = Path(models_dir)
    return [FastTextQualityScorer(model_path=d / FT_MODEL, max_chars=cfg.max_chars),
            KenLMScorer(model_path=d / KENLM_MODEL, percentiles=cfg.percentiles, max_chars=cfg.max_chars)]


def quality_filters(cfg: QualityConfig) -> list[ThresholdFilter]:
    """Keep/drop decisions from params: ``quality_ft >= min_quality_ft``, ``ppl <= max_ppl``."""
    out = []
    if cfg.min_quality_ft is not None:
        out.append(ThresholdFilter(column="quality_ft", min_value=cfg.min_quality_ft, step_name="quality_ft_min"))
    if cfg.max_ppl is not None:
        out.append(ThresholdFilter(column="ppl", max_value=cfg.max_ppl, step_name="ppl_max"))
    return out


# -- training ----------------------------------------------------------------------------------

def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _roc_auc(y: np.ndarray, s: np.ndarray) -> float:
    from scipy.stats import rankdata

    pos, neg = int(y.sum()), int(len(y) - y.sum())
    if not pos or not neg:
        return float("nan")
    r = rankdata(s)
    return float((r[y == 1].sum() - pos * (pos + 1) / 2) / (pos * neg))


@contextlib.contextmanager
def _zeroed_allocations() -> Iterator[bool]:
    """While inside, glibc's malloc hands out zeroed memory (``M_PERTURB`` = 0xff); yields whether it could.

    fastText's trainer reads its input matrix before writing most of it (see the module docstring);
    zeroed allocations make that read upstream's zeros. Process-wide while it lasts: other threads'
    allocations are zeroed too (harmless), and freed memory is filled with 0xff bytes.
    """
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.gnu_get_libc_version  # noqa: B018 -- glibc only: M_PERTURB is glibc's
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        log.warning("not glibc: fastText's training may read uninitialised memory; the model may vary by run")
        yield False
        return
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    ok = mallopt(_M_PERTURB, 0xFF) == 1
    try:
        yield ok
    finally:
        if ok:
            mallopt(_M_PERTURB, 0)


def train_fasttext(pos: Sequence[str], neg: Sequence[str], out: Path, cfg: QualityConfig) -> dict[str, Any]:
    """Train the classifier on ``pos``/``neg``; evaluate on a held-out split; save to ``out``."""
    import fasttext

    rng = random.Random(cfg.seed)
    rows = [(1, t) for t in pos] + [(0, t) for t in neg]
    rng.shuffle(rows)
    n_held = int(len(rows) * cfg.heldout_frac)
    held, train = rows[:n_held], rows[n_held:]
    with tempfile.TemporaryDirectory(prefix="qft-") as tmp:
        path = Path(tmp) / "train.txt"
        with path.open("w", encoding="utf-8") as f:
            for y, t in train:
                f.write(f"{POS if y else NEG} {ft_text(t, cfg.max_chars)}\n")
        # fastText stops with "Encountered NaN." when SGD diverges: the rate is halved and tried again
        lrs = [cfg.ft_lr * 0.5**i for i in range(FT_LR_RETRIES + 1)]
        diverged: list[float] = []
        for lr in lrs:
            try:
                with _zeroed_allocations():
                    model = fasttext.train_supervised(
                        input=str(path), wordNgrams=cfg.ft_word_ngrams, epoch=cfg.ft_epoch, lr=lr, dim=cfg.ft_dim,
                        minCount=cfg.ft_min_count, bucket=cfg.ft_bucket, thread=1, seed=cfg.seed, verbose=0)
                break
            except RuntimeError as e:
                if "nan" not in str(e).lower():
                    raise
                diverged.append(lr)
        else:
            from corpusmix.config import ConfigError

            raise ConfigError(f"fastText quality classifier diverged (NaN) at learning rates {sorted(set(diverged))}; "
                              f"lower quality.ft_lr (now {cfg.ft_lr})")
    if diverged:
        log.warning("fastText diverged (NaN) at lr %s; trained at lr %s", diverged, lr)
    model.save_model(str(out))
    report: dict[str, Any] = {"train_docs": len(train), "heldout_docs": len(held)}
    if diverged:
        report["diverged_lr"], report["lr"] = diverged, lr
    if held:
        scorer = FastTextQualityScorer(model_path=out, max_chars=cfg.max_chars)
        y = np.array([r[0] for r in held])
        p = scorer.predict([r[1] for r in held])
        report["heldout_accuracy"] = float(((p >= 0.5) == (y == 1)).mean())
        report["heldout_auc"] = _roc_auc(y, p)
    return report


def train_kenlm(texts: Sequence[str], out: Path, cfg: QualityConfig) -> dict[str, Any]:
    """Train a ``kenlm_order``-gram model with lmplz, binarise it with build_binary."""
    from curate.lmplz import find_kenlm_tools

    tools = find_kenlm_tools()
    with tempfile.TemporaryDirectory(prefix="kenlm-") as tmp:
        tmpd = Path(tmp)
        corpus, arpa = tmpd / "corpus.txt", tmpd / "model.arpa"
        n_lines = n_tokens = 0
        with corpus.open("w", encoding="utf-8") as f:
            for t in texts:
                for line in lm_lines(t, cfg.max_chars):
                    f.write(line + "\n")
                    n_lines += 1
                    n_tokens += line.count(" ") + 1
        if not n_lines:
            raise ConfigError("the KenLM training text is empty: the reference set has no text; "
                              "check quality.reference_domains against the domains of --reference")
        cmd = [str(tools["lmplz"]), "-o", str(cfg.kenlm_order), "-S", cfg.kenlm_memory, "-T", str(tmpd),
               "--discount_fallback"]
        if any(cfg.kenlm_prune):
            cmd += ["--prune", *[str(p) for p in cfg.kenlm_prune]]
        with corpus.open("rb") as fin, arpa.open("wb") as fout:
            proc = subprocess.run(cmd, stdin=fin, stdout=fout, stderr=subprocess.PIPE)
        if proc.returncode != 0:
            raise RuntimeError(f"lmplz failed (exit {proc.returncode}): {proc.stderr.decode()[-2000:]}")
        proc = subprocess.run([str(tools["build_binary"]), str(arpa), str(out)], capture_output=True)
        if proc.returncode != 0:
            raise RuntimeError(f"build_binary failed (exit {proc.returncode}): {proc.stderr.decode()[-2000:]}")
    return {"lines": n_lines, "tokens": n_tokens, "order": cfg.kenlm_order, "prune": cfg.kenlm_prune}


def train_quality_models(*, reference_texts: Sequence[str], raw_texts: Sequence[str], out_dir: str | Path,
                         cfg: QualityConfig | None = None) -> dict[str, Any]:
    """Train both models into ``out_dir``; return (and write) the manifest ``quality_models.json``."""
    cfg = cfg or QualityConfig()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if not reference_texts:
        raise ConfigError("no reference documents: check quality.reference_domains and --reference")
    if not raw_texts:
        raise ConfigError("no raw documents for negatives: check --raw")
    rng = random.Random(cfg.seed)
    pos = list(reference_texts)
    if len(pos) > cfg.max_reference_docs:
        pos = rng.sample(pos, cfg.max_reference_docs)
    pool = list(raw_texts)
    if cfg.exclude_reference:
        ref_set = set(reference_texts)
        pool = [t for t in pool if t not in ref_set]
    if not pool:
        raise ConfigError("every raw document is also a reference document, so there are no negatives; "
                          "pass other --raw data or set quality.exclude_reference to false")
    neg = rng.sample(pool, min(cfg.negative_docs, len(pool)))
    t0 = time.time()
    ft_report = train_fasttext(pos, neg, out / FT_MODEL, cfg)
    t1 = time.time()
    lm_report = train_kenlm(pos, out / KENLM_MODEL, cfg)
    # quantiles of the raw sample's perplexities (CCNet computes its cut points on the data itself)
    import kenlm

    lm = kenlm.Model(str(out / KENLM_MODEL))
    ppl = np.array([p for p in (perplexity(lm, t, cfg.max_chars) for t in neg) if p is not None])
    if not len(ppl):
        raise ConfigError("no raw document has any token to score with KenLM; check --raw")
    quantiles = np.percentile(ppl, np.arange(101)).tolist()
    (out / KENLM_QUANTILES).write_text(json.dumps({"quantiles": quantiles, "docs": len(neg)}, indent=1))
    manifest = {
        "config": asdict(cfg), "positives": len(pos), "negatives": len(neg),
        "fasttext": {**ft_report, "file": FT_MODEL, "sha256": _sha256(out / FT_MODEL)},
        "kenlm": {**lm_report, "file": KENLM_MODEL, "sha256": _sha256(out / KENLM_MODEL),
                  "raw_ppl_median": quantiles[50], "cuts": [float(np.interp(p, range(101), quantiles))
                                                           for p in cfg.percentiles]},
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1))
    # timings go to the log only: the manifest is part of the stage output and must hash the same every run
    log.info("quality models trained", extra={"data": {"positives": len(pos), "negatives": len(neg),
                                                       "fasttext_seconds": round(t1 - t0, 2),
                                                       "kenlm_seconds": round(time.time() - t1, 2)}})
    return manifest


def chain_steps(cfg: QualityConfig, chain: Any) -> list[Annotator | ThresholdFilter]:
    """The quality step of the chain: scorers then filters, from ``curate.engine.quality_models_dir``."""
    models = chain.engine.quality_models_dir
    if not Path(models).is_dir():
        raise ConfigError(f"curate.engine.quality_models_dir {models!r} does not exist; "
                          "train the models first or set it to ''")
    return quality_scorers(models, cfg) + quality_filters(cfg)


# configured only when the engine names a models folder (curate.engine.quality_models_dir)
register(StepSpec(name="quality", config=QualityConfig, section="quality", stage="a", order=60, build=chain_steps,
                  enabled=lambda engine: bool(engine.quality_models_dir), module=__name__))
