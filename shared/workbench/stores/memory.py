"""In-process adapter: real semantics (conditional writes, expiry checks), no persistence."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from workbench.stores import (
    ActivityPage,
    ActivityQuery,
    ApiKeyRecord,
    Approval,
    AuthorizationCode,
    Connection,
    ExternalServer,
    Jot,
    OAuthClient,
    OAuthState,
    PendingConnect,
    RefreshToken,
    Stores,
    User,
)

__all__ = ["memory_stores"]


class MemoryUsers:
    def __init__(self) -> None:
        self._by_id: dict[str, User] = {}
        self._lock = threading.Lock()

    def get(self, user_id: str) -> User | None:
        return self._by_id.get(user_id)

    def by_email(self, email: str) -> User | None:
        email = email.strip().lower()
        return next((u for u in self._by_id.values() if u.email == email), None)

    def get_or_create(self, email: str) -> User:
        email = email.strip().lower()
        with self._lock:
            existing = self.by_email(email)
            if existing:
                return existing
            user = User(id="usr_" + uuid.uuid4().hex, email=email, created_at=time.time())
            self._by_id[user.id] = user
            return user


class MemoryApiKeys:
    def __init__(self) -> None:
        self._keys: dict[str, ApiKeyRecord] = {}

    def add(self, record: ApiKeyRecord) -> None:
        self._keys[record.key_id] = record

    def get(self, key_id: str) -> ApiKeyRecord | None:
        return self._keys.get(key_id)

    def list_for(self, user_id: str) -> list[ApiKeyRecord]:
        return sorted((k for k in self._keys.values() if k.user_id == user_id), key=lambda k: k.created_at)

    def revoke(self, user_id: str, key_id: str) -> bool:
        rec = self._keys.get(key_id)
        if rec is None or rec.user_id != user_id:
            return False
        self._keys[key_id] = replace(rec, revoked=True)
        return True

    def set_grant(self, user_id: str, key_id: str, grant: str) -> bool:
        rec = self._keys.get(key_id)
        if rec is None or rec.user_id != user_id:
            return False
        self._keys[key_id] = replace(rec, grant=grant)
        return True


class MemoryConnections:
    def __init__(self) -> None:
        self._rows: dict[tuple[str, str], Connection] = {}
        self._lock = threading.Lock()

    def get(self, user_id: str, integration: str) -> Connection | None:
        return self._rows.get((user_id, integration))

    def list_for(self, user_id: str) -> list[Connection]:
        return sorted((c for (u, _), c in self._rows.items() if u == user_id), key=lambda c: c.integration)

    def put(self, conn: Connection, *, expected_version: int | None = None) -> bool:
        key = (conn.user_id, conn.integration)
        with self._lock:
            current = self._rows.get(key)
            if expected_version is not None:
                current_version = current.version if current else 0
                if current_version != expected_version:
                    return False
            self._rows[key] = conn
            return True

    def delete(self, user_id: str, integration: str) -> bool:
        with self._lock:
            return self._rows.pop((user_id, integration), None) is not None


class MemoryPending:
    def __init__(self) -> None:
        self._pending: dict[str, PendingConnect] = {}
        self._states: dict[str, OAuthState] = {}
        self._lock = threading.Lock()

    def put(self, pending: PendingConnect) -> None:
        self._pending[pending.id] = pending

    def get(self, connection_id: str, *, now: float) -> PendingConnect | None:
        rec = self._pending.get(connection_id)
        if rec is not None and rec.expires_at <= now:
            return replace(rec, status="EXPIRED")
        return rec

    def mark_connected(self, connection_id: str) -> bool:
        with self._lock:
            rec = self._pending.get(connection_id)
            if rec is None:
                return False
            self._pending[connection_id] = replace(rec, status="CONNECTED")
            return True

    def delete(self, connection_id: str) -> None:
        self._pending.pop(connection_id, None)

    def put_state(self, state: OAuthState) -> None:
        self._states[state.state] = state

    def take_state(self, state: str, *, now: float) -> OAuthState | None:
        with self._lock:
            rec = self._states.pop(state, None)
        if rec is None or rec.expires_at <= now:
            return None
        return rec


class MemoryAudit:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def append(self, event: dict[str, Any]) -> None:
        with self._lock:
            self.events.append(dict(event))

    def append_many(self, events: Sequence[dict[str, Any]]) -> None:
        with self._lock:
            self.events.extend(dict(e) for e in events)

    def list_for(self, user_id: str, *, limit: int = 100) -> list[dict[str, Any]]:
        mine = [e for e in self.events if e.get("user") == user_id]
        return list(reversed(mine))[:limit]

    def activity(self, user_id: str, query: ActivityQuery) -> ActivityPage:
        # The cursor is the list index of the last event returned; older events have smaller ones.
        start = len(self.events)
        if query.cursor is not None and query.cursor.isascii() and query.cursor.isdigit():
            start = min(int(query.cursor), start) if len(query.cursor) <= 40 else start
        found: list[tuple[int, dict[str, Any]]] = []
        for index in range(start - 1, -1, -1):
            event = self.events[index]
            if event.get("user") == user_id and query.matches(event):
                found.append((index, dict(event)))
                if len(found) > query.limit:  # one more than asked: there is a next page
                    return ActivityPage([e for _, e in found[:-1]], str(found[-2][0]))
        return ActivityPage([e for _, e in found])


class MemoryVault:
    def __init__(self) -> None:
        self._rows: dict[tuple[str, str], bytes] = {}

    def put(self, user_id: str, name: str, blob: bytes) -> None:
        self._rows[(user_id, name)] = blob

    def get(self, user_id: str, name: str) -> bytes | None:
        return self._rows.get((user_id, name))

    def delete(self, user_id: str, name: str) -> bool:
        return self._rows.pop((user_id, name), None) is not None

    def names(self, user_id: str) -> list[str]:
        return sorted(n for (u, n) in self._rows if u == user_id)


class MemoryJots:
    def __init__(self) -> None:
        self._rows: dict[str, Jot] = {}
        self._lock = threading.Lock()

    def put(self, jot: Jot) -> None:
        with self._lock:
            self._rows[jot.id] = jot

    def put_if(self, jot: Jot, *, expected_updated_at: float) -> bool:
        with self._lock:
            current = self._rows.get(jot.id)
            if current is None or current.user_id != jot.user_id or current.updated_at != expected_updated_at:
                return False
            self._rows[jot.id] = jot
            return True

    def get(self, user_id: str, jot_id: str) -> Jot | None:
        jot = self._rows.get(jot_id)
        return jot if jot is not None and jot.user_id == user_id else None

    def by_share_token(self, token: str) -> Jot | None:
        return next((j for j in self._rows.values() if j.share_token and j.share_token == token), None)

    def list_for(self, user_id: str) -> list[Jot]:
        return sorted((j for j in self._rows.values() if j.user_id == user_id), key=lambda j: -j.updated_at)

    def delete(self, user_id: str, jot_id: str) -> bool:
        if self.get(user_id, jot_id) is None:
            return False
        del self._rows[jot_id]
        return True


class MemoryExternalServers:
    def __init__(self) -> None:
        self._rows: dict[tuple[str, str], ExternalServer] = {}
        self._lock = threading.Lock()

    def _changed(self, owner: str) -> None:
        """A new version of the owner's partition (with the lock held: one atomic write)."""
        from workbench.stores import version_row

        row = version_row(owner)
        if row is not None:
            self._rows[(owner, row.name)] = row

    def put(self, server: ExternalServer) -> None:
        with self._lock:
            self._rows[(server.user_id, server.name)] = server
            self._changed(server.user_id)

    def create(self, server: ExternalServer) -> bool:
        with self._lock:
            if self._rows.setdefault((server.user_id, server.name), server) is not server:
                return False
            self._changed(server.user_id)
            return True

    def put_if(self, server: ExternalServer, *, expected_updated_at: float) -> bool:
        key = (server.user_id, server.name)
        with self._lock:
            current = self._rows.get(key)
            if current is None or current.updated_at != expected_updated_at:
                return False
            self._rows[key] = server
            self._changed(server.user_id)
            return True

    def get(self, user_id: str, name: str) -> ExternalServer | None:
        return self._rows.get((user_id, name))

    def list_for(self, user_id: str) -> list[ExternalServer]:
        from workbench.stores import PARTITION_VERSION

        with self._lock:
            rows = [s for (u, n), s in self._rows.items() if u == user_id and n != PARTITION_VERSION]
        return sorted(rows, key=lambda s: s.name)

    def delete(self, user_id: str, name: str) -> bool:
        with self._lock:
            if self._rows.pop((user_id, name), None) is None:
                return False
            self._changed(user_id)
            return True

    def set_state(self, user_id: str, name: str, state: str) -> bool:
        with self._lock:
            row = self._rows.get((user_id, name))
            if row is None:
                return False
            self._rows[(user_id, name)] = replace(row, state=state)
            self._changed(user_id)
            return True


