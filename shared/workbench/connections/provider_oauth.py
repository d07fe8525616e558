"""Workbench as an OAuth client of a plugin's provider (GitHub, Google, ...).

PKCE (S256) on every flow, confidential clients included; the verifier never leaves the server.
Client credentials per plugin come from `<PLUGIN>_CLIENT_ID` / `<PLUGIN>_CLIENT_SECRET` in the
gateway's secret source (the environment locally, Secrets Manager on AWS), read on each use; a set
id with an unset secret is a public, PKCE-only client, and an unset id means the integration is
"not configured" on this gateway.

Token requests follow the manifest's declared style (`OAuth2Auth`): a form-encoded (RFC 6749
§4.1.3, §6) or JSON body, the client secret in the body (`client_secret_post`) or as HTTP Basic
(`client_secret_basic`, RFC 6749 §2.3.1), and any extra headers the provider needs. A provider that
signs people in on a host chosen per connection (Salesforce) has `{login_host}` in its URLs.
"""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

import httpx

from workbench.errors import ConfigError, InvalidInput, WorkbenchError
from workbench.guard.egress import EgressRefused
from workbench.guard.jsontext import parse
from workbench.guard.shared_http import SharedClient
from workbench.identity.secrets import (
    EnvSecrets,
    SecretSource,
    missing_plugin_client,
    plugin_client_keys,
    plugin_redirect_uri,
)
from workbench.manifest import LoginHosts, Manifest, OAuth2Auth
from workbench.settings import Settings

__all__ = [
    "ProviderError",
    "ProviderOAuth",
    "TokenSet",
    "login_host_for",
    "not_configured_message",
    "pkce_challenge",
    "pkce_verifier",
    "refusal_is_permanent",
]

_TIMEOUT = httpx.Timeout(15.0, connect=5.0)


def pkce_verifier() -> str:
    """43 characters from the unreserved set (RFC 7636 §4.1): 256 bits of entropy."""
    return secrets.token_urlsafe(32)


