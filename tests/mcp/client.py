"""The Python MCP SDK's client against `discbench serve --mode mcp-resource`, doing what
the MCP Progressive Disclosure guide's integration test does: list the tools and the
resources, call a tool before reading its description (refused), read the resource
without ?tools= (refused), read it with ?tools=, then call the tool (it succeeds).
Prints one JSON object with what it saw, for tests/mcp.rs to check.

Usage: python client.py TOOL ARGS_JSON COMMAND ARG...   (stdio: the client starts the server)
       python client.py TOOL ARGS_JSON URL              (Streamable HTTP)
"""

import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client


def text(result):
    return result.content[0].text


async def main():
    tool, args = sys.argv[1], json.loads(sys.argv[2])
    if sys.argv[3].startswith("http"):
        transport = streamable_http_client(sys.argv[3])
    else:
        transport = stdio_client(StdioServerParameters(command=sys.argv[3], args=sys.argv[4:]))
    seen = {}
    async with transport as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            seen["server"] = init.server_info.name
            seen["protocol_version"] = init.protocol_version
            seen["instructions"] = init.instructions
            tools = await session.list_tools()
            seen["tools"] = {t.name: {"description": t.description, "input_schema": t.input_schema} for t in tools.tools}
            resources = await session.list_resources()
            seen["resources"] = [{"uri": str(r.uri), "description": r.description} for r in resources.resources]
            before = await session.call_tool(tool, args)
            seen["call_before_read"] = {"is_error": before.is_error, "text": text(before)}
            bare = await session.read_resource("resource:///tool_descriptions")
            seen["read_without_tools"] = bare.contents[0].text
            full = await session.read_resource(f"resource:///tool_descriptions?tools={tool}")
            seen["read"] = full.contents[0].text
            after = await session.call_tool(tool, args)
            seen["call_after_read"] = {"is_error": after.is_error, "text": text(after)}
    print(json.dumps(seen))


asyncio.run(main())
