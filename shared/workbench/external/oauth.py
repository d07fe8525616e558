"""OAuth-protected external MCP servers: Workbench as an OAuth 2.1 client of the server's
authorization server, per the MCP authorization spec (2025-11-25 / 2026-07-28).

`prepare` runs once per app (again when the server's challenge changes), from the server's 401:

1. **RFC 9728**: the protected-resource metadata URL from `WWW-Authenticate: Bearer
   resource_metadata=…`, else the well-known URIs (at the MCP endpoint's path, then at the root).
   Its `resource` must name this server; its first `authorization_servers` entry is the issuer.
2. **RFC 8414 / OIDC discovery**: the issuer's metadata from the well-known URIs in the spec's order;
   the document's `issuer` must equal the issuer exactly, and it must offer PKCE S256.
3. **Client registration**: a client ID metadata document (Workbench's own HTTPS URL) when the
   server advertises `client_id_metadata_document_supported`, else dynamic client registration
   (RFC 7591) at its `registration_endpoint`.

The result (the plan: endpoints, client, resource, scope) is stored encrypted with the app. Then
connecting is the plugins' flow: `connect` → link → `redeem` (PKCE S256, `state`, `resource`)
→ consent → `/api/auth/apps/callback` (issuer checked per RFC 9207, code exchanged with the
verifier and `resource`) → the tokens stored encrypted per user like any connection, refreshed
lazily through the one refresh mechanism (`Credentials`), whose refresher calls `refresh` here
with what the stored credential says.
"""

from __future__ import annotations

import base64
import re
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode, urlsplit

import httpx

from workbench.connections.provider_oauth import (
    ProviderError,
    TokenSet,
    pkce_challenge,
    pkce_verifier,
    refusal_is_permanent,
)
from workbench.errors import CryptoError, NotConnected, WorkbenchError
from workbench.external.paths import CALLBACK_PATH, CLIENT_METADATA_PATH
from workbench.guard.egress import EgressRefused, ResponseTooLarge
from workbench.guard.egress_transport import read_bounded
from workbench.guard.jsontext import JsonRejected, parse
from workbench.guard.shared_http import SharedClient
from workbench.stores import ExternalServer, ExternalServerStore, OAuthState, PendingConnect, PendingStore

if TYPE_CHECKING:
    from workbench.connections.credentials import Credentials
    from workbench.connections.flow import Redeemed
    from workbench.identity.crypto import Cipher
    from workbench.stores import User

__all__ = ["CALLBACK_PATH", "CLIENT_METADATA_PATH", "AppOAuth", "OAuthSetupError", "Plan"]

STATE_TTL_SECONDS = 600
_MAX_DOC = 256_000
_TIMEOUT = httpx.Timeout(10.0, connect=5.0)
_PARAM = re.compile(r'([A-Za-z_][A-Za-z0-9_-]*)\s*=\s*("(?:[^"\\]|\\.)*"|[^\s,]+)')


class OAuthSetupError(WorkbenchError):
    """The server's OAuth setup cannot be used; the message says why, for the user."""


@dataclass(frozen=True, slots=True)
class Plan:
    """How to get tokens for one app: found by `prepare`, stored encrypted with the app."""

    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    client_id: str
    client_secret: str = field(repr=False)
    token_auth: str  # none | client_secret_post | client_secret_basic
    resource: str
    scope: str
    iss_supported: bool
    registration: str  # "cimd" | "dcr"
    challenge: str = ""  # the WWW-Authenticate it was prepared from


def parse_challenge(header: str) -> dict[str, str]:
    """The auth-params of a `Bearer` challenge (RFC 6750 §3, RFC 9728 §5.1)."""
    if not header.strip().lower().startswith("bearer"):
        return {}
    out: dict[str, str] = {}
    for key, raw in _PARAM.findall(header[6:]):
        value = raw[1:-1].replace('\\"', '"').replace("\\\\", "\\") if raw.startswith('"') else raw
        out[key.lower()] = value
    return out


