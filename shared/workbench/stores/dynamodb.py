"""DynamoDB adapter: one table per store, exactly as template.yaml declares them.

| store        | template resource  | key                                  | notes                          |
|--------------|--------------------|--------------------------------------|--------------------------------|
| users        | UsersTable         | pk: "user#<id>" / "email#<email>"     | email item claims the address  |
| api_keys     | ApiKeysTable       | pk + sk: "key#<id>" / "user#<user>"+id | list is a consistent Query  |
| connections  | ConnectionsTable   | user_id + integration                | version-conditional writes     |
| pending      | PendingTable       | pk: "connect#<id>" / "state#<state>"  | TTL attribute `ttl`            |
| audit        | AuditTable         | user_id + seq; GSI by_user_integration | TTL `ttl`; seq = write ns + rand |
| vault        | VaultTable         | user_id + name                       |                                |
| jots         | JotsTable          | user_id + id; GSI by_share_token     | sparse index                   |
| signing_keys | SigningKeysTable   | pk + sk (see aws_signing.py)         |                                |
| external_servers | ExternalServersTable | user_id + name                 | custom apps (external MCP)     |
| oauth_*      | OAuthTable         | pk + sk (clients, codes, refresh tokens, and their index items; registration rate windows) | TTL `ttl` |

TTL deletion is lazy (up to days late), so every read of an expiring record checks `expires_at`
itself. Wherever two Lambda instances may race, the write is conditional. The boto3 client is
injectable; by default one client per `dynamodb_stores` call, created on first use.
"""

from __future__ import annotations

import json
import math
import random
import re
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import replace
from secrets import token_hex
from typing import TYPE_CHECKING, Any, ClassVar

from workbench.aws.clients import LazyClient, client_error_code
from workbench.errors import AuditNotWritten, ConflictError
from workbench.settings import Settings
from workbench.stores import ApiKeyRecord, Connection, Jot, Snapshot, Stores, User

if TYPE_CHECKING:  # built on first use (a first tool call needs none of them): imported where made
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

__all__ = ["TABLES", "DynamoTables", "dynamodb_stores", "dynamodb_tables"]

# store name -> logical id of its table in template.yaml (tests create tables from the template).
TABLES: dict[str, str] = {
    "users": "UsersTable",
    "api_keys": "ApiKeysTable",
    "connections": "ConnectionsTable",
    "pending": "PendingTable",
    "audit": "AuditTable",
    "vault": "VaultTable",
    "jots": "JotsTable",
    "signing_keys": "SigningKeysTable",
    "external_servers": "ExternalServersTable",
    "oauth": "OAuthTable",
    "approvals": "ApprovalsTable",
}

Item = dict[str, dict[str, Any]]

_AUDIT_SEQ = re.compile(r"^[0-9]{20}#[0-9a-f]{8}$")

# Error codes of a whole failed call worth another round (throttling, a server-side hiccup).
_TRANSIENT = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "RequestLimitExceeded",
        "InternalServerError",
        "ServiceUnavailable",
        "HTTP500",
        "HTTP502",
        "HTTP503",
        "HTTP504",
    }
)


# -- attribute helpers: the low-level wire format, explicit rather than via TypeSerializer ---------


def _s(value: str) -> dict[str, str]:
    return {"S": value}


def _n(value: float | int) -> dict[str, str]:
    return {"N": repr(value) if isinstance(value, float) else str(value)}


def _b(value: bytes) -> dict[str, bytes]:
    return {"B": value}


def _bool(value: bool) -> dict[str, bool]:
    return {"BOOL": value}


def _get_s(item: Item, name: str, default: str | None = None) -> str:
    attr = item.get(name)
    if attr is None:
        if default is None:
            raise KeyError(name)
        return default
    return str(attr["S"])


def _get_opt_s(item: Item, name: str) -> str | None:
    attr = item.get(name)
    return None if attr is None else str(attr["S"])


def _get_n(item: Item, name: str) -> float:
    return float(item[name]["N"])


def _get_opt_n(item: Item, name: str) -> float | None:
    attr = item.get(name)
    return None if attr is None else float(attr["N"])


def _ttl(expires_at: float) -> dict[str, str]:
    # DynamoDB TTL wants whole epoch seconds; round up so the item never vanishes early.
    return _n(math.ceil(expires_at))


class DynamoTables:
    """The shared client holder and table names; each store adapter receives one."""

    def __init__(self, settings: Settings, client: Any | None = None) -> None:
        self.settings = settings
        self._client = LazyClient("dynamodb", settings, client)

    @property
    def client(self) -> Any:
        return self._client.get()

    def name(self, store: str) -> str:
        return self.settings.table_name(store)

    def query(self, **kwargs: Any) -> Iterator[Item]:
        """Every item of a Query, following LastEvaluatedKey."""
        while True:
            page = self.client.query(**kwargs)
            yield from page.get("Items", [])
            last = page.get("LastEvaluatedKey")
            if not last:
                return
            kwargs["ExclusiveStartKey"] = last

    def conditional(self, op: str, **kwargs: Any) -> dict[str, Any] | None:
        """Run a conditional write; None when the condition failed (someone else won)."""
        try:
            result: dict[str, Any] = getattr(self.client, op)(**kwargs)
        except Exception as exc:
            if client_error_code(exc) == "ConditionalCheckFailedException":
                return None
            raise
        return result


class DynamoUsers:
    def __init__(self, t: DynamoTables) -> None:
        self.t = t
        self.table = t.name("users")

    @staticmethod
    def _user(item: Item) -> User:
        return User(_get_s(item, "id"), _get_s(item, "email"), _get_n(item, "created_at"))

    def get(self, user_id: str) -> User | None:
        got = self.t.client.get_item(
            TableName=self.table, Key={"pk": _s(f"user#{user_id}")}, ConsistentRead=True
        )
        item = got.get("Item")
        return self._user(item) if item else None

    def by_email(self, email: str) -> User | None:
        email = email.strip().lower()
        got = self.t.client.get_item(
            TableName=self.table, Key={"pk": _s(f"email#{email}")}, ConsistentRead=True
        )
        item = got.get("Item")
        return self._user(item) if item else None

    def get_or_create(self, email: str) -> User:
        email = email.strip().lower()
        existing = self.by_email(email)
        if existing is not None:
            return existing
        user = User("usr_" + token_hex(16), email, time.time())
        body = {"id": _s(user.id), "email": _s(email), "created_at": _n(user.created_at)}
        # The user item first, then the email claim: an email item always names an existing user.
        self.t.client.put_item(TableName=self.table, Item={"pk": _s(f"user#{user.id}"), **body})
        claimed = self.t.conditional(
            "put_item",
            TableName=self.table,
            Item={"pk": _s(f"email#{email}"), **body},
            ConditionExpression="attribute_not_exists(pk)",
        )
        if claimed is not None:
            return user
        # Another instance claimed the address first: drop our orphan and use theirs.
        self.t.client.delete_item(TableName=self.table, Key={"pk": _s(f"user#{user.id}")})
        winner = self.by_email(email)
        if winner is None:  # pragma: no cover - the claim cannot vanish between two calls
            raise ConflictError(f"user {email} was claimed and removed concurrently")
        return winner


