"""The OAuth 2.1 authorization server for MCP clients, independent of the web framework.

- Authorization code grant with PKCE (S256 only), exact redirect URI match, codes single-use
  (60 s) and bound to client, redirect URI, PKCE challenge and resource (RFC 8707).
- Access tokens: ES256 JWTs from `TokenService` (aud = <public_url>/mcp, sub = user id,
  client_id claim), verified without a store read.
- Refresh tokens: random, stored as SHA-256, rotated on every use; presenting a rotated one
  revokes its whole family (the grant), and so does replaying an authorization code.
- Revocation (RFC 7009) and the portal's view: clients with live refresh tokens, revoke one.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import json
import math
import re
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode, urlsplit, urlunsplit

from workbench.errors import AuthError
from workbench.identity.auth import AccessTokenVerifier, Principal
from workbench.identity.grants import FULL, Grant
from workbench.oauth.clients import ClientResolver, hash_secret, register_client
from workbench.oauth.errors import OAuthError, RedirectableError, TooManyRequests
from workbench.observability import log_event
from workbench.stores import (
    AuthorizationCode,
    AuthorizationCodeStore,
    OAuthClientStore,
    RateWindowStore,
    RefreshToken,
    RefreshTokenStore,
    User,
    UserStore,
)

if TYPE_CHECKING:
    import httpx

    from workbench.guard.egress import EgressPolicy
    from workbench.identity.tokens import TokenService
    from workbench.settings import Settings

__all__ = ["AuthorizationRequest", "ClientGrant", "OAuthServer"]

CODE_SECONDS = 60
SCOPE_MCP = "mcp"
SCOPE_OFFLINE = "offline_access"
SUPPORTED_SCOPES = (SCOPE_MCP, SCOPE_OFFLINE)
REFRESH_PREFIX = "wbr_"
_CHALLENGE_RE = re.compile(r"^[A-Za-z0-9_-]{43}$")  # base64url(SHA-256), no padding
_VERIFIER_RE = re.compile(r"^[A-Za-z0-9._~-]{43,128}$")  # RFC 7636 §4.1
MAX_STATE_CHARS = 2000


@dataclass(frozen=True, slots=True)
class AuthorizationRequest:
    """A validated /authorize request, waiting for the user's consent."""

    client_id: str
    client_name: str
    name_verified: bool
    redirect_uri: str
    state: str | None
    code_challenge: str
    resource: str
    scope: str
    offline: bool

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass(frozen=True, slots=True)
class ClientGrant:
    """One client holding live refresh tokens on a user's account (the portal's MCP clients page)."""

    client_id: str
    client_name: str
    created_at: float  # first consent among its live grants
    last_used_at: float  # newest token issue (sign-in or refresh)


def _sha256(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def _s256(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")


def _canonical_url(value: str) -> str | None:
    """Lower-case scheme and host, no trailing slash, no fragment; None for a non-URL."""
    try:
        parts = urlsplit(value)
    except ValueError:
        return None
    if not parts.scheme or not parts.netloc or parts.fragment or "#" in value:
        return None
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path.rstrip("/"), parts.query, ""))


