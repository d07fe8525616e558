"""Issue 12: request bodies are capped while they stream in, on every surface that reads a body.

Each surface is driven in-process through its real ASGI app with httpx's ASGI transport, which
feeds the body to the app one chunk at a time as the app asks for it. So the tests can count what
the gateway pulled: past the cap it stops asking (chunked), and with a declared Content-Length
over the cap it asks for nothing. The answer is 413 in that surface's own documented shape, and
nothing the request asked for happened.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from workbench.composition import Gateway
from workbench.mcp.app import create_mcp_app
from workbench.proxy.app import create_proxy_app
from workbench.rest.app import create_rest_app
from workbench.runtime.local_app import create_local_app
from workbench.web.app import create_web_app

from tests.support.demo_plugins import demo_registry, demo_upstream
from tests.support.gateways import make_gateway, principal_for

MiB = 1024 * 1024
KiB = 1024
CHUNK = 16 * KiB


@dataclass
class Feed:
    """A request body produced on demand; `pulled` is how much of it the app asked for."""

    total: int
    fill: bytes = b"a"
    pulled: int = 0
    chunks: list[int] = field(default_factory=list)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while self.pulled < self.total:
            size = min(CHUNK, self.total - self.pulled)
            self.pulled += size
            self.chunks.append(size)
            yield self.fill * size


@pytest.fixture
def gw(tmp_path: Path) -> Gateway:
    return make_gateway(tmp_path, registry=demo_registry(), transport=demo_upstream([]), dev_login=True)


def client(app: Starlette, **headers: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="https://127.0.0.1:8787", headers=headers
    )


async def send_both_ways(
    http: httpx.AsyncClient, path: str, cap: int, headers: dict[str, str]
) -> list[httpx.Response]:
    """The same over-cap body, once chunked and once with its Content-Length declared."""
    chunked = Feed(3 * cap)
    r1 = await http.post(path, content=chunked, headers=headers)
    assert "content-length" not in r1.request.headers
    assert chunked.pulled <= cap + CHUNK, f"{path} read {chunked.pulled} bytes of a {cap}-byte cap"
    declared = Feed(3 * cap)
    r2 = await http.post(path, content=declared, headers={**headers, "Content-Length": str(3 * cap)})
    assert declared.pulled == 0, f"{path} read a body whose declared length was over the cap"
    for r in (r1, r2):  # the unread rest is not drained for keep-alive
        assert r.headers["connection"] == "close"
    return [r1, r2]


async def test_mcp_answers_413_with_a_json_rpc_error(gw: Gateway) -> None:
    key = gw.auth.mint_key(principal_for(gw).user)
    async with client(create_local_app(gw)) as http:
        for r in await send_both_ways(
            http, "/mcp", 4 * MiB, {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
        ):
            assert r.status_code == 413
            assert r.json() == {
                "jsonrpc": "2.0",
                "id": None,
                "error": {"code": -32600, "message": "Request body too large (max 4 MiB)"},
            }
        # just under the cap is read and parsed (and refused as JSON, not as a size)
        r = await http.post("/mcp", content=b" " * (4 * MiB - 1), headers={"Authorization": f"Bearer {key}"})
        assert r.status_code == 400 and r.json()["error"]["code"] == -32700


async def test_rest_answers_413_after_checking_the_key(gw: Gateway) -> None:
    me = principal_for(gw)
    key = gw.auth.mint_key(me.user)
    async with client(create_local_app(gw)) as http:
        for r in await send_both_ways(http, "/rest/jots", 4 * MiB, {"Authorization": f"Bearer {key}"}):
            assert (r.status_code, r.json()) == (413, {"error": "Request body too large (max 4 MiB)"})
        # no key: 401 first, and the body is not read at all
        feed = Feed(8 * MiB)
        r = await http.post("/rest/jots", content=feed)
        assert r.status_code == 401 and feed.pulled == 0
    assert gw.stores.audit.list_for(me.user.id) == [] and gw.stores.jots.list_for(me.user.id) == []


@pytest.mark.parametrize(
    ("path", "code", "content_type"),
    [
        ("/register", "invalid_client_metadata", "application/json"),
        ("/token", "invalid_request", "application/x-www-form-urlencoded"),
        ("/revoke", "invalid_request", "application/x-www-form-urlencoded"),
    ],
)
async def test_oauth_endpoints_answer_413_in_their_error_shape(
    gw: Gateway, path: str, code: str, content_type: str
) -> None:
    async with client(create_web_app(gw)) as http:
        for r in await send_both_ways(http, path, 64 * KiB, {"Content-Type": content_type}):
            assert r.status_code == 413
            assert r.json() == {"error": code, "error_description": "Request body too large (max 64 KiB)"}
            assert (
                r.headers["cache-control"] == "no-store" and r.headers["access-control-allow-origin"] == "*"
            )
    assert gw.stores.oauth_clients is not None and gw.stores.oauth_clients.count(gw.clock()) == 0


async def test_connect_redeem_answers_json_callers_in_json_and_the_form_with_a_page(gw: Gateway) -> None:
    async with client(create_web_app(gw)) as http:
        for r in await send_both_ways(
            http, "/api/connect/redeem", 64 * KiB, {"Content-Type": "application/json"}
        ):
            assert (r.status_code, r.json()) == (413, {"error": "Request body too large (max 64 KiB)"})
        # the link page's form post is read once the user is signed in
        assert (await http.post("/api/auth/dev-login", data={"email": "ada@example.com"})).status_code == 303
        form = {"Content-Type": "application/x-www-form-urlencoded", "Origin": "https://127.0.0.1:8787"}
        for r in await send_both_ways(http, "/api/connect/redeem", 64 * KiB, form):
            assert r.status_code == 413 and r.headers["content-type"].startswith("text/html")
            assert "Request body too large (max 64 KiB)" in r.text


async def test_portal_forms_answer_413_and_change_nothing(gw: Gateway) -> None:
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    async with client(create_web_app(gw)) as http:
        # the development sign-in reads its form before anyone is signed in
        for r in await send_both_ways(http, "/api/auth/dev-login", 64 * KiB, form):
            assert r.status_code == 413 and "Request body too large (max 64 KiB)" in r.text
        assert (await http.post("/api/auth/dev-login", data={"email": "ada@example.com"})).status_code == 303
        page = await http.get("/portal/api-keys")
        csrf = re.search(r'name="csrf" value="([0-9a-f]{64})"', page.text)
        assert csrf is not None
        user = gw.stores.users.get_or_create("ada@example.com")
        before = gw.stores.api_keys.list_for(user.id)
        big = f"csrf={csrf.group(1)}&label=" + "x" * (70 * KiB)
        r = await http.post(
            "/portal/api-keys", content=big, headers={**form, "Origin": "https://127.0.0.1:8787"}
        )
        assert r.status_code == 413 and "Request body too large" in r.text
        assert gw.stores.api_keys.list_for(user.id) == before  # no key was minted


async def test_the_proxy_refuses_an_oversized_body_as_an_audited_413(gw: Gateway) -> None:
    me = principal_for(gw)
    gw.credentials.save(me.user.id, "demo", {"access_token": "tok-abcdefgh"})
    token = gw.curl.mint(me, ["demo"], 900)["token"]
    async with client(create_proxy_app(gw)) as http:
        for r in await send_both_ways(http, "/c/demo/echo", 6 * MiB, {"Authorization": f"Bearer {token}"}):
            assert (r.status_code, r.json()) == (413, {"error": "Request body too large for the proxy"})
        # without a valid token the answer is the same shape, and nothing is read
        feed = Feed(12 * MiB)
        r = await http.post("/c/demo/echo", content=feed, headers={"Content-Length": str(12 * MiB)})
        assert feed.pulled == 0 and r.status_code in (401, 413)
    proxied = [e for e in gw.stores.audit.list_for(me.user.id) if e["action"] == "PROXY"]
    assert [(e["status"], e["error"]) for e in proxied] == [(413, "Request body too large for the proxy")] * 2


@pytest.mark.parametrize(
    ("factory", "path", "cap"),
    [
        (create_mcp_app, "/mcp", 4 * MiB),
        (create_rest_app, "/rest/jots", 4 * MiB),
        (create_web_app, "/register", 64 * KiB),
        (create_proxy_app, "/c/demo/x", 6 * MiB),
    ],
)
async def test_every_lambda_app_carries_the_guard(
    gw: Gateway, factory: Callable[[Gateway], Starlette], path: str, cap: int
) -> None:
    """The Lambda functions serve these factories' apps; each applies the same caps."""
    key = gw.auth.mint_key(principal_for(gw).user)
    async with client(factory(gw), Authorization=f"Bearer {key}") as http:
        feed = Feed(3 * cap)
        r = await http.post(path, content=feed)
        assert feed.pulled <= cap + CHUNK
        assert r.status_code in (401, 413)  # the proxy checks its own token first


