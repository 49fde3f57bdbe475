"""The report room: ``corpusmix report`` turns the pipeline's outputs into one HTML page (plus a
Markdown twin). It reads files only and imports ``corpusmix`` and ``mix``'s public API; see
docs/architecture.md."""
