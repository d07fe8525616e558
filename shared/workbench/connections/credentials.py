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
import math
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from workbench.engine.blocking import BlockingPool
from workbench.errors import (
    CredentialError,
    CredentialUnreadable,
    CryptoError,
    NotConnected,
    ReconnectRequired,
    Unavailable,
)
from workbench.identity.crypto import Cipher
from workbench.manifest import ApiKeyAuth, CookieAuth, Manifest, NoAuth, OAuth2Auth
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
# After a refresh failure that may pass (the provider down or answering 5xx or
# temporarily_unavailable, the network), the lease row keeps its words and the next attempt waits:
# 2 s after the first failure, doubling up to a minute. One attempt per burst reaches a failing
# provider; the calls in between get the failed attempt's answer.
_FAILED = "failed"
_BACKOFF_FIRST = 2.0
_BACKOFF_MAX = 60.0
_SAVE_ATTEMPTS = 4  # a refreshed (maybe rotated) token is stored however briefly the store is down


# Plain classes: every first request imports this module, and a dataclass costs about 1 ms to build.
class _Lease:
    __slots__ = ("failures", "lost", "row")

    def __init__(self, row: Connection, failures: int, lost: bool) -> None:
        self.row = row
        self.failures = failures  # failed attempts in a row before this one
        self.lost = lost  # one of them lost the provider's answer in transit (it may have rotated the token)


class _Outcome:
    __slots__ = ("failure", "lost")

    def __init__(self) -> None:
        self.failure: str | None = None  # the words every caller of a failed attempt gets
        self.lost = False


def _lease_blob(failures: int, lost: bool) -> bytes:
    return f"failures={failures};lost={int(lost)}".encode()


