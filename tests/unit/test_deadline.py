"""The request deadline: how it is derived, how upstream timeouts shrink to it, and what a batch or a
compose answers when time runs out (a real slow upstream on loopback)."""

from __future__ import annotations

import importlib
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient
from workbench.composition import Gateway, build_registry
from workbench.guard import deadline
from workbench.guard.deadline import CUT_SHORT, NOT_STARTED, Deadline, for_invocation, for_request

from tests.support.gateways import make_gateway, principal_for
from tests.support.slowapi import connect_slowapi, make_manifest, slow_upstream


@pytest.fixture(scope="module")
def upstream() -> Iterator[str]:
    with slow_upstream() as url:
        yield url


def _upstream_limit(item: dict[str, Any]) -> float:
    """N from {"error": "Upstream timed out after N s"} (N: whole tenths of what was left)."""
    match = re.fullmatch(r"Upstream timed out after (\d+(?:\.\d)?) s", item.get("error", ""))
    assert match, item
    return float(match.group(1))


def _gateway(tmp_path: Path, url: str, **settings: Any) -> Gateway:
    registry = build_registry(plugins=False)
    registry.add(make_manifest(url), lambda: importlib.import_module("tests.support.slowapi.tools").TOOLS)
    settings.setdefault("egress_allow", "loopback")  # the slow upstream listens on loopback
    # Loaded now: the first import of its module (and of pydantic, which nothing before it in this
    # process may have imported) is not what these deadlines are about.
    registry.tools_of("slowapi")
    return make_gateway(tmp_path, registry=registry, **settings)


def test_the_deadline_is_api_gateways_29_s_or_the_lambdas_remaining_time_less_the_margin() -> None:
    now = 1_800_000_000.0
    # Arrived 10 s ago, the function has 25 s left: API Gateway's limit comes first (29 - 10 - 2).
    d = for_request(budget=29, margin=2, arrived_at=now - 10, lambda_remaining_ms=25_000, now=now)
    assert d.remaining() == pytest.approx(17, abs=0.05)
    # The function's remaining time comes first.
    d = for_request(budget=29, margin=2, arrived_at=now, lambda_remaining_ms=5_000, now=now)
    assert d.remaining() == pytest.approx(3, abs=0.05)
    # Locally: the budget from now.
    assert for_request(budget=29, margin=2).remaining() == pytest.approx(27, abs=0.05)
    # Already past (a request API Gateway has given up on): nothing left, never negative.
    assert for_request(budget=29, margin=2, arrived_at=now - 60, now=now).expired()

    class Context:
        def get_remaining_time_in_millis(self) -> int:
            return 12_000

    invocation = for_invocation(Context(), margin=2)
    assert invocation is not None and invocation.remaining() == pytest.approx(10, abs=0.05)
    assert for_invocation(None, margin=2) is None


def test_upstream_timeouts_shrink_to_the_deadline_in_whole_tenths() -> None:
    assert deadline.upstream_timeout(25, connect=5).read == 25  # no request deadline: as before
    with deadline.scope(Deadline(time.monotonic() + 3.0)):
        timeout = deadline.upstream_timeout(25, connect=5)
        assert 2.3 <= timeout.read <= 2.5 and round(timeout.read, 1) == timeout.read  # (3 - 0.5) s
        assert timeout.connect == timeout.read  # shrunk too
    with deadline.scope(Deadline(time.monotonic() + 100)):
        timeout = deadline.upstream_timeout(25, connect=5)
        assert (timeout.read, timeout.connect) == (25, 5)
    with deadline.scope(Deadline(time.monotonic() - 1)):
        assert deadline.upstream_timeout(25, connect=5).read == 0.1  # never 0 (httpx: no timeout)


async def test_a_batch_that_runs_out_of_time_keeps_finished_results(tmp_path: Path, upstream: str) -> None:
    gw = _gateway(tmp_path, upstream)
    ada = principal_for(gw)
    connect_slowapi(gw, ada.user.id)
    batch = [{"tool": t, "args": {}, "ref_id": None} for t in ("slowapi_fast", "slowapi_slow", "slowapi_nap")]
    started = time.monotonic()
    with deadline.scope(Deadline(time.monotonic() + 1.5)):
        out = await gw.runs.execute(ada, batch)
    elapsed = time.monotonic() - started
    assert elapsed < 2.0, elapsed  # answered at the deadline, not when the upstream or the nap ended
    fast, slow, nap = out["results"]
    assert fast == {"result": {"fast": True}}
    # The HTTP call gave up first, naming the limit it had (shrunk from 25 s to what was left).
    assert 0.1 <= _upstream_limit(slow) <= 1.0
    assert nap == {"error": CUT_SHORT}  # no HTTP timeout applies to a sleep: the engine's guard
    audit = {e["tool"]: e for e in gw.stores.audit.list_for(ada.user.id)}
    assert audit["slowapi_nap"]["error"] == CUT_SHORT and audit["slowapi_nap"]["integration"] == "slowapi"
    assert audit["slowapi_slow"]["success"] is False and audit["slowapi_fast"]["success"] is True


