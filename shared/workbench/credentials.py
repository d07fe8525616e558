"""Provider credentials: stored encrypted per (user, integration), refreshed lazily on use, and
injected into each upstream call. The agent never sees them.

The decrypted credential is a dict:
  oauth2:  {"access_token", "refresh_token"?, "token_type"?, "scope"?}
  api_key: {<field name>: <value>, ...} as the manifest declares
  cookie:  {"cookies": [{"name", "value", "domain", "path", "expires"}]}
"""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import httpx

from workbench.crypto import Cipher
from workbench.errors import (
    CredentialError,
    CredentialUnreadable,
    CryptoError,
    NotConnected,
    ReconnectRequired,
)
from workbench.registry import ApiKeyAuth, CookieAuth, Manifest, NoAuth, OAuth2Auth
from workbench.stores import LEASE_SUFFIX, Connection, ConnectionStore

if TYPE_CHECKING:
    from workbench.oauth_client import TokenSet

__all__ = [
    "LEASE_SECONDS",
    "LEASE_SUFFIX",
    "REFRESH_MARGIN_SECONDS",
    "Credentials",
    "InjectedAuth",
    "Refresher",
    "credential_context",
]

REFRESH_MARGIN_SECONDS = 30
# The refresh lease is a row of its own in the ConnectionStore, next to the connection it guards:
# (user, integration + LEASE_SUFFIX), which the store's list_for leaves out. Taking it is a conditional
# write on that row's version, so exactly one instance (process, Lambda) wins; the lease expires by
# itself if its holder dies.
LEASE_SECONDS = 30.0
_POLL_SECONDS = 0.05

# (manifest, refresh token) -> the provider's token response; raises ProviderError when refused.
Refresher = Callable[[Manifest, str], Awaitable["TokenSet"]]


def credential_context(user_id: str, integration: str) -> dict[str, str]:
    return {"user": user_id, "integration": integration, "field": "credential"}


