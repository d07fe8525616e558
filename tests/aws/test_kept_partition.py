"""execute_tools of a custom-app tool on a warm instance (issue 24): one read, then the audit write,
after any idle time. The instance keeps each user's partition of the custom-apps table (their apps
and settings rows) with the version it was read at; every write of the partition stores a new version
in the same transaction, and each request reads the version (with the clear stamp and, when due, the
caller's key) in its one BatchGetItem. What users rely on, proven here with two instances on one
DynamoDB (moto): whatever another instance changed — an app registered, changed, disabled or removed,
the workspace code, a cache clear, the key revoked — the very next call on this one sees it."""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from workbench.aws.kms import KmsKeyProvider
from workbench.composition import Gateway, build_gateway, build_registry
from workbench.mcp.app import create_mcp_app
from workbench.stores.dynamodb import dynamodb_stores

from tests.support.aws import AwsEndpoint, on_call
from tests.support.fault_proxy import fault_proxy

pytestmark = pytest.mark.e2e


class _Upstream(ThreadingHTTPServer):
    """The app's API on loopback: answers every GET with the path it was asked for."""

    daemon_threads = True

    def __init__(self) -> None:
        self.paths: list[str] = []
        paths = self.paths

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                paths.append(self.path)
                body = json.dumps({"path": self.path}).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)

    def url(self, path: str = "") -> str:
        return f"http://127.0.0.1:{self.server_address[1]}{path}"


def _document(operation: str, path: str) -> str:
    return json.dumps(
        {
            "openapi": "3.0.3",
            "info": {"title": "Things", "version": "1.0.0"},
            "paths": {path: {"get": {"operationId": operation, "summary": "List the things"}}},
        }
    )


@dataclass
class World:
    here: Gateway  # the instance under test: its calls are counted
    there: Gateway  # another instance on the same tables
    user_id: str
    key: str
    upstream: _Upstream
    log: Counter[str]
    now: list[float]

    async def call(self, tool: str) -> tuple[int, dict[str, Any]]:
        """execute_tools of `tool` on this instance: (HTTP status, the JSON answer's body)."""
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "execute_tools", "arguments": {"executions": [{"tool": tool, "args": {}}]}},
        }
        headers = {"authorization": f"Bearer {self.key}", "accept": "application/json"}
        self.log.clear()
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=create_mcp_app(self.here)), base_url="https://gw"
        ) as c:
            resp = await c.post("/mcp", json=body, headers=headers)
        if resp.status_code != 200 or "error" in resp.json():
            return resp.status_code, resp.json()
        return 200, json.loads(resp.json()["result"]["content"][0]["text"])["results"][0]

    def idle(self, seconds: float = 20.0) -> None:
        self.now[0] += seconds  # the auth cache's clock (the partition has no clock: it has versions)


@pytest.fixture
def world(moto_endpoint: AwsEndpoint) -> Iterator[World]:
    upstream = _Upstream()
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    settings = moto_endpoint.fresh_tables(public_url="https://gw.example.test", egress_allow="loopback")
    log: Counter[str] = Counter()

    def count(service: str) -> Any:
        def record(operation: str, params: dict[str, Any]) -> None:
            log[f"{service}:{operation}"] += 1

        return on_call(moto_endpoint.client(service), record)

    here = build_gateway(
        settings,
        stores=dynamodb_stores(settings, client=count("dynamodb")),
        registry=build_registry(plugins=False),
        key_provider=KmsKeyProvider.from_settings(settings, client=count("kms")),
    )
    now = [1_000_000.0]
    here.auth_cache.clock = lambda: now[0]
    there = build_gateway(settings, registry=build_registry(plugins=False))
    user = there.stores.users.get_or_create("ada@example.com")
    key = there.auth.mint_key(user)
    world = World(here, there, user.id, key, upstream, log, now)
    try:
        yield world
    finally:
        upstream.shutdown()
        upstream.server_close()


async def _register(gw: Gateway, user_id: str, name: str, base_url: str, **kw: Any) -> None:
    assert gw.external is not None
    await gw.external.register_openapi(
        user_id,
        name=name,
        document=_document(kw.pop("operation", "listThings"), "/things"),
        base_url=base_url,
        **kw,
    )


async def _warm(world: World) -> None:
    """`things` registered on the other instance; this one has called it (its partition kept)."""
    await _register(world.there, world.user_id, "things", world.upstream.url("/api"))
    for _ in range(2):
        status, result = await world.call("things_listThings")
        assert status == 200 and result == {"result": {"path": "/api/things"}}, result


async def test_one_read_and_the_audit_back_to_back_and_after_idle(world: World) -> None:
    await _warm(world)
    status, _ = await world.call("things_listThings")
    assert status == 200
    assert world.log == Counter({"dynamodb:BatchGetItem": 1, "dynamodb:BatchWriteItem": 1})
    world.idle()  # past the auth cache: the key's check rides in the same BatchGetItem
    status, _ = await world.call("things_listThings")
    assert status == 200
    assert world.log == Counter({"dynamodb:BatchGetItem": 1, "dynamodb:BatchWriteItem": 1})
    assert world.upstream.paths == ["/api/things"] * 4


