"""Store ports (Protocols with domain-named methods) and the records they hold.

Adapters: `memory` (a real, in-process adapter used by tests), `sqlite` (the embedded default)
and `dynamodb` (production). One contract suite (tests/contract) runs against all of them.

Expiring records (pending connects, OAuth states) carry `expires_at` (epoch seconds); every read
takes `now` and treats an expired record as absent, because DynamoDB's TTL deletion is lazy.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from workbench.stores.flow_records import (
        ActivityPage,
        ActivityQuery,
        Approval,
        AuthorizationCode,
        ExternalServer,
        OAuthClient,
        OAuthState,
        PendingConnect,
        RefreshToken,
    )

__all__ = [
    "LEASE_SUFFIX",
    "PARTITION_VERSION",
    "ActivityPage",
    "ActivityQuery",
    "ApiKeyRecord",
    "ApiKeyStore",
    "Approval",
    "ApprovalStore",
    "AuditStore",
    "AuthorizationCode",
    "AuthorizationCodeStore",
    "BatchReads",
    "Connection",
    "ConnectionStore",
    "ConnectionsWithoutLeases",
    "ExternalServer",
    "ExternalServerStore",
    "Jot",
    "JotStore",
    "OAuthClient",
    "OAuthClientStore",
    "OAuthState",
    "PendingConnect",
    "PendingStore",
    "RateWindowStore",
    "RefreshToken",
    "RefreshTokenStore",
    "SessionRevocationStore",
    "Snapshot",
    "Stores",
    "User",
    "UserStore",
    "VaultStore",
    "version_row",
]

# Records built on first use (workbench.stores.flow_records): a first tool call needs none of them.
_FLOW_RECORDS = frozenset(
    {
        "ActivityPage",
        "ActivityQuery",
        "Approval",
        "AuthorizationCode",
        "ExternalServer",
        "OAuthClient",
        "OAuthState",
        "PendingConnect",
        "RefreshToken",
    }
)


def __getattr__(name: str) -> Any:
    if name in _FLOW_RECORDS:
        from workbench.stores import flow_records

        return getattr(flow_records, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True, slots=True)
class User:
    id: str
    email: str
    created_at: float


@dataclass(frozen=True, slots=True)
class ApiKeyRecord:
    key_id: str  # public part of the key, also its lookup key
    user_id: str
    secret_hash: str  # sha256 hex of the secret part; the key itself is never stored
    created_at: float
    revoked: bool = False
    label: str = ""
    # The key's grant (workbench.identity.grants) as its JSON text; "" is full access.
    grant: str = ""


@dataclass(frozen=True, slots=True)
class Connection:
    """One row per user per integration. `credential` is an encrypted blob (see crypto.py)."""

    user_id: str
    integration: str
    credential: bytes = field(repr=False)
    status: str = "connected"  # or "reconnect_required"
    expires_at: float | None = None  # access token expiry, if the provider said
    updated_at: float = 0.0
    version: int = 1  # bumped on every write; conditional writes compare it
    # When connecting proved the credential works (the manifest's probe), if it did.
    verified_at: float | None = None
    # The last failure using it (a refused or failed refresh), in plain words; cleared by a success.
    last_error: str = ""
    last_error_at: float | None = None


@dataclass(frozen=True, slots=True)
class Jot:
    id: str
    user_id: str
    title: str
    body: str
    created_at: float
    updated_at: float
    share_token: str | None = field(default=None, repr=False)  # set when the owner made a share link


class UserStore(Protocol):
    def get(self, user_id: str) -> User | None: ...
    def by_email(self, email: str) -> User | None: ...
    def get_or_create(self, email: str) -> User: ...


class ApiKeyStore(Protocol):
    def add(self, record: ApiKeyRecord) -> None: ...
    def get(self, key_id: str) -> ApiKeyRecord | None: ...
    def list_for(self, user_id: str) -> list[ApiKeyRecord]: ...
    def revoke(self, user_id: str, key_id: str) -> bool: ...
    def set_grant(self, user_id: str, key_id: str, grant: str) -> bool:
        """Replace the grant of this user's key; False (nothing written) for another user's or an
        unknown key."""
        ...


class ConnectionStore(Protocol):
    def get(self, user_id: str, integration: str) -> Connection | None: ...
    def list_for(self, user_id: str) -> list[Connection]: ...
    def put(self, conn: Connection, *, expected_version: int | None = None) -> bool:
        """Write `conn`. With `expected_version`, only if the stored row still has that version
        (0 means "must not exist"); returns False when the condition failed."""
        ...

    def delete(self, user_id: str, integration: str) -> bool: ...


# The credential refresh lease (workbench.connections.credentials) is a row of the ConnectionStore next to the
# connection it guards, at (user, "<integration>#refresh-lease"): every adapter then offers the
# conditional write it needs, with no port of its own.
LEASE_SUFFIX = "#refresh-lease"


class ConnectionsWithoutLeases:
    """A ConnectionStore whose `list_for` answers connections only, never lease rows.

    `Stores` wraps every adapter's connections in it, so this is the one place that knows lease
    rows share the table; get/put/delete pass through unchanged (the lease is read and written by key).
    """

    def __init__(self, inner: ConnectionStore) -> None:
        self.inner = inner

    def get(self, user_id: str, integration: str) -> Connection | None:
        return self.inner.get(user_id, integration)

    def list_for(self, user_id: str) -> list[Connection]:
        return [c for c in self.inner.list_for(user_id) if not c.integration.endswith(LEASE_SUFFIX)]

    def put(self, conn: Connection, *, expected_version: int | None = None) -> bool:
        return self.inner.put(conn, expected_version=expected_version)

    def delete(self, user_id: str, integration: str) -> bool:
        return self.inner.delete(user_id, integration)


class PendingStore(Protocol):
    def put(self, pending: PendingConnect) -> None: ...
    def get(self, connection_id: str, *, now: float) -> PendingConnect | None:
        """The record, with status "EXPIRED" if `now` is past its expiry (TTL deletion is lazy)."""
        ...

    def mark_connected(self, connection_id: str) -> bool: ...
    def delete(self, connection_id: str) -> None: ...
    def put_state(self, state: OAuthState) -> None: ...
    def take_state(self, state: str, *, now: float) -> OAuthState | None:
        """Return and delete the state atomically: a second take gets None."""
        ...


class AuditStore(Protocol):
    def append(self, event: dict[str, Any]) -> None: ...
    def append_many(self, events: Sequence[dict[str, Any]]) -> None:
        """Write every event in one go (a batch's rows: one transaction, or DynamoDB BatchWriteItem
        with unprocessed items retried), in order. Raises AuditNotWritten naming exactly the rows
        still not written after the adapter's retries; the others are stored."""
        ...

    def list_for(self, user_id: str, *, limit: int = 100) -> list[dict[str, Any]]: ...
    def activity(self, user_id: str, query: ActivityQuery) -> ActivityPage:
        """One page of this user's events only (the user is the partition, never the cursor)."""
        ...


