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

    return [Route(SCRIPT_PATH, script, methods=["GET"])]
