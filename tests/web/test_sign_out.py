"""Sign-out ends the session on the server, on every instance: the old cookie (and the CSRF token
that goes with it) no longer opens the portal or reaches /mcp, wherever it is replayed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import httpx
from starlette.testclient import TestClient
from workbench.composition import Gateway, build_gateway, build_registry
from workbench.identity.crypto import LocalKeyProvider
from workbench.runtime.local_app import create_local_app
from workbench.settings import Settings
from workbench.web.app import create_web_app
from workbench.web.sessions import SESSION_COOKIE

from tests.web.conftest import csrf_of

BASE = "https://wb.example.com"
KEY = os.urandom(32)


def instance(data_dir: Path) -> Gateway:
    """One gateway process: its own objects and caches, the shared store (SQLite file) and secrets."""
    settings = Settings(
        store="sqlite", data_dir=data_dir, public_url=BASE, dev_login=True, session_secret="s" * 43
    )
    return build_gateway(
        settings, registry=build_registry(plugins=False), key_provider=LocalKeyProvider.from_secret(KEY)
    )


async def whoami(gw: Gateway, cookie: str, csrf: str) -> httpx.Response:
    headers = {"Origin": BASE, "X-CSRF-Token": csrf, "Sec-Fetch-Site": "same-origin"}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "whoami", "arguments": {}}}
    transport = httpx.ASGITransport(app=create_local_app(gw))
    async with httpx.AsyncClient(transport=transport, base_url=BASE, cookies={SESSION_COOKIE: cookie}) as c:
        return await c.post("/mcp", content=json.dumps(body), headers=headers)


async def test_a_signed_out_cookie_works_nowhere(tmp_path: Path) -> None:
    a, b = instance(tmp_path), instance(tmp_path)
    browser = TestClient(create_web_app(a), base_url=BASE, follow_redirects=False)
    r = browser.post("/api/auth/dev-login", data={"email": "ada@example.com", "next": "/portal/integrations"})
    assert r.status_code == 303
    cookie = browser.cookies[SESSION_COOKIE]
    csrf = csrf_of(browser.get("/portal/integrations").text)
    before = await whoami(b, cookie, csrf)
    assert json.loads(before.json()["result"]["content"][0]["text"])["email"] == "ada@example.com"

    r = browser.post("/portal/signout", data={"csrf": csrf})
    assert r.status_code == 303 and r.headers["location"] == "/portal/signin"

    for gw in (a, b):  # the instance that signed out, and another one
        replay = TestClient(create_web_app(gw), base_url=BASE, follow_redirects=False)
        replay.cookies.set(SESSION_COOKIE, cookie)
        page = replay.get("/portal/integrations")
        assert page.status_code == 303 and page.headers["location"].startswith("/portal/signin")
        after = await whoami(gw, cookie, csrf)
        assert after.status_code in (401, 403), after.text
        assert "ada@example.com" not in after.text

    # Signing in again gives a new session that works.
    r = browser.post("/api/auth/dev-login", data={"email": "ada@example.com", "next": "/portal/integrations"})
    assert browser.get("/portal/integrations").status_code == 200