class VaultStore(Protocol):
    def put(self, user_id: str, name: str, blob: bytes) -> None: ...
    def get(self, user_id: str, name: str) -> bytes | None: ...
    def delete(self, user_id: str, name: str) -> bool: ...
    def names(self, user_id: str) -> list[str]: ...


class JotStore(Protocol):
    def put(self, jot: Jot) -> None: ...
    def put_if(self, jot: Jot, *, expected_updated_at: float) -> bool:
        """Write `jot` over its stored row only if that row's `updated_at` is still
        `expected_updated_at` (the version the change was made on): False, and nothing written, when
        another write came first or the jot is gone. Atomic: of two racing writers one wins."""
        ...

    def get(self, user_id: str, jot_id: str) -> Jot | None: ...
    def by_share_token(self, token: str) -> Jot | None: ...
    def list_for(self, user_id: str) -> list[Jot]: ...
    def delete(self, user_id: str, jot_id: str) -> bool: ...


# (owner, "#version"): the version of a user's partition of the external-servers store. Every write
# to that partition stores a new one in the same atomic write (ExternalServerStore), so a reader that
# finds the version it read the partition at knows the partition is unchanged since (see
# workbench.external.service: the partition's listing kept per instance). Its `state` is a random
# token, never one used before: a version row deleted and written again cannot repeat an old one.
PARTITION_VERSION = "#version"


