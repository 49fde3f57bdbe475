"""``spark-submit`` entry point of the Spark curation engine, and helpers to build the submission.

On the cluster (this file is the application; the master comes from ``spark-submit``)::

    python -m curate.spark.submit package --out dist/corpusmix.zip      # the project's code as one zip
    spark-submit --master spark://HOST:7077 \\
        --py-files dist/corpusmix.zip \\
        --files curate/models/lid.176.ftz,dist/corpusmix-native.cpython-311-x86_64-linux-gnu.so \\
        curate/spark/submit.py --input data/raw/docs --output data/curated_spark --params params.yaml

From Python, :func:`submit_argv` builds that argument list (a list, never a shell string) and
:func:`build_zip` the zip (``package`` also copies the compiled kernels beside it,
:func:`ship_native`: an extension cannot be imported from a zip, so it travels with ``--files``);
``docs/spark.md`` covers standalone, YARN and Kubernetes masters.
The chain (steps and their configs) comes from ``params.yaml``, read once, through the chain
builder of both engines (``curate.chain``), so both engines run the same step objects.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import sys
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

#: the project's top-level packages shipped with --py-files
PACKAGES = ("corpusmix", "curate", "mix", "proxytrain")
#: file types that go into the zip (models travel separately with --files)
ZIP_SUFFIXES = (".py", ".json", ".yaml", ".txt")


def project_root() -> Path:
    """The folder holding the ``curate`` package (repository root or site-packages)."""
    import curate

    return Path(curate.__file__).resolve().parent.parent


def build_zip(out: str | Path, *, packages: Sequence[str] = PACKAGES) -> Path:
    """Zip the project's packages (Python sources only) for ``spark-submit --py-files``."""
    root = project_root()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(out.suffix + ".tmp")
    n = 0
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for pkg in packages:
            base = root / pkg
            if not (base / "__init__.py").exists():
                raise FileNotFoundError(f"package {pkg!r} not found under {root}; run from the project checkout "
                                        "or install corpusmix")
            for p in sorted(base.rglob("*")):
                if p.is_file() and p.suffix in ZIP_SUFFIXES and "__pycache__" not in p.parts:
                    zf.write(p, p.relative_to(root).as_posix())
                    n += 1
        if "curate" in packages:  # which build of the compiled kernels this code may use (curate.native.load)
            from curate import native

            digest = native.source_digest()
            if digest:
                zf.writestr("curate/_native.sha256", digest + "\n")
    os.replace(tmp, out)
    return out


def ship_native(dest: str | Path) -> Path | None:
    """Copy the compiled kernels in use (``curate.native``) to ``dest/curate.native.SHIPPED``, the file
    to give ``spark-submit --files`` beside the zip (executors cannot import it from the zip); None
    where this install runs the Python reference (then so do the executors, with the same results)."""
    from curate import native

    if native.compiled is None or not getattr(native.compiled, "__file__", None):
        return None
    target = Path(dest) / native.SHIPPED
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    shutil.copyfile(native.compiled.__file__, tmp)
    os.replace(tmp, target)
    return target


def spark_submit_bin() -> str:
    """``spark-submit`` of ``$SPARK_HOME`` or of the installed pyspark."""
    from curate.spark.cluster import spark_home

    return str(spark_home() / "bin" / "spark-submit")


def submit_argv(*, master: str, inputs: Sequence[str], output: str, py_files: str | Path | Sequence[str | Path],
                files: Sequence[str | Path] = (), params: str | Path | None = None,
                conf: dict[str, str] | None = None, python: str | None = None,
                extra_args: Sequence[str] = (), spark_submit: str | None = None) -> list[str]:
    """The ``spark-submit`` command line as a list (for ``subprocess.run``; no shell quoting involved).

    ``python`` (default: this interpreter) is the Python of the driver and the executors; give the
    cluster's path when it differs.
    """
    python = python or sys.executable
    zips = [py_files] if isinstance(py_files, str | Path) else list(py_files)
    argv = [spark_submit or spark_submit_bin(), "--master", master, "--py-files", ",".join(str(z) for z in zips)]
    if files:
        argv += ["--files", ",".join(str(Path(f).resolve()) if "://" not in str(f) else str(f) for f in files)]
    settings = {"spark.pyspark.python": python, "spark.pyspark.driver.python": python}
    settings.update(conf or {})
    for k, v in settings.items():
        argv += ["--conf", f"{k}={v}"]
    argv.append(str(Path(__file__).resolve()))
    for i in inputs:
        argv += ["--input", str(i)]
    argv += ["--output", str(output)]
    if params is not None:
        argv += ["--params", str(params)]
    return argv + list(extra_args)


