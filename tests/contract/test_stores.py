"""The store contract: every adapter must behave exactly like this (see stores/__init__.py)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from workbench.stores import (
    ActivityQuery,
    ApiKeyRecord,
    Connection,
    ExternalServer,
    Jot,
    OAuthState,
    PendingConnect,
    Stores,
)
from workbench.stores.dynamodb import dynamodb_tables

NOW = 1_800_000_000.0


def _race(n: int, fn: Callable[[int], Any]) -> list[Any]:
    """Run fn(i) in n threads released together; return their results."""
    barrier = threading.Barrier(n)
    results: list[Any] = [None] * n
    errors: list[BaseException] = []

    def run(i: int) -> None:
        barrier.wait()
        try:
            results[i] = fn(i)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors, errors
    return results


# -- users -------------------------------------------------------------------------------------------


def test_users_get_or_create_is_idempotent_and_case_insensitive(stores: Stores) -> None:
    ada = stores.users.get_or_create("Ada@Example.com ")
    assert ada.email == "ada@example.com"
    assert ada.id.startswith("usr_")
    assert stores.users.get_or_create("ada@example.com") == ada
    assert stores.users.by_email("ADA@example.com") == ada
    assert stores.users.get(ada.id) == ada
    assert stores.users.get("usr_missing") is None
    assert stores.users.by_email("bob@example.com") is None
    bob = stores.users.get_or_create("bob@example.com")
    assert bob.id != ada.id


def test_users_concurrent_get_or_create_yields_one_user(stores: Stores) -> None:
    users = _race(6, lambda _: stores.users.get_or_create("race@example.com"))
    assert len({u.id for u in users}) == 1
    assert stores.users.get(users[0].id) == users[0]


# -- API keys ----------------------------------------------------------------------------------------


def test_api_keys_add_get_list_revoke(stores: Stores) -> None:
    k1 = ApiKeyRecord("AAAAAAAAAAA1", "usr_a", "h1", NOW, False, "laptop")
    k2 = ApiKeyRecord("AAAAAAAAAAA2", "usr_a", "h2", NOW + 1)
    other = ApiKeyRecord("BBBBBBBBBBB1", "usr_b", "h3", NOW + 2)
    for k in (k2, other, k1):
        stores.api_keys.add(k)
    assert stores.api_keys.get("AAAAAAAAAAA1") == k1
    assert stores.api_keys.get("nope") is None
    assert stores.api_keys.list_for("usr_a") == [k1, k2]
    assert stores.api_keys.list_for("usr_nobody") == []
    # Another user's key cannot be revoked (and looks like an unknown one).
    assert stores.api_keys.revoke("usr_a", "BBBBBBBBBBB1") is False
    assert stores.api_keys.get("BBBBBBBBBBB1") == other
    assert stores.api_keys.revoke("usr_a", "missing") is False
    assert stores.api_keys.revoke("usr_a", "AAAAAAAAAAA1") is True
    got = stores.api_keys.get("AAAAAAAAAAA1")
    assert got == replace(k1, revoked=True)
    assert stores.api_keys.list_for("usr_a") == [replace(k1, revoked=True), k2]
    assert stores.api_keys.list_for("usr_b") == [other]


# -- several aggregates in one round trip -----------------------------------------------------------


def test_read_together_answers_what_each_get_answers(stores: Stores) -> None:
    ada = stores.users.get_or_create("ada@example.com")
    key = ApiKeyRecord("AAAAAAAAAAA1", ada.id, "h1", NOW, False, "laptop")
    stores.api_keys.add(key)
    conn = _conn(user=ada.id, expires_at=NOW + 60.5)
    stores.connections.put(conn)
    both = stores.read_together(user_id=ada.id, key_id=key.key_id, connection=(ada.id, "github"))
    assert (both.user, both.api_key, both.connection) == (ada, key, conn)
    # Absent records, and records not asked for, are None; another user's connection is absent.
    none = stores.read_together(user_id="usr_missing", key_id="nope", connection=("usr_b", "github"))
    assert (none.user, none.api_key, none.connection) == (None, None, None)
    only = stores.read_together(key_id=key.key_id)
    assert (only.user, only.api_key, only.connection) == (None, key, None)
    empty = stores.read_together()
    assert (empty.user, empty.api_key, empty.connection) == (None, None, None)
    # Strongly consistent like each get: a revocation just made is what the next read sees.
    assert stores.api_keys.revoke(ada.id, key.key_id) is True
    after = stores.read_together(user_id=ada.id, key_id=key.key_id)
    assert after.api_key == replace(key, revoked=True) and after.user == ada


@pytest.mark.transactions
def test_read_together_reads_many_connections_and_server_rows_by_key(stores: Stores) -> None:
    """The keys a search needs (connections of several integrations, a user's settings row, the
    operator's clear stamp), in one read: each row found is what its own `get` answers, a key with
    no row is left out, another user's rows are never answered for this user's keys."""
    ada, bob = "usr_ada", "usr_bob"
    github = _conn(user=ada, integration="github", expires_at=NOW + 60.5)
    linear = _conn(user=ada, integration="linear")
    theirs = _conn(user=bob, integration="notion")
    for conn in (github, linear, theirs):
        stores.connections.put(conn)
    settings = ExternalServer(ada, "#settings", "", b"\x00cfg", created_at=NOW, updated_at=NOW + 1.25)
    epoch = ExternalServer("#operator", "#epoch", "", b"e", created_at=NOW, updated_at=NOW + 2)
    app = ExternalServer(bob, "acme", "acme_", b"\x01", auth_type="oauth", status="reconnect_required")
    for row in (settings, epoch, app):
        stores.external_servers.put(row)
    wanted = [(ada, "github"), (ada, "linear"), (ada, "notion"), (ada, "github")]  # a key twice
    got = stores.read_together(
        user_id=ada,
        connections=wanted,
        servers=[(ada, "#settings"), ("#operator", "#epoch"), (ada, "acme"), ("#workspace", "x")],
    )
    assert got.user is None and got.api_key is None and got.connection is None
    assert got.connections == {(ada, "github"): github, (ada, "linear"): linear}
    assert got.connections == {k: stores.connections.get(*k) for k in got.connections}
    assert got.servers == {(ada, "#settings"): settings, ("#operator", "#epoch"): epoch}
    assert got.servers == {k: stores.external_servers.get(*k) for k in got.servers}
    # The single connection and the list may name the same key.
    one = stores.read_together(connection=(ada, "github"), connections=[(ada, "github")])
    assert one.connection == github and one.connections == {(ada, "github"): github}
    # More keys than one DynamoDB batch holds (100): every one is still answered.
    many = [(ada, f"tool{i:03d}") for i in range(130)]
    for user, integration in many[::7]:
        stores.connections.put(_conn(user=user, integration=integration))
    big = stores.read_together(connections=many, servers=[(bob, "acme")])
    assert sorted(big.connections) == many[::7] and big.servers == {(bob, "acme"): app}
    # Strongly consistent: a change just made is what the next read sees.
    stores.external_servers.put(replace(epoch, updated_at=NOW + 3))
    stores.connections.delete(ada, "linear")
    after = stores.read_together(connections=wanted, servers=[("#operator", "#epoch")])
    assert after.servers[("#operator", "#epoch")].updated_at == NOW + 3
    assert set(after.connections) == {(ada, "github")}
    assert stores.read_together().connections == {} and stores.read_together().servers == {}


def test_api_key_grant_is_stored_with_the_key_and_changed_by_its_user_only(stores: Stores) -> None:
    grant = '{"access":"read-only","deniedTools":[],"integrations":["github"]}'
    key = ApiKeyRecord("GGGGGGGGGGG1", "usr_a", "h1", NOW, False, "ro", grant)
    plain = ApiKeyRecord("GGGGGGGGGGG2", "usr_a", "h2", NOW + 1)
    stores.api_keys.add(key)
    stores.api_keys.add(plain)
    assert stores.api_keys.get("GGGGGGGGGGG1") == key
    assert stores.api_keys.get("GGGGGGGGGGG2").grant == ""  # type: ignore[union-attr]  # full access
    assert stores.api_keys.set_grant("usr_b", "GGGGGGGGGGG1", "{}") is False  # another user's key
    assert stores.api_keys.set_grant("usr_a", "missing", "{}") is False
    assert stores.api_keys.get("GGGGGGGGGGG1") == key
    changed = '{"access":"approve","deniedTools":[],"integrations":"all"}'
    assert stores.api_keys.set_grant("usr_a", "GGGGGGGGGGG1", changed) is True
    assert stores.api_keys.get("GGGGGGGGGGG1") == replace(key, grant=changed)
    assert stores.api_keys.list_for("usr_a") == [replace(key, grant=changed), plain]


# -- connections -------------------------------------------------------------------------------------


def _conn(user: str = "usr_a", integration: str = "github", version: int = 1, **kw: Any) -> Connection:
    base = Connection(user, integration, b"\x01\x00blob\xff", "connected", None, NOW, version)
    return replace(base, **kw)


def test_connections_roundtrip_and_isolation(stores: Stores) -> None:
    c = _conn(expires_at=NOW + 3600.5)
    assert stores.connections.put(c) is True
    assert stores.connections.get("usr_a", "github") == c
    assert stores.connections.get("usr_b", "github") is None
    stores.connections.put(_conn(integration="atlassian"))
    stores.connections.put(_conn(user="usr_b"))
    assert [x.integration for x in stores.connections.list_for("usr_a")] == ["atlassian", "github"]
    assert [x.user_id for x in stores.connections.list_for("usr_b")] == ["usr_b"]
    assert stores.connections.delete("usr_a", "github") is True
    assert stores.connections.delete("usr_a", "github") is False
    assert stores.connections.get("usr_a", "github") is None
    assert stores.connections.get("usr_b", "github") is not None


def test_connections_conditional_put(stores: Stores) -> None:
    first = _conn(version=1)
    assert stores.connections.put(first, expected_version=0) is True
    assert stores.connections.put(replace(first, version=2), expected_version=0) is False  # exists now
    assert stores.connections.put(replace(first, version=2, status="x"), expected_version=5) is False
    assert stores.connections.get("usr_a", "github") == first  # nothing half-written
    second = replace(first, version=2, credential=b"new", expires_at=None)
    assert stores.connections.put(second, expected_version=1) is True
    assert stores.connections.get("usr_a", "github") == second


def test_connection_verification_and_last_error_roundtrip(stores: Stores) -> None:
    """The fields the portal shows per connection: when it was verified, its last error and when."""
    checked = _conn(verified_at=NOW - 60.25)
    assert checked.last_error == "" and checked.last_error_at is None
    stores.connections.put(checked)
    assert stores.connections.get("usr_a", "github") == checked
    failing = replace(
        checked,
        version=2,
        status="reconnect_required",
        last_error="the provider refused the refresh (invalid_grant) — «é»",
        last_error_at=NOW + 0.5,
    )
    assert stores.connections.put(failing, expected_version=1) is True
    assert stores.connections.get("usr_a", "github") == failing
    assert stores.connections.list_for("usr_a") == [failing]
    # A new credential clears them again (nothing of the old row survives a plain put).
    fresh = _conn(version=3)
    stores.connections.put(fresh)
    assert stores.connections.get("usr_a", "github") == fresh


def test_connections_racing_refreshes_have_one_winner(stores: Stores) -> None:
    stores.connections.put(_conn(version=3))
    wins = _race(
        5,
        lambda i: stores.connections.put(_conn(version=4, credential=b"w%d" % i), expected_version=3),
    )
    assert wins.count(True) == 1
    stored = stores.connections.get("usr_a", "github")
    assert stored is not None and stored.credential == b"w%d" % wins.index(True)


# -- pending connects and OAuth states ------------------------------------------------------------------


def _pending(**kw: Any) -> PendingConnect:
    base = PendingConnect("conn_1", "usr_a", "github", "oauth2", NOW + 600, "PENDING", NOW)
    return replace(base, **kw)


def test_pending_get_checks_expiry_itself(stores: Stores) -> None:
    stores.pending.put(_pending())
    assert stores.pending.get("conn_1", now=NOW) == _pending()
    assert stores.pending.get("conn_1", now=NOW + 599.9) == _pending()
    assert stores.pending.get("conn_1", now=NOW + 600) == _pending(status="EXPIRED")
    assert stores.pending.get("conn_missing", now=NOW) is None


def test_pending_mark_connected_and_delete(stores: Stores) -> None:
    stores.pending.put(_pending())
    assert stores.pending.mark_connected("conn_1") is True
    assert stores.pending.get("conn_1", now=NOW).status == "CONNECTED"  # type: ignore[union-attr]
    assert stores.pending.mark_connected("conn_unknown") is False
    assert stores.pending.get("conn_unknown", now=NOW) is None  # not created by the failed update
    stores.pending.delete("conn_1")
    assert stores.pending.get("conn_1", now=NOW) is None
    stores.pending.delete("conn_1")  # deleting twice is fine


def _state(state: str = "st_1", expires_at: float = NOW + 600) -> OAuthState:
    return OAuthState(state, "usr_a", "github", "conn_1", "verifier-xyz", "https://gw/cb", expires_at)


def test_take_state_is_single_use(stores: Stores) -> None:
    stores.pending.put_state(_state())
    assert stores.pending.take_state("st_1", now=NOW) == _state()
    assert stores.pending.take_state("st_1", now=NOW) is None
    assert stores.pending.take_state("st_never", now=NOW) is None


def test_state_keeps_the_chosen_login_host(stores: Stores) -> None:
    chosen = replace(_state("st_sf"), integration="salesforce", login_host="acme.my.salesforce.com")
    stores.pending.put_state(chosen)
    assert stores.pending.take_state("st_sf", now=NOW) == chosen


def test_take_state_after_expiry_is_none_and_consumed(stores: Stores) -> None:
    stores.pending.put_state(_state("st_old", expires_at=NOW - 1))
    assert stores.pending.take_state("st_old", now=NOW) is None
    assert stores.pending.take_state("st_old", now=NOW - 100) is None


def test_concurrent_take_state_has_one_winner(stores: Stores) -> None:
    stores.pending.put_state(_state("st_race"))
    got = _race(5, lambda _: stores.pending.take_state("st_race", now=NOW))
    assert sum(1 for g in got if g is not None) == 1


# -- audit ---------------------------------------------------------------------------------------------


def test_audit_newest_first_per_user(stores: Stores) -> None:
    for i in range(5):
        stores.audit.append({"user": "usr_a", "ts": NOW + i, "tool": f"t{i}", "success": True})
    stores.audit.append({"user": "usr_b", "ts": NOW, "tool": "secret", "success": False})
    mine = stores.audit.list_for("usr_a")
    assert [e["tool"] for e in mine] == ["t4", "t3", "t2", "t1", "t0"]
    assert mine[0] == {"user": "usr_a", "ts": NOW + 4, "tool": "t4", "success": True}
    assert [e["tool"] for e in stores.audit.list_for("usr_a", limit=2)] == ["t4", "t3"]
    assert [e["tool"] for e in stores.audit.list_for("usr_b")] == ["secret"]
    assert stores.audit.list_for("usr_c") == []


def _executions(
    stores: Stores, user: str, n: int, *, integration: str = "github", start: float = NOW
) -> None:
    for i in range(n):
        stores.audit.append(
            {
                "action": "EXECUTE",
                "user": user,
                "tool": f"{integration}_t{i}",
                "integration": integration,
                "success": i % 3 != 0,
                "error": None if i % 3 else "boom",
                "duration_ms": 1.5,
                "ts": start + i,
                "via": "api_key",
            }
        )


def _all_pages(stores: Stores, user: str, query: ActivityQuery) -> tuple[list[dict[str, Any]], int]:
    events: list[dict[str, Any]] = []
    pages = 0
    cursor = None
    while True:
        page = stores.audit.activity(user, replace(query, cursor=cursor))
        pages += 1
        events.extend(page.events)
        if page.next_cursor is None:
            return events, pages
        assert len(page.events) == query.limit  # a cursor only after a full page
        cursor = page.next_cursor
        assert pages < 50


def test_activity_pages_newest_first_with_filters_and_only_the_users_own(stores: Stores) -> None:
    _executions(stores, "usr_a", 7, integration="github")
    _executions(stores, "usr_a", 5, integration="slack", start=NOW + 100)
    stores.audit.append({"action": "CURL_SESSION", "user": "usr_a", "ts": NOW + 200, "success": True})
    _executions(stores, "usr_b", 4, integration="github", start=NOW + 300)  # someone else's, newer

    everything, pages = _all_pages(stores, "usr_a", ActivityQuery(limit=5))
    assert [e["ts"] for e in everything] == sorted((e["ts"] for e in everything), reverse=True)
    assert len(everything) == 12 and pages == 3  # 5 + 5 + 2; the CURL_SESSION event is not an execution
    assert {e["user"] for e in everything} == {"usr_a"}
    assert everything[0] == {
        "action": "EXECUTE",
        "user": "usr_a",
        "tool": "slack_t4",
        "integration": "slack",
        "success": True,
        "error": None,
        "duration_ms": 1.5,
        "ts": NOW + 104,
        "via": "api_key",
    }

    github, _ = _all_pages(stores, "usr_a", ActivityQuery(integration="github", limit=3))
    assert [e["tool"] for e in github] == [f"github_t{i}" for i in range(6, -1, -1)]
    failed, _ = _all_pages(stores, "usr_a", ActivityQuery(success=False, limit=2))
    assert [e["tool"] for e in failed] == ["slack_t3", "slack_t0", "github_t6", "github_t3", "github_t0"]
    both, _ = _all_pages(stores, "usr_a", ActivityQuery(integration="slack", success=True, limit=10))
    assert [e["tool"] for e in both] == ["slack_t4", "slack_t2", "slack_t1"]
    recent, _ = _all_pages(stores, "usr_a", ActivityQuery(since=NOW + 102, limit=10))
    assert [e["tool"] for e in recent] == ["slack_t4", "slack_t3", "slack_t2"]
    anything, _ = _all_pages(stores, "usr_a", ActivityQuery(action=None, limit=4))
    assert len(anything) == 13

    # exactly one page when it fits; nothing for a stranger; a cursor never crosses users
    one = stores.audit.activity("usr_a", ActivityQuery(limit=12))
    assert len(one.events) == 12 and one.next_cursor is None
    assert stores.audit.activity("usr_c", ActivityQuery()).events == []
    a_cursor = stores.audit.activity("usr_a", ActivityQuery(limit=1)).next_cursor
    assert a_cursor is not None
    from_b = stores.audit.activity("usr_b", ActivityQuery(cursor=a_cursor, limit=10))
    assert {e["user"] for e in from_b.events} <= {"usr_b"}
    assert stores.audit.activity("usr_a", ActivityQuery(integration="nope")).events == []
    # a garbled cursor starts from the newest instead of failing or leaking
    assert (
        stores.audit.activity("usr_a", ActivityQuery(cursor="../x", limit=1)).events[0]["tool"] == "slack_t4"
    )


def test_audit_append_many_writes_every_row_in_order(stores: Stores) -> None:
    """A batch's rows in one write: all of them stored (more than one BatchWriteItem's 25), in the
    order given, each user's under that user only, and the event bodies exactly as written."""
    batch = [
        {"user": "usr_a" if i % 3 else "usr_b", "ts": NOW + i, "tool": f"t{i}", "success": i % 2 == 0}
        for i in range(60)
    ]
    stores.audit.append_many(batch)
    stores.audit.append({"user": "usr_a", "ts": NOW + 100, "tool": "later", "success": True})
    stores.audit.append_many([])  # nothing to write is no error
    mine = stores.audit.list_for("usr_a", limit=1000)
    assert mine[0]["tool"] == "later"
    assert mine[1:] == list(reversed([e for e in batch if e["user"] == "usr_a"]))
    assert stores.audit.list_for("usr_b", limit=1000) == list(
        reversed([e for e in batch if e["user"] == "usr_b"])
    )
    # Rows of a batch are found by the activity page's integration filter like single ones.
    stores.audit.append_many(
        [
            {"action": "EXECUTE", "user": "usr_c", "ts": NOW + i, "integration": "slack", "success": True}
            for i in range(3)
        ]
    )
    page = stores.audit.activity("usr_c", ActivityQuery(integration="slack"))
    assert [e["ts"] for e in page.events] == [NOW + 2, NOW + 1, NOW]


