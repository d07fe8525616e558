"""search_tools and execute_tools after the auth cache's time ran out (issue 24): the caller's API key
is checked with the call's first batch read (KeyRecheck: the search's rows, the executions' stored
connections), not in a round trip of its own before it.

What a user relies on: a key revoked or narrowed on another instance meanwhile is refused or
narrowed exactly as if it had been checked first (the same 401, the narrowed grant's results, never
an answer computed for a key that no longer stands), and a key that stands costs one batch, not two
reads in a row.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from workbench.composition import Gateway
from workbench.identity.auth import KeysThatForget
from workbench.identity.grants import Grant
from workbench.mcp.app import create_mcp_app

from tests.support.clock import ManualClock as Clock
from tests.support.gateways import make_gateway


def _search(query: Any = "create a jot") -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "search_tools", "arguments": {"query": query}},
    }


async def _post(gw: Gateway, key: str, body: dict[str, Any]) -> httpx.Response:
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=create_mcp_app(gw)), base_url="http://gw"
    ) as c:
        return await c.post(
            "/mcp", json=body, headers={"Authorization": f"Bearer {key}", "accept": "application/json"}
        )


def _names(resp: httpx.Response) -> list[str]:
    assert resp.status_code == 200, resp.text
    result = resp.json()["result"]
    assert not result.get("isError"), result
    return [t["name"] for t in json.loads(result["content"][0]["text"])["tools"]]


class Reads:
    """Stores.read_together, recording what each call asked for."""

    def __init__(self, gw: Gateway) -> None:
        self.inner = gw.stores.read_together
        self.calls: list[dict[str, Any]] = []

    def __call__(self, **asked: Any) -> Any:
        self.calls.append(asked)
        return self.inner(**asked)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def gw(tmp_path: Path, clock: Clock) -> Gateway:
    gw = make_gateway(tmp_path, auth_cache_seconds=15)
    gw.auth_cache.clock = clock
    return gw


def _other_instance(gw: Gateway) -> Any:
    """The key store as another instance writes it: this instance's cache is not told."""
    keys = gw.stores.api_keys
    return keys.inner if isinstance(keys, KeysThatForget) else keys


def _wire_reads(gw: Gateway) -> Reads:
    reads = Reads(gw)
    gw.auth.api_keys._read_together = reads
    external = gw.external
    assert external is not None
    external._read_together = reads
    return reads


async def test_a_lapsed_key_is_checked_in_the_searchs_first_batch(gw: Gateway, clock: Clock) -> None:
    user = gw.stores.users.get_or_create("ada@example.com")
    key = gw.auth.mint_key(user)
    first = _names(await _post(gw, key, _search()))
    reads = _wire_reads(gw)
    clock.now += 16  # past the cache's time
    assert _names(await _post(gw, key, _search())) == first
    # One batch: the key and its user beside what the search reads anyway.
    assert len(reads.calls) == 1
    assert reads.calls[0]["user_id"] == user.id
    assert reads.calls[0]["key_id"] == key.split("_")[1]
    # The check was kept like any resolve: the next search within the time reads no key.
    reads.calls.clear()
    assert _names(await _post(gw, key, _search())) == first
    assert all("key_id" not in asked for asked in reads.calls)


async def test_a_key_revoked_elsewhere_meanwhile_gets_401(gw: Gateway, clock: Clock) -> None:
    user = gw.stores.users.get_or_create("ada@example.com")
    key = gw.auth.mint_key(user)
    assert (await _post(gw, key, _search())).status_code == 200
    assert _other_instance(gw).revoke(user.id, key.split("_")[1])
    clock.now += 16
    resp = await _post(gw, key, _search())
    assert resp.status_code == 401
    assert resp.json() == {
        "jsonrpc": "2.0",
        "id": 7,
        "error": {"code": -32001, "message": "Unauthorized: invalid API key"},
    }
    assert resp.headers["www-authenticate"].startswith("Bearer resource_metadata=")
    # Refused from then on too (nothing about the failed check was kept as a success).
    assert (await _post(gw, key, _search())).status_code == 401


