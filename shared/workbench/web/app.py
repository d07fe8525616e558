"""The browser-facing web surface: portal sign-in, portal pages, connect links, provider callbacks.

`web_routes(gateway)` are this package's own routes; the local gateway mounts them next to /mcp and
the other surfaces. `create_web_app(gateway)` is what the web Lambda function serves: these routes
plus the other browser-facing ones API Gateway sends to it (the OAuth authorization server for MCP
clients, the jots host, the live-browser bridge of cookie integrations).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute

from workbench.guard import deadline
from workbench.guard.bodylimit import BodyRule, BodyTooLarge
from workbench.web.activity import activity_routes
from workbench.web.apps import BODY_RULES as APPS_BODY_RULES
from workbench.web.apps import apps_routes
from workbench.web.catalog import catalog_routes
from workbench.web.client_setup import client_setup_routes
from workbench.web.connect import connect_routes
from workbench.web.context import MAX_FORM_BYTES, WebContext
from workbench.web.grants import grant_routes
from workbench.web.html import json_response, too_large_page
from workbench.web.playground import playground_routes
from workbench.web.portal import portal_routes
from workbench.web.signin import signin_routes
from workbench.web.static import static_routes

if TYPE_CHECKING:
    from workbench.composition import Gateway

__all__ = ["BODY_RULES", "create_web_app", "web_routes"]


def _too_large_redeem(request: Request, exc: BodyTooLarge) -> Response:
    """The redeem endpoint answers its JSON callers in JSON and the link page's form with a page."""
    if request.headers.get("content-type", "").split(";")[0].strip().lower() == "application/json":
        return json_response({"error": str(exc)}, 413)
    return too_large_page(request, exc)


# Browser-facing posts (portal forms, sign-in, consent, jots sharing): an HTML page; the rules of
# the OAuth endpoints and the live-browser bridge are more specific and win where they apply.
BODY_RULES = [
    BodyRule("/", MAX_FORM_BYTES, too_large_page),
    BodyRule("/api/connect/redeem", MAX_FORM_BYTES, _too_large_redeem),
    *APPS_BODY_RULES,
]


def web_routes(gateway: Gateway, *, local: bool = False) -> list[BaseRoute]:
    """`local`: served by `workbench serve` (the sign-in page then points at the printed link)."""
    web = WebContext(gateway, local=local)
    return [
        *signin_routes(web),
        *grant_routes(web),  # before portal_routes: /portal/api-keys/{id}/access is not a key action
        *portal_routes(web),
        *apps_routes(web),
        *client_setup_routes(web),
        *activity_routes(web),
        *catalog_routes(web),
        *playground_routes(web),
        *static_routes(),
        *connect_routes(web),
    ]


def create_web_app(gateway: Gateway) -> Starlette:
    from workbench.guard.bodylimit import guarded_app
    from workbench.oauth.routes import BODY_RULES as OAUTH_BODY_RULES
    from workbench.oauth.routes import oauth_routes
    from workbench.web.browser_bridge import BODY_RULES as BRIDGE_BODY_RULES
    from workbench.web.browser_bridge import browser_bridge_routes
    from workbench.web.jots_host import jots_routes

    return guarded_app(
        [
            *oauth_routes(gateway),
            *jots_routes(gateway),
            *web_routes(gateway),
            *browser_bridge_routes(gateway),
        ],
        [*BODY_RULES, *OAUTH_BODY_RULES, *BRIDGE_BODY_RULES],
        middleware=deadline.middleware(gateway.settings),
    )
