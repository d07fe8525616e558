"""HTTP surface of the authorization server (thin: parsing and rendering; rules live in service.py).

  GET  /.well-known/oauth-protected-resource[/mcp]   RFC 9728 metadata for /mcp
  GET  /.well-known/oauth-authorization-server       RFC 8414 metadata
  GET  /.well-known/jwks.json                        the access-token verification keys
  POST /register                                     RFC 7591 dynamic client registration
  GET  /authorize                                    sign-in (portal session), then the consent page
  POST /authorize                                    the consent decision (CSRF-checked, single-use)
  POST /token                                        authorization_code and refresh_token grants
  POST /revoke                                       RFC 7009 token revocation

The consent page carries the validated request as a blob whose SHA-256 is kept server-side in a
single-use, 10-minute state record bound to the signed-in user: the decision can be posted once,
by that user, for exactly the request that was shown.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, unquote, urlsplit

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from workbench.errors import InvalidInput
from workbench.guard.bodylimit import BodyRule, BodyTooLarge, json_413
from workbench.guard.jsontext import JsonRejected, parse
from workbench.identity.grants import FULL
from workbench.oauth.errors import OAuthError, RedirectableError, TooManyRequests
from workbench.stores import OAuthState, User
from workbench.web.context import WebContext
from workbench.web.grants import grant_fields, grant_from_form
from workbench.web.html import csrf_field, e, html_page, notices, redirect

if TYPE_CHECKING:
    from workbench.composition import Gateway
    from workbench.oauth.service import AuthorizationRequest, OAuthServer

__all__ = ["BODY_RULES", "CONSENT_MARKER", "oauth_routes"]

# OAuthState.integration value for a consent waiting for its decision.
CONSENT_MARKER = "mcp-oauth-consent"
CONSENT_SECONDS = 600
MAX_FORM_BYTES = 64 * 1024
_NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}
# The AS endpoints use no cookies, so browser-based MCP clients may call them from any origin.
_CORS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Allow-Methods": "GET, POST, OPTIONS",
    "Access-Control-Allow-Headers": "Authorization, Content-Type, MCP-Protocol-Version",
    "Access-Control-Max-Age": "600",
}


def _too_large_as(code: str) -> Callable[[BodyTooLarge], dict[str, Any]]:
    return lambda exc: {"error": code, "error_description": str(exc)}


# Over the cap: 413 in the endpoint's own error shape (RFC 7591 §3.2.2, RFC 6749 §5.2).
BODY_RULES = [
    BodyRule(path, MAX_FORM_BYTES, json_413(_too_large_as(code), {**_NO_STORE, **_CORS}))
    for path, code in (
        ("/register", "invalid_client_metadata"),
        ("/token", "invalid_request"),
        ("/revoke", "invalid_request"),
    )
]


def _json(body: dict[str, Any], status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return JSONResponse(body, status, headers={**_NO_STORE, **_CORS, **(headers or {})})


def _oauth_error(exc: OAuthError, *, basic: bool = False) -> Response:
    headers = {"WWW-Authenticate": 'Basic realm="workbench"'} if basic and exc.status == 401 else {}
    if isinstance(exc, TooManyRequests):
        headers["Retry-After"] = str(exc.retry_after)
    return _json(exc.body(), exc.status, headers)


def _basic_credentials(request: Request) -> tuple[str, str] | None:
    """client_secret_basic (RFC 6749 §2.3.1: form-urlencoded id and secret); OAuthError if malformed."""
    header = request.headers.get("authorization")
    if not header:
        return None
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "basic":
        raise OAuthError("invalid_client", "unsupported client authentication scheme", 401)
    try:
        decoded = base64.b64decode(value.strip(), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError) as exc:
        raise OAuthError("invalid_client", "malformed Basic credentials", 401) from exc
    client_id, sep, secret = decoded.partition(":")
    if not sep:
        raise OAuthError("invalid_client", "malformed Basic credentials", 401)
    return unquote(client_id), unquote(secret)


async def _form_pairs(request: Request) -> list[tuple[str, str]]:
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type != "application/x-www-form-urlencoded":
        raise OAuthError("invalid_request", "the body must be application/x-www-form-urlencoded")
    raw = await request.body()  # at most MAX_FORM_BYTES: BodyLimit stops the read past it
    try:
        return parse_qsl(raw.decode("utf-8"), keep_blank_values=True, max_num_fields=100)
    except (UnicodeDecodeError, ValueError) as exc:
        raise OAuthError("invalid_request", "the form body could not be parsed") from exc


def _encode_request(req: AuthorizationRequest) -> str:
    raw = json.dumps(req.to_dict(), separators=(",", ":"), sort_keys=True).encode()
    return base64.urlsafe_b64encode(raw).decode()


def _decode_request(blob: str) -> AuthorizationRequest | None:
    from workbench.oauth.service import AuthorizationRequest

    try:
        fields = parse(base64.urlsafe_b64decode(blob.encode()))
        return AuthorizationRequest(**fields) if isinstance(fields, dict) else None
    except (ValueError, TypeError, binascii.Error):  # JsonRejected is a ValueError
        return None


def _blob_hash(blob: str) -> str:
    return hashlib.sha256(blob.encode()).hexdigest()


def _host_of(uri: str) -> str:
    parts = urlsplit(uri)
    return parts.netloc or f"{parts.scheme}:"


def _consent_body(req: AuthorizationRequest, user: User, txn: str, blob: str, csrf: str, grant: str) -> str:
    name = req.client_name or req.client_id
    redirect_host = _host_of(req.redirect_uri)
    loopback = urlsplit(req.redirect_uri).hostname in ("127.0.0.1", "localhost", "::1")
    if req.name_verified:
        who = (
            f"<p>The name comes from the client's metadata document at <strong>{e(_host_of(req.client_id))}"
            "</strong>.</p>"
        )
    else:
        who = (
            "<p>This client registered itself; Workbench has not verified its name. Only continue if you "
            "just started connecting an MCP client yourself.</p>"
        )
    warning = ""
    if loopback:
        warning = notices(
            (
                "error",
                f"The authorization will be sent to a program on this computer ({redirect_host}). Any local "
                "program can claim to be this client: allow only if you started this sign-in just now.",
            )
        )
    keeps = (
        "<li>stay signed in until you revoke it on the MCP clients page</li>"
        if req.offline
        else "<li>for a short time (no refresh)</li>"
    )
    return (
        warning
        + '<section class="card" aria-labelledby="consent">'
        + f'<h2 id="consent">{e(name)} wants to use Workbench as {e(user.email)}</h2>'
        + who
        + "<p>If you allow it, this client can:</p><ul>"
        + "<li>call Workbench's tools on your behalf, including every integration you connected</li>"
        + keeps
        + "</ul>"
        + f"<p>Client ID: <code>{e(req.client_id)}</code><br>"
        + f"Sends you back to: <strong>{e(redirect_host)}</strong></p>"
        + '<form method="post" action="/authorize">'
        + csrf_field(csrf)
        + f'<input type="hidden" name="txn" value="{e(txn)}">'
        + f'<input type="hidden" name="request" value="{e(blob)}">'
        + "<h3>What this client may do</h3>"
        + grant
        + '<p class="help">You can change this later on the MCP clients page.</p>'
        + '<button type="submit" name="decision" value="approve">Allow</button> '
        + '<button class="secondary" type="submit" name="decision" value="deny">Deny</button>'
        + "</form></section>"
    )


def oauth_routes(gateway: Gateway) -> list[BaseRoute]:
    # The server (its module, its client resolver, the signing keys) is built by the first OAuth
    # request, not with the routes: the web function's first portal page never needs it.
    return _routes(gateway, lambda: gateway.oauth, WebContext(gateway))


def _routes(gw: Gateway, server: Callable[[], OAuthServer], web: WebContext) -> list[BaseRoute]:
    async def resource_metadata(request: Request) -> Response:
        return _json(server().protected_resource_metadata(server().audience))

    async def root_resource_metadata(request: Request) -> Response:
        return _json(server().protected_resource_metadata(server().issuer))

    async def as_metadata(request: Request) -> Response:
        return _json(server().metadata())

    async def jwks(request: Request) -> Response:
        return JSONResponse(gw.tokens.jwks(), headers={"Cache-Control": "max-age=300", **_CORS})

    async def register(request: Request) -> Response:
        try:  # counted before the body is read: a flood costs one counter write per request
            server().throttle_registration(request.client.host if request.client else None)
        except TooManyRequests as exc:
            return _oauth_error(exc)
        raw = await request.body()  # at most MAX_FORM_BYTES: BodyLimit stops the read past it
        try:
            body = parse(raw)
        except JsonRejected:
            return _json(OAuthError("invalid_client_metadata", "the body must be a JSON object").body(), 400)
        try:
            return _json(server().register(body), 201)
        except OAuthError as exc:
            return _oauth_error(exc)

    def error_page(message: str, status: int = 400, user: User | None = None) -> Response:
        body = notices(("error", message)) + "<p>Go back to your MCP client and start connecting again.</p>"
        return html_page("Authorization failed", body, status=status, email=user.email if user else None)

    async def authorize(request: Request) -> Response:
        user = web.user(request)
        if user is None:
            return web.signin_redirect(request)
        try:
            req = await server().authorization_request(request.query_params.multi_items())
        except RedirectableError as exc:
            url = server().redirect_url(
                exc.redirect_uri,
                {"error": exc.error, "error_description": exc.description, "state": exc.state},
            )
            return redirect(url)
        except OAuthError as exc:
            return error_page(exc.description, 400, user)
        blob = _encode_request(req)
        txn = secrets.token_urlsafe(32)
        gw.auth.put_state(
            OAuthState(
                state=txn,
                user_id=user.id,
                integration=CONSENT_MARKER,
                connection_id=req.client_id,
                code_verifier=_blob_hash(blob),
                redirect_uri=req.redirect_uri,
                expires_at=gw.clock() + CONSENT_SECONDS,
            )
        )
        csrf = web.csrf(request)
        fields = await gw.store_io.run(grant_fields, gw, user.id, FULL, prefix="consent")
        body = _consent_body(req, user, txn, blob, csrf, fields)
        return html_page(f"Authorize {req.client_name or 'an MCP client'}", body, email=user.email, csrf=csrf)

    async def decide(request: Request) -> Response:
        user = web.user(request)
        if user is None:
            return error_page("Your Workbench session has ended. Sign in again.", 401)
        form = await web.checked_form(request, user)
        if isinstance(form, Response):
            return form
        taken = gw.auth.take_state(form.get("txn") or "")
        blob = form.get("request") or ""
        if taken is None or taken.integration != CONSENT_MARKER:
            return error_page("This authorization was already answered or has expired.", 400, user)
        req = _decode_request(blob)
        if (
            req is None
            or taken.user_id != user.id
            or not hmac.compare_digest(taken.code_verifier, _blob_hash(blob))
            or req.client_id != taken.connection_id
        ):
            return error_page("This authorization request does not match the one you were shown.", 400, user)
        if form.get("decision") == "approve":
            try:
                grant = await gw.store_io.run(grant_from_form, gw, user.id, form)
            except InvalidInput as exc:
                return error_page(f"{exc} Start connecting again to choose.", 400, user)
            return redirect(server().approve(req, user.id, grant))
        return redirect(server().deny(req))

    async def token(request: Request) -> Response:
        basic = False
        try:
            credentials = _basic_credentials(request)
            basic = credentials is not None
            return _json(server().token(await _form_pairs(request), credentials))
        except OAuthError as exc:
            return _oauth_error(exc, basic=basic or "authorization" in request.headers)

    async def revoke(request: Request) -> Response:
        try:
            credentials = _basic_credentials(request)
            server().revoke(await _form_pairs(request), credentials)
        except OAuthError as exc:
            return _oauth_error(exc, basic="authorization" in request.headers)
        return Response(status_code=200, headers={**_NO_STORE, **_CORS})

    async def preflight(request: Request) -> Response:
        return Response(status_code=204, headers=_CORS)

    json_get: list[tuple[str, Callable[[Request], Awaitable[Response]]]] = [
        ("/.well-known/oauth-protected-resource", root_resource_metadata),
        ("/.well-known/oauth-protected-resource/mcp", resource_metadata),
        ("/.well-known/oauth-authorization-server", as_metadata),
        ("/.well-known/jwks.json", jwks),
    ]
    routes: list[BaseRoute] = [Route(path, fn, methods=["GET"]) for path, fn in json_get]
    routes += [
        Route("/register", register, methods=["POST"]),
        Route("/authorize", authorize, methods=["GET"]),
        Route("/authorize", decide, methods=["POST"]),
        Route("/token", token, methods=["POST"]),
        Route("/revoke", revoke, methods=["POST"]),
    ]
    routes += [
        Route(path, preflight, methods=["OPTIONS"])
        for path in [*(p for p, _ in json_get), "/register", "/token", "/revoke"]
    ]
    return routes
