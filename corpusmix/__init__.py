"""corpusmix: curate, mix and pack text corpora for LLM pretraining, and train on them.

The command line lives in :mod:`corpusmix.cli`; the work lives in the three rooms
``curate`` (curation), ``mix`` (mixture search) and ``proxytrain`` (tokenizer, packing, trainer).
"""

__version__ = "0.1.0"
