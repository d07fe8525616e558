"""Who an MCP client is: dynamically registered clients (RFC 7591) and clients identified by the URL
of their metadata document (Client ID Metadata Documents, draft-ietf-oauth-client-id-metadata-document).

Registered clients live in the `OAuthClientStore`. URL client ids are fetched over HTTPS, checked
(the document must name itself, list its redirect URIs, and be a public client) and cached per warm
instance for what their Cache-Control allows. The fetch goes through the egress module: the host
is resolved once, every answer must be a public address, and the connection goes to the checked
address (SSRF and DNS rebinding). Plain http only where the egress policy allows local addresses.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from workbench.guard.egress import EgressPolicy, EgressRefused, ResponseTooLarge
from workbench.guard.egress_transport import EgressTransport
from workbench.guard.shared_http import SharedClient
from workbench.oauth.errors import OAuthError
from workbench.stores import OAuthClient, OAuthClientStore

if TYPE_CHECKING:
    import httpx

__all__ = [
    "AUTH_METHODS",
    "ClientInfo",
    "ClientResolver",
    "check_redirect_uri",
    "hash_secret",
    "register_client",
]

AUTH_METHODS = ("none", "client_secret_post", "client_secret_basic")
GRANT_TYPES = ("authorization_code", "refresh_token")
MAX_REDIRECT_URIS = 20
MAX_URI_CHARS = 2000
MAX_NAME_CHARS = 200
MAX_DOCUMENT_BYTES = 16 * 1024
CIMD_TIMEOUT_SECONDS = 5.0
CIMD_CACHE_DEFAULT = 300
CIMD_CACHE_MIN, CIMD_CACHE_MAX = 60, 86_400
CIMD_CACHE_ENTRIES = 1000

_LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
# Schemes that must never receive an authorization code (script, local files, inline data).
_FORBIDDEN_SCHEMES = {"javascript", "data", "file", "vbscript", "about", "blob", "ftp", "ws", "wss"}
_SCHEME_RE = re.compile(r"^[a-z][a-z0-9+.-]*$")
_CONTROL_RE = re.compile(r"[\x00-\x20\x7f]")
# RFC 7591 string metadata we keep and echo back.
_ECHOED_STRINGS = (
    "client_uri",
    "logo_uri",
    "tos_uri",
    "policy_uri",
    "software_id",
    "software_version",
    "scope",
)
_ECHOED_URIS = ("client_uri", "logo_uri", "tos_uri", "policy_uri")


@dataclass(frozen=True, slots=True)
class ClientInfo:
    """A client as the authorization server sees it, however it was identified."""

    client_id: str
    client_name: str
    redirect_uris: tuple[str, ...]
    token_endpoint_auth_method: str
    grant_types: tuple[str, ...]
    source: str  # "registered" | "metadata_document"
    client_secret_hash: str | None = None
    client_uri: str | None = None

    @property
    def name_is_verified(self) -> bool:
        """A metadata document's name is vouched for by its HTTPS host; a registered name is not."""
        return self.source == "metadata_document"


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def check_redirect_uri(uri: object) -> str | None:
    """Why `uri` cannot be a redirect URI, or None when it can.

    https anywhere; http only on loopback (native apps, RFC 8252 §7.3); private-use schemes for
    native apps (e.g. `cursor://...`), but never script, data or file schemes. No fragment.
    """
    if not isinstance(uri, str) or not uri:
        return "each redirect URI must be a non-empty string"
    if len(uri) > MAX_URI_CHARS:
        return f"redirect URI longer than {MAX_URI_CHARS} characters"
    if _CONTROL_RE.search(uri):
        return "redirect URI contains whitespace or control characters"
    try:
        parts = urlsplit(uri)
        host = parts.hostname
        parts.port  # noqa: B018 - raises ValueError on a malformed port
    except ValueError:
        return f"redirect URI is not a valid URI: {uri}"
    scheme = parts.scheme.lower()
    if not scheme or not _SCHEME_RE.match(scheme):
        return f"redirect URI must be absolute: {uri}"
    if parts.fragment or "#" in uri:
        return f"redirect URI must not contain a fragment: {uri}"
    if scheme == "https":
        if not host:
            return f"redirect URI has no host: {uri}"
        return None
    if scheme == "http":
        if host in _LOOPBACK_HOSTS:
            return None
        return f"http redirect URIs are only allowed on loopback (127.0.0.1, [::1], localhost): {uri}"
    if scheme in _FORBIDDEN_SCHEMES:
        return f"redirect URI scheme {scheme!r} is not allowed: {uri}"
    return None


def _invalid(description: str) -> OAuthError:
    return OAuthError("invalid_client_metadata", description)


def _optional_str(body: dict[str, Any], key: str, limit: int = MAX_URI_CHARS) -> str | None:
    value = body.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > limit:
        raise _invalid(f"{key} must be a string of at most {limit} characters")
    return value


