"""``form: auto``: the design checks of every form on the same runs, and the form with the lower score."""

from __future__ import annotations

import math
from dataclasses import asdict
from typing import Any

from proxytrain.scaling_fit.checks import design_checks
from proxytrain.scaling_fit.config import FORMS, FitConfig, FitError
from proxytrain.scaling_fit.per_d import PER_D_SCOPE

SCORE_TEXT = ("RMS of the signed % errors of every left-out point over the same folds for every form (each size "
              "left out in turn, and the largest token count left out); lower wins, a form with a fold it could "
              "not fit loses")
# auto chooses a planner for any (N, D): per_d predicts only at a swept D and has no leave-largest-D fold, so it
# is scored (its size folds, reported) but not eligible
ELIGIBLE = ("hoffmann", "kaplan")


def compare_forms(runs: list[dict[str, Any]], cfg: FitConfig | None = None) -> dict[str, Any]:
    """Design checks of every law form on the same runs and the form ``auto`` picks: the lower ``score`` of
    the forms that predict at any (N, D) (``ELIGIBLE``), all scored on the same folds; per_d's size folds are
    reported next to them (``PER_D_SCOPE``)."""
    cfg = cfg or FitConfig()
    checks = {f: design_checks(runs, FitConfig(**{**asdict(cfg), "form": f})) for f in FORMS}
    scores = {f: (math.inf if c["score"] is None else c["score"]) for f, c in checks.items()}
    if all(math.isinf(scores[f]) for f in ELIGIBLE):
        raise FitError("form auto: no design-check fold could be fitted for hoffmann or kaplan (each fold needs "
                       ">= 3 sizes and 3 token counts left); choose scale.fit.form hoffmann, kaplan or per_d")
    chosen = min(ELIGIBLE, key=lambda f: (scores[f], ELIGIBLE.index(f)))  # a tie keeps hoffmann
    return {"chosen": chosen, "score": SCORE_TEXT, "scores": {f: checks[f]["score"] for f in FORMS},
            "eligible": list(ELIGIBLE), "per_d_scope": PER_D_SCOPE, "checks": checks}
