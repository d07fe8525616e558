"""The refresh lease shares the connections table but is never listed as a connection."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from workbench.connections.credentials import Credentials
from workbench.identity.crypto import Cipher, LocalKeyProvider
from workbench.stores import Stores
from workbench.stores.memory import memory_stores
from workbench.stores.sqlite import sqlite_stores


def stores_for(adapter: str, tmp_path: Path) -> Stores:
    return memory_stores() if adapter == "memory" else sqlite_stores(tmp_path / "x.db")


@pytest.mark.parametrize("adapter", ["memory", "sqlite"])
def test_a_held_lease_is_not_listed_and_goes_with_a_disconnect(tmp_path: Path, adapter: str) -> None:
    stores = stores_for(adapter, tmp_path)
    c = Credentials(stores.connections, Cipher(LocalKeyProvider.from_secret(os.urandom(32))))
    c.save("u1", "github", {"access_token": "at"})
    lease = c._take_lease("u1", "github")
    assert lease is not None and stores.connections.get("u1", lease.row.integration) is not None
    assert [x.integration for x in stores.connections.list_for("u1")] == ["github"]
    c.delete("u1", "github")
    assert stores.connections.get("u1", "github") is None
    assert stores.connections.get("u1", lease.row.integration) is None
    assert stores.connections.list_for("u1") == []
