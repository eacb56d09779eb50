"""`rootweaver mcp`: the official MCP SDK client over stdio and streamable HTTP, and
langchain-mcp-adapters loading the tool into a LangGraph ToolNode (reader `none`)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client

from servers import DEMO, REPO, free_port, stop, write_config

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def server_params(config: Path) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable,
                                 args=["-m", "rootweaver_capabilities.cli.main", "mcp", "--config", str(config)],
                                 env={**os.environ, "PYTHONPATH": str(REPO)})


async def exercise(session: ClientSession) -> None:
    """list_tools, then call_tool (an answer, then a refusal), then read the synth context."""
    await session.initialize()
    tools = (await session.list_tools()).tools
    assert [t.name for t in tools] == ["multi_hop_answer"]
    schema = tools[0].inputSchema
    assert schema["required"] == ["question"] and set(schema["properties"]) == {"question", "max_tokens"}
    assert {"answer", "cited_lines", "citations", "hops"} <= set(tools[0].outputSchema["properties"])

    res = await session.call_tool("multi_hop_answer", {"question": DEMO, "max_tokens": 120})
    assert not res.isError
    out = res.structuredContent
    assert out["answer"] and out["cited_lines"] and len(out["hops"]) >= 2 and out["hops"][0]["sub_query"] == DEMO
    context = (await session.read_resource(out["synth_context_uri"])).contents[0].text
    assert all(line.split(" | ", 1)[-1] in context for line in out["cited_lines"])
    assert [c["sentence"] for c in out["citations"]] == [line.split(" | ", 1)[-1] for line in out["cited_lines"]]

    bad = await session.call_tool("multi_hop_answer", {"question": "x", "max_tokens": 0})
    assert bad.isError and bad.content[0].text.endswith("field 'max_tokens': must be >= 1")


def test_sdk_client_over_stdio(tmp_path):
    async def main() -> None:
        async with stdio_client(server_params(write_config(tmp_path))) as (read, write):
            async with ClientSession(read, write) as session:
                await exercise(session)

    asyncio.run(asyncio.wait_for(main(), 60))


@pytest.fixture
def mcp_http(tmp_path):
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "rootweaver_capabilities.cli.main", "mcp", "--http", str(port),
                             "--config", str(write_config(tmp_path))], env={**os.environ, "PYTHONPATH": str(REPO)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            httpx.get(f"http://127.0.0.1:{port}/mcp", timeout=1)
            break
        except httpx.TransportError:
            time.sleep(0.1)
    assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
    yield f"http://127.0.0.1:{port}/mcp"
    stop(proc)


def test_sdk_client_over_streamable_http(mcp_http):
    async def main() -> None:
        async with streamablehttp_client(mcp_http) as (read, write, _):
            async with ClientSession(read, write) as session:
                await exercise(session)

    asyncio.run(asyncio.wait_for(main(), 60))


def test_langgraph_tool_node_invokes_the_tool(mcp_http):
    from langchain_core.messages import AIMessage
    from langchain_mcp_adapters.client import MultiServerMCPClient
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode

    async def main() -> None:
        client = MultiServerMCPClient({"rootweaver": {"url": mcp_http, "transport": "streamable_http"}})
        tools = await client.get_tools()
        assert [t.name for t in tools] == ["multi_hop_answer"]
        call = {"name": "multi_hop_answer", "args": {"question": DEMO}, "id": "call-1", "type": "tool_call"}
        graph = StateGraph(MessagesState)
        graph.add_node("tools", ToolNode(tools))
        graph.add_edge(START, "tools")
        graph.add_edge("tools", END)
        out = await graph.compile().ainvoke({"messages": [AIMessage(content="", tool_calls=[call])]})
        message = out["messages"][-1]
        assert message.tool_call_id == "call-1" and message.status == "success"
        assert "Hong Kong" in str(message.content) and "hops" in str(message.content)

    asyncio.run(asyncio.wait_for(main(), 60))