def version_row(owner: str) -> ExternalServer | None:
    """A new version of `owner`'s partition, to write with a change of it; None for the store's own
    partitions ('#workspace' claims, the '#operator' clear stamp), which are read by key only."""
    if owner.startswith("#"):
        return None
    from workbench.stores.flow_records import ExternalServer

    now = time.time()
    return ExternalServer(
        owner,
        PARTITION_VERSION,
        "",
        b"",
        enabled=False,
        timeout_ms=0,
        status="",
        created_at=now,
        updated_at=now,
        state=os.urandom(16).hex(),
    )


class ExternalServerStore(Protocol):
    """Custom apps' rows, by (owner, name). Every write to a user's partition (an owner not starting
    with '#') also stores a new version of that partition (version_row, the row
    (owner, PARTITION_VERSION)) in the same atomic write: nothing in the partition changes without
    its version changing. A write that does not happen (a failed condition, a missing row) stores
    no version. The version row is read by key (`get`, Stores.read_together) and never listed."""

    def put(self, server: ExternalServer) -> None: ...
    def create(self, server: ExternalServer) -> bool:
        """Write `server` only if no row has its (user_id, name): False (nothing written) if one has,
        atomically (two instances racing for one key: exactly one wins)."""
        ...

    def put_if(self, server: ExternalServer, *, expected_updated_at: float) -> bool:
        """Write `server` over its stored row only if that row's `updated_at` is still
        `expected_updated_at` (the version the change was made on): False, and nothing written, when
        another write came first or the row is gone (a deleted app is never brought back)."""
        ...

    def get(self, user_id: str, name: str) -> ExternalServer | None: ...
    def list_for(self, user_id: str) -> list[ExternalServer]:
        """The owner's rows by name, without the version row."""
        ...

    def delete(self, user_id: str, name: str) -> bool: ...
    def set_state(self, user_id: str, name: str, state: str) -> bool:
        """Replace only the `state` of an existing row; False (and nothing written) if it is gone."""
        ...


class OAuthClientStore(Protocol):
    def put(self, client: OAuthClient) -> None: ...
    def get(self, client_id: str, *, now: float | None = None) -> OAuthClient | None:
        """None for an unknown client, and for one whose `expires_at` has passed by `now` (default:
        the current time), whether or not its row is gone yet (DynamoDB TTL deletion is lazy)."""
        ...

    def mark_used(self, client_id: str) -> None:
        """The client completed a grant: it no longer expires. Nothing happens for an unknown id."""
        ...

    def count(self, now: float) -> int:
        """How many registered clients have not expired by `now`."""
        ...

    def purge_expired(self, now: float) -> int:
        """Delete clients that expired by `now` (DynamoDB: its TTL does it; 0); how many went."""
        ...


class RateWindowStore(Protocol):
    """Counters per fixed time window, shared by every instance that shares the store."""

    def hit(self, key: str, window_start: int, limit: int, expires_at: float) -> bool:
        """Count one event for `key` in the window starting at `window_start`, unless `limit`
        events are counted there already; whether it was counted. The counter may be dropped
        after `expires_at`."""
        ...


class SessionRevocationStore(Protocol):
    """Portal sessions ended before their expiry (sign-out), by the hash of the session value. A
    session cookie is otherwise stateless: every instance reads this, so a signed-out cookie is
    refused everywhere. Rows may be forgotten once `expires_at` (the session's own expiry) passes."""

    def revoke(self, session_hash: str, expires_at: float) -> None: ...
    def is_revoked(self, session_hash: str) -> bool: ...


