"""The external MCP client against SDK-built servers of each protocol era: a stateless 2026-07-28
server (per-request `_meta`, `server/discover`, mirrored headers), a legacy server (falls back to
`initialize`), and a server that names the one legacy version it speaks."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from tests.external.conftest import Agent
from tests.external.servers import SERVER_VERSION, Upstreams
from tests.support.logs import text as log_text

pytestmark = pytest.mark.e2e

META = "io.modelcontextprotocol/protocolVersion"


async def register(agent: Agent, **args: Any) -> dict[str, Any]:
    return await agent.run("apps_register_server", **args)


async def test_stateless_modern_server_gets_meta_headers_and_no_session(agent: Agent, ups: Upstreams) -> None:
    out = await register(agent, name="mod", url=ups.url("modern"))
    assert out["result"]["tools"] == ["mod_add", "mod_chatty", "mod_echo"]
    assert await agent.run("mod_add", a=2, b=3) == {"result": "5"}
    assert await agent.run("mod_chatty", steps=2) == {"result": "done after 2"}  # SSE with notifications

    seen = ups.recorders["modern"].seen
    assert [s.method for s in seen] == ["server/discover", "tools/list", "tools/call", "tools/call"]
    for s in seen:
        assert s.headers["mcp-protocol-version"] == "2026-07-28"
        assert s.headers["mcp-method"] == s.method
        assert "mcp-session-id" not in s.headers
        meta = s.body["params"]["_meta"]
        assert meta[META] == "2026-07-28"
        assert meta["io.modelcontextprotocol/clientInfo"]["name"] == "workbench"
        assert meta["io.modelcontextprotocol/clientCapabilities"] == {}
    assert seen[2].headers["mcp-name"] == "add"
    assert seen[2].body["params"]["name"] == "add" and seen[2].body["params"]["arguments"] == {"a": 2, "b": 3}
    # list_integrations reports the version the server gave in server/discover's _meta.
    listed = await agent.call("list_integrations")
    mine = [i for i in listed["integrations"] if i["name"] == "mod"]
    assert mine == [{"name": "mod", "version": SERVER_VERSION, "connected": True}]


async def test_legacy_server_falls_back_to_initialize(agent: Agent, ups: Upstreams) -> None:
    out = await register(agent, name="old", url=ups.url("legacy"))
    assert out["result"]["tools"] == ["old_add", "old_chatty", "old_echo"]
    assert await agent.run("old_echo", text="hi") == {"result": "hi"}
    seen = ups.recorders["legacy"].seen
    assert [s.method for s in seen][:2] == ["server/discover", "initialize"]
    assert all("_meta" not in (s.body.get("params") or {}) for s in seen[1:])  # legacy: no per-request meta
    assert seen[-1].headers["mcp-protocol-version"] == "2025-11-25"


async def test_unsupported_version_error_picks_the_servers_version(agent: Agent, ups: Upstreams) -> None:
    out = await register(agent, name="picky", url=ups.url("picky"))
    assert "picky_echo" in out["result"]["tools"]
    assert await agent.run("picky_echo", text="x") == {"result": "x"}
    seen = ups.recorders["picky"].seen
    init = next(s for s in seen if s.method == "initialize")
    assert init.body["params"]["protocolVersion"] == "2025-06-18"  # from the error's supported list
    assert seen[-1].headers["mcp-protocol-version"] == "2025-06-18"


async def test_x_mcp_header_parameters_are_mirrored_and_bad_annotations_dropped(
    agent: Agent, ups: Upstreams, caplog: pytest.LogCaptureFixture
) -> None:
    out = await register(agent, name="odd", url=ups.url("odd"))
    assert "odd_regional" in out["result"]["tools"]
    assert "odd_bad_header" not in out["result"]["tools"]
    logged = "\n".join(log_text(r) for r in caplog.records)
    assert "x-mcp-header" in logged and "bad_header" in logged

    # The SDK server checks the header against the body: a missing or wrong one is a 400.
    assert (await agent.run("odd_regional", region="eu-west1", n=1))["result"] == (
        '{"got": {"region": "eu-west1", "n": 1}}'
    )
    assert ups.recorders["odd"].seen[-1].headers["mcp-param-region"] == "eu-west1"
    await agent.run("odd_regional", region=" Zürich ")
    sent = ups.recorders["odd"].seen[-1].headers["mcp-param-region"]
    assert sent == "=?base64?" + base64.b64encode(" Zürich ".encode()).decode() + "?="
    await agent.run("odd_regional", n=2)  # absent parameter: no header
    assert "mcp-param-region" not in ups.recorders["odd"].seen[-1].headers