class DynamoApiKeys:
    """Two items per key: the key itself (pk "key#<id>", what authentication reads) and a copy under
    its user (pk "user#<user>", sk <id>) so the portal's list is one strongly consistent Query — a key
    just minted is always listed. The key item is authoritative: it is written last on add and
    revoked first on revoke, so a listed-but-missing or listed-as-active key never authenticates."""

    def __init__(self, t: DynamoTables) -> None:
        self.t = t
        self.table = t.name("api_keys")

    @staticmethod
    def _rec(item: Item) -> ApiKeyRecord:
        return ApiKeyRecord(
            _get_s(item, "key_id"),
            _get_s(item, "user_id"),
            _get_s(item, "secret_hash"),
            _get_n(item, "created_at"),
            bool(item.get("revoked", {}).get("BOOL", False)),
            _get_s(item, "label", ""),
            _get_s(item, "grant", ""),
        )

    def add(self, record: ApiKeyRecord) -> None:
        body: Item = {
            "key_id": _s(record.key_id),
            "user_id": _s(record.user_id),
            "secret_hash": _s(record.secret_hash),
            "created_at": _n(record.created_at),
            "revoked": _bool(record.revoked),
            "label": _s(record.label),
            "grant": _s(record.grant),
        }
        if self.get(record.key_id) is not None:
            raise ConflictError("API key id already exists")
        self.t.client.put_item(
            TableName=self.table, Item={"pk": _s(f"user#{record.user_id}"), "sk": _s(record.key_id), **body}
        )
        done = self.t.conditional(
            "put_item",
            TableName=self.table,
            Item={"pk": _s(f"key#{record.key_id}"), "sk": _s("-"), **body},
            ConditionExpression="attribute_not_exists(pk)",
        )
        if done is None:
            raise ConflictError("API key id already exists")

    def get(self, key_id: str) -> ApiKeyRecord | None:
        got = self.t.client.get_item(
            TableName=self.table, Key={"pk": _s(f"key#{key_id}"), "sk": _s("-")}, ConsistentRead=True
        )
        item = got.get("Item")
        return self._rec(item) if item else None

    def list_for(self, user_id: str) -> list[ApiKeyRecord]:
        items = self.t.query(
            TableName=self.table,
            KeyConditionExpression="pk = :u",
            ExpressionAttributeValues={":u": _s(f"user#{user_id}")},
            ConsistentRead=True,
        )
        return sorted((self._rec(i) for i in items), key=lambda k: k.created_at)

    def revoke(self, user_id: str, key_id: str) -> bool:
        return self._update_both(user_id, key_id, "SET revoked = :v", _bool(True))

    def set_grant(self, user_id: str, key_id: str, grant: str) -> bool:
        return self._update_both(user_id, key_id, "SET #g = :v", _s(grant), names={"#g": "grant"})

    def _update_both(
        self,
        user_id: str,
        key_id: str,
        update: str,
        value: dict[str, Any],
        names: dict[str, str] | None = None,
    ) -> bool:
        """The key item (what authentication reads) first, then the user's listed copy. Another
        user's key id behaves exactly like an unknown one: nothing written, False."""
        extra: dict[str, Any] = {"ExpressionAttributeNames": names} if names else {}
        done = self.t.conditional(
            "update_item",
            TableName=self.table,
            Key={"pk": _s(f"key#{key_id}"), "sk": _s("-")},
            UpdateExpression=update,
            ConditionExpression="attribute_exists(pk) AND user_id = :u",
            ExpressionAttributeValues={":v": value, ":u": _s(user_id)},
            **extra,
        )
        if done is None:
            return False
        self.t.conditional(
            "update_item",
            TableName=self.table,
            Key={"pk": _s(f"user#{user_id}"), "sk": _s(key_id)},
            UpdateExpression=update,
            ConditionExpression="attribute_exists(pk)",
            ExpressionAttributeValues={":v": value},
            **extra,
        )
        return True


class DynamoConnections:
    def __init__(self, t: DynamoTables) -> None:
        self.t = t
        self.table = t.name("connections")

    @staticmethod
    def _conn(item: Item) -> Connection:
        return Connection(
            _get_s(item, "user_id"),
            _get_s(item, "integration"),
            bytes(item["credential"]["B"]),
            _get_s(item, "status"),
            _get_opt_n(item, "expires_at"),
            _get_n(item, "updated_at"),
            int(_get_n(item, "version")),
            _get_opt_n(item, "verified_at"),
            _get_s(item, "last_error", ""),
            _get_opt_n(item, "last_error_at"),
        )

    def get(self, user_id: str, integration: str) -> Connection | None:
        # Strongly consistent: a refresh on another instance must be seen before deciding to refresh.
        got = self.t.client.get_item(
            TableName=self.table,
            Key={"user_id": _s(user_id), "integration": _s(integration)},
            ConsistentRead=True,
        )
        item = got.get("Item")
        return self._conn(item) if item else None

    def list_for(self, user_id: str) -> list[Connection]:
        items = self.t.query(
            TableName=self.table,
            KeyConditionExpression="user_id = :u",
            ExpressionAttributeValues={":u": _s(user_id)},
            ConsistentRead=True,
        )
        return [self._conn(i) for i in items]  # sorted by integration: it is the sort key

    def put(self, conn: Connection, *, expected_version: int | None = None) -> bool:
        item: Item = {
            "user_id": _s(conn.user_id),
            "integration": _s(conn.integration),
            "credential": _b(conn.credential),
            "status": _s(conn.status),
            "updated_at": _n(conn.updated_at),
            "version": _n(conn.version),
        }
        if conn.expires_at is not None:
            item["expires_at"] = _n(conn.expires_at)
        if conn.verified_at is not None:
            item["verified_at"] = _n(conn.verified_at)
        if conn.last_error:
            item["last_error"] = _s(conn.last_error)
        if conn.last_error_at is not None:
            item["last_error_at"] = _n(conn.last_error_at)
        if expected_version is None:
            self.t.client.put_item(TableName=self.table, Item=item)
            return True
        if expected_version == 0:
            cond: dict[str, Any] = {"ConditionExpression": "attribute_not_exists(user_id)"}
        else:
            cond = {
                "ConditionExpression": "#v = :expected",
                "ExpressionAttributeNames": {"#v": "version"},
                "ExpressionAttributeValues": {":expected": _n(expected_version)},
            }
        return self.t.conditional("put_item", TableName=self.table, Item=item, **cond) is not None

    def delete(self, user_id: str, integration: str) -> bool:
        got = self.t.client.delete_item(
            TableName=self.table,
            Key={"user_id": _s(user_id), "integration": _s(integration)},
            ReturnValues="ALL_OLD",
        )
        return bool(got.get("Attributes"))


_PENDING_GRACE_SECONDS = 86_400