def _live(client: OAuthClient | None, now: float) -> OAuthClient | None:
    return None if client is None or (client.expires_at is not None and client.expires_at <= now) else client


class MemoryOAuthClients:
    def __init__(self) -> None:
        self._rows: dict[str, OAuthClient] = {}
        self._lock = threading.Lock()

    def put(self, client: OAuthClient) -> None:
        with self._lock:
            self._rows[client.client_id] = client

    def get(self, client_id: str, *, now: float | None = None) -> OAuthClient | None:
        return _live(self._rows.get(client_id), time.time() if now is None else now)

    def mark_used(self, client_id: str) -> None:
        with self._lock:
            client = self._rows.get(client_id)
            if client is not None and client.expires_at is not None:
                self._rows[client_id] = replace(client, expires_at=None)

    def count(self, now: float) -> int:
        return sum(1 for c in list(self._rows.values()) if _live(c, now))

    def purge_expired(self, now: float) -> int:
        with self._lock:
            doomed = [k for k, c in self._rows.items() if not _live(c, now)]
            for k in doomed:
                del self._rows[k]
            return len(doomed)


class MemoryRateWindows:
    def __init__(self) -> None:
        self._counts: dict[tuple[str, int], tuple[int, float]] = {}
        self._lock = threading.Lock()

    def hit(self, key: str, window_start: int, limit: int, expires_at: float) -> bool:
        with self._lock:
            if len(self._counts) > 10_000:  # forget windows that are over
                self._counts = {k: v for k, v in self._counts.items() if v[1] > window_start}
            count, _ = self._counts.get((key, window_start), (0, expires_at))
            if count >= limit:
                return False
            self._counts[(key, window_start)] = (count + 1, expires_at)
            return True


