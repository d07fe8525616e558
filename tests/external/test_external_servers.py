"""Seed 004 against real MCP servers built with the official SDK: handshake, prefixing, routing,
auth patterns, per-workspace URLs, SSE answers, the discovery cache and the failure table."""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import pytest
from workbench.composition import Gateway

from tests.external.conftest import Agent, FakeClock
from tests.external.servers import BEARER_TOKEN, Upstreams
from tests.support.logs import line as log_line
from tests.support.processes import free_port

pytestmark = pytest.mark.e2e


async def register(agent: Agent, **args: Any) -> dict[str, Any]:
    return await agent.run("apps_register_server", **args)


# -- handshake, merge, routing -------------------------------------------------------------------


async def test_legacy_server_handshake_order_and_session_id_kept_across_calls(
    agent: Agent, ups: Upstreams
) -> None:
    out = await register(agent, name="plain", url=ups.url("legacy"))
    assert out["result"]["tools"] == ["plain_add", "plain_chatty", "plain_echo"]
    assert out["result"]["status"] == "ok"

    assert await agent.run("plain_echo", text="hello") == {"result": "hello"}

    seen = ups.recorders["legacy"].seen
    # The modern probe first; the legacy server's plain 400 sends the client to initialize.
    assert [s.method for s in seen] == [
        "server/discover",
        "initialize",
        "notifications/initialized",
        "tools/list",
        "tools/call",
    ]
    assert seen[0].headers["mcp-protocol-version"] == "2026-07-28"
    assert seen[1].body["params"]["protocolVersion"] == "2025-11-25"
    session_ids = {s.headers.get("mcp-session-id") for s in seen[2:]}
    assert len(session_ids) == 1 and None not in session_ids  # the id from initialize, on every later call
    assert "mcp-session-id" not in seen[1].headers
    assert {s.headers["mcp-protocol-version"] for s in seen[2:]} == {"2025-11-25"}
    seen = seen[1:]
    # routed back with the original name and the arguments as given
    assert seen[3].body["params"] == {"name": "echo", "arguments": {"text": "hello"}}


async def test_tools_merge_into_search_and_schema_for_their_owner_only(
    agent: Agent, bob: Agent, ups: Upstreams
) -> None:
    await register(agent, name="plain", url=ups.url("plain"))
    hits = (await agent.call("search_tools", query="echo text back"))["tools"]
    mine = next(h for h in hits if h["name"] == "plain_echo")
    assert mine["integration"] == "plain" and mine["connected"] is True
    schema = await agent.call("get_tool_schema", tool="plain_add")
    assert schema["schema"]["properties"]["a"]["type"] == "integer"

    # Another user: not in search, no schema, cannot run it.
    assert "plain_echo" not in await bob.search("echo text back")
    assert await bob.call("get_tool_schema", tool="plain_add") == {"error": "Tool not found"}
    assert await bob.run("plain_echo", text="x") == {"error": "Tool not found"}


async def test_sse_answers_are_read(agent: Agent, ups: Upstreams) -> None:
    out = await register(agent, name="streamy", url=ups.url("sse"))
    assert out["result"]["tools"] == ["streamy_add", "streamy_chatty", "streamy_echo"]
    assert await agent.run("streamy_add", a=2, b=3) == {"result": "5"}
    assert ups.recorders["sse"].methods()[-1] == "tools/call"
    # log notifications sent on the stream before the response are skipped
    assert await agent.run("streamy_chatty", steps=3) == {"result": "done after 3"}


async def test_one_handshake_for_a_concurrent_batch(agent: Agent, ups: Upstreams, gw: Gateway) -> None:
    await register(agent, name="plain", url=ups.url("plain"))
    assert gw.external is not None
    gw.external.clear_cache()
    out = await agent.call(
        "execute_tools", executions=[{"tool": "plain_echo", "args": {"text": str(i)}} for i in range(6)]
    )
    assert out == {"results": [{"result": str(i)} for i in range(6)]}
    methods = ups.recorders["plain"].methods()
    assert methods.count("tools/list") == 2  # registration + one discovery after the clear
    assert methods.count("server/discover") == 2


