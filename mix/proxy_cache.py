"""The cache of proxy results: keys (pools, mixture, config, seed, code, numerics) and atomic writes.

A finished proxy's result is ``cache_dir/<kind>-<key>.json`` and is never retrained; the key changes
whenever anything that decides the result's bits changes (docs/reproducibility.md).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from mix.proxy_config import PLACEMENT_FIELDS, ProxyConfig, resolve_device


def pools_fingerprint(pools_dir: str | Path) -> str:
    """Hash of ``pools.json`` (tokenizer hash, token counts): proxies are keyed by it."""
    return hashlib.sha256((Path(pools_dir) / "pools.json").read_bytes()).hexdigest()[:16]


def proxy_key(pools_fp: str, weights: Sequence[float], cfg: ProxyConfig, seed: int, tag: str = "") -> str:
    """Cache key: pools, weights, the config fields that change results, seed, tag, the code that
    computes a proxy and what governs its numbers (:func:`numerics_key`), and the device kind when it
    is not the CPU (GPU runs compute in bf16). So a cache folder holds only results that the current
    code and environment would compute again: the same inputs give the same set of files."""
    c = {k: v for k, v in asdict(cfg).items() if k not in PLACEMENT_FIELDS}
    payload = {"pools": pools_fp, "w": [round(float(x), 10) for x in weights], "cfg": c, "seed": seed, "tag": tag,
               "code": code_fingerprint(), "numerics": numerics_key()}
    dev = resolve_device(cfg.device)
    if dev != "cpu":
        payload["device"] = dev
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:20]


# the modules whose code computes a proxy's result (a change re-keys every cached run)
_PROXY_CODE = ("proxytrain", "mix/proxy.py", "mix/proxy_config.py", "mix/proxy_sources.py", "mix/doremi.py",
               "mix/dro.py", "corpusmix/pools.py", "corpusmix/mixture.py")


@functools.cache
def code_fingerprint() -> str:
    """Hash of the source of the modules that compute a proxy's result (:data:`_PROXY_CODE`)."""
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for entry in _PROXY_CODE:
        path = root / entry
        for f in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
            h.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def numerics_key() -> dict[str, Any]:
    """What decides a CPU proxy's bits besides its inputs: the numerics mode and level, MKL's code path
    (``MKL_CBWR``: its strict mode gives other bits than the non-strict one), the fused kernels' build
    and the torch version (``corpusmix.numerics``). The other libraries' caps are left out: at the
    reference they give the same bits on every CPU, so two machines share cache entries."""
    import torch

    from corpusmix import numerics
    from proxytrain import cpu_kernels

    cpu_kernels.lib()
    st = numerics.state()
    return {"torch": torch.__version__, **{k: st.get(k) for k in ("mode", "at_reference", "aten", "kernels")},
            "mkl_cbwr": (st.get("settings") or {}).get("MKL_CBWR")}


def write_json(path: Path, obj: Any) -> None:
    """Atomic JSON write (a killed writer never leaves a half file under the final name)."""
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(obj, indent=1, sort_keys=True))
    os.replace(tmp, path)

