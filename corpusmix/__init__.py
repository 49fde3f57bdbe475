"""corpusmix: curate, mix and pack text corpora for LLM pretraining, and train on them.

This package is the bottom layer shared by the rooms ``curate``, ``proxytrain``, ``mix`` and
``report``: the file contracts, config, logging and the command line (docs/architecture.md).
"""

__version__ = "0.1.0"
