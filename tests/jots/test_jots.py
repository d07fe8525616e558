"""Jots: the six tools, share links, and the jots host (owner page, share page, sanitised HTML)."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient
from workbench.composition import Gateway, build_registry
from workbench.engine.meta import MetaTools
from workbench.identity.auth import Principal
from workbench.web.jots_host import CSP, jots_routes
from workbench.web.sessions import SESSION_COOKIE

from tests.support.gateways import make_gateway, principal_for

XSS_BODY = """# Notes <script>alert('h1')</script>

Hello **world** and <img src=x onerror=alert(1)> and <iframe src="https://evil.example"></iframe>

[click me](javascript:alert(1)) [data](data:text/html;base64,PHNjcmlwdD4=) [proto](//evil.example/x)
[quote break](https://ok.example/"onmouseover="x) [fine](https://example.com/a?b=1&c=2)

```
<script>alert("in code")</script>
```

- item <b onclick="x()">bold?</b>
> quoted <style>body{display:none}</style>
"""


@pytest.fixture
def gw(tmp_path: Path) -> Gateway:
    return make_gateway(tmp_path, registry=build_registry(plugins=False), public_url="https://wb.example")


@pytest.fixture
def ada(gw: Gateway) -> Principal:
    return principal_for(gw, "ada@example.com")


@pytest.fixture
def bob(gw: Gateway) -> Principal:
    return principal_for(gw, "bob@example.com")


@pytest.fixture
def client(gw: Gateway) -> TestClient:
    return TestClient(
        Starlette(routes=jots_routes(gw)), base_url="https://wb.example", follow_redirects=False
    )


async def run(gw: Gateway, who: Principal, tool: str, **args: Any) -> dict[str, Any]:
    out = await MetaTools(gw).call("execute_tools", who, {"executions": [{"tool": tool, "args": args}]})
    return dict(out["results"][0])


def cookie(gw: Gateway, who: Principal) -> dict[str, str]:
    return {"cookie": f"{SESSION_COOKIE}={gw.sessions.issue(who.user.id)}"}


# -- tools ---------------------------------------------------------------------------------------


async def test_jot_tools_round_trip_with_page_url(gw: Gateway, ada: Principal) -> None:
    made = (await run(gw, ada, "create_jot", title="Plan", body="step *one*"))["result"]
    assert made["url"] == f"https://wb.example/jots/{made['id']}"
    assert made["shared"] is False and "shareUrl" not in made
    got = (await run(gw, ada, "get_jot", id=made["id"]))["result"]
    assert (got["title"], got["body"]) == ("Plan", "step *one*")
    await run(gw, ada, "update_jot", id=made["id"], body="step two")
    assert (await run(gw, ada, "search_jots", query="two"))["result"]["jots"][0]["id"] == made["id"]
    assert [j["id"] for j in (await run(gw, ada, "list_jots"))["result"]["jots"]] == [made["id"]]
    assert await run(gw, ada, "delete_jot", id=made["id"]) == {"result": {"deleted": made["id"]}}


async def test_another_users_jot_is_indistinguishable_from_a_missing_one(
    gw: Gateway, ada: Principal, bob: Principal
) -> None:
    jot_id = (await run(gw, ada, "create_jot", title="Private", body="mine"))["result"]["id"]
    for tool, extra in (("get_jot", {}), ("update_jot", {"title": "x"}), ("delete_jot", {})):
        theirs = await run(gw, bob, tool, id=jot_id, **extra)
        missing = await run(gw, bob, tool, id="jot_doesnotexist0", **extra)
        assert theirs == missing == {"error": "Jot not found"}
    assert (await run(gw, bob, "list_jots"))["result"]["jots"] == []
    assert (await run(gw, bob, "search_jots", query="private"))["result"]["jots"] == []
    assert (await run(gw, ada, "get_jot", id=jot_id))["result"]["title"] == "Private"  # untouched


async def test_share_option_mints_revokes_and_rotates_links(
    gw: Gateway, ada: Principal, client: TestClient
) -> None:
    made = (await run(gw, ada, "create_jot", title="Shared", body="hello", shared=True))["result"]
    first = made["shareUrl"]
    assert first.startswith("https://wb.example/jots/s/") and made["shared"] is True
    path = first.removeprefix("https://wb.example")
    page = client.get(path)  # no session: the link alone is enough
    assert page.status_code == 200 and "<p>hello</p>" in page.text

    kept = (await run(gw, ada, "update_jot", id=made["id"], title="Shared 2", shared=True))["result"]
    assert kept["shareUrl"] == first  # sharing again keeps the link

    revoked = (await run(gw, ada, "update_jot", id=made["id"], shared=False))["result"]
    assert revoked["shared"] is False and "shareUrl" not in revoked
    assert client.get(path).status_code == 404

    again = (await run(gw, ada, "update_jot", id=made["id"], shared=True))["result"]
    assert again["shareUrl"] != first
    assert client.get(again["shareUrl"].removeprefix("https://wb.example")).status_code == 200


# -- host ----------------------------------------------------------------------------------------


async def test_owner_sees_rendered_page_with_strict_headers(
    gw: Gateway, ada: Principal, client: TestClient
) -> None:
    jot_id = (await run(gw, ada, "create_jot", title="Week", body="# Goals\n\n- **ship**\n- rest"))["result"][
        "id"
    ]
    page = client.get(f"/jots/{jot_id}", headers=cookie(gw, ada))
    assert page.status_code == 200
    assert page.headers["content-security-policy"] == CSP
    assert CSP.startswith("default-src 'none'; style-src 'unsafe-inline'") and "script-src" not in CSP
    assert page.headers["x-content-type-options"] == "nosniff"
    assert page.headers["referrer-policy"] == "no-referrer"
    assert (
        "<h1>Goals</h1>" in page.text
        and "<ul>\n<li><strong>ship</strong></li>\n<li>rest</li>\n</ul>" in page.text
    )
    assert "Create a share link" in page.text


async def test_host_has_no_existence_oracle(
    gw: Gateway, ada: Principal, bob: Principal, client: TestClient
) -> None:
    jot_id = (await run(gw, ada, "create_jot", title="Secret plans", body="x"))["result"]["id"]
    theirs = client.get(f"/jots/{jot_id}", headers=cookie(gw, bob))
    missing = client.get("/jots/jot_doesnotexist0", headers=cookie(gw, bob))
    assert theirs.status_code == missing.status_code == 404
    assert theirs.text == missing.text and "Secret plans" not in theirs.text
    assert dict(theirs.headers) == dict(missing.headers)

    anon_real = client.get(f"/jots/{jot_id}")
    anon_missing = client.get("/jots/jot_doesnotexist0")
    assert anon_real.status_code == anon_missing.status_code == 401
    # the sign-in link names the requested path; apart from that the pages are identical
    assert anon_real.text.replace(jot_id, "ID") == anon_missing.text.replace("jot_doesnotexist0", "ID")
    assert f"/portal/signin?next=%2Fjots%2F{jot_id}" in anon_real.text

    forged = client.get(
        f"/jots/{jot_id}", headers={"cookie": f"{SESSION_COOKIE}={ada.user.id}.9999999999.bad"}
    )
    assert forged.status_code == 401
    assert client.get("/jots/s/" + "A" * 32).text == missing.text


async def test_share_forms_need_the_owner_and_csrf(
    gw: Gateway, ada: Principal, bob: Principal, client: TestClient
) -> None:
    jot_id = (await run(gw, ada, "create_jot", title="Form", body="x"))["result"]["id"]
    ada_cookie = cookie(gw, ada)
    no_csrf = client.post(f"/jots/{jot_id}/share", headers=ada_cookie, content="csrf=nope")
    assert no_csrf.status_code == 403
    bob_cookie = cookie(gw, bob)
    bob_csrf = csrf_of(gw, bob_cookie)
    stolen = client.post(
        f"/jots/{jot_id}/share",
        headers={**bob_cookie, "content-type": "application/x-www-form-urlencoded"},
        content=f"csrf={bob_csrf}",
    )
    assert stolen.status_code == 404
    assert gw.stores.jots.get(ada.user.id, jot_id).share_token is None  # type: ignore[union-attr]

    ok = client.post(
        f"/jots/{jot_id}/share",
        headers={**ada_cookie, "content-type": "application/x-www-form-urlencoded"},
        content=f"csrf={csrf_of(gw, ada_cookie)}",
    )
    assert ok.status_code == 303 and ok.headers["location"] == f"/jots/{jot_id}"
    token = gw.stores.jots.get(ada.user.id, jot_id).share_token  # type: ignore[union-attr]
    assert token and f"/jots/s/{token}" in client.get(f"/jots/{jot_id}", headers=ada_cookie).text

    client.post(
        f"/jots/{jot_id}/unshare",
        headers={**ada_cookie, "content-type": "application/x-www-form-urlencoded"},
        content=f"csrf={csrf_of(gw, ada_cookie)}",
    )
    assert client.get(f"/jots/s/{token}").status_code == 404


def csrf_of(gw: Gateway, headers: dict[str, str]) -> str:
    from starlette.requests import Request

    scope = {"type": "http", "headers": [(b"cookie", headers["cookie"].encode())]}
    return gw.sessions.csrf_token(Request(scope))


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


ALLOWED = {
    "html": {"lang"},
    "head": set(),
    "meta": {"charset", "name", "content"},
    "title": set(),
    "style": set(),
    "body": set(),
    "main": set(),
    "article": set(),
    "h1": {"class"},  # the page title
    **{f"h{i}": set() for i in range(2, 7)},
    "p": set(),
    "br": set(),
    "pre": set(),
    "code": set(),
    "blockquote": set(),
    "ul": set(),
    "ol": set(),
    "li": set(),
    "hr": set(),
    "strong": set(),
    "em": set(),
    "del": set(),
    "a": {"href", "rel"},
}


async def test_html_and_script_payloads_render_inert(gw: Gateway, ada: Principal, client: TestClient) -> None:
    made = await run(gw, ada, "create_jot", title="<svg onload=alert(1)>Title", body=XSS_BODY, shared=True)
    page = client.get(made["result"]["shareUrl"].removeprefix("https://wb.example"))
    assert page.status_code == 200 and page.headers["content-security-policy"] == CSP

    parser = _Tags()
    parser.feed(page.text)
    styles = [t for t, _ in parser.tags if t == "style"]
    assert len(styles) == 1  # only the page's own stylesheet
    for tag, attrs in parser.tags:
        assert tag in ALLOWED, tag
        assert set(attrs) <= ALLOWED[tag], (tag, attrs)
    links = [(attrs.get("href"), attrs["rel"]) for tag, attrs in parser.tags if tag == "a"]
    # javascript:, data: and protocol-relative targets never become an href (the last keeps an inert
    # <a> without one); a quote stays inside href, percent-encoded; a bare URL in text is a link
    rel = "noopener noreferrer nofollow"
    assert links == [
        ("https://evil.example", rel),  # the escaped iframe's text, linkified: a plain link
        (None, rel),
        ("https://ok.example/%22onmouseover=%22x", rel),
        ("https://example.com/a?b=1&c=2", rel),
    ]
    # the payloads are still there, as inert text
    assert "&lt;script&gt;alert('h1')&lt;/script&gt;" in page.text
    assert "&lt;img src=x onerror=alert(1)&gt;" in page.text
    assert "&lt;svg onload=alert(1)&gt;Title" in page.text
    assert '&lt;script&gt;alert("in code")&lt;/script&gt;' in page.text
    assert '&lt;b onclick="x()"&gt;bold?&lt;/b&gt;' in page.text
