"""The /mcp wire protocol in-process: versions, headers, errors, cap and image blocks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from workbench.composition import Gateway
from workbench.mcp.protocol import render_tool_payload
from workbench.runtime.local_app import create_local_app

from tests.support.demo_plugins import demo_registry, demo_upstream
from tests.support.gateways import make_gateway

MODERN = "2026-07-28"


@pytest.fixture
def gw(tmp_path: Path) -> Gateway:
    return make_gateway(tmp_path)


@pytest.fixture
def key(gw: Gateway) -> str:
    return gw.auth.mint_key(gw.stores.users.get_or_create("ada@example.com"))


async def post(gw: Gateway, body: Any, headers: dict[str, str] | None = None) -> httpx.Response:
    transport = httpx.ASGITransport(app=create_local_app(gw))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8787") as client:
        return await client.post("/mcp", content=json.dumps(body), headers=headers or {})


def rpc(method: str, params: dict[str, Any] | None = None, id_: int | None = 1) -> dict[str, Any]:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params or {}}
    if id_ is not None:
        msg["id"] = id_
    return msg


def modern_meta() -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
    }


async def test_initialize_negotiates_and_mints_no_session(gw: Gateway, key: str) -> None:
    resp = await post(
        gw,
        rpc(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        ),
        {"Authorization": f"Bearer {key}"},
    )
    assert resp.status_code == 200 and "mcp-session-id" not in resp.headers
    assert resp.json()["result"]["protocolVersion"] == "2025-06-18"
    unknown = await post(
        gw, rpc("initialize", {"protocolVersion": "1999-01-01"}), {"Authorization": f"Bearer {key}"}
    )
    assert unknown.json()["result"]["protocolVersion"] == "2025-11-25"


async def test_notification_is_accepted_with_202(gw: Gateway, key: str) -> None:
    resp = await post(gw, rpc("notifications/initialized", id_=None), {"Authorization": f"Bearer {key}"})
    assert resp.status_code == 202 and resp.content == b""


async def test_get_and_delete_are_405(gw: Gateway) -> None:
    transport = httpx.ASGITransport(app=create_local_app(gw))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8787") as client:
        assert (await client.get("/mcp")).status_code == 405
        assert (await client.delete("/mcp")).status_code == 405


async def test_foreign_origin_is_403(gw: Gateway, key: str) -> None:
    resp = await post(gw, rpc("ping"), {"Authorization": f"Bearer {key}", "Origin": "https://evil.example"})
    assert resp.status_code == 403


async def test_unknown_method_is_32601(gw: Gateway, key: str) -> None:
    resp = await post(gw, rpc("resources/list"), {"Authorization": f"Bearer {key}"})
    assert resp.status_code == 200 and resp.json()["error"]["code"] == -32601


async def test_modern_request_is_served_statelessly(gw: Gateway, key: str) -> None:
    headers = {
        "Authorization": f"Bearer {key}",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": "tools/call",
        "Mcp-Name": "whoami",
    }
    resp = await post(
        gw, rpc("tools/call", {"name": "whoami", "arguments": {}, "_meta": modern_meta()}), headers
    )
    body = resp.json()["result"]
    assert body["resultType"] == "complete"
    assert body["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "workbench"
    assert json.loads(body["content"][0]["text"])["email"] == "ada@example.com"


@pytest.mark.parametrize(
    ("headers", "code"),
    [
        ({"Mcp-Method": "tools/call", "Mcp-Name": "whoami"}, -32020),  # version header missing
        ({"MCP-Protocol-Version": MODERN, "Mcp-Name": "whoami"}, -32020),  # method header missing
        ({"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/list", "Mcp-Name": "whoami"}, -32020),
        ({"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": "search_tools"}, -32020),
        ({"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call"}, -32020),
        ({"MCP-Protocol-Version": "2025-11-25", "Mcp-Method": "tools/call", "Mcp-Name": "whoami"}, -32020),
    ],
)
async def test_modern_header_mismatch_is_400(
    gw: Gateway, key: str, headers: dict[str, str], code: int
) -> None:
    resp = await post(
        gw,
        rpc("tools/call", {"name": "whoami", "arguments": {}, "_meta": modern_meta()}),
        {"Authorization": f"Bearer {key}", **headers},
    )
    assert resp.status_code == 400 and resp.json()["error"]["code"] == code


async def test_base64_name_header_is_decoded(gw: Gateway, key: str) -> None:
    headers = {
        "Authorization": f"Bearer {key}",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": "tools/call",
        "Mcp-Name": "=?base64?d2hvYW1p?=",
    }
    resp = await post(
        gw, rpc("tools/call", {"name": "whoami", "arguments": {}, "_meta": modern_meta()}), headers
    )
    assert resp.status_code == 200


async def test_unsupported_version_lists_supported(gw: Gateway, key: str) -> None:
    meta = {**modern_meta(), "io.modelcontextprotocol/protocolVersion": "2099-01-01"}
    resp = await post(
        gw,
        rpc("tools/list", {"_meta": meta}),
        {"Authorization": f"Bearer {key}", "MCP-Protocol-Version": "2099-01-01", "Mcp-Method": "tools/list"},
    )
    assert resp.status_code == 400
    err = resp.json()["error"]
    assert (
        err["code"] == -32022
        and err["data"]["requested"] == "2099-01-01"
        and MODERN in err["data"]["supported"]
    )


async def test_modern_unknown_method_is_404(gw: Gateway, key: str) -> None:
    resp = await post(
        gw,
        rpc("prompts/list", {"_meta": modern_meta()}),
        {"Authorization": f"Bearer {key}", "MCP-Protocol-Version": MODERN, "Mcp-Method": "prompts/list"},
    )
    assert resp.status_code == 404 and resp.json()["error"]["code"] == -32601


async def test_missing_client_capabilities_is_invalid_params(gw: Gateway, key: str) -> None:
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN}
    resp = await post(
        gw,
        rpc("tools/list", {"_meta": meta}),
        {"Authorization": f"Bearer {key}", "MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/list"},
    )
    assert resp.status_code == 400 and resp.json()["error"]["code"] == -32602


async def test_discover(gw: Gateway, key: str) -> None:
    resp = await post(
        gw,
        rpc("server/discover", {"_meta": modern_meta()}),
        {"Authorization": f"Bearer {key}", "MCP-Protocol-Version": MODERN, "Mcp-Method": "server/discover"},
    )
    result = resp.json()["result"]
    assert MODERN in result["supportedVersions"] and "2025-06-18" in result["supportedVersions"]
    assert result["capabilities"] == {"tools": {"listChanged": False}}


async def test_a_failed_meta_tool_call_is_an_error_result(gw: Gateway, key: str) -> None:
    """The whole answer is an error: isError true, the same text as before (a result, not a JSON-RPC
    error, so the agent reads the sentence)."""
    resp = await post(
        gw,
        rpc("tools/call", {"name": "get_tool_schema", "arguments": {"tool": "nope"}}),
        {"Authorization": f"Bearer {key}"},
    )
    result = resp.json()["result"]
    assert result["isError"] is True and json.loads(result["content"][0]["text"]) == {
        "error": "Tool not found"
    }
    resp = await post(
        gw,
        rpc("tools/call", {"name": "connect", "arguments": {"integration": "no_such_integration"}}),
        {"Authorization": f"Bearer {key}"},
    )
    result = resp.json()["result"]
    assert result["isError"] is True
    assert json.loads(result["content"][0]["text"]) == {"error": "Unknown integration: no_such_integration"}


@pytest.mark.parametrize(
    ("items", "is_error"),
    [
        ([{"tool": "list_jots", "args": {}}], False),
        ([{"tool": "no_such_tool", "args": {}}], True),
        ([{"tool": "list_jots", "args": {}}, {"tool": "no_such_tool", "args": {}}], False),
    ],
)
async def test_execute_tools_is_an_error_only_when_every_item_failed(
    gw: Gateway, key: str, items: list[dict[str, Any]], is_error: bool
) -> None:
    resp = await post(
        gw,
        rpc("tools/call", {"name": "execute_tools", "arguments": {"executions": items}}),
        {"Authorization": f"Bearer {key}"},
    )
    result = resp.json()["result"]
    assert result["isError"] is is_error
    assert len(json.loads(result["content"][0]["text"])["results"]) == len(items)


def test_result_cap_truncates_with_a_notice() -> None:
    blocks = render_tool_payload({"results": [{"result": "x" * 70_000}]}, 60_000)
    text = blocks[0]["text"]
    assert text.startswith('{"results": [{"result": "xxx')
    body, notice = text[:60_000], text[60_000:]
    assert len(body) == 60_000
    assert notice.startswith("\n\n[truncated: the response is longer than the cap of 60000 characters.")


def test_the_cap_keeps_the_exact_json_prefix_whatever_the_shape() -> None:
    """Capped text is exactly the first `cap` characters of the payload's JSON (the same text
    json.dumps gives), for wide, deep, numeric and non-ASCII payloads, at every cap around the size."""
    shapes = [
        {"results": [{"result": {"rows": [[i, i * 0.5, None, True] for i in range(300)]}}]},
        {"results": [{"result": {"é": ["ü" * 50, {"k": list(range(40))}] * 30}}]},
        {"results": [{"result": "x" * 900}, {"error": "boom"}]},
    ]
    for payload in shapes:
        full = json.dumps(payload, ensure_ascii=False)
        for cap in (50, len(full) // 3, len(full) - 1, len(full), len(full) + 1, 10 * len(full)):
            text = render_tool_payload(payload, cap)[0]["text"]
            if cap >= len(full):
                assert text == full
            else:
                assert text[:cap] == full[:cap] and text[cap:].startswith("\n\n[truncated:")


def test_a_huge_result_is_not_serialised_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 5 MB result is encoded only up to the cap: the encoder is never asked for all of it."""
    import workbench.mcp.protocol as protocol

    produced: list[int] = []
    real = protocol._ENCODER.iterencode

    def counting(value: Any) -> Any:
        for chunk in real(value):
            produced.append(len(chunk))
            yield chunk

    monkeypatch.setattr(protocol._ENCODER, "iterencode", counting)
    monkeypatch.setattr(protocol._ENCODER, "encode", lambda value: pytest.fail("encoded whole"))
    payload = {"results": [{"result": {"rows": ["r" * 100] * 50_000}}]}
    text = render_tool_payload(payload, 60_000)[0]["text"]
    assert text.startswith('{"results": [{"result": {"rows": ["rrr')
    assert sum(produced) < 60_000 + 1_000


