"""Runs one checkout's ``PIIRedactor.detect`` in its own process (bench_pii.py, bench_pii_eval.py).

The parent starts it with ``PYTHONPATH`` set to the checkout to measure (this tree, or another
revision exported by ``git archive``), so two versions of ``curate`` run side by side in one
benchmark. Protocol: one JSON request per line on stdin, one JSON answer per line on stdout.

* ``{"op": "load", "path": P}``: read a JSON list of texts from ``P`` (answer: ``{"n": count}``);
* ``{"op": "time", "lo": i, "hi": j, "secrets": bool}``: time ``detect`` on texts ``i..j``
  (answer: ``{"seconds": s}``);
* ``{"op": "spans", "out": P, "secrets": bool}``: write the spans of every text to ``P``;
* ``{"op": "quit"}``.
"""

from __future__ import annotations

import json
import sys
import time


def main() -> int:
    from curate.steps.pii import PIIConfig, PIIRedactor

    redactors = {flag: PIIRedactor(PIIConfig(secrets=flag)) for flag in (True, False)}
    texts: list[str] = []
    for t in ["Warm up: call 020 7946 0958 or x@y.org, card 4111 1111 1111 1111, password = 'x9Kq2'."] * 3:
        for r in redactors.values():
            r.detect(t)
    for line in sys.stdin:
        req = json.loads(line)
        if req["op"] == "quit":
            break
        if req["op"] == "load":
            with open(req["path"], encoding="utf-8") as f:
                texts = json.load(f)
            answer: dict = {"n": len(texts), "module": sys.modules["curate.steps.pii"].__file__}
        elif req["op"] == "time":
            detect = redactors[req["secrets"]].detect
            t0 = time.perf_counter()
            for t in texts[req["lo"]:req["hi"]]:
                detect(t)
            answer = {"seconds": time.perf_counter() - t0}
        else:
            detect = redactors[req["secrets"]].detect
            with open(req["out"], "w", encoding="utf-8") as f:
                json.dump([detect(t) for t in texts], f)
            answer = {"ok": True}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
