"""Running curation steps over documents: the one runner every engine and command uses.

:func:`run_steps` runs a list of steps (datatrove ``BaseFilter`` objects, ``curate/steps/base.py``)
over a stream or a batch of documents and yields one :class:`Outcome` per document: kept, or
dropped by exactly one ``(step, reason)``; per-step :class:`~corpusmix.stats.StepStats` are counted
on the way. Callers:

* the local engine (``curate.engine_local.ChainTask``): a datatrove task's whole input, streamed;
* the Spark engine's partition runner (``curate.spark.partition``): one Arrow batch at a time;
* the single-step commands (``curate.steps_cli``: ``normalize``, ``langid``, ``filter``,
  ``toxicity``, ``decontam``), with ``mark_only=True``: every step sees every document and a
  failed document keeps its first ``(step, reason)`` instead of leaving the chain.

It applies each step as datatrove's ``BaseFilter.run`` does (``filter_batch`` on lazily pulled
chunks; a result is ``bool`` or ``(False, reason)``; a drop without a reason is ``unspecified``),
with chunks of at least :data:`STEP_BATCH` documents: one step runs over a chunk before the next
step starts on it, so each step's model and tables stay in the CPU's caches while it runs (with
chunks of one document every step evicts the others'). The outcomes come out in input order,
whatever the steps' batch sizes: the same kept documents and the same drops, in the same order, for
any chunking (a datatrove pipeline records drops in decision order, which depends on them).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from typing import Any, NamedTuple

from datatrove.data import Document
from datatrove.pipeline.filters.base_filter import get_filter_result

from corpusmix.stats import StepStats
from curate import native

#: reason of a drop whose step gave none (datatrove's ``filter`` may return a bare ``False``)
DEFAULT_REASON = "unspecified"

#: documents a step takes per call at least (a step's own ``batch_size`` may be larger); the
#: documents in flight are bounded by the sum over the steps
STEP_BATCH = 256


class Outcome(NamedTuple):
    """The fate of one document: kept (``step is None``) or dropped by ``step`` for ``reason``."""

    doc: Document
    step: str | None = None
    reason: str | None = None

    @property
    def kept(self) -> bool:
        return self.step is None


def run_steps(steps: Sequence[Any], docs: Iterable[Document | Outcome], *,
              stats: dict[str, StepStats] | None = None, mark_only: bool = False,
              observer: Any = None) -> Iterator[Outcome]:
    """Run ``steps`` in order over ``docs``; one :class:`Outcome` per document, in input order.

    ``docs`` may hold ready-made outcomes (e.g. records the reader could not use): they pass
    through unchanged, in their place in the stream, and no step counts them. ``stats`` (step
    name -> StepStats) is updated in place: ``docs_in``/``bytes_in`` of what reached the step,
    ``kept``, ``dropped`` by reason and the step's own ``seconds`` (without upstream time).

    Documents are pulled lazily, so a stream is never held in memory beyond one step's batch. With
    ``mark_only`` a failed document continues through the later steps (every step sees every
    document) and its outcome carries the first failing step's reason.

    ``observer`` (e.g. :class:`curate.inspection.collect.Collector`) is told of every document
    entering (``entered(doc)``), every ready-made outcome (``ready(outcome)``) and every step's
    batch with its results (``observe(step, batch, results)``, before any document of the batch
    moves on); it only reads.
    """
    stats = {} if stats is None else stats
    names = [s.step_name for s in steps]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"step names must be unique in one chain; repeated: {repeated} "
                         "(give each step its own step_name)")
    decided: deque[Outcome] = deque()
    fate: dict[int, tuple[str, str]] = {}  # mark_only: id(doc) -> first (step, reason)
    seq: dict[int, int] = {}  # id(doc) -> its place in the input, while the document is in flight
    # id(doc) -> (its text, that text's UTF-8 length), while the document is in flight: a text the
    # steps leave as it is is measured once for every step's bytes_in
    sizes: dict[int, tuple[Any, int]] = {}
    done: dict[int, Outcome] = {}  # place -> outcome, decided but not yet given out
    count = 0

    def source() -> Iterator[Document]:
        nonlocal count
        for item in docs:
            if isinstance(item, Outcome):
                if observer is not None:
                    observer.ready(item)
                done[count] = item
            else:
                if observer is not None:
                    observer.entered(item)
                seq[id(item)] = count
                yield item
            count += 1

    stream: Iterator[Document] = source()
    for step in steps:
        stream = _apply(step, stream, stats.setdefault(step.step_name, StepStats()), decided, fate, mark_only,
                        observer, sizes)
    nxt = 0  # every document before this place is given out
    # A document that leaves the last step was preceded through every step by each earlier one, so
    # all earlier documents are decided by then: outcomes go out in input order, each as soon as
    # every earlier one is decided.
    for doc in stream:
        while decided:
            o = decided.popleft()
            sizes.pop(id(o.doc), None)
            done[seq.pop(id(o.doc))] = o
        sizes.pop(id(doc), None)
        if mark_only:
            step_reason = fate.pop(id(doc), None)
            done[seq.pop(id(doc))] = Outcome(doc, *step_reason) if step_reason else Outcome(doc)
        else:
            done[seq.pop(id(doc))] = Outcome(doc)
        while nxt in done:
            yield done.pop(nxt)
            nxt += 1
    while decided:
        o = decided.popleft()
        sizes.pop(id(o.doc), None)
        done[seq.pop(id(o.doc))] = o
    while nxt in done:
        yield done.pop(nxt)
        nxt += 1
    if done or seq:
        raise RuntimeError(f"run_steps: {len(done) + len(seq)} documents were not given out (a step lost them)")


def _apply(step: Any, upstream: Iterator[Document], st: StepStats, decided: deque[Outcome],
           fate: dict[int, tuple[str, str]], mark_only: bool, observer: Any = None,
           sizes: dict[int, tuple[Any, int]] | None = None) -> Iterator[Document]:
    """One step over ``upstream`` (datatrove's ``BaseFilter.run`` semantics), timed and counted;
    ``sizes``: id(doc) -> (text, its UTF-8 length) of documents in flight, kept up to date here."""
    sizes = {} if sizes is None else sizes
    name = step.step_name
    size = max(int(getattr(step, "batch_size", 1) or 1), STEP_BATCH)
    while True:
        batch = list(islice(upstream, size))
        if not batch:
            return
        t0 = time.perf_counter()
        st.docs_in += len(batch)
        n_bytes = 0
        for d in batch:
            got = sizes.get(id(d))
            if got is None or got[0] is not d.text:  # first seen, or a step gave it a new text
                got = sizes[id(d)] = (d.text, native.utf8_len(d.text))
            n_bytes += got[1]
        st.bytes_in += n_bytes
        results = list(step.filter_batch(batch))
        st.seconds += time.perf_counter() - t0
        if observer is not None:
            observer.observe(step, batch, results)
        # as datatrove: each kept document goes downstream before the next result is looked at,
        # so drops are recorded in the order a datatrove pipeline records them
        for doc, res in zip(batch, results, strict=True):
            keep, reason = get_filter_result(res)
            if keep:
                st.kept += 1
                yield doc
                continue
            reason = reason or DEFAULT_REASON
            st.dropped[reason] += 1
            if mark_only:
                fate.setdefault(id(doc), (name, reason))
                yield doc
            else:
                decided.append(Outcome(doc, name, reason))
