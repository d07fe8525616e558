"""The real `workbench serve` process: browser tools through the official `mcp` client (screenshot as
an image block), and a cookie integration connected end to end in a real Chromium driven by
Playwright through the origin-gated live-browser bridge."""

from __future__ import annotations

import base64
import json
import re
import sqlite3
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from workbench.composition import build_gateway
from workbench.settings import Settings
from workbench.web.sessions import SESSION_COOKIE

from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS
from tests.browser.site import PASSWORD, PASSWORD_BOX, SIGNIN_BOX, USER, USER_BOX, Site, center
from tests.support.processes import local_gateway

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio(loop_scope="module")]

OWNER = "you@localhost"  # the first-run user, whose API key the gateway prints


@dataclass
class Running:
    base: str
    key: str
    data: Path

    def session_for(self, email: str) -> str:
        """A portal session cookie value, minted with the gateway's own session secret."""
        gw = build_gateway(Settings(store="sqlite", data_dir=self.data, public_url=self.base))
        return gw.sessions.issue(gw.stores.users.get_or_create(email).id)


@pytest.fixture(scope="module")
def gateway_proc(tmp_path_factory: pytest.TempPathFactory, site: Site) -> Iterator[Running]:
    data = tmp_path_factory.mktemp("gw")
    env = {"WORKBENCH_EXTRA_PLUGINS": "tests.browser.cookie_site_plugin", "COOKIE_SITE_URL": site.url}
    with local_gateway(data, extra_env=env) as (base, key):
        assert key.startswith("wb_")
        yield Running(base, key, data)


