"""POST /mcp as a bare ASGI app: what the MCP Lambda function serves, and the /mcp route of the
local gateway.

No web framework on this path: the JSON-RPC work happens in `McpServer` (protocol.py), and around
it there is only an origin check, a capped body read and the optional portal-session check, so an
API-key request imports no Starlette (a cold start pays for what the request needs). The portal
session path, which browsers use, builds a Starlette `Request` on demand.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from workbench.errors import WorkbenchError
from workbench.guard import deadline
from workbench.guard.bodylimit import BodyRule, BodyTooLarge, json_413
from workbench.guard.jsontext import dumps
from workbench.guard.outage import OutageGuard
from workbench.identity.auth import Principal
from workbench.mcp.protocol import INVALID_REQUEST, McpServer

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.routing import Route
    from starlette.types import Receive, Scope, Send

    from workbench.composition import Gateway

__all__ = ["BODY_RULES", "CSRF_HEADER", "McpEndpoint", "create_mcp_app", "mcp_routes"]

# The portal's playground calls /mcp with its session cookie and this header (seed 003's session path).
CSRF_HEADER = "x-csrf-token"
# The portal's session cookie (workbench.web.sessions.SESSION_COOKIE, not imported on this path).
_SESSION_COOKIE = "__Host-wb_session"

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


class _Refused(WorkbenchError):
    """A portal-session call that may not use the session (answered 403)."""


def _session_principal(gateway: Gateway, request: Request) -> Principal:
    """The portal user behind a cookie-authenticated call (else `_Refused`). A browser page may use
    the session only from our own origin (Origin exact, never another loopback port), with the CSRF
    token the portal issued for that session; a cross-site fetch cannot read that token."""
    origin = request.headers.get("origin")
    if not origin or not _same_origin(origin, request, gateway.settings.public_url):
        raise _Refused("Forbidden: a portal session is accepted only from the portal's own origin")
    if request.headers.get("sec-fetch-site", "same-origin") != "same-origin":
        raise _Refused("Forbidden: a portal session is accepted only from the portal's own origin")
    if not gateway.sessions.check_csrf(request, request.headers.get(CSRF_HEADER)):
        raise _Refused("Forbidden: a portal session needs the portal's CSRF token (X-CSRF-Token)")
    user = gateway.sessions.current_user(request, gateway.auth.user)
    if user is None:
        raise _Refused("Forbidden: the portal session has expired; sign in again")
    return Principal(user=user, via="session")


def _has_session_cookie(cookie_header: str) -> bool:
    return any(part.strip().startswith(_SESSION_COOKIE + "=") for part in cookie_header.split(";"))


async def _reply(send: Send, status: int, body: Any = None, headers: dict[str, str] | None = None) -> None:
    raw = b"" if body is None else dumps(body).encode()
    out = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in (headers or {}).items()]
    if body is not None:
        out.append((b"content-type", b"application/json"))
    out.append((b"content-length", str(len(raw)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": out})
    await send({"type": "http.response.body", "body": raw})


def _rpc_error(message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": message}}


class McpEndpoint:
    """The /mcp endpoint as an ASGI app: POST runs JSON-RPC, any other method is 405."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self.server = McpServer(gateway)
        # A store or KMS outage outside a JSON-RPC dispatch (the session read) is a JSON-RPC error too.
        self._guarded = OutageGuard(self._serve)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._guarded(scope, receive, send)

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] != "POST":
            await _reply(send, 405, headers={"Allow": "POST"})
            return
        # Header values as HTTP defines them: names case-insensitive, surrounding whitespace trimmed.
        headers: dict[str, str] = {}
        for name, value in scope["headers"]:
            key = name.decode("latin-1").lower()
            text = value.decode("latin-1").strip(" \t")
            headers[key] = f"{headers[key]}, {text}" if key in headers and key != "cookie" else text
        origin = headers.get("origin")
        if origin and not _origin_allowed(origin, self.gateway.settings.public_url):
            await _reply(
                send,
                403,
                {"jsonrpc": "2.0", "error": {"code": INVALID_REQUEST, "message": "Forbidden origin"}},
            )
            return
        try:
            raw = await _read_body(scope, receive)
        except BodyTooLarge as exc:  # the rest is not read: close rather than drain it for keep-alive
            await _reply(send, 413, _rpc_error(str(exc)), {"Connection": "close"})
            return
        principal: Principal | None = None
        if "authorization" not in headers and _has_session_cookie(headers.get("cookie", "")):
            # No bearer token but a portal session: seed 003's third way in, same parsing after it.
            from starlette.requests import Request

            try:  # reads the user: off the event loop
                principal = await self.gateway.store_io.run(_session_principal, self.gateway, Request(scope))
            except _Refused as refused:
                await _reply(send, 403, _rpc_error(str(refused)))
                return
        reply = await self.server.handle(raw, headers, principal)
        await _reply(send, reply.status, reply.body, reply.headers)


async def _read_body(scope: Scope, receive: Receive) -> bytes:
    """The request body, capped at MAX_BODY while it streams in (BodyTooLarge past it): a declared
    Content-Length over the cap is refused before a byte is read. The endpoint enforces its own cap,
    so its hot path needs no body-limit middleware around it."""
    for name, value in scope["headers"]:
        if name == b"content-length" and value.isdigit() and int(value) > MAX_BODY:
            raise BodyTooLarge(MAX_BODY)
    chunks: list[bytes] = []
    received = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        received += len(chunk)
        if received > MAX_BODY:
            raise BodyTooLarge(MAX_BODY)
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


class _McpApp:
    """The MCP function's whole app: /mcp, a 404 for any other path, lifespan acknowledged."""

    def __init__(self, endpoint: McpEndpoint) -> None:
        self.endpoint = endpoint

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                kind = message["type"].removeprefix("lifespan.")
                await send({"type": f"lifespan.{kind}.complete"})
                if kind == "shutdown":
                    return
        if scope["type"] != "http":
            return
        if scope["path"] != "/mcp":
            await _reply(send, 404, {"error": "Not Found"})
            return
        await self.endpoint(scope, receive, send)


def mcp_routes(gateway: Gateway) -> list[Route]:
    """/mcp for an app that has other routes too (the local gateway)."""
    from starlette.routing import Route

    return [Route("/mcp", McpEndpoint(gateway))]


def create_mcp_app(gateway: Gateway) -> Any:
    """The MCP function's ASGI app: the request deadline around /mcp (which caps its own body)."""
    settings = gateway.settings
    return deadline.DeadlineMiddleware(
        _McpApp(McpEndpoint(gateway)),
        budget=settings.request_deadline_seconds,
        margin=settings.deadline_margin_seconds,
    )
