"""Mixture-search presets (mix/presets.py): the preset gives defaults, explicit params keys win,
flags win over both; the demo's params.yaml resolves to the settings it has always run with."""

from __future__ import annotations

import argparse

import pytest

from corpusmix.config import ConfigError, add_config_args, load_params
from corpusmix.paths import ROOT
from mix.doremi import DoReMiConfig
from mix.presets import PRESETS, resolve
from mix.proxy import ProxyConfig
from mix.regmix import RegMixConfig


def test_preset_gives_defaults_when_params_say_nothing() -> None:
    cfg = resolve("regmix", RegMixConfig, {}, "micro", None)
    assert cfg.num_proxies == PRESETS["micro"]["regmix"]["num_proxies"] == 48
    proxy = resolve("proxy", ProxyConfig, {}, "micro", None)
    assert (proxy.d_model, proxy.n_layers, proxy.steps) == (64, 2, 120)


def test_explicit_params_key_wins_over_the_preset() -> None:
    params = {"regmix": {"num_proxies": 32}, "doremi": {"steps": 7}, "proxy": {"lr": 0.01}}
    assert resolve("regmix", RegMixConfig, params, "tiny", None).num_proxies == 32
    assert resolve("doremi", DoReMiConfig, params, "tiny", None).steps == 7
    proxy = resolve("proxy", ProxyConfig, params, "tiny", None)
    assert proxy.lr == 0.01 and proxy.steps == PRESETS["tiny"]["proxy"]["steps"]  # the rest from the preset


def test_command_line_flag_wins_over_params_and_preset() -> None:
    p = argparse.ArgumentParser()
    add_config_args(p, RegMixConfig)
    args = p.parse_args(["--num-proxies", "5"])
    assert resolve("regmix", RegMixConfig, {"regmix": {"num_proxies": 32}}, "tiny", args).num_proxies == 5


def test_unknown_preset_and_old_presets_section_are_clear_errors() -> None:
    with pytest.raises(ConfigError, match="unknown mix preset 'huge'"):
        resolve("proxy", ProxyConfig, {}, "huge", None)
    with pytest.raises(ConfigError, match="mix.presets in params.yaml is no longer read"):
        resolve("regmix", RegMixConfig, {"presets": {"tiny": {"regmix": {"num_proxies": 3}}}}, "tiny", None)


def test_demo_params_resolve_to_the_demo_settings() -> None:
    # the demo's settings: the micro preset, with RegMix at M = 96 (the preset's own is 48)
    params = load_params(ROOT / "params.yaml", "mix")
    preset = params["preset"]
    assert preset == "micro"
    assert resolve("regmix", RegMixConfig, params, preset, None).num_proxies == 96
    assert resolve("doremi", DoReMiConfig, params, preset, None).steps == 120
    proxy = resolve("proxy", ProxyConfig, params, preset, None)
    for key, value in PRESETS["micro"]["proxy"].items():
        assert getattr(proxy, key) == value


def test_doremi_variant_sits_between_the_preset_and_explicit_keys() -> None:
    paper = resolve("doremi", DoReMiConfig, {}, "micro", None)
    assert (paper.variant, paper.update, paper.excess_source, paper.excess_clip, paper.average_from) == \
        ("paper", "eg", "batch", "token", 0.0)
    tuned = resolve("doremi", DoReMiConfig, {"doremi": {"variant": "tuned", "group_size": 2}}, "micro", None)
    assert (tuned.update, tuned.excess_source, tuned.average_from) == ("eg_softmax", "probe", 0.5)
    assert tuned.group_size == 2  # the explicit key wins over the variant's 4
    p = argparse.ArgumentParser()
    add_config_args(p, DoReMiConfig)
    flag = resolve("doremi", DoReMiConfig, {"doremi": {"variant": "paper"}}, "micro", p.parse_args(["--variant", "tuned"]))
    assert flag.variant == "tuned" and flag.update == "eg_softmax"
    with pytest.raises(ConfigError, match="unknown mix.doremi.variant"):
        resolve("doremi", DoReMiConfig, {"doremi": {"variant": "fast"}}, "micro", None)
