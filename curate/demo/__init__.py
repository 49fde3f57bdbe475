"""The demo data (``corpusmix demo-data``): the raw demo input with planted, labelled defects
(``data``) and its toxic and contaminated documents with the held-out evaluation set (``safety``)."""
