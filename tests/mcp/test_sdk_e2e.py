"""The local gateway as a real process, driven by the official `mcp` SDK client over HTTP."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import ClientSession
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client

from tests.support.processes import local_gateway

pytestmark = pytest.mark.e2e

META_TOOLS = [
    "search_tools",
    "get_tool_schema",
    "execute_tools",
    "whoami",
    "list_integrations",
    "connect",
    "wait_for_connection",
    "get_auth_url",
    "curl_session",
]


@pytest.fixture(scope="module")
def gateway_proc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    data = tmp_path_factory.mktemp("gw")
    with local_gateway(data, extra_env={"WORKBENCH_EXTRA_PLUGINS": "tests.support.slow_plugin"}) as (
        base,
        key,
    ):
        assert key.startswith("wb_")
        yield base, key


@asynccontextmanager
async def legacy_session(base: str, key: str) -> AsyncIterator[ClientSession]:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30) as http:
        async with streamable_http_client(f"{base}/mcp", http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


def payload(result: Any) -> Any:
    assert result.is_error is False
    assert len(result.content) == 1 and result.content[0].type == "text"
    return json.loads(result.content[0].text)


async def test_lists_exactly_the_nine_meta_tools(gateway_proc: tuple[str, str]) -> None:
    async with legacy_session(*gateway_proc) as s:
        tools = (await s.list_tools()).tools
    assert [t.name for t in tools] == META_TOOLS
    curl = next(t for t in tools if t.name == "curl_session")
    assert curl.description.startswith("HIGH RISK — do not call without explicit user approval.")


async def test_mixed_batch_result_shapes_to_the_letter(gateway_proc: tuple[str, str]) -> None:
    async with legacy_session(*gateway_proc) as s:
        result = await s.call_tool(
            "execute_tools",
            {
                "executions": [
                    {"tool": "list_jots", "args": {}},
                    {"tool": "no_such_tool", "args": {}},
                    {"tool": "create_jot", "args": {"body": 5}},
                    {"tool": "github_list_prs", "args": {"owner": "acme", "repo": "demo-repo"}},
                ]
            },
        )
    assert payload(result) == {
        "results": [
            {"result": {"jots": []}},
            {"error": "Tool not found"},
            {
                "error": "Invalid arguments for create_jot: title: Field required; body: Input should be a valid string"
            },
            {
                "error": "NOT_CONNECTED",
                "integration": "github",
                "message": "github not connected. Use connect('github') to connect.",
            },
        ]
    }


async def test_batch_of_twenty_runs_at_most_eight_at_once(gateway_proc: tuple[str, str]) -> None:
    async with legacy_session(*gateway_proc) as s:
        result = await s.call_tool(
            "execute_tools", {"executions": [{"tool": "probe_sleep", "args": {"ms": 150}} for _ in range(20)]}
        )
    peaks = [r["result"]["peak"] for r in payload(result)["results"]]
    assert len(peaks) == 20 and max(peaks) == 8


async def test_unknown_meta_tool_and_bad_meta_args_are_json_rpc_errors(gateway_proc: tuple[str, str]) -> None:
    from mcp.shared.exceptions import MCPError

    async with legacy_session(*gateway_proc) as s:
        with pytest.raises(MCPError) as unknown:
            await s.call_tool("execute_tool", {"executions": []})
        with pytest.raises(MCPError) as bad:
            await s.call_tool("execute_tools", {"executions": "nope"})
    assert unknown.value.error.code == -32602
    assert bad.value.error.code == -32602


async def test_whoami_and_modern_stateless_client(gateway_proc: tuple[str, str]) -> None:
    base, key = gateway_proc
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30) as http:
        transport = streamable_http_client(f"{base}/mcp", http_client=http)
        async with Client(transport, mode="auto") as client:
            assert client.session.discover_result is not None  # spoke 2026-07-28, no handshake
            me = payload(await client.call_tool("whoami", {}))
            tools = (await client.list_tools()).tools
    assert me["email"] == "you@localhost" and me["id"].startswith("usr_")
    assert [t.name for t in tools] == META_TOOLS


async def test_bad_key_gets_401_and_nothing_else(gateway_proc: tuple[str, str]) -> None:
    base, key = gateway_proc
    async with httpx2.AsyncClient(timeout=10) as http:
        for auth in (
            None,
            "Bearer wb_nope",
            "Bearer " + key[:-1] + ("A" if key[-1] != "A" else "B"),
            "Basic x",
        ):
            headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
            if auth:
                headers["Authorization"] = auth
            resp = await http.post(
                f"{base}/mcp",
                headers=headers,
                content=json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/list"}),
            )
            assert resp.status_code == 401
            assert resp.headers["www-authenticate"] == (
                f'Bearer resource_metadata="{base}/.well-known/oauth-protected-resource/mcp"'
            )
            body = resp.json()
            assert body["id"] == 7 and body["error"]["code"] == -32001 and "result" not in body


def test_cli_keys_create_prints_a_key_stored_only_as_a_hash(tmp_path: Path) -> None:
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "workbench.cli", "keys", "create", "Grace@Example.com"],
        env={"WORKBENCH_DATA_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    key = out.stdout.strip()
    assert key.startswith("wb_") and len(key) > 50
    assert (tmp_path / "local.key").stat().st_mode & 0o777 == 0o600
    # the key is stored only as a hash
    secret = key[len("wb_") + 12 + 1 :]
    assert len(secret) == 43
    assert secret.encode() not in (tmp_path / "workbench.sqlite3").read_bytes()
