"""One set of store assertions, run against every adapter: memory, SQLite, DynamoDB (moto, dynalite)."""

from __future__ import annotations

from pathlib import Path

import pytest
from workbench.stores import Stores

from tests.support.aws import AwsEndpoint

BACKENDS = [
    "memory",
    "sqlite",
    pytest.param("dynamodb-moto", marks=pytest.mark.e2e),
    pytest.param("dynamodb-dynalite", marks=pytest.mark.e2e),
]


@pytest.fixture(params=BACKENDS)
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Stores:
    kind = request.param
    if kind == "memory":
        from workbench.stores.memory import memory_stores

        return memory_stores()
    if kind == "sqlite":
        from workbench.stores.sqlite import sqlite_stores

        return sqlite_stores(tmp_path / "contract.sqlite3")
    from workbench.stores.dynamodb import dynamodb_stores

    if kind == "dynamodb-dynalite" and request.node.get_closest_marker("transactions"):
        # A custom app's row is written with its partition's version in one TransactWriteItems
        # (stores/dynamodb.py DynamoExternalServers); dynalite has no transactions. moto runs these.
        pytest.skip("dynalite has no TransactWriteItems")

    endpoint: AwsEndpoint = request.getfixturevalue(
        "moto_endpoint" if kind == "dynamodb-moto" else "dynalite_endpoint"
    )
    return dynamodb_stores(endpoint.fresh_tables())