class DynamoPending:
    """Pending connects and provider OAuth states; both expire (TTL attribute `ttl`)."""

    def __init__(self, t: DynamoTables) -> None:
        self.t = t
        self.table = t.name("pending")

    def put(self, pending: PendingConnect) -> None:
        self.t.client.put_item(
            TableName=self.table,
            Item={
                "pk": _s(f"connect#{pending.id}"),
                "id": _s(pending.id),
                "user_id": _s(pending.user_id),
                "integration": _s(pending.integration),
                "auth_type": _s(pending.auth_type),
                "expires_at": _n(pending.expires_at),
                "status": _s(pending.status),
                "created_at": _n(pending.created_at),
                # A day of grace: until then a late wait_for_connection still hears EXPIRED, not unknown.
                "ttl": _ttl(pending.expires_at + _PENDING_GRACE_SECONDS),
            },
        )

    def get(self, connection_id: str, *, now: float) -> PendingConnect | None:
        from workbench.stores.flow_records import PendingConnect

        got = self.t.client.get_item(
            TableName=self.table, Key={"pk": _s(f"connect#{connection_id}")}, ConsistentRead=True
        )
        item = got.get("Item")
        if not item:
            return None
        expires_at = _get_n(item, "expires_at")
        return PendingConnect(
            id=_get_s(item, "id"),
            user_id=_get_s(item, "user_id"),
            integration=_get_s(item, "integration"),
            auth_type=_get_s(item, "auth_type"),
            expires_at=expires_at,
            status="EXPIRED" if expires_at <= now else _get_s(item, "status"),
            created_at=_get_n(item, "created_at"),
        )

    def mark_connected(self, connection_id: str) -> bool:
        done = self.t.conditional(
            "update_item",
            TableName=self.table,
            Key={"pk": _s(f"connect#{connection_id}")},
            UpdateExpression="SET #s = :c",
            ConditionExpression="attribute_exists(pk)",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={":c": _s("CONNECTED")},
        )
        return done is not None

    def delete(self, connection_id: str) -> None:
        self.t.client.delete_item(TableName=self.table, Key={"pk": _s(f"connect#{connection_id}")})

    def put_state(self, state: OAuthState) -> None:
        body = json.dumps({k: getattr(state, k) for k in state.__dataclass_fields__})
        self.t.client.put_item(
            TableName=self.table,
            Item={
                "pk": _s(f"state#{state.state}"),
                "body": _s(body),
                "expires_at": _n(state.expires_at),
                "ttl": _ttl(state.expires_at),
            },
        )

    def take_state(self, state: str, *, now: float) -> OAuthState | None:
        from workbench.stores.flow_records import OAuthState

        # One delete returning the old item: of two concurrent takes, exactly one sees it.
        got = self.t.client.delete_item(
            TableName=self.table, Key={"pk": _s(f"state#{state}")}, ReturnValues="ALL_OLD"
        )
        item = got.get("Attributes")
        if not item or _get_n(item, "expires_at") <= now:
            return None
        return OAuthState(**json.loads(_get_s(item, "body")))


class DynamoAudit:
    """Audit rows, one item each; a batch's rows go in BatchWriteItem calls of at most 25 items.

    What DynamoDB leaves unprocessed (throttling) is sent again with full-jitter backoff, for
    WRITE_ROUNDS rounds at most and never past the write's time (`audit_write_seconds`, 0.5 s by
    default: a request waits no longer for its audit rows); a whole call that fails for a transient
    reason counts as a round with nothing processed. Rows still not written then are raised back as
    AuditNotWritten, so the engine hands them to the audit queue instead of losing them.
    """

    BATCH_ITEMS = 25  # BatchWriteItem's limit
    WRITE_ROUNDS = 8
    BACKOFF_BASE = 0.05
    BACKOFF_CAP = 1.0
    # Query page size while filters skip events, and how many pages one activity call may read.
    PAGE_ITEMS = 200
    MAX_PAGES = 8

    def __init__(self, t: DynamoTables, *, sleep: Callable[[float], None] = time.sleep) -> None:
        self.t = t
        self.table = t.name("audit")
        self.retention_seconds = t.settings.audit_retention_days * 86_400
        self.write_seconds = t.settings.audit_write_seconds
        self._sleep = sleep

    def _item(self, event: dict[str, Any], written_ns: int) -> Item:
        ts = float(event.get("ts", time.time()))
        user_id = str(event.get("user") or "-")
        # Sort key: write time in ns plus a random suffix, so same-instant events never collide.
        seq = f"{written_ns:020d}#{token_hex(4)}"
        item: Item = {
            "user_id": _s(user_id),
            "seq": _s(seq),
            "ts": _n(ts),
            "body": _s(json.dumps(event, default=str)),
            "ttl": _ttl(ts + self.retention_seconds),
        }
        integration = event.get("integration")
        if isinstance(integration, str) and integration:
            # Sparse GSI key: the activity page's integration filter is a Query on it.
            item["user_integration"] = _s(f"{user_id}#{integration}")
        return item

    def append(self, event: dict[str, Any]) -> None:
        self.append_many([event])

    def append_many(self, events: Sequence[dict[str, Any]]) -> None:
        now = time.time_ns()
        # One nanosecond apart: a batch's rows keep their order under the user's partition.
        rows = [(self._item(e, now + i), e) for i, e in enumerate(events)]
        ends = time.monotonic() + self.write_seconds
        for start in range(0, len(rows), self.BATCH_ITEMS):
            if start and time.monotonic() >= ends:
                unwritten = [dict(e) for _, e in rows[start:]]
                raise AuditNotWritten(unwritten, f"out of time after {start} of {len(rows)} row(s)")
            left, cause = self._write(rows[start : start + self.BATCH_ITEMS], ends)
            if left:  # the store is refusing: the rest is handed back with this chunk's remainder
                unwritten = left + [dict(e) for _, e in rows[start + self.BATCH_ITEMS :]]
                raise AuditNotWritten(unwritten, cause)

    def _write(
        self, chunk: list[tuple[Item, dict[str, Any]]], ends: float
    ) -> tuple[list[dict[str, Any]], str]:
        """Write one chunk; (the events still not written, why) once the rounds or the time are spent."""
        by_seq = {_get_s(item, "seq"): (item, event) for item, event in chunk}
        waiting = list(by_seq)
        cause = ""
        for round_no in range(self.WRITE_ROUNDS):
            if round_no:
                delay = random.random() * min(self.BACKOFF_CAP, self.BACKOFF_BASE * 2**round_no)  # noqa: S311 - jitter
                if time.monotonic() + delay >= ends:
                    cause = f"{cause}; out of time" if cause else "out of time"
                    break
                self._sleep(delay)
            requests = [{"PutRequest": {"Item": by_seq[seq][0]}} for seq in waiting]
            try:
                answer = self.t.client.batch_write_item(RequestItems={self.table: requests})
            except Exception as exc:
                code = client_error_code(exc)
                cause = f"{code or type(exc).__name__}: {exc}"
                if code is not None and code not in _TRANSIENT:
                    break  # refused for good (permissions, validation): retrying cannot help
                continue
            unprocessed = answer.get("UnprocessedItems", {}).get(self.table, [])
            waiting = [_get_s(r["PutRequest"]["Item"], "seq") for r in unprocessed]
            if not waiting:
                return [], ""
            cause = f"{len(waiting)} item(s) still unprocessed after {round_no + 1} BatchWriteItem round(s)"
        return [dict(by_seq[seq][1]) for seq in waiting], cause

    def list_for(self, user_id: str, *, limit: int = 100) -> list[dict[str, Any]]:
        if limit <= 0:
            return []
        page = self.t.client.query(
            TableName=self.table,
            KeyConditionExpression="user_id = :u",
            ExpressionAttributeValues={":u": _s(user_id)},
            ScanIndexForward=False,
            Limit=limit,
        )
        return [json.loads(_get_s(i, "body")) for i in page.get("Items", [])]

    def activity(self, user_id: str, query: ActivityQuery) -> ActivityPage:
        """A Query on the user's partition (or, filtered by integration, on by_user_integration),
        newest first; never a Scan. The cursor is a sort key only: the partition is always the
        caller's user, so no cursor can reach another user's events."""
        from workbench.stores.flow_records import ActivityPage

        params: dict[str, Any] = {"TableName": self.table, "ScanIndexForward": False}
        if query.integration is not None:
            params["IndexName"] = "by_user_integration"
            condition = "user_integration = :p"
            values: Item = {":p": _s(f"{user_id}#{query.integration}")}
        else:
            condition = "user_id = :p"
            values = {":p": _s(user_id)}
        if query.cursor is not None and _AUDIT_SEQ.match(query.cursor):
            condition += " AND seq < :c"
            values[":c"] = _s(query.cursor)
        params.update(KeyConditionExpression=condition, ExpressionAttributeValues=values)
        unfiltered = query.action is None and query.success is None
        params["Limit"] = query.limit + 1 if unfiltered else self.PAGE_ITEMS
        found: list[tuple[str, dict[str, Any]]] = []
        for _ in range(self.MAX_PAGES):
            page = self.t.client.query(**params)
            for item in page.get("Items", []):
                event = json.loads(_get_s(item, "body"))
                if query.since is not None and float(event.get("ts") or 0) < query.since:
                    # Newest first by write time: everything after this is older too.
                    return ActivityPage([e for _, e in found])
                if query.matches(event):
                    found.append((_get_s(item, "seq"), event))
                    if len(found) > query.limit:  # one more than asked: there is a next page
                        return ActivityPage([e for _, e in found[:-1]], found[-2][0])
            last = page.get("LastEvaluatedKey")
            if not last:
                return ActivityPage([e for _, e in found])
            params["ExclusiveStartKey"] = last
        # Read budget spent on filtered-out events: resume after the last one read.
        return ActivityPage([e for _, e in found], _get_s(params["ExclusiveStartKey"], "seq"))


