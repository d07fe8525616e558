"""Tool annotations, titles, outputSchema and structuredContent per protocol revision; the portal
session path into /mcp (seed 003) with its same-origin and CSRF checks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
from workbench.composition import Gateway
from workbench.engine.meta import META_TOOLS
from workbench.mcp.protocol import render_tool_payload
from workbench.runtime.local_app import create_local_app
from workbench.web.sessions import SESSION_COOKIE

from tests.support.gateways import make_gateway

BASE = "http://127.0.0.1:8787"
MODERN = "2026-07-28"
READ_ONLY = {"search_tools", "get_tool_schema", "whoami", "list_integrations", "wait_for_connection"}


@pytest.fixture
def gw(tmp_path: Path) -> Gateway:
    return make_gateway(tmp_path)


@pytest.fixture
def key(gw: Gateway) -> str:
    return gw.auth.mint_key(gw.stores.users.get_or_create("ada@example.com"))


async def post(
    gw: Gateway, body: Any, headers: dict[str, str], cookies: dict[str, str] | None = None
) -> httpx.Response:
    transport = httpx.ASGITransport(app=create_local_app(gw))
    async with httpx.AsyncClient(transport=transport, base_url=BASE, cookies=cookies) as client:
        return await client.post("/mcp", content=json.dumps(body), headers=headers)


def rpc(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}


def versioned(key: str, version: str | None, method: str, name: str | None = None) -> dict[str, str]:
    headers = {"Authorization": f"Bearer {key}"}
    if version is not None:
        headers["MCP-Protocol-Version"] = version
    if version == MODERN:
        headers["Mcp-Method"] = method
        if name:
            headers["Mcp-Name"] = name
    return headers


def params_for(version: str | None, params: dict[str, Any]) -> dict[str, Any]:
    if version != MODERN:
        return params
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    return {**params, "_meta": meta}


async def list_tools(gw: Gateway, key: str, version: str | None) -> list[dict[str, Any]]:
    r = await post(gw, rpc("tools/list", params_for(version, {})), versioned(key, version, "tools/list"))
    assert r.status_code == 200
    tools: list[dict[str, Any]] = r.json()["result"]["tools"]
    return tools


async def call(gw: Gateway, key: str, version: str | None, name: str, args: dict[str, Any]) -> dict[str, Any]:
    body = rpc("tools/call", params_for(version, {"name": name, "arguments": args}))
    r = await post(gw, body, versioned(key, version, "tools/call", name))
    assert r.status_code == 200, r.text
    result: dict[str, Any] = r.json()["result"]
    return result


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25", MODERN])
async def test_annotations_titles_and_output_schemas(gw: Gateway, key: str, version: str) -> None:
    tools = {t["name"]: t for t in await list_tools(gw, key, version)}
    assert list(tools) == [t.name for t in META_TOOLS]
    for name, tool in tools.items():
        hints = tool["annotations"]
        assert tool["title"] and hints["title"] == tool["title"]
        assert hints["readOnlyHint"] is (name in READ_ONLY)
        # description and inputSchema are exactly the seed's, untouched
        base = next(t for t in META_TOOLS if t.name == name)
        assert tool["description"] == base.description and tool["inputSchema"] == base.input_schema
    for name in ("execute_tools", "curl_session"):
        assert tools[name]["annotations"]["destructiveHint"] is True
        assert tools[name]["annotations"]["openWorldHint"] is True
    assert tools["curl_session"]["title"].endswith("(high risk)")
    assert set(t for t in tools if "outputSchema" in tools[t]) == {
        "whoami",
        "list_integrations",
        "connect",
        "get_auth_url",
        "wait_for_connection",
        "curl_session",
    }


async def test_older_revisions_get_no_fields_they_do_not_know(gw: Gateway, key: str) -> None:
    for version in (None, "2025-03-26"):  # no header on a legacy request means 2025-03-26
        for tool in await list_tools(gw, key, version):
            assert "annotations" in tool and "title" not in tool and "outputSchema" not in tool
    for tool in await list_tools(gw, key, "2024-11-05"):
        assert set(tool) == {"name", "description", "inputSchema"}


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25", MODERN])
async def test_structured_content_beside_the_byte_identical_text(gw: Gateway, key: str, version: str) -> None:
    tools = {t["name"]: t for t in await list_tools(gw, key, version)}
    for name, args in (
        ("whoami", {}),
        ("list_integrations", {}),
        ("search_tools", {"query": "create jot"}),
        ("execute_tools", {"executions": [{"tool": "list_jots"}, {"tool": "nope"}]}),
        ("connect", {"integration": "github"}),
        ("curl_session", {"integrations": ["nope"]}),
    ):
        result = await call(gw, key, version, name, args)
        text = result["content"][0]["text"]
        assert result["structuredContent"] == json.loads(text)
        # the text block is exactly what it was before structuredContent existed
        assert result["content"] == render_tool_payload(json.loads(text), gw.settings.result_cap_chars)
        if "outputSchema" in tools[name]:
            jsonschema.validate(result["structuredContent"], tools[name]["outputSchema"])


async def test_no_structured_content_for_older_revisions(gw: Gateway, key: str) -> None:
    for version in (None, "2025-03-26", "2024-11-05"):
        result = await call(gw, key, version, "whoami", {})
        assert "structuredContent" not in result and json.loads(result["content"][0]["text"])["email"]


async def test_a_capped_result_carries_no_structured_content(gw: Gateway, key: str) -> None:
    object.__setattr__(gw.settings, "result_cap_chars", 200)
    body = "x" * 500
    args = {"executions": [{"tool": "create_jot", "args": {"title": "t", "body": body}}]}
    result = await call(gw, key, "2025-06-18", "execute_tools", args)
    assert "[truncated:" in result["content"][0]["text"]
    assert "structuredContent" not in result


# -- the portal session path -------------------------------------------------------------------


def session_headers(gw: Gateway, user_id: str, **extra: str) -> tuple[dict[str, str], dict[str, str]]:
    cookie = gw.sessions.issue(user_id)
    csrf = _csrf_for(gw, cookie)
    headers = {"Origin": BASE, "X-CSRF-Token": csrf, "Sec-Fetch-Site": "same-origin", **extra}
    return headers, {SESSION_COOKIE: cookie}


def _csrf_for(gw: Gateway, cookie: str) -> str:
    from starlette.requests import Request

    scope = {"type": "http", "headers": [(b"cookie", f"{SESSION_COOKIE}={cookie}".encode())]}
    return gw.sessions.csrf_token(Request(scope))


async def test_the_portal_session_reaches_mcp_from_the_same_origin(gw: Gateway) -> None:
    ada = gw.stores.users.get_or_create("ada@example.com")
    headers, cookies = session_headers(gw, ada.id)
    r = await post(gw, rpc("tools/call", {"name": "whoami", "arguments": {}}), headers, cookies)
    assert r.status_code == 200
    assert json.loads(r.json()["result"]["content"][0]["text"]) == {
        "id": ada.id,
        "email": "ada@example.com",
        "grant": {"access": "full", "integrations": "all", "deniedTools": []},  # a portal session: full
    }
    # what ran through the session is audited as the session's user, via "session"
    await post(
        gw,
        rpc("tools/call", {"name": "execute_tools", "arguments": {"executions": [{"tool": "list_jots"}]}}),
        headers,
        cookies,
    )
    (event,) = gw.stores.audit.list_for(ada.id)
    assert event["via"] == "session" and event["tool"] == "list_jots"


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"Origin": "http://127.0.0.1:9999"}, "another port on loopback (same site, other origin)"),
        ({"Origin": "https://evil.example"}, "another site"),
        ({"Origin": None}, "no Origin at all"),
        ({"X-CSRF-Token": None}, "no CSRF token"),
        ({"X-CSRF-Token": "0" * 64}, "a wrong CSRF token"),
        ({"Sec-Fetch-Site": "same-site"}, "the browser says the page is not same-origin"),
    ],
)
async def test_a_session_call_without_every_check_is_refused(
    gw: Gateway, change: dict[str, str | None], why: str
) -> None:
    ada = gw.stores.users.get_or_create("ada@example.com")
    headers, cookies = session_headers(gw, ada.id)
    for name, value in change.items():
        headers.pop(name, None)
        if value is not None:
            headers[name] = value
    r = await post(gw, rpc("tools/call", {"name": "whoami", "arguments": {}}), headers, cookies)
    assert r.status_code == 403, why
    assert r.json()["error"]["message"].startswith("Forbidden"), why
    assert "result" not in r.json()


async def test_a_bearer_token_wins_over_a_session_cookie(gw: Gateway, key: str) -> None:
    bob = gw.stores.users.get_or_create("bob@example.com")
    _, cookies = session_headers(gw, bob.id)
    r = await post(
        gw,
        rpc("tools/call", {"name": "whoami", "arguments": {}}),
        {"Authorization": f"Bearer {key}"},
        cookies,
    )
    assert json.loads(r.json()["result"]["content"][0]["text"])["email"] == "ada@example.com"


async def test_a_forged_or_expired_session_is_not_a_way_in(gw: Gateway) -> None:
    headers = {"Origin": BASE, "X-CSRF-Token": "x"}
    r = await post(gw, rpc("tools/list"), headers, {SESSION_COOKIE: "usr_x.9999999999.deadbeef"})
    assert r.status_code == 403
    r = await post(gw, rpc("tools/list"), {"Origin": BASE})  # no cookie, no key: the usual 401
    assert r.status_code == 401 and "resource_metadata" in r.headers["www-authenticate"]
