"""Portal sign-in: Workbench as an OpenID Connect relying party of a generic provider.

Google and Keycloak are both just configuration: WORKBENCH_OIDC_ISSUER, _CLIENT_ID, _CLIENT_SECRET.
The flow is authorization code + PKCE (S256) + `state` + `nonce`:

- `state` is random, stored server-side in the TTL store (single-use, 10 min, holding the PKCE
  verifier and where to go afterwards) and also bound to the browser with a short-lived cookie,
  so a callback URL cannot be replayed into someone else's browser (login CSRF).
- `nonce` is derived from the verifier (sha256), so it needs no storage and cannot be guessed.
- The ID token is verified with the provider's JWKS: signature, `iss`, `aud`, `exp`, `iat`, nonce;
  the user is identified by a verified `email` claim.
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

import httpx

from workbench.connections.provider_oauth import pkce_challenge
from workbench.errors import WorkbenchError
from workbench.guard.shared_http import SharedClient

__all__ = ["OidcClient", "OidcError", "SignedIn", "nonce_for"]

_TIMEOUT = httpx.Timeout(10.0, connect=5.0)
_ASYMMETRIC = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
_CACHE_SECONDS = 3600


class OidcError(WorkbenchError):
    """Sign-in failed; the message is safe to show to the person signing in."""


@dataclass(frozen=True, slots=True)
class SignedIn:
    email: str
    subject: str


def nonce_for(verifier: str) -> str:
    digest = hashlib.sha256(b"workbench-oidc-nonce\x00" + verifier.encode()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


class OidcClient:
    def __init__(
        self,
        issuer: str,
        client_id: str,
        client_secret: str | Callable[[], str | None] | None,
        redirect_uri: str,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.issuer = issuer.rstrip("/")
        self.client_id = client_id
        # A callable is asked on each sign-in: a rotated secret is used without a restart.
        self._client_secret = client_secret
        self.redirect_uri = redirect_uri
        # One client for every sign-in on this instance, never closed by a request (shared_http).
        self.http = SharedClient(transport, timeout=_TIMEOUT)
        self.clock = clock
        self._meta: dict[str, Any] | None = None
        self._meta_at = 0.0
        self._jwks: dict[str, Any] | None = None
        self._jwks_at = 0.0

    @property
    def client_secret(self) -> str | None:
        secret = self._client_secret
        return secret() if callable(secret) else secret

    async def metadata(self) -> dict[str, Any]:
        """The provider's discovery document (cached per warm instance)."""
        if self._meta is None or self.clock() - self._meta_at > _CACHE_SECONDS:
            url = f"{self.issuer}/.well-known/openid-configuration"
            try:
                http = self.http.client()
                resp = await http.get(url, headers={"Accept": "application/json"})
                resp.raise_for_status()
                meta = resp.json()
            except (httpx.HTTPError, ValueError) as exc:
                raise OidcError(
                    "The sign-in provider cannot be reached right now. Try again shortly."
                ) from exc
            if not isinstance(meta, dict) or meta.get("issuer", "").rstrip("/") != self.issuer:
                raise OidcError("The sign-in provider's configuration does not match its issuer.")
            self._meta, self._meta_at = meta, self.clock()
        return self._meta

    async def authorize_url(self, *, state: str, verifier: str) -> str:
        meta = await self.metadata()
        params = {
            "response_type": "code",
            "client_id": self.client_id,
            "redirect_uri": self.redirect_uri,
            "scope": "openid email",
            "state": state,
            "nonce": nonce_for(verifier),
            "code_challenge": pkce_challenge(verifier),
            "code_challenge_method": "S256",
        }
        endpoint = str(meta["authorization_endpoint"])
        return f"{endpoint}{'&' if '?' in endpoint else '?'}{urlencode(params)}"

    async def finish(self, *, code: str, verifier: str) -> SignedIn:
        """Exchange the code (with the PKCE verifier) and verify the ID token."""
        meta = await self.metadata()
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": self.redirect_uri,
            "code_verifier": verifier,
        }
        headers = {"Accept": "application/json"}
        methods = meta.get("token_endpoint_auth_methods_supported") or ["client_secret_basic"]
        secret = self.client_secret
        if secret and "client_secret_basic" in methods:
            # RFC 6749 §2.3.1: form-encode id and secret before Base64.
            raw = f"{quote(self.client_id, safe='')}:{quote(secret, safe='')}".encode()
            headers["Authorization"] = "Basic " + base64.b64encode(raw).decode()
        else:
            form["client_id"] = self.client_id
            if secret:
                form["client_secret"] = secret
        try:
            http = self.http.client()
            resp = await http.post(str(meta["token_endpoint"]), data=form, headers=headers)
            body = resp.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise OidcError("The sign-in provider did not answer properly. Try again.") from exc
        if resp.status_code != 200 or not isinstance(body, dict) or "id_token" not in body:
            error = body.get("error") if isinstance(body, dict) else None
            raise OidcError(f"The sign-in provider refused the sign-in ({error or resp.status_code}).")
        claims = await self._verify(str(body["id_token"]), nonce_for(verifier))
        if not claims.get("email") and body.get("access_token") and meta.get("userinfo_endpoint"):
            # Providers may keep scope claims out of the ID token (OIDC Core §5.4): ask userinfo,
            # and accept its answer only for the subject the verified ID token names (§5.3.2).
            info = await self._userinfo(str(meta["userinfo_endpoint"]), str(body["access_token"]))
            if info.get("sub") != claims.get("sub"):
                raise OidcError("The sign-in provider's user info does not match the ID token.")
            claims = {**info, **{k: v for k, v in claims.items() if v is not None}}
        email = claims.get("email")
        if not isinstance(email, str) or "@" not in email:
            raise OidcError("The sign-in provider did not share an email address for this account.")
        if claims.get("email_verified") is False:
            raise OidcError("The email address of this account is not verified at the sign-in provider.")
        return SignedIn(email=email.strip().lower(), subject=str(claims.get("sub", "")))

    async def _userinfo(self, url: str, access_token: str) -> dict[str, Any]:
        try:
            http = self.http.client()
            resp = await http.get(
                url, headers={"Authorization": f"Bearer {access_token}", "Accept": "application/json"}
            )
            resp.raise_for_status()
            info = resp.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise OidcError("The sign-in provider's user info cannot be read. Try again.") from exc
        if not isinstance(info, dict):
            raise OidcError("The sign-in provider's user info is malformed.")
        return info

    async def _jwk_set(self, *, force: bool = False) -> dict[str, Any]:
        if force or self._jwks is None or self.clock() - self._jwks_at > _CACHE_SECONDS:
            meta = await self.metadata()
            try:
                http = self.http.client()
                resp = await http.get(str(meta["jwks_uri"]), headers={"Accept": "application/json"})
                resp.raise_for_status()
                self._jwks, self._jwks_at = resp.json(), self.clock()
            except (httpx.HTTPError, ValueError) as exc:
                raise OidcError("The sign-in provider's keys cannot be fetched. Try again shortly.") from exc
        assert self._jwks is not None
        return self._jwks

    async def _verify(self, id_token: str, nonce: str) -> dict[str, Any]:
        import jwt  # pyjwt; imported here so the portal's cold start does not pay for it

        try:
            header = jwt.get_unverified_header(id_token)
        except jwt.PyJWTError as exc:
            raise OidcError("The sign-in provider sent a malformed ID token.") from exc
        alg = str(header.get("alg") or "")
        meta = await self.metadata()
        allowed = [
            a for a in meta.get("id_token_signing_alg_values_supported", ["RS256"]) if a in _ASYMMETRIC
        ]
        if alg not in allowed:
            raise OidcError("The ID token is signed with an algorithm this gateway does not accept.")
        key = _find_key(await self._jwk_set(), header.get("kid"), alg)
        if key is None:  # keys may have rotated since we cached them
            key = _find_key(await self._jwk_set(force=True), header.get("kid"), alg)
        if key is None:
            raise OidcError("The ID token is signed with an unknown key.")
        try:
            claims: dict[str, Any] = jwt.decode(
                id_token,
                key,
                algorithms=[alg],
                audience=self.client_id,
                issuer=meta["issuer"],
                leeway=60,
                options={"require": ["exp", "iat", "iss", "aud", "sub"]},
            )
        except jwt.PyJWTError as exc:
            raise OidcError(f"The ID token is not valid ({type(exc).__name__}).") from exc
        if claims.get("nonce") != nonce:
            raise OidcError("The ID token does not belong to this sign-in (nonce mismatch).")
        aud = claims.get("aud")
        if isinstance(aud, list) and len(aud) > 1 and claims.get("azp") != self.client_id:
            raise OidcError("The ID token was issued to another client.")
        return claims


def _find_key(jwks: dict[str, Any], kid: str | None, alg: str) -> Any:
    import jwt

    for jwk in jwks.get("keys", []):
        if kid is not None and jwk.get("kid") != kid:
            continue
        if jwk.get("use", "sig") != "sig":
            continue
        try:
            return jwt.PyJWK.from_json(json.dumps(jwk), algorithm=alg).key
        except jwt.PyJWTError:
            continue
    return None
