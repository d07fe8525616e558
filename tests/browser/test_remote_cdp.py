"""WORKBENCH_CDP_URL: the pool drives a browser it did not start (as on AWS) and leaves it running."""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from workbench.browser.pool import BrowserPool, _LocalChromium

from tests.browser.site import Site

pytestmark = pytest.mark.e2e


@pytest.fixture
def remote_chromium() -> Iterator[tuple[_LocalChromium, int]]:
    """A chromium standing in for the remote CDP endpoint (started outside the pool under test)."""
    import asyncio

    browser = _LocalChromium("/usr/bin/chromium")
    browser.launch()
    try:
        ws = asyncio.run(browser.ws_url())
        yield browser, int(urlsplit(ws).port or 0)
    finally:
        browser.stop()


@pytest.mark.parametrize("form", ["http", "ws"])
async def test_pool_uses_a_configured_cdp_endpoint(
    remote_chromium: tuple[_LocalChromium, int], site: Site, form: str
) -> None:
    browser, port = remote_chromium
    if form == "http":
        cdp_url = f"http://127.0.0.1:{port}"
    else:
        cdp_url = await browser.ws_url()
    pool = BrowserPool(executable="/nonexistent/chromium", cdp_url=cdp_url)
    page = await pool.page_for_user("u1")
    assert (await page.navigate(site.url + "/"))["title"] == "Home"
    assert "Welcome home" in await page.read_text()
    await pool.aclose()
    assert browser.running  # the pool never stops a browser it did not start


async def test_unreachable_endpoint_is_a_clear_error() -> None:
    from workbench.browser.pool import BrowserUnavailable

    pool = BrowserPool(cdp_url="http://127.0.0.1:9")
    with pytest.raises(
        BrowserUnavailable, match=re.escape("Cannot reach the CDP endpoint http://127.0.0.1:9")
    ):
        await pool.page_for_user("u1")


async def test_missing_local_browser_is_a_clear_error() -> None:
    from workbench.browser.pool import BrowserUnavailable

    pool = BrowserPool(executable="/nonexistent/chromium")
    with pytest.raises(BrowserUnavailable, match=re.escape("No browser at /nonexistent/chromium")):
        await pool.page_for_user("u1")
