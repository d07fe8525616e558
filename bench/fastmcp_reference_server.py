"""The comparison point issue 14 names for bench/mcp_throughput.py: a FastMCP (PyPI `fastmcp`) server,
stateless with JSON responses, serving one no-op tool. Usage: python fastmcp_reference_server.py PORT"""

from __future__ import annotations

import sys

import uvicorn
from fastmcp import FastMCP

server = FastMCP("fastmcp-reference")


@server.tool
def noop() -> str:
    """Do nothing."""
    return '{"ok": true}'


if __name__ == "__main__":
    app = server.http_app(path="/mcp", json_response=True, stateless_http=True)
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