def _address_key(address: str) -> str:
    """What one caller is, for throttling: an IPv4 address, or an IPv6 address's /64 (one host
    usually holds a whole /64, and could rotate through it)."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address[:64]
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(ip)


def single_params(pairs: Sequence[tuple[str, str]]) -> tuple[dict[str, str], set[str]]:
    """Request parameters as a dict, and the names that were sent more than once."""
    out: dict[str, str] = {}
    repeated: set[str] = set()
    for key, value in pairs:
        if key in out:
            repeated.add(key)
        out[key] = value
    return out, repeated


class OAuthServer:
    def __init__(
        self,
        settings: Settings,
        *,
        clients: OAuthClientStore,
        codes: AuthorizationCodeStore,
        refresh: RefreshTokenStore,
        users: UserStore,
        tokens: TokenService,
        clock: Callable[[], float] = time.time,
        transport: httpx.AsyncBaseTransport | None = None,
        rates: RateWindowStore | None = None,
        egress: EgressPolicy | None = None,
    ) -> None:
        self.settings = settings
        self.rates = rates
        self.clients = ClientResolver(clients, egress=egress, transport=transport, clock=clock)
        self.client_store = clients
        self.codes = codes
        self.refresh = refresh
        self.users = users
        self.tokens = tokens
        self.clock = clock
        self.issuer = settings.public_url.rstrip("/")
        self.audience = self.issuer + "/mcp"
        self._resources = {_canonical_url(self.issuer), _canonical_url(self.audience)}

    # -- metadata ----------------------------------------------------------------------------------

    def protected_resource_metadata(self, resource: str | None = None) -> dict[str, Any]:
        """RFC 9728. `resource` is the identifier the well-known URL was derived from."""
        return {
            "resource": resource or self.audience,
            "authorization_servers": [self.issuer],
            "bearer_methods_supported": ["header"],
            "scopes_supported": [SCOPE_MCP],
            "jwks_uri": f"{self.issuer}/.well-known/jwks.json",
            "resource_signing_alg_values_supported": ["ES256"],
            "resource_name": "Workbench",
        }

    def metadata(self) -> dict[str, Any]:
        """RFC 8414 authorization server metadata."""
        return {
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.issuer}/authorize",
            "token_endpoint": f"{self.issuer}/token",
            "registration_endpoint": f"{self.issuer}/register",
            "revocation_endpoint": f"{self.issuer}/revoke",
            "jwks_uri": f"{self.issuer}/.well-known/jwks.json",
            "scopes_supported": list(SUPPORTED_SCOPES),
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_methods_supported": ["none", "client_secret_post", "client_secret_basic"],
            "revocation_endpoint_auth_methods_supported": [
                "none",
                "client_secret_post",
                "client_secret_basic",
            ],
            "code_challenge_methods_supported": ["S256"],
            "client_id_metadata_document_supported": True,
            "authorization_response_iss_parameter_supported": True,
        }

    # -- registration ------------------------------------------------------------------------------

    def throttle_registration(self, address: str | None) -> None:
        """Count one registration attempt before anything is read; TooManyRequests when the
        caller's address, or the gateway as a whole, used up the current window. The counters are
        in the store, so every instance (every Lambda) counts against the same numbers."""
        if self.rates is None:
            return
        window = max(1, self.settings.oauth_register_window_seconds)
        now = self.clock()
        start = int(now // window * window)
        retry = max(1, math.ceil(start + window - now))
        keep_until = start + window + 60
        per_ip, overall = self.settings.oauth_register_per_ip, self.settings.oauth_register_global
        if (
            per_ip > 0
            and address
            and not self.rates.hit(f"register:{_address_key(address)}", start, per_ip, keep_until)
        ):
            raise TooManyRequests(
                f"too many client registrations from this address; try again in {retry} s", retry
            )
        if overall > 0 and not self.rates.hit("register:*", start, overall, keep_until):
            raise TooManyRequests(f"too many client registrations; try again in {retry} s", retry)

    def register(self, body: object) -> dict[str, Any]:
        now = self.clock()
        client, response = register_client(body, now=now)
        self.client_store.purge_expired(now)
        cap = self.settings.oauth_max_clients
        if cap > 0 and self.client_store.count(now) >= cap:
            raise TooManyRequests(
                f"this gateway holds its maximum of {cap} registered clients; registrations that complete "
                "no sign-in are removed after a while, try again later",
                3600,
            )
        unused = self.settings.oauth_unused_client_seconds
        # Removed unless it completes a grant in time (mark_used at the first code redemption).
        client = replace(client, expires_at=now + unused if unused > 0 else None)
        self.client_store.put(client)
        log_event(
            "oauth_client_registered", client_id=client.client_id, auth=client.token_endpoint_auth_method
        )
        return response

    # -- authorization -----------------------------------------------------------------------------

    def resource_audience(self, resource: str) -> str | None:
        """The audience for a requested resource, if it names this server's MCP endpoint."""
        return self.audience if _canonical_url(resource) in self._resources else None

    async def authorization_request(self, pairs: Sequence[tuple[str, str]]) -> AuthorizationRequest:
        """Validate /authorize parameters.

        OAuthError: the client or redirect URI cannot be trusted; show the user an error page.
        RedirectableError: anything else; send it to the verified redirect URI.
        """
        params, repeated = single_params(pairs)
        if repeated & {"client_id", "redirect_uri"}:
            raise OAuthError("invalid_request", "client_id and redirect_uri must be sent once")
        client_id = params.get("client_id", "")
        if not client_id:
            raise OAuthError("invalid_request", "client_id is required")
        client = await self.clients.resolve(client_id)
        if client is None:
            raise OAuthError("invalid_client", "this client is not registered with Workbench")
        redirect_uri = params.get("redirect_uri")
        if redirect_uri is None:
            if len(client.redirect_uris) != 1:
                raise OAuthError("invalid_request", "redirect_uri is required for this client")
            redirect_uri = client.redirect_uris[0]
        elif redirect_uri not in client.redirect_uris:  # exact string match, no normalisation
            raise OAuthError("invalid_request", "redirect_uri is not registered for this client")
        state = params.get("state")

        def fail(error: str, description: str) -> RedirectableError:
            return RedirectableError(error, description, redirect_uri=redirect_uri, state=state)

        if repeated:
            raise fail("invalid_request", f"parameters sent more than once: {', '.join(sorted(repeated))}")
        if state is not None and len(state) > MAX_STATE_CHARS:
            raise fail("invalid_request", "state is too long")
        if params.get("response_type") != "code":
            raise fail("unsupported_response_type", 'response_type must be "code"')
        if "authorization_code" not in client.grant_types:
            raise fail(
                "unauthorized_client", "this client is not registered for the authorization_code grant"
            )
        challenge = params.get("code_challenge")
        if not challenge:
            raise fail("invalid_request", "code_challenge is required (PKCE with S256)")
        if params.get("code_challenge_method") != "S256":
            raise fail("invalid_request", "code_challenge_method must be S256 (plain is not supported)")
        if not _CHALLENGE_RE.match(challenge):
            raise fail("invalid_request", "code_challenge must be a base64url SHA-256 digest (43 characters)")
        resource = params.get("resource")
        audience = self.audience if resource is None else self.resource_audience(resource)
        if audience is None:
            raise fail("invalid_target", f"this server only issues tokens for {self.audience}")
        requested = (params.get("scope") or "").split()
        offline = "refresh_token" in client.grant_types
        scope = " ".join([SCOPE_MCP, *([SCOPE_OFFLINE] if SCOPE_OFFLINE in requested and offline else [])])
        return AuthorizationRequest(
            client_id=client.client_id,
            client_name=client.client_name,
            name_verified=client.name_is_verified,
            redirect_uri=redirect_uri,
            state=state,
            code_challenge=challenge,
            resource=audience,
            scope=scope,
            offline=offline,
        )

    def redirect_url(self, redirect_uri: str, params: Mapping[str, str | None]) -> str:
        """The authorization response: params (and `iss`, RFC 9207) added to the redirect URI."""
        query = urlencode({**{k: v for k, v in params.items() if v is not None}, "iss": self.issuer})
        return redirect_uri + ("&" if urlsplit(redirect_uri).query else "?") + query

    def approve(self, request: AuthorizationRequest, user_id: str, grant: Grant = FULL) -> str:
        """Issue a code for the consented request, with the grant the user chose for the client;
        the URL to send the browser to."""
        code = secrets.token_urlsafe(32)
        now = self.clock()
        self.codes.put(
            AuthorizationCode(
                code_hash=_sha256(code),
                client_id=request.client_id,
                client_name=request.client_name or request.client_id,
                user_id=user_id,
                redirect_uri=request.redirect_uri,
                code_challenge=request.code_challenge,
                resource=request.resource,
                scope=request.scope,
                family_id=secrets.token_hex(16),
                offline=request.offline,
                expires_at=now + CODE_SECONDS,
                created_at=now,
                grant="" if grant.is_full else grant.dumps(),
            )
        )
        return self.redirect_url(request.redirect_uri, {"code": code, "state": request.state})

    def deny(self, request: AuthorizationRequest) -> str:
        return self.redirect_url(
            request.redirect_uri,
            {
                "error": "access_denied",
                "error_description": "The user denied access.",
                "state": request.state,
            },
        )

    # -- token endpoint ----------------------------------------------------------------------------

    def authenticate_client(self, params: Mapping[str, str], basic: tuple[str, str] | None) -> str:
        """The client id of the calling client (RFC 6749 §2.3); OAuthError(invalid_client) otherwise."""
        if basic is not None:
            client_id, secret = basic
            if params.get("client_id", client_id) != client_id:
                raise OAuthError("invalid_request", "client_id differs from the authenticated client")
        else:
            client_id, secret = params.get("client_id", ""), params.get("client_secret", "")
        status = 401
        if not client_id:
            raise OAuthError("invalid_client", "client authentication failed: no client_id", status)
        if self.clients.is_metadata_url(client_id):
            if secret:
                raise OAuthError("invalid_client", "a URL client_id is a public client", status)
            return client_id  # public client; its grants are bound to this exact id
        client = self.clients.registered(client_id)
        if client is None:
            raise OAuthError("invalid_client", "client authentication failed: unknown client", status)
        if client.token_endpoint_auth_method == "none":
            return client_id
        if not secret or not client.client_secret_hash:
            raise OAuthError("invalid_client", "client authentication failed: client_secret required", status)
        if not hmac.compare_digest(hash_secret(secret), client.client_secret_hash):
            raise OAuthError("invalid_client", "client authentication failed", status)
        return client_id

    def token(self, pairs: Sequence[tuple[str, str]], basic: tuple[str, str] | None) -> dict[str, Any]:
        params, repeated = single_params(pairs)
        if repeated:
            raise OAuthError(
                "invalid_request", f"parameters sent more than once: {', '.join(sorted(repeated))}"
            )
        grant_type = params.get("grant_type")
        if not grant_type:
            raise OAuthError("invalid_request", "grant_type is required")
        if grant_type not in ("authorization_code", "refresh_token"):
            raise OAuthError("unsupported_grant_type", f"unsupported grant_type: {grant_type[:100]}")
        client_id = self.authenticate_client(params, basic)
        if grant_type == "authorization_code":
            return self._redeem_code(params, client_id)
        return self._refresh(params, client_id)

    def _check_resource(self, params: Mapping[str, str], bound: str) -> None:
        resource = params.get("resource")
        if resource is not None and self.resource_audience(resource) != bound:
            raise OAuthError("invalid_target", f"the grant is for {bound}")

    def _redeem_code(self, params: Mapping[str, str], client_id: str) -> dict[str, Any]:
        code = params.get("code")
        if not code:
            raise OAuthError("invalid_request", "code is required")
        verifier = params.get("code_verifier")
        if not verifier:
            raise OAuthError("invalid_request", "code_verifier is required (PKCE)")
        rec = self.codes.consume(_sha256(code))
        if rec is None:
            raise OAuthError("invalid_grant", "the authorization code is invalid")
        if rec.used:
            # A replayed code means it leaked: revoke whatever was issued from it (OAuth 2.1 §4.1.3).
            revoked = self.refresh.revoke_family(rec.family_id)
            log_event("oauth_code_replayed", client_id=rec.client_id, user=rec.user_id, revoked=revoked)
            raise OAuthError(
                "invalid_grant", "the authorization code was already used; its tokens are revoked"
            )
        if rec.expires_at <= self.clock():
            raise OAuthError("invalid_grant", "the authorization code has expired")
        if rec.client_id != client_id:
            raise OAuthError("invalid_grant", "the authorization code was issued to another client")
        if params.get("redirect_uri") != rec.redirect_uri:
            raise OAuthError("invalid_grant", "redirect_uri does not match the authorization request")
        if not _VERIFIER_RE.match(verifier) or not hmac.compare_digest(_s256(verifier), rec.code_challenge):
            raise OAuthError("invalid_grant", "PKCE verification failed")
        self._check_resource(params, rec.resource)
        user = self.users.get(rec.user_id)
        if user is None:
            raise OAuthError("invalid_grant", "the user no longer exists")
        if not self.clients.is_metadata_url(client_id):
            self.client_store.mark_used(client_id)  # a completed grant: the registration is kept
        return self._issue(
            user,
            client_id=client_id,
            client_name=rec.client_name,
            resource=rec.resource,
            scope=rec.scope,
            family_id=rec.family_id if rec.offline else None,
            granted_at=rec.created_at,
            grant=rec.grant,
        )

    def _refresh(self, params: Mapping[str, str], client_id: str) -> dict[str, Any]:
        value = params.get("refresh_token")
        if not value:
            raise OAuthError("invalid_request", "refresh_token is required")
        token_hash = _sha256(value)
        current = self.refresh.get(token_hash)
        if current is None:
            raise OAuthError("invalid_grant", "the refresh token is invalid or revoked")
        if current.client_id != client_id:
            # A token presented by the wrong client has leaked.
            self.refresh.revoke_family(current.family_id)
            log_event("oauth_refresh_wrong_client", client_id=client_id, user=current.user_id)
            raise OAuthError("invalid_grant", "the refresh token was issued to another client")
        self._check_resource(params, current.resource)
        granted = current.scope.split()
        requested = params.get("scope")
        if requested is not None and not set(requested.split()) <= set(granted):
            raise OAuthError("invalid_scope", "a refresh cannot widen the granted scope")
        rec = self.refresh.rotate(token_hash)
        if rec is None:
            raise OAuthError("invalid_grant", "the refresh token is invalid or revoked")
        if rec.rotated:
            # Reuse of a rotated token: someone else holds a copy. Revoke the whole grant.
            revoked = self.refresh.revoke_family(rec.family_id)
            log_event("oauth_refresh_reused", client_id=client_id, user=rec.user_id, revoked=revoked)
            raise OAuthError("invalid_grant", "the refresh token was already used; the grant is revoked")
        if rec.expires_at <= self.clock():
            raise OAuthError("invalid_grant", "the refresh token has expired")
        user = self.users.get(rec.user_id)
        if user is None:
            raise OAuthError("invalid_grant", "the user no longer exists")
        scope = " ".join(requested.split()) if requested else rec.scope
        return self._issue(
            user,
            client_id=client_id,
            client_name=rec.client_name,
            resource=rec.resource,
            scope=scope,
            family_id=rec.family_id,
            granted_at=rec.granted_at,
            grant=rec.grant,
        )

    def _issue(
        self,
        user: User,
        *,
        client_id: str,
        client_name: str,
        resource: str,
        scope: str,
        family_id: str | None,
        granted_at: float,
        grant: str = "",
    ) -> dict[str, Any]:
        ttl = self.settings.oauth_access_token_ttl
        claims: dict[str, Any] = {"sub": user.id, "email": user.email, "client_id": client_id, "scope": scope}
        if client_name and client_name != client_id:
            claims["client_name"] = client_name[:100]
        if grant:  # the client's grant travels in its access tokens (signed; no store read per call)
            claims["wb_grant"] = json.loads(grant)
        value = REFRESH_PREFIX + secrets.token_urlsafe(32) if family_id is not None else ""
        if family_id is not None:
            claims["grant"] = family_id  # what the user revokes; curl_session tokens check it
            # The refresh token issued with this access token (its hash, the key of its record):
            # revoking the grant or the client deletes it, so the gateway checks the grant by
            # reading it by key, in the request's first batch read (identity.auth.KeyRecheck).
            claims["grant_token"] = _sha256(value)
        access = self.tokens.mint(claims, audience=resource, ttl_seconds=ttl)
        log_event("oauth_token_issued", client_id=client_id, user=user.id, refresh=family_id is not None)
        body: dict[str, Any] = {
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": ttl,
            "scope": scope,
        }
        if family_id is not None:
            now = self.clock()
            self.refresh.put(
                RefreshToken(
                    token_hash=_sha256(value),
                    family_id=family_id,
                    user_id=user.id,
                    client_id=client_id,
                    client_name=client_name,
                    resource=resource,
                    scope=scope,
                    created_at=now,
                    granted_at=granted_at,
                    expires_at=now + self.settings.oauth_refresh_token_ttl,
                    grant=grant,
                )
            )
            body["refresh_token"] = value
        return body

    # -- revocation (RFC 7009) ---------------------------------------------------------------------

    def revoke(self, pairs: Sequence[tuple[str, str]], basic: tuple[str, str] | None) -> None:
        params, repeated = single_params(pairs)
        if repeated:
            raise OAuthError(
                "invalid_request", f"parameters sent more than once: {', '.join(sorted(repeated))}"
            )
        client_id = self.authenticate_client(params, basic)
        token = params.get("token")
        if not token:
            raise OAuthError("invalid_request", "token is required")
        rec = self.refresh.get(_sha256(token))  # token_type_hint only orders the lookup; one is cheap
        if rec is not None:
            if rec.client_id == client_id:  # another client's token: no effect, and no oracle
                self.refresh.revoke_family(rec.family_id)
            return
        if token.count(".") == 2:
            try:
                self.tokens.verify(token, audience=self.audience)
            except AuthError:
                return  # invalid tokens do not cause an error (RFC 7009 §2.2)
            raise OAuthError(
                "unsupported_token_type",
                "access tokens are self-contained and lapse at their expiry; revoke the refresh token",
            )

    # -- access tokens at the resource -------------------------------------------------------------

    def verify_access_token(self, token: str) -> Principal | None:
        """Gateway token verifier: a Principal for our access tokens, AuthError for a JWT that is
        not one (wrong audience, expired, unknown key), None for anything else. No store read."""
        return AccessTokenVerifier(lambda: self.tokens, self.issuer)(token)

    def client_grant(self, user_id: str, client_id: str) -> Grant:
        """The grant this user gave the client (its newest live refresh token's)."""
        now = self.clock()
        live = [
            t
            for t in self.refresh.list_for(user_id)
            if t.client_id == client_id and not t.rotated and t.expires_at > now
        ]
        if not live:
            return FULL
        return Grant.loads(max(live, key=lambda t: t.created_at).grant)

    def set_client_grant(self, user_id: str, client_id: str, grant: Grant) -> bool:
        """Change the client's grant: its next access token (at the next refresh) carries it.
        False when the user has no live grant for the client."""
        changed = self.refresh.set_grant(user_id, client_id, "" if grant.is_full else grant.dumps())
        if changed:
            log_event("oauth_client_grant_changed", client_id=client_id, user=user_id, grant=grant.describe())
        return changed > 0

    # -- the portal's MCP clients page ---------------------------------------------------------------

    def list_clients_with_live_tokens(self, user_id: str) -> list[ClientGrant]:
        now = self.clock()
        grants: dict[str, ClientGrant] = {}
        for t in self.refresh.list_for(user_id):
            if t.rotated or t.expires_at <= now:
                continue
            seen = grants.get(t.client_id)
            grants[t.client_id] = ClientGrant(
                client_id=t.client_id,
                client_name=t.client_name or t.client_id,
                created_at=min(t.granted_at, seen.created_at) if seen else t.granted_at,
                last_used_at=max(t.created_at, seen.last_used_at) if seen else t.created_at,
            )
        return sorted(grants.values(), key=lambda g: -g.last_used_at)

    def revoke_client(self, user_id: str, client_id: str) -> bool:
        """Delete this user's refresh tokens and outstanding codes for the client. Issued access
        tokens lapse at their TTL. False when there was nothing to revoke."""
        removed = self.refresh.delete_for(user_id, client_id)
        removed += self.codes.delete_for(user_id, client_id)
        if removed:
            log_event("oauth_client_revoked", client_id=client_id, user=user_id)
        return removed > 0

    # Names the portal's page uses.
    list_for_user = list_clients_with_live_tokens
    revoke_for_user = revoke_client