class Credentials:
    """Reads, writes and refreshes connections; builds the auth headers for upstream calls."""

    def __init__(
        self,
        store: ConnectionStore,
        cipher: Cipher,
        *,
        clock: Callable[[], float] = time.time,
        refresh: Refresher | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.store = store
        self.cipher = cipher
        self.clock = clock
        self._refresh = refresh
        self._sleep = sleep
        # In-process single flight: concurrent callers on one event loop share one refresh task.
        self._inflight: dict[tuple[int, str, str], asyncio.Task[dict[str, Any]]] = {}

    # -- storage -------------------------------------------------------------------------------

    def save(
        self, user_id: str, integration: str, credential: dict[str, Any], *, expires_at: float | None = None
    ) -> None:
        blob = self.cipher.encrypt_json(credential, credential_context(user_id, integration))
        current = self.store.get(user_id, integration)
        version = (current.version if current else 0) + 1
        self.store.put(Connection(user_id, integration, blob, "connected", expires_at, self.clock(), version))

    def delete(self, user_id: str, integration: str) -> None:
        """Disconnect: the stored credential and its refresh lease row go together."""
        self.store.delete(user_id, integration)
        self.store.delete(user_id, integration + LEASE_SUFFIX)

    def load(self, conn: Connection) -> dict[str, Any]:
        """The decrypted credential; CredentialUnreadable (reconnect) if the row does not decrypt."""
        try:
            value = self.cipher.decrypt_json(
                conn.credential, credential_context(conn.user_id, conn.integration)
            )
        except (CryptoError, ValueError) as exc:  # another key, a damaged blob, or not a JSON object
            raise CredentialUnreadable(conn.integration) from exc
        if not isinstance(value, dict):
            raise CredentialUnreadable(conn.integration)
        return value

    def is_connected(self, manifest: Manifest, conn: Connection | None) -> bool:
        if isinstance(manifest.auth, NoAuth):
            return True
        if conn is None or conn.status != "connected":
            return False
        if isinstance(manifest.auth, CookieAuth):
            try:
                cred = self.load(conn)
            except CredentialUnreadable:
                return True  # a row is stored, as for other auth types; using it says to reconnect
            return _cookies_live(cred, manifest.auth, self.clock())
        return True

    # -- use -----------------------------------------------------------------------------------

    def _stale(self, conn: Connection) -> bool:
        return conn.expires_at is not None and conn.expires_at - self.clock() <= REFRESH_MARGIN_SECONDS

    async def access(self, manifest: Manifest, user_id: str, conn: Connection | None) -> dict[str, Any]:
        """The usable credential, refreshed first if it expires within the margin."""
        conn = _usable(manifest, conn)
        if isinstance(manifest.auth, OAuth2Auth) and self._stale(conn):
            return await self._refresh_shared(manifest, user_id)
        return self.load(conn)

    async def _refresh_shared(self, manifest: Manifest, user_id: str) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        key = (id(loop), user_id, manifest.name)
        task = self._inflight.get(key)
        if task is None:
            task = loop.create_task(self._refresh_across_instances(manifest, user_id))
            self._inflight[key] = task
            task.add_done_callback(lambda _t: self._inflight.pop(key, None))
        return await asyncio.shield(task)

    async def _refresh_across_instances(self, manifest: Manifest, user_id: str) -> dict[str, Any]:
        """Exactly one instance calls the provider; the others wait for its result and re-read."""
        give_up = time.monotonic() + LEASE_SECONDS + 5
        while True:
            latest = _usable(manifest, self.store.get(user_id, manifest.name))
            if not self._stale(latest):
                return self.load(latest)  # another instance refreshed meanwhile
            lease = self._take_lease(user_id, manifest.name)
            if lease is not None:
                try:
                    return await self._refresh_holding_lease(manifest, user_id)
                finally:
                    self._release_lease(lease)
            if time.monotonic() > give_up:
                raise CredentialError(
                    manifest.name,
                    f"{manifest.name} token refresh is taking too long elsewhere; try the call again.",
                )
            await self._sleep(_POLL_SECONDS)

    async def _refresh_holding_lease(self, manifest: Manifest, user_id: str) -> dict[str, Any]:
        from workbench.oauth_client import ProviderError

        latest = _usable(manifest, self.store.get(user_id, manifest.name))
        cred = self.load(latest)
        if not self._stale(latest):
            return cred  # refreshed between our read and taking the lease
        refresh_token = cred.get("refresh_token")
        if not refresh_token:
            raise CredentialError(
                manifest.name,
                f"{manifest.name} access token has expired and no refresh token is stored. "
                f"Use connect('{manifest.name}') to reconnect.",
            )
        if self._refresh is None:
            raise CredentialError(
                manifest.name, f"{manifest.name} tokens cannot be refreshed on this gateway."
            )
        try:
            tokens = await self._refresh(manifest, str(refresh_token))
        except ProviderError as exc:
            if not exc.permanent:
                raise CredentialError(
                    manifest.name,
                    f"{manifest.name} token refresh failed ({exc}); try the call again shortly.",
                ) from exc
            # The provider refused the refresh token (revoked, replayed, expired): only the user can fix it.
            self.store.put(
                replace(
                    latest, status="reconnect_required", updated_at=self.clock(), version=latest.version + 1
                ),
                expected_version=latest.version,
            )
            raise ReconnectRequired(manifest.name, exc.error) from exc
        # A provider that does not rotate refresh tokens keeps the old one.
        new_cred = {**cred, **tokens.credential}
        blob = self.cipher.encrypt_json(new_cred, credential_context(user_id, manifest.name))
        now = self.clock()
        written = self.store.put(
            Connection(
                user_id, manifest.name, blob, "connected", tokens.expires_at(now), now, latest.version + 1
            ),
            expected_version=latest.version,
        )
        if not written:  # the user reconnected or disconnected meanwhile: theirs wins
            current = self.store.get(user_id, manifest.name)
            if current is None:
                raise NotConnected(manifest.name)
            return self.load(current)
        return new_cred

    def _take_lease(self, user_id: str, integration: str) -> Connection | None:
        key = integration + LEASE_SUFFIX
        now = self.clock()
        current = self.store.get(user_id, key)
        if current is not None and (current.expires_at or 0) > now:
            return None  # held by someone else
        version = current.version if current else 0
        lease = Connection(user_id, key, b"lease", "lease", now + LEASE_SECONDS, now, version + 1)
        return lease if self.store.put(lease, expected_version=version) else None

    def _release_lease(self, lease: Connection) -> None:
        self.store.put(
            replace(lease, expires_at=0.0, version=lease.version + 1), expected_version=lease.version
        )

    @staticmethod
    def headers_for(manifest: Manifest, cred: dict[str, Any]) -> dict[str, str]:
        auth = manifest.auth
        if isinstance(auth, OAuth2Auth):
            return {"Authorization": f"Bearer {cred['access_token']}"}
        if isinstance(auth, ApiKeyAuth):
            values = [str(cred.get(f.name, "")) for f in auth.fields]
            if auth.scheme == "Basic":
                raw = ":".join(values[:2]).encode()
                return {auth.header: "Basic " + base64.b64encode(raw).decode()}
            value = values[0] if values else ""
            return {auth.header: f"{auth.scheme} {value}" if auth.scheme else value}
        if isinstance(auth, CookieAuth):
            cookies = cred.get("cookies", [])
            return {"Cookie": "; ".join(f"{c['name']}={c['value']}" for c in cookies)}
        return {}


def _usable(manifest: Manifest, conn: Connection | None) -> Connection:
    """The stored connection, unless there is none or only the user can fix it by reconnecting."""
    if conn is None:
        raise NotConnected(manifest.name)
    if conn.status == "reconnect_required":
        raise ReconnectRequired(manifest.name)
    return conn


def _cookies_live(cred: dict[str, Any], auth: CookieAuth, now: float) -> bool:
    live = {
        c["name"]
        for c in cred.get("cookies", [])
        if not c.get("expires") or c["expires"] < 0 or c["expires"] > now
    }
    wanted = set(auth.session_cookies)
    return bool(live) and (not wanted or wanted <= live)


class InjectedAuth(httpx.Auth):
    """httpx auth flow that asks for the credential per request (so a refresh lands mid-batch)."""

    def __init__(self, headers: Callable[[], Any]) -> None:
        self._headers = headers

    async def async_auth_flow(self, request: httpx.Request):  # type: ignore[no-untyped-def]
        for name, value in (await self._headers()).items():
            request.headers[name] = value
        yield request
