"""A loopback reverse proxy that adds `Authorization: Bearer <key>` to every request.

The MCP conformance suite cannot send credentials; this lets it reach the real, authenticated
gateway unchanged. Usage: python -m tests.support.auth_proxy <upstream base> <api key> <port>
"""

from __future__ import annotations

import sys

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

_HOP = {"host", "content-length", "connection", "transfer-encoding", "content-encoding"}


def build(upstream: str, key: str) -> Starlette:
    client = httpx.AsyncClient(timeout=60)

    async def forward(request: Request) -> Response:
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP}
        headers["authorization"] = f"Bearer {key}"
        resp = await client.request(
            request.method,
            upstream + request.url.path,
            params=request.query_params,
            content=await request.body(),
            headers=headers,
        )
        out = {k: v for k, v in resp.headers.items() if k.lower() not in _HOP}
        return Response(resp.content, resp.status_code, headers=out)

    async def health(request: Request) -> Response:
        return Response("ok")

    return Starlette(
        routes=[
            Route("/__proxy_health", health),
            Route("/{path:path}", forward, methods=["GET", "POST", "DELETE"]),
        ]
    )


if __name__ == "__main__":
    upstream, key, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    uvicorn.run(build(upstream, key), host="127.0.0.1", port=port, log_level="warning")
