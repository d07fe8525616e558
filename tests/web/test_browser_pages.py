"""Every portal page in a real Chromium: reachable by keyboard, errors shown, screenshots saved.

Screenshots land in test-artifacts/ (gitignored). Sign-in here is the development sign-in of the
local gateway; the SSO path runs in tests/connections/test_e2e_connect.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.connections.support import chromium, screenshot
from tests.support.processes import local_gateway

pytestmark = pytest.mark.e2e

PLUGINS = "tests.connections.plugins.testoauth,tests.connections.plugins.testkey"


@pytest.fixture(scope="module")
def portal(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    data = tmp_path_factory.mktemp("portal")
    env = {"WORKBENCH_DEV_LOGIN": "1", "WORKBENCH_EXTRA_PLUGINS": PLUGINS, "TESTOAUTH_CLIENT_ID": "cid"}
    with local_gateway(data, extra_env=env) as (base, _):
        yield base


def tab_until(page: Any, predicate: str, limit: int = 40) -> str:
    """Press Tab until the focused element matches `predicate` (a JS expression over `el`)."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate(f"(() => {{ const el = document.activeElement; return !!({predicate}); }})()"):
            return str(page.evaluate("document.activeElement.outerHTML"))
    raise AssertionError(f"never focused: {predicate}")


def test_portal_pages_by_keyboard_with_errors_shown(portal: str) -> None:
    with chromium() as browser:
        page = browser.new_context(viewport={"width": 1100, "height": 800}).new_page()
        response = page.goto(f"{portal}/portal/integrations")
        assert (
            response is not None and "frame-ancestors 'none'" in response.headers["content-security-policy"]
        )
        assert "/portal/signin?next=" in page.url
        assert page.locator("text=Local gateway only.").count() == 1
        screenshot(page, "10-signin-development")
        tab_until(page, "el.id === 'dev-email'")
        page.keyboard.type("grace@example.com")
        page.keyboard.press("Enter")
        page.wait_for_url("**/portal/integrations")
        assert page.locator("text=grace@example.com").count() == 1

        # API-key integration: the manifest's fields, labelled; a missing field is reported, not stored.
        tab_until(page, "el.id === 'testkey-key_id'")
        page.keyboard.type("AKIA123")
        page.keyboard.press("Enter")  # native `required` stops an empty secret before it is sent
        assert page.evaluate("document.activeElement.id") in ("testkey-key_id", "testkey-key_secret")
        assert page.locator("text=Test Key Service").count() == 1
        page.fill("#testkey-key_secret", "   ")  # whitespace passes the browser, not the server
        page.click("#integration-testkey button[type=submit]")
        assert page.locator("[role=alert]", has_text="Enter Key secret.").count() == 1
        screenshot(page, "11-integrations-api-key-error")
        page.fill("#testkey-key_id", "AKIA123")
        page.fill("#testkey-key_secret", "s3cret")
        page.click("#integration-testkey button[type=submit]")
        page.wait_for_url("**/portal/integrations?connected=testkey")
        assert page.locator("#integration-testkey .status.ok").inner_text() == "Connected"
        screenshot(page, "12-integrations-connected")
        tab_until(page, "el.getAttribute('aria-label') === 'Connect Test OAuth Provider'")
        tab_until(page, "el.getAttribute('aria-label') === 'Disconnect Test Key Service'")

        # API key: create by keyboard, revealed once.
        page.goto(f"{portal}/portal/api-keys")
        tab_until(page, "el.id === 'key-label'")
        page.keyboard.type("ci runner")
        page.keyboard.press("Enter")
        page.wait_for_selector("#revealed-key")
        key = page.locator("#revealed-key").inner_text()
        assert key.startswith("wb_")
        screenshot(page, "13-api-key-revealed")
        page.goto(f"{portal}/portal/api-keys")
        assert key not in page.content()
        tab_until(page, "(el.getAttribute('aria-label') || '').startsWith('Rotate key')")
        screenshot(page, "14-api-keys-list")

        page.goto(f"{portal}/portal/clients")
        assert page.locator("h1").inner_text() == "MCP clients"
        screenshot(page, "15-mcp-clients")

        # The connect-link page for an id that is not this user's, and a provider callback gone wrong.
        page.goto(f"{portal}/connect/conn_not_a_real_one")
        assert page.locator("[role=alert]").count() == 1
        screenshot(page, "16-connect-link-not-valid")
        page.goto(f"{portal}/api/auth/plugin/testoauth/callback?code=x&state=forged")
        assert (
            "already used, has expired, or was not started here" in page.locator("[role=alert]").inner_text()
        )
        screenshot(page, "17-callback-error")


def test_screenshots_are_saved() -> None:
    # Runs after the test above in file order; proves the artifacts exist for the lead to look at.
    shots = sorted(p.name for p in (Path(__file__).resolve().parents[2] / "test-artifacts").glob("1*.png"))
    assert {"10-signin-development.png", "13-api-key-revealed.png", "17-callback-error.png"} <= set(shots)
