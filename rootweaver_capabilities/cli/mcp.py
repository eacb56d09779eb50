"""``rootweaver mcp``: the capability as an MCP server over stdio or streamable HTTP."""

from __future__ import annotations

import argparse
from typing import Any

from rootweaver_capabilities.cli.argtypes import host_port
from rootweaver_capabilities.cli.options import api_key_options, service_config_option, service_keys

__all__ = ["add_mcp_parser"]


def _cmd_mcp(args: argparse.Namespace) -> int:
    """Serve the MCP tool over stdio (the default) or streamable HTTP until stopped."""
    from rootweaver_capabilities.serving.mcp import run

    run(args.config, args.http, service_keys(args))
    return 0


def add_mcp_parser(sub: Any) -> None:
    """``mcp`` on the top-level subparsers ``sub``."""
    mcp = sub.add_parser("mcp", help="MCP server with the tool multi_hop_answer, over stdio or streamable HTTP")
    mcp.add_argument("--http", type=host_port, metavar="[HOST:]PORT",
                     help="streamable HTTP at http://HOST:PORT/mcp (host 127.0.0.1 by default); default: stdio")
    service_config_option(mcp)
    api_key_options(mcp)
    mcp.set_defaults(func=_cmd_mcp)
