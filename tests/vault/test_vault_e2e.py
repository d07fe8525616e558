"""The vault end to end: `{{vault:NAME}}` reaches the upstream (plugin tools and custom apps alike)
and never comes back in a result, an error, an audit row or a log line; tool output that contains
ref-like text stays literal; values are stored encrypted and never returned."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from workbench.composition import Gateway

from tests.external.conftest import *  # noqa: F403  (the SDK upstreams, gateway and agents)
from tests.external.conftest import Agent
from tests.external.servers import Upstreams
from tests.support.logs import text as log_text

pytestmark = pytest.mark.e2e

SECRET = "sk-live-7Qx2Vb9LmN3"


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(log_text(record))


@pytest.fixture
def logs() -> Iterator[Lines]:
    """Every line the gateway's own loggers (and its HTTP client's) write during the test."""
    handler = Lines()
    loggers = [logging.getLogger(n) for n in ("workbench", "httpx", "httpcore")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.addHandler(handler)
        lg.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.removeHandler(handler)
            lg.setLevel(level)


def audit_text(gw: Gateway, agent: Agent) -> str:
    return json.dumps(gw.stores.audit.list_for(agent.principal.user.id, limit=1000))


def tool_calls(ups: Upstreams, server: str) -> list[Any]:
    """tools/call params as sent, less the 2026-07-28 per-request `_meta` envelope."""
    return [
        {k: v for k, v in s.body["params"].items() if k != "_meta"}
        for s in ups.recorders[server].seen
        if s.method == "tools/call"
    ]


async def test_custom_app_secret_reaches_upstream_only(
    gw: Gateway, agent: Agent, ups: Upstreams, logs: Lines
) -> None:
    await agent.run("vault_set", name="api", value=SECRET)
    await agent.run("apps_register_server", name="plain", url=ups.url("plain"))

    out = await agent.run("plain_echo", text="key={{vault:api}}")

    assert tool_calls(ups, "plain")[-1] == {"name": "echo", "arguments": {"text": f"key={SECRET}"}}
    assert out == {"result": "key=[REDACTED]"}
    assert SECRET not in audit_text(gw, agent)
    assert any('"tool": "plain_echo"' in line for line in logs.lines)  # the execution was logged...
    assert not any(SECRET in line for line in logs.lines)  # ...without the secret


async def test_custom_app_error_quoting_the_secret_is_scrubbed(
    gw: Gateway, agent: Agent, ups: Upstreams, logs: Lines
) -> None:
    await agent.run("vault_set", name="api", value=SECRET)
    await agent.run("apps_register_server", name="odd", url=ups.url("odd"))

    out = await agent.run("odd_fail_echo", token="{{vault:api}}")

    assert tool_calls(ups, "odd")[-1]["arguments"] == {"token": SECRET}
    assert out == {"error": 'rejected input: {"token": "[REDACTED]"}'}
    audit = gw.stores.audit.list_for(agent.principal.user.id, limit=1)[0]
    assert audit["error"] == 'rejected input: {"token": "[REDACTED]"}' and audit["success"] is False
    assert not any(SECRET in line for line in logs.lines)


async def test_auth_secret_echoed_by_the_server_is_scrubbed(
    gw: Gateway, agent: Agent, ups: Upstreams
) -> None:
    await agent.run("vault_set", name="K", value=SECRET)
    await agent.run(
        "apps_register_server",
        name="odd",
        url=ups.url("odd"),
        auth={"type": "header", "headerName": "X-Api-Key", "value": "{{vault:K}}"},
    )
    out = await agent.run("odd_headers")
    assert json.loads(out["result"])["x-api-key"] == "[REDACTED]"
    assert ups.recorders["odd"].seen[-1].headers["x-api-key"] == SECRET

    failed = await agent.run("odd_rpc_fail")
    assert failed == {
        "error": "External server 'odd' answered error -32000: key [REDACTED] is not allowed here"
    }
    assert SECRET not in audit_text(gw, agent)


async def test_plugin_tool_secret_reaches_upstream_only(
    gw: Gateway, agent: Agent, plugin_upstream: list[httpx.Request], logs: Lines
) -> None:
    gw.credentials.save(agent.principal.user.id, "demo", {"access_token": "t"})
    await agent.run("vault_set", name="api", value=SECRET)

    out = await agent.run("demo_echo", text="Bearer {{vault:api}}")

    assert json.loads(plugin_upstream[-1].content)["text"] == f"Bearer {SECRET}"
    assert out == {"result": {"echo": "Bearer [REDACTED]", "tags": []}}
    assert SECRET not in audit_text(gw, agent)
    assert not any(SECRET in line for line in logs.lines)


async def test_step_output_with_vault_text_reaches_the_next_tool_literally(
    gw: Gateway, agent: Agent, ups: Upstreams
) -> None:
    await agent.run("vault_set", name="x", value=SECRET)
    await agent.run("apps_register_server", name="odd", url=ups.url("odd"))
    await agent.run("apps_register_server", name="plain", url=ups.url("plain"))

    out = await agent.call(
        "execute_tools",
        compose=True,
        executions=[
            {"ref_id": "pr", "tool": "odd_title", "args": {}},  # custom app output: "PR mentions {{vault:x}}"
            {"ref_id": "note", "tool": "plain_echo", "args": {"text": "Review: {{step:pr}}"}},
            {"ref_id": "plug", "tool": "free_item", "args": {"value": "{{step:note}}"}},
        ],
    )

    assert tool_calls(ups, "plain")[-1]["arguments"] == {"text": "Review: PR mentions {{vault:x}}"}
    assert out["result"]["value"] == "Review: PR mentions {{vault:x}}"
    assert SECRET not in json.dumps(out)


async def test_values_are_encrypted_names_only_and_per_user(gw: Gateway, agent: Agent, bob: Agent) -> None:
    assert await agent.run("vault_set", name="api", value=SECRET) == {"result": {"stored": "api"}}
    assert await agent.run("vault_list") == {"result": {"names": ["api"]}}
    blob = gw.stores.vault.get(agent.principal.user.id, "api")
    assert blob is not None and SECRET.encode() not in blob

    assert await bob.run("vault_list") == {"result": {"names": []}}
    assert await bob.run("free_item", value="{{vault:api}}") == {"error": "Vault secret 'api' not found"}
    assert await bob.run("vault_delete", name="api") == {"error": "Vault secret 'api' not found"}
    assert gw.vault.get(agent.principal.user.id, "api") == SECRET