class MemorySessionRevocations:
    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._rows: dict[str, float] = {}
        self._lock = threading.Lock()
        self._clock = clock

    def revoke(self, session_hash: str, expires_at: float) -> None:
        with self._lock:
            now = self._clock()
            if len(self._rows) > 10_000:  # forget sessions that expired anyway
                self._rows = {k: v for k, v in self._rows.items() if v > now}
            self._rows[session_hash] = expires_at

    def is_revoked(self, session_hash: str) -> bool:
        with self._lock:
            return session_hash in self._rows


class MemoryAuthorizationCodes:
    def __init__(self) -> None:
        self._rows: dict[str, AuthorizationCode] = {}
        self._lock = threading.Lock()

    def put(self, code: AuthorizationCode) -> None:
        with self._lock:
            self._rows[code.code_hash] = code

    def consume(self, code_hash: str) -> AuthorizationCode | None:
        with self._lock:
            rec = self._rows.get(code_hash)
            if rec is not None:
                self._rows[code_hash] = replace(rec, used=True)
            return rec

    def delete_for(self, user_id: str, client_id: str) -> int:
        with self._lock:
            doomed = [h for h, c in self._rows.items() if c.user_id == user_id and c.client_id == client_id]
            for h in doomed:
                del self._rows[h]
            return len(doomed)


