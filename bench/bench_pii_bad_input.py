"""PII step on bad input: time, peak memory, counted decisions, and no secret value in any output.

Run: ``python bench/bench_pii_bad_input.py [--json-mb 50] [--history-lines 1000000] [--out ...]``.

Each case runs ``corpusmix curate pii`` (the real command, default settings) in its own process
on a one-row parquet file, with secrets planted in it, and reports wall seconds, the process's
peak RSS (``ru_maxrss`` of the child), the ``pii_counts`` of the row, and whether any planted
value appears in the command's stdout/stderr/log lines, its stats or its drop records:

* ``minified_json``: one line of ``--json-mb`` MB of minified JSON records (ids, ISO dates, epoch
  timestamps, versions, SKUs, prices) with a password, a GitHub token and an AWS key pair in it;
* ``pem_halves``: a private-key block cut in two, one document per half;
* ``base64_blobs``: base64-encoded random bytes (76-character lines, 8 MB);
* ``history``: a zsh history of ``--history-lines`` lines (``: <epoch>:0;<command>``) with a few
  ``mysql -p...`` and ``export TOKEN=...`` commands.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import harness
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
PASSWORD, TOKEN = "Zq8#vLm2Kp0!xR", "ghp_" + "R7aK2mQ9vX4cL8pZ3nB6tY1wE5sD0fGh2jK4"
AWS_ID, AWS_SECRET = "AKIAQ7Z3XWY2BCDE4FGH", "k3Lm8Nq1Rt5Vw9Yz2Bc4Df6Gh8Jk0Mn3Pq5St7U"


def minified_json(mb: float) -> str:
    r = random.Random(0)
    items = []
    size = 0
    i = 0
    while size < mb * 1e6:
        item = {"id": i, "sku": f"SKU-{r.randint(10 ** 6, 10 ** 7)}", "created": f"2023-{r.randint(1, 12):02d}-"
                f"{r.randint(1, 28):02d}", "ts": 1_600_000_000 + i, "version": f"1.{r.randint(0, 40)}.{i % 97}",
                "price": round(r.random() * 100, 2), "qty": r.randint(1, 10 ** 6)}
        if i == 1000:
            item["password"] = PASSWORD
        if i == 5000:
            item["auth"] = {"token": TOKEN, "aws_access_key_id": AWS_ID, "aws_secret_access_key": AWS_SECRET}
        items.append(item)
        size += 110
        i += 1
    return json.dumps(items, separators=(",", ":"))


def pem_halves() -> list[str]:
    r = random.Random(1)
    body = [base64.b64encode(r.randbytes(48)).decode() for _ in range(20)]
    block = ["-----BEGIN RSA PRIVATE KEY-----", *body, "-----END RSA PRIVATE KEY-----"]
    return ["config dump:\n" + "\n".join(block[:11]), "\n".join(block[11:]) + "\nend of dump"]


def base64_blobs(mb: float) -> str:
    r = random.Random(2)
    raw = base64.b64encode(r.randbytes(int(mb * 1e6 * 3 / 4))).decode()
    return "\n".join(raw[i:i + 76] for i in range(0, len(raw), 76))


def history(lines: int) -> str:
    r = random.Random(3)
    cmds = ["ls -la", "git status", "cd ~/src", "make -j8", "docker ps", "kill -9 {n}", "ping -c 3 10.0.0.{k}"]
    out = []
    t = 1_600_000_000
    for i in range(lines):
        t += r.randint(1, 600)
        if i % 250_000 == 7:
            cmd = f"mysql -u root -p'{PASSWORD}' shop"
        elif i % 250_000 == 11:
            cmd = f"export GITHUB_TOKEN={TOKEN}"
        else:
            cmd = r.choice(cmds).format(n=r.randint(100, 99999), k=r.randint(1, 254))
        out.append(f": {t}:0;{cmd}")
    return "\n".join(out)


def run_case(name: str, texts: list[str], tmp: Path) -> dict:
    src, dst = tmp / f"{name}.parquet", tmp / f"{name}.out.parquet"
    pq.write_table(pa.table({"id": [f"{name}-{i}" for i in range(len(texts))], "text": texts,
                             "domain": ["code"] * len(texts)}), src)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    t0 = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    proc = subprocess.run([sys.executable, "-m", "corpusmix.cli", "curate", "pii", "--input", str(src),
                           "--output", str(dst)], capture_output=True, text=True, env=env, cwd=str(ROOT))
    wall = time.perf_counter() - t0
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    said = proc.stdout + proc.stderr
    for extra in tmp.glob(f"{name}.out.parquet*"):
        if extra.suffix == ".json" or extra.name.endswith(".drops.parquet"):
            said += extra.read_bytes().decode(errors="replace")
    leaked = [v for v in (PASSWORD, TOKEN, AWS_SECRET) if v in said]
    out: dict = {"rc": proc.returncode, "seconds": round(wall, 1), "input_mb": round(sum(map(len, texts)) / 1e6, 1),
                 "peak_rss_mb_max_over_children": round(max(before, peak_kb) / 1024, 1), "leaked_in_output": leaked}
    if proc.returncode == 0:
        table = pq.read_table(dst)
        # no column when no row kept a detection (or no row was kept: the drops say why)
        out["kept_rows"] = table.num_rows
        out["pii_counts"] = table.column("pii_counts").to_pylist() if "pii_counts" in table.column_names else None
        drops = tmp / f"{name}.out.parquet.drops.parquet"
        if drops.exists():
            dt = pq.read_table(drops)
            out["drops"] = {c: dt.column(c).to_pylist() for c in dt.column_names if c in ("reason", "id")}
        text = "\n".join(t for t in table.column("text").to_pylist() if t)
        out["planted_left_in_text"] = [v[:4] + "..." for v in (PASSWORD, TOKEN, AWS_SECRET) if v in text]
    else:
        out["error_tail"] = proc.stderr.strip().splitlines()[-1:]  # one line; checked for leaks above
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json-mb", type=float, default=50.0)
    ap.add_argument("--history-lines", type=int, default=1_000_000)
    ap.add_argument("--base64-mb", type=float, default=8.0)
    ap.add_argument("--out", default=str(ROOT / "bench" / "out" / "pii_bad_input.json"))
    args = ap.parse_args()
    cases = {"minified_json": [minified_json(args.json_mb)], "pem_halves": pem_halves(),
             "base64_blobs": [base64_blobs(args.base64_mb)], "history": [history(args.history_lines)]}
    results = {}
    with tempfile.TemporaryDirectory() as d:
        for name, texts in cases.items():
            results[name] = run_case(name, texts, Path(d))
            print(name, json.dumps(results[name]))
    harness.write_record("pii_bad_input", results, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
