"""Starlette routes for POST /rest/{integration} and GET /rest/openapi.json (thin: HTTP in, HTTP out)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from workbench.errors import AuthError
from workbench.guard import deadline
from workbench.guard.bodylimit import BodyRule, guarded_app, json_413
from workbench.guard.jsontext import JsonRejected, dumps, parse_body
from workbench.identity.auth import Principal, looks_like_api_key
from workbench.rest.openapi import openapi_document
from workbench.rest.service import run_rest

if TYPE_CHECKING:
    from workbench.composition import Gateway

__all__ = ["BODY_RULES", "create_rest_app", "rest_routes"]

MAX_BODY = 4 * 1024 * 1024
BODY_RULES = [BodyRule("/rest/", MAX_BODY, json_413(lambda exc: {"error": str(exc)}))]


def _json(status: int, body: Any, headers: dict[str, str] | None = None) -> Response:
    return Response(dumps(body), status, headers=headers, media_type="application/json")


async def _authenticate(gw: Gateway, request: Request) -> Principal:
    """API keys only: OAuth access tokens are minted for /mcp and are not accepted here."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not looks_like_api_key(token):
        raise AuthError("a Workbench API key is required")
    return await gw.auth.authenticate(token)


def rest_routes(gateway: Gateway) -> list[Route]:
    async def run(request: Request) -> Response:
        try:
            principal = await _authenticate(gateway, request)
        except AuthError:
            return _json(401, {"error": "Unauthorized"}, {"WWW-Authenticate": 'Bearer realm="workbench"'})
        try:
            payload = await parse_body(
                await request.body()
            )  # at most MAX_BODY: BodyLimit stops the read past it
        except JsonRejected as exc:
            return _json(400, {"error": f"Malformed JSON body: {exc}"})
        reply = await run_rest(gateway, principal, request.path_params["integration"], payload)
        return _json(reply.status, reply.body, {"Retry-After": "2"} if reply.status == 503 else None)

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
    return guarded_app(rest_routes(gateway), BODY_RULES, middleware=deadline.middleware(gateway.settings))
