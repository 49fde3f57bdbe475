"""``curate.runner.run_steps``: the one runner of both engines and the single-step commands.

Checked against datatrove itself: a chain of steps' own ``run`` generators with exclusion writers
(what a datatrove pipeline does) must keep the same documents and record the same drops, also with
a batched step in the middle. The runner gives the outcomes out in input order (datatrove records
drops in decision order, which depends on the steps' batch sizes), so its output is the same for
every chunking.
"""

from __future__ import annotations

import json
import logging
from collections import Counter

import pytest
from datatrove.data import Document

from corpusmix.stats import StatsError, StepStats, merge_stats, read_stats, stats_document, write_stats
from curate.docio import Drop
from curate.runner import Outcome, run_steps
from curate.stats import count_read, drop_row
from curate.steps.base import Annotator, CurationStep

WORDS = ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau "
         "upsilon").split()


class Short(CurationStep):
    step_name = "short"

    def filter(self, doc: Document) -> bool | tuple[bool, str]:
        return True if len(doc.text.split()) >= 3 else (False, "too_short")


class Upper(Annotator):
    """Batched (4 per call), rewrites the text; fails on a planted document."""

    step_name = "upper"
    columns = ("n_upper",)

    def __init__(self) -> None:
        super().__init__()
        self.batch_size = 4
        self.calls: list[int] = []

    def annotate(self, doc: Document) -> None:
        if "boom" in doc.text:
            raise ValueError("planted failure")
        doc.text = doc.text.upper()
        doc.metadata["n_upper"] = len(doc.text)

    def filter_batch(self, batch: list[Document]) -> list[bool | tuple[bool, str]]:
        self.calls.append(len(batch))
        return [self.filter(d) for d in batch]


class NoGamma(CurationStep):
    step_name = "no_gamma"

    def filter(self, doc: Document) -> bool | tuple[bool, str]:
        return False if "GAMMA" in doc.text or "KAPPA" in doc.text else True  # a drop without a reason


def _docs() -> list[Document]:
    texts = []
    for i in range(23):
        n = 2 if i % 3 == 0 else 3 + i % 4  # every 3rd too short
        words = [WORDS[(i + k) % len(WORDS)] for k in range(n)]
        if i == 7:
            words.append("boom")
        texts.append(" ".join(words))
    return [Document(text=t, id=f"d{i:02d}", metadata={"domain": "news" if i % 2 else "code"}) for i, t in
            enumerate(texts)]


def _datatrove(steps: list, docs: list[Document]) -> tuple[list[str], list[tuple[str, str, str]]]:
    """The documents through the steps' own datatrove ``run`` generators, drops from exclusion writers."""
    drops: list[tuple[str, str, str]] = []

    class Sink:
        def __init__(self, name: str) -> None:
            self.name = name

        def __enter__(self):
            return self

        def __exit__(self, *exc) -> None:
            return None

        def write(self, doc: Document, rank: int = 0) -> None:
            drops.append((doc.id, self.name, doc.metadata.pop("filter_reason", None) or "unspecified"))

    stream = iter(docs)
    for step in steps:
        step.exclusion_writer = Sink(step.step_name)
        stream = step.run(stream)
    kept = [d.id for d in stream]
    return kept, drops


@pytest.mark.parametrize("chunk", [1, 3, 256])
def test_same_kept_and_drops_as_a_datatrove_pipeline_in_input_order(monkeypatch, chunk: int) -> None:
    import curate.runner

    monkeypatch.setattr(curate.runner, "STEP_BATCH", chunk)
    kept_ref, drops_ref = _datatrove([Short(), Upper(), NoGamma()], _docs())
    # datatrove records drops in decision order: the batched step's pull passes over (and drops
    # upstream) documents after ones that are dropped downstream of it later
    assert [i for i, _, _ in drops_ref] != sorted(i for i, _, _ in drops_ref)
    stats: dict[str, StepStats] = {}
    upper = Upper()
    out = list(run_steps([Short(), upper, NoGamma()], _docs(), stats=stats))
    assert [o.doc.id for o in out] == [d.id for d in _docs()]  # every document once, in input order
    assert [o.doc.id for o in out if o.kept] == kept_ref
    assert [(o.doc.id, o.step, o.reason) for o in out if not o.kept] == sorted(drops_ref)
    reasons = {r for _, _, r in drops_ref}
    assert {"too_short", "error:ValueError", "unspecified"} <= reasons
    # the batched step got chunks of its own size or of STEP_BATCH, whichever is larger (the last
    # one shorter)
    size = max(4, chunk)
    assert upper.calls[:-1] == [size] * (len(upper.calls) - 1) and sum(upper.calls) == stats["upper"].docs_in
    for name, st in stats.items():
        st.check(name)
    assert stats["short"].docs_in == 23 and stats["no_gamma"].kept == len(kept_ref)
    # bytes_in follows the text as rewritten upstream
    assert stats["no_gamma"].bytes_in == sum(len(o.doc.text.encode()) for o in out
                                             if o.kept or o.step == "no_gamma")


