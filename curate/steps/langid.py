"""Language identification with fastText's ``lid.176.ftz`` shipped in the package (no download).

``LanguageID`` adds ``lang`` (fastText code, e.g. ``en``) and ``lang_score`` (probability of the
top label); it never drops. ``LanguageFilter`` decides on those columns: a document is kept when
``lang`` is in ``keep_languages`` (empty list: any language) and ``lang_score >= threshold``;
drops carry reason ``lang:<code>`` or ``lang_score_below_threshold``.

Per domain (``per_domain: true``, the default): the calibration (``curate.calibrate``) gives each
domain its language, the most frequent top label of its sampled documents (domains with too few
documents get the corpus' language). Inside a domain whose language is kept, a document is dropped
only when the model is confident it is in another language (``lang_score >= foreign_min_score``):
headwords, pronunciations, code and one-line entries score low for every language and are kept,
while a German article planted in an English domain scores ~0.9 and is found. In a domain whose
language is not kept, and with ``per_domain: false``, the per-document rule applies.
``skip_domains`` and ``domain_thresholds`` remain as optional overrides. Config: ``params.yaml``
``curate.langid``. Alone: ``corpusmix curate langid --input F --output F`` (annotates only).

fastText's ``predict`` refuses newlines, so they are replaced by spaces (as datatrove does). With
the compiled module built, the prediction is ``curate.ftpredict``'s: the same label and probability,
bit for bit, computed without fastText's per-character stream reading.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from datatrove.data import Document

from corpusmix.config import ConfigError
from curate.steps.base import Annotator, CurationStep
from curate.steps.registry import StepSpec, register
from curate.textstats import Memo, text_key

if TYPE_CHECKING:
    from curate.ftpredict import CompiledFastText

PACKAGED_MODEL = Path(__file__).resolve().parent.parent / "models" / "lid.176.ftz"


@dataclass
class LangIdConfig:
    model_path: str = field(default="", metadata={"help": "fastText LID model (default: the packaged lid.176.ftz)"})
    keep_languages: list[str] = field(default_factory=lambda: ["en"], metadata={
        "help": "languages to keep (comma list; empty keeps all)"})
    threshold: float = field(default=0.65, metadata={"help": "minimum lang_score to keep (datatrove's default)"})
    max_chars: int = field(default=20000, metadata={"help": "characters of the text given to the model"})
    skip_domains: list[str] = field(default_factory=list, metadata={
        "help": "domains the language filter keeps whatever their language (e.g. code)"})
    domain_thresholds: dict = field(default_factory=dict, metadata={
        "help": "domain -> threshold overriding `threshold` (short entries score lower)"})
    per_domain: bool = field(default=True, metadata={
        "help": "decide with the domain's calibrated language (a doc is foreign only when confidently so)"})
    foreign_min_score: float = field(default=0.6, metadata={
        "help": "per_domain: lang_score from which a non-kept label in a kept-language domain is foreign"})
    min_domain_docs: int = field(default=20, metadata={
        "help": "per_domain: fewer sampled docs: the domain gets the corpus' language"})

    def resolved_model(self) -> Path:
        p = Path(self.model_path) if self.model_path else PACKAGED_MODEL
        if not p.is_file():
            raise ConfigError(f"language-ID model {str(p)!r} not found; set curate.langid.model_path "
                              "to a fastText lid.176 .ftz/.bin file")
        return p


class LanguageID(Annotator):
    step_name = "langid"
    name = "language id (fastText lid.176)"
    columns = ("lang", "lang_score")

    def __init__(self, cfg: LangIdConfig | None = None) -> None:
        super().__init__()
        self.cfg = cfg or LangIdConfig()
        self.model_file = str(self.cfg.resolved_model())
        self._model = None
        self._compiled: CompiledFastText | None = None
        self._compiled_tried = False  # ftpredict.load runs once, in the process that predicts
        self._memo = Memo(50_000)

    @property
    def model(self):
        if self._model is None:  # loaded lazily so that the step pickles to datatrove workers
            import fasttext

            self._model = fasttext.load_model(self.model_file)
        return self._model

    @property
    def compiled(self) -> CompiledFastText | None:
        """The model for the compiled kernel (``curate.ftpredict``: the bits of fastText's own
        predict, faster), or None where it cannot take this model or is not built."""
        if not self._compiled_tried:
            from curate import ftpredict

            self._compiled, self._compiled_tried = ftpredict.load(self.model_file), True
        return self._compiled

    def predict(self, text: str) -> tuple[str, float]:
        text = text[: self.cfg.max_chars]
        fast = self.compiled
        if fast is not None:
            try:
                got = fast.predict(text)
            except UnicodeEncodeError:  # lone surrogates: fastText's own call decides (it refuses them)
                pass
            else:
                return ("unknown", 0.0) if got is None else (got[0], min(got[1], 1.0))
        labels, probs = self.model.predict(text.replace("\n", " "), k=1)
        if not labels:
            return "unknown", 0.0
        return labels[0].removeprefix("__label__"), min(float(probs[0]), 1.0)

    def annotate(self, doc: Document) -> None:
        # memoised by the text's digest: the calibration labels a sample of the input that the
        # run labels again (and exact duplicates repeat); fastText's answer is deterministic
        key = text_key(doc.text)
        hit = self._memo.get(key)
        if hit is None:
            hit = self.predict(doc.text)
            self._memo.put(key, hit)
        doc.metadata["lang"], doc.metadata["lang_score"] = hit

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_model"] = None
        state["_compiled"], state["_compiled_tried"] = None, False
        return state


def majority_language(docs: list[Document]) -> tuple[str | None, float]:
    """(most frequent ``lang`` label, its share); ties broken by the label for determinism."""
    counts = Counter(d.metadata.get("lang") for d in docs if d.metadata.get("lang"))
    if not counts:
        return None, 0.0
    lang, n = min(counts.items(), key=lambda x: (-x[1], x[0]))
    return lang, n / sum(counts.values())


class LanguageFilter(CurationStep):
    step_name = "langid_filter"
    name = "language filter"
    calibration_key = "langid"

    def __init__(self, cfg: LangIdConfig | None = None) -> None:
        super().__init__()
        self.cfg = cfg or LangIdConfig()
        self.keep = frozenset(self.cfg.keep_languages or ())
        self.skip = frozenset(self.cfg.skip_domains or ())
        self.thresholds = {str(k): float(v) for k, v in (self.cfg.domain_thresholds or {}).items()}
        self.domain_lang: dict[str, str | None] = {}
        self.corpus_lang: str | None = None

    @property
    def needs_calibration(self) -> bool:
        return self.cfg.per_domain

    def fit(self, docs_by_domain: dict[str, list[Document]]) -> dict:
        """Each domain's language from its sampled, language-annotated documents."""
        everything = [d for docs in docs_by_domain.values() for d in docs]
        corpus, share = majority_language(everything)
        out: dict = {"corpus_language": corpus, "corpus_share": round(share, 4), "domains": {}}
        for dom in sorted(docs_by_domain):
            docs = docs_by_domain[dom]
            lang, share = majority_language(docs)
            small = len(docs) < self.cfg.min_domain_docs
            out["domains"][dom] = {"language": corpus if small or lang is None else lang,
                                   "share": round(share, 4), "docs": len(docs),
                                   "fallback": "corpus language (too few documents)" if small else None}
        return out

    def set_calibration(self, section: dict) -> None:
        self.corpus_lang = section.get("corpus_language")
        self.domain_lang = {d: v.get("language") for d, v in (section.get("domains") or {}).items()}

    def filter(self, doc: Document) -> bool | tuple[bool, str]:
        domain = doc.metadata.get("domain")
        if domain in self.skip:
            return True
        lang = doc.metadata.get("lang")
        if self.keep and self.cfg.per_domain and domain not in self.thresholds:
            dlang = self.domain_lang.get(domain or "unknown", self.corpus_lang)
            if dlang in self.keep:
                if lang in self.keep:
                    return True  # any score: short entries of a kept-language domain score low
                if (doc.metadata.get("lang_score") or 0.0) >= self.cfg.foreign_min_score:
                    return False, f"lang:{lang}"
                return True  # no confident other language: left to the garbage detectors
        if self.keep and lang not in self.keep:
            return False, f"lang:{lang}"
        if (doc.metadata.get("lang_score") or 0.0) < self.thresholds.get(domain, self.cfg.threshold):
            return False, "lang_score_below_threshold"
        return True


register(StepSpec(name="langid", config=LangIdConfig, section="curate.langid", stage="a", order=30,
                  build=lambda cfg, chain: [LanguageID(cfg), LanguageFilter(cfg)], module=__name__))
