"""Each instance keeps users' custom-apps partitions (external/service.py `_first_reads`) within a
fixed memory budget: the least recently used go first, one user's very large partition is not kept
at all, and a partition that was let go is simply read again."""

from __future__ import annotations

from pathlib import Path

import pytest
from workbench.external import service
from workbench.stores import ExternalServer
from workbench.stores.memory import MemoryExternalServers

from tests.support.gateways import make_gateway


async def test_kept_partitions_stay_within_their_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(service, "LISTING_CACHE_BYTES", 20_000)
    gw = make_gateway(tmp_path)
    ext = gw.external
    assert ext is not None
    store = gw.stores.external_servers
    users = [f"usr_{i:03d}" for i in range(40)]
    for user in users:  # about 1.3 KB a partition
        store.put(ExternalServer(user, "app", "app_", b"x" * 1_000))
    reads: list[str] = []
    real = store.list_for

    def list_for(user_id: str) -> list[ExternalServer]:
        reads.append(user_id)
        return real(user_id)

    monkeypatch.setattr(store, "list_for", list_for)
    for user in users:
        await ext.catalog(user)
        assert ext._listing_bytes <= 20_000
    assert reads == users
    kept = list(ext._listings)
    assert 10 <= len(kept) < len(users) and kept == users[-len(kept) :]  # the most recent ones
    reads.clear()
    await ext.catalog(users[-1])  # kept: no read of the partition
    await ext.catalog(users[0])  # let go: read again, and kept again
    assert reads == [users[0]] and users[0] in ext._listings

    big = "usr_big"  # a partition over a quarter of the budget is read each time, never kept
    store.put(ExternalServer(big, "app", "app_", b"x" * 6_000))
    for _ in range(2):
        await ext.catalog(big)
    assert reads.count(big) == 2 and big not in ext._listings
    assert ext._listing_bytes == sum(x.size for x in ext._listings.values()) <= 20_000


async def test_a_write_without_a_version_reaches_a_kept_partition_within_its_age(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While a deploy shifts traffic, the previous version of the code writes rows without storing
    a version: a kept partition is read again once LISTING_MAX_AGE_SECONDS old."""
    gw = make_gateway(tmp_path)
    ext = gw.external
    assert ext is not None
    now = [1000.0]
    ext._monotonic = lambda: now[0]
    store = gw.stores.external_servers
    assert isinstance(store, MemoryExternalServers)
    store.put(ExternalServer("usr_a", "app", "app_", b"x"))
    reads: list[str] = []
    real = store.list_for
    monkeypatch.setattr(store, "list_for", lambda user_id: reads.append(user_id) or real(user_id))
    await ext.catalog("usr_a")
    older = ExternalServer("usr_a", "other", "other_", b"y")
    store._rows[("usr_a", "other")] = older  # written as the previous version writes: no version
    now[0] += service.LISTING_MAX_AGE_SECONDS - 1
    await ext.catalog("usr_a")
    assert reads == ["usr_a"]  # the version alone says nothing changed
    now[0] += 1
    await ext.catalog("usr_a")
    assert reads == ["usr_a", "usr_a"]
    assert [r.name for r in ext._listings["usr_a"].rows] == ["app", "other"]


async def test_a_kept_partitions_apps_are_decoded_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Decrypting an app's config and unpacking its operations (milliseconds for a large OpenAPI
    app) is done once per kept partition, not on every call; a change anywhere decodes again."""
    import json

    gw = make_gateway(tmp_path)
    ext = gw.external
    assert ext is not None
    user = gw.stores.users.get_or_create("ada@example.com")
    key = gw.auth.mint_key(user)
    principal = gw.auth.api_keys.resolve(key)
    doc = {
        "openapi": "3.0.3",
        "info": {"title": "Things", "version": "1"},
        "paths": {"/things": {"get": {"operationId": "listThings"}}},
    }
    await ext.register_openapi(user.id, name="things", document=json.dumps(doc), base_url="https://api.test")
    decoded: list[str] = []
    real = ext._app

    def app(row: ExternalServer) -> object:
        decoded.append(row.name)
        return real(row)

    monkeypatch.setattr(ext, "_app", app)
    for _ in range(3):
        hit = await ext.lookup(principal, "things_listThings")
        assert hit is not None and hit[0].name == "things_listThings"
    assert decoded == ["things"]
    await ext.register_openapi(  # a change (here, or on any instance): a new version
        user.id, name="things", document=json.dumps(doc), base_url="https://api2.test"
    )
    decoded.clear()
    hit = await ext.lookup(principal, "things_listThings")
    assert hit is not None and decoded == ["things"]