# -- vault ---------------------------------------------------------------------------------------------


def test_vault_roundtrip(stores: Stores) -> None:
    stores.vault.put("usr_a", "TOKEN", b"\x00one")
    stores.vault.put("usr_a", "API_KEY", b"two")
    stores.vault.put("usr_b", "TOKEN", b"theirs")
    assert stores.vault.get("usr_a", "TOKEN") == b"\x00one"
    stores.vault.put("usr_a", "TOKEN", b"replaced")
    assert stores.vault.get("usr_a", "TOKEN") == b"replaced"
    assert stores.vault.names("usr_a") == ["API_KEY", "TOKEN"]
    assert stores.vault.get("usr_a", "MISSING") is None
    assert stores.vault.delete("usr_a", "TOKEN") is True
    assert stores.vault.delete("usr_a", "TOKEN") is False
    assert stores.vault.names("usr_a") == ["API_KEY"]
    assert stores.vault.get("usr_b", "TOKEN") == b"theirs"


# -- jots ----------------------------------------------------------------------------------------------


def test_jots_roundtrip_share_and_isolation(stores: Stores) -> None:
    older = Jot("jot_1", "usr_a", "Plan", "# body", NOW, NOW)
    newer = Jot("jot_2", "usr_a", "Later", "text", NOW, NOW + 10, "share_abc")
    theirs = Jot("jot_3", "usr_b", "Theirs", "b", NOW, NOW + 5)
    for j in (older, newer, theirs):
        stores.jots.put(j)
    assert stores.jots.get("usr_a", "jot_1") == older
    assert stores.jots.get("usr_a", "jot_3") is None  # another user's jot does not exist for me
    assert stores.jots.list_for("usr_a") == [newer, older]
    assert stores.jots.by_share_token("share_abc") == newer
    assert stores.jots.by_share_token("share_nope") is None
    unshared = replace(newer, share_token=None, updated_at=NOW + 20)
    stores.jots.put(unshared)
    assert stores.jots.by_share_token("share_abc") is None
    assert stores.jots.get("usr_a", "jot_2") == unshared
    assert stores.jots.delete("usr_a", "jot_3") is False
    assert stores.jots.get("usr_b", "jot_3") == theirs
    assert stores.jots.delete("usr_a", "jot_1") is True
    assert stores.jots.delete("usr_a", "jot_1") is False
    assert stores.jots.list_for("usr_a") == [unshared]


