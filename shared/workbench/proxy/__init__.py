"""The curl proxy surface: curl_session tokens and /c/<integration>/<path>."""

from workbench.proxy.app import create_proxy_app, proxy_routes
from workbench.proxy.session import mint_curl_session

__all__ = ["create_proxy_app", "mint_curl_session", "proxy_routes"]
