"""Mixture-search presets: proxy size and search length in one name (``mix.preset``).

The ONLY place presets are defined. Precedence, lowest first (``resolve``):

1. the config dataclass defaults (``ProxyConfig``, ``DoReMiConfig``, ``RegMixConfig``);
2. the preset's values for that section;
3. explicit keys in ``params.yaml`` ``mix.proxy`` / ``mix.doremi`` / ``mix.regmix``;
4. command-line flags.

So ``dvc exp run -S mix.regmix.num_proxies=32`` changes M whatever the preset.

tiny: the ~1M-non-embedding-parameter ``tiny`` model (d=128, 5 layers), seq 128, batch 8, 150
steps (~150k tokens) per proxy, lr 1e-3 (3e-3 gave about twice the seed-to-seed spread of the demo
ablation), 24 RegMix proxies; sized for ~10 minutes per method on 2 idle CPU cores (measured
figures in BENCHMARKS.md). micro: a 2-layer d=64 model (~0.1M parameters), seq 64, batch 16, 120
steps (~120k tokens), lr 1e-3 (5e-3 gave 3-5x the seed-to-seed loss spread), 48 RegMix proxies: for
tests, smoke runs and the replication on small pools. Both run fp32 throughout: ``head_dtype: bf16``
(``mix.proxy.head_dtype``) halves a micro step on CPUs with native bf16 (avx512_bf16 / AMX) but is
slower than fp32 on the others, and under reproducible numerics (``corpusmix.numerics``) bf16 is
emulated on every CPU so that all give the same bits (docs/reproducibility.md).
"""

from __future__ import annotations

import argparse
from typing import Any, TypeVar

from corpusmix.config import ConfigError, config_from

T = TypeVar("T")

PRESETS: dict[str, dict[str, dict[str, Any]]] = {
    "tiny": {
        "proxy": {"model_preset": "tiny", "steps": 150, "batch_size": 8, "seq_len": 128, "lr": 1e-3,
                  "warmup": 15, "val_batches": 4},
        "doremi": {"steps": 150},
        "regmix": {"num_proxies": 24},
    },
    "micro": {
        "proxy": {"model_preset": "tiny", "d_model": 64, "n_layers": 2, "n_heads": 4, "steps": 120,
                  "batch_size": 16, "seq_len": 64, "lr": 1e-3, "warmup": 12, "val_batches": 2},
        "doremi": {"steps": 120},
        "regmix": {"num_proxies": 48},
    },
}
DEFAULT_PRESET = "tiny"


def preset_values(preset: str, section: str) -> dict[str, Any]:
    """The preset's values for one section (``proxy``, ``doremi`` or ``regmix``)."""
    if preset not in PRESETS:
        raise ConfigError(f"unknown mix preset {preset!r}; choose one of {sorted(PRESETS)} (mix.preset), "
                          "or set the values under mix.proxy / mix.doremi / mix.regmix in params.yaml")
    return dict(PRESETS[preset].get(section, {}))


def resolve(section: str, cls: type[T], params: dict[str, Any], preset: str,
            args: argparse.Namespace | None, prefix: str = "") -> T:
    """Preset values, then explicit ``mix.<section>`` keys of params, then CLI flags (module docstring)."""
    if "presets" in params:
        raise ConfigError("mix.presets in params.yaml is no longer read: presets are defined in mix/presets.py; "
                          "put explicit values under mix.proxy / mix.doremi / mix.regmix (they win over the preset)")
    explicit = dict(params.get(section) or {})
    data = {**preset_values(preset, section), **_variant_values(section, explicit, args, prefix), **explicit}
    return config_from(cls, params=data, args=args, prefix=prefix, where=f"mix.{section} / preset {preset}")


def _variant_values(section: str, explicit: dict[str, Any], args: argparse.Namespace | None, prefix: str
                    ) -> dict[str, Any]:
    """A named variant's values (``mix.doremi.variant``, or ``--variant``): between the preset and
    the explicit keys."""
    if section != "doremi":
        return {}
    from mix.doremi import VARIANTS

    name = getattr(args, prefix + "variant", None) if args is not None else None
    name = name or explicit.get("variant", "paper")
    if name not in VARIANTS:
        raise ConfigError(f"unknown mix.doremi.variant {name!r}; choose one of {sorted(VARIANTS)}")
    return dict(VARIANTS[name])
