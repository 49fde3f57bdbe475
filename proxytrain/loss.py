"""The training objective: per-token cross-entropy with document masking, per-domain sums, evaluation.

Packed rows hold several documents; position t predicts t+1 only inside one document (see
``target_mask``), so no loss crosses a document boundary or reads padding.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from proxytrain.ops import cross_entropy


def target_mask(segment_ids: torch.Tensor) -> torch.Tensor:
    """[B, S-1] bool: position t predicts t+1 only when both lie in the same (non-pad) document."""
    return (segment_ids[:, 1:] == segment_ids[:, :-1]) & (segment_ids[:, :-1] >= 0)


def per_token_loss(logits: torch.Tensor, tokens: torch.Tensor,
                   segment_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-token cross-entropy [B, S-1] (fp32, zero where masked) and the target mask [B, S-1]."""
    mask = target_mask(segment_ids)
    b, s, v = logits.shape
    # targets aligned with every position (the last one ignored), so the loss reads the logits in
    # place: slicing logits[:, :-1] would copy [B, S, V] forward and zero-fill it again backward
    targets = torch.full_like(tokens, -1)
    targets[:, :-1] = tokens[:, 1:].masked_fill(~mask, -1)  # ignored targets give exactly 0 loss
    loss = cross_entropy(logits.reshape(b * s, v), targets.reshape(-1)).view(b, s)[:, :-1]
    return loss, mask


def domain_sums(loss: torch.Tensor, mask: torch.Tensor, domain_id: torch.Tensor,
                n_domains: int) -> torch.Tensor:
    """[2, n_domains] fp64: per-domain loss sum and target-token count (rows are one domain each)."""
    out = torch.zeros(2, n_domains, dtype=torch.float64, device=loss.device)
    out[0].index_add_(0, domain_id, loss.detach().double().sum(1))
    out[1].index_add_(0, domain_id, mask.double().sum(1))
    return out


@torch.no_grad()
def evaluate(model: nn.Module, batches: Iterable[dict[str, torch.Tensor]],
             domains: list[str] | None = None, *, reduce: Any = None) -> dict[str, float]:
    """Mean loss per target token, per domain (and ``"all"``), over ``batches`` (dicts of [B, S]).

    ``reduce`` is an optional callable that sums a tensor over ranks in place (data parallel).
    """
    was_training = model.training
    model.eval()
    sums = None
    device = next(model.parameters()).device
    for batch in batches:
        tokens = batch["tokens"].to(device)
        seg = batch["segment_ids"].to(device)
        dom = batch["domain_id"].to(device)
        n = len(domains) if domains else int(dom.max()) + 1
        loss, mask = per_token_loss(model(tokens, seg), tokens, seg)
        part = domain_sums(loss, mask, dom, n)
        if sums is None:
            sums = part
        else:
            if part.shape[1] > sums.shape[1]:
                sums = F.pad(sums, (0, part.shape[1] - sums.shape[1]))
            sums[:, : part.shape[1]] += part
    model.train(was_training)
    if sums is None:
        return {}
    if reduce is not None:
        reduce(sums)
    names = domains or [str(i) for i in range(sums.shape[1])]
    out = {names[i]: float(sums[0, i] / sums[1, i]) for i in range(sums.shape[1]) if sums[1, i] > 0}
    out["all"] = float(sums[0].sum() / sums[1].sum().clamp_min(1))
    return out
