"""Old import path of :mod:`report.curation` (the report moved to its own package); kept until every
caller imports ``report.curation``."""

import importlib
import sys

sys.modules[__name__] = importlib.import_module("report.curation")
