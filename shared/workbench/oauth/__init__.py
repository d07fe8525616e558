"""OAuth 2.1 authorization server for MCP clients: `OAuthServer` (the rules, built by the composition
root as `gateway.oauth`) and `oauth_routes(gateway)` (its HTTP surface). See docs/oauth.md."""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench.oauth.errors import OAuthError, RedirectableError

if TYPE_CHECKING:
    from workbench.oauth.routes import oauth_routes
    from workbench.oauth.service import AuthorizationRequest, ClientGrant, OAuthServer

__all__ = [
    "AuthorizationRequest",
    "ClientGrant",
    "OAuthError",
    "OAuthServer",
    "RedirectableError",
    "oauth_routes",
]


def __getattr__(name: str) -> object:
    # Imported on first use: the routes pull in Starlette and the web helpers (only the surfaces that
    # serve them import it); the server pulls in its client registry and the egress guard (httpx),
    # which the web function's first page, importing the routes with the rest of its surface, never
    # needs (tests/aws/test_cold_start_imports.py).
    if name == "oauth_routes":
        from workbench.oauth.routes import oauth_routes

        return oauth_routes
    if name in ("AuthorizationRequest", "ClientGrant", "OAuthServer"):
        from workbench.oauth import service

        return getattr(service, name)
    raise AttributeError(name)
