"""Pure parts of the browser surface: the origin gate, cookie selection, the accessibility outline."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.requests import Request
from workbench.browser.page import _outline
from workbench.builtin.browser import check_url
from workbench.web.browser_bridge import cookies_for_domain, same_origin

PUBLIC = "https://wb.example.com"


def request(method: str, headers: dict[str, str]) -> Request:
    raw = [(k.lower().encode(), v.encode()) for k, v in headers.items()]
    return Request({"type": "http", "method": method, "headers": raw, "path": "/", "query_string": b""})


@pytest.mark.parametrize(
    ("method", "headers", "allowed"),
    [
        ("POST", {"Origin": "https://wb.example.com"}, True),
        ("POST", {"Origin": "https://wb.example.com:443"}, True),
        ("POST", {"Origin": "https://WB.example.com"}, True),
        ("POST", {"Origin": "http://wb.example.com"}, False),  # scheme differs
        ("POST", {"Origin": "https://wb.example.com:8443"}, False),  # port differs
        ("POST", {"Origin": "https://evil.example.com"}, False),
        ("POST", {"Origin": "https://wb.example.com.evil.io"}, False),
        ("POST", {"Origin": "null"}, False),
        ("POST", {}, False),
        ("POST", {"Sec-Fetch-Site": "same-origin"}, False),  # POSTs always carry Origin in browsers
        ("GET", {"Sec-Fetch-Site": "same-origin"}, True),  # a same-origin EventSource
        ("GET", {"Sec-Fetch-Site": "same-site"}, False),
        ("GET", {"Sec-Fetch-Site": "cross-site"}, False),
        ("GET", {}, False),
        ("GET", {"Origin": "https://evil.example.com", "Sec-Fetch-Site": "same-origin"}, False),
    ],
)
def test_same_origin(method: str, headers: dict[str, str], allowed: bool) -> None:
    assert same_origin(request(method, headers), PUBLIC) is allowed


def test_cookies_for_domain_keeps_the_domain_and_its_subdomains_in_the_stored_shape() -> None:
    cdp = [
        {"name": "sid", "value": "1", "domain": "example.com", "path": "/", "expires": -1, "httpOnly": True},
        {"name": "sub", "value": "2", "domain": ".app.example.com", "path": "/x", "expires": 1900000000.5},
        {"name": "parent", "value": "3", "domain": ".example.com", "path": "/", "expires": -1},
        {"name": "other", "value": "4", "domain": "evil-example.com", "path": "/", "expires": -1},
        {"name": "tracker", "value": "5", "domain": ".ads.net", "path": "/", "expires": -1},
    ]
    picked = cookies_for_domain(cdp, "example.com")
    assert picked == [
        {"name": "sid", "value": "1", "domain": "example.com", "path": "/", "expires": -1},
        {"name": "sub", "value": "2", "domain": ".app.example.com", "path": "/x", "expires": 1900000000.5},
        {"name": "parent", "value": "3", "domain": ".example.com", "path": "/", "expires": -1},
    ]
    # A parent-domain cookie is one the service's host would be sent, so it is kept for a subdomain.
    assert [c["name"] for c in cookies_for_domain(cdp, "app.example.com")] == ["sub", "parent"]


@pytest.mark.parametrize(
    "url",
    ["http://127.0.0.1:8080/x", "https://example.com/", "  https://example.com/a?b=c  "],
)
def test_check_url_accepts_http_and_https(url: str) -> None:
    assert check_url(url) == url.strip()


@pytest.mark.parametrize(
    "url",
    [
        "ftp://example.com/",
        "data:text/html,hi",
        "http:///nohost",
        "http://169.254.170.2/v2/credentials",
        "http://[fe80::1]/",
    ],
)
def test_check_url_refuses_other_schemes_and_link_local(url: str) -> None:
    with pytest.raises(ValueError):
        check_url(url)


def test_outline_folds_ignored_nodes_and_repeated_text() -> None:
    nodes = [
        {"nodeId": "1", "role": {"value": "RootWebArea"}, "name": {"value": "Page"}, "childIds": ["2", "5"]},
        {"nodeId": "2", "parentId": "1", "ignored": True, "role": {"value": "generic"}, "childIds": ["3"]},
        {
            "nodeId": "3",
            "parentId": "2",
            "role": {"value": "button"},
            "name": {"value": "Go"},
            "childIds": ["4"],
        },
        {"nodeId": "4", "parentId": "3", "role": {"value": "StaticText"}, "name": {"value": "Go"}},
        {
            "nodeId": "5",
            "parentId": "1",
            "role": {"value": "textbox"},
            "name": {"value": "Name"},
            "value": {"value": "Ada"},
            "childIds": ["6"],
        },
        {"nodeId": "6", "parentId": "5", "role": {"value": "StaticText"}, "name": {"value": "hint"}},
    ]
    assert _outline(nodes) == "\n".join(
        ['RootWebArea "Page"', '  button "Go"', '  textbox "Name" value="Ada"', '    text "hint"']
    )


async def test_a_cookie_connection_is_connected_only_while_its_session_cookie_lives(tmp_path: Path) -> None:
    from workbench.composition import build_registry

    from tests.browser.cookie_site_plugin import make_manifest
    from tests.browser.cookie_site_plugin.tools import TOOLS
    from tests.support.gateways import make_gateway, principal_for

    registry = build_registry(plugins=False)
    registry.add(make_manifest("http://127.0.0.1:9"), lambda: TOOLS)
    gw = make_gateway(tmp_path, registry=registry)
    user = principal_for(gw).user
    now = 1_900_000_000.0
    gw.credentials.clock = lambda: now

    def save(*cookies: dict[str, object]) -> None:
        gw.credentials.save(user.id, "cookie-site", {"cookies": list(cookies)})

    theme = {"name": "theme", "value": "dark", "domain": "127.0.0.1", "path": "/", "expires": -1}
    save(theme)  # signed out: the declared session cookie is missing
    assert gw.connections.status(user.id)["cookie-site"] is False
    save(theme, {"name": "sid", "value": "s", "domain": "127.0.0.1", "path": "/", "expires": now + 10})
    assert gw.connections.status(user.id)["cookie-site"] is True
    now += 11  # the session cookie has expired
    assert gw.connections.status(user.id)["cookie-site"] is False
    out = await gw.runs.execute(
        principal_for(gw), [{"tool": "cookie_site_whoami", "args": {}, "ref_id": None}]
    )
    assert out["results"][0]["error"] == "NOT_CONNECTED"
    save(
        {"name": "sid", "value": "s", "domain": "127.0.0.1", "path": "/", "expires": -1}
    )  # a browser-session cookie
    assert gw.connections.status(user.id)["cookie-site"] is True
