"""OAuth 2.1 authorization server for MCP clients: `OAuthServer` (the rules, built by the composition
root as `gateway.oauth`) and `oauth_routes(gateway)` (its HTTP surface). See docs/oauth.md."""

from __future__ import annotations

from workbench.oauth.errors import OAuthError, RedirectableError
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
    # The routes pull in Starlette and the web helpers; only the surfaces that serve them import it.
    if name == "oauth_routes":
        from workbench.oauth.routes import oauth_routes

        return oauth_routes
    raise AttributeError(name)
