"""The whole connect path with real parts: an agent (official `mcp` SDK) on a real `workbench serve`,
a real OIDC IdP (oidc-provider) for portal sign-in, a real OAuth provider (oidc-provider, PKCE,
rotating refresh tokens) for the plugin, and Debian Chromium driven by Playwright as the person.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.connections.support import chromium, oauth_server, provider_stats, screenshot
from tests.support.processes import free_port, local_gateway

pytestmark = pytest.mark.e2e

IDP_CLIENT = ("workbench-portal", "portal-secret-123")
PLUGIN_CLIENT = ("workbench-testoauth", "plugin-secret-456")
PLUGINS = "tests.connections.plugins.testoauth,tests.connections.plugins.testkey"


@dataclass
class Stack:
    base: str
    key: str
    idp: str
    provider: str
    data: Path


def stack_env(idp_url: str, provider_url: str, *, wait_block_seconds: int = 5) -> dict[str, str]:
    """A gateway's environment for the test IdP (SSO) and the test plugin's OAuth provider."""
    return {
        "WORKBENCH_OIDC_ISSUER": idp_url,
        "WORKBENCH_OIDC_CLIENT_ID": IDP_CLIENT[0],
        "WORKBENCH_OIDC_CLIENT_SECRET": IDP_CLIENT[1],
        "WORKBENCH_EXTRA_PLUGINS": PLUGINS,
        "WB_TEST_PROVIDER_URL": provider_url,
        "TESTOAUTH_CLIENT_ID": PLUGIN_CLIENT[0],
        "TESTOAUTH_CLIENT_SECRET": PLUGIN_CLIENT[1],
        "WORKBENCH_WAIT_BLOCK_SECONDS": str(wait_block_seconds),
    }


@contextmanager
def stack(data: Path, *, extra_env: dict[str, str] | None = None, token_delay_ms: int = 0) -> Iterator[Stack]:
    idp_port, provider_port = free_port(), free_port()
    idp_url, provider_url = f"http://127.0.0.1:{idp_port}", f"http://127.0.0.1:{provider_port}"
    env = {**stack_env(idp_url, provider_url), **(extra_env or {})}
    with local_gateway(data, extra_env=env) as (base, key):
        with (
            oauth_server(
                "idp",
                client_id=IDP_CLIENT[0],
                client_secret=IDP_CLIENT[1],
                redirect_uris=[f"{base}/api/auth/oidc/callback"],
                port=idp_port,
                log=data / "idp.log",
            ) as idp,
            oauth_server(
                "provider",
                client_id=PLUGIN_CLIENT[0],
                client_secret=PLUGIN_CLIENT[1],
                redirect_uris=[f"{base}/api/auth/plugin/testoauth/callback"],
                port=provider_port,
                log=data / "provider.log",
                token_delay_ms=token_delay_ms,
            ) as provider,
        ):
            yield Stack(base, key, idp, provider, data)


@asynccontextmanager
async def agent(base: str, key: str) -> AsyncIterator[ClientSession]:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60) as http:
        async with streamable_http_client(f"{base}/mcp", http_client=http) as (read, write):
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
    return json.loads(result.content[0].text)  # type: ignore[union-attr]


async def wait_connected(session: ClientSession, connection_id: str) -> dict[str, Any]:
    """Call wait_for_connection until it answers something other than PENDING."""
    while True:
        answer: dict[str, Any] = await call(
            session, "wait_for_connection", {"connectionId": connection_id, "timeoutSec": 120}
        )
        if answer.get("status") != "PENDING":
            return answer


def sign_in_at(page: Any, login: str) -> None:
    """oidc-provider's development login and consent screens."""
    page.wait_for_selector("input[name=login]")
    page.fill("input[name=login]", login)
    page.fill("input[name=password]", "any-password")
    page.click("button[type=submit]")
    page.wait_for_load_state("domcontentloaded")
    if page.locator("button:has-text('Continue')").count() and "/interaction/" in page.url:
        page.click("button:has-text('Continue')")


