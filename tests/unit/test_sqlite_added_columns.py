"""A data file written before the connection record gained verified_at / last_error is upgraded in
place when the gateway opens it: old rows read back with empty values, new writes keep the fields."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path

from workbench.stores import Connection
from workbench.stores.sqlite import sqlite_stores

OLD_CONNECTIONS = """
CREATE TABLE connections (
    user_id TEXT NOT NULL, integration TEXT NOT NULL, credential BLOB NOT NULL,
    status TEXT NOT NULL, expires_at REAL, updated_at REAL NOT NULL, version INTEGER NOT NULL,
    PRIMARY KEY (user_id, integration));
INSERT INTO connections VALUES ('usr_a', 'github', x'0102', 'connected', NULL, 1700000000.0, 3);
"""


def test_an_older_data_file_gains_the_new_connection_columns(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    db = sqlite3.connect(path)
    db.executescript(OLD_CONNECTIONS)
    db.close()

    stores = sqlite_stores(path)
    old = stores.connections.get("usr_a", "github")
    assert old == Connection("usr_a", "github", b"\x01\x02", "connected", None, 1700000000.0, 3)
    assert (old.verified_at, old.last_error, old.last_error_at) == (None, "", None)
    failed = replace(old, version=4, last_error="token refresh failed", last_error_at=1700000100.0)
    assert stores.connections.put(failed, expected_version=3) is True
    assert sqlite_stores(path).connections.get("usr_a", "github") == failed  # a second open: no re-add
