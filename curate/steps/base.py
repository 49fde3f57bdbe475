"""Base classes of curation steps.

Every curation step is a datatrove ``BaseFilter`` so that all engines treat steps alike: the
engine hands each step an exclusion writer that records ``(id, step, reason)`` for every drop, and
the base class counts totals, kept and dropped-by-reason.

* A **filter** implements ``filter(doc) -> bool | tuple[bool, str]`` (datatrove's contract).
* An **annotator** (normaliser, language ID, scorer, PII redactor) implements ``annotate(doc)``,
  which adds metadata (new columns) or rewrites ``doc.text``. It never drops by itself; a
  per-document exception (e.g. a decoding error in a library) becomes a counted drop with reason
  ``error:<ExceptionType>`` instead of a crash mid-run, and is logged with the document id and
  the traceback (:func:`error_drop`), so a broken model or a bug never passes as a silent drop.
* ``ThresholdFilter`` turns a score column into a decision: scoring is separate from deciding.

Steps never know where they run: datatrove's executors and the Spark engine call the same
``filter`` method on the same objects.
"""

from __future__ import annotations

from abc import abstractmethod

from datatrove.data import Document
from datatrove.pipeline.filters.base_filter import BaseFilter

from corpusmix.logging import get_logger

log = get_logger("curate.steps")


def error_drop(step: str, doc: Document, exc: BaseException) -> tuple[bool, str]:
    """The drop of a document a step failed on: logged (step, id, exception, traceback), reason
    ``error:<ExceptionType>`` (counted by the engines like any reason)."""
    reason = f"error:{type(exc).__name__}"
    log.warning("step failed on a document; dropped", exc_info=exc, extra={"data": {
        "step": step, "id": doc.id, "domain": doc.metadata.get("domain"), "reason": reason,
        "error": f"{type(exc).__name__}: {exc}"}})
    return False, reason


class CurationStep(BaseFilter):
    """Common base: a stable ``step_name`` used in drops and stats."""

    step_name: str = "step"
    name = "curation step"

    def __init__(self) -> None:
        super().__init__(exclusion_writer=None)


class Annotator(CurationStep):
    """A step that adds columns or rewrites text; never drops except on per-document errors."""

    #: metadata keys (output columns) this annotator adds
    columns: tuple[str, ...] = ()

    @abstractmethod
    def annotate(self, doc: Document) -> None:
        """Add metadata to ``doc`` (or rewrite ``doc.text``) in place."""

    def filter(self, doc: Document) -> bool | tuple[bool, str]:
        try:
            self.annotate(doc)
        except Exception as exc:  # one bad document must not kill the task; it is logged and counted
            return error_drop(self.step_name, doc, exc)
        return True


class ThresholdFilter(CurationStep):
    """Keep documents whose metadata ``column`` lies in ``[min_value, max_value]``.

    Missing values are kept (``keep_missing=True``) or dropped with reason ``<column>_missing``.
    """

    def __init__(self, *, column: str, min_value: float | None = None, max_value: float | None = None,
                 keep_missing: bool = True, step_name: str | None = None) -> None:
        super().__init__()
        self.column = column
        self.min_value = min_value
        self.max_value = max_value
        self.keep_missing = keep_missing
        self.step_name = step_name or f"threshold_{column}"
        self.name = self.step_name

    def filter(self, doc: Document) -> bool | tuple[bool, str]:
        value = doc.metadata.get(self.column)
        if value is None:
            return True if self.keep_missing else (False, f"{self.column}_missing")
        if self.min_value is not None and value < self.min_value:
            return False, f"{self.column}_below_{self.min_value:g}"
        if self.max_value is not None and value > self.max_value:
            return False, f"{self.column}_above_{self.max_value:g}"
        return True
