"""Issue 12: the local data directory is owner-only (0700), and so are the SQLite database with its
-wal/-shm companions and the local key (0600), on a fresh start and when they were left behind
with wider modes."""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from workbench.composition import Gateway, build_gateway
from workbench.settings import Settings


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def loose_umask() -> Iterator[None]:
    old = os.umask(0)  # the worst case: nothing masked off by the process
    try:
        yield
    finally:
        os.umask(old)


def start(data: Path) -> Gateway:
    gw = build_gateway(Settings(store="sqlite", key_backend="local", data_dir=data))
    gw.stores.users.get_or_create("ada@example.com")  # a write: the WAL is in use
    return gw


def test_a_fresh_data_directory_is_owner_only(tmp_path: Path, loose_umask: None) -> None:
    data = tmp_path / "fresh" / "data"
    gw = start(data)  # its connection stays open: the -wal/-shm files exist
    assert mode(data) == 0o700
    db = gw.settings.sqlite_path
    assert {p.name: mode(p) for p in data.iterdir()} == {
        "workbench.sqlite3": 0o600,
        "workbench.sqlite3-wal": 0o600,
        "workbench.sqlite3-shm": 0o600,
        "local.key": 0o600,
    }
    assert db.exists()


def test_existing_wide_modes_are_narrowed_on_start(tmp_path: Path, loose_umask: None) -> None:
    data = tmp_path / "data"
    data.mkdir(mode=0o755)
    os.chmod(data, 0o777)
    db = data / "workbench.sqlite3"
    with sqlite3.connect(db) as conn:  # an older run's database, left world-readable
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("CREATE TABLE leftover (x)")
    companions = [Path(f"{db}-wal"), Path(f"{db}-shm")]
    for path in (db, *companions):
        path.touch(exist_ok=True)
        os.chmod(path, 0o666)
    key = data / "local.key"
    key.write_bytes(b"MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=\n")  # 32 bytes, base64
    os.chmod(key, 0o644)

    start(data)
    assert mode(data) == 0o700
    assert {p.name: mode(p) for p in (db, *companions, key) if p.exists()} == {
        p.name: 0o600 for p in (db, *companions, key) if p.exists()
    }
    assert not any(mode(p) & 0o077 for p in data.iterdir() if p.is_file())
