"""The floor for bench/mcp_throughput.py: the same uvicorn, serving a bare ASGI app that answers every
POST with a fixed JSON-RPC tools/call result (no parsing, no auth, no tool). No MCP server on this
HTTP stack can answer faster; its throughput bounds any ratio the benchmark can print.
Usage: python asgi_floor_server.py PORT"""

from __future__ import annotations

import sys
from typing import Any

import uvicorn

BODY = b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{\\"ok\\": true}"}],"isError":false}}'
HEADERS = [(b"content-type", b"application/json"), (b"content-length", str(len(BODY)).encode())]


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    more = True
    while more:
        more = (await receive()).get("more_body", False)
    await send({"type": "http.response.start", "status": 200, "headers": HEADERS})
    await send({"type": "http.response.body", "body": BODY})


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", lifespan="off")
