"""How `workbench serve` runs its app on uvicorn: uvicorn's C HTTP parser (httptools) and event loop
(uvloop) when installed, with the request-target rules h11 gave us kept.

httptools parses the request target itself and hands the app only its path and query, so a
fragment (`/c/x/items#/../../admin`) or an absolute-form target (`GET http://host/c/...`) would
reach the app looking like an ordinary path. h11 passed them through and the routes refused them;
here they are refused with 400 before the app is called: a client sends an origin-form target
(`/path?query`), or `*` for `OPTIONS *`."""

from __future__ import annotations

from typing import Any

__all__ = ["http_protocol", "server_options"]


def server_options(trusted_proxies: tuple[str, ...]) -> dict[str, Any]:
    """uvicorn settings for the client address: uvicorn believes X-Forwarded-For from loopback peers by
    default, which would let anyone on the machine (or behind a local tunnel) pick their address for
    the per-address limits. Only the proxies the operator names (Settings.trusted_proxies) are
    believed; with none, the address is always the connection's peer."""
    if not trusted_proxies:
        return {"proxy_headers": False}
    return {"proxy_headers": True, "forwarded_allow_ips": list(trusted_proxies)}


def http_protocol() -> Any:
    """uvicorn's `http` setting: the strict httptools protocol, or h11 when httptools is missing."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:  # a platform without httptools wheels: uvicorn's pure-Python parser
        return "h11"

    class StrictTargetHttpTools(HttpToolsProtocol):
        def on_headers_complete(self) -> None:
            target = self.url
            if b"#" in target or not (target.startswith(b"/") or target == b"*"):
                # Raised inside a parser callback: uvicorn answers 400 and closes the connection.
                raise ValueError("the request target must be origin-form (/path?query)")
            super().on_headers_complete()

    return StrictTargetHttpTools
