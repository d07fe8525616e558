"""The custom-app registration store: the same assertions against the memory and SQLite adapters."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from workbench.stores import ExternalServer, ExternalServerStore
from workbench.stores.memory import memory_stores
from workbench.stores.sqlite import sqlite_stores


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> ExternalServerStore:
    stores = memory_stores() if request.param == "memory" else sqlite_stores(tmp_path / "wb.sqlite3")
    assert stores.external_servers is not None
    return stores.external_servers


def server(user: str, name: str, **kw: object) -> ExternalServer:
    return ExternalServer(user, name, f"{name}_", b"\x00blob\xff", **kw)  # type: ignore[arg-type]


def test_round_trip_per_user(store: ExternalServerStore) -> None:
    a = server(
        "u1", "alpha", auth_type="header", header_name="X-Key", timeout_ms=500, created_at=1.0, updated_at=2.0
    )
    store.put(a)
    store.put(server("u1", "beta", enabled=False))
    store.put(server("u2", "alpha"))
    assert store.get("u1", "alpha") == a
    assert [s.name for s in store.list_for("u1")] == ["alpha", "beta"]
    assert store.list_for("u1")[1].enabled is False
    assert [s.user_id for s in store.list_for("u2")] == ["u2"]
    assert store.get("u3", "alpha") is None and store.list_for("u3") == []


def test_replace_and_delete_touch_only_the_owner(store: ExternalServerStore) -> None:
    store.put(server("u1", "alpha"))
    store.put(server("u2", "alpha"))
    store.put(replace(server("u1", "alpha"), status="reconnect_required"))
    assert store.get("u1", "alpha").status == "reconnect_required"  # type: ignore[union-attr]
    assert store.get("u2", "alpha").status == "ok"  # type: ignore[union-attr]
    assert store.delete("u1", "alpha") is True
    assert store.delete("u1", "alpha") is False
    assert store.get("u2", "alpha") is not None