async def test_executions_the_deadline_leaves_no_time_for_are_not_run(tmp_path: Path, upstream: str) -> None:
    gw = _gateway(tmp_path, upstream, execute_concurrency=1)
    ada = principal_for(gw)
    connect_slowapi(gw, ada.user.id)
    batch = [{"tool": t, "args": {}, "ref_id": None} for t in ("slowapi_nap", "slowapi_fast", "slowapi_fast")]
    with deadline.scope(Deadline(time.monotonic() + 0.5)):
        out = await gw.runs.execute(ada, batch)
    assert out["results"] == [{"error": CUT_SHORT}, {"error": NOT_STARTED}, {"error": NOT_STARTED}]
    audit = [e for e in gw.stores.audit.list_for(ada.user.id) if e["action"] == "EXECUTE"]
    assert sorted(e["error"] for e in audit) == sorted([CUT_SHORT, NOT_STARTED, NOT_STARTED])
    assert all(e["integration"] == "slowapi" for e in audit)


async def test_a_compose_that_runs_out_of_time_reports_the_step_in_the_failed_step_shape(
    tmp_path: Path, upstream: str
) -> None:
    gw = _gateway(tmp_path, upstream)
    ada = principal_for(gw)
    connect_slowapi(gw, ada.user.id)
    steps = [
        {"tool": "slowapi_fast", "args": {}, "ref_id": "a"},
        {"tool": "slowapi_nap", "args": {}, "ref_id": "b"},
        {"tool": "slowapi_fast", "args": {}, "ref_id": "c"},
    ]
    with deadline.scope(Deadline(time.monotonic() + 1.0)):
        out = await gw.runs.execute(
            ada, steps, compose=True, template={"a": "{{step:a.fast}}"}, has_return=True
        )
    assert out == {"index": 1, "ref_id": "b", "error": CUT_SHORT}
    tools = [e["tool"] for e in gw.stores.audit.list_for(ada.user.id) if e["action"] == "EXECUTE"]
    assert sorted(tools) == ["slowapi_fast", "slowapi_nap"]  # step c never ran


def test_a_slow_upstream_inside_a_compose_over_mcp_answers_before_the_deadline(
    tmp_path: Path, upstream: str
) -> None:
    """The local app: the request's deadline comes from the settings' budget (3 s, margin 1 s)."""
    from workbench.runtime.local_app import create_local_app

    gw = _gateway(tmp_path, upstream, request_deadline_seconds=3.0, deadline_margin_seconds=1.0)
    ada = gw.stores.users.get_or_create("ada@example.com")
    connect_slowapi(gw, ada.id)
    key = gw.auth.mint_key(ada)
    arguments = {
        "compose": True,
        "executions": [
            {"tool": "slowapi_fast", "args": {}, "ref_id": "a"},
            {"tool": "slowapi_slow", "args": {}, "ref_id": "b"},
        ],
    }
    body = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "execute_tools", "arguments": arguments},
    }
    client = TestClient(create_local_app(gw), base_url="http://127.0.0.1:8787")
    started = time.monotonic()
    response = client.post(
        "/mcp",
        json=body,
        headers={"authorization": f"Bearer {key}", "accept": "application/json, text/event-stream"},
    )
    elapsed = time.monotonic() - started
    assert elapsed < 2.5, elapsed  # inside the 3 s budget, with the margin to answer
    assert response.status_code == 200
    message = response.json()
    assert message["id"] == 7 and "error" not in message  # a proper MCP result, not a transport failure
    payload = json.loads(message["result"]["content"][0]["text"])
    assert set(payload) == {"index", "ref_id", "error"} and (payload["index"], payload["ref_id"]) == (1, "b")
    assert 0.1 <= _upstream_limit(payload) <= 1.5  # what was left of the 3 s, less the margin


async def test_wait_for_connection_blocks_no_longer_than_the_deadline(tmp_path: Path) -> None:
    from tests.connections.plugins.testoauth import make_manifest as oauth_manifest

    registry = build_registry(plugins=False)
    registry.add(oauth_manifest("http://127.0.0.1:9"), list)
    gw = make_gateway(
        tmp_path, registry=registry, plugin_env={"TESTOAUTH_CLIENT_ID": "cid"}, wait_block_seconds=20
    )
    user = gw.stores.users.get_or_create("ada@example.com")
    connection_id = gw.connections.start(user, "testoauth")["connectionId"]
    started = time.monotonic()
    with deadline.scope(Deadline(time.monotonic() + 2.5)):
        answer = await gw.connections.wait(user, connection_id, 600)
    assert answer["status"] == "PENDING"  # "call again", with the record kept
    assert time.monotonic() - started < 2.5
