"""Bad input to the PII step: a long minified JSON line, a private key cut in two, base64 blobs,
a long shell history. Every case finishes, its secrets are redacted and counted, and no secret
value reaches a log line, the stats or the drop records. (Full sizes: bench/bench_pii_bad_input.py.)"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate.steps.pii import PIIConfig, PIIRedactor

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from bench_pii_bad_input import (  # noqa: E402
    AWS_SECRET,
    PASSWORD,
    TOKEN,
    base64_blobs,
    history,
    minified_json,
    pem_halves,
)


@pytest.fixture(scope="module")
def red() -> PIIRedactor:
    return PIIRedactor(PIIConfig())


def redacted(red: PIIRedactor, text: str) -> tuple[str, dict[str, int]]:
    from curate.steps.pii import redact

    spans = red.detect(text)
    counts: dict[str, int] = {}
    for _, _, t in spans:
        counts[t] = counts.get(t, 0) + 1
    return redact(text, spans), counts


def test_minified_json_line(red: PIIRedactor) -> None:
    text = minified_json(0.7)
    assert "\n" not in text and len(text) > 600_000
    out, counts = redacted(red, text)
    for value in (PASSWORD, TOKEN, AWS_SECRET):
        assert value not in out
    # dates, epoch timestamps, versions, SKUs and quantities are left alone
    assert set(counts) <= {"SECRET_PASSWORD", "SECRET_GITHUB_TOKEN", "SECRET_AWS_KEY", "SECRET_TOKEN"}, counts


def test_private_key_cut_in_two(red: PIIRedactor) -> None:
    first, second = pem_halves()
    for half in (first, second):
        out, counts = redacted(red, half)
        body = [ln for ln in half.splitlines() if len(ln) == 64]
        assert body and not any(ln in out for ln in body)
        assert counts == {"SECRET_PRIVATE_KEY": 1}
    assert redacted(red, second)[0].endswith("<SECRET_PRIVATE_KEY>\nend of dump")


def test_base64_blobs_are_not_pii(red: PIIRedactor) -> None:
    out, counts = redacted(red, base64_blobs(0.3))
    assert counts == {}, counts


def test_long_history(red: PIIRedactor) -> None:
    text = history(40_000)
    out, counts = redacted(red, text)
    assert PASSWORD not in out and TOKEN not in out
    assert counts.get("PHONE_NUMBER", 0) == 0 and counts.get("SECRET_PASSWORD") == 1, counts
    assert out.count(": 16") == text.count(": 16")  # every epoch timestamp kept


def test_no_secret_in_logs_stats_or_drops(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from corpusmix.cli import main
    from corpusmix.logging import JsonlFormatter

    records: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda r: records.append(JsonlFormatter().format(r))  # type: ignore[method-assign]
    logging.getLogger("corpusmix").addHandler(handler)
    texts = [minified_json(0.2), *pem_halves(), history(3000), None]
    pq.write_table(pa.table({"id": [f"d{i}" for i in range(len(texts))], "text": texts,
                             "domain": ["code"] * len(texts)}), tmp_path / "in.parquet")
    try:
        rc = main(["curate", "pii", "--input", str(tmp_path / "in.parquet"), "--output",
                   str(tmp_path / "out.parquet"), "--params", str(tmp_path / "none.yaml")])
    finally:
        logging.getLogger("corpusmix").removeHandler(handler)
    assert rc == 0
    said = "\n".join(records) + capsys.readouterr().out
    said += "".join(p.read_bytes().decode(errors="replace") for p in tmp_path.glob("out.parquet*")
                    if p.suffix != ".parquet" or p.name.endswith("drops.parquet"))
    for value in (PASSWORD, TOKEN, AWS_SECRET, pem_halves()[0].splitlines()[3]):
        assert value not in said
    out = pq.read_table(tmp_path / "out.parquet")
    counts = [json.loads(c) for c in out.column("pii_counts").to_pylist()]
    assert counts[1] == {"SECRET_PRIVATE_KEY": 1} and counts[2] == {"SECRET_PRIVATE_KEY": 1}
    assert out.num_rows == 4  # the row without text is a counted drop
    drops = pq.read_table(tmp_path / "out.parquet.drops.parquet").to_pylist()
    assert [d["reason"] for d in drops] == ["missing_text"]