def test_every_port_is_present(stores: Stores) -> None:
    """A port added to Stores without an adapter here shows up as None."""
    for name in Stores.__dataclass_fields__:
        if name != "extra":
            assert getattr(stores, name) is not None, f"{name} has no adapter"


def test_time_is_not_cached(stores: Stores) -> None:
    """Reads take `now` from the caller: the same record flips to EXPIRED without being rewritten."""
    now = time.time()
    stores.pending.put(_pending(id="conn_t", expires_at=now + 0.2, created_at=now))
    assert stores.pending.get("conn_t", now=now).status == "PENDING"  # type: ignore[union-attr]
    assert stores.pending.get("conn_t", now=now + 0.3).status == "EXPIRED"  # type: ignore[union-attr]


# -- external MCP servers (custom apps) ------------------------------------------------------------------


@pytest.mark.transactions
def test_external_servers_roundtrip_and_isolation(stores: Stores) -> None:
    from workbench.stores import ExternalServer

    servers = stores.external_servers
    assert servers is not None
    linear = ExternalServer("usr_a", "linear", "lin", b"\x00cfg", "bearer", "", True, 15_000, "ok", NOW, NOW)
    acme = ExternalServer(
        "usr_a", "acme", "acme", b"cfg2", "header", "X-Api-Key", False, 30_000, "ok", NOW, NOW
    )
    theirs = replace(linear, user_id="usr_b", config=b"theirs")
    for s in (linear, acme, theirs):
        servers.put(s)
    assert servers.get("usr_a", "linear") == linear
    assert servers.get("usr_a", "nope") is None
    assert servers.list_for("usr_a") == [acme, linear]
    flagged = replace(linear, status="reconnect_required", updated_at=NOW + 5)
    servers.put(flagged)
    assert servers.get("usr_a", "linear") == flagged
    assert servers.delete("usr_a", "linear") is True
    assert servers.delete("usr_a", "linear") is False
    assert servers.list_for("usr_a") == [acme]
    assert servers.get("usr_b", "linear") == theirs


