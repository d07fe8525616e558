"""Portal sign-in and sign-out: OIDC SSO, the local gateway's one-time link (web/local_signin.py), and a
clearly marked development sign-in on the local gateway.

There is no password login. Routes:
  GET  /portal/signin              the sign-in page (`next` = where to go afterwards)
  GET  /api/auth/oidc/login        start OIDC: state + PKCE + nonce, redirect to the provider
  GET  /api/auth/oidc/callback     finish OIDC: verify, find or create the user by email, set the session
  POST /api/auth/dev-login         development sign-in by email (only when WORKBENCH_DEV_LOGIN=1)
  POST /portal/signout             clear the session (CSRF-checked)
"""

from __future__ import annotations

import hmac
import secrets
from typing import TYPE_CHECKING
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from workbench.errors import ConfigError
from workbench.identity.secrets import SSO_CLIENT_SECRET
from workbench.observability import log_event
from workbench.stores import OAuthState
from workbench.web.context import WebContext, safe_next
from workbench.web.html import e, html_page, notices, redirect
from workbench.web.local_signin import signin_link_command

if TYPE_CHECKING:
    from workbench.composition import Gateway
    from workbench.stores import User
    from workbench.web.oidc import OidcClient

__all__ = ["SSO_COOKIE", "SSO_STATE_MARKER", "signin_routes"]

SSO_COOKIE = "__Host-wb_sso"
# OAuthState.integration value for portal sign-ins (connection_id then holds the `next` path).
SSO_STATE_MARKER = "portal-sso"
SSO_STATE_SECONDS = 600
_SIGNIN_ERRORS = {"email": "Enter an email address."}
_NOT_CONFIGURED_LOCAL = (
    "Sign-in is not configured on this gateway. Set WORKBENCH_OIDC_ISSUER, WORKBENCH_OIDC_CLIENT_ID and "
    "WORKBENCH_OIDC_CLIENT_SECRET."
)
_NOT_CONFIGURED_AWS = (
    "Sign-in is not configured on this gateway. The operator sets the stack parameters SsoIssuer and "
    "SsoClientId and puts sso_client_secret in the stack's secret (docs/deploy.md). Until then, an API "
    "key for /mcp comes from `workbench keys create EMAIL --stack STACK`."
)


def _oidc(gw: Gateway) -> OidcClient | None:
    s = gw.settings
    if not (s.oidc_issuer and s.oidc_client_id):
        return None
    from workbench.web.oidc import OidcClient  # httpx: only where single sign-on is configured

    return OidcClient(
        s.oidc_issuer,
        s.oidc_client_id,
        lambda: gw.secrets.get(SSO_CLIENT_SECRET),  # read at run time: a rotation needs no restart
        s.public_url.rstrip("/") + "/api/auth/oidc/callback",
        transport=gw.provider_oauth.transport if gw.provider_oauth else None,
        clock=gw.clock,
    )