async def test_an_app_registered_elsewhere_is_callable_at_once(world: World) -> None:
    await _warm(world)
    await _register(world.there, world.user_id, "more", world.upstream.url("/more"), operation="moreThings")
    status, result = await world.call("more_moreThings")
    assert status == 200 and result == {"result": {"path": "/more/things"}}, result


async def test_an_app_changed_elsewhere_is_called_as_it_now_is(world: World) -> None:
    await _warm(world)
    await _register(world.there, world.user_id, "things", world.upstream.url("/v2"))
    status, result = await world.call("things_listThings")
    assert status == 200 and result == {"result": {"path": "/v2/things"}}, result


async def test_an_app_removed_or_disabled_elsewhere_is_not_called(world: World) -> None:
    await _warm(world)
    await _register(world.there, world.user_id, "things", world.upstream.url("/api"), enabled=False)
    status, result = await world.call("things_listThings")
    assert status == 200 and result == {"error": "Tool not found"}, result
    await _register(world.there, world.user_id, "things", world.upstream.url("/api"))
    assert (await world.call("things_listThings"))[1] == {"result": {"path": "/api/things"}}
    assert world.there.external is not None
    world.there.external.remove(world.user_id, "things")
    status, result = await world.call("things_listThings")
    assert status == 200 and result == {"error": "Tool not found"}, result
    assert world.upstream.paths == ["/api/things"] * 3  # the warm-up's two, and the one re-enabled


async def test_a_workspace_code_set_elsewhere_is_the_very_next_calls(world: World) -> None:
    await _register(world.there, world.user_id, "things", world.upstream.url("/ws/{workspaceCode}"))
    status, result = await world.call("things_listThings")
    assert result == {"result": {"path": f"/ws/{world.user_id}/things"}}, result
    assert world.there.external is not None
    world.there.external.set_workspace_code(world.user_id, "team-ada")
    status, result = await world.call("things_listThings")
    assert status == 200 and result == {"result": {"path": "/ws/team-ada/things"}}, result
    world.there.external.set_workspace_code(world.user_id, None)
    status, result = await world.call("things_listThings")
    assert result == {"result": {"path": f"/ws/{world.user_id}/things"}}, result


async def test_a_cache_clear_elsewhere_makes_the_next_call_read_the_partition_again(world: World) -> None:
    await _warm(world)
    assert world.there.external is not None
    world.there.external.clear_cache(world.user_id)  # the user's settings row: a new version
    status, _ = await world.call("things_listThings")
    assert status == 200 and world.log["dynamodb:Query"] == 1
    status, _ = await world.call("things_listThings")
    assert status == 200 and world.log["dynamodb:Query"] == 0  # unchanged since


async def test_a_key_revoked_elsewhere_gets_401_and_calls_nothing(world: World) -> None:
    await _warm(world)
    world.idle()
    assert world.there.stores.api_keys.revoke(world.user_id, world.key.split("_")[1]) is True
    status, body = await world.call("things_listThings")
    assert status == 401 and body["error"]["message"] == "Unauthorized: invalid API key", body
    assert world.upstream.paths == ["/api/things"] * 2  # the warm-up's only


def test_a_write_that_meets_another_at_the_same_moment_is_tried_again(moto_endpoint: AwsEndpoint) -> None:
    """Two writes of one user's partition at the same moment both write its version: DynamoDB
    cancels one (TransactionConflict). It is tried again after a short random wait; a condition
    that failed is an answer (False), never retried; a conflict that never ends is an error, with
    nothing written."""
    from dataclasses import replace

    from workbench.aws.client import AwsError
    from workbench.stores import PARTITION_VERSION, ExternalServer
    from workbench.stores.dynamodb import DynamoExternalServers

    settings = moto_endpoint.fresh_tables()
    with fault_proxy(moto_endpoint.url) as proxy:
        servers = dynamodb_stores(replace(settings, aws_endpoint_url=proxy.url)).external_servers
        assert isinstance(servers, DynamoExternalServers)
        waits: list[float] = []

        def sleep(seconds: float) -> None:
            waits.append(seconds)
            if len(waits) == 2:
                proxy.faults.pop("dynamodb", None)  # the other writer is done

        servers._sleep = sleep
        app = ExternalServer("usr_a", "acme", "acme_", b"cfg", updated_at=1.0)
        with proxy.fault("dynamodb", "conflict"):
            assert servers.create(app) is True
        assert proxy.hits["dynamodb"] == 2 and len(waits) == 2
        assert all(0 <= w <= 0.5 for w in waits)
        assert servers.get("usr_a", "acme") == app
        version = servers.get("usr_a", PARTITION_VERSION)
        assert version is not None
        assert servers.create(app) is False and proxy.hits["dynamodb"] == 2  # a condition: no retry
        servers._sleep = lambda seconds: None
        with proxy.fault("dynamodb", "conflict"), pytest.raises(AwsError, match="TransactionCanceled"):
            servers.put(replace(app, config=b"other"))
        assert proxy.hits["dynamodb"] == 2 + DynamoExternalServers.CONFLICT_ATTEMPTS
        assert servers.get("usr_a", "acme") == app
        assert servers.get("usr_a", PARTITION_VERSION) == version
