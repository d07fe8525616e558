"""Starlette app for POST /mcp (also what the MCP Lambda function serves)."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from workbench import deadline
from workbench.auth import Principal
from workbench.bodylimit import BodyRule, guarded_app, json_413
from workbench.jsontext import dumps
from workbench.mcp.protocol import INVALID_REQUEST, McpServer
from workbench.web.sessions import SESSION_COOKIE

if TYPE_CHECKING:
    from workbench.composition import Gateway

__all__ = ["BODY_RULES", "CSRF_HEADER", "create_mcp_app", "mcp_routes"]

# The portal's playground calls /mcp with its session cookie and this header (seed 003's session path).
CSRF_HEADER = "x-csrf-token"

MAX_BODY = 4 * 1024 * 1024
# Over the cap: 413 with a JSON-RPC error that has no id (the request was never read).
BODY_RULES = [
    BodyRule(
        "/mcp",
        MAX_BODY,
        json_413(
            lambda exc: {
                "jsonrpc": "2.0",
                "id": None,
                "error": {"code": INVALID_REQUEST, "message": str(exc)},
            }
        ),
    )
]


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


def _same_origin(origin: str, request: Request, public_url: str) -> bool:
    """Exactly our own origin: the public URL's, or the origin this request was addressed to."""
    got = urlsplit(origin)
    own = urlsplit(public_url)
    return (got.scheme, got.netloc) in ((own.scheme, own.netloc), (request.url.scheme, request.url.netloc))


def _refused(message: str) -> Response:
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": message}}
    return Response(dumps(body), 403, media_type="application/json")


def _session_principal(gateway: Gateway, request: Request) -> Principal | Response:
    """The portal user behind a cookie-authenticated call, or a 403. A browser page may use the
    session only from our own origin (Origin exact, never another loopback port), with the CSRF
    token the portal issued for that session; a cross-site fetch cannot read that token."""
    origin = request.headers.get("origin")
    if not origin or not _same_origin(origin, request, gateway.settings.public_url):
        return _refused("Forbidden: a portal session is accepted only from the portal's own origin")
    if request.headers.get("sec-fetch-site", "same-origin") != "same-origin":
        return _refused("Forbidden: a portal session is accepted only from the portal's own origin")
    if not gateway.sessions.check_csrf(request, request.headers.get(CSRF_HEADER)):
        return _refused("Forbidden: a portal session needs the portal's CSRF token (X-CSRF-Token)")
    user = gateway.sessions.current_user(request, gateway.stores.users)
    if user is None:
        return _refused("Forbidden: the portal session has expired; sign in again")
    return Principal(user=user, via="session")


def mcp_routes(gateway: Gateway) -> list[Route]:
    server = McpServer(gateway)

    async def post(request: Request) -> Response:
        origin = request.headers.get("origin")
        if origin and not _origin_allowed(origin, gateway.settings.public_url):
            body = {"jsonrpc": "2.0", "error": {"code": INVALID_REQUEST, "message": "Forbidden origin"}}
            return Response(dumps(body), 403, media_type="application/json")
        raw = await request.body()  # at most MAX_BODY: BodyLimit stops the read past it
        headers = {k.lower(): v.strip(" \t") for k, v in request.headers.items()}  # HTTP trims OWS
        principal: Principal | None = None
        if "authorization" not in headers and SESSION_COOKIE in request.cookies:
            # No bearer token but a portal session: seed 003's third way in, same parsing after it.
            session = await gateway.store_io.run(_session_principal, gateway, request)  # reads the user
            if isinstance(session, Response):
                return session
            principal = session
        reply = await server.handle(raw, headers, principal)
        if reply.body is None:
            return Response(status_code=reply.status, headers=reply.headers)
        return Response(
            dumps(reply.body),
            reply.status,
            headers=reply.headers,
            media_type="application/json",
        )

    async def not_allowed(request: Request) -> Response:
        return Response(status_code=405, headers={"Allow": "POST"})

    return [Route("/mcp", post, methods=["POST"]), Route("/mcp", not_allowed, methods=["GET", "DELETE"])]


def create_mcp_app(gateway: Gateway) -> Starlette:
    return guarded_app(mcp_routes(gateway), BODY_RULES, middleware=deadline.middleware(gateway.settings))
