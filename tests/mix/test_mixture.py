"""The mixture.json contract: write-then-read, natural/uniform mixtures, and every bad-input error."""

from __future__ import annotations

import json

import pytest

from corpusmix.mixture import (
    MixtureError,
    load_mixture,
    natural_mixture,
    save_mixture,
    uniform_mixture,
    validate_mixture,
)


def test_save_then_load_roundtrip(tmp_path):
    path = tmp_path / "sub" / "mixture.json"
    save_mixture(path, {"code": 0.25, "legal": 0.75}, method="doremi", params={"eta": 1.0},
                 provenance={"run": "r1"})
    data = json.loads(path.read_text())
    assert data == {"weights": {"code": 0.25, "legal": 0.75}, "method": "doremi", "params": {"eta": 1.0},
                    "provenance": {"run": "r1"}}
    mix = load_mixture(path, domains={"code": 10, "legal": 5, "news": 0})
    assert mix.weights == {"code": 0.25, "legal": 0.75}
    assert mix.method == "doremi" and mix.params == {"eta": 1.0}
    assert not list(tmp_path.glob("sub/*.tmp"))  # atomic write leaves no temp file


def test_natural_and_uniform():
    w = natural_mixture({"a": 300, "b": 100, "c": 0})
    assert w == pytest.approx({"a": 0.75, "b": 0.25, "c": 0.0})
    w2 = natural_mixture({"version": 1, "domains": {"a": {"tokens": 1, "docs": 1}, "b": {"tokens": 3, "docs": 2}}})
    assert w2 == pytest.approx({"a": 0.25, "b": 0.75})
    u = uniform_mixture(["c", "a", "b", "a"])
    assert list(u) == ["a", "b", "c"] and sum(u.values()) == pytest.approx(1.0)
    assert validate_mixture(u, ["a", "b", "c"]) == u


def test_natural_mixture_reads_pools_folder(tmp_path):
    (tmp_path / "pools.json").write_text(json.dumps({"domains": {"x": {"tokens": 2, "docs": 1},
                                                                 "y": {"tokens": 6, "docs": 1}}}))
    assert natural_mixture(tmp_path) == pytest.approx({"x": 0.25, "y": 0.75})


@pytest.mark.parametrize("weights, domains, match", [
    ({"a": 0.5, "b": 0.4}, None, "sum to 0.9"),
    ({"a": 1.2, "b": -0.2}, None, "must be finite and >= 0"),
    ({"a": float("nan"), "b": 1.0}, None, "finite"),
    ({"a": "0.5", "b": 0.5}, None, "must be numbers"),
    ({}, None, "no weights"),
    ({"a": 0.5, "zzz": 0.5}, ["a", "b"], r"unknown domain\(s\) \['zzz'\]"),
    ({"a": 0.5, "b": 0.5}, {"a": 10, "b": 0}, r"empty domain\(s\) \['b'\]"),
])
def test_bad_mixtures_raise_clear_errors(weights, domains, match):
    with pytest.raises(MixtureError, match=match):
        validate_mixture(weights, domains)


def test_zero_weight_on_empty_domain_is_fine():
    assert validate_mixture({"a": 1.0, "b": 0.0}, {"a": 10, "b": 0}) == {"a": 1.0, "b": 0.0}


def test_sum_tolerance():
    validate_mixture({"a": 0.3333333, "b": 0.6666667})  # off by < 1e-6
    with pytest.raises(MixtureError):
        validate_mixture({"a": 0.333, "b": 0.666})


def test_load_errors(tmp_path):
    with pytest.raises(MixtureError, match="does not exist"):
        load_mixture(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(MixtureError, match="not valid JSON"):
        load_mixture(bad)
    nokey = tmp_path / "nokey.json"
    nokey.write_text(json.dumps({"a": 1.0}))
    with pytest.raises(MixtureError, match="weights"):
        load_mixture(nokey)
    unknown = tmp_path / "unknown.json"
    unknown.write_text(json.dumps({"weights": {"a": 0.5, "q": 0.5}}))
    with pytest.raises(MixtureError, match=r"unknown.json: mixture names unknown domain"):
        load_mixture(unknown, ["a"])