@pytest.mark.transactions
def test_external_server_create_writes_only_a_new_key(stores: Stores) -> None:
    """create() is the claim a workspace code rests on: the first writer of a key wins, a second gets
    False and changes nothing, and the same name under another partition is a different key."""
    from workbench.stores import ExternalServer

    servers = stores.external_servers
    assert servers is not None
    first = ExternalServer("#workspace", "team-a", "", b"", created_at=NOW, updated_at=NOW, state="usr_a")
    assert servers.create(first) is True
    assert servers.create(replace(first, state="usr_b", updated_at=NOW + 1)) is False
    assert servers.get("#workspace", "team-a") == first
    assert servers.create(replace(first, user_id="usr_b")) is True
    assert servers.delete("#workspace", "team-a") is True
    assert servers.create(replace(first, state="usr_b")) is True  # released, then claimed by another
    assert servers.get("#workspace", "team-a").state == "usr_b"  # type: ignore[union-attr]


@pytest.mark.transactions
def test_external_server_state_is_written_alone_and_never_resurrects(stores: Stores) -> None:
    from workbench.stores import ExternalServer

    servers = stores.external_servers
    assert servers is not None
    app = ExternalServer("usr_a", "acme", "acme_", b"cfg", updated_at=NOW)
    servers.put(app)
    assert servers.get("usr_a", "acme").state == ""  # type: ignore[union-attr]
    assert servers.set_state("usr_a", "acme", '{"tools": ["acme_x"]}') is True
    # A newer registration written meanwhile keeps its own fields; only the state changes.
    servers.put(replace(app, config=b"new", updated_at=NOW + 1, state='{"tools": ["acme_x"]}'))
    assert servers.set_state("usr_a", "acme", '{"error": "down"}') is True
    got = servers.get("usr_a", "acme")
    assert got == replace(app, config=b"new", updated_at=NOW + 1, state='{"error": "down"}')
    # A discovery finishing after the app was removed writes nothing.
    assert servers.delete("usr_a", "acme") is True
    assert servers.set_state("usr_a", "acme", '{"tools": []}') is False
    assert servers.get("usr_a", "acme") is None
    assert servers.set_state("usr_b", "never", "{}") is False and servers.list_for("usr_b") == []


