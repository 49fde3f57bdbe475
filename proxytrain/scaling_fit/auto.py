"""``form: auto``: the design checks of every form on the same runs, and the form with the lower score."""

from __future__ import annotations

import math
from dataclasses import asdict
from typing import Any

from proxytrain.scaling_fit.checks import design_checks
from proxytrain.scaling_fit.config import FORMS, FitConfig, FitError
from proxytrain.scaling_fit.per_d import PER_D_SCOPE

SCORE_TEXT = ("RMS of the signed % errors of every left-out point over all folds (each size left out in turn, "
              "and the largest token count left out); lower wins, a form with a fold it could not fit loses")


def compare_forms(runs: list[dict[str, Any]], cfg: FitConfig | None = None) -> dict[str, Any]:
    """Design checks of every law form on the same runs and the form ``auto`` picks (lower ``score``; per_d's
    score has no leave-largest-D fold: ``PER_D_SCOPE``)."""
    cfg = cfg or FitConfig()
    checks = {f: design_checks(runs, FitConfig(**{**asdict(cfg), "form": f})) for f in FORMS}
    scores = {f: (math.inf if c["score"] is None else c["score"]) for f, c in checks.items()}
    if all(math.isinf(v) for v in scores.values()):
        raise FitError("form auto: no design-check fold could be fitted for any form (each fold needs >= 3 "
                       "sizes and 3 token counts left); choose scale.fit.form hoffmann, kaplan or per_d")
    chosen = min(FORMS, key=lambda f: (scores[f], FORMS.index(f)))  # a tie keeps hoffmann, then kaplan
    return {"chosen": chosen, "score": SCORE_TEXT, "scores": {f: checks[f]["score"] for f in FORMS},
            "per_d_scope": PER_D_SCOPE, "checks": checks}