def register_client(body: object, *, now: float) -> tuple[OAuthClient, dict[str, Any]]:
    """Validate an RFC 7591 registration request: the client to store and the response body.

    Raises OAuthError(invalid_redirect_uri | invalid_client_metadata). Unknown members are ignored
    (RFC 7591 §2).
    """
    if not isinstance(body, dict):
        raise _invalid("the registration request must be a JSON object")
    uris = body.get("redirect_uris")
    if not isinstance(uris, list) or not uris:
        raise OAuthError("invalid_redirect_uri", "redirect_uris must be a non-empty array of URIs")
    if len(uris) > MAX_REDIRECT_URIS:
        raise OAuthError("invalid_redirect_uri", f"at most {MAX_REDIRECT_URIS} redirect URIs")
    for uri in uris:
        problem = check_redirect_uri(uri)
        if problem:
            raise OAuthError("invalid_redirect_uri", problem)

    method = body.get("token_endpoint_auth_method", "client_secret_basic")  # RFC 7591 §2 default
    if method not in AUTH_METHODS:
        raise _invalid(f"token_endpoint_auth_method must be one of {', '.join(AUTH_METHODS)}")
    grants = body.get("grant_types", ["authorization_code"])
    if not isinstance(grants, list) or not all(isinstance(g, str) for g in grants):
        raise _invalid("grant_types must be an array of strings")
    unsupported = [g for g in grants if g not in GRANT_TYPES]
    if unsupported:
        raise _invalid(f"unsupported grant_types: {', '.join(unsupported)}")
    if "authorization_code" not in grants:
        raise _invalid("grant_types must include authorization_code")
    responses = body.get("response_types", ["code"])
    if not isinstance(responses, list) or any(r != "code" for r in responses):
        raise _invalid('response_types must be ["code"]')
    name = _optional_str(body, "client_name", MAX_NAME_CHARS)
    echoed = {k: v for k in _ECHOED_STRINGS if (v := _optional_str(body, k)) is not None}
    for key in _ECHOED_URIS:
        if key in echoed and urlsplit(echoed[key]).scheme not in ("http", "https"):
            raise _invalid(f"{key} must be an http(s) URL")
    app_type = body.get("application_type")
    if app_type is not None and app_type not in ("web", "native"):
        raise _invalid('application_type must be "web" or "native"')
    contacts = body.get("contacts")
    if contacts is not None and (
        not isinstance(contacts, list) or not all(isinstance(c, str) and len(c) <= 320 for c in contacts)
    ):
        raise _invalid("contacts must be an array of strings")

    client_id = "wbc_" + secrets.token_urlsafe(18)
    secret = "wbs_" + secrets.token_urlsafe(32) if method != "none" else None
    grant_types = tuple(dict.fromkeys(grants))
    metadata: dict[str, Any] = {**echoed}
    if app_type is not None:
        metadata["application_type"] = app_type
    if contacts is not None:
        metadata["contacts"] = contacts
    client = OAuthClient(
        client_id=client_id,
        client_name=name or "",
        redirect_uris=tuple(uris),
        token_endpoint_auth_method=method,
        grant_types=grant_types,
        created_at=now,
        client_secret_hash=hash_secret(secret) if secret else None,
        metadata=metadata,
    )
    response: dict[str, Any] = {
        "client_id": client_id,
        "client_id_issued_at": int(now),
        "redirect_uris": list(uris),
        "token_endpoint_auth_method": method,
        "grant_types": list(grant_types),
        "response_types": ["code"],
        **metadata,
    }
    if name is not None:
        response["client_name"] = name
    if secret is not None:
        response["client_secret"] = secret
        response["client_secret_expires_at"] = 0
    return client, response


def _from_registered(client: OAuthClient) -> ClientInfo:
    return ClientInfo(
        client_id=client.client_id,
        client_name=client.client_name,
        redirect_uris=client.redirect_uris,
        token_endpoint_auth_method=client.token_endpoint_auth_method,
        grant_types=client.grant_types,
        source="registered",
        client_secret_hash=client.client_secret_hash,
        client_uri=client.metadata.get("client_uri"),
    )


