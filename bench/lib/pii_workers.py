"""Two versions of the PII step in one benchmark: this tree and a git revision, each in a worker process.

``export_revision(ref)`` writes the ``curate`` and ``corpusmix`` packages of ``ref`` (e.g. ``main``)
into a temporary folder with ``git archive``; ``Worker(path)`` starts ``bench/pii_detect_worker.py``
with that folder (or this tree) first on ``PYTHONPATH`` and speaks its line protocol.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WORKER = ROOT / "bench" / "pii_detect_worker.py"


def export_revision(ref: str) -> Path:
    """The ``curate`` and ``corpusmix`` packages of ``ref``, extracted into a new temporary folder."""
    dest = Path(tempfile.mkdtemp(prefix=f"pii-{ref.replace('/', '_')}-"))
    try:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "curate", "corpusmix"],
                                 check=True, capture_output=True).stdout
    except subprocess.CalledProcessError as e:
        raise SystemExit(f"git archive {ref} failed: {e.stderr.decode(errors='replace').strip()}") from e
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


class Worker:
    """``PIIRedactor.detect`` of the checkout at ``path`` in a child process."""

    def __init__(self, path: Path, name: str) -> None:
        self.name = name
        env = dict(os.environ, PYTHONPATH=str(path))
        self.proc = subprocess.Popen([sys.executable, str(WORKER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     env=env, text=True, cwd=str(path))

    def ask(self, **req: object) -> dict:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"worker {self.name} ended early (exit {self.proc.wait()})")
        return json.loads(line)

    def load(self, texts: list[str]) -> dict:
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8") as f:
            json.dump(texts, f)
        return self.ask(op="load", path=f.name)

    def spans(self, secrets: bool = True) -> list[list[tuple[int, int, str]]]:
        with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
            out = f.name
        self.ask(op="spans", out=out, secrets=secrets)
        with open(out, encoding="utf-8") as fh:
            return [[tuple(s) for s in doc] for doc in json.load(fh)]

    def close(self) -> None:
        if self.proc.poll() is None:
            self.ask_quit()

    def ask_quit(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"op": "quit"}) + "\n")
        self.proc.stdin.flush()
        self.proc.wait(timeout=60)