class AppOAuth:
    def __init__(
        self,
        *,
        public_url: str,
        store: ExternalServerStore,
        cipher: Cipher,
        pending: PendingStore,
        credentials: Credentials,
        clock: Callable[[], float] = time.time,
        transport: httpx.AsyncBaseTransport | None = None,
        allow_http_client_metadata: bool = False,
        connect_ttl: int = 600,
        refuse_host: Callable[[str], str | None] = lambda host: None,
    ) -> None:
        self.public_url = public_url.rstrip("/")
        self.store = store
        self.cipher = cipher
        self.pending = pending
        self.credentials = credentials
        self.clock = clock
        self.transport = transport
        # Tests only: offer a client ID metadata document served over plain http (loopback).
        self.allow_http_client_metadata = allow_http_client_metadata
        self.connect_ttl = connect_ttl
        # The address policy for every URL a server's metadata names (metadata, registration, token
        # endpoints): the same one its MCP endpoint is held to, so a 401 cannot steer Workbench inward.
        self.refuse_host = refuse_host

    @property
    def transport(self) -> httpx.AsyncBaseTransport | None:
        return self._transport

    @transport.setter
    def transport(self, transport: httpx.AsyncBaseTransport | None) -> None:
        # One client for every discovery, registration and token request of this instance, never
        # closed by a request (see shared_http).
        self._transport = transport
        self.http = SharedClient(transport, timeout=_TIMEOUT, follow_redirects=False)

    # -- Workbench's own client identity -----------------------------------------------------------

    @property
    def redirect_uri(self) -> str:
        return self.public_url + CALLBACK_PATH

    @property
    def client_id_url(self) -> str:
        return self.public_url + CLIENT_METADATA_PATH

    def client_metadata(self) -> dict[str, Any]:
        """The client ID metadata document Workbench serves at `client_id_url`."""
        return {
            "client_id": self.client_id_url,
            "client_name": "Workbench",
            "client_uri": self.public_url,
            "redirect_uris": [self.redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        }

    def _cimd_usable(self) -> bool:
        scheme = urlsplit(self.client_id_url).scheme
        return scheme == "https" or (scheme == "http" and self.allow_http_client_metadata)

    # -- plans ------------------------------------------------------------------------------------

    @staticmethod
    def _row(app_name: str) -> str:
        return f"#oauth:{app_name}"

    def plan(self, owner: str, app_name: str) -> Plan | None:
        row = self.store.get(owner, self._row(app_name))
        if row is None:
            return None
        try:
            value = self.cipher.decrypt_json(row.config, _context(owner, app_name))
        except (CryptoError, ValueError):
            return None  # unreadable: as if no plan were stored (discovery makes a new one)
        return Plan(**value) if isinstance(value, dict) else None

    def forget(self, owner: str, app_name: str) -> None:
        if self.store is not None:
            self.store.delete(owner, self._row(app_name))

    def save_plan(self, owner: str, app_name: str, plan: Plan) -> None:
        assert self.store is not None
        blob = self.cipher.encrypt_json(asdict(plan), _context(owner, app_name))
        now = self.clock()
        self.store.put(ExternalServer(owner, self._row(app_name), "", blob, created_at=now, updated_at=now))

    async def prepare(self, owner: str, app_name: str, server_url: str, challenge: str) -> Plan:
        """Discovery and client registration from the server's 401 (see the module docstring)."""
        params = parse_challenge(challenge)
        http = self.http.client()
        prm = await self._resource_metadata(http, server_url, params.get("resource_metadata"))
        resource = str(prm["resource"])
        servers = prm.get("authorization_servers")
        if not isinstance(servers, list) or not servers or not isinstance(servers[0], str):
            raise OAuthSetupError("its protected-resource metadata names no authorization server")
        issuer = servers[0]
        meta = await self._as_metadata(http, issuer)
        methods = meta.get("code_challenge_methods_supported")
        if not isinstance(methods, list) or "S256" not in methods:
            raise OAuthSetupError("its authorization server does not offer PKCE with S256")
        scope = params.get("scope") or " ".join(
            s for s in (prm.get("scopes_supported") or []) if isinstance(s, str)
        )
        offered = meta.get("scopes_supported")
        if isinstance(offered, list) and "offline_access" in offered and "offline_access" not in scope:
            scope = (scope + " offline_access").strip()
        if meta.get("client_id_metadata_document_supported") is True and self._cimd_usable():
            client_id, secret, auth, how = self.client_id_url, "", "none", "cimd"
        elif isinstance(meta.get("registration_endpoint"), str):
            client_id, secret, auth = await self._register(http, str(meta["registration_endpoint"]), scope)
            how = "dcr"
        else:
            raise OAuthSetupError(
                "its authorization server supports neither client ID metadata documents nor dynamic "
                "client registration"
            )
        plan = Plan(
            issuer=issuer,
            authorization_endpoint=_https_or_loopback(
                meta.get("authorization_endpoint"), "authorization_endpoint"
            ),
            token_endpoint=self._allowed(
                _https_or_loopback(meta.get("token_endpoint"), "token_endpoint"), "token endpoint"
            ),
            client_id=client_id,
            client_secret=secret,
            token_auth=auth,
            resource=resource,
            scope=scope,
            iss_supported=meta.get("authorization_response_iss_parameter_supported") is True,
            registration=how,
            challenge=challenge,
        )
        self.save_plan(owner, app_name, plan)
        return plan

    def _allowed(self, url: str, what: str) -> str:
        reason = self.refuse_host(urlsplit(url).hostname or "")
        if reason:
            raise OAuthSetupError(f"its {what} is refused ({reason.removeprefix('url ')})")
        return url

    async def _get_json(self, http: httpx.AsyncClient, url: str) -> dict[str, Any] | None:
        self._allowed(url, "metadata URL")
        try:
            async with http.stream("GET", url, headers={"Accept": "application/json"}) as resp:
                if resp.status_code != 200:
                    return None
                body = bytearray()
                async for chunk in resp.aiter_bytes():
                    body.extend(chunk)
                    if len(body) > _MAX_DOC:
                        raise OAuthSetupError(f"a metadata document at {_origin(url)} is too large")
        except httpx.HTTPError as exc:
            raise OAuthSetupError(f"{_origin(url)} could not be reached ({type(exc).__name__})") from None
        except EgressRefused as exc:  # what the name resolved to (checked at connect), or too large
            raise OAuthSetupError(f"{_origin(url)} is refused ({exc})") from None
        try:
            value = parse(bytes(body))
        except (ValueError, JsonRejected):
            return None
        return value if isinstance(value, dict) else None

    async def _resource_metadata(
        self, http: httpx.AsyncClient, server_url: str, from_header: str | None
    ) -> dict[str, Any]:
        parts = urlsplit(server_url)
        origin = f"{parts.scheme}://{parts.netloc}"
        path = parts.path.rstrip("/")
        candidates = [from_header] if from_header else []
        if path:
            candidates.append(f"{origin}/.well-known/oauth-protected-resource{path}")
        candidates.append(f"{origin}/.well-known/oauth-protected-resource")
        for url in candidates:
            if not url or urlsplit(url).scheme not in ("https", "http"):
                continue
            doc = await self._get_json(http, url)
            if doc is None:
                continue
            resource = doc.get("resource")
            if not isinstance(resource, str) or not _names(resource, server_url):
                raise OAuthSetupError("its protected-resource metadata is for another resource")
            return doc
        raise OAuthSetupError("it asks for OAuth but publishes no protected-resource metadata (RFC 9728)")

    async def _as_metadata(self, http: httpx.AsyncClient, issuer: str) -> dict[str, Any]:
        parts = urlsplit(issuer)
        if parts.scheme not in ("https", "http") or not parts.netloc or parts.query or parts.fragment:
            raise OAuthSetupError("its authorization server's issuer is not a valid URL")
        origin = f"{parts.scheme}://{parts.netloc}"
        path = parts.path.rstrip("/")
        if path:
            candidates = [
                f"{origin}/.well-known/oauth-authorization-server{path}",
                f"{origin}/.well-known/openid-configuration{path}",
                f"{origin}{path}/.well-known/openid-configuration",
            ]
        else:
            candidates = [
                f"{origin}/.well-known/oauth-authorization-server",
                f"{origin}/.well-known/openid-configuration",
            ]
        for url in candidates:
            doc = await self._get_json(http, url)
            if doc is None:
                continue
            if doc.get("issuer") != issuer:  # RFC 8414 §3.3: exactly the issuer we asked about
                raise OAuthSetupError("its authorization server metadata names a different issuer")
            return doc
        raise OAuthSetupError("its authorization server publishes no metadata (RFC 8414 / OpenID discovery)")

    async def _register(self, http: httpx.AsyncClient, endpoint: str, scope: str) -> tuple[str, str, str]:
        body: dict[str, Any] = {
            "client_name": "Workbench",
            "redirect_uris": [self.redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
            "application_type": "web",
        }
        if scope:
            body["scope"] = scope
        target = self._allowed(_https_or_loopback(endpoint, "registration_endpoint"), "registration endpoint")
        try:
            async with http.stream("POST", target, json=body) as resp:
                raw = await read_bounded(resp, _MAX_DOC)
        except httpx.HTTPError as exc:
            raise OAuthSetupError(f"client registration failed ({type(exc).__name__})") from None
        except EgressRefused as exc:  # where the endpoint resolved to, or an answer over the bound
            raise OAuthSetupError(f"client registration failed: {exc}") from None
        try:
            value = parse(raw)
        except (ValueError, JsonRejected):
            value = {}
        if resp.status_code not in (200, 201) or not isinstance(value, dict) or not value.get("client_id"):
            reason = value.get("error_description") or value.get("error") if isinstance(value, dict) else ""
            raise OAuthSetupError(
                f"client registration was refused (HTTP {resp.status_code}) {reason or ''}".strip()
            )
        secret = str(value.get("client_secret") or "")
        method = str(value.get("token_endpoint_auth_method") or ("client_secret_post" if secret else "none"))
        return str(value["client_id"]), secret, method

    # -- connecting ---------------------------------------------------------------------------------

    def redeem(self, user: User, rec: PendingConnect, owner: str) -> Redeemed:
        """The consent URL for a connect link of an OAuth app (same user checked by the caller)."""
        from workbench.connections.flow import Redeemed

        plan = self.plan(owner, rec.integration)
        if plan is None:
            return Redeemed(
                409, {"error": "NOT_READY", "message": f"{rec.integration} has no OAuth setup yet."}
            )
        verifier = pkce_verifier()
        state = secrets.token_urlsafe(32)
        params = {
            "response_type": "code",
            "client_id": plan.client_id,
            "redirect_uri": self.redirect_uri,
            "state": state,
            "code_challenge": pkce_challenge(verifier),
            "code_challenge_method": "S256",
        }
        if plan.resource:  # RFC 8707; a plain OAuth2 API (an OpenAPI app) names none
            params["resource"] = plan.resource
        if plan.scope:
            params["scope"] = plan.scope
        self.pending.put_state(
            OAuthState(
                state=state,
                user_id=user.id,
                integration=rec.integration,
                connection_id=rec.id,
                code_verifier=verifier,
                redirect_uri=self.redirect_uri,
                expires_at=self.clock() + STATE_TTL_SECONDS,
            )
        )
        sep = "&" if "?" in plan.authorization_endpoint else "?"
        return Redeemed(200, {"type": "oauth2", "url": plan.authorization_endpoint + sep + urlencode(params)})

    async def complete(
        self,
        user: User | None,
        owner_of: Callable[[str, str], str | None],
        *,
        state: str | None,
        code: str | None,
        iss: str | None,
        error: str | None,
    ) -> str:
        """Finish a consent: check the state, the user and the issuer, exchange the code, store the
        tokens. Returns the app's name; raises CallbackError (nothing stored)."""
        from workbench.connections.flow import CallbackError, check_callback, link_still_open

        taken = self.pending.take_state(state, now=self.clock()) if state else None
        if taken is None or taken.redirect_uri != self.redirect_uri:
            raise CallbackError(
                "This sign-in response is not valid: it was already used, has expired, or was not started "
                "here. Open the connect link again to start over."
            )
        check_callback(self.pending, taken, user, self.clock())
        assert user is not None
        owner = owner_of(user.id, taken.integration)
        plan = self.plan(owner, taken.integration) if owner else None
        if plan is None:
            raise CallbackError(f"{taken.integration} is no longer set up for OAuth. Nothing was stored.")
        # RFC 9207: a present iss must be the recorded issuer; an absent one only if not advertised.
        # (A plain OAuth2 API registered from an OpenAPI document has no recorded issuer.)
        if plan.issuer and ((iss is not None and iss != plan.issuer) or (iss is None and plan.iss_supported)):
            raise CallbackError(
                "The sign-in response did not come from the authorization server this app uses. Nothing "
                "was stored."
            )
        if error:
            raise CallbackError(f"The server did not grant access ({error}). Nothing was stored.")
        if not code:
            raise CallbackError("The server's answer has no authorization code. Nothing was stored.")
        grant = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": self.redirect_uri,
            "code_verifier": taken.code_verifier,
        }
        if plan.resource:
            grant["resource"] = plan.resource
        try:
            tokens = await self._token_request(plan, grant)
        except ProviderError as exc:
            raise CallbackError(
                f"The server refused the authorization code ({exc.error}). Nothing was stored; open the "
                "connect link again to retry."
            ) from exc
        now = self.clock()
        credential = {**tokens.credential, "app_oauth": _client_part(plan)}
        link_still_open(self.pending, taken, now)  # it may have run out during the exchange
        self.credentials.save(user.id, taken.integration, credential, expires_at=tokens.expires_at(now))
        self.pending.mark_connected(taken.connection_id)
        return taken.integration

    async def refresh(self, refresh_token: str, stored: Mapping[str, Any]) -> TokenSet:
        """A refresh_token grant at the token endpoint the stored credential names."""
        part = stored.get("app_oauth")
        if not isinstance(part, Mapping):
            raise ProviderError("not_configured", "the stored credential has no OAuth client", permanent=True)
        plan = Plan(
            issuer=str(part.get("issuer", "")),
            authorization_endpoint="",
            token_endpoint=str(part.get("token_endpoint", "")),
            client_id=str(part.get("client_id", "")),
            client_secret=str(part.get("client_secret", "")),
            token_auth=str(part.get("token_auth", "none")),
            resource=str(part.get("resource", "")),
            scope="",
            iss_supported=False,
            registration="",
        )
        grant = {"grant_type": "refresh_token", "refresh_token": refresh_token}
        if plan.resource:
            grant["resource"] = plan.resource
        tokens = await self._token_request(plan, grant)
        return TokenSet({**tokens.credential, "app_oauth": dict(part)}, tokens.expires_in)

    async def _token_request(self, plan: Plan, grant: dict[str, str]) -> TokenSet:
        if self.refuse_host(urlsplit(plan.token_endpoint).hostname or ""):
            raise ProviderError("refused", "the token endpoint's address is not allowed", permanent=True)
        body = dict(grant)
        headers = {"Accept": "application/json", "User-Agent": "workbench/0.1"}
        if plan.client_secret and plan.token_auth == "client_secret_basic":
            pair = f"{quote(plan.client_id, safe='')}:{quote(plan.client_secret, safe='')}".encode()
            headers["Authorization"] = "Basic " + base64.b64encode(pair).decode("ascii")  # RFC 6749 §2.3.1
        else:
            body["client_id"] = plan.client_id
            if plan.client_secret:
                body["client_secret"] = plan.client_secret
        try:
            async with self.http.client().stream(
                "POST", plan.token_endpoint, data=body, headers=headers
            ) as resp:
                raw = await read_bounded(resp, _MAX_DOC)
        except httpx.HTTPError as exc:
            raise ProviderError.unreachable(exc) from exc
        except ResponseTooLarge as exc:
            raise ProviderError("invalid_response", f"token endpoint: {exc}") from exc
        except EgressRefused as exc:
            raise ProviderError("refused", f"token endpoint: {exc}", permanent=exc.status != 502) from exc
        try:
            value = parse(raw)
        except (ValueError, JsonRejected):
            value = {}
        value = value if isinstance(value, dict) else {}
        if resp.status_code >= 400 or value.get("error"):
            code = str(value.get("error") or f"http_{resp.status_code}")
            raise ProviderError(
                code,
                str(value.get("error_description") or ""),
                status=resp.status_code,
                permanent=refusal_is_permanent(code, resp.status_code),
            )
        access = value.get("access_token")
        if not isinstance(access, str) or not access:
            raise ProviderError("invalid_response", "the token response has no access_token")
        credential = {
            k: value[k] for k in ("access_token", "refresh_token", "token_type", "scope") if value.get(k)
        }
        try:
            expires_in = float(value["expires_in"]) if value.get("expires_in") is not None else None
        except (TypeError, ValueError):
            expires_in = None
        return TokenSet(credential, expires_in)

    # -- use ----------------------------------------------------------------------------------------

    async def bearer(self, manifest: Any, user_id: str) -> str:
        """The user's access token for this app, refreshed first when it is about to expire."""
        conn = self.credentials.store.get(user_id, manifest.name)
        if conn is None:
            raise NotConnected(manifest.name)
        cred = await self.credentials.access(manifest, user_id, conn)
        return str(cred.get("access_token", ""))


def _client_part(plan: Plan) -> dict[str, str]:
    """What a refresh needs, kept inside the encrypted credential."""
    return {
        "issuer": plan.issuer,
        "token_endpoint": plan.token_endpoint,
        "client_id": plan.client_id,
        "client_secret": plan.client_secret,
        "token_auth": plan.token_auth,
        "resource": plan.resource,
    }


def _context(owner: str, app_name: str) -> dict[str, str]:
    return {"user": owner, "external_server": f"#oauth:{app_name}", "field": "config"}


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _names(resource: str, server_url: str) -> bool:
    """Whether the metadata's `resource` identifies this server: same origin, and the server's path
    is the resource's path or below it."""
    a, b = urlsplit(resource), urlsplit(server_url)
    if (a.scheme.lower(), a.netloc.lower()) != (b.scheme.lower(), b.netloc.lower()) or a.fragment:
        return False
    base = a.path.rstrip("/")
    return b.path.rstrip("/") == base or b.path.startswith(base + "/") or not base


def _https_or_loopback(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise OAuthSetupError(f"its authorization server metadata has no {what}")
    parts = urlsplit(value)
    loopback = parts.hostname in ("127.0.0.1", "localhost", "::1")
    if parts.scheme != "https" and not (parts.scheme == "http" and loopback):
        raise OAuthSetupError(f"its {what} is not an https URL")
    return value
