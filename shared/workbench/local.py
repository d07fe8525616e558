"""The local gateway: every surface's routes in one ASGI app, served by uvicorn on one port."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Route

from workbench.composition import Gateway
from workbench.mcp.app import mcp_routes
from workbench.oauth.routes import oauth_routes
from workbench.proxy.app import proxy_routes
from workbench.rest.app import rest_routes
from workbench.web.app import web_routes
from workbench.web.browser_bridge import browser_bridge_routes
from workbench.web.jots_host import jots_routes
from workbench.web.local_signin import local_signin_routes

__all__ = ["create_local_app", "first_run"]


def create_local_app(gateway: Gateway) -> Starlette:
    async def healthz(request: Request) -> Response:
        return JSONResponse({"ok": True})

    async def prometheus(request: Request) -> Response:
        return PlainTextResponse(gateway.metrics.prometheus())

    routes: list[BaseRoute] = [
        *mcp_routes(gateway),
        *oauth_routes(gateway),
        *jots_routes(gateway),
        *rest_routes(gateway),
        *proxy_routes(gateway),
        *local_signin_routes(gateway),
        *web_routes(gateway, local=True),
        *browser_bridge_routes(gateway),
        Route("/healthz", healthz),
        Route("/metrics", prometheus),
    ]
    return Starlette(routes=routes)


def first_run(gateway: Gateway, email: str) -> str | None:
    """On the very first start, create the local user and return a fresh API key for it."""
    marker = gateway.settings.data_dir / ".initialized"
    if marker.exists():
        return None
    user = gateway.stores.users.get_or_create(email)
    key = gateway.api_keys.mint(user, label="first run")
    marker.write_text("1\n")
    return key
