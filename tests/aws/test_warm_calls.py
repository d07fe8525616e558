"""AWS calls of a warm instance (issue 14), against DynamoDB + KMS on moto: `tools/list` makes none
(the API key was resolved moments ago), `execute_tools` of one auth-none tool makes exactly one (the
batch's audit write), a six-item batch across two integrations reads each connection once and
writes its audit rows in one BatchWriteItem, and a cold instance's parallel decrypts of one
connection make one KMS call."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import httpx
import pytest
from workbench.aws.kms import KmsKeyProvider
from workbench.composition import Gateway, build_gateway, build_registry
from workbench.mcp.app import create_mcp_app
from workbench.stores.dynamodb import dynamodb_stores

from tests.support.aws import AwsEndpoint, on_call
from tests.support.demo_plugins import DEMO, demo_echo, demo_fail

pytestmark = pytest.mark.e2e

LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


def _execute(*executions: dict[str, Any]) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "execute_tools", "arguments": {"executions": list(executions)}},
    }


def _upstream(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, json={"echo": "x"})


def _gateway(endpoint: AwsEndpoint, log: Counter[str]) -> tuple[Gateway, Any]:
    settings = endpoint.fresh_tables(public_url="https://gw.example.test")

    def count(service: str) -> Any:
        def record(operation: str, params: dict[str, Any]) -> None:
            log[f"{service}:{operation}"] += 1

        return on_call(endpoint.client(service), record)

    registry = build_registry(plugins=False, extra=("tests.support.slow_plugin",))
    registry.add(DEMO, lambda: [demo_echo, demo_fail])
    gw = build_gateway(
        settings,
        stores=dynamodb_stores(settings, client=count("dynamodb")),
        registry=registry,
        key_provider=KmsKeyProvider.from_settings(settings, client=count("kms")),
        transport=httpx.MockTransport(_upstream),
    )
    return gw, settings


async def test_warm_tools_list_makes_no_aws_call_and_one_tool_one(moto_endpoint: AwsEndpoint) -> None:
    log: Counter[str] = Counter()
    gw, _ = _gateway(moto_endpoint, log)
    key = gw.auth.mint_key(gw.stores.users.get_or_create("ada@example.com"))
    headers = {"authorization": f"Bearer {key}", "accept": "application/json, text/event-stream"}
    one = _execute({"tool": "probe_noop", "args": {}})
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=create_mcp_app(gw)), base_url="https://gw"
    ) as c:
        log.clear()
        assert (await c.post("/mcp", json=LIST, headers=headers)).status_code == 200
        assert log == Counter({"dynamodb:GetItem": 2})  # cold: the key and its user
        for _ in range(3):
            log.clear()
            assert (await c.post("/mcp", json=LIST, headers=headers)).status_code == 200
            assert log == Counter()
        for _ in range(3):
            log.clear()
            resp = await c.post("/mcp", json=one, headers=headers)
            assert json.loads(resp.json()["result"]["content"][0]["text"]) == {
                "results": [{"result": {"ok": True}}]
            }
            assert log == Counter({"dynamodb:BatchWriteItem": 1})
    audit = gw.stores.audit.list_for(gw.stores.users.get_or_create("ada@example.com").id)
    assert [e["tool"] for e in audit] == ["probe_noop"] * 3


async def test_a_batch_reads_each_connection_once_and_writes_its_audit_once(
    moto_endpoint: AwsEndpoint,
) -> None:
    log: Counter[str] = Counter()
    gw, _ = _gateway(moto_endpoint, log)
    user = gw.stores.users.get_or_create("ada@example.com")
    key = gw.auth.mint_key(user)
    gw.credentials.save(user.id, "demo", {"access_token": "tok"})
    headers = {"authorization": f"Bearer {key}", "accept": "application/json, text/event-stream"}
    batch = _execute(
        *([{"tool": "demo_echo", "args": {"text": "x"}}] * 6), {"tool": "probe_noop", "args": {}}
    )
    gw.cipher._by_wrapped.clear()  # a cold data-key cache, as on a new Lambda instance
    gw.cipher._by_context.clear()
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=create_mcp_app(gw)), base_url="https://gw"
    ) as c:
        await c.post("/mcp", json=LIST, headers=headers)  # authentication warmed
        log.clear()
        resp = await c.post("/mcp", json=batch, headers=headers)
        results = json.loads(resp.json()["result"]["content"][0]["text"])["results"]
        assert results == [{"result": {"echo": "x"}}] * 6 + [{"result": {"ok": True}}]
        # One connection read, one KMS call for its data key however many executions decrypt it at
        # once, one audit write for the seven rows.
        assert log == Counter({"dynamodb:GetItem": 1, "kms:Decrypt": 1, "dynamodb:BatchWriteItem": 1})
    assert len(gw.stores.audit.list_for(user.id)) == 7


async def test_after_the_auth_cache_time_a_key_is_checked_again_in_one_read(
    moto_endpoint: AwsEndpoint,
) -> None:
    """Past the 15 s auth cache, the key and its user come back in one BatchGetItem (tools/list: 1
    call; execute_tools: that and the audit write), and a key revoked on another instance in the
    meantime is refused there and then."""
    log: Counter[str] = Counter()
    now = [1_800_000_000.0]
    settings = moto_endpoint.fresh_tables(public_url="https://gw.example.test")

    def count(service: str) -> Any:
        def record(operation: str, params: dict[str, Any]) -> None:
            log[f"{service}:{operation}"] += 1

        return on_call(moto_endpoint.client(service), record)

    gw = build_gateway(
        settings,
        stores=dynamodb_stores(settings, client=count("dynamodb")),
        registry=build_registry(plugins=False, extra=("tests.support.slow_plugin",)),
        key_provider=KmsKeyProvider.from_settings(settings, client=count("kms")),
        clock=lambda: now[0],
    )
    other_instance = build_gateway(settings)
    user = gw.stores.users.get_or_create("ada@example.com")
    key = gw.auth.mint_key(user)
    headers = {"authorization": f"Bearer {key}", "accept": "application/json, text/event-stream"}
    one = _execute({"tool": "probe_noop", "args": {}})
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=create_mcp_app(gw)), base_url="https://gw"
    ) as c:
        assert (await c.post("/mcp", json=LIST, headers=headers)).status_code == 200
        now[0] += 16  # past the auth cache's 15 s
        log.clear()
        assert (await c.post("/mcp", json=LIST, headers=headers)).status_code == 200
        assert log == Counter({"dynamodb:BatchGetItem": 1})
        now[0] += 16
        log.clear()
        resp = await c.post("/mcp", json=one, headers=headers)
        assert json.loads(resp.json()["result"]["content"][0]["text"]) == {
            "results": [{"result": {"ok": True}}]
        }
        assert log == Counter({"dynamodb:BatchGetItem": 1, "dynamodb:BatchWriteItem": 1})

        key_id = key.split("_")[1]
        assert other_instance.stores.api_keys.revoke(user.id, key_id) is True
        # Still inside this instance's cache window: accepted, as documented (up to 15 s).
        assert (await c.post("/mcp", json=LIST, headers=headers)).status_code == 200
        now[0] += 16
        refused = await c.post("/mcp", json=LIST, headers=headers)
        assert refused.status_code == 401


_THINGS = {
    "openapi": "3.0.3",
    "info": {"title": "Things", "version": "1.0.0"},
    "paths": {"/things": {"get": {"operationId": "listThings", "summary": "List the echo things"}}},
}


def _search(query: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": "search_tools", "arguments": {"query": query, "limit": 20}},
    }


async def test_a_warm_search_reads_in_one_call_and_sees_what_another_instance_changed(
    moto_endpoint: AwsEndpoint,
) -> None:
    """search_tools for a user with a custom app and a workspace code, whose query hits a plugin
    needing a stored connection: one BatchGetItem (the partition's version, the clear stamp, that
    connection) when the instance holds the user's partition at the version it finds. What another
    instance changes in between (a new app, a disconnect) is in the very next answer: the version
    moved, so the partition is read again (a Query, sent only once the version is known)."""
    log: Counter[str] = Counter()
    gw, settings = _gateway(moto_endpoint, log)
    other_instance = build_gateway(settings)
    user = gw.stores.users.get_or_create("ada@example.com")
    key = gw.auth.mint_key(user)
    gw.credentials.save(user.id, "demo", {"access_token": "tok"})
    gw.external.set_workspace_code(user.id, "team-ada")
    await gw.external.register_openapi(
        user.id, name="things", document=json.dumps(_THINGS), base_url="https://api.things.test"
    )
    headers = {"authorization": f"Bearer {key}", "accept": "application/json, text/event-stream"}

    async def search(c: httpx.AsyncClient) -> dict[str, dict[str, Any]]:
        log.clear()
        resp = await c.post("/mcp", json=_search("echo things"), headers=headers)
        return {t["name"]: t for t in json.loads(resp.json()["result"]["content"][0]["text"])["tools"]}

    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=create_mcp_app(gw)), base_url="https://gw"
    ) as c:
        await search(c)  # the search index and the API key, warmed
        found = await search(c)
        assert found["demo_echo"]["connected"] is True and "things_listThings" in found
        assert log == Counter({"dynamodb:BatchGetItem": 1})

        await other_instance.external.register_openapi(
            user.id,
            name="more",
            document=json.dumps({**_THINGS, "paths": {"/more": {"get": {"operationId": "moreThings"}}}}),
            base_url="https://api.more.test",
        )
        assert other_instance.stores.connections.delete(user.id, "demo") is True
        found = await search(c)
        assert found["demo_echo"]["connected"] is False and "more_moreThings" in found
        # The new app's config was sealed under the other instance's data key: one KMS call for it.
        assert log == Counter({"dynamodb:Query": 1, "dynamodb:BatchGetItem": 1, "kms:Decrypt": 1})

        # Unchanged since: one call again.
        found = await search(c)
        assert found["demo_echo"]["connected"] is False and "more_moreThings" in found
        assert log == Counter({"dynamodb:BatchGetItem": 1})

        # What makes the kept partition safe: a Query is only sent once the version it will be kept
        # with has come back, never beside it (a Query running alongside could read a row before a
        # write that the version read after it already counts).
        order: list[str] = []
        client = gw.stores.external_servers.t.client  # type: ignore[attr-defined]
        real = client.call

        def call(operation: str, params: dict[str, Any]) -> Any:
            order.append(f"{operation} sent")
            try:
                return real(operation, params)
            finally:
                order.append(f"{operation} answered")

        client.call = call
        try:
            other_instance.external.clear_cache(user.id)  # a new version of the partition (settings)
            order.clear()
            found = await search(c)
        finally:
            del client.call
        assert "more_moreThings" in found
        assert [o for o in order if o.startswith(("BatchGetItem", "Query"))][:4] == [
            "BatchGetItem sent",
            "BatchGetItem answered",
            "Query sent",
            "Query answered",
        ]


async def test_a_search_with_no_custom_app_and_no_connection_to_read_makes_one_call(
    moto_endpoint: AwsEndpoint,
) -> None:
    """A user without custom apps whose hits need no stored connection: their partition is read
    (an app registered on another instance would be in it), nothing else."""
    log: Counter[str] = Counter()
    gw, _ = _gateway(moto_endpoint, log)
    key = gw.auth.mint_key(gw.stores.users.get_or_create("ada@example.com"))
    headers = {"authorization": f"Bearer {key}", "accept": "application/json, text/event-stream"}
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=create_mcp_app(gw)), base_url="https://gw"
    ) as c:
        for _ in range(2):
            log.clear()
            resp = await c.post("/mcp", json=_search("probe noop"), headers=headers)
        tools = json.loads(resp.json()["result"]["content"][0]["text"])["tools"]
        assert tools[0]["name"] == "probe_noop" and tools[0]["connected"] is True
        # The partition's version and the clear stamp: the user's (empty) partition is known here.
        assert log == Counter({"dynamodb:BatchGetItem": 1})
