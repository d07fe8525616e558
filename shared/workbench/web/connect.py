"""The browser half of `connect` (seed 003, "Connecting an integration").

GET  /connect/{connectionId}                     the link the agent handed out: sign in, then continue
POST /api/connect/redeem {token, login_host?}   same user only (else 403 ACCOUNT_MISMATCH); builds the
                                                 PKCE verifier + state and answers the consent URL.
                                                 JSON in -> JSON out; a form post (the link page, no
                                                 script needed) -> redirect to that URL.
GET  /api/auth/plugin/{integration}/callback     exchange the code with the verifier, store, redirect
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from workbench.connections.flow import CallbackError
from workbench.guard.jsontext import JsonRejected, parse
from workbench.manifest import Manifest, OAuth2Auth
from workbench.web.context import WebContext
from workbench.web.html import (
    connection_failed_page,
    csrf_field,
    e,
    html_page,
    json_response,
    notices,
    redirect,
)

if TYPE_CHECKING:
    from workbench.stores import User

__all__ = ["connect_routes", "login_host_fields", "login_host_from"]

_REDEEM_TEXT = {
    "ACCOUNT_MISMATCH": (
        "This link is not valid for the account you are signed in as. It was created for a different "
        "Workbench account, or it does not exist. Sign in with the account your agent uses, or ask the "
        "agent for a new link."
    ),
    "EXPIRED": "This link has expired. Ask your agent to call connect again for a new link.",
    "ALREADY_CONNECTED": "This link was already used to connect. You can close this page.",
}


def connect_routes(web: WebContext) -> list[BaseRoute]:
    gw = web.gw

    def link_page(request: Request, user: User, title: str, body: str, status: int = 200) -> Response:
        # A refused form post on this page came back here (post/redirect/get) with its notice.
        response = html_page(
            title, web.take_notice(request) + body, status=status, email=user.email, csrf=web.csrf(request)
        )
        gw.sessions.clear_flash(response)
        return response

    def link(request: Request, user: User) -> Response:
        connection_id = str(request.path_params["connection_id"])
        rec = gw.connections.pending(connection_id)
        if rec is None or rec.user_id != user.id:
            return link_page(
                request, user, "Link not valid", notices(("error", _REDEEM_TEXT["ACCOUNT_MISMATCH"])), 403
            )
        if rec.status == "EXPIRED":
            return link_page(request, user, "Link expired", notices(("error", _REDEEM_TEXT["EXPIRED"])), 410)
        manifest = gw.registry.manifest(rec.integration)
        display = manifest.display_name if manifest else rec.integration
        if rec.status == "CONNECTED":
            return link_page(
                request, user, f"{display} is connected", notices(("ok", _REDEEM_TEXT["ALREADY_CONNECTED"]))
            )
        what = (
            "sign in to it in a live browser session, so Workbench can keep that session for your agent"
            if rec.auth_type == "cookie"
            else f"approve access at {display}; Workbench stores the resulting token encrypted"
        )
        body = (
            '<section class="card">'
            f"<p>Your agent asked to connect <strong>{e(display)}</strong> to your Workbench account "
            f"<strong>{e(user.email)}</strong>. Continuing will {e(what)}. Your agent never sees the credential.</p>"
            f'<form method="post" action="/api/connect/redeem">{csrf_field(web.csrf(request))}'
            f'<input type="hidden" name="token" value="{e(rec.id)}">'
            + (login_host_fields(manifest, "link") if manifest else "")
            + f'<button type="submit">Continue to {e(display)}</button></form>'
            f'<p class="help">This link expires at {_clock(rec.expires_at)}.</p></section>'
        )
        return link_page(request, user, f"Connect {display}", body)

    async def redeem(request: Request) -> Response:
        content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if content_type != "application/json":
            return await redeem_form(request)
        body = await _json_body(request)
        token = body.get("token") if body is not None else None
        login_host = body.get("login_host") if body is not None else None
        if not web.same_origin(request):
            return json_response({"error": "ACCOUNT_MISMATCH"}, 403)
        if not isinstance(token, str) or not isinstance(login_host, str | None):
            return json_response(
                {"error": 'Body must be JSON: {"token": "<connectionId>", "login_host"?: "<host>"}'}, 400
            )
        user = web.user(request)
        if user is None:  # no portal session is not the same user either
            return json_response({"error": "ACCOUNT_MISMATCH"}, 403)
        result = await gw.connections.redeem(user, token, login_host=login_host)
        return json_response(result.body, result.status)

    @web.form_post
    async def redeem_form(request: Request, user: User, form: dict[str, str]) -> Response:
        """The link page's form post (no script needed): answers with a redirect or a page."""
        result = await gw.connections.redeem(user, form.get("token", ""), login_host=login_host_from(form))
        if result.status == 200:
            return redirect(str(result.body["url"]))
        code = str(result.body.get("error", ""))
        message = _REDEEM_TEXT.get(code) or str(result.body.get("message") or code)
        # Post/redirect/get: back to the link page (which re-checks the link) with the reason, once.
        token = form.get("token", "")
        target = f"/connect/{quote(token, safe='')}" if token else "/portal/integrations"
        return web.redirect_with_notice(request, target, "error", message)

    async def callback(request: Request) -> Response:
        user = web.user(request)
        integration = str(request.path_params["integration"])
        q = request.query_params
        try:
            name = await gw.connections.complete(
                user, integration, state=q.get("state"), code=q.get("code"), error=q.get("error")
            )
        except CallbackError as exc:
            return connection_failed_page(
                str(exc),
                back="/portal/integrations",
                back_label="Go to your integrations",
                email=user.email if user else None,
                csrf=web.csrf(request),
            )
        return redirect(f"/portal/integrations?connected={name}")

    return [
        Route("/connect/{connection_id}", web.page(link), methods=["GET"]),
        Route("/api/connect/redeem", redeem, methods=["POST"]),
        Route("/api/auth/plugin/{integration}/callback", callback, methods=["GET"]),
    ]