async def test_custom_prefix_and_execution_audit(gw: Gateway, agent: Agent, ups: Upstreams) -> None:
    out = await register(agent, name="plain", url=ups.url("plain"), toolPrefix="px.")
    assert out["result"]["tools"] == ["px.add", "px.chatty", "px.echo"]
    assert await agent.run("px.add", a=1, b=1) == {"result": "2"}
    event = gw.stores.audit.list_for(agent.principal.user.id, limit=1)[0]
    assert (event["tool"], event["integration"], event["success"]) == ("px.add", "plain", True)


async def test_result_without_text_is_returned_whole_and_tool_errors_surface(
    agent: Agent, ups: Upstreams
) -> None:
    await register(agent, name="odd", url=ups.url("odd"))
    picture = await agent.run("odd_picture")
    assert picture["result"]["content"] == [{"type": "image", "data": "aGk=", "mimeType": "image/png"}]
    assert await agent.run("odd_explode") == {"error": "it broke"}


async def test_disabled_server_is_not_contacted(agent: Agent, ups: Upstreams) -> None:
    out = await register(agent, name="plain", url=ups.url("plain"), enabled=False)
    assert out["result"]["enabled"] is False
    assert "plain_echo" not in await agent.search("echo text back")
    assert await agent.run("plain_echo", text="x") == {"error": "Tool not found"}
    assert ups.recorders["plain"].seen == []


# -- auth patterns -------------------------------------------------------------------------------


async def test_bearer_token_from_the_vault(gw: Gateway, agent: Agent, ups: Upstreams) -> None:
    await agent.run("vault_set", name="UPSTREAM", value=BEARER_TOKEN)
    out = await register(
        agent, name="guarded", url=ups.url("bearer"), auth={"type": "bearer", "token": "{{vault:UPSTREAM}}"}
    )
    assert out["result"]["tools"] == ["guarded_secret_report"]
    assert out["result"]["auth"] == {"type": "bearer", "token": "{{vault:UPSTREAM}}"}
    assert await agent.run("guarded_secret_report", topic="q3") == {"result": "report on q3"}
    assert {s.headers["authorization"] for s in ups.recorders["bearer"].seen} == {f"Bearer {BEARER_TOKEN}"}


async def test_literal_secrets_are_stored_encrypted_and_never_listed(
    gw: Gateway, agent: Agent, ups: Upstreams
) -> None:
    await register(
        agent,
        name="guarded",
        url=ups.url("bearer") + "?k=lit-query-secret",
        auth={"type": "bearer", "token": BEARER_TOKEN},
    )
    row = gw.stores.external_servers.get(agent.principal.user.id, "guarded")  # type: ignore[union-attr]
    assert (
        row is not None and BEARER_TOKEN.encode() not in row.config and b"lit-query-secret" not in row.config
    )
    listed = (await agent.run("apps_list"))["result"]["apps"][0]
    assert listed["auth"] == {"type": "bearer", "token": "(set)"}
    assert listed["url"].endswith("/bearer/mcp?k=***")
    assert BEARER_TOKEN not in json.dumps(listed)


async def test_custom_header_auth(agent: Agent, ups: Upstreams) -> None:
    await agent.run("vault_set", name="K", value="hdr-secret-123")
    out = await register(
        agent,
        name="hdr",
        url=ups.url("plain"),
        auth={"type": "header", "headerName": "X-Api-Key", "value": "{{vault:K}}"},
    )
    assert "hdr_echo" in out["result"]["tools"]
    assert {s.headers.get("x-api-key") for s in ups.recorders["plain"].seen} == {"hdr-secret-123"}


