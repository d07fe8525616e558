"""Seed 000: the execute_tools engine — per-item pipeline, error shapes, audit, pool of 8."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import httpx
import pytest
from workbench.composition import Gateway
from workbench.engine.executor import scrub

from tests.support.demo_plugins import Gauge, SyncGauge, demo_registry, demo_upstream
from tests.support.gateways import make_gateway, principal_for
from tests.support.logs import events as log_events


@pytest.fixture
def seen() -> list[httpx.Request]:
    return []


@pytest.fixture
def gw(tmp_path: Path, seen: list[httpx.Request]) -> Gateway:
    return make_gateway(tmp_path, registry=demo_registry(), transport=demo_upstream(seen))


def ex(tool: str, args: dict | None = None, ref_id: str | None = None) -> dict:
    return {"tool": tool, "args": args or {}, "ref_id": ref_id}


async def test_mixed_batch_shapes_to_the_letter(gw: Gateway, seen: list[httpx.Request]) -> None:
    me = principal_for(gw)
    gw.credentials.save(me.user.id, "demo", {"access_token": "tok-123"})
    other = principal_for(gw, "bob@example.com")  # bob has no demo connection
    out = await gw.runs.execute(
        me,
        [
            ex("demo_echo", {"text": "hi", "times": 2}),
            ex("nope_tool"),
            ex("demo_echo", {"times": "x"}),
            ex("demo_fail"),
        ],
    )
    assert out == {
        "results": [
            {"result": {"echo": "hihi", "tags": []}},
            {"error": "Tool not found"},
            {
                "error": "Invalid arguments for demo_echo: text: Field required; times: Input should be a valid "
                "integer, unable to parse string as an integer"
            },
            {"error": "demo API error 404: Not Found"},
        ]
    }
    echo = next(r for r in seen if r.url.path == "/echo")  # the executions run concurrently
    assert echo.headers["authorization"] == "Bearer tok-123"
    assert json.loads(echo.content) == {"text": "hihi", "tags": []}  # defaults applied
    not_connected = await gw.runs.execute(other, [ex("demo_echo", {"text": "x"})])
    assert not_connected == {
        "results": [
            {
                "error": "NOT_CONNECTED",
                "integration": "demo",
                "message": "demo not connected. Use connect('demo') to connect.",
            }
        ]
    }
    assert len(seen) == 2  # bob's call never reached upstream


async def test_every_path_is_audited_with_integration_except_unknown_tool(gw: Gateway) -> None:
    me = principal_for(gw)
    await gw.runs.execute(
        me,
        [
            ex("nope"),
            ex("demo_echo", {"text": "x"}),
            ex("free_item", {"value": 1}),
            ex("free_item", {"label": 3}),
        ],
    )
    events = gw.stores.audit.list_for(me.user.id)[::-1]
    assert [e["action"] for e in events] == ["EXECUTE"] * 4
    by_tool = {(e["tool"], e["success"]): e for e in events}
    assert "integration" not in by_tool[("nope", False)]
    assert by_tool[("nope", False)]["error"] == "Tool not found"
    assert by_tool[("demo_echo", False)]["integration"] == "demo"
    assert by_tool[("demo_echo", False)]["error"] == "NOT_CONNECTED"
    assert by_tool[("free_item", True)]["integration"] == "free"
    assert by_tool[("free_item", False)]["error"].startswith("Invalid arguments for free_item")
    for e in events:
        assert e["user"] == me.user.id and isinstance(e["duration_ms"], float)


async def test_run_path_emits_log_line_and_metrics(gw: Gateway, caplog: pytest.LogCaptureFixture) -> None:
    me = principal_for(gw)
    with caplog.at_level(logging.INFO, logger="workbench"):
        await gw.runs.execute(me, [ex("free_item", {"value": 1}), ex("free_throw"), ex("nope")])
    # Only this batch's execution lines: a busy machine may let another line (a background write's)
    # land in the capture too.
    lines = log_events(caplog.records, "tool_execution")
    lines.sort(key=lambda line: line["tool"])  # the two run concurrently: either may log first
    assert [(line["tool"], line["success"]) for line in lines] == [("free_item", True), ("free_throw", False)]
    assert lines[1]["error"] == "kaboom" and lines[0]["integration"] == "free"
    m = gw.metrics
    assert (
        m.counter_value(
            "workbench_tool_executions_total", integration="free", tool="free_item", success="true"
        )
        == 1
    )
    assert (
        m.counter_value(
            "workbench_tool_executions_total", integration="free", tool="free_throw", success="false"
        )
        == 1
    )
    assert "workbench_tool_execution_duration_seconds_count" in m.prometheus()


async def test_handler_failure_is_error_text(gw: Gateway) -> None:
    out = await gw.runs.execute(principal_for(gw), [ex("free_throw")])
    assert out == {"results": [{"error": "kaboom"}]}


async def test_safeparse_error_runs_with_raw_args_and_is_audited(gw: Gateway) -> None:
    me = principal_for(gw)
    out = await gw.runs.execute(me, [ex("free_broken", {"x": 5, "extra": "raw"})])
    assert out == {"results": [{"result": {"raw": {"x": 5, "extra": "raw"}}}]}
    event = gw.stores.audit.list_for(me.user.id)[0]
    assert event["error"].startswith("SAFEPARSE_ERROR: ")
    assert event["success"] is True and event["integration"] == "free"


async def test_pool_of_exactly_eight_and_order_preserved(gw: Gateway) -> None:
    Gauge.peak = Gauge.current = 0
    calls = [ex("free_slow", {"ms": 30 + (i * 7) % 40}) for i in range(20)]
    out = await gw.runs.execute(principal_for(gw), calls)
    assert Gauge.peak == 8
    assert [r["result"]["slept"] for r in out["results"]] == [30 + (i * 7) % 40 for i in range(20)]


async def test_one_connection_read_per_integration_per_batch(gw: Gateway) -> None:
    me = principal_for(gw)
    gw.credentials.save(me.user.id, "demo", {"access_token": "t"})
    reads = []
    original = gw.stores.connections.get

    def counting(user_id: str, integration: str):  # type: ignore[no-untyped-def]
        reads.append(integration)
        return original(user_id, integration)

    gw.stores.connections.get = counting  # type: ignore[method-assign]
    await gw.runs.execute(me, [ex("demo_echo", {"text": str(i)}) for i in range(10)])
    assert reads == ["demo"]


async def test_another_users_credential_is_never_used(gw: Gateway, seen: list[httpx.Request]) -> None:
    alice, bob = principal_for(gw, "alice@example.com"), principal_for(gw, "bob@example.com")
    gw.credentials.save(alice.user.id, "demo", {"access_token": "alice-token"})
    gw.credentials.save(bob.user.id, "demo", {"access_token": "bob-token"})
    await gw.runs.execute(bob, [ex("demo_echo", {"text": "x"})])
    assert seen[-1].headers["authorization"] == "Bearer bob-token"


def test_credentials_are_stored_encrypted_and_bound_to_their_row(gw: Gateway) -> None:
    from workbench.errors import CredentialUnreadable, CryptoError
    from workbench.stores import Connection

    me = principal_for(gw)
    gw.credentials.save(me.user.id, "demo", {"access_token": "very-secret-token"})
    row = gw.stores.connections.get(me.user.id, "demo")
    assert row is not None and b"very-secret-token" not in row.credential
    moved = Connection(me.user.id, "free", row.credential)
    with pytest.raises(CredentialUnreadable) as caught:
        gw.credentials.load(moved)
    assert isinstance(caught.value.__cause__, CryptoError)


async def test_audit_event_fields_on_handler_failure_and_unknown_tool(gw: Gateway) -> None:
    me = principal_for(gw)
    await gw.runs.execute(me, [ex("free_throw"), ex("nope")])
    events = {e["tool"]: e for e in gw.stores.audit.list_for(me.user.id)}
    failed = events["free_throw"]
    assert {k: failed[k] for k in ("action", "user", "tool", "success", "error", "integration")} == {
        "action": "EXECUTE",
        "user": me.user.id,
        "tool": "free_throw",
        "success": False,
        "error": "kaboom",
        "integration": "free",
    }
    assert failed["duration_ms"] >= 0
    # Unknown tool: the same fields, and no integration key at all (not even None).
    assert set(events["nope"]) == set(failed) - {"integration"}
    assert events["nope"]["success"] is False and events["nope"]["error"] == "Tool not found"


def test_scrub_replaces_secrets_at_any_depth_and_ignores_empty_ones() -> None:
    value = {"tok-1 key": ["a tok-1 b", {"n": 3}], "plain": "x"}
    assert scrub(value, ["", "tok-1"]) == {"[REDACTED] key": ["a [REDACTED] b", {"n": 3}], "plain": "x"}
    assert scrub(value, ()) is value


async def test_sync_tools_run_off_the_event_loop_at_most_eight_at_once(gw: Gateway) -> None:
    """A batch of blocking sync tools runs eight at a time in the engine's pool threads; on the event
    loop they would run one at a time (peak 1)."""
    SyncGauge.peak, SyncGauge.threads = 0, set()
    me = principal_for(gw)
    out = await gw.runs.execute(me, [ex("free_block", {"ms": 150}) for _ in range(20)])
    assert out == {"results": [{"result": {"slept": 150}}] * 20}
    assert SyncGauge.peak == 8
    assert SyncGauge.threads and all(name.startswith("workbench-tool") for name in SyncGauge.threads)


async def test_a_plugin_without_auth_calls_its_api_through_ctx_http(tmp_path: Path) -> None:
    """An auth-none integration has no connection row: ctx.http still works (relative URLs join its
    base), sends no credential, and answers like any other tool."""
    from pydantic import BaseModel
    from workbench.manifest import Manifest, NoAuth
    from workbench.tools import tool

    class NoArgs(BaseModel):
        pass

    @tool("open_ping", "Ping the open API.", NoArgs)
    async def open_ping(args: NoArgs, ctx: object) -> object:
        response = await ctx.http.get("/ping")  # type: ignore[attr-defined]
        return {"status": response.status_code, **response.json()}

    seen: list[httpx.Request] = []

    def upstream(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"pong": True})

    registry = demo_registry()
    registry.add(
        Manifest(
            name="open",
            version="1.0.0",
            display_name="Open",
            auth=NoAuth(),
            base_url="https://api.open.test/v1",
            tool_prefix="open_",
        ),
        lambda: [open_ping],
    )
    gw = make_gateway(tmp_path, registry=registry, transport=httpx.MockTransport(upstream))
    out = await gw.runs.execute(principal_for(gw), [ex("open_ping")])
    assert out == {"results": [{"result": {"status": 200, "pong": True}}]}
    assert [str(r.url) for r in seen] == ["https://api.open.test/v1/ping"]
    assert "authorization" not in seen[0].headers and "cookie" not in seen[0].headers


def test_secret_arguments_are_declared_by_the_schema_and_redacted_in_the_audit() -> None:
    """A tool's writeOnly / password arguments (the vault's value, a custom app's token, header
    value, query value, client secret) are never kept in an audit row's arguments, at any depth."""
    from workbench.composition import build_registry
    from workbench.engine.executor import audit_arguments

    registry = build_registry(plugins=False)
    vault_set, register = registry.find("vault_set"), registry.find("apps_register_openapi")
    assert vault_set is not None and register is not None
    assert vault_set.secret_argument_names() == {"value"}
    assert {"token", "value", "clientSecret"} <= register.secret_argument_names()
    kept = audit_arguments({"name": "API", "value": "sk-live-1"}, (), vault_set.secret_argument_names())
    assert "sk-live-1" not in kept and '"name":"API"' in kept
    nested = audit_arguments(
        {"name": "x", "auth": {"type": "header", "headerName": "X-Key", "value": "hv-2"}},
        (),
        register.secret_argument_names(),
    )
    assert "hv-2" not in nested and "X-Key" in nested
    assert len(audit_arguments({"q": "y" * 10_000}, ())) == 2000  # capped
