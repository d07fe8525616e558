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
from typing import Any

import pytest
from workbench.composition import build_registry
from workbench.errors import ConflictError
from workbench.external import ExternalServers
from workbench.external.service import MAX_SERVERS_PER_USER
from workbench.guard.egress import EgressPolicy
from workbench.identity.crypto import Cipher, LocalKeyProvider
from workbench.identity.vault import Vault
from workbench.services.jots import JotService
from workbench.stores import Jot, Stores


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
