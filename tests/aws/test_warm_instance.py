"""One event loop per warm Lambda instance (issue 23): each function's handler, driven on one instance
with mixed sequences of scheduled (direct) events and API Gateway events, keeps serving, and the
plugins' shared connection pool keeps working across them. The plugin (tests.support.slowapi) makes
real HTTP calls to a loopback server through the engine's one transport, so a pooled connection made
on one event is reused on the next: a loop per event breaks exactly that ("Event loop is closed",
"bound to a different event loop")."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from workbench.composition import Gateway, build_gateway
from workbench.runtime.lambda_handler import reset_instance
from workbench.settings import Settings

from tests.support.apigw import http_api_event, load_entry, response_json
from tests.support.slowapi import connect_slowapi, slow_upstream

EMAIL = "nightly@example.com"


@pytest.fixture
def instance(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Gateway, str]]:
    """A cold instance's environment (SQLite, local key) with the loopback plugin connected for EMAIL;
    yields the test's own view of the data and an API key of that user."""
    with slow_upstream(keep_alive=True) as url:
        monkeypatch.setenv("WORKBENCH_STORE", "sqlite")
        monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path))
        monkeypatch.setenv("WORKBENCH_PUBLIC_URL", "https://wb.example.com")
        monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "1")
        monkeypatch.setenv("WORKBENCH_EXTRA_PLUGINS", "tests.support.slowapi")
        monkeypatch.setenv("WB_SLOW_API_URL", url)
        monkeypatch.setenv("WORKBENCH_EGRESS_ALLOW", "loopback")
        reset_instance()
        gw = build_gateway(Settings.from_env())
        user = gw.stores.users.get_or_create(EMAIL)
        connect_slowapi(gw, user.id)
        yield gw, gw.auth.mint_key(user)
        reset_instance()


def _job() -> dict[str, Any]:
    return {
        "source": "workbench.schedule",
        "user": EMAIL,
        "integration": "slowapi",
        "executions": [{"tool": "slowapi_fast", "args": {}}],
    }


def _rest(key: str) -> dict[str, Any]:
    return http_api_event(
        "POST",
        "/rest/slowapi",
        route_key="ANY /rest/{integration}",
        path_parameters={"integration": "slowapi"},
        headers={"authorization": f"Bearer {key}"},
        body={"tool": "slowapi_fast", "args": {}},
    )


def _mcp(key: str) -> dict[str, Any]:
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "execute_tools",
            "arguments": {"executions": [{"tool": "slowapi_fast", "args": {}}]},
        },
    }
    return http_api_event(
        "POST",
        "/mcp",
        headers={"authorization": f"Bearer {key}", "accept": "application/json, text/event-stream"},
        body=call,
    )


def _engine_transport() -> Any:
    from workbench.runtime.lambda_handler import instance_gateway

    return instance_gateway().engine._shared_transport


def test_rest_jobs_and_http_events_share_one_loop_and_one_pool(instance: tuple[Gateway, str]) -> None:
    gw, key = instance
    handler = load_entry("rest").handler
    seen: list[Any] = []
    for step in ("job", "job", "http", "job", "http", "http", "job"):
        if step == "job":
            assert handler(_job(), None) == {"results": [{"result": {"fast": True}}]}
        else:
            answer = handler(_rest(key), None)
            assert answer["statusCode"] == 200, answer
            assert response_json(answer) == {"result": {"fast": True}}
        seen.append(_engine_transport())
    assert all(t is seen[0] for t in seen)  # one pool for the whole instance, never rebuilt
    user = gw.stores.users.get_or_create(EMAIL)
    rows = [e for e in gw.stores.audit.list_for(user.id) if e["action"] == "EXECUTE"]
    assert sorted(e["via"] for e in rows) == ["api_key"] * 3 + ["schedule"] * 4
    assert all(e["success"] for e in rows)


def test_foreign_asyncio_run_between_events_does_not_break_a_warm_instance(
    instance: tuple[Gateway, str],
) -> None:
    """Code that runs asyncio.run() on the handler's thread between events (a library, an extension)
    leaves no current loop behind: the instance keeps its own."""
    _gw, key = instance
    handler = load_entry("mcp").handler

    async def nothing() -> None:
        await asyncio.sleep(0)

    for _ in range(3):
        answer = handler(_mcp(key), None)
        assert answer["statusCode"] == 200, answer
        text = response_json(answer)["result"]["content"][0]["text"]
        assert json.loads(text) == {"results": [{"result": {"fast": True}}]}
        asyncio.run(nothing())


@pytest.mark.parametrize("function", ["mcp", "proxy", "web", "rest"])
def test_every_function_serves_mixed_sequences_on_one_instance(
    instance: tuple[Gateway, str], function: str
) -> None:
    """Each entry, with direct events where it takes them (REST) and HTTP events of every function's
    own kind, interleaved on one instance; the plugin's pooled connection survives throughout."""
    gw, key = instance
    handler: Callable[[dict[str, Any], Any], dict[str, Any]] = load_entry(function).handler
    rest = load_entry("rest").handler  # the same instance: one gateway, one pool, one loop
    user = gw.stores.users.get_or_create(EMAIL)
    token = str(gw.curl.mint(gw.auth.api_keys.resolve(key), ["slowapi"], 300)["token"])

    def own() -> None:
        if function == "mcp":
            answer = handler(_mcp(key), None)
            assert answer["statusCode"] == 200
        elif function == "proxy":
            answer = handler(
                http_api_event("GET", "/c/slowapi/fast", headers={"authorization": f"Bearer {token}"}),
                None,
            )
            assert answer["statusCode"] == 200, answer
            assert response_json(answer) == {"fast": True}
        elif function == "web":
            answer = handler(
                http_api_event(
                    "GET", "/.well-known/oauth-authorization-server", route_key="ANY /.well-known/{proxy+}"
                ),
                None,
            )
            assert answer["statusCode"] == 200
        else:
            answer = handler(_rest(key), None)
            assert answer["statusCode"] == 200

    for step in ("job", "job", "http", "job", "http"):
        if step == "job":
            assert rest(_job(), None) == {"results": [{"result": {"fast": True}}]}
        else:
            own()
    rows = [e for e in gw.stores.audit.list_for(user.id) if e["action"] == "SCHEDULE"]
    assert [e["success"] for e in rows] == [True] * 3