class DynamoVault:
    def __init__(self, t: DynamoTables) -> None:
        self.t = t
        self.table = t.name("vault")

    def put(self, user_id: str, name: str, blob: bytes) -> None:
        self.t.client.put_item(
            TableName=self.table, Item={"user_id": _s(user_id), "name": _s(name), "blob": _b(blob)}
        )

    def get(self, user_id: str, name: str) -> bytes | None:
        got = self.t.client.get_item(
            TableName=self.table, Key={"user_id": _s(user_id), "name": _s(name)}, ConsistentRead=True
        )
        item = got.get("Item")
        return bytes(item["blob"]["B"]) if item else None

    def delete(self, user_id: str, name: str) -> bool:
        got = self.t.client.delete_item(
            TableName=self.table, Key={"user_id": _s(user_id), "name": _s(name)}, ReturnValues="ALL_OLD"
        )
        return bool(got.get("Attributes"))

    def names(self, user_id: str) -> list[str]:
        items = self.t.query(
            TableName=self.table,
            KeyConditionExpression="user_id = :u",
            ExpressionAttributeValues={":u": _s(user_id)},
            ProjectionExpression="#n",
            ExpressionAttributeNames={"#n": "name"},
            ConsistentRead=True,
        )
        return [_get_s(i, "name") for i in items]


class DynamoJots:
    def __init__(self, t: DynamoTables) -> None:
        self.t = t
        self.table = t.name("jots")

    @staticmethod
    def _jot(item: Item) -> Jot:
        return Jot(
            _get_s(item, "id"),
            _get_s(item, "user_id"),
            _get_s(item, "title"),
            _get_s(item, "body"),
            _get_n(item, "created_at"),
            _get_n(item, "updated_at"),
            _get_opt_s(item, "share_token"),
        )

    @staticmethod
    def _item(jot: Jot) -> Item:
        item: Item = {
            "user_id": _s(jot.user_id),
            "id": _s(jot.id),
            "title": _s(jot.title),
            "body": _s(jot.body),
            "created_at": _n(jot.created_at),
            "updated_at": _n(jot.updated_at),
        }
        if jot.share_token:
            item["share_token"] = _s(jot.share_token)  # absent otherwise: the index stays sparse
        return item

    def put(self, jot: Jot) -> None:
        self.t.client.put_item(TableName=self.table, Item=self._item(jot))

    def put_if(self, jot: Jot, *, expected_updated_at: float) -> bool:
        return (
            self.t.conditional(
                "put_item",
                TableName=self.table,
                Item=self._item(jot),
                ConditionExpression="updated_at = :expected",
                ExpressionAttributeValues={":expected": _n(expected_updated_at)},
            )
            is not None
        )

    def get(self, user_id: str, jot_id: str) -> Jot | None:
        got = self.t.client.get_item(
            TableName=self.table, Key={"user_id": _s(user_id), "id": _s(jot_id)}, ConsistentRead=True
        )
        item = got.get("Item")
        return self._jot(item) if item else None

    def by_share_token(self, token: str) -> Jot | None:
        if not token:
            return None
        items = self.t.query(
            TableName=self.table,
            IndexName="by_share_token",
            KeyConditionExpression="share_token = :t",
            ExpressionAttributeValues={":t": _s(token)},
        )
        for item in items:
            # The index is eventually consistent: confirm against the table itself.
            current = self.get(_get_s(item, "user_id"), _get_s(item, "id"))
            if current is not None and current.share_token == token:
                return current
        return None

    def list_for(self, user_id: str) -> list[Jot]:
        items = self.t.query(
            TableName=self.table,
            KeyConditionExpression="user_id = :u",
            ExpressionAttributeValues={":u": _s(user_id)},
            ConsistentRead=True,
        )
        return sorted((self._jot(i) for i in items), key=lambda j: -j.updated_at)

    def delete(self, user_id: str, jot_id: str) -> bool:
        got = self.t.client.delete_item(
            TableName=self.table, Key={"user_id": _s(user_id), "id": _s(jot_id)}, ReturnValues="ALL_OLD"
        )
        return bool(got.get("Attributes"))


