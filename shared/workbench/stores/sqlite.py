"""SQLite adapter: the embedded default. One file, WAL mode, safe across threads and processes."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from workbench.errors import AuditNotWritten
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

__all__ = ["SqliteDatabase", "private_dir", "sqlite_stores"]

_OWNER_ONLY_DIR = 0o700
_OWNER_ONLY_FILE = 0o600

_SCHEMA = """
CREATE TABLE IF NOT EXISTS users (
    id TEXT PRIMARY KEY, email TEXT NOT NULL UNIQUE, created_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS api_keys (
    key_id TEXT PRIMARY KEY, user_id TEXT NOT NULL, secret_hash TEXT NOT NULL,
    created_at REAL NOT NULL, revoked INTEGER NOT NULL DEFAULT 0, label TEXT NOT NULL DEFAULT '',
    grant_json TEXT NOT NULL DEFAULT '');
CREATE INDEX IF NOT EXISTS api_keys_user ON api_keys(user_id);
CREATE TABLE IF NOT EXISTS connections (
    user_id TEXT NOT NULL, integration TEXT NOT NULL, credential BLOB NOT NULL,
    status TEXT NOT NULL, expires_at REAL, updated_at REAL NOT NULL, version INTEGER NOT NULL,
    verified_at REAL, last_error TEXT NOT NULL DEFAULT '', last_error_at REAL,
    PRIMARY KEY (user_id, integration));
CREATE TABLE IF NOT EXISTS pending_connects (
    id TEXT PRIMARY KEY, user_id TEXT NOT NULL, integration TEXT NOT NULL, auth_type TEXT NOT NULL,
    expires_at REAL NOT NULL, status TEXT NOT NULL, created_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS oauth_states (
    state TEXT PRIMARY KEY, body TEXT NOT NULL, expires_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS audit (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, user_id TEXT, ts REAL NOT NULL, body TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS audit_user ON audit(user_id, seq);
CREATE TABLE IF NOT EXISTS jots (
    id TEXT PRIMARY KEY, user_id TEXT NOT NULL, title TEXT NOT NULL, body TEXT NOT NULL,
    created_at REAL NOT NULL, updated_at REAL NOT NULL, share_token TEXT UNIQUE);
CREATE INDEX IF NOT EXISTS jots_user ON jots(user_id, updated_at);
CREATE TABLE IF NOT EXISTS external_servers (
    user_id TEXT NOT NULL, name TEXT NOT NULL, tool_prefix TEXT NOT NULL, config BLOB NOT NULL,
    auth_type TEXT NOT NULL, header_name TEXT NOT NULL, enabled INTEGER NOT NULL, timeout_ms INTEGER NOT NULL,
    status TEXT NOT NULL, created_at REAL NOT NULL, updated_at REAL NOT NULL, state TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (user_id, name));
CREATE TABLE IF NOT EXISTS vault (
    user_id TEXT NOT NULL, name TEXT NOT NULL, blob BLOB NOT NULL, PRIMARY KEY (user_id, name));
CREATE TABLE IF NOT EXISTS oauth_clients (client_id TEXT PRIMARY KEY, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS rate_windows (
    key TEXT NOT NULL, window_start INTEGER NOT NULL, count INTEGER NOT NULL, expires_at REAL NOT NULL,
    PRIMARY KEY (key, window_start));
CREATE TABLE IF NOT EXISTS session_revocations (session_hash TEXT PRIMARY KEY, expires_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS oauth_codes (
    code_hash TEXT PRIMARY KEY, user_id TEXT NOT NULL, client_id TEXT NOT NULL,
    expires_at REAL NOT NULL, used INTEGER NOT NULL, body TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS oauth_codes_user ON oauth_codes(user_id, client_id);
CREATE TABLE IF NOT EXISTS oauth_refresh (
    token_hash TEXT PRIMARY KEY, family_id TEXT NOT NULL, user_id TEXT NOT NULL, client_id TEXT NOT NULL,
    expires_at REAL NOT NULL, rotated INTEGER NOT NULL, body TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS oauth_refresh_family ON oauth_refresh(family_id);
CREATE INDEX IF NOT EXISTS oauth_refresh_user ON oauth_refresh(user_id, client_id);
CREATE TABLE IF NOT EXISTS approvals (
    user_id TEXT NOT NULL, id TEXT NOT NULL, status TEXT NOT NULL, created_at REAL NOT NULL,
    expires_at REAL NOT NULL, body TEXT NOT NULL, PRIMARY KEY (user_id, id));
"""

# (table, column, declaration): what _SCHEMA gained after its first release, added in place.
_ADDED_COLUMNS = (
    ("connections", "verified_at", "REAL"),
    ("connections", "last_error", "TEXT NOT NULL DEFAULT ''"),
    ("connections", "last_error_at", "REAL"),
    ("external_servers", "state", "TEXT NOT NULL DEFAULT ''"),
    ("api_keys", "grant_json", "TEXT NOT NULL DEFAULT ''"),
)


def private_dir(path: Path) -> None:
    """Create `path` owner-only, or make it so if it exists with wider modes (data at rest)."""
    path.mkdir(parents=True, exist_ok=True, mode=_OWNER_ONLY_DIR)
    os.chmod(path, _OWNER_ONLY_DIR)


# The largest INTEGER SQLite stores: a cursor past it means "from the newest".
_MAX_SEQ = 2**63 - 1


class SqliteDatabase:
    """One connection per thread, all to the same file; writes serialised by SQLite itself.

    The database file and its -wal/-shm companions are owner-only (0600), also when they were
    created earlier with wider modes: they hold credentials (encrypted), audit rows and jots."""

    def __init__(self, path: Path | str) -> None:
        self.path = str(path)
        self._local = threading.local()
        on_disk = self.path != ":memory:" and not self.path.startswith("file:")
        if on_disk:
            os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, _OWNER_ONLY_FILE))  # never world-readable
        self._conn().executescript(_SCHEMA)  # executescript manages its own transaction
        if on_disk:
            for suffix in ("", "-wal", "-shm"):  # SQLite made the companions by now (WAL mode)
                with contextlib.suppress(FileNotFoundError):
                    os.chmod(self.path + suffix, _OWNER_ONLY_FILE)
        self._add_missing_columns()

    def _add_missing_columns(self) -> None:
        """Columns added since a table was first created (a data file from an older version)."""
        with self.tx() as db:
            for table, column, decl in _ADDED_COLUMNS:
                have = {row["name"] for row in db.execute(f"PRAGMA table_info({table})")}
                if column not in have:
                    db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {decl}")

    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=10, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA busy_timeout=10000")
            conn.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: durable at checkpoints, never corrupt
            conn.row_factory = sqlite3.Row
            self._local.conn = conn
        return conn

    @contextmanager
    def tx(self) -> Iterator[sqlite3.Connection]:
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        return self._conn().execute(sql, params).fetchall()


class SqliteUsers:
    def __init__(self, db: SqliteDatabase) -> None:
        self.db = db

    @staticmethod
    def _user(row: sqlite3.Row | None) -> User | None:
        return User(row["id"], row["email"], row["created_at"]) if row else None

    def get(self, user_id: str) -> User | None:
        rows = self.db.query("SELECT * FROM users WHERE id = ?", (user_id,))
        return self._user(rows[0] if rows else None)

    def by_email(self, email: str) -> User | None:
        rows = self.db.query("SELECT * FROM users WHERE email = ?", (email.strip().lower(),))
        return self._user(rows[0] if rows else None)

    def get_or_create(self, email: str) -> User:
        email = email.strip().lower()
        with self.db.tx() as db:
            db.execute(
                "INSERT OR IGNORE INTO users (id, email, created_at) VALUES (?, ?, ?)",
                ("usr_" + uuid.uuid4().hex, email, time.time()),
            )
        user = self.by_email(email)
        assert user is not None
        return user


class SqliteApiKeys:
    def __init__(self, db: SqliteDatabase) -> None:
        self.db = db

    @staticmethod
    def _rec(row: sqlite3.Row) -> ApiKeyRecord:
        return ApiKeyRecord(
            row["key_id"],
            row["user_id"],
            row["secret_hash"],
            row["created_at"],
            bool(row["revoked"]),
            row["label"],
            row["grant_json"],
        )

    def add(self, record: ApiKeyRecord) -> None:
        with self.db.tx() as db:
            db.execute(
                "INSERT INTO api_keys (key_id, user_id, secret_hash, created_at, revoked, label, grant_json)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    record.key_id,
                    record.user_id,
                    record.secret_hash,
                    record.created_at,
                    int(record.revoked),
                    record.label,
                    record.grant,
                ),
            )

    def get(self, key_id: str) -> ApiKeyRecord | None:
        rows = self.db.query("SELECT * FROM api_keys WHERE key_id = ?", (key_id,))
        return self._rec(rows[0]) if rows else None

    def list_for(self, user_id: str) -> list[ApiKeyRecord]:
        rows = self.db.query("SELECT * FROM api_keys WHERE user_id = ? ORDER BY created_at", (user_id,))
        return [self._rec(r) for r in rows]

    def revoke(self, user_id: str, key_id: str) -> bool:
        with self.db.tx() as db:
            cur = db.execute(
                "UPDATE api_keys SET revoked = 1 WHERE key_id = ? AND user_id = ?", (key_id, user_id)
            )
            return cur.rowcount == 1

    def set_grant(self, user_id: str, key_id: str, grant: str) -> bool:
        with self.db.tx() as db:
            cur = db.execute(
                "UPDATE api_keys SET grant_json = ? WHERE key_id = ? AND user_id = ?",
                (grant, key_id, user_id),
            )
            return cur.rowcount == 1


class SqliteConnections:
    def __init__(self, db: SqliteDatabase) -> None:
        self.db = db

    @staticmethod
    def _conn(row: sqlite3.Row) -> Connection:
        return Connection(
            row["user_id"],
            row["integration"],
            bytes(row["credential"]),
            row["status"],
            row["expires_at"],
            row["updated_at"],
            row["version"],
            row["verified_at"],
            row["last_error"],
            row["last_error_at"],
        )

    def get(self, user_id: str, integration: str) -> Connection | None:
        rows = self.db.query(
            "SELECT * FROM connections WHERE user_id = ? AND integration = ?", (user_id, integration)
        )
        return self._conn(rows[0]) if rows else None

    def list_for(self, user_id: str) -> list[Connection]:
        rows = self.db.query("SELECT * FROM connections WHERE user_id = ? ORDER BY integration", (user_id,))
        return [self._conn(r) for r in rows]

    def put(self, conn: Connection, *, expected_version: int | None = None) -> bool:
        values = (
            conn.user_id,
            conn.integration,
            conn.credential,
            conn.status,
            conn.expires_at,
            conn.updated_at,
            conn.version,
            conn.verified_at,
            conn.last_error,
            conn.last_error_at,
        )
        with self.db.tx() as db:
            if expected_version is not None:
                row = db.execute(
                    "SELECT version FROM connections WHERE user_id = ? AND integration = ?",
                    (conn.user_id, conn.integration),
                ).fetchone()
                if (row["version"] if row else 0) != expected_version:
                    return False
            db.execute(
                "INSERT OR REPLACE INTO connections (user_id, integration, credential, status, expires_at, "
                "updated_at, version, verified_at, last_error, last_error_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                values,
            )
            return True

    def delete(self, user_id: str, integration: str) -> bool:
        with self.db.tx() as db:
            cur = db.execute(
                "DELETE FROM connections WHERE user_id = ? AND integration = ?", (user_id, integration)
            )
            return cur.rowcount == 1


class SqlitePending:
    def __init__(self, db: SqliteDatabase) -> None:
        self.db = db

    def put(self, pending: PendingConnect) -> None:
        with self.db.tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO pending_connects VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    pending.id,
                    pending.user_id,
                    pending.integration,
                    pending.auth_type,
                    pending.expires_at,
                    pending.status,
                    pending.created_at,
                ),
            )

    def get(self, connection_id: str, *, now: float) -> PendingConnect | None:
        rows = self.db.query("SELECT * FROM pending_connects WHERE id = ?", (connection_id,))
        if not rows:
            return None
        r = rows[0]
        status = "EXPIRED" if r["expires_at"] <= now else r["status"]
        return PendingConnect(
            r["id"], r["user_id"], r["integration"], r["auth_type"], r["expires_at"], status, r["created_at"]
        )

    def mark_connected(self, connection_id: str) -> bool:
        with self.db.tx() as db:
            cur = db.execute(
                "UPDATE pending_connects SET status = 'CONNECTED' WHERE id = ?", (connection_id,)
            )
            return cur.rowcount == 1

    def delete(self, connection_id: str) -> None:
        with self.db.tx() as db:
            db.execute("DELETE FROM pending_connects WHERE id = ?", (connection_id,))

    def put_state(self, state: OAuthState) -> None:
        body = json.dumps({k: getattr(state, k) for k in state.__dataclass_fields__})
        with self.db.tx() as db:
            db.execute("INSERT INTO oauth_states VALUES (?, ?, ?)", (state.state, body, state.expires_at))

    def take_state(self, state: str, *, now: float) -> OAuthState | None:
        with self.db.tx() as db:
            row = db.execute(
                "DELETE FROM oauth_states WHERE state = ? RETURNING body, expires_at", (state,)
            ).fetchone()
        if row is None or row["expires_at"] <= now:
            return None
        return OAuthState(**json.loads(row["body"]))


class SqliteAudit:
    def __init__(self, db: SqliteDatabase) -> None:
        self.db = db

    def append(self, event: dict[str, Any]) -> None:
        self.append_many([event])

    def append_many(self, events: Sequence[dict[str, Any]]) -> None:
        rows = [(e.get("user"), e.get("ts", time.time()), json.dumps(e, default=str)) for e in events]
        try:
            with self.db.tx() as db:  # one transaction: all of the batch's rows or none
                db.executemany("INSERT INTO audit (user_id, ts, body) VALUES (?, ?, ?)", rows)
        except sqlite3.Error as exc:
            raise AuditNotWritten([dict(e) for e in events], f"{type(exc).__name__}: {exc}") from exc

    def list_for(self, user_id: str, *, limit: int = 100) -> list[dict[str, Any]]:
        rows = self.db.query(
            "SELECT body FROM audit WHERE user_id = ? ORDER BY seq DESC LIMIT ?", (user_id, limit)
        )
        return [json.loads(r["body"]) for r in rows]

    def activity(self, user_id: str, query: ActivityQuery) -> ActivityPage:
        # Walks the (user_id, seq) index newest first; filters read the JSON body (JSON1).
        sql = ["SELECT seq, body FROM audit WHERE user_id = ?"]
        args: list[Any] = [user_id]
        if query.cursor is not None and query.cursor.isascii() and query.cursor.isdigit():
            sql.append("AND seq < ?")
            # A URL's digits: any length, held within SQLite's range.
            args.append(min(int(query.cursor), _MAX_SEQ) if len(query.cursor) <= 40 else _MAX_SEQ)
        if query.action is not None:
            sql.append("AND json_extract(body, '$.action') = ?")
            args.append(query.action)
        if query.integration is not None:
            sql.append("AND json_extract(body, '$.integration') = ?")
            args.append(query.integration)
        if query.success is not None:
            sql.append("AND json_extract(body, '$.success') = ?")
            args.append(1 if query.success else 0)
        if query.since is not None:
            sql.append("AND ts >= ?")
            args.append(query.since)
        sql.append("ORDER BY seq DESC LIMIT ?")
        args.append(query.limit + 1)  # one more than asked: is there a next page?
        rows = self.db.query(" ".join(sql), tuple(args))
        events = [json.loads(r["body"]) for r in rows[: query.limit]]
        more = len(rows) > query.limit
        return ActivityPage(events, str(rows[query.limit - 1]["seq"]) if more else None)


class SqliteVault:
    def __init__(self, db: SqliteDatabase) -> None:
        self.db = db

    def put(self, user_id: str, name: str, blob: bytes) -> None:
        with self.db.tx() as db:
            db.execute("INSERT OR REPLACE INTO vault VALUES (?, ?, ?)", (user_id, name, blob))

    def get(self, user_id: str, name: str) -> bytes | None:
        rows = self.db.query("SELECT blob FROM vault WHERE user_id = ? AND name = ?", (user_id, name))
        return bytes(rows[0]["blob"]) if rows else None

    def delete(self, user_id: str, name: str) -> bool:
        with self.db.tx() as db:
            return (
                db.execute("DELETE FROM vault WHERE user_id = ? AND name = ?", (user_id, name)).rowcount == 1
            )

    def names(self, user_id: str) -> list[str]:
        return [
            r["name"]
            for r in self.db.query("SELECT name FROM vault WHERE user_id = ? ORDER BY name", (user_id,))
        ]


class SqliteJots:
    def __init__(self, db: SqliteDatabase) -> None:
        self.db = db

    @staticmethod
    def _jot(r: sqlite3.Row) -> Jot:
        return Jot(
            r["id"], r["user_id"], r["title"], r["body"], r["created_at"], r["updated_at"], r["share_token"]
        )

    def put(self, jot: Jot) -> None:
        with self.db.tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO jots VALUES (?, ?, ?, ?, ?, ?, ?)",
                (jot.id, jot.user_id, jot.title, jot.body, jot.created_at, jot.updated_at, jot.share_token),
            )

    def put_if(self, jot: Jot, *, expected_updated_at: float) -> bool:
        with self.db.tx() as db:
            return (
                db.execute(
                    "UPDATE jots SET title = ?, body = ?, updated_at = ?, share_token = ? "
                    "WHERE id = ? AND user_id = ? AND updated_at = ?",
                    (
                        jot.title,
                        jot.body,
                        jot.updated_at,
                        jot.share_token,
                        jot.id,
                        jot.user_id,
                        expected_updated_at,
                    ),
                ).rowcount
                == 1
            )

    def get(self, user_id: str, jot_id: str) -> Jot | None:
        rows = self.db.query("SELECT * FROM jots WHERE id = ? AND user_id = ?", (jot_id, user_id))
        return self._jot(rows[0]) if rows else None

    def by_share_token(self, token: str) -> Jot | None:
        rows = self.db.query("SELECT * FROM jots WHERE share_token = ?", (token,))
        return self._jot(rows[0]) if rows else None

    def list_for(self, user_id: str) -> list[Jot]:
        rows = self.db.query("SELECT * FROM jots WHERE user_id = ? ORDER BY updated_at DESC", (user_id,))
        return [self._jot(r) for r in rows]

    def delete(self, user_id: str, jot_id: str) -> bool:
        with self.db.tx() as db:
            return (
                db.execute("DELETE FROM jots WHERE id = ? AND user_id = ?", (jot_id, user_id)).rowcount == 1
            )


class SqliteExternalServers:
    def __init__(self, db: SqliteDatabase) -> None:
        self.db = db

    @staticmethod
    def _server(r: sqlite3.Row) -> ExternalServer:
        return ExternalServer(
            r["user_id"],
            r["name"],
            r["tool_prefix"],
            bytes(r["config"]),
            r["auth_type"],
            r["header_name"],
            bool(r["enabled"]),
            r["timeout_ms"],
            r["status"],
            r["created_at"],
            r["updated_at"],
            r["state"],
        )

    def put(self, server: ExternalServer) -> None:
        self._insert("INSERT OR REPLACE", server)

    def create(self, server: ExternalServer) -> bool:
        return self._insert("INSERT OR IGNORE", server)

    def put_if(self, server: ExternalServer, *, expected_updated_at: float) -> bool:
        with self.db.tx() as db:
            cur = db.execute(
                "UPDATE external_servers SET tool_prefix = ?, config = ?, auth_type = ?, header_name = ?, "
                "enabled = ?, timeout_ms = ?, status = ?, created_at = ?, updated_at = ?, state = ? "
                "WHERE user_id = ? AND name = ? AND updated_at = ?",
                (
                    server.tool_prefix,
                    server.config,
                    server.auth_type,
                    server.header_name,
                    int(server.enabled),
                    server.timeout_ms,
                    server.status,
                    server.created_at,
                    server.updated_at,
                    server.state,
                    server.user_id,
                    server.name,
                    expected_updated_at,
                ),
            )
            return self._changed(db, server.user_id, cur.rowcount == 1)

    @staticmethod
    def _changed(db: sqlite3.Connection, owner: str, written: bool) -> bool:
        """A new version of the owner's partition, in the write's own transaction; `written`."""
        from workbench.stores import version_row

        row = version_row(owner) if written else None
        if row is not None:
            SqliteExternalServers._write(db, "INSERT OR REPLACE", row)
        return written

    def _insert(self, verb: str, server: ExternalServer) -> bool:
        with self.db.tx() as db:
            return self._changed(db, server.user_id, self._write(db, verb, server))

    @staticmethod
    def _write(db: sqlite3.Connection, verb: str, server: ExternalServer) -> bool:
        cur = db.execute(
            f"{verb} INTO external_servers (user_id, name, tool_prefix, config, auth_type, "
            "header_name, enabled, timeout_ms, status, created_at, updated_at, state) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                server.user_id,
                server.name,
                server.tool_prefix,
                server.config,
                server.auth_type,
                server.header_name,
                int(server.enabled),
                server.timeout_ms,
                server.status,
                server.created_at,
                server.updated_at,
                server.state,
            ),
        )
        return cur.rowcount == 1

    def set_state(self, user_id: str, name: str, state: str) -> bool:
        with self.db.tx() as db:
            cur = db.execute(
                "UPDATE external_servers SET state = ? WHERE user_id = ? AND name = ?", (state, user_id, name)
            )
            return self._changed(db, user_id, cur.rowcount == 1)

    def get(self, user_id: str, name: str) -> ExternalServer | None:
        rows = self.db.query("SELECT * FROM external_servers WHERE user_id = ? AND name = ?", (user_id, name))
        return self._server(rows[0]) if rows else None

    def list_for(self, user_id: str) -> list[ExternalServer]:
        from workbench.stores import PARTITION_VERSION

        rows = self.db.query(
            "SELECT * FROM external_servers WHERE user_id = ? AND name != ? ORDER BY name",
            (user_id, PARTITION_VERSION),
        )
        return [self._server(r) for r in rows]

    def delete(self, user_id: str, name: str) -> bool:
        with self.db.tx() as db:
            cur = db.execute("DELETE FROM external_servers WHERE user_id = ? AND name = ?", (user_id, name))
            return self._changed(db, user_id, cur.rowcount == 1)


def _record_json(record: Any) -> str:
    return json.dumps({k: getattr(record, k) for k in record.__dataclass_fields__})


class SqliteOAuthClients:
    def __init__(self, db: SqliteDatabase) -> None:
        self.db = db

    def put(self, client: OAuthClient) -> None:
        with self.db.tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO oauth_clients VALUES (?, ?)", (client.client_id, _record_json(client))
            )

    def get(self, client_id: str, *, now: float | None = None) -> OAuthClient | None:
        # An unused client's expiry lives in its JSON body ($.expires_at; absent or null: kept).
        rows = self.db.query(
            "SELECT body FROM oauth_clients WHERE client_id = ? AND COALESCE(json_extract(body, '$.expires_at') > ?, 1)",
            (client_id, time.time() if now is None else now),
        )
        if not rows:
            return None
        raw = json.loads(rows[0]["body"])
        raw["redirect_uris"] = tuple(raw["redirect_uris"])
        raw["grant_types"] = tuple(raw["grant_types"])
        return OAuthClient(**raw)

    def mark_used(self, client_id: str) -> None:
        with self.db.tx() as db:
            db.execute(
                "UPDATE oauth_clients SET body = json_set(body, '$.expires_at', json('null')) WHERE client_id = ?",
                (client_id,),
            )

    def count(self, now: float) -> int:
        rows = self.db.query(
            "SELECT COUNT(*) AS n FROM oauth_clients WHERE COALESCE(json_extract(body, '$.expires_at') > ?, 1)",
            (now,),
        )
        return int(rows[0]["n"])

    def purge_expired(self, now: float) -> int:
        with self.db.tx() as db:
            return db.execute(
                "DELETE FROM oauth_clients WHERE json_extract(body, '$.expires_at') <= ?", (now,)
            ).rowcount


class SqliteRateWindows:
    def __init__(self, db: SqliteDatabase) -> None:
        self.db = db

    def hit(self, key: str, window_start: int, limit: int, expires_at: float) -> bool:
        with self.db.tx() as db:  # BEGIN IMMEDIATE: one writer at a time, across processes too
            db.execute("DELETE FROM rate_windows WHERE expires_at < ?", (window_start,))
            row = db.execute(
                "SELECT count FROM rate_windows WHERE key = ? AND window_start = ?", (key, window_start)
            ).fetchone()
            if row is not None and row["count"] >= limit:
                return False
            db.execute(
                "INSERT INTO rate_windows VALUES (?, ?, 1, ?) "
                "ON CONFLICT (key, window_start) DO UPDATE SET count = count + 1",
                (key, window_start, expires_at),
            )
            return True


class SqliteSessionRevocations:
    def __init__(self, db: SqliteDatabase, clock: Callable[[], float] = time.time) -> None:
        self.db = db
        self.clock = clock

    def revoke(self, session_hash: str, expires_at: float) -> None:
        with self.db.tx() as db:
            db.execute("DELETE FROM session_revocations WHERE expires_at < ?", (self.clock(),))
            db.execute("INSERT OR REPLACE INTO session_revocations VALUES (?, ?)", (session_hash, expires_at))

    def is_revoked(self, session_hash: str) -> bool:
        rows = self.db.query("SELECT 1 FROM session_revocations WHERE session_hash = ?", (session_hash,))
        return bool(rows)


# Used codes are kept this long past their expiry so that a replay can still be recognised.
_CODE_KEEP_SECONDS = 3600


class SqliteAuthorizationCodes:
    def __init__(self, db: SqliteDatabase) -> None:
        self.db = db

    def put(self, code: AuthorizationCode) -> None:
        with self.db.tx() as db:
            db.execute(
                "DELETE FROM oauth_codes WHERE expires_at < ?", (code.created_at - _CODE_KEEP_SECONDS,)
            )
            db.execute(
                "INSERT INTO oauth_codes VALUES (?, ?, ?, ?, ?, ?)",
                (
                    code.code_hash,
                    code.user_id,
                    code.client_id,
                    code.expires_at,
                    int(code.used),
                    _record_json(code),
                ),
            )

    def consume(self, code_hash: str) -> AuthorizationCode | None:
        with self.db.tx() as db:
            row = db.execute(
                "SELECT used, body FROM oauth_codes WHERE code_hash = ?", (code_hash,)
            ).fetchone()
            if row is None:
                return None
            db.execute("UPDATE oauth_codes SET used = 1 WHERE code_hash = ?", (code_hash,))
        return AuthorizationCode(**{**json.loads(row["body"]), "used": bool(row["used"])})

    def delete_for(self, user_id: str, client_id: str) -> int:
        with self.db.tx() as db:
            cur = db.execute(
                "DELETE FROM oauth_codes WHERE user_id = ? AND client_id = ?", (user_id, client_id)
            )
            return cur.rowcount


class SqliteRefreshTokens:
    def __init__(self, db: SqliteDatabase) -> None:
        self.db = db

    @staticmethod
    def _token(row: sqlite3.Row) -> RefreshToken:
        return RefreshToken(**{**json.loads(row["body"]), "rotated": bool(row["rotated"])})

    def put(self, token: RefreshToken) -> None:
        with self.db.tx() as db:
            db.execute("DELETE FROM oauth_refresh WHERE expires_at < ?", (token.created_at,))
            db.execute(
                "INSERT INTO oauth_refresh VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    token.token_hash,
                    token.family_id,
                    token.user_id,
                    token.client_id,
                    token.expires_at,
                    int(token.rotated),
                    _record_json(token),
                ),
            )

    def get(self, token_hash: str) -> RefreshToken | None:
        rows = self.db.query("SELECT rotated, body FROM oauth_refresh WHERE token_hash = ?", (token_hash,))
        return self._token(rows[0]) if rows else None

    def rotate(self, token_hash: str) -> RefreshToken | None:
        with self.db.tx() as db:
            row = db.execute(
                "SELECT rotated, body FROM oauth_refresh WHERE token_hash = ?", (token_hash,)
            ).fetchone()
            if row is None:
                return None
            db.execute("UPDATE oauth_refresh SET rotated = 1 WHERE token_hash = ?", (token_hash,))
        return self._token(row)

    def revoke_family(self, family_id: str) -> int:
        with self.db.tx() as db:
            return db.execute("DELETE FROM oauth_refresh WHERE family_id = ?", (family_id,)).rowcount

    def family_exists(self, family_id: str) -> bool:
        return bool(self.db.query("SELECT 1 FROM oauth_refresh WHERE family_id = ? LIMIT 1", (family_id,)))

    def list_for(self, user_id: str) -> list[RefreshToken]:
        rows = self.db.query(
            "SELECT rotated, body FROM oauth_refresh WHERE user_id = ? ORDER BY json_extract(body, '$.created_at')",
            (user_id,),
        )
        return [self._token(r) for r in rows]

    def delete_for(self, user_id: str, client_id: str) -> int:
        with self.db.tx() as db:
            cur = db.execute(
                "DELETE FROM oauth_refresh WHERE user_id = ? AND client_id = ?", (user_id, client_id)
            )
            return cur.rowcount

    def set_grant(self, user_id: str, client_id: str, grant: str) -> int:
        with self.db.tx() as db:
            cur = db.execute(
                "UPDATE oauth_refresh SET body = json_set(body, '$.grant', ?) WHERE user_id = ? AND client_id = ?",
                (grant, user_id, client_id),
            )
            return cur.rowcount


class SqliteApprovals:
    def __init__(self, db: SqliteDatabase) -> None:
        self.db = db

    @staticmethod
    def _approval(row: sqlite3.Row, now: float) -> Approval:
        rec = Approval(**{**json.loads(row["body"]), "status": row["status"]})
        return replace(rec, status="EXPIRED") if rec.expires_at <= now else rec

    def put(self, approval: Approval) -> None:
        with self.db.tx() as db:
            # Expired approvals are kept a day (a late wait still reads EXPIRED), then dropped.
            db.execute("DELETE FROM approvals WHERE expires_at < ?", (approval.created_at - 86_400,))
            db.execute(
                "INSERT OR REPLACE INTO approvals VALUES (?, ?, ?, ?, ?, ?)",
                (
                    approval.user_id,
                    approval.id,
                    approval.status,
                    approval.created_at,
                    approval.expires_at,
                    _record_json(approval),
                ),
            )

    def get(self, user_id: str, approval_id: str, *, now: float) -> Approval | None:
        rows = self.db.query(
            "SELECT status, body FROM approvals WHERE user_id = ? AND id = ?", (user_id, approval_id)
        )
        return self._approval(rows[0], now) if rows else None

    def list_for(self, user_id: str, *, now: float) -> list[Approval]:
        rows = self.db.query(
            "SELECT status, body FROM approvals WHERE user_id = ? AND expires_at > ? ORDER BY created_at DESC, id",
            (user_id, now),
        )
        return [self._approval(r, now) for r in rows]

    def decide(self, user_id: str, approval_id: str, status: str, by: str, *, now: float) -> Approval | None:
        with self.db.tx() as db:
            row = db.execute(
                "UPDATE approvals SET status = ?, body = json_set(body, '$.decided_at', ?, '$.decided_by', ?, "
                "'$.status', ?) WHERE user_id = ? AND id = ? AND status = 'PENDING' AND expires_at > ? "
                "RETURNING status, body",
                (status, now, by, status, user_id, approval_id, now),
            ).fetchone()
        return self._approval(row, now) if row is not None else None

    def use(self, user_id: str, approval_id: str, *, now: float) -> bool:
        with self.db.tx() as db:
            cur = db.execute(
                "UPDATE approvals SET status = 'USED', body = json_set(body, '$.used_at', ?, '$.status', 'USED') "
                "WHERE user_id = ? AND id = ? AND status = 'APPROVED' AND expires_at > ?",
                (now, user_id, approval_id, now),
            )
            return cur.rowcount == 1


class SqliteSchema:
    """The schema version in SQLite's own header field for it (PRAGMA user_version)."""

    def __init__(self, db: SqliteDatabase) -> None:
        self.db = db

    def version(self) -> int:
        return int(self.db.query("PRAGMA user_version")[0][0])

    def advance(self, current: int, to: int) -> bool:
        with self.db.tx() as db:  # BEGIN IMMEDIATE: one writer reads and moves it at a time
            if int(db.execute("PRAGMA user_version").fetchone()[0]) != current:
                return False
            db.execute(f"PRAGMA user_version = {int(to)}")
        return True


def sqlite_stores(path: Path | str) -> Stores:
    db = SqliteDatabase(path)
    return Stores(
        users=SqliteUsers(db),
        api_keys=SqliteApiKeys(db),
        connections=SqliteConnections(db),
        pending=SqlitePending(db),
        audit=SqliteAudit(db),
        vault=SqliteVault(db),
        jots=SqliteJots(db),
        external_servers=SqliteExternalServers(db),
        oauth_clients=SqliteOAuthClients(db),
        oauth_codes=SqliteAuthorizationCodes(db),
        oauth_refresh=SqliteRefreshTokens(db),
        oauth_rates=SqliteRateWindows(db),
        session_revocations=SqliteSessionRevocations(db),
        schema=SqliteSchema(db),
        approvals=SqliteApprovals(db),
    )
