"""axe-core (the npm package, run in Debian's Chromium) on every portal page a local user reaches, in
each state it can be put in — snippets expanded, errors shown — at a phone's 390 px and a laptop's
1280 px: zero violations. The pages are found from the portal's own navigation, so a new page is
checked without editing this test."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.connections.support import chromium, screenshot
from tests.support.processes import REPO, local_gateway

pytestmark = pytest.mark.e2e

AXE = REPO / "node_modules" / "axe-core" / "axe.min.js"
WIDTHS = (390, 1280)


@pytest.fixture(scope="module")
def portal(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Any]]:
    data = tmp_path_factory.mktemp("a11y")
    with local_gateway(data) as (base, _key), chromium() as browser:
        link = next(
            line.rsplit(" ", 1)[-1]
            for line in (data / "gateway.log").read_text().splitlines()
            if "Sign in to the portal" in line
        )
        # axe is injected by the test: the portal's CSP (script-src 'self') would refuse it otherwise.
        context = browser.new_context(bypass_csp=True)
        page = context.new_page()
        page.goto(link)
        page.wait_for_load_state()
        yield base, context
        context.close()


def _violations(page: Any) -> list[dict[str, Any]]:
    page.add_script_tag(path=str(AXE))
    found: list[dict[str, Any]] = page.evaluate(
        "async () => (await axe.run(document, {resultTypes: ['violations']})).violations"
    )
    return [
        {"id": v["id"], "impact": v["impact"], "nodes": [n["target"] for n in v["nodes"]][:5]} for v in found
    ]


def _nav_pages(context: Any, base: str) -> list[str]:
    page = context.new_page()
    page.goto(f"{base}/portal/integrations")
    hrefs: list[str] = page.eval_on_selector_all("nav a", "links => links.map(a => a.getAttribute('href'))")
    page.close()
    return sorted(set(hrefs))


def test_the_harness_sees_a_violation(portal: tuple[str, Any]) -> None:
    """Not vacuous: the same harness reports what the portal had before (a scrolling snippet that a
    keyboard cannot reach, a button whose name is not its label): here the button is reported."""
    _, context = portal
    page = context.new_page()
    page.set_content(
        '<!doctype html><html lang="en"><head><title>t</title></head><body><main><h1>t</h1>'
        '<div style="height:40px;overflow:auto"><pre style="height:400px">x</pre></div>'
        '<button aria-label="Copy the API key">Copy key</button></main></body></html>'
    )
    ids = {v["id"] for v in _violations(page)}
    page.close()
    assert "label-content-name-mismatch" in ids, ids


def test_axe_finds_no_violation_on_any_portal_page(portal: tuple[str, Any]) -> None:
    base, context = portal
    pages = _nav_pages(context, base)
    assert len(pages) >= 6, pages
    states: list[tuple[str, str]] = [(path, "") for path in pages]
    states += [
        ("/portal/connect-client", "expand"),  # every client's snippets open
        ("/portal/catalog", "expand"),  # every integration's tool table open
        ("/portal/catalog?q=create+an+issue", ""),  # search results
        ("/portal/signin/local?token=not-a-token", ""),  # an error page
        ("/portal/integrations/no-such-integration/disconnect", ""),  # a refused confirmation
    ]
    report: dict[str, Any] = {}
    for width in WIDTHS:
        page = context.new_page()
        page.set_viewport_size({"width": width, "height": 900})
        for path, state in states:
            page.goto(base + path)
            if state == "expand":
                page.eval_on_selector_all("details", "all => all.forEach(d => d.open = true)")
            found = _violations(page)
            if found:
                report[f"{width}px {path} {state}".strip()] = found
            name = (path.strip("/").replace("/", "-").split("?")[0] or "root") + (
                f"-{state}" if state else ""
            )
            screenshot(page, f"a11y-{width}-{name}")
        page.close()
    assert not report, json.dumps(report, indent=1)


def test_a_skip_link_is_the_first_tab_stop(portal: tuple[str, Any]) -> None:
    base, context = portal
    page = context.new_page()
    page.goto(f"{base}/portal/activity")
    page.keyboard.press("Tab")
    focused = page.evaluate(
        "() => [document.activeElement.textContent, document.activeElement.getAttribute('href')]"
    )
    assert focused == ["Skip to main content", "#main"]
    page.keyboard.press("Enter")
    assert page.evaluate("() => location.hash") == "#main"
    page.close()


def test_favicon_is_served() -> None:
    from starlette.testclient import TestClient
    from workbench.composition import build_gateway
    from workbench.settings import Settings
    from workbench.web.app import create_web_app

    gw = build_gateway(Settings(store="memory", data_dir=Path("/nonexistent"), local_key="A" * 43 + "="))
    r = TestClient(create_web_app(gw)).get("/favicon.ico")
    assert r.status_code == 200 and r.headers["content-type"] == "image/svg+xml"
