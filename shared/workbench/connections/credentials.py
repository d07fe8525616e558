"""Provider credentials: stored encrypted per (user, integration), refreshed lazily on use, and
injected into each upstream call. The agent never sees them.

The decrypted credential is a dict:
  oauth2:  {"access_token", "refresh_token"?, "token_type"?, "scope"?, <token_fields>?,
            "login_host"?, "user_token"?: {"access_token", "refresh_token"?, "expires_at"?, ...}}
  api_key: {<field name>: <value>, ...} as the manifest declares
  cookie:  {"cookies": [{"name", "value", "domain", "path", "expires"}]}

One refresh mechanism serves two triggers: the stored token expires within the margin (before a
request), or the provider answered a request with what the manifest declares as "token rejected"
(after it; the request is then retried once). Either way exactly one instance calls the provider.
"""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from workbench.engine.blocking import BlockingPool
from workbench.engine.registry import ApiKeyAuth, CookieAuth, Manifest, NoAuth, OAuth2Auth
from workbench.errors import (
    CredentialError,
    CredentialUnreadable,
    CryptoError,
    NotConnected,
    ReconnectRequired,
)
from workbench.identity.crypto import Cipher
from workbench.stores import LEASE_SUFFIX, Connection, ConnectionStore
from workbench.tools import TokenKind

if TYPE_CHECKING:
    import httpx

    from workbench.connections.provider_oauth import TokenSet

__all__ = [
    "LEASE_SECONDS",
    "LEASE_SUFFIX",
    "REFRESH_MARGIN_SECONDS",
    "Credentials",
    "Refresher",
    "credential_context",
    "token_of",
]

REFRESH_MARGIN_SECONDS = 30
# The refresh lease is a row of its own in the ConnectionStore, next to the connection it guards:
# (user, integration + LEASE_SUFFIX), which the store's list_for leaves out. Taking it is a conditional
# write on that row's version, so exactly one instance (process, Lambda) wins; the lease expires by
# itself if its holder dies.
LEASE_SECONDS = 30.0
_POLL_SECONDS = 0.05
_MAX_ERROR = 300

# (manifest, refresh token, the stored credential) -> the provider's token response; raises
# ProviderError when refused. The stored credential says where to go (a per-connection login host).
Refresher = Callable[[Manifest, str, Mapping[str, Any]], Awaitable["TokenSet"]]


def credential_context(user_id: str, integration: str) -> dict[str, str]:
    return {"user": user_id, "integration": integration, "field": "credential"}


