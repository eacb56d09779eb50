"""``rootweaver index export --to sphinxql``: searchd configs for the nodes, then the passages.

Two steps, because searchd must run between them:

1. ``rootweaver index export --to sphinxql --nodes H:SQL:API,... --conf-dir DIR`` writes
   ``DIR/node<i>/searchd.conf`` (and ``DIR/stopwords.txt``) and prints the ``searchd``
   command of each node;
2. ``rootweaver index export --to sphinxql CORPUS --nodes H:SQL:API,...`` inserts the corpus
   into every node's RT shards (each node is a mirror of every shard).

``--index`` and ``--shards`` must be the same in both steps and ``retriever.sphinxql.index``
must name the same index. Bad options are one line, exit 2; an unreachable node exits 2
naming it.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from rootweaver_capabilities.cli.options import knob_option
from rootweaver_capabilities.cluster import SHARDS

__all__ = ["add_export_parser"]


def _cmd_export(args: Any) -> int:
    from rootweaver_capabilities.cluster.sphinxql import export_corpus, parse_nodes, write_node_configs

    nodes = parse_nodes(args.nodes)
    if args.conf_dir is not None:
        if args.corpus is not None:
            raise ValueError("--conf-dir writes the node configs only; run the export of CORPUS once searchd runs")
        for path in write_node_configs(args.conf_dir, nodes, index=args.index, shards=args.shards):
            print(f"searchd --config {path}")
        return 0
    if args.corpus is None:
        raise ValueError("give CORPUS to load into the running nodes, or --conf-dir DIR to write their configs")
    from rootweaver_innovations.documents.corpus import load_corpus_jsonl

    import pymysql

    passages = load_corpus_jsonl(args.corpus)
    start = time.perf_counter()
    try:
        n = export_corpus(passages, nodes, index=args.index, shards=args.shards)
    except pymysql.err.MySQLError as exc:
        raise ValueError(f"sphinxql export to {args.nodes}: {' '.join(str(exc.args[-1]).split())[:200]}") from None
    print(f"exported {n:,} passages into {args.shards} shard(s) x {len(nodes)} node(s) of index {args.index} in "
          f"{time.perf_counter() - start:.1f} s", file=sys.stderr)
    return 0


def add_export_parser(isub: Any) -> None:
    """``index export`` on the ``index`` subcommand's subparsers ``isub``."""
    e = isub.add_parser("export", help="load a corpus into a search cluster (Manticore / Sphinx RT shards)")
    e.add_argument("corpus", type=Path, nargs="?", help="JSONL corpus ({id, title, text|sentences} per line)")
    e.add_argument("--to", choices=("sphinxql",), required=True, help="the engine (SphinxQL: Manticore, Sphinx)")
    e.add_argument("--nodes", required=True, help="HOST:SQLPORT:APIPORT[,...] of every searchd node (each a mirror)")
    knob_option(e, "--index", "retriever.sphinxql.index", help="distributed index name")
    e.add_argument("--shards", type=int, choices=range(1, 65), default=SHARDS, metavar="N",
                   help="RT shards (default %(default)s)")
    e.add_argument("--conf-dir", type=Path, help="write the nodes' searchd.conf here instead of loading the corpus")
    e.set_defaults(func=_cmd_export)
