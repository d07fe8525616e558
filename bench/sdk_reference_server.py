"""The comparison point for bench/mcp_throughput.py: a minimal stateless server built on the
official `mcp` SDK, serving one no-op tool with JSON responses. Usage: python sdk_reference_server.py PORT"""

from __future__ import annotations

import sys

import uvicorn
from mcp.server import MCPServer

server = MCPServer("sdk-reference")


@server.tool()
def noop() -> str:
    """Do nothing."""
    return '{"ok": true}'


if __name__ == "__main__":
    app = server.streamable_http_app(json_response=True, stateless_http=True)
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
