"""The portal's one script, served from our own origin (the CSP's `script-src 'self'`)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

__all__ = ["SCRIPT_PATH", "static_routes"]

SCRIPT_PATH = "/portal/static/portal.js"


@cache
def _script() -> bytes:
    return (Path(__file__).parent / "static" / "portal.js").read_bytes()


def static_routes() -> list[BaseRoute]:
    async def script(request: Request) -> Response:
        return Response(
            _script(),
            media_type="text/javascript; charset=utf-8",
            headers={"X-Content-Type-Options": "nosniff", "Cache-Control": "no-cache"},
        )

    async def favicon(request: Request) -> Response:
        # Browsers ask for /favicon.ico on every page; an SVG answers it (no 404 in every log).
        return Response(
            _FAVICON,
            media_type="image/svg+xml",
            headers={"X-Content-Type-Options": "nosniff", "Cache-Control": "public, max-age=86400"},
        )

    return [Route(SCRIPT_PATH, script, methods=["GET"]), Route("/favicon.ico", favicon, methods=["GET"])]


_FAVICON = (
    b'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">'
    b'<rect width="32" height="32" rx="6" fill="#2f5bd3"/>'
    b'<path d="M7 9h4l2 11 3-11h0l3 11 2-11h4l-4 15h-4l-1-4-2-7-3 11h-4z" fill="#fff"/></svg>'
)