def someone_else_opens(link: str, login: str) -> None:
    """Another Workbench account signs in (at the real IdP) and tries the agent's link."""
    with chromium() as browser:
        page = browser.new_context().new_page()
        page.goto(link)
        page.click("text=Sign in with SSO")
        sign_in_at(page, login)
        page.wait_for_url("**/connect/**")
        assert "It was created for a different Workbench account" in page.locator("[role=alert]").inner_text()
        assert page.locator("button:has-text('Continue to')").count() == 0
        screenshot(page, "07-connect-account-mismatch")
        token = link.rsplit("/", 1)[1]
        base = link.split("/connect/")[0]
        r = page.request.post(f"{base}/api/connect/redeem", data={"token": token})  # JSON, with the session
        assert (r.status, r.json()) == (403, {"error": "ACCOUNT_MISMATCH"})


def person_connects(link: str, login: str, shots: bool) -> str:
    with chromium() as browser:
        page = browser.new_context().new_page()
        page.goto(link)
        assert "/portal/signin" in page.url
        if shots:
            screenshot(page, "01-portal-signin")
        page.click("text=Sign in with SSO")
        sign_in_at(page, login)  # at the IdP
        page.wait_for_url("**/connect/**")
        if shots:
            screenshot(page, "02-connect-link")
        callbacks: list[str] = []
        page.on("request", lambda r: callbacks.append(r.url) if "/api/auth/plugin/" in r.url else None)
        page.click("button:has-text('Continue to Test OAuth Provider')")
        sign_in_at(page, login)  # at the plugin's provider
        page.wait_for_url("**/portal/integrations?connected=testoauth")
        assert page.locator("text=testoauth is connected.").count() == 1
        if shots:
            # Replaying the provider's redirect (same code, same state) is refused: state is single-use.
            assert len(callbacks) == 1 and "code=" in callbacks[0] and "state=" in callbacks[0]
            replay = page.goto(callbacks[0])
            assert replay is not None and replay.status == 400
            assert "already used" in page.locator("[role=alert]").inner_text()
            screenshot(page, "06-callback-replayed")
        if shots:
            screenshot(page, "03-portal-integrations")
            page.goto(link.split("/connect/")[0] + "/portal/api-keys")
            page.fill("#key-label", "laptop")
            page.keyboard.press("Enter")
            page.wait_for_selector("#revealed-key")
            screenshot(page, "04-portal-api-key-revealed")
            page.goto(link.split("/connect/")[0] + "/portal/clients")
            screenshot(page, "05-portal-mcp-clients")
        return str(page.url)


async def test_agent_connect_browser_consent_then_tool_call_carries_provider_token(tmp_path: Path) -> None:
    with stack(tmp_path) as s:
        async with agent(s.base, s.key) as session:
            before = await call(
                session, "execute_tools", {"executions": [{"tool": "testoauth_whoami", "args": {}}]}
            )
            assert before["results"][0]["error"] == "NOT_CONNECTED"

            started = await call(session, "connect", {"integration": "testoauth"})
            assert started["type"] == "oauth2"
            assert started["url"] == f"{s.base}/connect/{started['connectionId']}"
            assert provider_stats(s.provider)["code_grants"] == 0  # minting contacted no provider

            waiting = asyncio.create_task(wait_connected(session, started["connectionId"]))
            await asyncio.to_thread(someone_else_opens, started["url"], "mallory@example.test")
            assert provider_stats(s.provider)["code_grants"] == 0
            # The local user of `workbench serve` is you@localhost: sign in at the IdP as that account.
            await asyncio.to_thread(person_connects, started["url"], "you@localhost", True)
            assert await asyncio.wait_for(waiting, 60) == {"status": "CONNECTED"}

            listed = await call(session, "list_integrations", {})
            assert {"name": "testoauth", "version": "1.0.0", "connected": True} in listed["integrations"]

            ran = await call(
                session, "execute_tools", {"executions": [{"tool": "testoauth_whoami", "args": {}}]}
            )
        who = ran["results"][0]["result"]
        assert who["sub"] == "you@localhost" and who["client_id"] == PLUGIN_CLIENT[0]
        stats = provider_stats(s.provider)
        assert stats["code_grants"] == 1 and stats["api_calls"] == 1 and stats["api_rejected"] == 0

        # What was stored is encrypted (no token text in the SQLite file), and written once: the replay
        # above changed nothing.
        db = sqlite3.connect(s.data / "workbench.sqlite3")
        (blob, version) = db.execute(
            "SELECT credential, version FROM connections WHERE integration = 'testoauth'"
        ).fetchone()
        db.close()
        assert b"access_token" not in bytes(blob) and version == 1