def token_of(cred: Mapping[str, Any], kind: TokenKind) -> str | None:
    """The token of that kind in a stored credential, if there is one."""
    holder = cred if kind == "access" else cred.get("user_token")
    token = holder.get("access_token") if isinstance(holder, Mapping) else None
    return str(token) if token else None


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
        io: BlockingPool | None = None,
    ) -> None:
        self.store = store
        self.cipher = cipher
        self.clock = clock
        self._refresh = refresh
        self._sleep = sleep
        # Store reads and writes, and decrypts (a KMS call on a cold data key), run off the loop here.
        self.io = io or BlockingPool(8, "workbench-store")
        # In-process single flight: concurrent callers on one event loop share one refresh task.
        self._inflight: dict[tuple[int, str, str, str, str | None], asyncio.Task[dict[str, Any]]] = {}

    # -- storage -------------------------------------------------------------------------------

    def save(
        self,
        user_id: str,
        integration: str,
        credential: dict[str, Any],
        *,
        expires_at: float | None = None,
        verified_at: float | None = None,
    ) -> None:
        """Store a new credential (connect, reconnect, key replaced): any earlier error is cleared."""
        blob = self.cipher.encrypt_json(credential, credential_context(user_id, integration))
        current = self.store.get(user_id, integration)
        version = (current.version if current else 0) + 1
        self.store.put(
            Connection(
                user_id,
                integration,
                blob,
                "connected",
                expires_at,
                self.clock(),
                version,
                verified_at=verified_at,
            )
        )

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

    def _stale(self, expires_at: Any) -> bool:
        return isinstance(expires_at, int | float) and expires_at - self.clock() <= REFRESH_MARGIN_SECONDS

    def _needs_refresh(
        self, conn: Connection, kind: TokenKind, rejected: str | None
    ) -> tuple[bool, dict[str, Any]]:
        """Whether the stored token of `kind` still has to be refreshed, and the credential read.
        After a rejection: while the stored token is still the one the provider refused."""
        cred = self.load(conn)
        if kind == "access":
            stale = self._stale(conn.expires_at)
        else:
            stale = self._stale((cred.get("user_token") or {}).get("expires_at"))
        if rejected is not None:
            return token_of(cred, kind) == rejected or stale, cred
        return stale, cred

    def ready(self, manifest: Manifest, conn: Connection | None) -> dict[str, Any] | None:
        """The access credential when it can be used as stored (blocking: a decrypt), None when it
        must be refreshed first (`access` does that); CredentialError when it cannot be used."""
        conn = _usable(manifest, conn)
        if not isinstance(manifest.auth, OAuth2Auth) or not self._stale(conn.expires_at):
            return self.load(conn)
        return None

    async def access(
        self, manifest: Manifest, user_id: str, conn: Connection | None, *, kind: TokenKind = "access"
    ) -> dict[str, Any]:
        """The usable credential, refreshed first if its `kind` token expires within the margin."""
        if isinstance(manifest.auth, NoAuth):
            return {}  # nothing to inject: an auth-none API needs no connection row
        conn = _usable(manifest, conn)
        if not isinstance(manifest.auth, OAuth2Auth) or (
            kind == "access" and not self._stale(conn.expires_at)
        ):
            return await self.io.run(self.load, conn)  # the common path: no decrypt beyond this one
        stale, cred = await self.io.run(self._needs_refresh, conn, kind, None)
        if kind == "user" and token_of(cred, "user") is None:
            raise CredentialError(
                manifest.name,
                f"{manifest.name} has no user token for this connection. Use connect('{manifest.name}') "
                "to reconnect and grant the user permissions.",
            )
        if stale:
            return await self._refresh_shared(manifest, user_id, kind, None)
        return cred

    async def after_rejection(
        self, manifest: Manifest, user_id: str, rejected: str, *, kind: TokenKind = "access"
    ) -> dict[str, Any]:
        """The provider refused `rejected` (the manifest's token_rejected): refresh once, however
        many requests and instances saw the refusal, and return the credential to retry with."""
        return await self._refresh_shared(manifest, user_id, kind, rejected)

    @staticmethod
    async def rejects(manifest: Manifest, response: httpx.Response) -> bool:
        """Whether `response` is what the manifest declares as "token rejected" (its body is read
        only when the status matches a rule that looks at the body)."""
        auth = manifest.auth
        if not isinstance(auth, OAuth2Auth):
            return False
        for rule in auth.token_rejected:
            if response.status_code != rule.status:
                continue
            if not rule.body_contains:
                return True
            kind = response.headers.get("content-type", "")
            if "json" not in kind and "text" not in kind:
                continue  # a download is never an error body: do not read it into memory
            await response.aread()
            if rule.body_contains in response.text:
                return True
        return False

    async def _refresh_shared(
        self, manifest: Manifest, user_id: str, kind: TokenKind, rejected: str | None
    ) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        key = (id(loop), user_id, manifest.name, kind, rejected)
        task = self._inflight.get(key)
        if task is None:
            task = loop.create_task(self._refresh_across_instances(manifest, user_id, kind, rejected))
            self._inflight[key] = task
            task.add_done_callback(lambda _t: self._inflight.pop(key, None))
        return await asyncio.shield(task)

    async def _refresh_across_instances(
        self, manifest: Manifest, user_id: str, kind: TokenKind, rejected: str | None
    ) -> dict[str, Any]:
        """Exactly one instance calls the provider; the others wait for its result and re-read."""
        give_up = time.monotonic() + LEASE_SECONDS + 5
        while True:
            needed, cred, _ = await self.io.run(self._current, manifest, user_id, kind, rejected)
            if not needed:
                return cred  # another instance refreshed meanwhile
            lease = await self.io.run(self._take_lease, user_id, manifest.name)
            if lease is not None:
                try:
                    return await self._refresh_holding_lease(manifest, user_id, kind, rejected)
                finally:
                    await self.io.run(self._release_lease, lease)
            if time.monotonic() > give_up:
                raise CredentialError(
                    manifest.name,
                    f"{manifest.name} token refresh is taking too long elsewhere; try the call again.",
                )
            await self._sleep(_POLL_SECONDS)

    async def _refresh_holding_lease(
        self, manifest: Manifest, user_id: str, kind: TokenKind, rejected: str | None
    ) -> dict[str, Any]:
        from workbench.connections.provider_oauth import ProviderError

        name = manifest.name
        needed, cred, latest = await self.io.run(self._current, manifest, user_id, kind, rejected)
        if not needed:
            return cred  # refreshed between our read and taking the lease
        holder = cred if kind == "access" else dict(cred.get("user_token") or {})
        refresh_token = holder.get("refresh_token")
        what = "access token" if kind == "access" else "user token"
        if not refresh_token:
            if rejected is None:
                raise CredentialError(
                    name,
                    f"{name} {what} has expired and no refresh token is stored. "
                    f"Use connect('{name}') to reconnect.",
                )
            # The provider says the token is dead and nothing can renew it: only reconnecting helps.
            detail = f"the provider refused the {what} and no refresh token is stored"
            await self.io.run(self._record, latest, detail, reconnect=kind == "access")
            if kind == "access":
                raise ReconnectRequired(name, detail)
            raise CredentialError(name, f"{name}: {detail}. Use connect('{name}') to reconnect.")
        if self._refresh is None:
            raise CredentialError(name, f"{name} tokens cannot be refreshed on this gateway.")
        try:
            tokens = await self._refresh(manifest, str(refresh_token), cred)
        except ProviderError as exc:
            if not exc.permanent:
                await self.io.run(self._record, latest, f"token refresh failed ({exc})", reconnect=False)
                raise CredentialError(
                    name, f"{name} token refresh failed ({exc}); try the call again shortly."
                ) from exc
            # The provider refused the refresh token (revoked, replayed, expired): only the user can fix it.
            await self.io.run(
                self._record,
                latest,
                f"the provider refused the refresh ({exc.error})",
                reconnect=kind == "access",
            )
            if kind == "access":
                raise ReconnectRequired(name, exc.error) from exc
            raise CredentialError(
                name,
                f"{name} refused the user token's refresh ({exc.error}). Use connect('{name}') to reconnect.",
            ) from exc
        now = self.clock()
        expires_at = latest.expires_at
        if kind == "access":
            # A provider that does not rotate refresh tokens keeps the old one.
            new_cred = {**cred, **tokens.credential}
            expires_at = tokens.expires_at(now)
            user = tokens.user_credential(now)
            if user is not None:
                new_cred["user_token"] = {**holder.get("user_token", {}), **user}
        else:
            renewed = {**holder, **tokens.credential}
            renewed.pop("expires_at", None)
            if tokens.expires_in is not None:
                renewed["expires_at"] = now + tokens.expires_in
            new_cred = {**cred, "user_token": renewed}
        return await self.io.run(self._store_refreshed, latest, new_cred, expires_at, now)

    def _current(
        self, manifest: Manifest, user_id: str, kind: TokenKind, rejected: str | None
    ) -> tuple[bool, dict[str, Any], Connection]:
        """Re-read the stored connection: (whether it still needs the refresh, its credential, it)."""
        latest = _usable(manifest, self.store.get(user_id, manifest.name))
        needed, cred = self._needs_refresh(latest, kind, rejected)
        return needed, cred, latest

    def _store_refreshed(
        self, latest: Connection, new_cred: dict[str, Any], expires_at: float | None, now: float
    ) -> dict[str, Any]:
        """Write the refreshed credential over `latest`, unless the row changed meanwhile."""
        user_id, name = latest.user_id, latest.integration
        blob = self.cipher.encrypt_json(new_cred, credential_context(user_id, name))
        written = self.store.put(
            replace(
                latest,
                credential=blob,
                status="connected",
                expires_at=expires_at,
                updated_at=now,
                version=latest.version + 1,
                last_error="",
                last_error_at=None,
            ),
            expected_version=latest.version,
        )
        if not written:  # the user reconnected or disconnected meanwhile: theirs wins
            current = self.store.get(user_id, name)
            if current is None:
                raise NotConnected(name)
            return self.load(current)
        return new_cred

    def _record(self, latest: Connection, error: str, *, reconnect: bool) -> None:
        """Keep the failure on the connection (the portal shows it); only the lease holder writes."""
        now = self.clock()
        self.store.put(
            replace(
                latest,
                status="reconnect_required" if reconnect else latest.status,
                updated_at=now,
                version=latest.version + 1,
                last_error=error[:_MAX_ERROR],
                last_error_at=now,
            ),
            expected_version=latest.version,
        )

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
    def headers_for(
        manifest: Manifest, cred: Mapping[str, Any], kind: TokenKind = "access"
    ) -> dict[str, str]:
        auth = manifest.auth
        if isinstance(auth, OAuth2Auth):
            return {"Authorization": f"Bearer {token_of(cred, kind) or ''}"}
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
