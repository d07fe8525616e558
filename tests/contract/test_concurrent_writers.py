"""Concurrent writers on every store adapter (issue 29 item 5): no lost update, no overshot cap.

Several "instances" (threads, each with its own event loop where the code is async) write the same
user's rows at the same moment through the application code that enforces the rule: two jot edits
of different fields both survive; 60 custom-app registrations store exactly 25 apps.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from workbench.composition import build_registry
from workbench.errors import ConflictError, NotFound
from workbench.external import ExternalServers
from workbench.external.service import MAX_SERVERS_PER_USER
from workbench.guard.egress import EgressPolicy
from workbench.identity.crypto import Cipher, LocalKeyProvider
from workbench.identity.vault import Vault
from workbench.services.jots import JotService
from workbench.stores import ExternalServer, ExternalServerStore, Jot, Stores


def _together(jobs: list[Callable[[], Any]]) -> list[Any]:
    """Run every job on its own thread, released at once; their results (or exceptions) in order."""
    barrier = threading.Barrier(len(jobs))
    out: list[Any] = [None] * len(jobs)

    def run(i: int) -> None:
        barrier.wait()
        try:
            out[i] = jobs[i]()
        except Exception as exc:
            out[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    return out


def test_a_stale_conditional_jot_write_is_refused(stores: Stores) -> None:
    stores.jots.put(Jot("jot_a", "u1", "t", "b", 1.0, 1.0))
    assert stores.jots.put_if(Jot("jot_a", "u1", "t2", "b", 1.0, 2.0), expected_updated_at=1.0) is True
    assert stores.jots.put_if(Jot("jot_a", "u1", "t3", "b", 1.0, 3.0), expected_updated_at=1.0) is False
    assert stores.jots.put_if(Jot("jot_a", "u2", "x", "b", 1.0, 4.0), expected_updated_at=2.0) is False
    assert stores.jots.put_if(Jot("jot_gone", "u1", "x", "b", 1.0, 4.0), expected_updated_at=1.0) is False
    got = stores.jots.get("u1", "jot_a")
    assert got is not None and (got.title, got.updated_at) == ("t2", 2.0)


def test_two_concurrent_jot_edits_both_survive(stores: Stores) -> None:
    one, two = JotService(stores.jots), JotService(stores.jots)  # two instances, one table
    for round_ in range(20):
        jot = one.create("u1", "title", "body")
        results = _together(
            [
                lambda jot_id=jot.id, n=round_: one.update("u1", jot_id, title=f"title {n}"),
                lambda jot_id=jot.id, n=round_: two.update("u1", jot_id, body=f"body {n}"),
            ]
        )
        assert not any(isinstance(r, Exception) for r in results), results
        final = one.get("u1", jot.id)
        assert final is not None
        assert (final.title, final.body) == (f"title {round_}", f"body {round_}")


def _apps(stores: Stores) -> ExternalServers:
    assert stores.external_servers is not None
    cipher = Cipher(LocalKeyProvider.from_secret(KEY))
    return ExternalServers(
        stores.external_servers,
        cipher,
        Vault(stores.vault, cipher),
        build_registry(plugins=False),
        egress=EgressPolicy(allow="loopback"),
    )


KEY = os.urandom(32)


@pytest.mark.transactions
@pytest.mark.parametrize("instances", [3])
def test_sixty_concurrent_registrations_store_exactly_the_cap(stores: Stores, instances: int) -> None:
    services = [_apps(stores) for _ in range(instances)]

    def register(i: int) -> Callable[[], Any]:
        service = services[i % instances]
        return lambda: asyncio.run(service.register("u1", name=f"app{i}", url=f"http://127.0.0.1:9/mcp{i}"))

    results = _together([register(i) for i in range(60)])
    stored = services[0].list_for("u1")
    refused = [r for r in results if isinstance(r, ConflictError)]
    assert [r for r in results if isinstance(r, Exception) and not isinstance(r, ConflictError)] == []
    assert len(stored) == MAX_SERVERS_PER_USER == 25
    assert len(refused) == 60 - 25
    assert str(refused[0]) == "At most 25 custom apps per user; remove one first."
    # A removal frees a slot for the next registration, and only one.
    services[1].remove("u1", stored[0]["name"])
    asyncio.run(services[2].register("u1", name="late", url="http://127.0.0.1:9/late"))
    with pytest.raises(ConflictError):
        asyncio.run(services[0].register("u1", name="later", url="http://127.0.0.1:9/later"))
    assert len(services[0].list_for("u1")) == 25


@pytest.mark.transactions
def test_a_stale_conditional_server_write_is_refused(stores: Stores) -> None:
    servers = stores.external_servers
    assert servers is not None
    row = ExternalServer("u1", "app", "app_", b"cfg", created_at=1.0, updated_at=1.0)
    assert servers.create(row)
    assert servers.put_if(replace(row, status="x", updated_at=2.0), expected_updated_at=1.0) is True
    assert servers.put_if(replace(row, status="y", updated_at=3.0), expected_updated_at=1.0) is False
    assert servers.put_if(replace(row, name="gone", updated_at=3.0), expected_updated_at=1.0) is False
    assert servers.get("u1", "gone") is None  # a conditional write never creates a row
    got = servers.get("u1", "app")
    assert got is not None and (got.status, got.updated_at, got.config) == ("x", 2.0, b"cfg")


class _Interleaved:
    """The store of one instance, on which another instance's whole write lands between this
    instance's read of `name` and its write (the race, made certain)."""

    def __init__(self, inner: ExternalServerStore, name: str, meanwhile: Callable[[], Any]) -> None:
        self._inner = inner
        self._name = name
        self._meanwhile: Callable[[], Any] | None = meanwhile

    def get(self, user_id: str, name: str) -> ExternalServer | None:
        row = self._inner.get(user_id, name)
        if name == self._name and self._meanwhile is not None:
            meanwhile, self._meanwhile = self._meanwhile, None
            meanwhile()
        return row

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._inner, attr)


def _apps_on(store: ExternalServerStore, stores: Stores) -> ExternalServers:
    cipher = Cipher(LocalKeyProvider.from_secret(KEY))
    return ExternalServers(
        store,
        cipher,
        Vault(stores.vault, cipher),
        build_registry(plugins=False),
        egress=EgressPolicy(allow="loopback"),
    )


@pytest.mark.transactions
def test_a_cache_clear_does_not_undo_a_workspace_code_set_meanwhile(stores: Stores) -> None:
    assert stores.external_servers is not None
    other = _apps(stores)
    other.set_workspace_code("u1", "team-old")
    racing = _Interleaved(
        stores.external_servers, "#settings", lambda: other.set_workspace_code("u1", "team-new")
    )
    _apps_on(racing, stores).clear_cache("u1")
    assert _apps(stores).workspace_code("u1") == "team-new"


@pytest.mark.transactions
def test_a_deleted_app_is_not_brought_back_by_a_status_write_in_flight(stores: Stores) -> None:
    assert stores.external_servers is not None
    first = _apps(stores)
    asyncio.run(first.register("u1", name="gone", url="http://127.0.0.1:9/mcp"))
    racing = _Interleaved(stores.external_servers, "gone", lambda: first.remove("u1", "gone"))
    with pytest.raises(NotFound):
        asyncio.run(_apps_on(racing, stores).reconnect("u1", "gone"))
    assert stores.external_servers.get("u1", "gone") is None
    assert [a["name"] for a in first.list_for("u1")] == []