async def _json_body(request: Request) -> dict[str, Any] | None:
    try:  # at most MAX_FORM_BYTES: BodyLimit stops the read past it
        body: Any = parse(await request.body())
    except JsonRejected:
        return None
    return body if isinstance(body, dict) else None


def login_host_fields(manifest: Manifest, prefix: str) -> str:
    """The sign-in host chooser for a manifest that asks for one per connection (Salesforce)."""
    hosts = manifest.auth.login_hosts if isinstance(manifest.auth, OAuth2Auth) else None
    if hosts is None:
        return ""
    options = "".join(
        f'<option value="{e(host)}">{e(label)} ({e(host)})</option>' for label, host in hosts.choices
    )
    if not hosts.custom_suffixes:
        custom = ""
    else:
        label = hosts.custom_label or "Another host"
        options += f'<option value="custom">{e(label)}</option>'
        custom = (
            f'<label for="{prefix}-login-host-custom">{e(label)} host</label>'
            f'<input id="{prefix}-login-host-custom" name="login_host_custom" type="text" maxlength="253" '
            f'autocomplete="off" placeholder="acme{e(hosts.custom_suffixes[0])}" '
            f'aria-describedby="{prefix}-login-host-help">'
            f'<p class="help" id="{prefix}-login-host-help">{e(hosts.custom_help)}</p>'
        )
    return (
        f'<label for="{prefix}-login-host">Sign in to {e(manifest.display_name)} at</label>'
        f'<select id="{prefix}-login-host" name="login_host">{options}</select>{custom}'
    )


def login_host_from(form: dict[str, str]) -> str | None:
    """The host chosen in `login_host_fields` (None: the manifest's default)."""
    chosen = (form.get("login_host") or "").strip()
    if chosen == "custom" or (not chosen and form.get("login_host_custom")):
        # An empty "other host" is refused as a host, never taken as the default.
        return (form.get("login_host_custom") or "").strip() or "custom"
    return chosen or None


def _clock(ts: float) -> str:
    return time.strftime("%H:%M UTC", time.gmtime(ts))
