"""The browser-facing web surface: portal sign-in, portal pages, connect links, provider callbacks.

`web_routes(gateway)` are this package's own routes; the local gateway mounts them next to /mcp and
the other surfaces. `create_web_app(gateway)` is what the web Lambda function serves: these routes
plus the other browser-facing ones API Gateway sends to it (the OAuth authorization server for MCP
clients, the jots host, the live-browser bridge of cookie integrations).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.routing import BaseRoute

from workbench.web.apps import apps_routes
from workbench.web.connect import connect_routes
from workbench.web.context import WebContext
from workbench.web.portal import portal_routes
from workbench.web.signin import signin_routes

if TYPE_CHECKING:
    from workbench.composition import Gateway

__all__ = ["create_web_app", "web_routes"]


def web_routes(gateway: Gateway, *, local: bool = False) -> list[BaseRoute]:
    """`local`: served by `workbench serve` (the sign-in page then points at the printed link)."""
    web = WebContext(gateway, local=local)
    return [*signin_routes(web), *portal_routes(web), *apps_routes(web), *connect_routes(web)]


def create_web_app(gateway: Gateway) -> Starlette:
    from workbench.oauth.routes import oauth_routes
    from workbench.web.browser_bridge import browser_bridge_routes
    from workbench.web.jots_host import jots_routes

    return Starlette(
        routes=[
            *oauth_routes(gateway),
            *jots_routes(gateway),
            *web_routes(gateway),
            *browser_bridge_routes(gateway),
        ]
    )
