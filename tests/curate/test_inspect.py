"""``corpusmix inspect``: what a run records (OUT/inspect.json) and the offline page built from it.

One local run of the whole chain on the demo data (the repository's params, no quality models)
serves the demo checks: the view's counts equal ``stats.json``, no planted PII value of a type the
run's PII step redacts appears in the page, the page stays under 5 MB, and headless Chromium
(system package, driven by Playwright without any browser download) can click to a domain and a
rule and finds the examples, the histogram and the thresholds without a single network request.
A small second run holds the bad inputs: a 5 MB document, a domain without drops, then copies of
it without ``inspect.json`` (an older run), without ``stats.json`` (a run that stopped), with a
broken ``inspect.json``.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from corpusmix.cli import main
from curate.demo.data import DemoDataConfig, build_demo_data
from curate.engine_local import run_local
from curate.inspection.collect import Collector, InspectConfig, merge_states
from curate.inspection.labels import export_samples, score_labels
from curate.inspection.view import load_run, render_page, write_page
from curate.runner import run_steps
from curate.steps.base import ThresholdFilter

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "data" / "demo"
ARTEFACTS = Path(os.environ.get("CORPUSMIX_TEST_ARTIFACTS", ROOT / "out" / "test-artifacts"))


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict]:
    tmp = tmp_path_factory.mktemp("inspect_demo")
    build_demo_data(DemoDataConfig(source_dir=str(DEMO), output=str(tmp / "raw")))
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    chain = {k: params[k] for k in ("curate", "dedup", "pii", "toxicity", "decontam")}
    chain["decontam"]["eval_sets"] = [str(DEMO / "eval")]
    chain["curate"]["engine"].update(quality_models_dir="", workers=1)
    (tmp / "params.yaml").write_text(yaml.safe_dump(chain))
    run_local(inputs=tmp / "raw" / "docs", output=tmp / "out", params_path=str(tmp / "params.yaml"))
    return tmp / "raw", tmp / "out", chain


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """news (with 3 garbled documents) and legal documents, and one 5 MB document in its own domain."""
    tmp = tmp_path_factory.mktemp("inspect_small")
    tables = [pq.read_table(DEMO / "en" / f"{d}.parquet", columns=["id", "text", "domain", "source"]).slice(0, 40)
              for d in ("news", "legal")]
    lit = "\n\n".join(pq.read_table(DEMO / "en" / "literature.parquet", columns=["text"]).column("text").to_pylist())
    big = (lit * (5_000_000 // len(lit) + 1))[:5_000_000]
    junk = ["".join(chr(0x2500 + (i * 7 + k * 13) % 120) for i in range(600)) for k in range(3)]
    tables.append(pa.table({"id": ["huge/1", "junk/1", "junk/2", "junk/3"], "text": [big, *junk],
                            "domain": ["huge", "news", "news", "news"], "source": ["x"] * 4}))
    (tmp / "in").mkdir()
    pq.write_table(pa.concat_tables(tables), tmp / "in" / "docs.parquet")
    (tmp / "params.yaml").write_text("curate:\n  engine:\n    steps: [normalize, langid, filters, pii]\n    tasks: 2\n")
    run_local(inputs=tmp / "in", output=tmp / "out", params_path=str(tmp / "params.yaml"))
    return tmp / "out"


def _texts(data: dict) -> list[tuple[str, str]]:
    """(id, text) of every text the page shows."""
    out = []
    for part in ("samples", "near"):
        for by in data[part].values():
            for keyed in by.values():
                for xs in keyed.values():
                    out += [(x["id"], x["text"]) for x in xs]
    out += [(c["cluster"], c.get("text", "")) for c in data["clusters"].get("top", [])]
    return out


# -------------------------------------------------------------------------------------------- demo
def test_demo_counts_equal_stats_json(demo):
    _, out, _ = demo
    stats = json.loads((out / "stats.json").read_text())
    data = load_run(out)
    assert data["has_inspect"] and not data["notes"]
    for step, st in stats["steps"].items():
        got: dict[str, int] = {}
        for c in data["counts"].get(step, {}).values():
            for r, n in c["dropped"].items():
                got[r] = got.get(r, 0) + n
        assert got == {r: n for r, n in st["dropped"].items() if n}, step
        if step in data["counts"]:
            assert sum(c["docs_in"] for c in data["counts"][step].values()) == st["docs_in"], step
    for dom, row in stats["domains"].items():
        dropped = sum(n for s in data["counts"].values() for r, n in s.get(dom, {}).get("dropped", {}).items())
        assert (data["domains"][dom], dropped) == (row["docs_in"], row["dropped"]), dom


def test_demo_view_shows_no_planted_pii_and_fits_5mb(demo, tmp_path):
    raw, out, chain = demo
    page = tmp_path / "view.html"
    data = write_page(out, page)
    assert page.stat().st_size <= 5_000_000
    # the PII step's types, and person names: the view masks those itself (mask_person_names)
    entities = set(chain["pii"]["entities"]) | {"PERSON"}
    gt = pq.read_table(raw / "ground_truth.parquet").to_pylist()
    planted = {s["value"] for r in gt for s in (r["pii_spans"] or []) if s["type"] in entities}
    pii_docs = {r["id"] for r in gt if any(s["type"] in entities for s in (r["pii_spans"] or []))}
    texts = _texts(data)
    html = page.read_text()
    assert len(planted) > 400 and not [v for v in planted if v in html]
    assert not [v for _, t in texts for v in planted if v in t]
    # not vacuous: documents with planted PII are among the samples, shown with placeholders
    shown = [t for i, t in texts if i in pii_docs]
    assert len(shown) >= 5 and sum("<" in t and ">" in t for t in shown) >= 5
    # person names: documents with a planted name are shown, the name masked
    person_docs = {r["id"] for r in gt if any(s["type"] == "PERSON" for s in (r["pii_spans"] or []))}
    assert data["pii"]["person_names_masked"] and sum("<PERSON>" in t for i, t in texts if i in person_docs) >= 3


def _browser():
    """A Playwright Chromium on the system's chromium binary; skip only where none can exist."""
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sync_playwright = None
    if exe is None or sync_playwright is None:
        why = ("no chromium binary (apt-get install chromium; `make system-deps`)" if exe is None
               else "the playwright package is missing (pip install -e '.[dev]')")
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the browser test: {why}")
        pytest.skip(why)
    return sync_playwright, exe


FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]


def test_view_in_headless_chromium(demo, small, tmp_path):
    sync_playwright, exe = _browser()
    pages = {"demo": tmp_path / "demo.html", "small": tmp_path / "small.html"}
    write_page(demo[1], pages["demo"])
    write_page(small, pages["small"])
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=FLAGS, headless=True)
        ctx = browser.new_context(viewport={"width": 1280, "height": 1400})
        requests: list[str] = []
        errors: list[str] = []
        ctx.on("request", lambda r: requests.append(r.url))
        ctx.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file://") else route.abort())
        page = ctx.new_page()
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(pages["demo"].as_uri())
        page.click('button.domain[data-domain="news"]')
        page.click('#rules tr.rule[data-step="filters"][data-reason="garbage:not_words"]')
        assert page.locator("#drops .sample").count() >= 1
        assert page.locator("#near .sample").count() >= 1
        assert page.locator('svg.hist[data-stat="dict_share"] rect.bar').count() >= 5
        assert page.locator("svg.hist line.thr-domain").get_attribute("data-value") == "0.2"
        ARTEFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTEFACTS / "inspect-view.png"), full_page=True)
        # the language rule of a kept-language domain: its threshold (0.6) and the global one (0.65)
        page.click('#rules tr.rule[data-step="langid_filter"][data-reason="lang:de"]')
        assert page.locator("svg.hist line.thr-domain").get_attribute("data-value") == "0.6"
        assert page.locator("svg.hist line.thr-global").get_attribute("data-value") == "0.65"
        # keyboard only: next domain with the arrow key and Enter, then the first rule with Enter
        page.focus('button.domain[data-domain="news"]')
        page.keyboard.press("ArrowDown")
        page.keyboard.press("Enter")
        assert page.get_attribute('button.domain[data-domain="noise"]', "aria-pressed") == "true"
        page.keyboard.press("/")
        page.keyboard.type("salad")
        rows = page.locator("#rules tr.rule")
        assert rows.count() == 1 and rows.first.get_attribute("data-reason") == "garbage:word_salad"
        rows.first.focus()
        page.keyboard.press("Enter")
        assert "garbage:word_salad in noise" in page.inner_text("#detail h2")
        assert page.locator("#cluster-table tbody tr").count() >= 5
        # bad input: the 5 MB document's domain and a domain without drops still render
        page.goto(pages["small"].as_uri())
        page.click('button.domain[data-domain="legal"]')
        assert page.locator("#no-drops").count() == 1 and page.locator("#rules tr.rule").count() >= 5
        page.click('button.domain[data-domain="huge"]')
        page.click('#rules tr.rule[data-step="filters"][data-reason="garbage:not_words"]')
        meta = page.inner_text("#near .sample .meta")
        assert "characters (first 1,000 shown)" in meta and int(meta.split(" · ")[1].split()[0].replace(",", "")) > 4_900_000
        browser.close()
    assert requests == [pages["demo"].as_uri(), pages["small"].as_uri()] and not errors


# ------------------------------------------------------------------------------------- bad input
def test_big_document_and_domain_without_drops(small):
    insp = json.loads((small / "inspect.json").read_text())
    assert (small / "inspect.json").stat().st_size < 500_000
    assert not any(c["dropped"] for s in insp["counts"].values() for c in [s.get("legal", {"dropped": {}})])
    huge = [x for by in insp["near"]["filters"]["huge"].values() for x in by]
    assert huge and all(x["chars"] > 4_900_000 and x["cut"] and len(x["text"]) <= 1000 for x in huge)