class AuthorizationCodeStore(Protocol):
    def put(self, code: AuthorizationCode) -> None: ...
    def consume(self, code_hash: str) -> AuthorizationCode | None:
        """Atomically mark the code used and return it as it was before (so `used` is True on a
        replay); None for an unknown code. Expiry is the caller's check."""
        ...

    def delete_for(self, user_id: str, client_id: str) -> int:
        """Delete every code of this user for this client; how many were deleted."""
        ...


class RefreshTokenStore(Protocol):
    def put(self, token: RefreshToken) -> None: ...
    def get(self, token_hash: str) -> RefreshToken | None: ...
    def rotate(self, token_hash: str) -> RefreshToken | None:
        """Atomically mark the token rotated and return it as it was before (so `rotated` is
        True when it had already been used); None for an unknown token."""
        ...

    def revoke_family(self, family_id: str) -> int:
        """Delete every token of the family (rotated ones too); how many were deleted."""
        ...

    def family_exists(self, family_id: str) -> bool:
        """Whether any token of the family is still stored (the grant was not revoked)."""
        ...

    def list_for(self, user_id: str) -> list[RefreshToken]:
        """Every stored token of the user, rotated and expired ones included."""
        ...

    def delete_for(self, user_id: str, client_id: str) -> int: ...
    def set_grant(self, user_id: str, client_id: str, grant: str) -> int:
        """Replace the grant on every token of this user for this client; how many changed."""
        ...


class ApprovalStore(Protocol):
    """Approvals by (user, id). Every read takes `now`: an approval past `expires_at` reads as
    status "EXPIRED" (DynamoDB deletes it lazily, by TTL) and can no longer be decided or used."""

    def put(self, approval: Approval) -> None: ...
    def get(self, user_id: str, approval_id: str, *, now: float) -> Approval | None: ...
    def list_for(self, user_id: str, *, now: float) -> list[Approval]:
        """This user's unexpired approvals, newest first."""
        ...

    def decide(self, user_id: str, approval_id: str, status: str, by: str, *, now: float) -> Approval | None:
        """PENDING -> `status` (APPROVED or DENIED), atomically; the decided record, or None when it
        is not this user's, not pending any more, or expired (two decisions: one wins)."""
        ...

    def use(self, user_id: str, approval_id: str, *, now: float) -> bool:
        """APPROVED -> USED, atomically: True exactly once per approval, never after it expired."""
        ...


class Snapshot:
    """What one `Stores.read_together` found: each record asked for, or None (absent, or not asked).
    `connections` and `servers` hold the rows found among those asked for by key ((user,
    integration) and (user, name)); a key that is missing from them has no row. `refresh_token`:
    whether the refresh token asked for (by its hash) is still stored (None: not asked)."""

    __slots__ = ("api_key", "connection", "connections", "refresh_token", "servers", "user")

    def __init__(
        self,
        user: User | None = None,
        api_key: ApiKeyRecord | None = None,
        connection: Connection | None = None,
        connections: dict[tuple[str, str], Connection] | None = None,
        servers: dict[tuple[str, str], ExternalServer] | None = None,
        refresh_token: bool | None = None,
    ) -> None:
        self.user = user
        self.api_key = api_key
        self.connection = connection
        self.connections = connections or {}
        self.servers = servers or {}
        self.refresh_token = refresh_token


class BatchReads(Protocol):
    """Several records of different aggregates in one round trip (DynamoDB: one BatchGetItem per
    100 keys), each read as strongly consistent as its own store's `get`."""

    def read(
        self,
        *,
        user_id: str | None = None,
        key_id: str | None = None,
        connection: tuple[str, str] | None = None,
        connections: Collection[tuple[str, str]] = (),
        servers: Collection[tuple[str, str]] = (),
        refresh_token: str | None = None,
    ) -> Snapshot: ...


class SchemaStore(Protocol):
    """The version of the stored data's shape (workbench.stores.migrations), kept in the data itself.
    0: never recorded (a store from before versions, or a new one)."""

    def version(self) -> int: ...
    def advance(self, current: int, to: int) -> bool:
        """Record `to` if the stored version is still `current`; False if another runner moved it."""
        ...


