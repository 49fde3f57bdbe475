"""The law forms by name, behind one interface, and L(N, D) / the frontier / the exponents of any fit's
constants (the form is told by the names of the constants)."""

from __future__ import annotations

from typing import Any, Protocol

from proxytrain.scaling_fit.config import FORMS
from proxytrain.scaling_fit.hoffmann import HOFFMANN
from proxytrain.scaling_fit.kaplan import KAPLAN
from proxytrain.scaling_fit.per_d import PER_D


class LawForm(Protocol):
    """A scaling-law form: its fit of a sweep's runs, its prediction from a fit, and its closed-form pieces."""

    name: str
    text: str

    def law(self, c: dict[str, Any], n: Any, d: Any) -> Any: ...

    def frontier(self, c: dict[str, Any], flops: Any) -> tuple[Any, Any]: ...

    def exponents(self, c: dict[str, Any]) -> dict[str, float]: ...

    def fit(self, runs: list[dict[str, Any]], cfg: Any, selection: dict[str, Any] | None) -> dict[str, Any]: ...

    def predict(self, fit: dict[str, Any], flops: float | None, n: float | None, d: float | None,
                seed: int = 0) -> dict[str, Any]: ...


REGISTRY: dict[str, LawForm] = {f.name: f for f in (HOFFMANN, KAPLAN, PER_D)}
assert tuple(REGISTRY) == FORMS


def get_form(name: str) -> LawForm:
    """The form registered as ``name`` (hoffmann, kaplan or per_d)."""
    return REGISTRY[name]


def form_of(c: dict[str, Any]) -> str:
    """``kaplan``, ``hoffmann`` or ``per_d``, from the names of the constants."""
    return "per_d" if "slices" in c else "kaplan" if "N_c" in c else "hoffmann"


def exponents(c: dict[str, Any]) -> dict[str, float]:
    """The N and D exponents of a fit, by their names in its form (per_d: alpha at each fitted D)."""
    return REGISTRY[form_of(c)].exponents(c)


def law(c: dict[str, Any], n: Any, d: Any) -> Any:
    """L(N, D) for constants ``c`` (any form; per_d: a FitError at a D that is not a fitted slice)."""
    return REGISTRY[form_of(c)].law(c, n, d)


def frontier(c: dict[str, Any], flops: Any) -> tuple[Any, Any]:
    """Compute-optimal (N*, D*) for a budget C = 6 N D: closed form for the Hoffmann form, a bounded 1-D
    search in log N (D = C / 6N) for the Kaplan form, and the discrete frontier over the fitted token counts
    for the per_d form."""
    return REGISTRY[form_of(c)].frontier(c, flops)
