"""Curation decisions on real domains nobody tuned for, plus many kinds of generated garbage.

Real domains are built from text that ships on this machine and that the project never looked at
while choosing its rules (Debian/Ubuntu packages, the Python standard library):

* ``rst_docs``: CMake's reStructuredText manual (``/usr/share/cmake-*/Help``),
* ``vim_help``: Vim's help files (``/usr/share/vim/vim*/doc``),
* ``man_pages``: rendered manual pages (``man -l``, section 1),
* ``docstrings``: docstrings of the Python standard library (``ast`` over ``/usr/lib/python3*``),
* ``licences``: licence texts (``/usr/share/common-licenses``, ``*.dist-info/LICENSE*``),
* ``changelogs``: Debian package changelogs (``/usr/share/doc/*/changelog.Debian.gz``),
* ``pod_docs``: Perl's POD documentation, and ``readmes``: Markdown READMEs of node packages;

long files are cut into documents at paragraph breaks. Garbage is generated here with its own
generators (not the demo's): random characters, random Unicode, word salad drawn from the real
domains' own word distribution, word-shuffled real documents, repeated spam, hex dumps, base64
blobs, number tables and navigation/footer boilerplate; half of each kind is planted inside the
real domains, half forms a ``scraped`` domain made only of garbage. Non-English documents from
the shared corpora (when present) are planted in the real domains.

Run (about 2 minutes on 2 cores)::

    .venv/bin/python bench/bench_unseen_domains.py --work /tmp/15/unseen [--profiles auto,web]

It prints kept share per real domain, drop rate per garbage kind and foreign recall, per profile
(``web`` is the datatrove-parity profile with per-document language ID, the old default).
"""

from __future__ import annotations

import argparse
import ast
import base64
import gzip
import json
import random
import re
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import harness

ROOT = Path(__file__).resolve().parents[1]

MAX_DOC = 6000
GARBAGE_KINDS = ("random_chars", "random_unicode", "word_salad", "shuffled_words", "repeated_spam",
                 "hex_dump", "base64_blob", "number_table", "boilerplate")


def _chunks(text: str, source: str, max_chars: int = MAX_DOC) -> list[tuple[str, str]]:
    """Cut a long file at paragraph breaks into documents of at most ~max_chars."""
    text = text.replace("\r\n", "\n").strip()
    out, cur = [], []
    size = 0
    for para in re.split(r"\n\s*\n", text):
        if size + len(para) > max_chars and cur:
            out.append("\n\n".join(cur))
            cur, size = [], 0
        cur.append(para)
        size += len(para) + 2
    if cur:
        out.append("\n\n".join(cur))
    return [(t, f"{source}#{i}") for i, t in enumerate(out) if len(t.split()) >= 5]


def _read(p: Path) -> str:
    data = gzip.open(p).read() if p.suffix == ".gz" else p.read_bytes()
    return data.decode("utf-8", errors="replace")


