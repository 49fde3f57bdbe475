"""``CORPUSMIX_PHASE_HOLD``: named pauses for the kill tests, parsed strictly, off by default."""

from __future__ import annotations

import time

import pytest

from corpusmix import holds


def test_hold_seconds_reads_only_the_named_point() -> None:
    spec = "clean-up=2, pack shard=0.25,checkpoint=x"
    assert holds.hold_seconds("clean-up", spec) == 2.0
    assert holds.hold_seconds("pack shard", spec) == 0.25
    assert holds.hold_seconds("merge", spec) == 0.0  # not named
    assert holds.hold_seconds("checkpoint", spec) == 0.0  # not a number: warned, no pause
    assert holds.hold_seconds("clean-up", "") == 0.0
    assert holds.hold_seconds("clean-up", "clean-up=-3") == 0.0


def test_hold_is_a_no_op_without_the_variable_and_pauses_with_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(holds.ENV, raising=False)
    t0 = time.perf_counter()
    holds.hold("clean-up")
    assert time.perf_counter() - t0 < 1.0  # no sleep (generous: a busy machine)
    monkeypatch.setenv(holds.ENV, "clean-up=0.2")
    t0 = time.perf_counter()
    holds.hold("clean-up")
    assert time.perf_counter() - t0 >= 0.2
