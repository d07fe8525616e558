"""The local gateway: every surface's routes in one ASGI app, served by uvicorn on one port."""

from __future__ import annotations

from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import Receive, Scope, Send

from workbench.composition import Gateway
from workbench.guard import deadline
from workbench.guard.bodylimit import BodyRule, guarded_app
from workbench.mcp.app import BODY_RULES as MCP_BODY_RULES
from workbench.mcp.app import McpEndpoint
from workbench.oauth.routes import BODY_RULES as OAUTH_BODY_RULES
from workbench.oauth.routes import oauth_routes
from workbench.proxy.app import BODY_RULES as PROXY_BODY_RULES
from workbench.proxy.app import CurlProxy, DirectProxy, proxy_routes
from workbench.rest.app import BODY_RULES as REST_BODY_RULES
from workbench.rest.app import rest_routes
from workbench.web.app import BODY_RULES as WEB_BODY_RULES
from workbench.web.app import web_routes
from workbench.web.browser_bridge import BODY_RULES as BRIDGE_BODY_RULES
from workbench.web.browser_bridge import browser_bridge_routes
from workbench.web.jots_host import jots_routes
from workbench.web.local_signin import local_signin_routes

# Every surface's body caps, each answered in that surface's own shape (see bodylimit.py).
BODY_RULES: list[BodyRule] = [
    *MCP_BODY_RULES,
    *OAUTH_BODY_RULES,
    *REST_BODY_RULES,
    *PROXY_BODY_RULES,
    *WEB_BODY_RULES,
    *BRIDGE_BODY_RULES,
]

__all__ = ["create_local_app", "first_run"]


class LocalApp:
    """The local gateway's ASGI app: /mcp, the hot path, goes straight to the MCP endpoint (which
    caps its own body) inside the request deadline, as in the MCP function (create_mcp_app), and the
    curl proxy's requests straight to the proxy inside the same deadline and body cap as its routes
    (DirectProxy); every other path, and the lifespan, to the Starlette app of all surfaces."""

    def __init__(self, mcp: Any, app: Starlette, proxy: DirectProxy | None = None) -> None:
        self.mcp = mcp
        self.app = app
        self.proxy = proxy
        self.routes = app.routes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == "/mcp":
            await self.mcp(scope, receive, send)
        elif self.proxy is not None and self.proxy.takes(scope):
            await self.proxy(scope, receive, send)
        else:
            await self.app(scope, receive, send)


def create_local_app(gateway: Gateway) -> LocalApp:
    settings = gateway.settings
    endpoint = McpEndpoint(gateway)
    proxy = CurlProxy(gateway)  # one proxy (its verified tokens, its upstream connections) for both ways in

    async def healthz(request: Request) -> Response:
        return JSONResponse({"ok": True})

    async def prometheus(request: Request) -> Response:
        return PlainTextResponse(gateway.metrics.prometheus())

    routes: list[BaseRoute] = [
        Route("/mcp", endpoint),
        *oauth_routes(gateway),
        *jots_routes(gateway),
        *rest_routes(gateway),
        *proxy_routes(gateway, proxy=proxy),
        *local_signin_routes(gateway),
        *web_routes(gateway, local=True),
        *browser_bridge_routes(gateway),
        Route("/healthz", healthz),
        Route("/metrics", prometheus),
    ]
    mcp = deadline.DeadlineMiddleware(
        endpoint,
        budget=settings.request_deadline_seconds,
        margin=settings.deadline_margin_seconds,
    )
    return LocalApp(
        mcp,
        guarded_app(routes, BODY_RULES, middleware=deadline.middleware(settings)),
        DirectProxy(proxy, settings),
    )


def first_run(gateway: Gateway, email: str) -> str | None:
    """On the very first start, create the local user and return a fresh API key for it."""
    marker = gateway.settings.data_dir / ".initialized"
    if marker.exists():
        return None
    user = gateway.auth.sign_in(email)
    key = gateway.auth.mint_key(user, label="first run")
    marker.write_text("1\n")
    return key