class MemoryRefreshTokens:
    def __init__(self) -> None:
        self._rows: dict[str, RefreshToken] = {}
        self._lock = threading.Lock()

    def put(self, token: RefreshToken) -> None:
        with self._lock:
            self._rows[token.token_hash] = token

    def get(self, token_hash: str) -> RefreshToken | None:
        return self._rows.get(token_hash)

    def rotate(self, token_hash: str) -> RefreshToken | None:
        with self._lock:
            rec = self._rows.get(token_hash)
            if rec is not None:
                self._rows[token_hash] = replace(rec, rotated=True)
            return rec

    def _delete_where(self, keep: Any) -> int:
        with self._lock:
            doomed = [h for h, t in self._rows.items() if not keep(t)]
            for h in doomed:
                del self._rows[h]
            return len(doomed)

    def revoke_family(self, family_id: str) -> int:
        return self._delete_where(lambda t: t.family_id != family_id)

    def family_exists(self, family_id: str) -> bool:
        with self._lock:
            return any(t.family_id == family_id for t in self._rows.values())

    def list_for(self, user_id: str) -> list[RefreshToken]:
        return sorted((t for t in self._rows.values() if t.user_id == user_id), key=lambda t: t.created_at)

    def delete_for(self, user_id: str, client_id: str) -> int:
        return self._delete_where(lambda t: not (t.user_id == user_id and t.client_id == client_id))

    def set_grant(self, user_id: str, client_id: str, grant: str) -> int:
        with self._lock:
            mine = [h for h, t in self._rows.items() if t.user_id == user_id and t.client_id == client_id]
            for h in mine:
                self._rows[h] = replace(self._rows[h], grant=grant)
            return len(mine)


class MemoryApprovals:
    def __init__(self) -> None:
        self._rows: dict[tuple[str, str], Approval] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _read(rec: Approval | None, now: float) -> Approval | None:
        if rec is not None and rec.expires_at <= now:
            return replace(rec, status="EXPIRED")
        return rec

    def put(self, approval: Approval) -> None:
        with self._lock:
            self._rows[(approval.user_id, approval.id)] = approval

    def get(self, user_id: str, approval_id: str, *, now: float) -> Approval | None:
        return self._read(self._rows.get((user_id, approval_id)), now)

    def list_for(self, user_id: str, *, now: float) -> list[Approval]:
        with self._lock:
            mine = [a for (u, _), a in self._rows.items() if u == user_id and a.expires_at > now]
        return sorted(mine, key=lambda a: (-a.created_at, a.id))

    def decide(self, user_id: str, approval_id: str, status: str, by: str, *, now: float) -> Approval | None:
        with self._lock:
            rec = self._rows.get((user_id, approval_id))
            if rec is None or rec.status != "PENDING" or rec.expires_at <= now:
                return None
            done = replace(rec, status=status, decided_at=now, decided_by=by)
            self._rows[(user_id, approval_id)] = done
            return done

    def use(self, user_id: str, approval_id: str, *, now: float) -> bool:
        with self._lock:
            rec = self._rows.get((user_id, approval_id))
            if rec is None or rec.status != "APPROVED" or rec.expires_at <= now:
                return False
            self._rows[(user_id, approval_id)] = replace(rec, status="USED", used_at=now)
            return True


def memory_stores() -> Stores:
    return Stores(
        users=MemoryUsers(),
        api_keys=MemoryApiKeys(),
        connections=MemoryConnections(),
        pending=MemoryPending(),
        audit=MemoryAudit(),
        vault=MemoryVault(),
        jots=MemoryJots(),
        external_servers=MemoryExternalServers(),
        oauth_clients=MemoryOAuthClients(),
        oauth_codes=MemoryAuthorizationCodes(),
        oauth_refresh=MemoryRefreshTokens(),
        approvals=MemoryApprovals(),
        oauth_rates=MemoryRateWindows(),
        session_revocations=MemorySessionRevocations(),
    )