@pytest.mark.parametrize("trigger", ["expiry", "rejection"])
async def test_twenty_concurrent_calls_across_two_processes_refresh_once_at_the_provider(
    tmp_path: Path, trigger: str
) -> None:
    """Two gateway processes on one SQLite file, 20 calls that all need a new token, one refresh at
    the provider. The token needs one either because it expires within the 30 s margin ("expiry"),
    or because it still has an hour left but the provider has ended the session and answers 401
    ("rejection": refreshed on that answer, the request retried)."""
    with stack(tmp_path, token_delay_ms=400) as s:
        async with agent(s.base, s.key) as session:
            started = await call(session, "connect", {"integration": "testoauth"})
            waiting = asyncio.create_task(wait_connected(session, started["connectionId"]))
            await asyncio.to_thread(person_connects, started["url"], "you@localhost", False)
            assert await asyncio.wait_for(waiting, 60) == {"status": "CONNECTED"}
            before = await call(
                session, "execute_tools", {"executions": [{"tool": "testoauth_whoami", "args": {}}]}
            )
        old_suffix = before["results"][0]["result"]["token_suffix"]

        # A second gateway process on the same SQLite file and key: another "instance".
        with local_gateway(s.data, extra_env=_env_of(s)) as (second, _):
            async with agent(s.base, s.key) as one, agent(second, s.key) as two:
                warm = await call(
                    two, "execute_tools", {"executions": [{"tool": "testoauth_whoami", "args": {}}]}
                )
                assert warm["results"][0]["result"]["token_suffix"] == old_suffix
                if trigger == "expiry":  # the stored access token now expires within the margin
                    db = sqlite3.connect(s.data / "workbench.sqlite3")
                    db.execute(
                        "UPDATE connections SET expires_at = strftime('%s','now') + 10 "
                        "WHERE integration = 'testoauth'"
                    )
                    db.commit()
                    db.close()
                else:  # the provider ends the session; nothing local says so
                    async with httpx.AsyncClient(timeout=5) as http:
                        (await http.post(f"{s.provider}/test/end-sessions")).raise_for_status()
                assert provider_stats(s.provider)["refresh_grants"] == 0
                calls = [
                    call(sess, "execute_tools", {"executions": [{"tool": "testoauth_whoami", "args": {}}]})
                    for sess in (one, two)
                    for _ in range(10)
                ]
                answers = await asyncio.gather(*calls)

        results = [a["results"][0] for a in answers]
        assert all("result" in r for r in results), results
        suffixes = {r["result"]["token_suffix"] for r in results}
        assert len(suffixes) == 1 and old_suffix not in suffixes  # everyone used the one new token
        stats = provider_stats(s.provider)
        assert stats["refresh_grants"] == 1, stats
        assert stats["refresh_errors"] == 0
        if trigger == "expiry":
            assert stats["api_rejected"] == 0
        else:  # the ended token was refused (at least once, on each instance that used it) and retried
            assert stats["api_rejected"] >= 1


def _env_of(s: Stack) -> dict[str, str]:
    return {
        "WORKBENCH_OIDC_ISSUER": s.idp,
        "WORKBENCH_OIDC_CLIENT_ID": IDP_CLIENT[0],
        "WORKBENCH_OIDC_CLIENT_SECRET": IDP_CLIENT[1],
        "WORKBENCH_EXTRA_PLUGINS": PLUGINS,
        "WB_TEST_PROVIDER_URL": s.provider,
        "TESTOAUTH_CLIENT_ID": PLUGIN_CLIENT[0],
        "TESTOAUTH_CLIENT_SECRET": PLUGIN_CLIENT[1],
    }
