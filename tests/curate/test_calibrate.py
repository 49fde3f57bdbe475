"""Calibration of the ``auto`` filter profile and per-domain language ID; the loud guard."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from datatrove.data import Document

from corpusmix.paths import DEMO, ROOT
from curate import docio as cio
from curate.calibrate import CalibrateConfig, calibrate_steps, guard_report
from curate.chain import ChainConfig, EngineConfig, build_steps
from curate.engine_local import run_local
from curate.steps.filters import FilterConfig, make_filter
from curate.steps.garbage import CalibratedFilter, fit_filter_calibration

PARAMS = str(ROOT / "params.yaml")


def _real(per_domain: int, domains: tuple[str, ...] = ("news", "legal", "reference")) -> list[dict]:
    rows = []
    for d in domains:
        t = pq.read_table(DEMO / "en" / f"{d}.parquet", columns=["id", "text", "domain"]).to_pylist()
        rows += t[:per_domain]
    return rows


def _garbage(rng: random.Random, bag: list[str], kind: str) -> str:
    if kind == "chars":
        return "\n".join("".join(rng.choice("abcdefXYZ0123456789{}[];:#@%&*") for _ in range(60)) for _ in range(12))
    if kind == "salad":
        return "\n".join(" ".join(rng.choice(bag) for _ in range(14)).capitalize() + "." for _ in range(10))
    if kind == "spam":
        return "\n".join("buy cheap pills now best price" for _ in range(30))
    return "\n".join(rng.choice(bag) for _ in range(40))  # a word list


def _inputs(tmp: Path, *, files: int, seed: int = 0) -> Path:
    rng = random.Random(1)
    rows = _real(70)
    bag = [w for r in rows for w in r["text"].split() if w.isalpha()]
    for k in range(40):
        rows.append({"id": f"spam/{k}", "text": _garbage(rng, bag, ("chars", "salad", "spam", "list")[k % 4]),
                     "domain": "scraped"})
    random.Random(seed).shuffle(rows)
    out = tmp / f"in-{files}-{seed}"
    out.mkdir()
    for i in range(files):
        pq.write_table(pa.Table.from_pylist(rows[i::files]), out / f"part-{i}.parquet")
    return out


def _calibrate(inp: Path) -> dict:
    steps = build_steps(ChainConfig.load(PARAMS, engine=EngineConfig(steps=["normalize", "langid", "filters"])), stage="a")
    return calibrate_steps(steps, inputs=[str(inp)], read_cfg=cio.ReadConfig())


def test_calibration_is_deterministic_and_independent_of_file_order(tmp_path):
    a = _calibrate(_inputs(tmp_path, files=1, seed=0))
    b = _calibrate(_inputs(tmp_path, files=3, seed=5))
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    dom = a["steps"]["filters"]["domains"]
    assert set(dom) == {"news", "legal", "reference", "scraped"}
    assert dom["news"]["fallback"] is None and dom["news"]["thresholds"]
    # the garbage domain calibrates nothing from its own garbage: fallback, garbage rules only
    assert dom["scraped"]["garbage_share"] >= 0.95 and dom["scraped"]["fallback"]
    assert a["steps"]["langid"]["domains"]["legal"]["language"] == "en"


def test_garbage_detectors_are_domain_agnostic(tmp_path):
    cal = _calibrate(_inputs(tmp_path, files=1))
    flt = make_filter(FilterConfig())
    flt.set_calibration(cal["steps"]["filters"])
    rng = random.Random(3)
    bag = [w for r in _real(30) for w in r["text"].split() if w.isalpha()]
    want = {"chars": "garbage:not_words", "salad": "garbage:word_salad", "spam": "garbage:repetitive",
            "list": "garbage:word_list"}
    for kind, reason in want.items():
        for dom in ("news", "legal", "never_seen"):  # the same decision in any domain, also an unknown one
            d = Document(text=_garbage(rng, bag, kind), id=kind, metadata={"domain": dom, "lang": "en",
                                                                           "lang_score": 0.5})
            assert flt.filter(d) == (False, reason), (kind, dom)
    kept = sum(flt.filter(Document(text=r["text"], id=r["id"], metadata={"domain": r["domain"]})) is True
               for r in _real(200, ("literature", "techdocs", "code")))  # not in the calibration input
    assert kept / 200 >= 0.9
    assert flt.filter(Document(text="  ", id="e", metadata={"domain": "news"})) == (False, "empty")


def test_small_domain_falls_back_to_global_rules():
    docs = [Document(text=r["text"], id=r["id"], metadata={"domain": "tiny"}) for r in _real(10, ("news",))]
    sec = fit_filter_calibration(FilterConfig(min_domain_docs=50), {"tiny": docs})
    assert sec["domains"]["tiny"]["thresholds"] == {}
    assert "min_domain_docs" in sec["domains"]["tiny"]["fallback"]
    flt = CalibratedFilter(FilterConfig())
    flt.set_calibration(sec)
    assert flt.filter(docs[0]) is True


def test_uncalibrated_auto_filter_is_a_clear_error():
    from corpusmix.config import ConfigError

    with pytest.raises(ConfigError, match="calibrat"):
        make_filter(FilterConfig()).filter(Document(text="hello world", id="x"))


def test_pinned_calibration_is_used_as_written(tmp_path):
    inp = _inputs(tmp_path, files=1)
    cal = _calibrate(inp)
    cal["steps"]["filters"]["domains"]["news"]["thresholds"]["words_per_line"] = [5.0, None]  # an edit
    pinned = tmp_path / "pinned.json"
    pinned.write_text(json.dumps(cal))
    steps = build_steps(ChainConfig.load(PARAMS, engine=EngineConfig(steps=["normalize", "langid", "filters"])), stage="a")
    got = calibrate_steps(steps, inputs=[str(inp)], read_cfg=cio.ReadConfig(), cfg=CalibrateConfig(file=str(pinned)))
    assert got == cal
    assert steps[-1].domains["news"]["thresholds"]["words_per_line"] == [5.0, None]


def test_guard_report_flags_a_rule_over_the_limit():
    rep = guard_report([("a", "filters", "garbage:word_salad", 40), ("a", "langid_filter", "lang:de", 5),
                        ("b", "filters", "outlier:dict_share_low", 3)], {"a": 100, "b": 10}, share=0.3)
    assert rep["guard"] == [{"domain": "a", "step": "filters", "reason": "garbage:word_salad", "dropped": 40,
                             "share": 0.4, "limit": 0.3}]
    assert rep["domains"]["a"]["kept_share"] == 0.55
    assert rep["domains"]["b"]["top_reasons"] == {"filters:outlier:dict_share_low": 3}


def test_params_have_no_hand_written_per_domain_overrides():
    cur = yaml.safe_load(Path(PARAMS).read_text())["curate"]
    assert cur["filters"]["profile"] == "auto"
    assert not cur["filters"].get("per_domain")
    assert not cur["langid"].get("skip_domains") and not cur["langid"].get("domain_thresholds")


def test_run_writes_calibration_guard_and_domain_table(tmp_path):
    inp = _inputs(tmp_path, files=2)
    out = tmp_path / "out"
    params = yaml.safe_load(Path(PARAMS).read_text())
    params["curate"]["calibrate"]["guard_share"] = 0.2  # the scraped domain's 4 garbage kinds: 25 % each
    pfile = tmp_path / "params.yaml"
    pfile.write_text(yaml.safe_dump(params))
    doc = run_local(inputs=inp, output=out, params_path=str(pfile),
                    cfg=EngineConfig(steps=["normalize", "langid", "filters"], tasks=2, workers=1, keep_work=False))
    cal = json.loads((out / "calibration.json").read_text())
    assert cal["domain_docs"] == {"legal": 70, "news": 70, "reference": 70, "scraped": 40}
    flagged = {g["reason"] for g in doc["guard"] if g["domain"] == "scraped"}
    assert {"garbage:not_words", "garbage:word_salad", "garbage:repetitive", "garbage:word_list"} <= flagged
    assert all(g["share"] > 0.2 and g["limit"] == 0.2 for g in doc["guard"])
    assert doc["domains"]["scraped"]["kept_share"] <= 0.05
    for dom in ("news", "legal", "reference"):
        assert doc["domains"][dom]["kept_share"] >= 0.9, doc["domains"][dom]
    assert json.loads((out / "stats.json").read_text())["guard"] == doc["guard"]


def test_report_shows_domain_table_and_guard_in_red():
    from report.curation import _domain_decisions
    from report.render import html_table, md_table

    st = guard_report([("noise", "filters", "garbage:word_salad", 299)], {"noise": 300, "news": 500}, share=0.3)
    tables = _domain_decisions(st, "run")
    assert [t.alert for t in tables] == [False, True]
    assert tables[0].rows[0][:4] == ["news", 500, 500, 1.0]
    assert 'class="alert"' in html_table(tables[1]) and "garbage:word_salad" in html_table(tables[1])
    assert md_table(tables[1]).startswith("**⚠ Guard")


def test_sample_read_by_several_processes_is_the_one_readers_sample(tmp_path):
    """The calibration sample read by 3 processes (every 3rd unit each, merged) is the sample one
    reader finds: same documents in the same order, same counts, over Parquet row groups and JSONL
    pieces. An id repeated inside one unit is read once; repeated in units of two processes, it is
    sampled once and counted by both (as the engine's tasks count it)."""
    from curate.calibrate import sample_input

    inp = _inputs(tmp_path, files=4, seed=3)
    rows = pq.read_table(inp / "part-0.parquet").to_pylist()
    pq.write_table(pa.Table.from_pylist(rows), inp / "part-0.parquet", row_group_size=7)
    news = [r for r in rows if r["domain"] == "news"][:20]
    with open(inp / "more.jsonl", "w") as fh:
        for r in news + news[:1]:  # the last line repeats the first line's id
            fh.write(json.dumps({**r, "id": "j-" + r["id"]}) + "\n")
    for split, repeat_counted, k in ((0, 0, 5), (2000, 1, 1000)):  # (k = 1000: every document)
        cfg = cio.ReadConfig(jsonl_split_bytes=split)
        units = cio.list_units(cio.list_input_files(inp), cfg.jsonl_split_bytes)
        assert len(units) > 10
        one = sample_input([str(inp)], cfg, k)
        three = sample_input([str(inp)], cfg, k, units=units, workers=3, parallel_min_bytes=0)
        assert {d: [x.id for x in v] for d, v in three[0].items()} == {d: [x.id for x in v] for d, v in one[0].items()}
        assert [x.text for v in three[0].values() for x in v] == [x.text for v in one[0].values() for x in v]
        assert sum(one[1].values()) == sum(not isinstance(r, cio.Drop) for r in cio.read_documents(inp, cfg))
        assert three[1] == {**one[1], "news": one[1]["news"] + repeat_counted}
        assert all(len(v) == min(k, one[1][d]) for d, v in one[0].items())


def test_share_outliers_allow_for_the_chance_variation_of_short_documents():
    """A share of words below the domain's low threshold is an outlier only ``outlier_share_z``
    binomial standard errors below it: a page at the same distance is dropped, a short quote is not."""
    from curate.steps.garbage import share_allowance

    assert share_allowance(0.5, 100, 2.0) == pytest.approx(0.1)
    assert share_allowance(0.5, 0, 2.0) == 0.0 and share_allowance(-0.2, 10, 2.0) == 0.0
    assert share_allowance(0.5, 100, 0.0) == 0.0
    rows = _real(60, ("news",))
    docs = [Document(text=r["text"], id=r["id"], metadata={"domain": "news"}) for r in rows]
    sec = fit_filter_calibration(FilterConfig(), {"news": docs})
    long_doc = max(docs, key=lambda d: len(d.text.split()))
    words = long_doc.text.split()[:8]
    words[2], words[5] = "zqxvbt", "blorptk"  # two tokens of no dictionary in a short text
    short_doc = Document(text=" ".join(words), id="short", metadata={"domain": "news"})
    for z, want_long, want_short in ((2.0, False, True), (0.0, False, False)):
        flt = CalibratedFilter(FilterConfig(outlier_share_z=z))
        flt.set_calibration(json.loads(json.dumps(sec)))
        dom = flt.domains["news"]
        share_long = flt.measure(long_doc, dom)["dict_share"]
        share_short = flt.measure(short_doc, dom)["dict_share"]
        assert len(long_doc.text.split()) >= 200
        assert share_short < 0.9
        # each document's share lies below the threshold it is judged by: the page by at least 2
        # standard errors, the quote by 0.05 (under one)
        lo_long = min(share_long + 0.05, 0.99)
        assert lo_long - share_long > share_allowance(lo_long, len(long_doc.text.split()), 2.0)
        dom["thresholds"] = {"dict_share": [lo_long, None]}
        assert (flt.filter(long_doc) is True) is want_long
        dom["thresholds"] = {"dict_share": [share_short + 0.05, None]}
        got = flt.filter(short_doc)
        assert (got is True) is want_short, got
        if not want_long:
            dom["thresholds"] = {"dict_share": [lo_long, None]}
            assert flt.filter(long_doc) == (False, "outlier:dict_share_low")