@pytest.mark.transactions
def test_every_write_of_a_users_partition_gives_it_a_new_version(stores: Stores) -> None:
    """What an instance's kept copy of a user's partition rests on (external/service.py
    `_first_reads`): each completed write of the partition stores a version never seen before, read
    by key; a write that does not happen stores none; the version row is never listed; another
    user's partition and the store's own '#' partitions keep theirs."""
    from workbench.stores import PARTITION_VERSION, ExternalServer

    servers = stores.external_servers
    assert servers is not None
    seen: list[str] = []

    def version(owner: str = "usr_a") -> str | None:
        row = servers.get(owner, PARTITION_VERSION)
        found = stores.read_together(servers=[(owner, PARTITION_VERSION)]).servers.get(
            (owner, PARTITION_VERSION)
        )
        assert (row.state if row else None) == (found.state if found else None)  # by key, both ways
        return row.state if row else None

    def moved() -> None:
        now = version()
        assert now is not None and now not in seen, seen
        seen.append(now)

    assert version() is None
    app = ExternalServer("usr_a", "acme", "acme_", b"cfg", updated_at=NOW)
    assert servers.create(app) is True
    moved()
    assert servers.create(replace(app, config=b"other")) is False
    assert version() == seen[-1]  # refused: nothing changed
    servers.put(replace(app, config=b"v2", updated_at=NOW + 1))
    moved()
    assert servers.put_if(replace(app, config=b"v3", updated_at=NOW + 2), expected_updated_at=NOW) is False
    assert version() == seen[-1]
    assert servers.put_if(replace(app, config=b"v3", updated_at=NOW + 2), expected_updated_at=NOW + 1)
    moved()
    assert servers.set_state("usr_a", "acme", '{"tools": []}') is True
    moved()
    assert servers.set_state("usr_a", "nope", "{}") is False
    assert version() == seen[-1]
    servers.put(ExternalServer("usr_b", "acme", "acme_", b"theirs"))  # another user's partition
    assert version() == seen[-1] and version("usr_b") is not None
    claim = ExternalServer("#workspace", "team-a", "", b"", state="usr_a")
    assert servers.create(claim) is True and servers.delete("#workspace", "team-a") is True
    assert version("#workspace") is None and version() == seen[-1]
    assert [r.name for r in servers.list_for("usr_a")] == ["acme"]  # the version is not a row
    assert servers.delete("usr_a", "acme") is True
    moved()
    assert servers.delete("usr_a", "acme") is False
    assert version() == seen[-1] and servers.list_for("usr_a") == []


# -- OAuth authorization server: clients, codes, refresh tokens -------------------------------------------


