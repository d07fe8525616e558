"""The six built-in browser tools, through the engine, against a real chromium and a loopback site."""

from __future__ import annotations

import base64
import json
import struct
from typing import Any

import pytest
from workbench.composition import Gateway

from tests.browser.site import Site
from tests.support.gateways import principal_for

pytestmark = [pytest.mark.e2e, pytest.mark.asyncio(loop_scope="module")]


async def run(gw: Gateway, email: str, tool: str, **args: Any) -> dict[str, Any]:
    out = await gw.runs.execute(principal_for(gw, email), [{"tool": tool, "args": args, "ref_id": None}])
    result: dict[str, Any] = out["results"][0]
    return result


def png_size(data: str) -> tuple[int, int]:
    raw = base64.b64decode(data)
    assert raw[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", raw[16:24])
    return width, height


async def test_the_browser_integration_has_exactly_six_tools(browser_gateway: Gateway) -> None:
    manifest = browser_gateway.registry.manifest("browser")
    assert manifest is not None and manifest.builtin and manifest.auth.type == "none"
    assert sorted(browser_gateway.registry.tools_of("browser")) == [
        "browser_click",
        "browser_close",
        "browser_navigate",
        "browser_read",
        "browser_screenshot",
        "browser_type",
    ]


async def test_navigate_reports_final_url_title_and_status(browser_gateway: Gateway, site: Site) -> None:
    ok = await run(browser_gateway, "nav@example.com", "browser_navigate", url=site.url + "/")
    assert ok == {"result": {"url": site.url + "/", "title": "Home", "status": 200}}
    missing = await run(browser_gateway, "nav@example.com", "browser_navigate", url=site.url + "/nope")
    assert missing["result"]["status"] == 404


async def test_navigate_refuses_non_http_and_metadata_addresses(browser_gateway: Gateway) -> None:
    only_http = "Only http:// and https:// URLs can be opened."
    for url, error in (
        ("file:///etc/passwd", only_http),
        ("javascript:alert(1)", only_http),
        ("chrome://settings", only_http),
        (
            "http://169.254.169.254/latest/meta-data/",
            "169.254.169.254 cannot be opened from the gateway's browser.",
        ),
        ("http://[fd00:ec2::254]/", "fd00:ec2::254 cannot be opened from the gateway's browser."),
        (
            "http://metadata.google.internal/",
            "metadata.google.internal cannot be opened from the gateway's browser.",
        ),
    ):
        assert await run(browser_gateway, "nav@example.com", "browser_navigate", url=url) == {"error": error}


async def test_tools_before_navigate_say_to_navigate_first(browser_gateway: Gateway) -> None:
    for tool, args in (
        ("browser_click", {"text": "x"}),
        ("browser_type", {"selector": "#x", "text": "y"}),
        ("browser_read", {}),
        ("browser_screenshot", {}),
    ):
        assert await run(browser_gateway, "fresh@example.com", tool, **args) == {
            "error": "No page is open. Call browser_navigate first."
        }


async def test_click_by_text_follows_the_link_and_by_selector_runs_the_handler(
    browser_gateway: Gateway, site: Site
) -> None:
    email = "click@example.com"
    await run(browser_gateway, email, "browser_navigate", url=site.url + "/")
    clicked = await run(browser_gateway, email, "browser_click", selector="#retitle")
    assert clicked == {
        "result": {"clicked": {"selector": "#retitle"}, "url": site.url + "/", "title": "Changed"}
    }
    followed = await run(browser_gateway, email, "browser_click", text="form page")
    assert followed["result"]["url"] == site.url + "/form" and followed["result"]["title"] == "Form"


async def test_click_returns_promptly_for_fragment_links_and_empty_responses(
    browser_gateway: Gateway, site: Site
) -> None:
    import time

    email = "fragment@example.com"
    await run(browser_gateway, email, "browser_navigate", url=site.url + "/")
    started = time.monotonic()
    jumped = await run(browser_gateway, email, "browser_click", text="Jump below")
    assert jumped["result"]["url"] == site.url + "/#below"
    stayed = await run(browser_gateway, email, "browser_click", text="Nothing")  # a 204: no new document
    assert stayed["result"]["url"] == site.url + "/#below" and stayed["result"]["title"] == "Home"
    assert time.monotonic() - started < 10  # neither waited for a load event that never comes


async def test_click_errors_name_the_problem(browser_gateway: Gateway, site: Site) -> None:
    email = "clickerr@example.com"
    await run(browser_gateway, email, "browser_navigate", url=site.url + "/")
    assert await run(browser_gateway, email, "browser_click", selector="#absent") == {
        "error": "No element matches selector '#absent'"
    }
    bad = await run(browser_gateway, email, "browser_click", selector="[[")
    assert bad["error"].startswith("Invalid selector")
    both = await run(browser_gateway, email, "browser_click", selector="a", text="b")
    assert both["error"].startswith("Invalid arguments for browser_click:")


async def test_type_clears_submits_and_does_not_echo_the_text(browser_gateway: Gateway, site: Site) -> None:
    email = "type@example.com"
    await run(browser_gateway, email, "browser_navigate", url=site.url + "/form")
    typed = await run(
        browser_gateway, email, "browser_type", selector="#name", text="Grace Hopper", submit=True
    )
    assert typed == {
        "result": {
            "typed": 12,
            "selector": "#name",
            "url": site.url + "/result?name=Grace+Hopper",
            "title": "Result",
        }
    }
    read = await run(browser_gateway, email, "browser_read")
    assert read["result"]["content"] == "Hello, Grace Hopper!"


async def test_read_text_and_accessibility_outline(browser_gateway: Gateway, site: Site) -> None:
    email = "read@example.com"
    await run(browser_gateway, email, "browser_navigate", url=site.url + "/")
    text = await run(browser_gateway, email, "browser_read", mode="text")
    assert text["result"]["title"] == "Home" and text["result"]["mode"] == "text"
    assert "Welcome home" in text["result"]["content"] and text["result"]["truncated"] is False
    ax = (await run(browser_gateway, email, "browser_read", mode="accessibility"))["result"]["content"]
    assert 'heading "Welcome home"' in ax
    assert 'link "Form page"' in ax
    assert 'button "Change title"' in ax
    short = await run(browser_gateway, email, "browser_read", max_chars=100)
    assert len(short["result"]["content"]) <= 100


async def test_screenshot_is_the_mcp_image_sentinel_with_a_png(browser_gateway: Gateway, site: Site) -> None:
    email = "shot@example.com"
    await run(browser_gateway, email, "browser_navigate", url=site.url + "/")
    shot = (await run(browser_gateway, email, "browser_screenshot"))["result"]
    assert shot["_mcpImage"]["mimeType"] == "image/png"
    assert png_size(shot["_mcpImage"]["data"]) == (1280, 800)
    assert shot["url"] == site.url + "/"


async def test_each_user_has_an_isolated_browser_context(browser_gateway: Gateway, site: Site) -> None:
    await run(browser_gateway, "a@example.com", "browser_navigate", url=site.url + "/set-cookie")
    await run(browser_gateway, "a@example.com", "browser_navigate", url=site.url + "/cookies")
    mine = await run(browser_gateway, "a@example.com", "browser_read")
    assert mine["result"]["content"] == "mark=user-a"
    await run(browser_gateway, "b@example.com", "browser_navigate", url=site.url + "/cookies")
    theirs = await run(browser_gateway, "b@example.com", "browser_read")
    assert theirs["result"]["content"] == ""


async def test_close_forgets_the_page_and_its_cookies(browser_gateway: Gateway, site: Site) -> None:
    email = "close@example.com"
    await run(browser_gateway, email, "browser_navigate", url=site.url + "/set-cookie")
    assert await run(browser_gateway, email, "browser_close") == {"result": {"closed": True}}
    assert await run(browser_gateway, email, "browser_close") == {"result": {"closed": False}}
    assert (await run(browser_gateway, email, "browser_read"))["error"].startswith("No page is open")
    await run(browser_gateway, email, "browser_navigate", url=site.url + "/cookies")
    assert (await run(browser_gateway, email, "browser_read"))["result"]["content"] == ""


async def test_plugin_tools_cannot_reach_the_browser(browser_gateway: Gateway) -> None:
    from workbench.engine.executor import _Context
    from workbench.manifest import Manifest, NoAuth

    principal = principal_for(browser_gateway)
    plugin = Manifest(name="sneaky", version="1", display_name="Sneaky", auth=NoAuth())
    with pytest.raises(AttributeError):
        _ = _Context(browser_gateway.engine, principal.user, plugin, None).services
    builtin = browser_gateway.registry.manifest("browser")
    assert builtin is not None
    assert _Context(browser_gateway.engine, principal.user, builtin, None).services.browser is not None


async def test_a_vault_value_typed_into_the_page_stays_redacted_in_later_reads(
    browser_gateway: Gateway, site: Site
) -> None:
    """The page keeps what was typed (the form echoes it, the URL carries it): every later read of
    the page redacts it, not only the answer of the call that resolved the reference."""
    email = "vault-type@example.com"
    secret = "Ada Lovelace 7Qx2"
    assert "error" not in await run(browser_gateway, email, "vault_set", name="S", value=secret)
    await run(browser_gateway, email, "browser_navigate", url=site.url + "/form")
    typed = await run(
        browser_gateway, email, "browser_type", selector="#name", text="{{vault:S}}", submit=True
    )
    assert secret.replace(" ", "+") not in json.dumps(typed)
    read = (await run(browser_gateway, email, "browser_read"))["result"]
    assert read["content"] == "Hello, [REDACTED]!"
    outline = (await run(browser_gateway, email, "browser_read", mode="accessibility"))["result"]
    assert secret not in json.dumps(outline)
    shot = (await run(browser_gateway, email, "browser_screenshot"))["result"]
    assert shot["title"] == "Result" and secret not in shot["url"]
