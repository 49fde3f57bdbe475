"""``corpusmix tokenize train|pools`` and ``corpusmix pack``: tokenizer, token pools, packed shards.

    corpusmix tokenize train --curated OUT/curated --output OUT/tokenizer.json [--vocab-size 4096]
    corpusmix tokenize train --from-file given.json --output OUT/tokenizer.json   # use a given tokenizer
    corpusmix tokenize pools --curated OUT/curated --tokenizer OUT/tokenizer.json --output OUT/pools
    corpusmix pack --pools OUT/pools --mixture mixture.json --tokens 20000000 --output OUT/shards
    corpusmix pack --curated OUT/curated --tokenizer OUT/tokenizer.json --mixture natural \
        --tokens 2e7 --output OUT/shards       # builds OUT/shards/pools first

Parameters come from the ``tokenizer:``, ``pools:`` and ``pack:`` sections of ``--params``
(default ``params.yaml``); flags override them. ``--mixture natural`` / ``uniform`` use the pools'
token shares / equal weights instead of a file.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from corpusmix.config import ConfigError, add_config_args, config_from, load_params


def register(sub: argparse._SubParsersAction) -> None:
    from proxytrain.pack import PackConfig
    from proxytrain.pools import PoolsConfig
    from proxytrain.tokenizer import TokenizerConfig

    t = sub.add_parser("tokenize", help="train the BPE tokenizer; build per-domain token pools",
                       description="Tokenizer and token pools (see docs/formats.md).")
    tsub = t.add_subparsers(dest="tokenize_command", metavar="STEP")
    t.set_defaults(func=lambda args: (t.print_help(), 2)[1])

    tr = tsub.add_parser("train", help="train byte-level BPE on curated Parquet (or install a given one)")
    tr.add_argument("--params", default="params.yaml", help="params file; its tokenizer: section is read")
    tr.add_argument("--curated", help="folder of <domain>.parquet (curation output)")
    tr.add_argument("--from-file", help="use this tokenizer.json instead of training one")
    tr.add_argument("--output", required=True, help="where to write tokenizer.json")
    add_config_args(tr, TokenizerConfig)
    tr.set_defaults(func=run_train)

    po = tsub.add_parser("pools", help="tokenise curated Parquet into per-domain token pools")
    po.add_argument("--params", default="params.yaml", help="params file; its pools: section is read")
    po.add_argument("--curated", required=True, help="folder of <domain>.parquet (curation output)")
    po.add_argument("--tokenizer", required=True, help="tokenizer.json")
    po.add_argument("--output", required=True, help="pools folder to write")
    add_config_args(po, PoolsConfig)
    po.set_defaults(func=run_pools)

    pk = sub.add_parser("pack", help="materialise a mixture into packed Arrow shards + manifest.json",
                        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    pk.add_argument("--params", default="params.yaml", help="params file; its pack: (and pools:) section is read")
    pk.add_argument("--pools", help="pools folder (default: OUTPUT/pools, built from --curated if missing)")
    pk.add_argument("--curated", help="curated folder to tokenise when the pools do not exist yet")
    pk.add_argument("--tokenizer", help="tokenizer.json (needed with --curated)")
    pk.add_argument("--mixture", required=True, help="mixture.json, or 'natural' / 'uniform'")
    pk.add_argument("--output", required=True, help="shards folder to write")
    add_config_args(pk, PackConfig)
    pk.set_defaults(func=run_pack)


def run_train(args: argparse.Namespace) -> int:
    from proxytrain.tokenizer import TokenizerConfig, install_tokenizer, train_tokenizer

    if args.from_file:
        sha = install_tokenizer(args.from_file, args.output)
    else:
        if not args.curated:
            raise ConfigError("tokenize train needs --curated DIR (to train) or --from-file tokenizer.json")
        cfg = config_from(TokenizerConfig, params=load_params(args.params, "tokenizer"), args=args,
                          where="tokenizer")
        sha = train_tokenizer(args.curated, args.output, cfg)
    print(json.dumps({"tokenizer": args.output, "sha256": sha}))
    return 0


def run_pools(args: argparse.Namespace) -> int:
    from proxytrain.pools import PoolsConfig, build_pools

    cfg = config_from(PoolsConfig, params=load_params(args.params, "pools"), args=args, where="pools")
    meta = build_pools(args.curated, args.tokenizer, args.output, cfg)
    print(json.dumps({"pools": args.output, "domains": meta["domains"]}))
    return 0


def run_pack(args: argparse.Namespace) -> int:
    from corpusmix.mixture import natural_mixture, uniform_mixture
    from proxytrain.pack import PackConfig, pack
    from proxytrain.pools import PoolsConfig, build_pools, read_pools_json

    # --tokens 2e7 is convenient; config_from refuses non-integral floats
    if args.tokens is not None:
        try:
            args.tokens = int(float(args.tokens))
        except ValueError:
            raise ConfigError(f"--tokens {args.tokens!r} is not a number") from None
    cfg = config_from(PackConfig, params=load_params(args.params, "pack"), args=args, where="pack")
    pools_dir = Path(args.pools) if args.pools else Path(args.output) / "pools"
    if not (pools_dir / "pools.json").exists() or args.curated:
        if not (args.curated and args.tokenizer):
            raise ConfigError(f"no pools in {pools_dir}: pass --pools DIR, or --curated DIR and --tokenizer "
                              "PATH to build them")
        pcfg = config_from(PoolsConfig, params=load_params(args.params, "pools"), where="pools")
        build_pools(args.curated, args.tokenizer, pools_dir, pcfg)
    if args.mixture in ("natural", "uniform"):
        meta = read_pools_json(pools_dir)
        nonempty = {d: m["tokens"] for d, m in meta["domains"].items() if m["tokens"]}
        weights = natural_mixture(nonempty) if args.mixture == "natural" else uniform_mixture(nonempty)
        mixture: object = {"weights": weights, "method": args.mixture, "provenance": {"pools": str(pools_dir)}}
    else:
        mixture = args.mixture
    manifest = pack(pools_dir, mixture, args.output, cfg)
    print(json.dumps({k: manifest[k] for k in ("rows", "tokens", "pad_fraction", "effective_mixture")}
                     | {"shards": len(manifest["shards"]), "output": args.output}))
    return 0