async def test_per_workspace_url_gives_each_user_their_own_catalog(
    agent: Agent, bob: Agent, ups: Upstreams
) -> None:
    me, them = agent.principal.user.id, bob.principal.user.id
    ups.script.by_code[me] = ["alpha_tool"]
    ups.script.by_code[them] = ["beta_tool"]
    url = f"{ups.base}/w/{{workspaceCode}}/mcp"
    assert (await register(agent, name="ws", url=url))["result"]["tools"] == ["ws_alpha_tool"]
    assert (await register(bob, name="ws", url=url))["result"]["tools"] == ["ws_beta_tool"]
    assert await agent.run("ws_alpha_tool") == {"result": f"alpha_tool for {me}"}
    assert await agent.run("ws_beta_tool") == {"error": "Tool not found"}
    assert {s.path for s in ups.recorders["w"].seen} == {f"/w/{me}/mcp", f"/w/{them}/mcp"}


# -- discovery cache ------------------------------------------------------------------------------


async def test_discovery_cached_ten_minutes_per_server_and_workspace(
    agent: Agent, ups: Upstreams, clock: FakeClock
) -> None:
    await register(agent, name="odd", url=ups.url("odd"))
    rec = ups.recorders["odd"]
    assert rec.methods().count("tools/list") == 1
    ups.script.tools["fresh"] = {"description": "A tool added later", "schema": {"type": "object"}}

    clock.advance(599)
    assert "odd_fresh" not in await agent.search("tool added later")
    await agent.run("odd_lookup", q="x")
    assert rec.methods().count("tools/list") == 1  # served from the cache: no new discovery

    clock.advance(2)  # past 600 s
    assert "odd_fresh" in await agent.search("tool added later")
    assert rec.methods().count("tools/list") == 2


async def test_reconnect_and_admin_clear_invalidate(gw: Gateway, agent: Agent, ups: Upstreams) -> None:
    await register(agent, name="odd", url=ups.url("odd"))
    ups.script.tools["fresh"] = {"description": "A tool added later", "schema": {"type": "object"}}
    assert "odd_fresh" not in await agent.search("tool added later")

    refreshed = await agent.run("apps_refresh", name="odd")
    assert "odd_fresh" in refreshed["result"]["tools"]

    del ups.script.tools["fresh"]
    assert gw.external is not None and gw.external.clear_cache() == 1
    assert "odd_fresh" not in await agent.search("tool added later")
    assert ups.recorders["odd"].methods().count("tools/list") == 3


async def test_reconnect_on_one_instance_invalidates_every_instance(
    gw: Gateway, agent: Agent, ups: Upstreams, clock: FakeClock
) -> None:
    """Caches are per warm instance; a reconnect is seen by all through the stored registration."""
    from workbench.external import ExternalServers

    assert gw.stores.external_servers is not None
    other_instance = ExternalServers(
        gw.stores.external_servers, gw.cipher, gw.vault, gw.registry, clock=clock, egress=gw.egress
    )
    await register(agent, name="odd", url=ups.url("odd"))
    me = agent.principal.user.id
    assert "odd_fresh" not in [t.name for t in await other_instance.catalog(me)]  # cached there now
    ups.script.tools["fresh"] = {"description": "A tool added later", "schema": {"type": "object"}}
    assert "odd_fresh" not in [t.name for t in await other_instance.catalog(me)]

    await agent.run("apps_refresh", name="odd")  # reconnect handled by this instance
    assert "odd_fresh" in [t.name for t in await other_instance.catalog(me)]

    del ups.script.tools["fresh"]
    assert gw.external is not None
    gw.external.clear_cache(me)  # an admin clear for one user reaches the other instance too
    assert "odd_fresh" not in [t.name for t in await other_instance.catalog(me)]