async def test_a_body_just_under_the_cap_reaches_the_handler_whole(gw: Gateway) -> None:
    me = principal_for(gw)
    key = gw.auth.mint_key(me.user)
    jot = json.dumps({"tool": "create_jot", "args": {"title": "t", "body": "z" * 90_000}}).encode()
    raw = jot + b" " * (4 * MiB - len(jot))  # trailing whitespace is still one JSON value

    async def chunks() -> AsyncIterator[bytes]:
        for i in range(0, len(raw), 7000):
            yield raw[i : i + 7000]

    async with client(create_local_app(gw), Authorization=f"Bearer {key}") as http:
        r = await http.post("/rest/jots", content=chunks())
        assert r.status_code == 200, r.text
    (stored,) = gw.stores.jots.list_for(me.user.id)
    assert len(stored.body) == 90_000


def test_rules_pick_the_most_specific_prefix() -> None:
    from workbench.runtime.local_app import BODY_RULES

    def cap(path: str) -> Any:
        found = [r for r in BODY_RULES if r.matches(path)]
        return max(found, key=lambda r: len(r.prefix)).limit

    assert cap("/mcp") == 4 * MiB and cap("/mcpx") == 64 * KiB
    assert cap("/rest/jots") == 4 * MiB and cap("/c/github/repos") == 6 * MiB
    assert cap("/portal/browser/conn_1/input") == 16 * KiB and cap("/portal/api-keys") == 64 * KiB
    assert cap("/register") == cap("/token") == cap("/api/connect/redeem") == 64 * KiB
