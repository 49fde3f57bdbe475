"""Recording what a curation run decided, for ``corpusmix inspect`` (OUT/inspect.json).

:mod:`curate.inspection.probes` restates each step's rules (statistic, side, thresholds per domain),
:mod:`curate.inspection.collect` observes the steps while they run (every engine), and
:mod:`curate.inspection.finish` merges the units, redacts the samples with the run's PII step and
writes the file the view reads (docs/formats.md "Inspection data").
"""