class DynamoExternalServers:
    """Custom apps' rows. A write to a user's partition is one TransactWriteItems: the write (with
    its condition) and the partition's new version (stores.version_row), so that no reader can
    find the old version beside the new rows (ExternalServerStore). IAM authorizes each part as its
    own action (PutItem, UpdateItem, DeleteItem): no other permission is needed."""

    # Two writes of one partition at the same moment: DynamoDB cancels one (TransactionConflict);
    # it is tried again, a few times, after a short random wait.
    CONFLICT_ATTEMPTS = 6
    CONFLICT_BACKOFF = 0.02

    def __init__(self, t: DynamoTables, *, sleep: Callable[[float], None] = time.sleep) -> None:
        self.t = t
        self.table = t.name("external_servers")
        self._sleep = sleep

    @staticmethod
    def _server(item: Item) -> ExternalServer:
        from workbench.stores.flow_records import ExternalServer

        return ExternalServer(
            user_id=_get_s(item, "user_id"),
            name=_get_s(item, "name"),
            tool_prefix=_get_s(item, "tool_prefix"),
            config=bytes(item["config"]["B"]),
            auth_type=_get_s(item, "auth_type"),
            header_name=_get_s(item, "header_name", ""),
            enabled=bool(item["enabled"]["BOOL"]),
            timeout_ms=int(_get_n(item, "timeout_ms")),
            status=_get_s(item, "status"),
            created_at=_get_n(item, "created_at"),
            updated_at=_get_n(item, "updated_at"),
            state=_get_s(item, "state", ""),
        )

    _PARTS: ClassVar[dict[str, str]] = {"put_item": "Put", "update_item": "Update", "delete_item": "Delete"}

    def _versioned(self, op: str, owner: str, **part: Any) -> bool:
        """One write (`op`: put_item, update_item or delete_item, with its own ConditionExpression
        if any) of `owner`'s partition, with the partition's new version in the same transaction.
        False, and nothing written, when the write's condition failed. (IAM authorizes each part of
        a transaction as its own action: `op`, and PutItem for the version.)"""
        from workbench.stores import version_row

        part["TableName"] = self.table
        version = version_row(owner)
        if version is None:  # the store's own partitions: the plain call
            return self.t.conditional(op, **part) is not None
        items = [{self._PARTS[op]: part}, {"Put": {"TableName": self.table, "Item": self._item(version)}}]
        for attempt in range(1, self.CONFLICT_ATTEMPTS + 1):
            try:
                # The token makes the client's own retry of this call (a dropped connection) the same
                # transaction, not a second one whose condition fails on the first one's write.
                self.t.client.transact_write_items(TransactItems=items, ClientRequestToken=token_hex(16))
            except Exception as exc:
                if client_error_code(exc) != "TransactionCanceledException":
                    raise
                reasons = [r.get("Code") for r in getattr(exc, "response", {}).get("CancellationReasons", [])]
                if reasons and reasons[0] == "ConditionalCheckFailed":
                    return False
                if "TransactionConflict" not in reasons or attempt == self.CONFLICT_ATTEMPTS:
                    raise
                self._sleep(random.random() * self.CONFLICT_BACKOFF * 2**attempt)  # noqa: S311 - jitter
                continue
            return True
        raise AssertionError("unreachable")  # pragma: no cover

    def put(self, server: ExternalServer) -> None:
        self._versioned("put_item", server.user_id, Item=self._item(server))

    def create(self, server: ExternalServer) -> bool:
        return self._versioned(
            "put_item",
            server.user_id,
            Item=self._item(server),
            ConditionExpression="attribute_not_exists(user_id)",
        )

    def put_if(self, server: ExternalServer, *, expected_updated_at: float) -> bool:
        return self._versioned(
            "put_item",
            server.user_id,
            Item=self._item(server),
            ConditionExpression="updated_at = :expected",  # false on a missing row too
            ExpressionAttributeValues={":expected": _n(expected_updated_at)},
        )

    @staticmethod
    def _item(server: ExternalServer) -> Item:
        return {
            "user_id": _s(server.user_id),
            "name": _s(server.name),
            "tool_prefix": _s(server.tool_prefix),
            "config": _b(server.config),
            "auth_type": _s(server.auth_type),
            "header_name": _s(server.header_name),
            "enabled": _bool(server.enabled),
            "timeout_ms": _n(server.timeout_ms),
            "status": _s(server.status),
            "created_at": _n(server.created_at),
            "updated_at": _n(server.updated_at),
            "state": _s(server.state),
        }

    def set_state(self, user_id: str, name: str, state: str) -> bool:
        return self._versioned(
            "update_item",
            user_id,
            Key={"user_id": _s(user_id), "name": _s(name)},
            UpdateExpression="SET #s = :s",
            ConditionExpression="attribute_exists(user_id)",
            ExpressionAttributeNames={"#s": "state"},
            ExpressionAttributeValues={":s": _s(state)},
        )

    def get(self, user_id: str, name: str) -> ExternalServer | None:
        got = self.t.client.get_item(
            TableName=self.table, Key={"user_id": _s(user_id), "name": _s(name)}, ConsistentRead=True
        )
        item = got.get("Item")
        return self._server(item) if item else None

    def list_for(self, user_id: str) -> list[ExternalServer]:
        from workbench.stores import PARTITION_VERSION

        items = self.t.query(
            TableName=self.table,
            KeyConditionExpression="user_id = :u",
            ExpressionAttributeValues={":u": _s(user_id)},
            ConsistentRead=True,
        )
        # Sorted by name: it is the sort key.
        return [self._server(i) for i in items if i["name"]["S"] != PARTITION_VERSION]

    def delete(self, user_id: str, name: str) -> bool:
        return self._versioned(
            "delete_item",
            user_id,
            Key={"user_id": _s(user_id), "name": _s(name)},
            ConditionExpression="attribute_exists(user_id)",
        )


# -- OAuth authorization server (one table, pk + sk) --------------------------------------------------
#
#   client        pk "client#<client_id>"          sk "-"       body (JSON)
#   code          pk "code#<code_hash>"            sk "-"       body, used (BOOL), ttl
#   code link     pk "codes#<user>#<client_id>"    sk <hash>    ttl            (delete_for)
#   token         pk "token#<token_hash>"          sk "-"       body, rotated (BOOL), ttl
#   family link   pk "family#<family_id>"          sk <hash>    ttl            (revoke_family)
#   user link     pk "tokens#<user>"               sk <hash>    client_id, ttl (list_for, delete_for)
#
# Links are strongly consistent (a Query on the base table, not a GSI), so revoking a family right
# after a rotation cannot miss the successor. Links are written before the record they point to;
# a link whose record is gone is skipped and removed. TTL keeps expired codes and tokens for a
# grace week, so a replay is still recognised (and its family revoked) after expiry.

_OAUTH_GRACE_SECONDS = 7 * 86_400
_ONE = {"sk": _s("-")}


def _record_body(record: Any, *, drop: str) -> str:
    fields = {k: getattr(record, k) for k in record.__dataclass_fields__ if k != drop}
    return json.dumps(fields, default=list)


