"""The compiled kernels of the curation statistics (``curate._native``), built at install time.

Everything else is in pyproject.toml. Plain ``-O2`` C11 with the interpreter's own flags: no
``-march=native`` (the kernels use integer arithmetic only, but for the fastText prediction, which
does fastText's float operations in its order with ``-ffp-contract=off``; results are the same on
every x86-64 CPU). ``curate/native.py`` falls back to the Python reference where the module is not built.
The module carries the sha256 of the source it was built from (``SOURCE_SHA256``): a build older
than ``curate/_native.c`` is not used (``curate.native.load``).
"""

import hashlib
from pathlib import Path

from setuptools import Extension, setup

SOURCE = "curate/_native.c"
DIGEST = hashlib.sha256((Path(__file__).resolve().parent / SOURCE).read_bytes()).hexdigest()

setup(ext_modules=[Extension("curate._native", [SOURCE], extra_compile_args=["-O2", "-std=c11", "-ffp-contract=off"],
                             define_macros=[("SOURCE_SHA256", f'"{DIGEST}"')])])