@asynccontextmanager
async def agent(run: Running) -> AsyncIterator[ClientSession]:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {run.key}"}, timeout=60) as http:
        async with streamable_http_client(f"{run.base}/mcp", http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


async def call(session: ClientSession, tool: str, args: dict[str, Any]) -> Any:
    result = await session.call_tool(tool, args)
    payload = json.loads(result.content[0].text)  # type: ignore[union-attr]
    # isError says whether the whole answer failed: a meta-tool's {"error"}, or every item of a batch.
    items = payload.get("results") if isinstance(payload, dict) else None
    failed = all("error" in i for i in items) if items else isinstance(payload, dict) and "error" in payload
    assert result.is_error is failed, result
    assert len(result.content) == 1 and result.content[0].type == "text"
    return json.loads(result.content[0].text)


async def execute(session: ClientSession, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    out = await call(session, "execute_tools", {"executions": [{"tool": tool, "args": args}]})
    answer: dict[str, Any] = out["results"][0]
    return answer


# -- browser tools over MCP ----------------------------------------------------------------------------


async def test_screenshot_arrives_as_an_image_block(gateway_proc: Running, site: Site) -> None:
    async with agent(gateway_proc) as s:
        opened = await execute(s, "browser_navigate", {"url": site.url + "/"})
        assert opened == {"result": {"url": site.url + "/", "title": "Home", "status": 200}}
        result = await s.call_tool(
            "execute_tools", {"executions": [{"tool": "browser_screenshot", "args": {}}]}
        )
        assert result.is_error is False
        assert [block.type for block in result.content] == ["image"]
        image = result.content[0]
        assert image.mime_type == "image/png"  # type: ignore[union-attr]
        assert base64.b64decode(image.data)[:8] == b"\x89PNG\r\n\x1a\n"  # type: ignore[union-attr]
        read = await execute(s, "browser_read", {})
        assert "Welcome home" in read["result"]["content"]
        assert await execute(s, "browser_close", {}) == {"result": {"closed": True}}


# -- the bridge refuses what it must ---------------------------------------------------------------------


async def start_connect(session: ClientSession) -> dict[str, Any]:
    started: dict[str, Any] = await call(session, "connect", {"integration": "cookie-site"})
    assert started["type"] == "cookie" and started["connectionId"].startswith("conn_")
    return started


def hdrs(session: str | None, origin: str | None = None, **extra: str) -> dict[str, str]:
    out = {k.replace("_", "-"): v for k, v in extra.items()}
    if session is not None:
        out["Cookie"] = f"{SESSION_COOKIE}={session}"
    if origin is not None:
        out["Origin"] = origin
    return out


async def test_bridge_refuses_other_origins_other_users_and_bad_input(gateway_proc: Running) -> None:
    run = gateway_proc
    async with agent(run) as s:
        cid = (await start_connect(s))["connectionId"]
    page_url = f"{run.base}/portal/browser/{cid}"
    mine, theirs = run.session_for(OWNER), run.session_for("eve@example.com")
    click = {"type": "click", "x": 0.5, "y": 0.5}

    async with httpx.AsyncClient(timeout=30) as http:
        # Another origin is refused on both directions, before anything else is looked at.
        for origin in ("http://evil.example", "http://127.0.0.1:1", "null"):
            r = await http.post(f"{page_url}/input", json=click, headers=hdrs(mine, origin))
            assert (r.status_code, r.json()["error"]) == (403, "FORBIDDEN_ORIGIN")
            r = await http.get(f"{page_url}/frames", headers=hdrs(mine, origin))
            assert (r.status_code, r.json()["error"]) == (403, "FORBIDDEN_ORIGIN")
            r = await http.post(f"{page_url}/finish", headers=hdrs(mine, origin))
            assert (r.status_code, r.json()["error"]) == (403, "FORBIDDEN_ORIGIN")
        # No Origin at all: a POST is refused; a GET only passes as a browser's same-origin request.
        assert (await http.post(f"{page_url}/input", json=click, headers=hdrs(mine))).status_code == 403
        assert (await http.get(f"{page_url}/frames", headers=hdrs(mine))).status_code == 403
        cross_site = hdrs(mine, Sec_Fetch_Site="same-site")
        assert (await http.get(f"{page_url}/frames", headers=cross_site)).status_code == 403

        # The right origin but not the link's user (or nobody): ACCOUNT_MISMATCH, page and API alike.
        for session in (theirs, None):
            r = await http.get(page_url, headers=hdrs(session))
            assert r.status_code == 403 and "ACCOUNT_MISMATCH" in r.text
            r = await http.post(f"{page_url}/input", json=click, headers=hdrs(session, run.base))
            assert (r.status_code, r.json()["error"]) == (403, "ACCOUNT_MISMATCH")
        unknown = f"{run.base}/portal/browser/conn_unknown/input"
        r = await http.post(unknown, json=click, headers=hdrs(mine, run.base))
        assert (r.status_code, r.json()["error"]) == (403, "ACCOUNT_MISMATCH")

        # Malformed input is refused with the failing field.
        for bad in (
            {"type": "click", "x": 2, "y": 0},
            {"type": "key", "key": "F13"},
            {"type": "launch"},
            {"type": "text", "text": "a", "script": "alert(1)"},
        ):
            r = await http.post(f"{page_url}/input", json=bad, headers=hdrs(mine, run.base))
            assert (r.status_code, r.json()["error"]) == (400, "INVALID_INPUT")
        # Not strict JSON, or over the 16 KiB cap (declared or streamed): refused, nothing opens.
        as_json = hdrs(mine, run.base, Content_Type="application/json")
        for raw in (
            b'{"type": "click", "x": NaN, "y": 0}',
            b"[" * 5000,
            b'{"type": "text", "text": "\\ud800"}',
        ):
            r = await http.post(f"{page_url}/input", content=raw, headers=as_json)
            assert (r.status_code, r.json()["error"]) == (400, "INVALID_INPUT")
        big = b'{"type": "text", "text": "' + b"a" * 20_000 + b'"}'

        async def streamed() -> AsyncIterator[bytes]:
            for i in range(0, len(big), 4096):
                yield big[i : i + 4096]

        for content in (big, streamed()):
            r = await http.post(f"{page_url}/input", content=content, headers=as_json)
            assert r.status_code == 413
            assert r.json() == {"error": "INVALID_INPUT", "message": "Request body too large (max 16 KiB)"}
        # Done before any browser session exists, then before signing in.
        r = await http.post(f"{page_url}/finish", headers=hdrs(mine, run.base))
        assert (r.status_code, r.json()["error"]) == (409, "NO_BROWSER_SESSION")
        r = await http.post(f"{page_url}/input", json=click, headers=hdrs(mine, run.base))
        assert r.status_code == 204  # opens the capture browser at the login page
        r = await http.post(f"{page_url}/finish", headers=hdrs(mine, run.base))
        assert (r.status_code, r.json()["error"]) == (409, "NOT_SIGNED_IN")
        r = await http.post(f"{page_url}/cancel", headers=hdrs(mine, run.base))
        assert r.json() == {"closed": True}


# -- a cookie integration, end to end ---------------------------------------------------------------------


async def test_cookie_integration_connects_in_a_live_browser_and_the_tool_carries_the_cookie(
    gateway_proc: Running, site: Site
) -> None:
    from playwright.async_api import async_playwright, expect

    run = gateway_proc
    async with agent(run) as s:
        listed = await call(s, "list_integrations", {})
        assert _connected(listed, "cookie-site") is False
        before = await execute(s, "cookie_site_whoami", {})
        assert before == {
            "error": "NOT_CONNECTED",
            "integration": "cookie-site",
            "message": "cookie-site not connected. Use connect('cookie-site') to connect.",
        }
        started = await start_connect(s)
        cid = started["connectionId"]
        assert started["url"] == f"{run.base}/connect/{cid}"

        async with async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            try:
                ctx = await browser.new_context(viewport={"width": 1400, "height": 1200})
                await ctx.add_cookies(
                    [
                        {
                            "name": SESSION_COOKIE,
                            "value": run.session_for(OWNER),
                            "domain": "127.0.0.1",
                            "path": "/",
                            "secure": True,
                            "httpOnly": True,
                            "sameSite": "Lax",
                        }
                    ]
                )
                page = await ctx.new_page()
                # The person opens the agent's link, confirms, and lands on the live browser page.
                await page.goto(started["url"])
                await page.get_by_role("button", name="Continue to Cookie Test Site").click()
                await page.wait_for_url(f"{run.base}/portal/browser/{cid}")

                # A page of another origin (the test site) cannot drive the bridge with the user's cookie.
                other = await ctx.new_page()
                await other.goto(site.url + "/")
                async with other.expect_response(lambda r: r.url.endswith("/input")) as refused:
                    await other.evaluate(
                        "(url) => fetch(url, {method: 'POST', credentials: 'include', mode: 'no-cors',"
                        " body: JSON.stringify({type: 'text', text: 'x'})}).catch(() => null)",
                        f"{run.base}/portal/browser/{cid}/input",
                    )
                assert (await refused.value).status == 403
                await other.close()

                # Frames arrive over SSE, starting at the integration's login page.
                # (locator waits: the page's CSP rightly forbids the eval that wait_for_function uses)
                await page.locator("#screen[data-frames]").wait_for(timeout=20_000)
                await expect(page.locator("#url")).to_have_text(re.compile(r"/login$"), timeout=20_000)
                screen = await page.locator("#screen").bounding_box()
                assert screen is not None

                async def click_at(x: float, y: float) -> None:
                    await page.mouse.click(
                        screen["x"] + screen["width"] * x / 1280, screen["y"] + screen["height"] * y / 800
                    )

                # Input goes up over REST: click the remote fields through the picture and type.
                await click_at(*center(USER_BOX))
                await page.keyboard.type(USER)
                await click_at(*center(PASSWORD_BOX))
                await page.keyboard.type(PASSWORD)
                await click_at(*center(SIGNIN_BOX))
                await expect(page.locator("#url")).to_have_text(re.compile(r"/account$"), timeout=20_000)
                await page.click("#finish")
                await page.wait_for_selector("#done", state="visible", timeout=20_000)
            finally:
                await browser.close()

        assert await call(s, "wait_for_connection", {"connectionId": cid, "timeoutSec": 60}) == {
            "status": "CONNECTED"
        }
        assert _connected(await call(s, "list_integrations", {}), "cookie-site") is True
        after = await execute(s, "cookie_site_whoami", {})
        assert after == {"result": {"user": USER}}

    # The tool's upstream request carried the captured session cookie...
    [sid] = list(site.sessions)
    assert f"sid={sid}" in site.api_requests[-1]["cookie"]
    # ...which is stored encrypted: the value never appears in the database.
    db = sqlite3.connect(run.data / "workbench.sqlite3")
    try:
        blobs = [bytes(row[0]) for row in db.execute("SELECT credential FROM connections")]
    finally:
        db.close()
    assert blobs and all(sid.encode() not in b for b in blobs)


def _connected(listed: Any, name: str) -> bool:
    items = listed["integrations"] if isinstance(listed, dict) else listed
    [entry] = [i for i in items if i.get("name") == name]
    return bool(entry["connected"])
