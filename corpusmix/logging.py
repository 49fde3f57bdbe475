"""Structured JSONL logging shared by every command.

``get_logger(name)`` returns a stdlib logger whose records are written as one JSON object per line
to stderr (and to ``$CORPUSMIX_LOG`` when set). Extra fields go in ``extra={"data": {...}}``.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time

_CONFIGURED = False


class JsonlFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        rec = {
            "ts": round(time.time(), 3),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        data = getattr(record, "data", None)
        if isinstance(data, dict):
            rec.update(data)
        if record.exc_info:
            rec["exc"] = self.formatException(record.exc_info)
        return json.dumps(rec, default=str, ensure_ascii=False)


def configure(level: str | int = "INFO") -> None:
    global _CONFIGURED
    if _CONFIGURED:
        return
    root = logging.getLogger("corpusmix")
    root.setLevel(level)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonlFormatter())
    root.addHandler(handler)
    path = os.environ.get("CORPUSMIX_LOG")
    if path:
        fh = logging.FileHandler(path)
        fh.setFormatter(JsonlFormatter())
        root.addHandler(fh)
    root.propagate = False
    _CONFIGURED = True


def get_logger(name: str) -> logging.Logger:
    return logging.getLogger("corpusmix." + name)
