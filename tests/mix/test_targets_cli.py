"""Target and garbage domains: command-line flags win over params.yaml, as for every other setting."""

from __future__ import annotations

import argparse

import pytest

from corpusmix.config import ConfigError
from mix.cli import targets_for

DOMAINS = ["a", "b", "c", "junk"]


def _ns(**kw) -> argparse.Namespace:
    return argparse.Namespace(**{"target_domains": None, "garbage_domains": None, **kw})


def test_flags_override_params():
    params = {"target_domains": ["x", "y"], "garbage_domains": ["junk"]}
    # params name domains these pools do not have; the flag replaces them
    assert targets_for(params, DOMAINS, _ns(target_domains="a,b")) == ["a", "b"]
    assert targets_for({"garbage_domains": ["junk"]}, DOMAINS, _ns()) == ["a", "b", "c"]
    assert targets_for({"garbage_domains": ["junk"]}, DOMAINS, _ns(garbage_domains="c")) == ["a", "b", "junk"]
    # the older mix.regmix.target_domains is read when mix.target_domains is empty
    assert targets_for({"regmix": {"target_domains": ["c"]}}, DOMAINS, None) == ["c"]
    with pytest.raises(ConfigError, match="not in the pools"):
        targets_for(params, DOMAINS, _ns())


def test_every_domain_garbage_is_a_clear_error():
    with pytest.raises(ConfigError, match="every domain"):
        targets_for({}, DOMAINS, _ns(garbage_domains="a,b,c,junk"))


def test_a_target_that_is_also_garbage_is_a_clear_error():
    with pytest.raises(ConfigError, match="both targets and garbage"):
        targets_for({"target_domains": ["a", "junk"], "garbage_domains": ["junk"]}, DOMAINS, None)
