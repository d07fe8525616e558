"""The curl proxy surface: /c/<integration>/<path> (its tokens: workbench.services.curl)."""

from workbench.proxy.app import create_proxy_app, proxy_routes

__all__ = ["create_proxy_app", "proxy_routes"]