def test_oauth_clients_roundtrip(stores: Stores) -> None:
    from workbench.stores import OAuthClient

    assert stores.oauth_clients is not None
    client = OAuthClient(
        "cl_1",
        "Claude Code",
        ("http://127.0.0.1:33418/callback", "https://app.example/cb"),
        "none",
        ("authorization_code", "refresh_token"),
        NOW,
        None,
        {"client_name": "Claude Code", "scope": "mcp", "nested": {"a": [1, 2]}},
    )
    stores.oauth_clients.put(client)
    assert stores.oauth_clients.get("cl_1") == client
    assert stores.oauth_clients.get("cl_nope") is None
    confidential = replace(
        client,
        client_id="cl_2",
        token_endpoint_auth_method="client_secret_post",
        client_secret_hash="ab" * 32,
    )
    stores.oauth_clients.put(confidential)
    assert stores.oauth_clients.get("cl_2") == confidential


def test_unused_oauth_clients_expire_on_read_and_in_counts(stores: Stores) -> None:
    """A registration that completes no grant is gone after its `expires_at` (on every backend, and
    on DynamoDB before its lazy TTL sweep), and one that completed a grant stays."""
    from workbench.stores import OAuthClient

    port = stores.oauth_clients
    assert port is not None
    base = OAuthClient("cl_u1", "App", ("http://127.0.0.1/cb",), "none", ("authorization_code",), NOW)
    port.put(replace(base, expires_at=NOW + 100))
    port.put(replace(base, client_id="cl_u2", expires_at=NOW + 100))
    port.put(replace(base, client_id="cl_kept"))  # no expiry: registered before expiry existed, or used
    got = port.get("cl_u1", now=NOW + 99)
    assert got is not None and got.expires_at == NOW + 100
    assert port.count(NOW + 99) == 3
    port.mark_used("cl_u2")  # completed a grant: no longer expires
    port.mark_used("cl_nope")  # unknown: nothing happens
    assert port.get("cl_nope", now=NOW) is None
    assert port.get("cl_u1", now=NOW + 100) is None  # expired exactly at expires_at
    used = port.get("cl_u2", now=NOW + 10_000)
    assert used is not None and used.expires_at is None
    assert port.get("cl_kept", now=NOW + 10_000) is not None
    assert port.count(NOW + 100) == 2
    purged = port.purge_expired(NOW + 100)
    assert purged in (0, 1)  # DynamoDB leaves it to the table's TTL
    assert port.count(NOW + 100) == 2 and port.get("cl_u1", now=NOW + 100) is None


def test_rate_windows_count_to_the_limit_per_key_and_window(stores: Stores) -> None:
    rates = stores.oauth_rates
    assert rates is not None
    window = 1_800_000_000
    assert [rates.hit("register:198.51.100.7", window, 3, window + 660) for _ in range(5)] == [
        True,
        True,
        True,
        False,
        False,
    ]
    assert rates.hit("register:198.51.100.8", window, 3, window + 660)  # another key
    assert rates.hit("register:198.51.100.7", window + 600, 3, window + 1260)  # the next window
    # concurrent callers (instances) never count past the limit together
    results = _race(8, lambda i: rates.hit("register:*", window, 5, window + 660))
    assert sorted(results) == [False, False, False, True, True, True, True, True]


def _code(code_hash: str = "h1", user: str = "usr_a", client: str = "cl_1") -> Any:
    from workbench.stores import AuthorizationCode

    return AuthorizationCode(
        code_hash,
        client,
        "Claude",
        user,
        "http://127.0.0.1/cb",
        "chal",
        "https://gw/mcp",
        "mcp",
        "fam_1",
        True,
        NOW + 60,
        NOW,
    )


def test_authorization_codes_are_single_use(stores: Stores) -> None:
    codes = stores.oauth_codes
    assert codes is not None
    codes.put(_code())
    first = codes.consume("h1")
    assert first == _code()  # as it was: unused
    replay = codes.consume("h1")
    assert replay == replace(_code(), used=True)  # a replay is recognisable
    assert codes.consume("h_unknown") is None


def test_concurrent_code_consume_has_one_unused_winner(stores: Stores) -> None:
    codes = stores.oauth_codes
    assert codes is not None
    codes.put(_code("h_race"))
    got = _race(5, lambda _: codes.consume("h_race"))
    assert [g.used for g in got].count(False) == 1


def test_authorization_codes_delete_for_user_and_client(stores: Stores) -> None:
    codes = stores.oauth_codes
    assert codes is not None
    for c in (_code("h1"), _code("h2"), _code("h3", client="cl_other"), _code("h4", user="usr_b")):
        codes.put(c)
    assert codes.delete_for("usr_a", "cl_1") == 2
    assert codes.consume("h1") is None and codes.consume("h2") is None
    assert codes.consume("h3") is not None and codes.consume("h4") is not None
    assert codes.delete_for("usr_a", "cl_1") == 0


def _token(
    token_hash: str, family: str = "fam_1", user: str = "usr_a", client: str = "cl_1", at: float = NOW
) -> Any:
    from workbench.stores import RefreshToken

    return RefreshToken(
        token_hash, family, user, client, "Claude", "https://gw/mcp", "mcp", at, NOW, NOW + 86_400
    )


def test_refresh_tokens_rotate_once(stores: Stores) -> None:
    tokens = stores.oauth_refresh
    assert tokens is not None
    tokens.put(_token("t1"))
    assert tokens.get("t1") == _token("t1")
    assert tokens.rotate("t1") == _token("t1")
    assert tokens.rotate("t1") == replace(_token("t1"), rotated=True)  # reuse detected
    assert tokens.get("t1") == replace(_token("t1"), rotated=True)
    assert tokens.rotate("t_unknown") is None
    assert tokens.get("t_unknown") is None


def test_concurrent_refresh_rotation_has_one_winner(stores: Stores) -> None:
    tokens = stores.oauth_refresh
    assert tokens is not None
    tokens.put(_token("t_race"))
    got = _race(5, lambda _: tokens.rotate("t_race"))
    assert [g.rotated for g in got].count(False) == 1


