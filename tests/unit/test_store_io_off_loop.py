"""Nothing blocking on the event loop (issue 14): every store call and every master-key call that a
request makes runs in the gateway's store pool, never on the loop thread, on every MCP and REST path.

The stores and the key provider are wrapped in a guard that records any call made on a thread that
is running an event loop; each request below must leave that record empty. A second check shows the
point of a separate pool: eight blocking sync tools fill the tool pool, and another request's store
calls still go through.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from workbench.composition import Gateway, build_gateway
from workbench.identity.crypto import LocalKeyProvider
from workbench.mcp.app import create_mcp_app
from workbench.rest.app import create_rest_app
from workbench.settings import Settings
from workbench.stores import Stores
from workbench.stores.memory import memory_stores

from tests.support.demo_plugins import SyncGauge, demo_registry

STORE_FIELDS = ("users", "api_keys", "connections", "pending", "audit", "vault", "jots", "external_servers")


def _on_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


class Guard:
    """Forwards every call to `inner`; records the ones made on an event loop's thread."""

    def __init__(self, name: str, inner: Any, seen: list[str]) -> None:
        self._name, self._inner, self._seen = name, inner, seen

    def __getattr__(self, attr: str) -> Any:
        value = getattr(self._inner, attr)
        if not callable(value):
            return value

        def call(*args: Any, **kwargs: Any) -> Any:
            if _on_loop():
                self._seen.append(f"{self._name}.{attr} on {threading.current_thread().name}")
            return value(*args, **kwargs)

        return call


def _upstream(request: httpx.Request) -> httpx.Response:
    if request.url.path == "/token":  # the demo provider's refresh
        return httpx.Response(200, json={"access_token": "fresh", "expires_in": 3600, "token_type": "Bearer"})
    if request.url.path == "/echo":
        return httpx.Response(200, json={"echo": json.loads(request.content)["text"]})
    return httpx.Response(404, json={"message": "Not Found"})


@pytest.fixture
def seen() -> list[str]:
    return []


@pytest.fixture
def gw(tmp_path: Path, seen: list[str]) -> Gateway:
    stores: Stores = memory_stores()
    for name in STORE_FIELDS:
        setattr(stores, name, Guard(name, getattr(stores, name), seen))
    settings = Settings(
        store="memory",
        data_dir=tmp_path,
        public_url="http://127.0.0.1:8787",
        plugin_env={"DEMO_CLIENT_ID": "cid", "DEMO_CLIENT_SECRET": "sec"},
        wait_block_seconds=1,
    )
    keys = Guard("key_provider", LocalKeyProvider.from_secret(os.urandom(32)), seen)
    return build_gateway(
        settings,
        stores=stores,
        registry=demo_registry(),
        key_provider=keys,  # type: ignore[arg-type]
        transport=httpx.MockTransport(_upstream),
    )