async def test_a_revoked_key_gets_401_not_the_answer_to_its_bad_arguments(gw: Gateway, clock: Clock) -> None:
    user = gw.stores.users.get_or_create("ada@example.com")
    key = gw.auth.mint_key(user)
    assert (await _post(gw, key, _search())).status_code == 200
    _other_instance(gw).revoke(user.id, key.split("_")[1])
    clock.now += 16
    for bad in (12, "", "x" * 100_000):
        resp = await _post(gw, key, _search(bad))
        assert resp.status_code == 401, (bad, resp.text)
        assert resp.json()["error"]["message"] == "Unauthorized: invalid API key"


async def test_a_grant_narrowed_elsewhere_meanwhile_narrows_this_search(gw: Gateway, clock: Clock) -> None:
    user = gw.stores.users.get_or_create("ada@example.com")
    key = gw.auth.mint_key(user)
    assert any(n.endswith("jot") for n in _names(await _post(gw, key, _search("create a jot"))))
    narrowed = Grant("full", ("github",))
    assert _other_instance(gw).set_grant(user.id, key.split("_")[1], narrowed.dumps())
    clock.now += 16
    names = _names(await _post(gw, key, _search("create a jot")))
    assert names and all(n.startswith("github_") for n in names)


async def test_without_custom_apps_service_the_key_is_checked_on_its_own(gw: Gateway, clock: Clock) -> None:
    user = gw.stores.users.get_or_create("ada@example.com")
    key = gw.auth.mint_key(user)
    gw.catalog._external = lambda: None
    assert (await _post(gw, key, _search())).status_code == 200
    _other_instance(gw).revoke(user.id, key.split("_")[1])
    clock.now += 16
    assert (await _post(gw, key, _search())).status_code == 401


def _execute(*executions: dict[str, Any], compose: bool = False) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {
            "name": "execute_tools",
            "arguments": {"executions": list(executions), **({"compose": True} if compose else {})},
        },
    }


JOT = {"tool": "create_jot", "args": {"title": "t", "body": "b"}, "ref_id": "j"}
REPOS = {"tool": "github_list_repos", "args": {}, "ref_id": "r"}


def _results(resp: httpx.Response) -> dict[str, Any]:
    assert resp.status_code == 200, resp.text
    return json.loads(resp.json()["result"]["content"][0]["text"])


async def test_execute_checks_a_lapsed_key_with_the_batchs_connections(gw: Gateway, clock: Clock) -> None:
    user = gw.stores.users.get_or_create("ada@example.com")
    key = gw.auth.mint_key(user)
    assert (await _post(gw, key, _execute(JOT, REPOS))).status_code == 200
    reads = _wire_reads(gw)
    gw.engine.read_together = reads
    gets: list[tuple[str, str]] = []
    store = gw.engine.credentials.store
    real_get = store.get

    def counting_get(user_id: str, integration: str) -> Any:
        gets.append((user_id, integration))
        return real_get(user_id, integration)

    store.get = counting_get  # type: ignore[method-assign]
    clock.now += 16
    out = _results(await _post(gw, key, _execute(JOT, REPOS)))["results"]
    assert "result" in out[0]  # the jot was written
    assert "github" in json.dumps(out[1]) and "error" in out[1]  # not connected: said, not run
    # One read: the key, its user and the one stored connection the batch needs (jots need none).
    assert reads.calls == [
        {"connections": [(user.id, "github")], "user_id": user.id, "key_id": key.split("_")[1]}
    ]
    # Read once (the memory stores' batch reads key by key): that read serves the execution.
    assert gets == [(user.id, "github")]
    assert len(gw.stores.jots.list_for(user.id)) == 2


async def test_execute_never_runs_on_a_key_revoked_elsewhere(gw: Gateway, clock: Clock) -> None:
    user = gw.stores.users.get_or_create("ada@example.com")
    key = gw.auth.mint_key(user)
    assert (await _post(gw, key, _execute(JOT))).status_code == 200
    _other_instance(gw).revoke(user.id, key.split("_")[1])
    clock.now += 16
    for body in (_execute(JOT), _execute(JOT, compose=True), _execute(JOT, REPOS)):
        resp = await _post(gw, key, body)
        assert resp.status_code == 401, resp.text
        assert resp.json()["error"]["message"] == "Unauthorized: invalid API key"
    assert len(gw.stores.jots.list_for(user.id)) == 1  # none of them ran