def test_older_failed_and_broken_runs_render_what_is_there(small, tmp_path):
    older = tmp_path / "older"
    shutil.copytree(small, older)
    (older / "inspect.json").unlink()
    data = load_run(older)
    assert "inspect.json is missing" in data["notes"][0]["text"] and not data["has_inspect"]
    assert data["counts"]["filters"]["news"]["dropped"] == {"garbage:not_words": 3}
    assert "<html" in render_page(data)
    stopped = tmp_path / "stopped"
    shutil.copytree(small, stopped)
    (stopped / "inspect.json").unlink()
    (stopped / "stats.json").unlink()
    shutil.rmtree(stopped / "work" / "b", ignore_errors=True)
    data = load_run(stopped)
    text = " ".join(n["text"] for n in data["notes"])
    assert "stats.json is missing" in text and "did not finish" in text and "texts are not shown" in text
    assert data["counts"]["filters"]["news"]["dropped"] == {"garbage:not_words": 3} and not _texts(data)
    assert data["hist"]["filters"]["legal"]["dict_share"]["counts"]
    broken = tmp_path / "broken"
    shutil.copytree(small, broken)
    (broken / "inspect.json").write_text('{"inspect_version": 1, "steps": [')
    data = load_run(broken)
    assert "inspect.json is unreadable" in data["notes"][0]["text"] and data["totals"]
    assert main(["inspect", "--run", str(tmp_path / "nowhere")]) == 2


# --------------------------------------------------------------------------------- exact merging
def test_states_merge_to_the_same_whatever_the_split():
    from datatrove.data import Document

    docs = [Document(id=f"d{i}", text="word " * (i % 37), metadata={"domain": "ab"[i % 2], "n": float(i % 37)})
            for i in range(300)]
    cfg = InspectConfig(samples_per_rule=4, near_misses_per_rule=3)

    def states(chunks: int) -> dict:
        out = []
        for k in range(chunks):
            col = Collector(cfg)
            step = ThresholdFilter(column="n", min_value=10.0, step_name="min_n")
            list(run_steps([step], [Document(id=d.id, text=d.text, metadata=dict(d.metadata))
                                    for d in docs[k::chunks]], observer=col))
            out.append(col.state())
        return merge_states(out, cfg)

    one, three = states(1), states(3)
    assert one == three
    assert sum(one["counts"]["min_n"]["a"]["dropped"].values()) == 150 - sum(1 for i in range(0, 300, 2) if i % 37 >= 10)
    margins = [-r[0] for r in one["near"][0][3]]
    assert len(margins) == 3 and margins == sorted(margins) and margins[0] >= 0  # the kept ones nearest the threshold


# ------------------------------------------------------------------------------ labels and scores
def test_export_and_labelled_precision_recall(demo, tmp_path):
    _, out, _ = demo
    insp = json.loads((out / "inspect.json").read_text())
    n = export_samples(insp, tmp_path / "samples.parquet")
    t = pq.read_table(tmp_path / "samples.parquet").to_pylist()
    assert n == len(t) and {r["kind"] for r in t} == {"dropped", "near_miss"}
    # a labeller says: word salad is right in the noise domain only; one near-miss should have gone
    salad = [r for r in t if r["rule"] == "garbage:word_salad"]
    for r in t:
        if r["rule"] == "garbage:word_salad":
            r["should_drop"] = r["domain"] == "noise" if r["kind"] == "dropped" else False
    near = [r for r in salad if r["kind"] == "near_miss"]
    near[0]["should_drop"] = True
    pq.write_table(pa.Table.from_pylist(t), tmp_path / "labelled.parquet")
    scores = score_labels(tmp_path / "labelled.parquet", insp)
    row = next(r for r in scores["rules"] if r["rule"] == "garbage:word_salad")
    counts = {d: c["dropped"].get("garbage:word_salad", 0) for d, c in insp["counts"]["filters"].items()}
    labelled = {r["domain"] for r in salad if r["kind"] == "dropped"}
    assert row["precision"] == round(counts["noise"] / sum(counts[d] for d in labelled), 4) and row["precision"] < 1
    tp = sum(1 for r in salad if r["kind"] == "dropped" and r["domain"] == "noise")
    assert row["recall_in_sample"] == round(tp / (tp + 1), 4) and row["labelled_near"] == len(near)
    rc = main(["inspect", "--run", str(out), "--output", str(tmp_path / "v.html"), "--labelled",
               str(tmp_path / "labelled.parquet"), "--scores", str(tmp_path / "s.json")])
    assert rc == 0 and json.loads((tmp_path / "s.json").read_text()) == scores
    assert '"recall_in_sample"' in (tmp_path / "v.html").read_text()