def pkce_challenge(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


class ProviderError(WorkbenchError):
    """The provider refused a token request (`error` is its OAuth error code), or could not be reached.

    `permanent` is true when the grant itself was refused (invalid_grant and friends), so asking
    again cannot help and the user must connect again; false for outages, 5xx answers and
    `temporarily_unavailable`. `lost` is true when the request went out and its answer did not come
    back (the connection dropped while reading): the provider may have renewed, and rotated, the token.
    """

    def __init__(
        self,
        error: str,
        description: str = "",
        *,
        status: int = 0,
        permanent: bool = False,
        lost: bool = False,
    ) -> None:
        super().__init__(f"{error}: {description}" if description else error)
        self.error = error
        self.description = description
        self.status = status
        self.permanent = permanent
        self.lost = lost

    @classmethod
    def unreachable(cls, exc: httpx.HTTPError) -> ProviderError:
        """The token endpoint could not be asked, or its answer did not arrive (`lost`)."""
        lost = isinstance(exc, httpx.ReadError | httpx.ReadTimeout | httpx.RemoteProtocolError)
        return cls("unreachable", f"token endpoint: {type(exc).__name__}", lost=lost)


_PERMANENT = frozenset(
    {
        "invalid_grant",
        "invalid_client",
        "unauthorized_client",
        "unsupported_grant_type",
        # Slack's names for the same refusals (answered with 200 and "ok": false).
        "invalid_refresh_token",
        "invalid_code",
        "code_already_used",
        "invalid_client_id",
        "bad_client_secret",
        "token_revoked",
        "token_expired",
    }
)
# Refusals that say "not now" (RFC 6749 §4.1.2.1 and §5.2 servers, Slack's ratelimited): asking
# again later can succeed, whatever the status code.
_TRANSIENT = frozenset(
    {"temporarily_unavailable", "server_error", "slow_down", "ratelimited", "rate_limited"}
)


def refusal_is_permanent(code: str, status: int) -> bool:
    """Whether a token endpoint's refusal means the grant is dead (connect again) rather than
    "not now": 5xx, 429 and the transient codes never are; a known refusal code, or any other 400
    or 401, is."""
    if code in _TRANSIENT or status >= 500 or status == 429:
        return False
    # GitHub answers bad_verification_code with 200; treat every refused grant the same way.
    return code in _PERMANENT or code == "bad_verification_code" or status in (400, 401)


@dataclass(frozen=True, slots=True)
class TokenSet:
    """A token response, split into what is stored encrypted and when the access token expires.

    `user` is the person's own token issued next to the app's (Slack's `authed_user`), with its
    expiry already made absolute by `user_credential`."""

    # access_token, refresh_token?, token_type?, scope?, token_fields (kept out of the repr)
    credential: dict[str, Any] = field(repr=False)
    expires_in: float | None
    user: dict[str, Any] | None = None
    user_expires_in: float | None = None

    def expires_at(self, now: float) -> float | None:
        return now + self.expires_in if self.expires_in is not None else None

    def user_credential(self, now: float) -> dict[str, Any] | None:
        if self.user is None:
            return None
        if self.user_expires_in is None:
            return dict(self.user)
        return {**self.user, "expires_at": now + self.user_expires_in}


_HOSTNAME = re.compile(
    r"^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)+$"
)


def login_host_for(hosts: LoginHosts, value: str | None) -> str:
    """The sign-in host a person chose: one of the manifest's choices, or a typed host under one of
    its `custom_suffixes` (the client secret is sent there, so nothing else is accepted)."""
    if not value or not value.strip():
        return hosts.choices[0][1]
    host = value.strip().lower().removeprefix("https://").rstrip("/")
    if host in {h for _, h in hosts.choices}:
        return host
    allowed = " or ".join(f"…{suffix}" for suffix in hosts.custom_suffixes)
    if (
        _HOSTNAME.match(host)
        and hosts.custom_suffixes
        and any(host.endswith(suffix) and len(host) > len(suffix) for suffix in hosts.custom_suffixes)
    ):
        return host
    if not hosts.custom_suffixes:
        raise InvalidInput("Choose one of the listed sign-in hosts.")
    raise InvalidInput(
        f"The sign-in host must be a host name ending in {allowed}, e.g. acme{hosts.custom_suffixes[0]}."
    )


class ProviderOAuth:
    def __init__(
        self,
        settings: Settings,
        secrets: SecretSource | None = None,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.settings = settings
        self.secrets = secrets or EnvSecrets.from_settings(settings)
        # Outbound HTTP to providers: the egress transport (the composition root wraps any test
        # double in it); None means plain httpx, for tests that build this class alone. One client
        # for every token request of this instance, never closed by a request (see shared_http).
        self.transport = transport
        self.http = SharedClient(transport, timeout=_TIMEOUT)

    def redirect_uri(self, integration: str) -> str:
        return plugin_redirect_uri(self.settings.public_url, integration)

    def missing_setting(self, manifest: Manifest) -> str | None:
        """The setting an operator must add before `manifest` can be connected; None when it is set.
        Raises ConfigError when the secret store cannot be read."""
        return missing_plugin_client(self.secrets, manifest.name)

    def client(self, manifest: Manifest) -> tuple[str, str | None]:
        """(client id, secret or None). Not configured, or unreadable, is a ProviderError that is not
        permanent: it is the operator's to fix, and no user's connection is given up over it."""
        id_key, secret_key = plugin_client_keys(manifest.name)
        try:
            client_id, secret = self.secrets.get(id_key), self.secrets.get(secret_key)
        except ConfigError as exc:
            raise ProviderError("unavailable", str(exc)) from exc
        if not client_id:
            raise ProviderError("not_configured", not_configured_message(manifest.name, self.secrets))
        return client_id, secret

    def consent_url(
        self, manifest: Manifest, *, state: str, verifier: str, login_host: str | None = None
    ) -> str:
        auth = _oauth2(manifest)
        client_id, _ = self.client(manifest)
        params: dict[str, str] = {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": self.redirect_uri(manifest.name),
            "state": state,
        }
        if auth.pkce:
            params.update(code_challenge=pkce_challenge(verifier), code_challenge_method="S256")
        if auth.scopes:
            params["scope"] = auth.scope_separator.join(auth.scopes)
        if auth.user_scopes:
            params[auth.user_scope_param] = auth.scope_separator.join(auth.user_scopes)
        params.update(dict(auth.extra_authorize_params))
        url = _on_host(auth.authorize_url, auth, login_host)
        sep = "&" if "?" in url else "?"
        return f"{url}{sep}{urlencode(params)}"

    async def exchange_code(
        self, manifest: Manifest, *, code: str, verifier: str, login_host: str | None = None
    ) -> TokenSet:
        grant = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": self.redirect_uri(manifest.name),
        }
        if _oauth2(manifest).pkce:
            grant["code_verifier"] = verifier
        return await self._token_request(manifest, grant, login_host)

    async def refresh(
        self, manifest: Manifest, refresh_token: str, stored: Mapping[str, Any] | None = None
    ) -> TokenSet:
        """A refresh_token grant, at the sign-in host the connection was made on (if it has one)."""
        login_host = str((stored or {}).get("login_host") or "") or None
        return await self._token_request(
            manifest, {"grant_type": "refresh_token", "refresh_token": refresh_token}, login_host
        )

    # -- internals -------------------------------------------------------------------------------

    async def _token_request(
        self, manifest: Manifest, grant: dict[str, str], login_host: str | None
    ) -> TokenSet:
        auth = _oauth2(manifest)
        client_id, secret = self.client(manifest)
        body = dict(grant)
        headers = {"Accept": "application/json", "User-Agent": "workbench/0.1", **dict(auth.token_headers)}
        if secret and auth.token_auth == "client_secret_basic":
            pair = f"{quote(client_id, safe='')}:{quote(secret, safe='')}".encode()
            headers["Authorization"] = "Basic " + base64.b64encode(pair).decode("ascii")
        else:  # client_secret_post, or a public client identifying itself
            body["client_id"] = client_id
            if secret:
                body["client_secret"] = secret
        url = _on_host(auth.token_url, auth, login_host)
        try:
            http = self.http.client()
            if auth.token_body == "json":
                resp = await http.post(url, json=body, headers=headers)
            else:
                resp = await http.post(url, data=body, headers=headers)
        except httpx.HTTPError as exc:
            raise ProviderError.unreachable(exc) from exc
        except EgressRefused as exc:  # a token URL the egress policy refuses can never work
            raise ProviderError(
                "unreachable" if exc.status == 502 else "refused",
                f"token endpoint: {exc}",
                permanent=exc.status != 502,
            ) from exc
        return _token_set(auth, resp)


def _on_host(url: str, auth: OAuth2Auth, login_host: str | None) -> str:
    if auth.login_hosts is None:
        return url
    return url.replace("{login_host}", login_host or auth.login_hosts.choices[0][1])


def _token_set(auth: OAuth2Auth, resp: httpx.Response) -> TokenSet:
    body = _parse_body(resp)
    error = body.get("error")
    # Slack answers errors with 200 and {"ok": false, "error": ...}: refused all the same.
    if resp.status_code >= 400 or error or body.get("ok") is False:
        code = str(error or f"http_{resp.status_code}")
        raise ProviderError(
            code,
            str(body.get("error_description") or body.get("message") or ""),
            status=resp.status_code,
            permanent=refusal_is_permanent(code, resp.status_code),
        )
    access = body.get("access_token")
    if not isinstance(access, str) or not access:
        raise ProviderError("invalid_response", "the token response has no access_token")
    credential = {
        k: body[k]
        for k in ("access_token", "refresh_token", "token_type", "scope", *auth.token_fields)
        if body.get(k)
    }
    if auth.base_url_field:
        base = str(credential.get(auth.base_url_field) or "")
        parts = urlsplit(base)
        if parts.scheme != "https" or not parts.hostname:
            raise ProviderError(
                "invalid_response", f"the token response's {auth.base_url_field} is not an https URL"
            )
    user, user_expires_in = None, None
    nested = body.get(auth.user_token_field) if auth.user_scopes else None
    if isinstance(nested, dict) and isinstance(nested.get("access_token"), str) and nested["access_token"]:
        user = {
            k: nested[k]
            for k in ("access_token", "refresh_token", "token_type", "scope", "id")
            if nested.get(k)
        }
        user_expires_in = _seconds(nested.get("expires_in"))
    return TokenSet(credential, _seconds(body.get("expires_in")), user, user_expires_in)


def _seconds(value: Any) -> float | None:
    try:
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def not_configured_message(integration: str, secrets: SecretSource) -> str:
    id_key, secret_key = plugin_client_keys(integration)
    return (
        f"{integration} is not configured on this gateway: it has no OAuth client. The operator sets "
        f"{secrets.setting_name(id_key)} (and {secrets.setting_name(secret_key)} for a confidential "
        f"client) in {secrets.where()}."
    )


def _oauth2(manifest: Manifest) -> OAuth2Auth:
    if not isinstance(manifest.auth, OAuth2Auth):
        raise ProviderError("not_oauth2", f"{manifest.name} is not an OAuth2 integration", permanent=True)
    return manifest.auth


def _parse_body(resp: httpx.Response) -> dict[str, Any]:
    """JSON, or form-encoded (what some providers answer without an Accept header)."""
    try:
        value = parse(resp.content)  # strict: a hostile provider's deep JSON is refused, not recursed
        return value if isinstance(value, dict) else {}
    except ValueError:  # JsonRejected too
        return dict(parse_qsl(resp.text))
