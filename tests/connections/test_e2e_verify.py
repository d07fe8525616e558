"""Connecting with a bad key, in a real browser: Debian Chromium (Playwright) on a real `workbench
serve`, whose connect-time check calls a loopback provider that refuses the key. Nothing is
stored, and the portal shows the provider's message; the right key is stored and shown verified.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.connections.loopback_provider import Style, loopback_provider
from tests.connections.support import chromium, screenshot
from tests.support.processes import local_gateway

pytestmark = pytest.mark.e2e


def stored_rows(data: Path) -> list[tuple[str, int]]:
    db = sqlite3.connect(data / "workbench.sqlite3")
    try:
        return list(
            db.execute("SELECT integration, version FROM connections WHERE integration = 'testkeycheck'")
        )
    finally:
        db.close()


def test_a_bad_key_stores_nothing_and_the_portal_shows_the_providers_message(tmp_path: Path) -> None:
    with loopback_provider(Style(), good_key="sk_test_good_4242") as api:
        env = {
            "WORKBENCH_DEV_LOGIN": "1",
            "WORKBENCH_EXTRA_PLUGINS": "tests.connections.plugins.testkeycheck",
            "WB_TEST_KEY_API_URL": api.url,
        }
        with local_gateway(tmp_path, extra_env=env) as (base, _), chromium() as browser:
            page = browser.new_context(viewport={"width": 1100, "height": 900}).new_page()
            page.goto(f"{base}/portal/integrations")
            page.fill("#dev-email", "ada@example.com")
            page.keyboard.press("Enter")
            page.wait_for_url("**/portal/integrations")

            page.fill("#testkeycheck-api_key", "sk_test_wrong_0000")
            page.click("#integration-testkeycheck button[type=submit]")
            alert = page.locator("#integration-testkeycheck [role=alert]")
            alert.wait_for()
            assert alert.inner_text() == (
                "Key-Checked Service did not accept these credentials (401): "
                "Invalid API Key provided: sk_test_******0000"
            )
            assert page.locator("#integration-testkeycheck .status").inner_text() == "Not connected"
            assert "sk_test_wrong_0000" not in page.content()  # the key is not echoed back
            screenshot(page, "20-integrations-bad-key-refused")
            assert stored_rows(tmp_path) == []  # nothing stored
            assert api.stats["key_checks"] == 1

            page.fill("#testkeycheck-api_key", "sk_test_good_4242")
            page.click("#integration-testkeycheck button[type=submit]")
            page.wait_for_url("**/portal/integrations?connected=testkeycheck")
            assert page.locator("#integration-testkeycheck .status.ok").inner_text() == "Connected"
            assert page.locator("#verified-testkeycheck").inner_text().startswith("Verified 20")
            screenshot(page, "21-integrations-key-verified")
            assert stored_rows(tmp_path) == [("testkeycheck", 1)]
            assert api.stats["key_checks"] == 2
