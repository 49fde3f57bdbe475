"""Which build of the compiled kernels may decide (``curate.native.load``), and how Spark ships it."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import curate
from curate import native


def test_the_build_in_use_is_the_source_in_the_tree() -> None:
    assert native.compiled is not None and native.ORIGIN == "package"
    assert native.compiled.SOURCE_SHA256 == native.source_digest()
    assert len(native.source_digest() or "") == 64


def test_a_build_of_another_source_is_not_used(monkeypatch: pytest.MonkeyPatch, caplog) -> None:
    """``_native.c`` edited and not rebuilt: the reference decides, with a warning."""
    monkeypatch.setattr(native, "source_digest", lambda: "0" * 64)
    with caplog.at_level("WARNING", logger="corpusmix.curate.native"):
        assert native.load() == (None, "reference")
    assert "another source" in caplog.text


def test_switched_off_by_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CORPUSMIX_NATIVE", "0")
    assert native.load() == (None, "reference")


def _hide_package_build(monkeypatch: pytest.MonkeyPatch) -> None:
    """As on an executor whose code is the zip: ``from curate import _native`` fails."""
    monkeypatch.delattr(curate, "_native", raising=False)
    monkeypatch.setitem(sys.modules, "curate._native", None)


def test_the_module_shipped_to_spark_files_is_loaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("pyspark")
    from pyspark import SparkFiles

    from curate.spark.submit import ship_native

    shipped = ship_native(tmp_path)
    assert shipped == tmp_path / native.SHIPPED and shipped.stat().st_size > 0
    _hide_package_build(monkeypatch)
    monkeypatch.setattr(SparkFiles, "_root_directory", str(tmp_path))
    monkeypatch.setattr(SparkFiles, "_is_running_on_worker", True)
    mod, origin = native.load()
    assert mod is not None and origin == "shipped" and Path(mod.__file__) == shipped
    assert mod.SOURCE_SHA256 == native.source_digest()
    text = "Ein kleiner Test, with words and 12 numbers."
    assert mod.char_counts(text) == native.compiled.char_counts(text)
    # shipped from another checkout (another source digest): not used
    monkeypatch.setattr(native, "source_digest", lambda: "f" * 64)
    assert native.load() == (None, "reference")
    # nothing shipped: the reference
    monkeypatch.undo()
    _hide_package_build(monkeypatch)
    monkeypatch.setattr(SparkFiles, "_root_directory", str(tmp_path / "empty"))
    monkeypatch.setattr(SparkFiles, "_is_running_on_worker", True)
    assert native.load() == (None, "reference")
    assert native.load(shipped=False) == (None, "reference")


def test_the_zip_names_the_source_digest(tmp_path: Path) -> None:
    from curate.spark.submit import build_zip

    z = build_zip(tmp_path / "corpusmix.zip")
    with zipfile.ZipFile(z) as zf:
        assert zf.read("curate/_native.sha256").decode().strip() == native.source_digest()
        assert "curate/_native.c" not in zf.namelist()


def test_the_digest_is_read_from_a_zip_of_the_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``source_digest`` under zipimport: no ``_native.c`` beside the module, the zip's file instead."""
    from curate.spark.submit import build_zip

    z = build_zip(tmp_path / "corpusmix.zip", packages=("curate",))
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from curate import native; "
            "print(native.__file__); print(native.source_digest())")
    out = subprocess.run([sys.executable, "-c", code, str(z)], capture_output=True, text=True, cwd=tmp_path,
                         env={"PATH": "/usr/bin:/bin", "CORPUSMIX_NATIVE": "1"}, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    where, digest = out.stdout.split()
    assert where.startswith(str(z)) and digest == native.source_digest()


def test_the_driver_takes_the_shipped_module_once_its_session_exists(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """``use_shipped``: imported before any Spark session (no build found, the reference in use), the
    driver of a spark-submit job switches to the shipped file once ``SparkFiles`` has it."""
    pytest.importorskip("pyspark")
    from pyspark import SparkFiles

    from curate.spark.submit import ship_native

    shipped = ship_native(tmp_path)
    _hide_package_build(monkeypatch)
    monkeypatch.setattr(native, "compiled", None)
    monkeypatch.setattr(native, "ORIGIN", "reference")
    monkeypatch.setattr(SparkFiles, "_root_directory", str(tmp_path))
    monkeypatch.setattr(SparkFiles, "_is_running_on_worker", True)
    assert native.use_shipped()
    assert native.ORIGIN == "shipped" and Path(native.compiled.__file__) == shipped
    # the statistics then run the shipped kernels: the same result as the reference
    from curate import textstats

    text = "The quick brown fox jumps over the lazy dog.\nThe quick brown fox, again and again.\n" * 3
    with_shipped = textstats.doc_stats(text, "en", None, frozenset())
    monkeypatch.setattr(native, "compiled", None)
    assert textstats.doc_stats(text, "en", None, frozenset()) == with_shipped