def test_refresh_token_family_revocation_and_listing(stores: Stores) -> None:
    tokens = stores.oauth_refresh
    assert tokens is not None
    tokens.put(_token("t1", at=NOW))
    tokens.rotate("t1")
    tokens.put(_token("t2", at=NOW + 10))  # successor in the same family
    tokens.put(_token("t3", family="fam_2", at=NOW + 5))
    tokens.put(_token("t4", family="fam_3", client="cl_2", at=NOW + 1))
    tokens.put(_token("t5", family="fam_4", user="usr_b"))
    assert [t.token_hash for t in tokens.list_for("usr_a")] == ["t1", "t4", "t3", "t2"]
    assert tokens.list_for("usr_a")[0].rotated is True
    assert tokens.revoke_family("fam_1") == 2
    assert tokens.get("t1") is None and tokens.get("t2") is None
    assert tokens.revoke_family("fam_1") == 0
    assert [t.token_hash for t in tokens.list_for("usr_a")] == ["t4", "t3"]
    assert tokens.delete_for("usr_a", "cl_2") == 1
    assert [t.token_hash for t in tokens.list_for("usr_a")] == ["t3"]
    assert [t.token_hash for t in tokens.list_for("usr_b")] == ["t5"]
    assert tokens.delete_for("usr_a", "cl_nope") == 0


def test_refresh_token_grants_change_for_one_user_and_client(stores: Stores) -> None:
    tokens = stores.oauth_refresh
    assert tokens is not None
    grant = '{"access":"read-only","deniedTools":[],"integrations":"all"}'
    tokens.put(replace(_token("g1"), grant=grant))
    tokens.put(_token("g2", at=NOW + 1))
    tokens.put(_token("g3", client="cl_2"))
    tokens.put(_token("g4", user="usr_b"))
    assert tokens.get("g1") == replace(_token("g1"), grant=grant)
    assert tokens.set_grant("usr_a", "cl_1", "changed") == 2
    assert tokens.get("g1").grant == tokens.get("g2").grant == "changed"  # type: ignore[union-attr]
    assert tokens.get("g1").rotated is False  # type: ignore[union-attr]
    assert tokens.get("g3").grant == tokens.get("g4").grant == ""  # type: ignore[union-attr]
    assert tokens.set_grant("usr_a", "cl_none", "x") == 0


def test_dynamodb_ttl_attributes_leave_time_to_report_expiry(stores: Stores) -> None:
    """DynamoDB only: TTL (whole epoch seconds) never deletes a record before it expires, and keeps an
    expired pending connect a day so a late wait still hears EXPIRED; audit keeps its retention."""
    tables = dynamodb_tables(stores)
    if tables is None:
        pytest.skip("memory and SQLite have no TTL attribute")
    stores.pending.put(_pending(expires_at=NOW + 600.2))
    stores.pending.put_state(_state("st_ttl", expires_at=NOW + 60.5))
    stores.audit.append({"user": "usr_a", "ts": NOW, "tool": "t"})
    client, settings = tables.client, tables.settings

    def ttl(table: str, key: dict[str, Any]) -> int:
        item = client.get_item(TableName=settings.table_name(table), Key=key)["Item"]
        return int(item["ttl"]["N"])

    assert ttl("pending", {"pk": {"S": "connect#conn_1"}}) == int(NOW) + 601 + 86_400
    assert ttl("pending", {"pk": {"S": "state#st_ttl"}}) == int(NOW) + 61
    seq = client.query(
        TableName=settings.table_name("audit"),
        KeyConditionExpression="user_id = :u",
        ExpressionAttributeValues={":u": {"S": "usr_a"}},
    )["Items"][0]
    assert int(seq["ttl"]["N"]) == int(NOW) + settings.audit_retention_days * 86_400


