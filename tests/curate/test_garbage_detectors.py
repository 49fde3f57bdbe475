"""The garbage detectors of the ``auto`` profile, the domain verdict, and bad input.

Every document comes out kept or dropped with a reason (conservation); the verdict names a domain
made of garbage and says why a one-document domain has none; the mixture search never targets a
domain the curation judged garbage.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from datatrove.data import Document

from curate.calibrate import fit_steps, verdicts_of, write_verdicts
from curate.steps.filters import FilterConfig
from curate.steps.garbage import CalibratedFilter
from curate.steps.langid import LangIdConfig, LanguageFilter, LanguageID
from curate.steps.normalize import Normalizer

PROSE = ("The committee met on Tuesday to discuss the budget for the coming year. Several members argued "
         "that the library needed more money, while others wanted to repair the roads first. After a long "
         "debate they agreed to spend a little on both and to meet again in the spring. ")


def _real(i: int) -> str:
    rng = random.Random(i)
    words = PROSE.split()
    cut = rng.randrange(10, 30)
    return " ".join(words[cut:] + words[:cut]).replace(" .", ".") + f" Item {i} was noted in the minutes."


def _steps() -> list:
    return [Normalizer(), LanguageID(LangIdConfig()), LanguageFilter(LangIdConfig()), CalibratedFilter(FilterConfig())]


def _run(docs_by_domain: dict[str, list[str]]) -> tuple[dict, dict[str, object]]:
    steps = _steps()
    sample = {d: [Document(text=t, id=f"{d}/{i}", metadata={"domain": d}) for i, t in enumerate(ts)]
              for d, ts in docs_by_domain.items()}
    sections = fit_steps(steps, {d: list(v) for d, v in sample.items()})
    out: dict[str, object] = {}
    texts: dict[str, Document] = {}
    for d, ts in docs_by_domain.items():
        for i, t in enumerate(ts):
            doc = Document(text=t, id=f"{d}/{i}", metadata={"domain": d})
            texts[doc.id] = doc
            res: object = True
            for st in steps:
                r = st.filter(doc)
                if r is not True:
                    res = r
                    break
            out[doc.id] = res
    out["_docs"] = texts
    return sections, out


LOG = "\n".join(f"2024-03-0{i % 9 + 1} 10:{i % 60:02d}:07 INFO worker-{i} started job {i * 7} in 0.{i}s"
                for i in range(30))
SPAM = " ".join(["Best cheap watches in Paris! Buy cheap watches online, cheap watches deals today."] * 12)
ACCENTED = _real(77).replace("budget", "caf\u00e9\u2019s \u201cna\u00efve\u201d budget \u2014 d\u00e9j\u00e0 vu")
MOJIBAKE = ACCENTED.encode("utf-8").decode("koi8_r")  # a codec ftfy does not undo
REPAIRABLE = ACCENTED.encode("utf-8").decode("cp437")


@pytest.fixture(scope="module")
def run():
    real = [_real(i) for i in range(60)]
    mixed = real[:50] + [LOG, SPAM, MOJIBAKE, REPAIRABLE]
    junk = [LOG.replace("worker", f"w{k}") for k in range(6)] + [SPAM.replace("Paris", f"City{k}") for k in range(6)]
    return _run({"prose": mixed, "junk": junk, "single": [_real(99)]})


def test_every_document_kept_or_dropped_with_a_reason(run):
    _, out = run
    for i, res in out.items():
        if i == "_docs":
            continue
        assert res is True or (isinstance(res, tuple) and res[0] is False and res[1]), (i, res)


def test_detectors_name_the_garbage_and_keep_the_prose(run):
    _, out = run
    assert out["prose/50"] == (False, "garbage:machine_output")
    assert out["prose/51"][1] in ("garbage:keyword_stuffing", "garbage:repetitive")
    assert out["prose/52"] == (False, "garbage:mojibake")  # koi8-r: words mixing scripts and symbols
    assert out["prose/53"] is True and out["_docs"]["prose/53"].text == ACCENTED  # cp437: repaired by ftfy
    assert sum(out[f"prose/{i}"] is True for i in range(50)) >= 48


def test_domain_verdicts(run, tmp_path: Path):
    sections, _ = run
    doms = sections["filters"]["domains"]
    assert doms["junk"]["verdict"] == "garbage" and doms["junk"]["junk_share"] == 1.0
    assert "fail the garbage detectors" in doms["junk"]["why"]
    assert doms["prose"]["verdict"] == "ok"
    assert doms["single"]["verdict"] == "unknown" and "verdict_min_docs" in doms["single"]["why"]
    assert sections["filters"]["garbage_domains"] == ["junk"]
    v = verdicts_of({"steps": sections})
    assert v["garbage_domains"] == ["junk"] and set(v["domain_verdicts"]) == {"junk", "prose", "single"}
    write_verdicts(tmp_path, {"steps": sections})
    assert json.loads((tmp_path / "domain_verdicts.json").read_text())["garbage_domains"] == ["junk"]


def test_mixture_targets_leave_out_judged_garbage(tmp_path: Path):
    from mix.cli import targets_for

    (tmp_path / "pools.json").write_text(json.dumps({"garbage_domains": ["junk"]}))
    assert targets_for({}, ["junk", "prose", "news"], pools_dir=str(tmp_path)) == ["prose", "news"]
    assert targets_for({"garbage_domains": ["news"]}, ["junk", "prose", "news"], pools_dir=str(tmp_path)) == ["prose"]
    assert targets_for({}, ["junk", "prose"]) == ["junk", "prose"]  # pools without verdicts: nothing judged


def test_keyword_lists_with_few_function_words_are_stuffing():
    """A keyword list (few function words, repeated phrases) whose keywords spread over many names
    stays under the top-3 share of ``garbage_max_stuffing`` and is caught by the terse bar; the same
    statistics with the function words of prose are not."""
    from curate.steps.garbage import CalibratedFilter

    filt = CalibratedFilter(FilterConfig())
    base = {"n_words": 300.0, "dict_share": 0.9, "vocab_richness": 6.0, "compress_ratio": 3.0,
            "n_lines": 5.0, "words_per_line": 60.0, "word_order": None, "word_pairs": 0}
    terse = {**base, "stop_share": 0.12, "stuffing": 0.2, "rep_ngram_share": 0.7}
    assert filt.garbage_reason(terse) == "garbage:keyword_stuffing"
    assert filt.garbage_reason({**terse, "stop_share": 0.3}) is None  # prose has its function words
    assert filt.garbage_reason({**terse, "rep_ngram_share": 0.3}) is None  # and no repeated phrases
    assert filt.garbage_reason({**terse, "stuffing": 0.1}) is None


def test_bad_input_never_crashes():
    huge = "lorem ipsum dolor sit amet " * 190_000  # one line of ~5 MB
    marks = "\u0301\u0308\u0327" * 2000  # valid UTF-8, only combining marks
    sections, out = _run({"prose": [_real(i) for i in range(30)] + [huge, marks, ""]})
    for i in ("prose/30", "prose/31", "prose/32"):
        res = out[i]
        assert res is True or (isinstance(res, tuple) and res[0] is False and res[1]), (i, res)
    assert out["prose/30"][0] is False  # one word repeated on one line
    assert out["prose/32"] == (False, "empty_after_normalize")