def test_mark_only_every_step_sees_every_document() -> None:
    stats: dict[str, StepStats] = {}
    out = list(run_steps([Short(), Upper(), NoGamma()], _docs(), stats=stats, mark_only=True))
    assert [o.doc.id for o in out] == [d.id for d in _docs()]
    assert all(st.docs_in == 23 for st in stats.values())
    first = {o.doc.id: (o.step, o.reason) for o in out if not o.kept}
    assert first["d00"] == ("short", "too_short")  # too short and, later, maybe more: the first wins
    assert first["d07"] == ("upper", "error:ValueError")


def test_upstream_outcomes_keep_their_place_and_are_not_counted() -> None:
    st = StepStats()
    records = [_docs()[1], Drop("bad-1", "malformed_json", "news"), _docs()[2]]
    items = [count_read(st, r) for r in records]
    stats: dict[str, StepStats] = {}
    out = list(run_steps([Short()], items, stats=stats))
    assert [(o.doc.id, o.step) for o in out] == [("d01", None), ("bad-1", "read"), ("d02", None)]
    assert stats["short"].docs_in == 2
    assert (st.docs_in, st.kept, dict(st.dropped)) == (3, 2, {"malformed_json": 1})
    assert drop_row(out[1]) == ("bad-1", "read", "malformed_json", "news")


def test_annotator_error_is_logged_with_the_document_id(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="corpusmix.curate.steps")
    doc = Document(text="alpha boom", id="doc-42", metadata={"domain": "news"})
    assert Upper().filter(doc) == (False, "error:ValueError")
    rec = [r for r in caplog.records if r.name == "corpusmix.curate.steps"]
    assert len(rec) == 1 and rec[0].data["id"] == "doc-42" and rec[0].data["step"] == "upper"
    assert rec[0].data["reason"] == "error:ValueError" and "planted failure" in rec[0].data["error"]
    assert rec[0].exc_info is not None  # the traceback goes to the structured log


def test_repeated_step_names_are_refused() -> None:
    with pytest.raises(ValueError, match="unique"):
        list(run_steps([Short(), Short()], _docs()))


def test_outcome_is_kept_only_without_a_step() -> None:
    d = Document(text="x", id="a")
    assert Outcome(d).kept and not Outcome(d, "s", "r").kept


# ------------------------------------------------------------------------------ the stats contract

def test_merge_stats_sums_units_in_order_and_checks_conservation(tmp_path) -> None:
    a = {"read": StepStats(3, 30, 2, Counter({"empty_text": 1}), 0.5),
         "short": StepStats(2, 20, 1, Counter({"too_short": 1}), 0.25)}
    write_stats(tmp_path / "a.json", a)
    b = read_stats(tmp_path / "a.json")
    assert {k: v.to_dict() for k, v in b.items()} == {k: v.to_dict() for k, v in a.items()}
    merged = merge_stats([a, b, {"extra": {"docs_in": 0, "bytes_in": 0, "kept": 0, "dropped": {}, "seconds": 0}}],
                         order=["read", "short", "later"])
    assert list(merged) == ["read", "short", "later", "extra"]
    assert merged["short"] == {"docs_in": 4, "bytes_in": 40, "kept": 2, "dropped": {"too_short": 2}, "seconds": 0.5}
    doc = stats_document(merged, kept=2)
    assert doc["totals"] == {"docs_in": 6, "kept": 2, "dropped": 4}
    json.dumps(doc)
    with pytest.raises(StatsError, match="short"):
        merge_stats([{"short": StepStats(docs_in=2, kept=2, dropped=Counter(x=1))}])



class Accent(Annotator):
    """Rewrites every text to a longer one with a two-byte character."""

    step_name = "accent"
    columns = ()

    def annotate(self, doc: Document) -> None:
        doc.text = doc.text + " é"


class KeepAll(CurationStep):
    step_name = "keep_all"

    def filter(self, doc: Document) -> bool | tuple[bool, str]:
        return True


def test_bytes_in_follow_a_text_rewritten_to_another_length() -> None:
    """Each step's bytes_in is the UTF-8 length of the texts as they reach it: a text measured for
    one step and left as it is counts the same for the next, a rewritten one is measured again."""
    before = sum(len(d.text.encode()) for d in _docs())
    stats: dict[str, StepStats] = {}
    out = list(run_steps([Short(), Accent(), KeepAll()], _docs(), stats=stats))
    short_kept = [o for o in out if o.step != "short"]
    assert stats["short"].bytes_in == before
    assert stats["accent"].bytes_in == sum(len(o.doc.text.encode()) - 3 for o in short_kept)
    assert stats["keep_all"].bytes_in == sum(len(o.doc.text.encode()) for o in short_kept)
    assert stats["keep_all"].bytes_in == stats["accent"].bytes_in + 3 * len(short_kept)
