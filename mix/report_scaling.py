"""Old import path of :mod:`report.scaling` (the report moved to its own package); kept until every
caller imports ``report.scaling``."""

import importlib
import sys

sys.modules[__name__] = importlib.import_module("report.scaling")
