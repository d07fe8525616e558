"""Portal sign-in on the local gateway through a one-time link printed at start (like a notebook
server's token link). No password, no development flag: the link is the credential.

  GET /portal/signin/local?token=...   consume the token, set the session, go to the portal

The token is random (256 bits), stored only as its SHA-256 in the TTL store (so `workbench
signin-link` in another process can mint one for the running server), taken atomically on first
use, and accepted only from a loopback client on a loopback Host. The route is mounted by the
local app only, never by the web Lambda.
"""

from __future__ import annotations

import hashlib
import ipaddress
import secrets
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from workbench.settings import DEFAULT_PORT
from workbench.stores import OAuthState
from workbench.web.context import safe_next
from workbench.web.html import html_page, notices, redirect

if TYPE_CHECKING:
    from workbench.composition import Gateway
    from workbench.stores import User

__all__ = [
    "LOCAL_SIGNIN_PATH",
    "is_loopback_host",
    "local_signin_routes",
    "mint_signin_link",
    "signin_link_command",
]

LOCAL_SIGNIN_PATH = "/portal/signin/local"
# OAuthState.integration value that marks a local sign-in token (state = sha256 of the token).
_MARKER = "local-signin"
LINK_SECONDS = 24 * 3600


def _digest(token: str) -> str:
    return "local-signin:" + hashlib.sha256(token.encode()).hexdigest()


def is_loopback_host(host: str | None) -> bool:
    """127.0.0.0/8, ::1 or localhost (a Host header may carry brackets and a port)."""
    if not host:
        return False
    name = host.strip()
    if name.startswith("["):
        name = name[1 : name.find("]")] if "]" in name else name[1:]
    elif name.count(":") == 1:
        name = name.split(":", 1)[0]
    if name.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def signin_link_command(public_url: str) -> str:
    """The command that mints a new link for this gateway, naming its port when not the default."""
    port = urlsplit(public_url).port
    return "workbench signin-link" + (f" --port {port}" if port and port != DEFAULT_PORT else "")


def mint_signin_link(gw: Gateway, user: User, base_url: str) -> str:
    """A fresh one-time sign-in link for `user` at `base_url` (a loopback URL of the local gateway)."""
    token = secrets.token_urlsafe(32)
    gw.auth.put_state(
        OAuthState(
            state=_digest(token),
            user_id=user.id,
            integration=_MARKER,
            connection_id="",
            code_verifier="",
            redirect_uri="",
            expires_at=gw.clock() + LINK_SECONDS,
        )
    )
    return f"{base_url.rstrip('/')}{LOCAL_SIGNIN_PATH}?token={token}"


def local_signin_routes(gw: Gateway) -> list[BaseRoute]:
    async def signin(request: Request) -> Response:
        client = request.client.host if request.client else None
        if not (is_loopback_host(client) and is_loopback_host(request.headers.get("host"))):
            return html_page(
                "Sign-in link refused",
                notices(("error", "This sign-in link works only on the machine that runs the gateway.")),
                status=403,
            )
        token = request.query_params.get("token") or ""
        taken = gw.auth.take_state(_digest(token)) if token else None
        user = gw.auth.user(taken.user_id) if taken and taken.integration == _MARKER else None
        if user is None:
            body = notices(
                (
                    "error",
                    "This sign-in link was already used, has expired, or is not valid. Run "
                    f"`{signin_link_command(gw.settings.public_url)}` for a new one.",
                )
            )
            return html_page("Sign-in link not valid", body, status=400)
        response = redirect(safe_next(request.query_params.get("next"), "/portal"))
        gw.sessions.set_cookie(response, user.id)
        return response

    return [Route(LOCAL_SIGNIN_PATH, signin, methods=["GET"])]
