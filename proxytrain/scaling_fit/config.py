"""The fit's settings (``scale.fit``), its errors and warnings, and the limits every law form shares."""

from __future__ import annotations

from dataclasses import dataclass, field

N_FREE = 5  # E, A, B, alpha, beta (Kaplan form: E, N_c, D_c, alpha_N, alpha_D)
FORMS = ("hoffmann", "kaplan", "per_d")
# an exponent this small makes its term a constant that trades off against E: the law says nothing
MIN_EXPONENT = 0.01


class FitError(ValueError):
    """The runs cannot support a fit (too few, one size, an absurd result); the message says why."""


class FitWarning(UserWarning):
    """The fit ran but is weakly supported (few sizes, dropped runs, optimum at a sweep's edge)."""


@dataclass


class FitConfig:
    """``corpusmix scale fit`` (``params.yaml``: ``scale.fit``)."""

    huber_delta: float = field(default=1e-3, metadata={"help": "Huber delta on log-loss residuals (paper: 1e-3)"})
    starts: int = field(default=16, metadata={"help": "L-BFGS runs from the best-scoring grid points"})
    bootstrap: int = field(default=100, metadata={"help": "bootstrap refits for the intervals (0 = off)"})
    boot_starts: int = field(default=4, metadata={"help": "best grid starts of each bootstrap refit (besides "
                                                                 "the global search)"})
    global_search: bool = field(default=True, metadata={"help": "joint forms: one more start from a differential "
                                                        "evolution over the form's whole parameter box"})
    confidence: float = field(default=0.9, metadata={"help": "two-sided interval level"})
    min_runs: int = field(default=8, metadata={"help": "fewest usable (N, D) points accepted for 5 free parameters"})
    seed: int = field(default=0, metadata={"help": "bootstrap seed"})
    target: str = field(default="all", metadata={"help": "validation loss fitted: all (every domain's tokens) "
                                                          "or a domain name"})
    min_tokens: int = field(default=0, metadata={"help": "fit only runs with D >= this (runs still on the early "
                                                         "loss plateau follow no power law; counted as dropped)"})
    params_count: str = field(default="", metadata={"help": "N fitted: empty = the sweep's count, or total / "
                                                      "non_embedding (runs record both counts)"})
    form: str = field(default="hoffmann", metadata={"help": "law form: hoffmann (E + A/N^a + B/D^b), kaplan "
                                                    "(E + [(N_c/N)^(aN/aD) + D_c/D]^aD), or auto (the one with "
                                                    "the lower design-check error), per_d (E_D + A_D/N^a_D "
                                                    "at each swept D; no D extrapolation)"})

    fallback: str = field(default="auto", metadata={"help": "per_d only: the joint form (auto, hoffmann, kaplan) "
                                                    "that predicts where per_d cannot check itself (a D no slice "
                                                    "has, or a slice of 3 sizes); none = an error there"})

    def validate(self) -> None:
        if not 0 < self.confidence < 1:
            raise FitError(f"confidence must be in (0, 1), got {self.confidence}")
        if self.min_runs < N_FREE + 1:
            raise FitError(f"min_runs must be >= {N_FREE + 1} (the law has {N_FREE} free parameters)")
        if self.huber_delta <= 0 or self.starts < 1:
            raise FitError("huber_delta must be > 0 and starts >= 1")
        if self.bootstrap and self.boot_starts < 1 and not self.global_search:
            raise FitError("a bootstrap needs boot_starts >= 1 or global_search (a refit has no start otherwise)")
        if self.form not in (*FORMS, "auto"):
            raise FitError(f"form must be hoffmann, kaplan, per_d or auto, got {self.form!r}")
        if self.fallback not in ("auto", "hoffmann", "kaplan", "none"):
            raise FitError(f"fallback must be auto, hoffmann, kaplan or none, got {self.fallback!r}")
        if self.params_count not in ("", "total", "non_embedding"):
            raise FitError(f"params_count must be empty, total or non_embedding, got {self.params_count!r}")