def _rpc(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


async def test_no_store_or_key_call_runs_on_the_event_loop(gw: Gateway, seen: list[str]) -> None:
    user = gw.stores.users.get_or_create("ada@example.com")
    key = gw.auth.mint_key(user)
    # An expired token with a refresh token: the first demo call refreshes (lease rows, writes).
    gw.credentials.save(
        user.id, "demo", {"access_token": "old", "refresh_token": "r1"}, expires_at=time.time() - 5
    )
    gw.vault.set(user.id, "TOKEN", "s3cret")
    # Fresh data keys: the first decrypt of each row is a master-key call (KMS on AWS).
    gw.cipher._by_wrapped.clear()
    gw.cipher._by_context.clear()
    seen.clear()
    headers = {"Authorization": f"Bearer {key}", "Accept": "application/json, text/event-stream"}
    mcp = httpx.AsyncClient(transport=httpx.ASGITransport(app=create_mcp_app(gw)), base_url="http://gw")
    rest = httpx.AsyncClient(transport=httpx.ASGITransport(app=create_rest_app(gw)), base_url="http://gw")
    async with mcp, rest:
        requests = {
            "tools/list": {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            "whoami": _rpc("whoami", {}),
            "list_integrations": _rpc("list_integrations", {}),
            "search_tools": _rpc("search_tools", {"query": "echo text"}),
            "get_tool_schema": _rpc("get_tool_schema", {"tool": "demo_echo"}),
            "execute_tools (refresh, connection, audit)": _rpc(
                "execute_tools",
                {
                    "executions": [
                        {"tool": "demo_echo", "args": {"text": "hi"}},
                        {"tool": "demo_echo", "args": {"text": "{{vault:TOKEN}}"}},
                        {"tool": "free_item", "args": {"value": 1}},
                        {"tool": "no_such_tool", "args": {}},
                    ]
                },
            ),
            "execute_tools compose (vault ref)": _rpc(
                "execute_tools",
                {
                    "compose": True,
                    "executions": [
                        {"tool": "free_item", "args": {"value": "{{vault:TOKEN}}"}, "ref_id": "a"},
                        {"tool": "demo_echo", "args": {"text": "{{step:a.label}}"}, "ref_id": "b"},
                    ],
                },
            ),
            "connect": _rpc("connect", {"integration": "demo"}),
            "refused meta-tool (MCP_ERROR audit)": _rpc("nope", {}),
        }
        for label, body in requests.items():
            resp = await mcp.post("/mcp", json=body, headers=headers)
            assert resp.status_code == 200, (label, resp.text)
            assert seen == [], label
        connection_id = json.loads(
            (await mcp.post("/mcp", json=_rpc("connect", {"integration": "demo"}), headers=headers)).json()[
                "result"
            ]["content"][0]["text"]
        )["connectionId"]
        resp = await mcp.post(
            "/mcp", json=_rpc("wait_for_connection", {"connectionId": connection_id}), headers=headers
        )
        assert json.loads(resp.json()["result"]["content"][0]["text"])["status"] == "PENDING"
        assert seen == [], "wait_for_connection"
        resp = await mcp.post("/mcp", content=b"{not json", headers=headers)  # audited parse error
        assert resp.status_code == 400 and seen == [], "parse error"
        resp = await rest.post(
            "/rest/demo", json={"tool": "demo_echo", "args": {"text": "x"}}, headers=headers
        )
        assert resp.json() == {"result": {"echo": "x"}} and seen == [], "REST"
    # The paths above did reach the stores (through the pool), the refresh included.
    audit = gw.stores.audit.list_for(user.id, limit=100)
    assert {e.get("action") for e in audit} == {"EXECUTE", "MCP_ERROR"}
    assert gw.credentials.load(gw.stores.connections.get(user.id, "demo"))["access_token"] == "fresh"


async def test_store_calls_go_through_while_blocking_tools_fill_their_pool(
    gw: Gateway, seen: list[str]
) -> None:
    """Eight sync tools blocking the tool pool do not hold up another request's store calls: the tools
    hold until the test lets them go, so had the store calls needed a tool thread, whoami would never
    answer (it gets 10 s)."""
    user = gw.stores.users.get_or_create("ada@example.com")
    key = gw.auth.mint_key(user)
    other = gw.auth.mint_key(gw.stores.users.get_or_create("bob@example.com"))
    seen.clear()  # the setup above ran on the test's loop
    headers = {"Authorization": f"Bearer {key}", "Accept": "application/json, text/event-stream"}
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=create_mcp_app(gw)), base_url="http://gw"
    ) as mcp:
        blocking = asyncio.create_task(
            mcp.post(
                "/mcp",
                json=_rpc(
                    "execute_tools",
                    {"executions": [{"tool": "free_block", "args": {"ms": 20_000, "hold": True}}] * 8},
                ),
                headers=headers,
            )
        )
        SyncGauge.release.clear()
        try:
            for _ in range(1000):  # until all eight tool threads are held (10 s at most)
                if SyncGauge.current >= 8:
                    break
                await asyncio.sleep(0.01)
            assert SyncGauge.current == 8
            resp = await asyncio.wait_for(
                mcp.post(
                    "/mcp",
                    json=_rpc("whoami", {}),
                    headers={**headers, "Authorization": f"Bearer {other}"},  # not cached: store reads
                ),
                10,
            )
            assert SyncGauge.current == 8  # answered while the pool was still full
            assert json.loads(resp.json()["result"]["content"][0]["text"])["email"] == "bob@example.com"
        finally:
            SyncGauge.release.set()
        await blocking
    assert seen == []


def test_parallel_decrypts_of_one_row_make_one_master_key_call() -> None:
    """A batch's executions decrypt the same connection in parallel store threads: one KMS call
    per data key, not one per execution."""
    from concurrent.futures import ThreadPoolExecutor

    from workbench.identity.crypto import Cipher

    class Slow:
        def __init__(self, inner: LocalKeyProvider) -> None:
            self.inner, self.calls = inner, 0
            self.key_id = inner.key_id

        def generate_data_key(self, context: Any) -> Any:
            return self.inner.generate_data_key(context)

        def decrypt_data_key(self, key_id: str, wrapped: bytes, context: Any) -> bytes:
            self.calls += 1
            time.sleep(0.05)  # a KMS round trip
            return self.inner.decrypt_data_key(key_id, wrapped, context)

    provider = Slow(LocalKeyProvider.from_secret(os.urandom(32)))
    blob = Cipher(provider).encrypt(b"secret", {"row": "1"})  # type: ignore[arg-type]
    fresh = Cipher(provider)  # type: ignore[arg-type]  # a new instance: nothing cached
    with ThreadPoolExecutor(8) as pool:
        plain = list(pool.map(lambda _: fresh.decrypt(blob, {"row": "1"}), range(8)))
    assert plain == [b"secret"] * 8 and provider.calls == 1