async def test_execute_runs_under_a_grant_narrowed_elsewhere(gw: Gateway, clock: Clock) -> None:
    user = gw.stores.users.get_or_create("ada@example.com")
    key = gw.auth.mint_key(user)
    assert (await _post(gw, key, _execute(JOT))).status_code == 200
    _other_instance(gw).set_grant(user.id, key.split("_")[1], Grant("full", ("github",)).dumps())
    clock.now += 16
    for body in (_execute(JOT), _execute(JOT, compose=True)):
        out = _results(await _post(gw, key, body))
        error = out["results"][0]["error"] if "results" in out else out["error"]
        assert error.startswith("create_jot was refused: this API key (wb_"), out
        assert "may use only these integrations: github; jots is not one of them" in error
    assert len(gw.stores.jots.list_for(user.id)) == 1


async def test_a_search_that_never_read_is_still_checked_before_it_answers(
    gw: Gateway, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The surface's safety net: whatever path a search takes, the key is settled before the answer."""
    user = gw.stores.users.get_or_create("ada@example.com")
    key = gw.auth.mint_key(user)
    assert (await _post(gw, key, _search())).status_code == 200

    async def answers_without_reading(principal: Any, query: str, limit: int) -> list[Any]:
        return []

    monkeypatch.setattr(gw.catalog, "search_tools", answers_without_reading)
    clock.now += 16
    assert (await _post(gw, key, _search())).status_code == 200  # the key stands: checked alone
    clock.now += 16
    _other_instance(gw).revoke(user.id, key.split("_")[1])
    assert (await _post(gw, key, _search())).status_code == 401


THINGS = {
    "openapi": "3.0.3",
    "info": {"title": "Things", "version": "1.0.0"},
    "paths": {"/things": {"get": {"operationId": "listThings", "summary": "List the things"}}},
}


@pytest.fixture
def with_app(tmp_path: Path, clock: Clock) -> Iterator[tuple[Gateway, list[str], str]]:
    """A gateway (loopback egress allowed) and a loopback upstream for a custom OpenAPI app: the
    gateway, the paths the upstream was asked for, its base URL."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.path)
            body = b'{"things": []}'
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    gw = make_gateway(tmp_path, auth_cache_seconds=15, egress_allow="loopback")
    gw.auth_cache.clock = clock
    try:
        yield gw, seen, f"http://127.0.0.1:{server.server_address[1]}/api"
    finally:
        server.shutdown()
        server.server_close()


async def test_a_custom_app_tool_call_carries_a_lapsed_keys_check(
    with_app: tuple[Gateway, list[str], str], clock: Clock
) -> None:
    gw, seen, base_url = with_app
    user = gw.stores.users.get_or_create("ada@example.com")
    assert gw.external is not None
    await gw.external.register_openapi(user.id, name="things", document=json.dumps(THINGS), base_url=base_url)
    key = gw.auth.mint_key(user)
    call = {"tool": "things_listThings", "args": {}}
    assert "result" in _results(await _post(gw, key, _execute(call)))["results"][0]
    reads = _wire_reads(gw)
    gw.engine.read_together = reads
    clock.now += 16
    assert "result" in _results(await _post(gw, key, _execute(call)))["results"][0]
    assert len(seen) == 2
    # The key's check rode with the lookup's first batch (beside its Query of the user's apps).
    checks = [asked for asked in reads.calls if "key_id" in asked]
    assert len(checks) == 1 and checks[0]["user_id"] == user.id
    assert checks[0]["servers"], "the clear stamp is read in that same batch"
    # Revoked on another instance meanwhile: 401, and the upstream is never called.
    _other_instance(gw).revoke(user.id, key.split("_")[1])
    clock.now += 16
    resp = await _post(gw, key, _execute(call))
    assert resp.status_code == 401 and resp.json()["error"]["message"] == "Unauthorized: invalid API key"
    assert len(seen) == 2