def _lease_state(row: Connection | None) -> tuple[int, bool]:
    """(failures, lost) kept in a lease row's blob; a row from before they were kept has neither."""
    if row is None:
        return 0, False
    fields = dict(
        part.split("=", 1) for part in row.credential.decode(errors="replace").split(";") if "=" in part
    )
    try:
        return int(fields.get("failures", "0")), fields.get("lost") == "1"
    except ValueError:
        return 0, False


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

    def unwrap_ahead(self, conn: Connection) -> None:
        """The master-key call `load(conn)` would make, made now (blocking): its data key waits in
        the cipher's cache. Nothing is decrypted (a row that does not unwrap raises here too; `load`
        reports it)."""
        self.cipher.unwrap_ahead(conn.credential, credential_context(conn.user_id, conn.integration))

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
        """Exactly one instance calls the provider; the others wait for its outcome. A new token:
        they re-read it. A refusal for good: the connection says so (`_usable`). A failure that may
        pass: the lease row keeps it, with when the next attempt may go (backoff), and everyone who
        was waiting on that attempt, or calls before then, gets its words."""
        give_up = time.monotonic() + LEASE_SECONDS + 5
        since = self.clock()
        while True:
            needed, cred, _ = await self.io.run(self._current, manifest, user_id, kind, rejected)
            if not needed:
                return cred  # another instance refreshed meanwhile
            lease = await self.io.run(self._take_lease, user_id, manifest.name, since)
            if lease is not None:
                return await self._refresh_holding_lease(manifest, user_id, kind, rejected, lease)
            if time.monotonic() > give_up:
                raise CredentialError(
                    manifest.name,
                    f"{manifest.name} token refresh is taking too long elsewhere; try the call again.",
                )
            await self._sleep(_POLL_SECONDS)

    async def _refresh_holding_lease(
        self, manifest: Manifest, user_id: str, kind: TokenKind, rejected: str | None, lease: _Lease
    ) -> dict[str, Any]:
        """Refresh, then release the lease with the outcome (see `_release_lease`)."""
        outcome = _Outcome()
        try:
            return await self._refresh_once(manifest, user_id, kind, rejected, lease, outcome)
        finally:
            await self.io.run(self._release_lease, lease, outcome)

    async def _refresh_once(
        self,
        manifest: Manifest,
        user_id: str,
        kind: TokenKind,
        rejected: str | None,
        lease: _Lease,
        outcome: _Outcome,
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
            reason = f"the provider refused the {what} and no refresh token is stored"
            await self.io.run(self._record, latest, reason, reconnect=kind == "access")
            if kind == "access":
                raise ReconnectRequired(name, reason)
            raise CredentialError(name, f"{name}: {reason}. Use connect('{name}') to reconnect.")
        if self._refresh is None:
            raise CredentialError(name, f"{name} tokens cannot be refreshed on this gateway.")
        try:
            tokens = await self._refresh(manifest, str(refresh_token), cred)
        except ProviderError as exc:
            if not exc.permanent:
                if exc.lost:
                    why = (
                        f"the provider's answer to the token refresh was lost in transit ({exc}); "
                        "it may have renewed the token"
                    )
                else:
                    why = f"token refresh failed ({exc})"
                outcome.failure, outcome.lost = f"{name} {why}; try the call again shortly.", exc.lost
                await self.io.run(self._record, latest, why, reconnect=False)
                raise CredentialError(name, outcome.failure) from exc
            # The provider refused the refresh token (revoked, replayed, expired): only the user can fix it.
            reason = f"the provider refused the refresh ({exc.error})"
            if lease.lost:
                reason += ", after its answer to the previous refresh was lost in transit"
            await self.io.run(self._record, latest, reason, reconnect=kind == "access")
            if kind == "access":
                raise ReconnectRequired(name, reason) from exc
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
        # The provider may have rotated the refresh token: the old one is dead, so the new one must
        # be stored whatever else fails. The store is asked again (with backoff) while it is
        # unavailable, within the lease.
        for attempt in range(_SAVE_ATTEMPTS):
            try:
                return await self.io.run(self._store_refreshed, latest, new_cred, expires_at, now)
            except Unavailable:
                if attempt == _SAVE_ATTEMPTS - 1:
                    raise
                await self._sleep(0.25 * 2**attempt)
        raise AssertionError("unreachable")

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
        """Keep the failure on the connection (the portal shows it, and a refusal for good is what
        every later call answers); only the lease holder writes."""
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

    def _take_lease(self, user_id: str, integration: str, since: float = math.inf) -> _Lease | None:
        """The lease when taken; None while another holds it. When the last attempt failed in a way
        that may pass, and either it ended after `since` (the caller was waiting on it) or its backoff
        has not run out, its words are the answer: CredentialError."""
        key = integration + LEASE_SUFFIX
        now = self.clock()
        current = self.store.get(user_id, key)
        failures, lost = _lease_state(current)
        if current is not None and current.status == _FAILED and current.last_error:
            if (current.expires_at or 0) > now or (current.last_error_at or 0) >= since:
                raise CredentialError(integration, current.last_error)
        elif current is not None and (current.expires_at or 0) > now:
            return None  # held by someone else
        version = current.version if current else 0
        row = Connection(
            user_id, key, _lease_blob(failures, lost), "lease", now + LEASE_SECONDS, now, version + 1
        )
        if not self.store.put(row, expected_version=version):
            return None
        return _Lease(row, failures, lost)

    def _release_lease(self, lease: _Lease, outcome: _Outcome | None = None) -> None:
        """Free the lease. After a failure that may pass, keep its words and the time the next
        attempt may go: 2 s after the first, doubling up to a minute."""
        row = lease.row
        if outcome is None or outcome.failure is None:
            failures, lost, status, until, error, at = 0, False, "lease", 0.0, "", None
        else:
            failures, lost, status = lease.failures + 1, outcome.lost or lease.lost, _FAILED
            now = self.clock()
            until = now + min(_BACKOFF_FIRST * 2 ** (failures - 1), _BACKOFF_MAX)
            error, at = outcome.failure[:_MAX_ERROR], now
        self.store.put(
            replace(
                row,
                credential=_lease_blob(failures, lost),
                status=status,
                expires_at=until,
                version=row.version + 1,
                last_error=error,
                last_error_at=at,
            ),
            expected_version=row.version,
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
    if conn.status == "reconnect_required":  # the words the refused refresh gave, for every call
        raise ReconnectRequired(manifest.name, conn.last_error)
    return conn


def _cookies_live(cred: dict[str, Any], auth: CookieAuth, now: float) -> bool:
    live = {
        c["name"]
        for c in cred.get("cookies", [])
        if not c.get("expires") or c["expires"] < 0 or c["expires"] > now
    }
    wanted = set(auth.session_cookies)
    return bool(live) and (not wanted or wanted <= live)
