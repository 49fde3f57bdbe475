"""Old import path of :mod:`report.inputs` (the report moved to its own package); kept until every
caller imports ``report.inputs``."""

import importlib
import sys

sys.modules[__name__] = importlib.import_module("report.inputs")
