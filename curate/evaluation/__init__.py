"""Evaluation of the curation steps: metrics against the demo ground truth (``corpusmix curate
metrics``), PII and safety scores, the planted evaluation sets (``planters``) and the PII/secrets
evaluation set of real file shapes (``pii_eval``)."""