def signin_routes(web: WebContext) -> list[BaseRoute]:
    gw = web.gw
    oidc = _oidc(gw)  # built once per warm instance: discovery and JWKS stay cached

    async def signin_page(request: Request) -> Response:
        next_path = safe_next(request.query_params.get("next"))
        user = web.user(request)
        if user is not None:
            return redirect(next_path)
        parts = []
        # Only messages of our own: a link cannot make the sign-in page say what its author likes.
        error = _SIGNIN_ERRORS.get(request.query_params.get("error", ""))
        if error:
            parts.append(notices(("error", error)))
        if oidc is not None:
            parts.append(
                '<section class="card" aria-labelledby="sso"><h2 id="sso">Single sign-on</h2>'
                "<p>Sign in with your organisation's account.</p>"
                '<form method="get" action="/api/auth/oidc/login">'
                f'<input type="hidden" name="next" value="{e(next_path)}">'
                '<button type="submit">Sign in with SSO</button></form></section>'
            )
        if gw.settings.dev_login:
            parts.append(
                '<section class="card" aria-labelledby="dev"><h2 id="dev">Development sign-in</h2>'
                '<div class="notice dev" role="note"><strong>Local gateway only.</strong> This signs you in as '
                "any email address without a password. It exists because WORKBENCH_DEV_LOGIN=1 is set; "
                "never enable it on a shared or production gateway.</div>"
                '<form method="post" action="/api/auth/dev-login">'
                f'<input type="hidden" name="next" value="{e(next_path)}">'
                '<label for="dev-email">Email address</label>'
                '<input id="dev-email" name="email" type="email" required autocomplete="email">'
                '<p><button type="submit">Sign in (development)</button></p></form></section>'
            )
        if web.local:
            command = e(signin_link_command(gw.settings.public_url))
            parts.append(
                '<section class="card" aria-labelledby="local"><h2 id="local">This computer</h2>'
                "<p>This gateway runs on your machine. Open the one-time sign-in link that "
                "<code>workbench serve</code> printed when it started. For a new link, run</p>"
                f'<pre class="snippet" tabindex="0"><code>.venv/bin/{command}</code></pre>'
                f'<p class="help">in the project folder (or <code>uv run {command}</code>). '
                "The link works once, only from this machine.</p></section>"
            )
        if oidc is None and not gw.settings.dev_login and not web.local:
            parts.append(
                notices(("error", _NOT_CONFIGURED_AWS if gw.settings.secret_id else _NOT_CONFIGURED_LOCAL))
            )
        return html_page("Sign in", "".join(parts))

    async def oidc_login(request: Request) -> Response:
        if oidc is None:
            return html_page("Sign in", notices(("error", "Single sign-on is not configured.")), status=404)
        from workbench.connections.provider_oauth import pkce_verifier  # httpx: only for SSO
        from workbench.web.oidc import OidcError

        next_path = safe_next(request.query_params.get("next"))
        verifier = pkce_verifier()
        state = secrets.token_urlsafe(32)
        try:
            url = await oidc.authorize_url(state=state, verifier=verifier)
        except OidcError as exc:
            return html_page("Sign in", notices(("error", str(exc))), status=502)
        gw.auth.put_state(
            OAuthState(
                state=state,
                user_id="",
                integration=SSO_STATE_MARKER,
                connection_id=next_path,
                code_verifier=verifier,
                redirect_uri=oidc.redirect_uri,
                expires_at=gw.clock() + SSO_STATE_SECONDS,
            )
        )
        response = redirect(url)
        response.set_cookie(
            SSO_COOKIE,
            state,
            max_age=SSO_STATE_SECONDS,
            path="/",
            secure=gw.sessions.secure,
            httponly=True,
            samesite="lax",
        )
        return response

    def forget_sso(response: Response) -> Response:
        """The state-binding cookie has done its work (or failed it) once the callback answers."""
        response.delete_cookie(SSO_COOKIE, path="/", secure=gw.sessions.secure, httponly=True, samesite="lax")
        return response

    def failed(message: str) -> Response:
        body = notices(("error", message)) + '<p><a href="/portal/signin">Try signing in again</a></p>'
        return forget_sso(html_page("Sign-in failed", body, status=400))

    async def oidc_callback(request: Request) -> Response:
        if oidc is None:
            return failed("Single sign-on is not configured.")
        q = request.query_params
        state = q.get("state") or ""
        bound = request.cookies.get(SSO_COOKIE, "")
        if not state or not bound or not hmac.compare_digest(state, bound):
            return failed("This sign-in did not start in this browser, or it expired. Start again.")
        taken = gw.auth.take_state(state)
        if taken is None or taken.integration != SSO_STATE_MARKER:
            return failed("This sign-in response was already used or has expired. Start again.")
        if q.get("error"):
            return failed(f"The sign-in provider did not sign you in ({q.get('error')}).")
        code = q.get("code")
        if not code:
            return failed("The sign-in provider's answer has no authorization code.")
        from workbench.web.oidc import OidcError

        try:
            who = await oidc.finish(code=code, verifier=taken.code_verifier)
            user = gw.auth.sign_in(who.email)
            response = forget_sso(redirect(safe_next(taken.connection_id)))
            gw.sessions.set_cookie(response, user.id)
        except OidcError as exc:
            return failed(str(exc))
        except ConfigError as exc:
            log_event("signin_unconfigured", reason=str(exc))
            return failed(f"Sign-in is not fully configured on this gateway: {exc}.")
        return response

    async def dev_login(request: Request) -> Response:
        if not gw.settings.dev_login:
            return html_page("Not found", notices(("error", "Development sign-in is disabled.")), status=404)
        form = await web.form(request)
        if form is None or not web.same_origin(request):
            return html_page("Bad request", notices(("error", "The form could not be read.")), status=400)
        email = (form.get("email") or "").strip()
        next_path = safe_next(form.get("next"))
        if "@" not in email or len(email) > 254:
            query = urlencode({"error": "email", "next": next_path})
            return redirect(f"/portal/signin?{query}")
        user = gw.auth.sign_in(email)
        response = redirect(next_path)
        gw.sessions.set_cookie(response, user.id)
        return response

    @web.form_post
    async def signout(request: Request, user: User, form: dict[str, str]) -> Response:
        gw.sessions.revoke(request)  # the cookie is refused everywhere from now, not only forgotten here
        response = redirect("/portal/signin")
        gw.sessions.clear_cookie(response)
        return response

    return [
        Route("/portal/signin", signin_page, methods=["GET"]),
        Route("/api/auth/oidc/login", oidc_login, methods=["GET"]),
        Route("/api/auth/oidc/callback", oidc_callback, methods=["GET"]),
        Route("/api/auth/dev-login", dev_login, methods=["POST"]),
        Route("/portal/signout", signout, methods=["POST"]),
    ]
