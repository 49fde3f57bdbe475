"""Old import path of :mod:`corpusmix.mixture` (the mixture contract lives in the bottom layer,
shared by every room); kept until every caller imports ``corpusmix.mixture``."""

from corpusmix.mixture import (  # noqa: F401
    SUM_TOLERANCE,
    VOLATILE_PROVENANCE,
    Mixture,
    MixtureError,
    load_mixture,
    mixture_from_dict,
    natural_mixture,
    save_mixture,
    timing_path,
    uniform_mixture,
    validate_mixture,
)
