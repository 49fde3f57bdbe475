"""Language identification with fastText's ``lid.176.ftz`` shipped in the package (no download).

``LanguageID`` adds ``lang`` (fastText code, e.g. ``en``) and ``lang_score`` (probability of the
top label); it never drops. ``LanguageFilter`` decides on those columns: a document is kept when
``lang`` is in ``keep_languages`` (empty list: any language) and ``lang_score >= threshold``;
drops carry reason ``lang:<code>`` or ``lang_score_below_threshold``; ``skip_domains`` (e.g. code)
are not language-filtered and ``domain_thresholds`` lowers the bar for short-entry domains. Config: ``params.yaml``
``curate.langid``. Alone: ``corpusmix curate langid --input F --output F`` (annotates only).

fastText's ``predict`` refuses newlines, so they are replaced by spaces (as datatrove does).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from datatrove.data import Document

from corpusmix.config import ConfigError
from curate.steps.base import Annotator, CurationStep

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

    @property
    def model(self):
        if self._model is None:  # loaded lazily so that the step pickles to datatrove workers
            import fasttext

            self._model = fasttext.load_model(self.model_file)
        return self._model

    def predict(self, text: str) -> tuple[str, float]:
        labels, probs = self.model.predict(text[: self.cfg.max_chars].replace("\n", " "), k=1)
        if not labels:
            return "unknown", 0.0
        return labels[0].removeprefix("__label__"), min(float(probs[0]), 1.0)

    def annotate(self, doc: Document) -> None:
        doc.metadata["lang"], doc.metadata["lang_score"] = self.predict(doc.text)

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_model"] = None
        return state


class LanguageFilter(CurationStep):
    step_name = "langid_filter"
    name = "language filter"

    def __init__(self, cfg: LangIdConfig | None = None) -> None:
        super().__init__()
        self.cfg = cfg or LangIdConfig()
        self.keep = frozenset(self.cfg.keep_languages or ())
        self.skip = frozenset(self.cfg.skip_domains or ())
        self.thresholds = {str(k): float(v) for k, v in (self.cfg.domain_thresholds or {}).items()}

    def filter(self, doc: Document) -> bool | tuple[bool, str]:
        domain = doc.metadata.get("domain")
        if domain in self.skip:
            return True
        lang = doc.metadata.get("lang")
        if self.keep and lang not in self.keep:
            return False, f"lang:{lang}"
        if (doc.metadata.get("lang_score") or 0.0) < self.thresholds.get(domain, self.cfg.threshold):
            return False, "lang_score_below_threshold"
        return True
