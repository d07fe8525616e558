"""The whole path through a real `workbench serve` process (SQLite store, local key) and the
official SDK client: a custom app registered with a vault token, found by search_tools, executed;
a jot shared and opened on the jots host."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.external.servers import BEARER_TOKEN, Upstreams
from tests.support.processes import local_gateway

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def gateway_proc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    with local_gateway(Path(tmp_path_factory.mktemp("gw"))) as (base, key):
        yield base, key


@asynccontextmanager
async def session(base: str, key: str) -> AsyncIterator[ClientSession]:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30) as http:
        async with streamable_http_client(f"{base}/mcp", http_client=http) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                yield s


async def call(s: ClientSession, name: str, **args: Any) -> Any:
    result = await s.call_tool(name, args)
    assert result.is_error is False
    return json.loads(result.content[0].text)  # type: ignore[union-attr]


async def run(s: ClientSession, tool: str, **args: Any) -> Any:
    return (await call(s, "execute_tools", executions=[{"tool": tool, "args": args}]))["results"][0]


async def test_custom_app_through_a_real_gateway(gateway_proc: tuple[str, str], ups: Upstreams) -> None:
    base, key = gateway_proc
    async with session(base, key) as s:
        await run(s, "vault_set", name="UP", value=BEARER_TOKEN)
        reg = await run(
            s,
            "apps_register_server",
            name="guarded",
            url=ups.url("bearer"),
            auth={"type": "bearer", "token": "{{vault:UP}}"},
        )
        assert reg["result"]["tools"] == ["guarded_secret_report"]
        hits = (await call(s, "search_tools", query="secret report on a topic"))["tools"]
        assert hits[0]["name"] == "guarded_secret_report" and hits[0]["integration"] == "guarded"
        assert await run(s, "guarded_secret_report", topic="q4") == {"result": "report on q4"}
        schema = await call(s, "get_tool_schema", tool="guarded_secret_report")
        assert schema["schema"]["required"] == ["topic"]
    assert {r.headers["authorization"] for r in ups.recorders["bearer"].seen} == {f"Bearer {BEARER_TOKEN}"}


async def test_shared_jot_on_the_real_host(gateway_proc: tuple[str, str]) -> None:
    base, key = gateway_proc
    async with session(base, key) as s:
        made = (
            await run(s, "create_jot", title="Hi <b>", body="**bold** <script>x()</script>", shared=True)
        )["result"]
    async with httpx.AsyncClient() as http:
        page = await http.get(made["shareUrl"])
        assert page.status_code == 200
        assert page.headers["content-security-policy"].startswith(
            "default-src 'none'; style-src 'unsafe-inline'"
        )
        assert "<strong>bold</strong> &lt;script&gt;x()&lt;/script&gt;" in page.text
        assert (await http.get(made["url"])).status_code == 401  # the owner page needs a portal session