def test_dynamodb_activity_is_a_query_never_a_scan_and_pages_past_filtered_events(
    stores: Stores, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DynamoDB only: the activity page reads with Query (the integration filter on the
    by_user_integration index), and a run of filtered-out events costs a bounded number of reads
    and hands back a cursor that resumes after them."""
    tables = dynamodb_tables(stores)
    if tables is None:
        pytest.skip("memory and SQLite have no Query/Scan distinction")
    from tests.support.aws import on_call

    calls: list[tuple[str, dict[str, Any]]] = []
    on_call(tables.client, lambda op, params: calls.append((op, dict(params))))
    _executions(stores, "usr_a", 3, integration="slack")
    for i in range(12):  # successes only: a success=False filter must read past all of them
        stores.audit.append(
            {
                "action": "EXECUTE",
                "user": "usr_a",
                "tool": "ok",
                "integration": "github",
                "success": True,
                "ts": NOW + 10 + i,
            }
        )
    calls.clear()
    page = stores.audit.activity("usr_a", ActivityQuery(integration="github", limit=5))
    assert [op for op, _ in calls] == ["Query"] and calls[0][1]["IndexName"] == "by_user_integration"
    assert len(page.events) == 5 and page.next_cursor is not None

    monkeypatch.setattr(type(stores.audit), "PAGE_ITEMS", 4)
    monkeypatch.setattr(type(stores.audit), "MAX_PAGES", 2)
    calls.clear()
    first = stores.audit.activity("usr_a", ActivityQuery(success=False, limit=5))
    assert first.events == [] and first.next_cursor is not None  # budget spent on 8 successes
    assert [op for op, _ in calls] == ["Query", "Query"]
    rest, _ = _all_pages_lenient(stores, "usr_a", ActivityQuery(success=False, limit=5))
    assert [e["tool"] for e in rest] == ["slack_t0"]
    assert "Scan" not in [op for op, _ in calls]


def _all_pages_lenient(stores: Stores, user: str, query: ActivityQuery) -> tuple[list[dict[str, Any]], int]:
    """Every page, allowing short pages with a cursor (DynamoDB's read budget)."""
    events: list[dict[str, Any]] = []
    cursor = None
    for pages in range(1, 50):
        page = stores.audit.activity(user, replace(query, cursor=cursor))
        events.extend(page.events)
        if page.next_cursor is None:
            return events, pages
        cursor = page.next_cursor
    raise AssertionError("never ended")


def test_adapters_implement_every_method_of_their_port(stores: Stores) -> None:
    """A method added to a port later fails here for every adapter that lacks it (or differs)."""
    import inspect
    import types
    import typing

    import workbench.stores as ports

    hints = typing.get_type_hints(Stores, vars(ports))
    for name, hint in hints.items():
        if name == "extra":
            continue
        options = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
        (port,) = [o for o in options if o is not type(None)]
        adapter = getattr(stores, name)
        methods = [(m, spec) for m, spec in vars(port).items() if not m.startswith("_") and callable(spec)]
        assert methods, f"no methods found on {port}"
        for method, spec in methods:
            assert callable(getattr(adapter, method, None)), f"{type(adapter).__name__} lacks {name}.{method}"
            want = list(inspect.signature(spec).parameters)
            got = ["self", *inspect.signature(getattr(adapter, method)).parameters]
            assert got == want, f"{type(adapter).__name__}.{method}{got} differs from the port {want}"


def test_session_revocations_are_remembered_per_session(stores: Stores) -> None:
    revocations = stores.session_revocations
    assert revocations is not None
    assert not revocations.is_revoked("a" * 64)
    revocations.revoke("a" * 64, 1_900_000_000)
    assert revocations.is_revoked("a" * 64)
    assert not revocations.is_revoked("b" * 64)
    revocations.revoke("a" * 64, 1_900_000_000)  # twice is the same as once
    assert revocations.is_revoked("a" * 64)


# -- approvals ---------------------------------------------------------------------------------------


def _approval(approval_id: str = "apr_1", user: str = "usr_a", at: float = NOW, **kw: Any) -> Any:
    from workbench.stores import Approval

    base = Approval(
        id=approval_id,
        user_id=user,
        salt="s" * 32,
        digest="d" * 64,
        tool="create_jot",
        integration="jots",
        annotations='{"title":"Jots: Create jot","readOnlyHint":false}',
        arguments='{"title":"hi","body":"{{vault:NOTE}}"}',
        client="API key wb_AAAAAAAAAAAA_… (laptop)",
        created_at=at,
        expires_at=at + 600,
    )
    return replace(base, **kw)


def _approvals(stores: Stores) -> Any:
    assert stores.approvals is not None, "every adapter stores approvals"
    return stores.approvals


def test_approvals_put_get_list_only_the_users_own(stores: Stores) -> None:
    approvals = _approvals(stores)
    approvals.put(_approval("apr_1"))
    approvals.put(_approval("apr_2", at=NOW + 5))
    approvals.put(_approval("apr_3", user="usr_b"))
    approvals.put(_approval("apr_old", at=NOW - 1000))  # expired at NOW - 400
    assert approvals.get("usr_a", "apr_1", now=NOW) == _approval("apr_1")
    assert approvals.get("usr_b", "apr_1", now=NOW) is None  # another user's id: unknown
    assert approvals.get("usr_a", "nope", now=NOW) is None
    assert [a.id for a in approvals.list_for("usr_a", now=NOW + 10)] == ["apr_2", "apr_1"]
    assert [a.id for a in approvals.list_for("usr_b", now=NOW)] == ["apr_3"]
    # Expired: still readable (a late wait hears EXPIRED), never listed.
    assert approvals.get("usr_a", "apr_old", now=NOW).status == "EXPIRED"
    assert approvals.get("usr_a", "apr_1", now=NOW + 600).status == "EXPIRED"


def test_approval_is_decided_once_by_its_user_and_used_once(stores: Stores) -> None:
    approvals = _approvals(stores)
    approvals.put(_approval("apr_1"))
    assert approvals.use("usr_a", "apr_1", now=NOW) is False  # not approved yet
    assert approvals.decide("usr_b", "apr_1", "APPROVED", "eve@example.com", now=NOW) is None
    decided = approvals.decide("usr_a", "apr_1", "APPROVED", "ada@example.com", now=NOW + 1)
    assert decided == _approval("apr_1", status="APPROVED", decided_at=NOW + 1, decided_by="ada@example.com")
    assert approvals.decide("usr_a", "apr_1", "DENIED", "ada@example.com", now=NOW + 2) is None
    assert approvals.get("usr_a", "apr_1", now=NOW + 2) == decided
    assert approvals.use("usr_b", "apr_1", now=NOW + 3) is False
    assert approvals.use("usr_a", "apr_1", now=NOW + 3) is True
    assert approvals.use("usr_a", "apr_1", now=NOW + 4) is False  # single use
    used = approvals.get("usr_a", "apr_1", now=NOW + 4)
    assert used.status == "USED" and used.used_at == NOW + 3 and used.decided_by == "ada@example.com"


def test_approval_cannot_be_decided_or_used_after_it_expired(stores: Stores) -> None:
    approvals = _approvals(stores)
    approvals.put(_approval("apr_1"))
    approvals.put(_approval("apr_2"))
    assert approvals.decide("usr_a", "apr_1", "APPROVED", "ada@example.com", now=NOW + 600) is None
    assert approvals.decide("usr_a", "apr_2", "APPROVED", "ada@example.com", now=NOW + 10) is not None
    assert approvals.use("usr_a", "apr_2", now=NOW + 600) is False
    denied = approvals.decide("usr_a", "apr_1", "DENIED", "ada@example.com", now=NOW + 1)
    assert denied is not None and denied.status == "DENIED"
    assert approvals.use("usr_a", "apr_1", now=NOW + 2) is False


def test_concurrent_use_of_an_approval_has_one_winner(stores: Stores) -> None:
    approvals = _approvals(stores)
    approvals.put(_approval("apr_race"))
    approvals.decide("usr_a", "apr_race", "APPROVED", "ada@example.com", now=NOW)
    assert _race(6, lambda _: approvals.use("usr_a", "apr_race", now=NOW + 1)).count(True) == 1
    approvals.put(_approval("apr_decide"))
    got = _race(6, lambda i: approvals.decide("usr_a", "apr_decide", "APPROVED", f"{i}@x", now=NOW))
    assert sum(g is not None for g in got) == 1
