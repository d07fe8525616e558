"""Starlette routes for POST /rest/{integration} and GET /rest/openapi.json (thin: HTTP in, HTTP out)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from workbench.auth import Principal, looks_like_api_key
from workbench.errors import AuthError
from workbench.rest.openapi import openapi_document
from workbench.rest.service import run_rest

if TYPE_CHECKING:
    from workbench.composition import Gateway

__all__ = ["create_rest_app", "rest_routes"]

MAX_BODY = 4 * 1024 * 1024


def _json(status: int, body: Any, headers: dict[str, str] | None = None) -> Response:
    return Response(
        json.dumps(body, ensure_ascii=False, default=str),
        status,
        headers=headers,
        media_type="application/json",
    )


def _authenticate(gw: Gateway, request: Request) -> Principal:
    """API keys only: OAuth access tokens are minted for /mcp and are not accepted here."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not looks_like_api_key(token):
        raise AuthError("a Workbench API key is required")
    return gw.api_keys.resolve(token)


def rest_routes(gateway: Gateway) -> list[Route]:
    async def run(request: Request) -> Response:
        try:
            principal = _authenticate(gateway, request)
        except AuthError:
            return _json(401, {"error": "Unauthorized"}, {"WWW-Authenticate": 'Bearer realm="workbench"'})
        raw = b""
        async for chunk in request.stream():
            raw += chunk
            if len(raw) > MAX_BODY:
                return _json(413, {"error": "Request body too large (max 4 MiB)"})
        try:
            payload = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            return _json(400, {"error": "Malformed JSON body"})
        reply = await run_rest(gateway, principal, request.path_params["integration"], payload)
        return _json(reply.status, reply.body)

    async def not_allowed(request: Request) -> Response:
        return _json(405, {"error": "Method not allowed; use POST"}, {"Allow": "POST"})

    async def openapi(request: Request) -> Response:
        return _json(200, openapi_document(gateway))

    return [
        Route("/rest/openapi.json", openapi, methods=["GET"]),
        Route("/rest/{integration}", run, methods=["POST"]),
        Route("/rest/{integration}", not_allowed, methods=["GET", "PUT", "PATCH", "DELETE"]),
    ]


def create_rest_app(gateway: Gateway) -> Starlette:
    return Starlette(routes=rest_routes(gateway))