class _OAuthTable:
    def __init__(self, t: DynamoTables) -> None:
        self.t = t
        self.table = t.name("oauth")

    def put(self, item: Item) -> None:
        self.t.client.put_item(TableName=self.table, Item=item)

    def get(self, pk: str) -> Item | None:
        got = self.t.client.get_item(TableName=self.table, Key={"pk": _s(pk), **_ONE}, ConsistentRead=True)
        item: Item | None = got.get("Item")
        return item

    def links(self, pk: str) -> list[Item]:
        return list(
            self.t.query(
                TableName=self.table,
                KeyConditionExpression="pk = :pk",
                ExpressionAttributeValues={":pk": _s(pk)},
                ConsistentRead=True,
            )
        )

    def has_links(self, pk: str) -> bool:
        got = self.t.client.query(
            TableName=self.table,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": _s(pk)},
            ConsistentRead=True,
            Limit=1,
            ProjectionExpression="pk",
        )
        return bool(got.get("Items"))

    def delete(self, pk: str, sk: str = "-") -> Item | None:
        got = self.t.client.delete_item(
            TableName=self.table, Key={"pk": _s(pk), "sk": _s(sk)}, ReturnValues="ALL_OLD"
        )
        old: Item | None = got.get("Attributes") or None
        return old

    def set_flag(self, pk: str, flag: str) -> Item | None:
        """Atomically set a BOOL flag on an existing record; the record as it was, or None."""
        got = self.t.conditional(
            "update_item",
            TableName=self.table,
            Key={"pk": _s(pk), **_ONE},
            UpdateExpression="SET #f = :t",
            ConditionExpression="attribute_exists(pk)",
            ExpressionAttributeNames={"#f": flag},
            ExpressionAttributeValues={":t": _bool(True)},
            ReturnValues="ALL_OLD",
        )
        old: Item | None = got.get("Attributes") if got else None
        return old


class DynamoOAuthClients:
    """A client item (`client#<id>`) and an index item under `clients` (what `count` queries).
    An unused client carries `expires_at` and the TTL attribute on both; `mark_used` removes
    them. TTL deletion is lazy, so reads and counts check `expires_at` themselves."""

    _INDEX = "clients"

    def __init__(self, t: DynamoTables) -> None:
        self.o = _OAuthTable(t)
        self.t = t

    def put(self, client: OAuthClient) -> None:
        body = {k: getattr(client, k) for k in client.__dataclass_fields__ if k != "expires_at"}
        expiry: Item = (
            {"expires_at": _n(client.expires_at), "ttl": _ttl(client.expires_at)}
            if client.expires_at is not None
            else {}
        )
        self.o.put(
            {
                "pk": _s(f"client#{client.client_id}"),
                **_ONE,
                "body": _s(json.dumps(body, default=list)),
                **expiry,
            }
        )
        self.o.put({"pk": _s(self._INDEX), "sk": _s(client.client_id), **expiry})

    def get(self, client_id: str, *, now: float | None = None) -> OAuthClient | None:
        from workbench.stores.flow_records import OAuthClient

        item = self.o.get(f"client#{client_id}")
        if item is None:
            return None
        expires_at = _get_n(item, "expires_at") if "expires_at" in item else None
        if expires_at is not None and expires_at <= (time.time() if now is None else now):
            return None  # expired unused; the TTL sweep has not removed it yet
        body = json.loads(_get_s(item, "body"))
        body["redirect_uris"] = tuple(body["redirect_uris"])
        body["grant_types"] = tuple(body["grant_types"])
        return OAuthClient(**body, expires_at=expires_at)

    def mark_used(self, client_id: str) -> None:
        for key in ({"pk": _s(f"client#{client_id}"), **_ONE}, {"pk": _s(self._INDEX), "sk": _s(client_id)}):
            self.t.conditional(
                "update_item",
                TableName=self.o.table,
                Key=key,
                UpdateExpression="REMOVE expires_at, #ttl",
                ConditionExpression="attribute_exists(pk)",
                ExpressionAttributeNames={"#ttl": "ttl"},
            )

    def count(self, now: float) -> int:
        kwargs: dict[str, Any] = {
            "TableName": self.o.table,
            "KeyConditionExpression": "pk = :pk",
            "FilterExpression": "attribute_not_exists(expires_at) OR expires_at > :now",
            "ExpressionAttributeValues": {":pk": _s(self._INDEX), ":now": _n(now)},
            "Select": "COUNT",
        }
        total = 0
        while True:
            page = self.t.client.query(**kwargs)
            total += int(page.get("Count", 0))
            if not page.get("LastEvaluatedKey"):
                return total
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def purge_expired(self, now: float) -> int:
        return 0  # the table's TTL removes them; reads and counts never see them meanwhile


class DynamoRateWindows:
    """One counter item per (key, window) in the OAuth table, incremented by a conditional
    ADD: every Lambda instance counts against the same number."""

    def __init__(self, t: DynamoTables) -> None:
        self.o = _OAuthTable(t)
        self.t = t

    def hit(self, key: str, window_start: int, limit: int, expires_at: float) -> bool:
        done = self.t.conditional(
            "update_item",
            TableName=self.o.table,
            Key={"pk": _s(f"rate#{key}#{window_start}"), **_ONE},
            UpdateExpression="ADD #c :one SET #ttl = :ttl",
            ConditionExpression="attribute_not_exists(#c) OR #c < :limit",
            ExpressionAttributeNames={"#c": "count", "#ttl": "ttl"},
            ExpressionAttributeValues={":one": _n(1), ":limit": _n(limit), ":ttl": _ttl(expires_at)},
        )
        return done is not None


class DynamoSessionRevocations:
    """One item per signed-out session in the OAuth table, removed by TTL after the session's expiry."""

    def __init__(self, t: DynamoTables) -> None:
        self.o = _OAuthTable(t)

    def revoke(self, session_hash: str, expires_at: float) -> None:
        self.o.put({"pk": _s(f"signout#{session_hash}"), **_ONE, "ttl": _ttl(expires_at)})

    def is_revoked(self, session_hash: str) -> bool:
        return self.o.get(f"signout#{session_hash}") is not None


class DynamoAuthorizationCodes:
    def __init__(self, t: DynamoTables) -> None:
        self.o = _OAuthTable(t)

    @staticmethod
    def _code(item: Item) -> AuthorizationCode:
        from workbench.stores.flow_records import AuthorizationCode

        body = json.loads(_get_s(item, "body"))
        return AuthorizationCode(**body, used=bool(item["used"]["BOOL"]))

    def put(self, code: AuthorizationCode) -> None:
        ttl = _ttl(code.expires_at + _OAUTH_GRACE_SECONDS)
        self.o.put({"pk": _s(f"codes#{code.user_id}#{code.client_id}"), "sk": _s(code.code_hash), "ttl": ttl})
        self.o.put(
            {
                "pk": _s(f"code#{code.code_hash}"),
                **_ONE,
                "body": _s(_record_body(code, drop="used")),
                "used": _bool(code.used),
                "ttl": ttl,
            }
        )

    def consume(self, code_hash: str) -> AuthorizationCode | None:
        old = self.o.set_flag(f"code#{code_hash}", "used")
        return self._code(old) if old else None

    def delete_for(self, user_id: str, client_id: str) -> int:
        link_pk = f"codes#{user_id}#{client_id}"
        deleted = 0
        for link in self.o.links(link_pk):
            code_hash = _get_s(link, "sk")
            if self.o.delete(f"code#{code_hash}") is not None:
                deleted += 1
            self.o.delete(link_pk, code_hash)
        return deleted