def chain_from_params(params: str | Path | dict[str, Any], spec: str = "", *, engine_cfg: Any = None
                      ) -> tuple[list[Any], Any, list[Any]]:
    """(stage-a steps, DedupConfig or None, stage-b steps) from params (a file, or loaded).

    The default builder is the chain of both engines (``curate.chain``: ``ChainConfig`` and
    ``build_steps``, the ``curate.engine`` section deciding which steps run). ``spec``
    ``MODULE:FUNCTION`` names another builder, called with the params path and returning that
    triple (or just a list of steps). ``engine_cfg`` (an ``EngineConfig``) overrides the
    ``curate.engine`` section (e.g. built from ``curate run`` flags).
    """
    if spec:
        mod, _, fn = spec.partition(":")
        if not fn:
            raise ValueError(f"--chain wants MODULE:FUNCTION, got {spec!r}")
        if isinstance(params, dict):
            raise ValueError("--chain builders take the params file's path; pass a path")
        built = getattr(importlib.import_module(mod), fn)(str(params))
        if isinstance(built, tuple):
            steps, dedup, after = (*built, [])[:3]
            return list(steps), dedup, list(after)
        return list(built), None, []
    from corpusmix.config import load_params
    from curate.chain import ChainConfig, build_steps

    loaded = params if isinstance(params, dict) else load_params(params)
    chain = ChainConfig.from_params(loaded, engine=engine_cfg,
                                    params_path="" if isinstance(params, dict) else str(params))
    return build_steps(chain, stage="a"), chain.dedup, build_steps(chain, stage="b")


def _with_shipped_models(params: dict[str, Any], cfg: Any) -> dict[str, Any]:
    """``params``, or a copy naming the ``--files`` copy of the language-ID model.

    Under spark-submit the driver imports the project from the ``--py-files`` zip, where the
    packaged ``curate/models/lid.176.ftz`` is not a file fastText can open; when the params do not
    name a model, the copy shipped with ``--files`` (``SparkFiles``) is used instead.
    """
    import copy

    from pyspark import SparkFiles

    from curate.chain import section
    from curate.spark.engine import get_session
    from curate.steps.langid import PACKAGED_MODEL

    if section(params, "curate.langid").get("model_path") or PACKAGED_MODEL.is_file():
        return params
    get_session(cfg, set_master=False)
    shipped = Path(SparkFiles.get(PACKAGED_MODEL.name))
    if not shipped.is_file():
        raise SystemExit(f"spark_submit.py: the language-ID model is not a file inside the zip; add "
                         f"--files curate/models/{PACKAGED_MODEL.name} or set curate.langid.model_path")
    out = copy.deepcopy(params)
    out.setdefault("curate", {}).setdefault("langid", {})["model_path"] = str(shipped)
    return out


def _use_shipped_native(cfg: Any) -> None:
    """On the driver (which calibrates): the compiled kernels shipped with ``--files``
    (``curate.native.SHIPPED``), where none could be imported before the session existed."""
    from curate import native
    from curate.spark.engine import get_session

    if native.compiled is None:
        get_session(cfg, set_master=False)  # the session run_spark uses: SparkFiles has the file from here
        native.use_shipped()


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    from corpusmix.config import add_config_args
    from curate.spark.engine import SparkConfig

    p = argparse.ArgumentParser(prog="spark_submit.py", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command")
    pk = sub.add_parser("package", help="build the --py-files zip of the project")
    pk.add_argument("--out", default="dist/corpusmix.zip")
    p.add_argument("--input", action="append", default=[], help="Parquet/JSONL documents (repeatable; any Spark URI)")
    p.add_argument("--output", default=None, help="output folder (any Spark URI)")
    p.add_argument("--params", default="params.yaml", help="params.yaml with the chain's sections")
    p.add_argument("--chain", default="", help="MODULE:FUNCTION building (steps, dedup_cfg) from the params path")
    add_config_args(p, SparkConfig)
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """The application run by ``spark-submit`` (the master comes from spark-submit)."""
    from corpusmix.config import config_from, load_params
    from corpusmix.logging import configure
    from curate.chain import ChainConfig, build_steps, section
    from curate.spark.engine import SparkConfig, run_spark

    args = parse_args(argv)
    configure()
    if args.command == "package":
        print(build_zip(args.out))
        shipped = ship_native(Path(args.out).parent)
        print(shipped if shipped else "no compiled kernels in this install: executors run the Python reference",
              file=None if shipped else sys.stderr)
        return 0
    if not args.input or not args.output:
        raise SystemExit("spark_submit.py: --input and --output are required (see docs/spark.md)")
    params = load_params(args.params)  # read once; everything below gets typed configs
    cfg = config_from(SparkConfig, params=section(params, "spark"), args=args, where="params.yaml section spark")
    params = _with_shipped_models(params, cfg)
    _use_shipped_native(cfg)
    chain = ChainConfig.from_params(params, params_path=str(args.params))
    if args.chain:
        steps, dedup, after = chain_from_params(args.params, args.chain)
    else:
        steps, dedup, after = build_steps(chain, stage="a"), chain.dedup, build_steps(chain, stage="b")
    stats = run_spark(inputs=args.input, output=args.output, steps=steps, dedup=dedup, steps_after=after,
                      cfg=cfg, read_cfg=chain.read, set_master=False, calibrate_cfg=chain.calibrate)
    print(json.dumps(stats["totals"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
