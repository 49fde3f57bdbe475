"""The compiled kernels of the curation statistics (``curate._native``), built at install time.

Everything else is in pyproject.toml. Plain ``-O2`` C11 with the interpreter's own flags: no
``-march=native`` (the kernels use integer arithmetic only; results are the same on every x86-64
CPU). ``curate/native.py`` falls back to the Python reference where the module is not built.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("curate._native", ["curate/_native.c"], extra_compile_args=["-O2", "-std=c11"])])