class DynamoRefreshTokens:
    def __init__(self, t: DynamoTables) -> None:
        self.o = _OAuthTable(t)

    @staticmethod
    def _token(item: Item) -> RefreshToken:
        from workbench.stores.flow_records import RefreshToken

        body = json.loads(_get_s(item, "body"))
        return RefreshToken(**body, rotated=bool(item["rotated"]["BOOL"]))

    def put(self, token: RefreshToken) -> None:
        ttl = _ttl(token.expires_at + _OAUTH_GRACE_SECONDS)
        self.o.put({"pk": _s(f"family#{token.family_id}"), "sk": _s(token.token_hash), "ttl": ttl})
        self.o.put(
            {
                "pk": _s(f"tokens#{token.user_id}"),
                "sk": _s(token.token_hash),
                "client_id": _s(token.client_id),
                "ttl": ttl,
            }
        )
        self.o.put(
            {
                "pk": _s(f"token#{token.token_hash}"),
                **_ONE,
                "body": _s(_record_body(token, drop="rotated")),
                "rotated": _bool(token.rotated),
                "ttl": ttl,
            }
        )

    def get(self, token_hash: str) -> RefreshToken | None:
        item = self.o.get(f"token#{token_hash}")
        return self._token(item) if item else None

    def rotate(self, token_hash: str) -> RefreshToken | None:
        old = self.o.set_flag(f"token#{token_hash}", "rotated")
        return self._token(old) if old else None

    def _delete_token(self, token_hash: str) -> RefreshToken | None:
        old = self.o.delete(f"token#{token_hash}")
        if old is None:
            return None
        token = self._token(old)
        self.o.delete(f"family#{token.family_id}", token_hash)
        self.o.delete(f"tokens#{token.user_id}", token_hash)
        return token

    def revoke_family(self, family_id: str) -> int:
        deleted = 0
        for link in self.o.links(f"family#{family_id}"):
            token_hash = _get_s(link, "sk")
            if self._delete_token(token_hash) is not None:
                deleted += 1
            self.o.delete(f"family#{family_id}", token_hash)
        return deleted

    def family_exists(self, family_id: str) -> bool:
        return self.o.has_links(f"family#{family_id}")

    def list_for(self, user_id: str) -> list[RefreshToken]:
        tokens = []
        for link in self.o.links(f"tokens#{user_id}"):
            token = self.get(_get_s(link, "sk"))
            if token is None:
                self.o.delete(f"tokens#{user_id}", _get_s(link, "sk"))  # a dangling link
            else:
                tokens.append(token)
        return sorted(tokens, key=lambda t: t.created_at)

    def delete_for(self, user_id: str, client_id: str) -> int:
        deleted = 0
        for link in self.o.links(f"tokens#{user_id}"):
            if _get_s(link, "client_id") != client_id:
                continue
            token_hash = _get_s(link, "sk")
            if self._delete_token(token_hash) is not None:
                deleted += 1
            self.o.delete(f"tokens#{user_id}", token_hash)
        return deleted

    def set_grant(self, user_id: str, client_id: str, grant: str) -> int:
        changed = 0
        for link in self.o.links(f"tokens#{user_id}"):
            if _get_s(link, "client_id") != client_id:
                continue
            token_hash = _get_s(link, "sk")
            item = self.o.get(f"token#{token_hash}")
            if item is None:
                continue
            body = json.loads(_get_s(item, "body"))
            body["grant"] = grant
            # Only the body changes: the token's rotated flag is set by its own conditional update.
            done = self.o.t.conditional(
                "update_item",
                TableName=self.o.table,
                Key={"pk": _s(f"token#{token_hash}"), **_ONE},
                UpdateExpression="SET body = :b",
                ConditionExpression="attribute_exists(pk)",
                ExpressionAttributeValues={":b": _s(json.dumps(body, separators=(",", ":")))},
            )
            changed += done is not None
        return changed


class DynamoApprovals:
    """One item per approval at (user_id, id). `status`, `decided_*` and `used_at` are attributes of
    their own (conditional updates move them); the rest is a JSON body. TTL deletes an item a day
    after it expired, so a late wait still reads EXPIRED."""

    _OWN = ("status", "decided_at", "decided_by", "used_at")

    def __init__(self, t: DynamoTables) -> None:
        self.t = t
        self.table = t.name("approvals")

    def _approval(self, item: Item, now: float) -> Approval:
        from workbench.stores.flow_records import Approval

        body = json.loads(_get_s(item, "body"))
        rec = Approval(
            **body,
            status=_get_s(item, "status"),
            decided_at=_get_opt_n(item, "decided_at"),
            decided_by=_get_s(item, "decided_by", ""),
            used_at=_get_opt_n(item, "used_at"),
        )
        return replace(rec, status="EXPIRED") if rec.expires_at <= now else rec

    def put(self, approval: Approval) -> None:
        body = {k: getattr(approval, k) for k in approval.__dataclass_fields__ if k not in self._OWN}
        item: Item = {
            "user_id": _s(approval.user_id),
            "id": _s(approval.id),
            "status": _s(approval.status),
            "expires_at": _n(approval.expires_at),
            "body": _s(json.dumps(body)),
            "ttl": _ttl(approval.expires_at + 86_400),
        }
        if approval.decided_at is not None:
            item["decided_at"] = _n(approval.decided_at)
            item["decided_by"] = _s(approval.decided_by)
        if approval.used_at is not None:
            item["used_at"] = _n(approval.used_at)
        self.t.client.put_item(TableName=self.table, Item=item)

    def get(self, user_id: str, approval_id: str, *, now: float) -> Approval | None:
        got = self.t.client.get_item(
            TableName=self.table, Key={"user_id": _s(user_id), "id": _s(approval_id)}, ConsistentRead=True
        )
        item = got.get("Item")
        return self._approval(item, now) if item else None

    def list_for(self, user_id: str, *, now: float) -> list[Approval]:
        items = self.t.query(
            TableName=self.table,
            KeyConditionExpression="user_id = :u",
            FilterExpression="expires_at > :now",
            ExpressionAttributeValues={":u": _s(user_id), ":now": _n(now)},
            ConsistentRead=True,
        )
        return sorted((self._approval(i, now) for i in items), key=lambda a: (-a.created_at, a.id))

    def decide(self, user_id: str, approval_id: str, status: str, by: str, *, now: float) -> Approval | None:
        done = self.t.conditional(
            "update_item",
            TableName=self.table,
            Key={"user_id": _s(user_id), "id": _s(approval_id)},
            UpdateExpression="SET #s = :s, decided_at = :now, decided_by = :by",
            ConditionExpression="#s = :pending AND expires_at > :now",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={
                ":s": _s(status),
                ":now": _n(now),
                ":by": _s(by),
                ":pending": _s("PENDING"),
            },
            ReturnValues="ALL_NEW",
        )
        return self._approval(done["Attributes"], now) if done is not None else None

    def use(self, user_id: str, approval_id: str, *, now: float) -> bool:
        done = self.t.conditional(
            "update_item",
            TableName=self.table,
            Key={"user_id": _s(user_id), "id": _s(approval_id)},
            UpdateExpression="SET #s = :used, used_at = :now",
            ConditionExpression="#s = :approved AND expires_at > :now",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={":used": _s("USED"), ":approved": _s("APPROVED"), ":now": _n(now)},
        )
        return done is not None


