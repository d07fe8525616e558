"""Workbench as an OAuth client of a plugin's provider (GitHub, Google, ...).

PKCE (S256) on every flow, confidential clients included; the verifier never leaves the server.
Client credentials per plugin come from `<PLUGIN>_CLIENT_ID` / `<PLUGIN>_CLIENT_SECRET`; a set id
with an unset secret is a public, PKCE-only client. Token requests are form-encoded (RFC 6749
§4.1.3, §6) with the client credentials in the body, which every common provider accepts.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

import httpx

from workbench.registry import Manifest, OAuth2Auth
from workbench.settings import Settings

__all__ = [
    "ProviderError",
    "ProviderOAuth",
    "TokenSet",
    "pkce_challenge",
    "pkce_verifier",
]

_TIMEOUT = httpx.Timeout(15.0, connect=5.0)


def pkce_verifier() -> str:
    """43 characters from the unreserved set (RFC 7636 §4.1): 256 bits of entropy."""
    return secrets.token_urlsafe(32)


def pkce_challenge(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


class ProviderError(Exception):
    """The provider refused a token request (`error` is its OAuth error code), or could not be reached.

    `permanent` is true when the grant itself was refused (invalid_grant and friends), so asking
    again cannot help and the user must connect again; false for outages and 5xx answers.
    """

    def __init__(
        self, error: str, description: str = "", *, status: int = 0, permanent: bool = False
    ) -> None:
        super().__init__(f"{error}: {description}" if description else error)
        self.error = error
        self.description = description
        self.status = status
        self.permanent = permanent


_PERMANENT = frozenset({"invalid_grant", "invalid_client", "unauthorized_client", "unsupported_grant_type"})


@dataclass(frozen=True, slots=True)
class TokenSet:
    """A token response, split into what is stored encrypted and when the access token expires."""

    credential: dict[str, Any]  # access_token, refresh_token?, token_type?, scope?
    expires_in: float | None

    def expires_at(self, now: float) -> float | None:
        return now + self.expires_in if self.expires_in is not None else None


class ProviderOAuth:
    def __init__(
        self,
        settings: Settings,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.settings = settings
        # Outbound HTTP to providers (tests inject a MockTransport; None means the network).
        self.transport = transport

    def redirect_uri(self, integration: str) -> str:
        return f"{self.settings.public_url.rstrip('/')}/api/auth/plugin/{integration}/callback"

    def client(self, manifest: Manifest) -> tuple[str, str | None]:
        client_id, secret = self.settings.plugin_client(manifest.name)
        if not client_id:
            stem = manifest.name.upper().replace("-", "_")
            raise ProviderError(
                "not_configured",
                f"{manifest.name} has no OAuth client on this gateway: set {stem}_CLIENT_ID "
                f"(and {stem}_CLIENT_SECRET for a confidential client).",
                permanent=True,
            )
        return client_id, secret

    def consent_url(self, manifest: Manifest, *, state: str, verifier: str) -> str:
        auth = _oauth2(manifest)
        client_id, _ = self.client(manifest)
        params: dict[str, str] = {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": self.redirect_uri(manifest.name),
            "state": state,
            "code_challenge": pkce_challenge(verifier),
            "code_challenge_method": "S256",
        }
        if auth.scopes:
            params["scope"] = auth.scope_separator.join(auth.scopes)
        params.update(dict(auth.extra_authorize_params))
        sep = "&" if "?" in auth.authorize_url else "?"
        return f"{auth.authorize_url}{sep}{urlencode(params)}"

    async def exchange_code(self, manifest: Manifest, *, code: str, verifier: str) -> TokenSet:
        return await self._token_request(
            manifest,
            {
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": self.redirect_uri(manifest.name),
                "code_verifier": verifier,
            },
        )

    async def refresh(self, manifest: Manifest, refresh_token: str) -> TokenSet:
        return await self._token_request(
            manifest, {"grant_type": "refresh_token", "refresh_token": refresh_token}
        )

    # -- internals -------------------------------------------------------------------------------

    def _http(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=self.transport, timeout=_TIMEOUT)

    async def _token_request(self, manifest: Manifest, form: dict[str, str]) -> TokenSet:
        auth = _oauth2(manifest)
        client_id, secret = self.client(manifest)
        form = {**form, "client_id": client_id}
        headers = {"Accept": "application/json", "User-Agent": "workbench/0.1"}
        if secret and auth.token_auth == "client_secret_basic":
            pair = f"{quote(client_id, safe='')}:{quote(secret, safe='')}".encode()
            headers["Authorization"] = "Basic " + base64.b64encode(pair).decode("ascii")
        elif secret:
            form["client_secret"] = secret
        try:
            async with self._http() as http:
                resp = await http.post(auth.token_url, data=form, headers=headers)
        except httpx.HTTPError as exc:
            raise ProviderError("unreachable", f"token endpoint: {type(exc).__name__}") from exc
        body = _parse_body(resp)
        error = body.get("error")
        if resp.status_code >= 400 or error:
            code = str(error or f"http_{resp.status_code}")
            # GitHub answers bad_verification_code with 200; treat every refused grant the same way.
            permanent = (
                code in _PERMANENT or code == "bad_verification_code" or resp.status_code in (400, 401)
            )
            raise ProviderError(
                code, str(body.get("error_description") or ""), status=resp.status_code, permanent=permanent
            )
        access = body.get("access_token")
        if not isinstance(access, str) or not access:
            raise ProviderError("invalid_response", "the token response has no access_token")
        credential = {
            k: body[k]
            for k in ("access_token", "refresh_token", "token_type", "scope", *auth.token_fields)
            if body.get(k)
        }
        expires_in: float | None
        try:
            expires_in = float(body["expires_in"]) if body.get("expires_in") is not None else None
        except (TypeError, ValueError):
            expires_in = None
        return TokenSet(credential, expires_in)


def _oauth2(manifest: Manifest) -> OAuth2Auth:
    if not isinstance(manifest.auth, OAuth2Auth):
        raise ProviderError("not_oauth2", f"{manifest.name} is not an OAuth2 integration", permanent=True)
    return manifest.auth


def _parse_body(resp: httpx.Response) -> dict[str, Any]:
    """JSON, or form-encoded (what some providers answer without an Accept header)."""
    try:
        value = resp.json()
        return value if isinstance(value, dict) else {}
    except ValueError:
        return dict(parse_qsl(resp.text))
