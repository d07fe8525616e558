"""A store or KMS outage answered in each surface's documented shape, never as a bare 500.

When DynamoDB or KMS throttles, answers 5xx, times out or drops the connection (after the AWS
client's own retries), the request cannot be served *this time* and nothing was decided. Whatever
handler was running, `OutageGuard` (outermost in every app) answers:

  /token, /register, /revoke      503, RFC 6749 §5.2 style: {"error": "temporarily_unavailable",
                                  "error_description": ...}, Cache-Control: no-store
  /mcp                            503, a JSON-RPC error (code -32000) the MCP SDK hands to its caller
  /rest/..., /c/... (the proxy),  503 JSON {"error": "TEMPORARILY_UNAVAILABLE", "message": ...}
  /api/..., other JSON clients
  the portal's pages              503, an HTML page that says to try again

each with `Retry-After`. The words never carry the AWS message or an exception name (those go to
the log, one line, no traceback). Anything that is not an outage is left to the layers below.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

from workbench.errors import Unavailable, as_unavailable

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["RPC_UNAVAILABLE", "OutageGuard", "log_outage", "outage_body", "outage_reply"]

logger = logging.getLogger("workbench.outage")

RPC_UNAVAILABLE = -32000  # JSON-RPC's implementation-defined server error range
_OAUTH_PATHS = ("/token", "/register", "/revoke")


def outage_body(path: str, outage: Unavailable) -> tuple[str, bytes]:
    """(content type, body) of the outage answer for a request to `path`."""
    message = str(outage)
    if path in _OAUTH_PATHS:
        body: Any = {"error": "temporarily_unavailable", "error_description": message}
    elif path == "/mcp" or path.startswith("/mcp/"):
        body = {
            "jsonrpc": "2.0",
            "id": None,
            "error": {
                "code": RPC_UNAVAILABLE,
                "message": message,
                "data": {"retryAfter": outage.retry_after},
            },
        }
    elif _wants_html(path):
        # A page of its own (this guard sits below the web surface): no script, no other origin.
        import html  # only for this page: its import (html.entities) is 1 ms of every cold start

        page = (
            '<!doctype html><html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            "<title>Temporarily unavailable · Workbench</title></head><body>"
            '<main id="main" style="max-width:40rem;margin:2rem auto;font:16px/1.5 system-ui,sans-serif">'
            "<h1>Temporarily unavailable</h1>"
            f'<p role="alert">{html.escape(message)}</p><p><a href="">Try again</a></p></main></body></html>'
        )
        return "text/html; charset=utf-8", page.encode()
    else:
        body = {"error": "TEMPORARILY_UNAVAILABLE", "message": message}
    return "application/json", json.dumps(body, separators=(",", ":")).encode()


def outage_reply(path: str, outage: Unavailable) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    kind, body = outage_body(path, outage)
    headers = [
        (b"content-type", kind.encode()),
        (b"content-length", str(len(body)).encode()),
        (b"retry-after", str(outage.retry_after).encode()),
        (b"cache-control", b"no-store"),
        (b"x-content-type-options", b"nosniff"),
    ]
    if kind.startswith("text/html"):  # the portal's rules: nothing runs, nothing frames it
        headers += [
            (
                b"content-security-policy",
                b"default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
            ),
            (b"x-frame-options", b"DENY"),
        ]
    return 503, headers, body


def log_outage(path: str, outage: Unavailable) -> None:
    logger.warning("%s unavailable for %s: %s", outage.what, path, outage.detail or "-")


def _wants_html(path: str) -> bool:
    return not (
        path.startswith(("/rest", "/c/", "/api/", "/.well-known/", "/jwks", "/metrics", "/healthz"))
        or path.endswith(".json")
    )


class OutageGuard:
    """ASGI middleware: an outage raised before the response started is answered in the shape of
    the path's surface (see the module docstring); everything else passes through untouched."""

    def __init__(self, app: ASGIApp | Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking(message: Any) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracking)
        except Exception as exc:
            outage = as_unavailable(exc)
            if outage is None or started:
                raise
            path = str(scope.get("path") or "")
            log_outage(path, outage)
            status, headers, body = outage_reply(path, outage)
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": body})
