"""Old import path of :mod:`report.render` (the report moved to its own package); kept until every
caller imports ``report.render``."""

import importlib
import sys

sys.modules[__name__] = importlib.import_module("report.render")