class ClientResolver:
    def __init__(
        self,
        store: OAuthClientStore,
        *,
        egress: EgressPolicy | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.egress = egress or EgressPolicy()
        # `transport` is a test double; it still sits behind the egress URL checks.
        self.transport = EgressTransport(self.egress, inner=transport, max_response_bytes=MAX_DOCUMENT_BYTES)
        # One client for every metadata document fetch, never closed by a fetch (see shared_http).
        self.http = SharedClient(self.transport, timeout=CIMD_TIMEOUT_SECONDS, follow_redirects=False)
        self.clock = clock
        self._cache: dict[str, tuple[float, ClientInfo]] = {}

    def is_metadata_url(self, client_id: str) -> bool:
        scheme = client_id.split(":", 1)[0].lower()
        return scheme == "https" or (scheme == "http" and self.egress.allows_local)

    def registered(self, client_id: str) -> ClientInfo | None:
        """A dynamically registered client (a store read, no network)."""
        if self.is_metadata_url(client_id):
            return None
        client = self.store.get(client_id, now=self.clock())  # an expired unused one is unknown
        return _from_registered(client) if client else None

    async def resolve(self, client_id: str) -> ClientInfo | None:
        """The client behind `client_id`; None when unknown. A metadata document that cannot be
        fetched or is invalid raises OAuthError(invalid_client) with the reason."""
        if not self.is_metadata_url(client_id):
            return self.registered(client_id)
        now = self.clock()
        cached = self._cache.get(client_id)
        if cached and cached[0] > now:
            return cached[1]
        info, max_age = await self._fetch(client_id)
        if max_age > 0:
            if len(self._cache) >= CIMD_CACHE_ENTRIES:
                self._cache.clear()
            self._cache[client_id] = (now + max_age, info)
        return info

    # -- client ID metadata documents ------------------------------------------------------------

    def _check_url(self, url: str) -> None:
        try:
            parts = urlsplit(url)
            host = parts.hostname
            parts.port  # noqa: B018 - raises ValueError on a malformed port
        except ValueError as exc:
            raise OAuthError("invalid_client", "client_id is not a valid URL") from exc
        if not host or parts.username or parts.password or parts.fragment:
            raise OAuthError(
                "invalid_client", "client_id URL must have a host and no credentials or fragment"
            )
        if parts.path in ("", "/"):
            raise OAuthError("invalid_client", "client_id URL must have a path component")
        if "/./" in parts.path or "/../" in parts.path or parts.path.endswith(("/.", "/..")):
            raise OAuthError("invalid_client", "client_id URL must not contain dot segments")
        try:
            self.egress.check_url(url)
        except EgressRefused as exc:
            raise OAuthError("invalid_client", f"client_id URL: {exc}") from exc

    async def _fetch(self, url: str) -> tuple[ClientInfo, int]:
        import httpx

        self._check_url(url)
        try:
            async with self.http.client().stream(
                "GET", url, headers={"Accept": "application/json"}
            ) as response:
                if response.status_code != 200:
                    raise OAuthError(
                        "invalid_client",
                        f"client metadata document answered HTTP {response.status_code}",
                    )
                raw = b""
                async for chunk in response.aiter_bytes():
                    raw += chunk
                    if len(raw) > MAX_DOCUMENT_BYTES:
                        raise OAuthError("invalid_client", "client metadata document is too large")
                cache_control = response.headers.get("cache-control", "")
        except ResponseTooLarge as exc:
            raise OAuthError("invalid_client", "client metadata document is too large") from exc
        except EgressRefused as exc:  # what the host resolved to is not a public address
            raise OAuthError(
                "invalid_client", f"client metadata document could not be fetched: {exc}"
            ) from exc
        except httpx.HTTPError as exc:
            raise OAuthError("invalid_client", "client metadata document could not be fetched") from exc
        try:
            doc = json.loads(raw)
        except ValueError as exc:
            raise OAuthError("invalid_client", "client metadata document is not JSON") from exc
        return self._validate_document(url, doc), _max_age(cache_control)

    @staticmethod
    def _validate_document(url: str, doc: object) -> ClientInfo:
        def bad(reason: str) -> OAuthError:
            return OAuthError("invalid_client", f"client metadata document: {reason}")

        if not isinstance(doc, dict):
            raise bad("not a JSON object")
        if doc.get("client_id") != url:
            raise bad("its client_id does not match the URL it was fetched from")
        name = doc.get("client_name")
        if not isinstance(name, str) or not name.strip() or len(name) > MAX_NAME_CHARS:
            raise bad("client_name is required")
        uris = doc.get("redirect_uris")
        if not isinstance(uris, list) or not uris or len(uris) > MAX_REDIRECT_URIS:
            raise bad("redirect_uris must be a non-empty array")
        for uri in uris:
            problem = check_redirect_uri(uri)
            if problem:
                raise bad(problem)
        # No shared secret can exist for a URL client id; private_key_jwt is not supported here.
        if "client_secret" in doc or "client_secret_expires_at" in doc:
            raise bad("must not contain a client_secret")
        method = doc.get("token_endpoint_auth_method", "none")
        if method != "none":
            raise bad('token_endpoint_auth_method must be "none" on this server')
        grants = doc.get("grant_types", ["authorization_code"])
        if not isinstance(grants, list) or "authorization_code" not in grants:
            raise bad("grant_types must include authorization_code")
        client_uri = doc.get("client_uri")
        return ClientInfo(
            client_id=url,
            client_name=name.strip(),
            redirect_uris=tuple(uris),
            token_endpoint_auth_method="none",
            grant_types=tuple(g for g in grants if g in GRANT_TYPES),
            source="metadata_document",
            client_uri=client_uri if isinstance(client_uri, str) else None,
        )


def _max_age(cache_control: str) -> int:
    directives = [d.strip().lower() for d in cache_control.split(",")]
    if "no-store" in directives or "no-cache" in directives:
        return 0
    for d in directives:
        if d.startswith("max-age="):
            try:
                return max(CIMD_CACHE_MIN, min(CIMD_CACHE_MAX, int(d[8:])))
            except ValueError:
                break
    return CIMD_CACHE_DEFAULT
