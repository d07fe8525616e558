"""The browser-facing web surface: portal sign-in, portal pages, connect links, provider callbacks.

`web_routes(gateway)` is mounted by the local gateway next to /mcp; `create_web_app(gateway)` is
what the web Lambda function serves. (The OAuth authorization server for MCP clients mounts its
own routes from workbench.oauth.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.routing import BaseRoute

from workbench.web.connect import connect_routes
from workbench.web.context import WebContext
from workbench.web.portal import portal_routes
from workbench.web.signin import signin_routes

if TYPE_CHECKING:
    from workbench.composition import Gateway

__all__ = ["create_web_app", "web_routes"]


def web_routes(gateway: Gateway) -> list[BaseRoute]:
    web = WebContext(gateway)
    return [*signin_routes(web), *portal_routes(web), *connect_routes(web)]


def create_web_app(gateway: Gateway) -> Starlette:
    return Starlette(routes=web_routes(gateway))