# -- failure table -------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [401, 403])
async def test_auth_rejection_drops_tools_until_reconnect(agent: Agent, ups: Upstreams, status: int) -> None:
    await register(agent, name="plain", url=ups.url("plain"))
    rec = ups.recorders["plain"]
    rec.fail_next.append(status)
    out = await agent.run("plain_echo", text="x")
    assert f"HTTP {status}" in out["error"] and "apps_refresh" in out["error"]

    before = len(rec.seen)
    assert "plain_echo" not in await agent.search("echo text back")  # dropped from the merge
    again = await agent.run("plain_echo", text="x")
    assert "reconnect" in again["error"]
    assert len(rec.seen) == before  # no traffic to a server that needs reconnecting
    listed = (await agent.run("apps_list"))["result"]["apps"][0]
    assert listed["status"] == "reconnect_required" and "apps_refresh" in listed["message"]

    assert (await agent.run("apps_refresh", name="plain"))["result"]["status"] == "ok"
    assert await agent.run("plain_echo", text="back") == {"result": "back"}


async def test_wrong_bearer_token_at_registration_asks_to_reconnect(agent: Agent, ups: Upstreams) -> None:
    await agent.run("vault_set", name="UPSTREAM", value="wrong-token")
    out = await register(
        agent, name="guarded", url=ups.url("bearer"), auth={"type": "bearer", "token": "{{vault:UPSTREAM}}"}
    )
    assert out["result"]["status"] == "reconnect_required" and "HTTP 401" in out["result"]["error"]
    assert "wrong-token" not in json.dumps(out)
    assert "guarded_secret_report" not in await agent.search("report topic")

    await agent.run("vault_set", name="UPSTREAM", value=BEARER_TOKEN)
    fixed = await agent.run("apps_refresh", name="guarded")
    assert fixed["result"]["tools"] == ["guarded_secret_report"]


async def test_5xx_is_retried_once_with_backoff(agent: Agent, ups: Upstreams, sleeps: list[float]) -> None:
    await register(agent, name="plain", url=ups.url("plain"))
    rec = ups.recorders["plain"]
    rec.fail_next.append(500)
    assert await agent.run("plain_echo", text="second time") == {"result": "second time"}
    assert rec.methods()[-2:] == ["tools/call", "tools/call"]
    assert sleeps == [0.5]

    rec.fail_next.extend([502, 503])
    out = await agent.run("plain_echo", text="x")
    assert out == {"error": "External server 'plain' failed with HTTP 503 (retried once)."}
    assert "plain_echo" in await agent.search("echo text back")  # a 5xx does not drop the tools


async def test_timeout_is_a_transient_error(agent: Agent, ups: Upstreams) -> None:
    # 1 s: room for discovery on a loaded machine (0.3 s timed it out, and the call then answered the
    # remembered failure), still well under the tool's 2 s.
    await register(agent, name="odd", url=ups.url("odd"), timeout=1000)
    started = time.perf_counter()
    out = await agent.run("odd_slow")
    assert out == {
        "error": "Transient error: external server 'odd' did not answer within 1 s. Try again later."
    }
    assert time.perf_counter() - started < 1.9


async def test_malformed_schema_dropped_with_warning_others_load(
    agent: Agent, ups: Upstreams, caplog: pytest.LogCaptureFixture
) -> None:
    wb = logging.getLogger("workbench")
    wb.addHandler(caplog.handler)
    try:
        out = await register(agent, name="odd", url=ups.url("odd"))
    finally:
        wb.removeHandler(caplog.handler)
    assert out["result"]["tools"] == [
        "odd_explode",
        "odd_fail_echo",
        "odd_headers",
        "odd_lookup",
        "odd_picture",
        "odd_regional",
        "odd_rpc_fail",
        "odd_slow",
        "odd_title",
    ]
    warnings = [log_line(r) for r in caplog.records if r.levelno == logging.WARNING]
    assert {(w["event"], w["tool"]) for w in warnings} == {
        ("external_tool_dropped", "broken_props"),
        ("external_tool_dropped", "broken_extra"),
        ("external_tool_dropped", "bad name!"),
        ("external_tool_dropped", "bad_header"),  # x-mcp-header on a number (2026-07-28 rule)
    }
    assert await agent.run("odd_broken_props", q="x") == {"error": "Tool not found"}