class MemorySchema:
    """A SchemaStore in memory (the memory stores, and any adapter that keeps none of its own)."""

    def __init__(self) -> None:
        self._version = 0
        self._lock = threading.Lock()

    def version(self) -> int:
        return self._version

    def advance(self, current: int, to: int) -> bool:
        with self._lock:
            if self._version != current:
                return False
            self._version = to
            return True


@dataclass(slots=True)
class Stores:
    users: UserStore
    api_keys: ApiKeyStore
    connections: ConnectionStore
    pending: PendingStore
    audit: AuditStore
    vault: VaultStore
    jots: JotStore
    external_servers: ExternalServerStore  # custom apps (external MCP and OpenAPI servers)
    # The OAuth authorization server for MCP clients (workbench.oauth), and its registration throttle.
    oauth_clients: OAuthClientStore
    oauth_codes: AuthorizationCodeStore
    oauth_refresh: RefreshTokenStore
    oauth_rates: RateWindowStore
    # Portal sessions signed out before they expired (web/sessions.py).
    session_revocations: SessionRevocationStore
    # An adapter that can read several aggregates in one round trip; otherwise one read each.
    batch_reads: BatchReads | None = None
    # The data's schema version (workbench.stores.migrations); in memory unless the adapter keeps it.
    schema: SchemaStore | None = None

    def read_together(
        self,
        *,
        user_id: str | None = None,
        key_id: str | None = None,
        connection: tuple[str, str] | None = None,
        connections: Collection[tuple[str, str]] = (),
        servers: Collection[tuple[str, str]] = (),
        refresh_token: str | None = None,
    ) -> Snapshot:
        """The user, the API key (by its id), the (user, integration) connection(s), the
        external-server rows ((user, name)) and whether a refresh token (by its hash) is still
        stored, asked for in one round trip where the adapter offers it. What a request needs before it can act (who is calling, whether their credential still
        stands, their connections, a custom app's settings) costs one wait, not one per record."""
        reads = self.batch_reads or _OneByOne(self)  # set in __post_init__; for the type checker
        return reads.read(
            user_id=user_id,
            key_id=key_id,
            connection=connection,
            connections=connections,
            servers=servers,
            refresh_token=refresh_token,
        )

    # Calls of `approve` grants waiting for their user (workbench.engine.approvals).
    approvals: ApprovalStore | None = None

    def __post_init__(self) -> None:
        if self.batch_reads is None:  # SQLite and memory: local reads, one after the other
            self.batch_reads = _OneByOne(self)
        if self.schema is None:
            self.schema = MemorySchema()
        # Lease rows live in every adapter's connections table; no caller of list_for should see them.
        if not isinstance(self.connections, ConnectionsWithoutLeases):
            self.connections = ConnectionsWithoutLeases(self.connections)


class _OneByOne:
    """BatchReads for a backend whose reads are local: each store's own `get`, in turn."""

    def __init__(self, stores: Stores) -> None:
        self.stores = stores

    def read(
        self,
        *,
        user_id: str | None = None,
        key_id: str | None = None,
        connection: tuple[str, str] | None = None,
        connections: Collection[tuple[str, str]] = (),
        servers: Collection[tuple[str, str]] = (),
        refresh_token: str | None = None,
    ) -> Snapshot:
        stores = self.stores
        conns = {k: c for k in dict.fromkeys(connections) if (c := stores.connections.get(*k)) is not None}
        rows = {k: r for k in dict.fromkeys(servers) if (r := stores.external_servers.get(*k)) is not None}
        return Snapshot(
            stores.users.get(user_id) if user_id is not None else None,
            stores.api_keys.get(key_id) if key_id is not None else None,
            stores.connections.get(*connection) if connection is not None else None,
            conns,
            rows,
            stores.oauth_refresh.get(refresh_token) is not None if refresh_token is not None else None,
        )