class DynamoBatchReads:
    """`Stores.read_together` as one BatchGetItem (strongly consistent on every table), with the
    keys DynamoDB leaves unprocessed asked for again, a few rounds with backoff."""

    ROUNDS = 4
    BACKOFF_BASE, BACKOFF_CAP = 0.02, 0.5

    def __init__(self, t: DynamoTables, *, sleep: Callable[[float], None] = time.sleep) -> None:
        self.t = t
        self._sleep = sleep

    # BatchGetItem takes at most 100 keys; a larger read is several calls, one after the other.
    MAX_KEYS = 100

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
        users, keys = self.t.name("users"), self.t.name("api_keys")
        conns, rows = self.t.name("connections"), self.t.name("external_servers")
        oauth = self.t.name("oauth")
        wanted: list[tuple[str, Item]] = []  # (table, key), each once: DynamoDB refuses duplicates
        if user_id is not None:
            wanted.append((users, {"pk": _s(f"user#{user_id}")}))
        if key_id is not None:
            wanted.append((keys, {"pk": _s(f"key#{key_id}"), "sk": _s("-")}))
        for holder, integration in dict.fromkeys([*([connection] if connection else []), *connections]):
            wanted.append((conns, {"user_id": _s(holder), "integration": _s(integration)}))
        for owner, name in dict.fromkeys(servers):
            wanted.append((rows, {"user_id": _s(owner), "name": _s(name)}))
        if refresh_token is not None:  # DynamoRefreshTokens' record of the token
            wanted.append((oauth, {"pk": _s(f"token#{refresh_token}"), **_ONE}))
        found: dict[str, list[Item]] = {}
        for at in range(0, len(wanted), self.MAX_KEYS):
            for table, items in self._get(wanted[at : at + self.MAX_KEYS]).items():
                found.setdefault(table, []).extend(items)
        user = next(iter(found.get(users, ())), None)
        api_key = next(iter(found.get(keys, ())), None)
        by_conn = {(_get_s(i, "user_id"), _get_s(i, "integration")): i for i in found.get(conns, ())}
        return Snapshot(
            DynamoUsers._user(user) if user else None,
            DynamoApiKeys._rec(api_key) if api_key else None,
            DynamoConnections._conn(by_conn[connection]) if connection in by_conn else None,
            {k: DynamoConnections._conn(i) for k, i in by_conn.items() if k in connections},
            {
                (_get_s(i, "user_id"), _get_s(i, "name")): DynamoExternalServers._server(i)
                for i in found.get(rows, ())
            },
            bool(found.get(oauth)) if refresh_token is not None else None,
        )

    def _get(self, wanted: list[tuple[str, Item]]) -> dict[str, list[Item]]:
        """The items found, by table; a key DynamoDB never processed raises."""
        found: dict[str, list[Item]] = {}
        waiting = list(wanted)
        for round_no in range(self.ROUNDS):
            if not waiting:
                return found
            if round_no:
                delay = min(self.BACKOFF_CAP, self.BACKOFF_BASE * 2**round_no)
                self._sleep(random.random() * delay)  # noqa: S311 - jitter, not a secret
            request: dict[str, dict[str, Any]] = {}
            for table, key in waiting:
                request.setdefault(table, {"Keys": [], "ConsistentRead": True})["Keys"].append(key)
            answer = self.t.client.batch_get_item(RequestItems=request)
            for table, items in answer.get("Responses", {}).items():
                found.setdefault(table, []).extend(items)
            unprocessed = answer.get("UnprocessedKeys") or {}
            waiting = [
                (table, key)
                for table, key in waiting
                if key in (unprocessed.get(table) or {}).get("Keys", [])
            ]
        if waiting:  # refused like a throttled GetItem, so callers need no new case
            from workbench.aws.client import AwsError

            message = f"{len(waiting)} key(s) still unprocessed after {self.ROUNDS} rounds"
            raise AwsError("BatchGetItem", 400, "ProvisionedThroughputExceededException", message, {})
        return found


class DynamoSchema:
    """The schema version: one item of the users table (pk "meta#schema"), moved forward by a
    conditional write, so two runners never both apply a step."""

    _KEY: ClassVar[Item] = {"pk": _s("meta#schema")}

    def __init__(self, t: DynamoTables) -> None:
        self.t = t
        self.table = t.name("users")

    def version(self) -> int:
        got = self.t.client.get_item(TableName=self.table, Key=self._KEY, ConsistentRead=True)
        item = got.get("Item")
        return int(_get_n(item, "version")) if item else 0

    def advance(self, current: int, to: int) -> bool:
        if current == 0:
            cond: dict[str, Any] = {"ConditionExpression": "attribute_not_exists(pk) OR version = :c"}
        else:
            cond = {"ConditionExpression": "version = :c"}
        done = self.t.conditional(
            "put_item",
            TableName=self.table,
            Item={**self._KEY, "version": _n(to), "at": _n(time.time())},
            ExpressionAttributeValues={":c": _n(current)},
            **cond,
        )
        return done is not None


def dynamodb_stores(settings: Settings, *, client: Any | None = None) -> Stores:
    """Every store over DynamoDB; one (lazily created) client shared by all of them."""
    tables = DynamoTables(settings, client)
    return Stores(
        users=DynamoUsers(tables),
        api_keys=DynamoApiKeys(tables),
        connections=DynamoConnections(tables),
        pending=DynamoPending(tables),
        audit=DynamoAudit(tables),
        vault=DynamoVault(tables),
        jots=DynamoJots(tables),
        external_servers=DynamoExternalServers(tables),
        oauth_clients=DynamoOAuthClients(tables),
        oauth_codes=DynamoAuthorizationCodes(tables),
        oauth_refresh=DynamoRefreshTokens(tables),
        oauth_rates=DynamoRateWindows(tables),
        batch_reads=DynamoBatchReads(tables),
        session_revocations=DynamoSessionRevocations(tables),
        schema=DynamoSchema(tables),
        approvals=DynamoApprovals(tables),
    )


def dynamodb_tables(stores: Stores) -> DynamoTables | None:
    """The tables (and their one client) behind stores built by `dynamodb_stores`; None for another
    backend. The signing keys share that client instead of opening a second one."""
    users = stores.users
    return users.t if isinstance(users, DynamoUsers) else None