def real_domains(per_domain: int, rng: random.Random) -> dict[str, list[tuple[str, str]]]:
    srcs: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for p in sorted(Path("/usr/share").glob("cmake-*/Help/**/*.rst")):
        srcs["rst_docs"] += _chunks(_read(p), str(p))
    for p in sorted(Path("/usr/share/vim").glob("vim*/doc/*.txt")):
        srcs["vim_help"] += _chunks(_read(p), str(p))
    for p in sorted(Path("/usr/share/perl").glob("**/*.pod")):
        srcs["pod_docs"] += _chunks(_read(p), str(p))
    for p in sorted(Path("/usr/lib/node_modules").glob("**/README.md")):
        srcs["readmes"] += _chunks(_read(p), str(p))
    lic = sorted(Path("/usr/share/common-licenses").glob("*")) + sorted(
        Path(sys.prefix).glob("lib/python*/site-packages/*.dist-info/LICEN[CS]E*"))
    seen: set[str] = set()
    for p in lic:
        if p.is_file():
            t = _read(p)
            if t[:2000] not in seen:  # the same licence ships in many packages
                seen.add(t[:2000])
                srcs["licences"] += _chunks(t, str(p))
    for p in sorted(Path("/usr/share/doc").glob("*/changelog.Debian.gz")):
        srcs["changelogs"] += _chunks(_read(p)[:MAX_DOC * 2], str(p))
    for p in sorted(Path("/usr/lib").glob("python3*/*.py")):
        try:
            tree = ast.parse(_read(p))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node)
                if doc and len(doc) >= 300:
                    srcs["docstrings"].append((doc, f"{p}:{getattr(node, 'name', 'module')}"))
    pages = sorted(Path("/usr/share/man/man1").glob("*.1.gz"))
    rng.shuffle(pages)
    for p in pages[:per_domain]:
        r = subprocess.run(["man", "-l", "-P", "cat", str(p)], capture_output=True, text=True,
                           env={"MANWIDTH": "80", "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}, timeout=30)
        if r.returncode == 0:
            srcs["man_pages"] += _chunks(r.stdout, str(p))
    out = {}
    for dom, docs in sorted(srcs.items()):
        rng.shuffle(docs)
        if len(docs) >= 30:
            out[dom] = docs[:per_domain]
    return out


# -- garbage generators (independent of curate/demo/data.py) -----------------------------------

def _lines(words: list[str], rng: random.Random, per_line: tuple[int, int]) -> str:
    out, i = [], 0
    while i < len(words):
        k = rng.randint(*per_line)
        out.append(" ".join(words[i:i + k]))
        i += k
    return "\n".join(out)


def garbage(kind: str, rng: random.Random, bag: list[str], real: list[str]) -> str:
    if kind == "random_chars":
        alphabet = "".join(chr(c) for c in range(33, 127)) + " " * 12
        return "\n".join("".join(rng.choice(alphabet) for _ in range(rng.randint(40, 100)))
                         for _ in range(rng.randint(8, 40)))
    if kind == "random_unicode":
        blocks = [(0x00C0, 0x024F), (0x0370, 0x03FF), (0x0400, 0x04FF), (0x0590, 0x06FF), (0x2200, 0x22FF),
                  (0x3040, 0x30FF), (0x4E00, 0x9FFF), (0x1F300, 0x1F5FF)]
        words = []
        for _ in range(rng.randint(60, 400)):
            lo, hi = rng.choice(blocks)
            words.append("".join(chr(rng.randint(lo, hi)) for _ in range(rng.randint(1, 9))))
        return _lines(words, rng, (5, 14))
    if kind == "word_salad":
        words = [rng.choice(bag) for _ in range(rng.randint(60, 500))]
        return ". ".join(_lines(words, rng, (6, 18)).split("\n")).capitalize() + "."
    if kind == "shuffled_words":
        src = rng.choice([t for t in real if len(t.split()) >= 60])
        words = src.split()
        rng.shuffle(words)
        return _lines(words, rng, (8, 16))
    if kind == "repeated_spam":
        item = rng.choice(["watches", "loans", "pills", "followers", "casino chips", "phone cases", "diet tea"])
        templates = [f"Buy cheap {item} online now", f"best {item} deals today only", f"FREE {item}!!! click here",
                     f"discount {item} {{n}}% off", f"order {item} fast shipping", f"{item} {item} {item} sale"]
        return "\n".join(rng.choice(templates).replace("{n}", str(rng.choice([10, 20, 50, 70])))
                         for _ in range(rng.randint(15, 60)))
    if kind == "hex_dump":
        rows = []
        for i in range(rng.randint(10, 60)):
            b = bytes(rng.randrange(256) for _ in range(16))
            rows.append(f"{i * 16:08x}: " + " ".join(b[j:j + 2].hex() for j in range(0, 16, 2)))
        return "\n".join(rows)
    if kind == "base64_blob":
        raw = bytes(rng.randrange(256) for _ in range(rng.randint(300, 3000)))
        b64 = base64.b64encode(raw).decode()
        return "\n".join(b64[i:i + 76] for i in range(0, len(b64), 76))
    if kind == "number_table":
        cols = rng.randint(3, 8)
        header = " | ".join(rng.choice(["id", "value", "count", "mean", "total", "year", "rate"]) for _ in range(cols))
        rows = [" | ".join(f"{rng.uniform(-1000, 100000):.{rng.randint(0, 3)}f}" for _ in range(cols))
                for _ in range(rng.randint(10, 60))]
        return "\n".join([header] + rows)
    if kind == "boilerplate":
        items = ["Home", "Products", "Solutions", "Pricing", "Support", "Documentation", "Community", "Events",
                 "Partners", "Investors", "Press", "Jobs", "Accessibility", "Legal", "Status", "Log in",
                 "Get started", "Subscribe", "Share on Facebook", "Tweet", "Pin it", "Email this", "Print",
                 "Previous post", "Next post", "Back to top", "Skip to content", "Search", "Menu", "Cookie settings"]
        lines = [" · ".join(rng.sample(items, rng.randint(3, 8))) for _ in range(rng.randint(8, 30))]
        lines += [f"© {rng.randint(2001, 2025)} Example Corp. All rights reserved.", "Powered by WordPress"]
        rng.shuffle(lines)
        return "\n".join(lines)
    raise ValueError(kind)


def foreign_docs(n_per_lang: int, rng: random.Random) -> list[tuple[str, str]]:
    import pyarrow.parquet as pq

    from corpusmix.paths import SHARED_CORPORA

    folder = SHARED_CORPORA / "multilingual"
    out = []
    for p in sorted(folder.glob("*.parquet")) if folder.is_dir() else []:
        texts = [t for t in pq.read_table(p, columns=["text"]).column("text").to_pylist() if len(t) >= 200]
        rng.shuffle(texts)
        out += [(t[:MAX_DOC], p.stem) for t in texts[:n_per_lang]]
    return out


def build(work: Path, *, per_domain: int, per_kind: int, seed: int) -> dict[str, str]:
    """Write work/docs/part-0.parquet; returns id -> truth label."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = random.Random(seed)
    real = real_domains(per_domain, rng)
    rows, truth = [], {}
    for dom, docs in real.items():
        for k, (text, src) in enumerate(docs):
            rows.append({"id": f"{dom}/{k:05d}", "text": text, "domain": dom, "source": src})
            truth[f"{dom}/{k:05d}"] = f"real:{dom}"
    real_texts = [r["text"] for r in rows]
    bag = [w for t in real_texts[::3] for w in re.findall(r"[A-Za-z]+", t)]
    domains = sorted(real)
    for kind in GARBAGE_KINDS:
        for k in range(per_kind):
            dom = "scraped" if k % 2 else rng.choice(domains)
            i = f"garbage/{kind}/{k:04d}"
            rows.append({"id": i, "text": garbage(kind, rng, bag, real_texts), "domain": dom, "source": "generated"})
            truth[i] = f"garbage:{kind}"
    for k, (text, lang) in enumerate(foreign_docs(8, rng)):
        i = f"foreign/{lang}/{k:04d}"
        rows.append({"id": i, "text": text, "domain": rng.choice(domains), "source": "shared-corpora"})
        truth[i] = f"foreign:{lang}"
    rng.shuffle(rows)
    (work / "docs").mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), work / "docs" / "part-0.parquet", row_group_size=500)
    (work / "truth.json").write_text(json.dumps(truth))
    return truth


def run_profile(work: Path, profile: str) -> tuple[set[str], float, dict]:
    import yaml

    from curate.engine_local import EngineConfig, run_local

    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    cur = params["curate"]
    cur["filters"]["profile"] = profile
    if profile == "web":  # the old default: per-document language ID at datatrove's threshold
        cur["langid"]["per_domain"] = False
    pfile = work / f"params-{profile}.yaml"
    pfile.write_text(yaml.safe_dump(params))
    out = work / f"out-{profile}"
    if out.exists():
        import shutil

        shutil.rmtree(out)
    t0 = time.perf_counter()
    doc = run_local(inputs=work / "docs", output=out, params_path=str(pfile),
                    cfg=EngineConfig(steps=["normalize", "langid", "filters"], tasks=2, workers=2, keep_work=False))
    seconds = time.perf_counter() - t0
    import pyarrow.parquet as pq

    kept = {i for f in (out / "curated").glob("*.parquet") for i in pq.read_table(f, columns=["id"]).column("id").to_pylist()}
    return kept, seconds, doc


def score(truth: dict[str, str], kept: set[str]) -> dict[str, dict[str, float]]:
    groups: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for i, label in truth.items():
        groups[label][0] += i in kept
        groups[label][1] += 1
    real = {k.split(":", 1)[1]: round(v[0] / v[1], 4) for k, v in sorted(groups.items()) if k.startswith("real:")}
    junk = {k.split(":", 1)[1]: round(1 - v[0] / v[1], 4) for k, v in sorted(groups.items()) if k.startswith("garbage:")}
    fk = [v for k, v in groups.items() if k.startswith("foreign:")]
    out = {"real_kept": real, "garbage_dropped": junk,
           "real_kept_mean": round(sum(real.values()) / len(real), 4) if real else None,
           "real_kept_min": min(real.values()) if real else None,
           "garbage_dropped_all": round(1 - sum(v[0] for k, v in groups.items() if k.startswith("garbage:")) /
                                        max(1, sum(v[1] for k, v in groups.items() if k.startswith("garbage:"))), 4)}
    if fk:
        out["foreign_recall"] = round(1 - sum(v[0] for v in fk) / sum(v[1] for v in fk), 4)
    out["counts"] = {k: v[1] for k, v in sorted(groups.items())}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", default="/tmp/bench_unseen")
    ap.add_argument("--per-domain", type=int, default=150)
    ap.add_argument("--per-kind", type=int, default=40)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--profiles", default="auto,web")
    ap.add_argument("--rebuild", action="store_true")
    args = ap.parse_args()
    work = Path(args.work)
    tfile = work / "truth.json"
    if tfile.exists() and not args.rebuild:
        truth = json.loads(tfile.read_text())
    else:
        truth = build(work, per_domain=args.per_domain, per_kind=args.per_kind, seed=args.seed)
    result = {}
    for profile in args.profiles.split(","):
        kept, seconds, doc = run_profile(work, profile)
        result[profile] = score(truth, kept)
        result[profile]["seconds"] = round(seconds, 1)
        result[profile]["guard"] = doc.get("guard", [])
    for profile, r in result.items():
        print(f"== profile {profile} ({r['seconds']} s)")
        print("  real kept:   ", json.dumps(r["real_kept"]), "mean", r["real_kept_mean"], "min", r["real_kept_min"])
        print("  garbage drop:", json.dumps(r["garbage_dropped"]), "all", r["garbage_dropped_all"])
        print("  foreign recall:", r.get("foreign_recall"), " guard:", len(r["guard"]), "entries")
    harness.write_record("unseen_domains", result, work / "result.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
