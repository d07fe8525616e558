"""Starlette app for POST /mcp (also what the MCP Lambda function serves)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from workbench.mcp.protocol import McpServer

if TYPE_CHECKING:
    from workbench.composition import Gateway

__all__ = ["create_mcp_app", "mcp_routes"]

_MAX_BODY = 4 * 1024 * 1024


def _origin_allowed(origin: str, public_url: str) -> bool:
    """Browsers send Origin; only our own origin and loopback pages may call /mcp (DNS rebinding)."""
    parsed = urlsplit(origin)
    own = urlsplit(public_url)
    if (parsed.scheme, parsed.netloc) == (own.scheme, own.netloc):
        return True
    return parsed.hostname in ("localhost", "127.0.0.1", "::1") and own.hostname in (
        "localhost",
        "127.0.0.1",
        "::1",
    )


def mcp_routes(gateway: Gateway) -> list[Route]:
    server = McpServer(gateway)

    async def post(request: Request) -> Response:
        origin = request.headers.get("origin")
        if origin and not _origin_allowed(origin, gateway.settings.public_url):
            body = {"jsonrpc": "2.0", "error": {"code": -32600, "message": "Forbidden origin"}}
            return Response(json.dumps(body), 403, media_type="application/json")
        raw = await request.body()
        if len(raw) > _MAX_BODY:
            return Response("request body too large", 413)
        headers = {k.lower(): v.strip(" \t") for k, v in request.headers.items()}  # HTTP trims OWS
        reply = await server.handle(raw, headers)
        if reply.body is None:
            return Response(status_code=reply.status, headers=reply.headers)
        return Response(
            json.dumps(reply.body, ensure_ascii=False, default=str),
            reply.status,
            headers=reply.headers,
            media_type="application/json",
        )

    async def not_allowed(request: Request) -> Response:
        return Response(status_code=405, headers={"Allow": "POST"})

    return [Route("/mcp", post, methods=["POST"]), Route("/mcp", not_allowed, methods=["GET", "DELETE"])]


def create_mcp_app(gateway: Gateway) -> Starlette:
    return Starlette(routes=mcp_routes(gateway))
