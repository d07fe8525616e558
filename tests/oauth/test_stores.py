"""The OAuth store ports' contract, run against every adapter that has them: memory, SQLite and
DynamoDB (moto server and dynalite, over HTTP on loopback)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from workbench.stores import AuthorizationCode, OAuthClient, RefreshToken, Stores

NOW = 1_800_000_000.0

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

        built = memory_stores()
    elif kind == "sqlite":
        from workbench.stores.sqlite import sqlite_stores

        built = sqlite_stores(tmp_path / "oauth.sqlite3")
    else:
        from workbench.stores.dynamodb import dynamodb_stores

        endpoint = request.getfixturevalue(
            "moto_endpoint" if kind == "dynamodb-moto" else "dynalite_endpoint"
        )
        built = dynamodb_stores(endpoint.fresh_tables())
    return built


def _race(n: int, fn: Callable[[int], Any]) -> list[Any]:
    barrier = threading.Barrier(n)
    results: list[Any] = [None] * n

    def run(i: int) -> None:
        barrier.wait()
        results[i] = fn(i)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return results


def code(code_hash: str = "c1", **kw: Any) -> AuthorizationCode:
    base: dict[str, Any] = {
        "code_hash": code_hash,
        "client_id": "wbc_a",
        "client_name": "Agent",
        "user_id": "usr_a",
        "redirect_uri": "http://127.0.0.1:1/cb",
        "code_challenge": "x" * 43,
        "resource": "https://wb.example/mcp",
        "scope": "mcp offline_access",
        "family_id": "fam1",
        "offline": True,
        "expires_at": NOW + 60,
        "created_at": NOW,
    }
    return AuthorizationCode(**{**base, **kw})


def token(token_hash: str = "t1", **kw: Any) -> RefreshToken:
    base: dict[str, Any] = {
        "token_hash": token_hash,
        "family_id": "fam1",
        "user_id": "usr_a",
        "client_id": "wbc_a",
        "client_name": "Agent",
        "resource": "https://wb.example/mcp",
        "scope": "mcp",
        "created_at": NOW,
        "granted_at": NOW - 100,
        "expires_at": NOW + 86400,
    }
    return RefreshToken(**{**base, **kw})


def test_clients_round_trip(stores: Stores) -> None:
    assert stores.oauth_clients is not None
    client = OAuthClient(
        client_id="wbc_a",
        client_name="Cursor",
        redirect_uris=("cursor://x/cb", "http://127.0.0.1:1/cb"),
        token_endpoint_auth_method="client_secret_basic",
        grant_types=("authorization_code", "refresh_token"),
        created_at=NOW,
        client_secret_hash="ab" * 32,
        metadata={"client_uri": "https://cursor.com", "contacts": ["a@b.c"]},
    )
    stores.oauth_clients.put(client)
    assert stores.oauth_clients.get("wbc_a") == client
    assert stores.oauth_clients.get("wbc_missing") is None


def test_codes_are_consumed_once_even_under_a_race(stores: Stores) -> None:
    codes = stores.oauth_codes
    assert codes is not None
    codes.put(code())
    assert codes.consume("c1") == code()
    assert codes.consume("c1") == replace(code(), used=True)
    assert codes.consume("missing") is None
    codes.put(code("c2"))
    results = _race(6, lambda _: codes.consume("c2"))
    assert sorted(r.used for r in results) == [False, True, True, True, True, True]


def test_codes_delete_for_one_user_and_client(stores: Stores) -> None:
    codes = stores.oauth_codes
    assert codes is not None
    codes.put(code("c1"))
    codes.put(code("c2"))
    codes.put(code("c3", client_id="wbc_b"))
    codes.put(code("c4", user_id="usr_b"))
    assert codes.delete_for("usr_a", "wbc_a") == 2
    assert codes.consume("c1") is None and codes.consume("c2") is None
    assert codes.consume("c3") is not None and codes.consume("c4") is not None
    assert codes.delete_for("usr_a", "wbc_a") == 0


def test_refresh_tokens_rotate_once_even_under_a_race(stores: Stores) -> None:
    refresh = stores.oauth_refresh
    assert refresh is not None
    refresh.put(token())
    assert refresh.get("t1") == token()
    assert refresh.rotate("t1") == token()
    assert refresh.rotate("t1") == replace(token(), rotated=True)
    assert refresh.get("t1") == replace(token(), rotated=True)
    assert refresh.rotate("missing") is None and refresh.get("missing") is None
    refresh.put(token("t2"))
    results = _race(6, lambda _: refresh.rotate("t2"))
    assert sorted(r.rotated for r in results) == [False, True, True, True, True, True]


def test_refresh_families_and_per_user_listing(stores: Stores) -> None:
    refresh = stores.oauth_refresh
    assert refresh is not None
    refresh.put(token("t1", created_at=NOW))
    refresh.put(token("t2", created_at=NOW + 5))
    refresh.put(token("t3", family_id="fam2", created_at=NOW + 1))
    refresh.put(token("t4", family_id="fam3", client_id="wbc_b", created_at=NOW + 2))
    refresh.put(token("t5", family_id="fam4", user_id="usr_b"))
    assert [t.token_hash for t in refresh.list_for("usr_a")] == ["t1", "t3", "t4", "t2"]
    assert [t.token_hash for t in refresh.list_for("usr_b")] == ["t5"]
    assert refresh.list_for("usr_nobody") == []
    assert refresh.revoke_family("fam1") == 2
    assert refresh.get("t1") is None and refresh.get("t2") is None
    assert refresh.revoke_family("fam1") == 0
    assert refresh.delete_for("usr_a", "wbc_b") == 1
    assert [t.token_hash for t in refresh.list_for("usr_a")] == ["t3"]
    assert refresh.get("t5") is not None
