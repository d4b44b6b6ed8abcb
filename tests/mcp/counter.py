"""A small stateful MCP server over stdio, for the tests of live servers judged by
state (tests/mcp.rs): a counter per process, tools `add(n)` and `get()`, and the state
as the resource `counter://state`. Standard library only; one JSON-RPC message a line.
With `--crash-on N`, the process exits when asked to add N (a server that dies)."""

import json
import sys

TOOLS = [
    {
        "name": "add",
        "description": "Add n to the counter and return the new value.",
        "inputSchema": {
            "type": "object",
            "properties": {"n": {"type": "integer"}},
            "required": ["n"],
        },
    },
    {
        "name": "get",
        "description": "Read the counter.",
        "inputSchema": {"type": "object", "properties": {}},
    },
]


def main():
    crash_on = None
    if "--crash-on" in sys.argv:
        crash_on = int(sys.argv[sys.argv.index("--crash-on") + 1])
    counter = {"value": 0}
    for line in sys.stdin:
        if not line.strip():
            continue
        msg = json.loads(line)
        if "id" not in msg:
            continue  # a notification
        method, params = msg.get("method"), msg.get("params") or {}
        result, error = None, None
        if method == "initialize":
            result = {
                "protocolVersion": params.get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {}, "resources": {}},
                "serverInfo": {"name": "counter", "version": "1.0.0"},
            }
        elif method == "tools/list":
            result = {"tools": TOOLS}
        elif method == "tools/call":
            name, args = params.get("name"), params.get("arguments") or {}
            if name == "add" and isinstance(args.get("n"), int):
                if args["n"] == crash_on:
                    sys.exit(3)
                counter["value"] += args["n"]
                text, is_error = str(counter["value"]), False
            elif name == "get":
                text, is_error = str(counter["value"]), False
            else:
                text, is_error = "bad call", True
            result = {"content": [{"type": "text", "text": text}], "isError": is_error}
        elif method == "resources/list":
            result = {"resources": [{"uri": "counter://state", "name": "state"}]}
        elif method == "resources/read":
            result = {
                "contents": [
                    {
                        "uri": "counter://state",
                        "mimeType": "application/json",
                        "text": json.dumps(counter, sort_keys=True),
                    }
                ]
            }
        elif method == "ping":
            result = {}
        else:
            error = {"code": -32601, "message": "method not found"}
        out = {"jsonrpc": "2.0", "id": msg["id"]}
        if error:
            out["error"] = error
        else:
            out["result"] = result
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
