"""Atomic, resumable training checkpoints with ``torch.distributed.checkpoint`` (DCP).

Layout under the run's checkpoint folder::

    step-<N>/
        __0_0.distcp ...       DCP shards: model + optimizer tensors only (each rank writes its own)
        .metadata              DCP metadata
        extra-rank<r>.json     per rank: step, data cursor, RNG states, scheduler and guard state
        COMPLETE               written last: step, world size, every file with its size

Atomicity: everything is written into ``.tmp-step-<N>/``; after all ranks finished, rank 0 writes
``COMPLETE`` and renames the folder to ``step-<N>`` (one ``rename``). Discovery only considers
``step-*`` folders with a ``COMPLETE`` marker, so a run killed mid-save is never resumed from a
partial checkpoint. A checkpoint whose files do not match the sizes recorded in ``COMPLETE`` is
reported as corrupt instead of being loaded. A checkpoint of another number of ranks is loaded
when the caller allows it (``any_world``): DCP reshards model and optimizer, the JSON state is rank 0's.

Loading never unpickles arbitrary objects: only tensors are stored through DCP (read with
``weights_only``), DCP's own metadata is read with an unpickler restricted to DCP's metadata classes,
and everything else is JSON.
"""

from __future__ import annotations

import base64
import io
import json
import os
import pickle
import re
import shutil
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch import nn
from torch.distributed.checkpoint.api import CheckpointException
from torch.distributed.checkpoint.state_dict import (
    get_model_state_dict,
    get_optimizer_state_dict,
    set_model_state_dict,
    set_optimizer_state_dict,
)

from corpusmix.holds import hold

STEP_RE = re.compile(r"^step-(\d+)$")
MARKER = "COMPLETE"


class CheckpointError(RuntimeError):
    """A checkpoint is missing, incomplete, corrupt or from an incompatible run."""


def _rank_world() -> tuple[int, int]:
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def _barrier() -> None:
    if dist.is_available() and dist.is_initialized():
        dist.barrier()


def _write_json(path: Path, data: Any) -> None:
    with open(path, "w") as fh:
        json.dump(data, fh)
        fh.flush()
        os.fsync(fh.fileno())


# --------------------------------------------------------------------------- RNG state as JSON


def rng_state(device: torch.device) -> dict[str, str]:
    out = {"cpu": base64.b64encode(torch.get_rng_state().numpy().tobytes()).decode()}
    if device.type == "cuda":
        out["cuda"] = base64.b64encode(torch.cuda.get_rng_state(device).numpy().tobytes()).decode()
    return out


def set_rng_state(state: dict[str, str], device: torch.device) -> None:
    def _t(s: str) -> torch.Tensor:
        return torch.frombuffer(bytearray(base64.b64decode(s)), dtype=torch.uint8)

    torch.set_rng_state(_t(state["cpu"]))
    if device.type == "cuda" and "cuda" in state:
        torch.cuda.set_rng_state(_t(state["cuda"]), device)


# --------------------------------------------------------------------------- tensor-only state


def _tensor_state(model: nn.Module, optimizer: torch.optim.Optimizer) -> dict[str, Any]:
    # param_groups (lr, betas, ...) are python values: they come from the config, not the file
    osd = get_optimizer_state_dict(model, optimizer)
    return {"model": get_model_state_dict(model), "optim": osd["state"]}


class _MetadataUnpickler(pickle.Unpickler):
    """Unpickler for DCP's ``.metadata``: only DCP metadata classes and torch dtypes/sizes."""

    def find_class(self, module: str, name: str) -> Any:
        if module.startswith("torch.distributed.checkpoint") or (module, name) in {
            ("torch", "Size"), ("collections", "OrderedDict"), ("torch.serialization", "_get_layout"),
            ("builtins", "set"), ("builtins", "frozenset"), ("pathlib", "PosixPath"),
            ("pathlib", "PurePosixPath"), ("pathlib", "WindowsPath"), ("pathlib", "PureWindowsPath"),
        } or (module == "torch" and isinstance(getattr(torch, name, None), torch.dtype | torch.layout |
                                                torch.memory_format)):
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"checkpoint metadata refers to {module}.{name}: refused")


class _SafeReader(dcp.FileSystemReader):
    def read_metadata(self, *args: Any, **kwargs: Any) -> Any:
        path = Path(self.path) / ".metadata"
        with open(path, "rb") as fh:
            metadata = _MetadataUnpickler(io.BytesIO(fh.read())).load()
        if getattr(metadata, "storage_meta", None) is None:
            from torch.distributed.checkpoint.metadata import StorageMeta

            metadata.storage_meta = StorageMeta()
        metadata.storage_meta.load_id = self.load_id
        return metadata


# --------------------------------------------------------------------------- save / discover / load


class _StableWriter(dcp.FileSystemWriter):
    """DCP's file writer with the save id fixed by the step (DCP draws a random UUID): the checkpoint's
    ``.metadata`` is then the same bytes on every run of the same training (a DVC output)."""

    def __init__(self, path: str, save_id: str) -> None:
        super().__init__(path)
        self._stable_id = save_id

    def storage_meta(self):  # -> torch.distributed.checkpoint.metadata.StorageMeta | None
        meta = super().storage_meta()
        if meta is not None:
            meta.save_id = self._stable_id
        return meta