async def test_unreachable_server_is_skipped_for_the_turn(agent: Agent, ups: Upstreams) -> None:
    await register(agent, name="plain", url=ups.url("plain"))
    dead = await register(agent, name="gone", url=f"http://127.0.0.1:{free_port()}/mcp")
    assert "unreachable" in dead["result"]["error"]
    assert "plain_echo" in await agent.search("echo text back")  # the other server still merges
    out = await agent.run("gone_anything")
    assert out == {
        "error": "External server 'gone' is unreachable; its tools are skipped for now (last tried 0 s "
        "ago, not asked again this time; retried in 30 s). Try again later."
    }


async def test_session_forgotten_by_the_server_is_renewed(gw: Gateway, agent: Agent, ups: Upstreams) -> None:
    await register(agent, name="plain", url=ups.url("legacy"))
    assert gw.external is not None
    entry = gw.external._cache[(agent.principal.user.id, "plain")]
    entry.session.session_id = "0" * 32  # a session the server never issued: it answers 404
    assert await agent.run("plain_echo", text="still here") == {"result": "still here"}
    assert ups.recorders["legacy"].methods()[-4:] == [
        "tools/call",
        "initialize",
        "notifications/initialized",
        "tools/call",
    ]


# -- registration rules --------------------------------------------------------------------------


async def test_names_never_collide_with_builtin_or_plugin_tools(
    gw: Gateway, agent: Agent, ups: Upstreams
) -> None:
    url = ups.url("plain")
    assert "taken by a built-in" in (await register(agent, name="jots", url=url))["error"]
    assert (
        "would collide with the built-in tool 'vault_"
        in (await register(agent, name="mine", url=url, toolPrefix="vault_"))["error"]
    )
    assert "built-in tool" in (await register(agent, name="mine", url=url, toolPrefix="create_"))["error"]
    plugin = next((m for m in gw.registry.manifests() if not m.builtin), None)
    if plugin is not None:
        out = await register(agent, name="mine", url=url, toolPrefix=plugin.prefix + "x_")
        assert f"the '{plugin.name}' integration" in out["error"]
    await register(agent, name="first", url=url, toolPrefix="acme_")
    clash = await register(agent, name="second", url=url, toolPrefix="acme_tools_")
    assert clash == {
        "error": "toolPrefix 'acme_tools_' overlaps the prefix 'acme_' of your custom app 'first'; choose another prefix."
    }
    assert [a["name"] for a in (await agent.run("apps_list"))["result"]["apps"]] == ["first"]


async def test_bad_registrations_are_refused_with_clear_errors(agent: Agent, ups: Upstreams) -> None:
    assert "https" in (await register(agent, name="x", url="ftp://example.com/mcp"))["error"]
    missing = await register(
        agent, name="x", url=ups.url("plain"), auth={"type": "bearer", "token": "{{vault:NOPE}}"}
    )
    assert "Vault secret 'NOPE' not found" in missing["error"]
    bad_ref = await register(agent, name="x", url=ups.url("plain") + "?a={{step:a.b}}")
    assert "only {{vault:NAME}} references" in bad_ref["error"]
    assert "lowercase" in (await register(agent, name="Bad Name", url=ups.url("plain")))["error"]
    assert (await agent.run("apps_list"))["result"]["apps"] == []


async def test_remove(agent: Agent, ups: Upstreams) -> None:
    await register(agent, name="plain", url=ups.url("plain"))
    assert await agent.run("apps_remove", name="plain") == {"result": {"removed": "plain"}}
    assert await agent.run("plain_echo", text="x") == {"error": "Tool not found"}
    assert await agent.run("apps_remove", name="plain") == {"error": "No custom app named 'plain'"}
