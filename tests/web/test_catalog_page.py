"""The catalog page: every integration and tool with its title, hints and the user's connection
state, and a search that is search_tools itself."""

from __future__ import annotations

import re
from collections.abc import Callable

from starlette.testclient import TestClient
from workbench.composition import Gateway
from workbench.identity.auth import Principal
from workbench.web.app import create_web_app

Browser = Callable[[str], TestClient]


def _section(page: str, name: str) -> str:
    start = page.index(f'id="integration-{name}"')
    return page[start : page.index("</section>", start)]


def test_every_integration_and_tool_with_hints_and_state(browser_for: Browser, web_gw: Gateway) -> None:
    client = browser_for("ada@example.com")
    page = client.get("/portal/catalog")
    assert page.status_code == 200
    text = page.text
    for m in web_gw.registry.manifests():  # every installed integration, every one of its tools
        section = _section(text, m.name)
        tools = web_gw.registry.tools_of(m.name)
        assert f"{len(tools)} tool" in section
        for name in tools:
            assert f'id="tool-{name}"' in section, name
    jots = _section(text, "jots")
    assert "Built in" in jots
    row = jots[jots.index('id="tool-delete_jot"') :]
    row = row[: row.index("</tr>")]
    assert '<span class="badge bad">destructive</span>' in row and "read-only" not in row
    listing = jots[jots.index('id="tool-list_jots"') :]
    assert '<span class="badge">read-only</span>' in listing[: listing.index("</tr>")]
    assert "Not connected" in _section(text, "testkey")
    assert "Needs setup on this gateway" not in _section(text, "testoauth")  # its client is configured


def test_search_is_search_tools(browser_for: Browser, web_gw: Gateway) -> None:
    import asyncio

    client = browser_for("ada@example.com")
    user = web_gw.auth.user_by_email("ada@example.com")
    assert user is not None
    page = client.get("/portal/catalog", params={"q": "create a jot"}).text
    shown = re.findall(r'<li><a href="#tool-([a-z0-9_]+)">', page)
    assert shown and shown[0] == "create_jot"
    expected = asyncio.run(
        web_gw.catalog.search_tools(Principal(user=user, via="session"), "create a jot", 20)
    )
    assert shown == [hit["name"] for hit in expected]  # the same ranking an agent gets


def test_hostile_queries_are_escaped_and_bounded(browser_for: Browser) -> None:
    client = browser_for("ada@example.com")
    page = client.get("/portal/catalog", params={"q": "<script>alert(1)</script>" + "x" * 5000})
    assert page.status_code == 200
    assert "<script>alert(1)" not in page.text and "&lt;script&gt;alert(1)" in page.text
    assert "x" * 201 not in page.text


def test_the_catalog_needs_a_session(web_gw: Gateway) -> None:
    anon = TestClient(create_web_app(web_gw), base_url="https://testserver", follow_redirects=False)
    r = anon.get("/portal/catalog?q=jot")
    assert r.status_code == 303 and r.headers["location"].startswith("/portal/signin?next=")