def save_checkpoint(ckpt_dir: str | Path, step: int, model: nn.Module, optimizer: torch.optim.Optimizer,
                    extra: dict[str, Any], *, keep: int = 3) -> Path:
    """Save step ``step`` atomically; ``extra`` (JSON-able, per rank) goes to ``extra-rank<r>.json``.

    Every rank must call this. Keeps the newest ``keep`` complete checkpoints (0 = keep all).
    """
    rank, world = _rank_world()
    root = Path(ckpt_dir)
    tmp, final = root / f".tmp-step-{step}", root / f"step-{step}"
    if rank == 0:
        root.mkdir(parents=True, exist_ok=True)
        if tmp.exists():
            shutil.rmtree(tmp)  # leftover of a run killed while saving this step
        tmp.mkdir()
    _barrier()
    dcp.save(_tensor_state(model, optimizer), storage_writer=_StableWriter(str(tmp), f"step-{step}"))
    _write_json(tmp / f"extra-rank{rank}.json", {"step": step, **extra})
    _barrier()
    if rank == 0:
        hold("checkpoint")  # CORPUSMIX_PHASE_HOLD: the kill test's window before the rename
        files = {p.name: p.stat().st_size for p in sorted(tmp.iterdir())}
        _write_json(tmp / MARKER, {"step": step, "world_size": world, "files": files})
        if final.exists():  # re-reaching a step after a rollback: replace the old copy
            shutil.rmtree(final)
        os.rename(tmp, final)
        fd = os.open(root, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        if keep > 0:
            for old in list_checkpoints(root)[:-keep]:
                shutil.rmtree(old, ignore_errors=True)
    _barrier()
    return final


def list_checkpoints(ckpt_dir: str | Path) -> list[Path]:
    """Complete checkpoints (``step-N`` with a ``COMPLETE`` marker), oldest first."""
    root = Path(ckpt_dir)
    if not root.is_dir():
        return []
    found = []
    for p in root.iterdir():
        m = STEP_RE.match(p.name)
        if m and p.is_dir() and (p / MARKER).is_file():
            found.append((int(m.group(1)), p))
    return [p for _, p in sorted(found)]


def latest_checkpoint(ckpt_dir: str | Path) -> Path | None:
    found = list_checkpoints(ckpt_dir)
    return found[-1] if found else None


def verify_checkpoint(path: str | Path) -> dict[str, Any]:
    """Check the marker and every recorded file size; returns the marker's content."""
    path = Path(path)
    if not path.is_dir():
        raise CheckpointError(f"checkpoint {path} does not exist; pass an existing step-<N> folder "
                              "or omit it to resume from the latest complete one")
    marker = path / MARKER
    if not marker.is_file():
        raise CheckpointError(f"checkpoint {path} is incomplete (no {MARKER} marker): it was not "
                              "finished; delete it or resume from an older step")
    try:
        info = json.loads(marker.read_text())
        files = info["files"]
    except (ValueError, KeyError) as exc:
        raise CheckpointError(f"checkpoint {path}: unreadable {MARKER} marker ({exc}); delete the folder") from exc
    for name, size in files.items():
        f = path / name
        if not f.is_file() or f.stat().st_size != size:
            got = f.stat().st_size if f.is_file() else "missing"
            raise CheckpointError(f"checkpoint {path} is corrupt: {name} has size {got}, expected {size}; "
                                  "delete this folder to resume from an older checkpoint")
    return info


def load_checkpoint(path: str | Path, model: nn.Module, optimizer: torch.optim.Optimizer, *,
                    any_world: bool = False) -> dict[str, Any]:
    """Load model + optimizer in place; returns this rank's ``extra`` dict (with ``step``).

    ``any_world``: a checkpoint of another number of ranks is loaded too (DCP reshards the tensors)
    and every rank gets rank 0's ``extra`` with ``resharded_from`` (the old number of ranks) added;
    without it, such a checkpoint is refused.
    """
    path = Path(path)
    info = verify_checkpoint(path)
    rank, world = _rank_world()
    old_world = info.get("world_size")
    if old_world != world and not any_world:
        raise CheckpointError(f"checkpoint {path} was written by {old_world} ranks, this run has {world}, and this "
                              f"run's data source or objective keeps a per-rank state; resume with --nproc {old_world}")
    state = _tensor_state(model, optimizer)
    try:
        dcp.load(state, storage_reader=_SafeReader(str(path)))
    except (Exception, CheckpointException) as exc:  # DCP's exception is a BaseException
        raise CheckpointError(f"checkpoint {path} could not be loaded ({type(exc).__name__}: "
                              f"{str(exc).splitlines()[0] if str(exc) else ''}); it is corrupt or from a "
                              "different model shape") from exc
    set_model_state_dict(model, state["model"])
    osd = get_optimizer_state_dict(model, optimizer)
    set_optimizer_state_dict(model, optimizer, {"state": state["optim"], "param_groups": osd["param_groups"]})
    src = rank if old_world == world else 0
    try:
        extra = json.loads((path / f"extra-rank{src}.json").read_text())
    except (OSError, ValueError) as exc:
        raise CheckpointError(f"checkpoint {path}: extra-rank{src}.json unreadable ({exc})") from exc
    if old_world != world:
        extra["resharded_from"] = old_world
    return extra