def test_under_the_cap_is_untouched() -> None:
    blocks = render_tool_payload({"results": [{"result": "short"}]}, 60_000)
    assert blocks == [{"type": "text", "text": '{"results": [{"result": "short"}]}'}]


def test_mcp_image_sentinel_turns_into_image_blocks_even_inside_a_batch() -> None:
    sentinel = {"_mcpImage": {"data": "iVBORw0KGgo=", "mimeType": "image/png"}}
    blocks = render_tool_payload({"results": [{"result": {"ok": 1}}, {"result": sentinel}]}, 60_000)
    assert blocks == [{"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}]
    assert render_tool_payload(sentinel, 60_000) == blocks


async def test_execute_tools_over_mcp_shares_one_60000_character_budget(tmp_path: Path) -> None:
    gw = make_gateway(tmp_path, registry=demo_registry(), transport=demo_upstream([]))
    key = gw.auth.mint_key(gw.stores.users.get_or_create("ada@example.com"))
    one = {"tool": "free_item", "args": {"value": "x" * 20_000}}  # each result is over 40,000 characters
    resp = await post(
        gw,
        rpc("tools/call", {"name": "execute_tools", "arguments": {"executions": [one, one]}}),
        {"Authorization": f"Bearer {key}"},
    )
    content = resp.json()["result"]["content"]
    assert len(content) == 1 and content[0]["type"] == "text"
    body, notice = content[0]["text"][:60_000], content[0]["text"][60_000:]
    assert body.startswith('{"results": [{"result": {"value": "xxx')
    assert notice.startswith("\n\n[truncated: the response is longer than the cap of 60000 characters.")
