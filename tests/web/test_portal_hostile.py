"""Hostile input on the portal and every browser-facing route of the local app (SQLite store):
URL values that reach the store, forms without their CSRF token or from another origin, notices a
link tries to make the portal show, and a bounded crawl of every route with odd paths, queries,
methods and bodies. Nothing answers 5xx, nothing redirects off-site, nothing changes state."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import pytest
from starlette.routing import Route
from workbench.composition import Gateway
from workbench.runtime.local_app import create_local_app
from workbench.stores import ActivityQuery, Stores

from tests.contract.conftest import stores  # noqa: F401  (the every-adapter fixture)
from tests.web.hostile_support import ORIGIN, Browser, review_gateway, sign_in


@pytest.fixture
def gw(tmp_path: Path) -> Gateway:
    return review_gateway(tmp_path)


@pytest.fixture
def app(gw: Gateway) -> Any:
    return create_local_app(gw)


@pytest.fixture
def browser(app: Any) -> Callable[[str], Browser]:
    return lambda email: sign_in(app, email)


# Values a URL may carry where the code expects a number, a name or an id.
HOSTILE_CURSORS = [
    "9" * 19,
    "9" * 20,
    "9" * 64,
    "18446744073709551616",
    "-1",
    "0",
    "00000000000000000001",
    "²",
    "١٢٣",
    "1e9",
    "../1",
    "%00",
    "\x00",
    "99999999999999999999#ffffffff",
    "00000000000000000001#0000000g",
]


def _execution(gw: Gateway, user_id: str, tool: str, ok: bool) -> None:
    gw.stores.audit.append(
        {
            "action": "EXECUTE",
            "user": user_id,
            "integration": "jots",
            "tool": tool,
            "success": ok,
            "error": None if ok else "boom",
            "duration_ms": 3,
            "ts": gw.clock(),
        }
    )


def test_activity_cursor_from_a_url_never_breaks_the_page(
    gw: Gateway, browser: Callable[[str], Browser]
) -> None:
    ada, bob = browser("ada@example.com"), browser("bob@example.com")
    ada_id = gw.stores.users.get_or_create("ada@example.com").id
    for i in range(30):
        _execution(gw, ada_id, f"ada_tool_{i}", i % 2 == 0)
    first = ada.client.get("/portal/activity")
    assert first.status_code == 200 and "ada_tool_29" in first.text
    older = re.search(r'href="/portal/activity\?([^"]*cursor=[^"]*)" rel="next"', first.text)
    assert older, "the first page links to the next"
    for value in [*HOSTILE_CURSORS, older.group(1).split("cursor=")[1]]:
        for who in (ada, bob):
            r = who.client.get("/portal/activity?cursor=" + quote(value, safe="") + "&outcome=failure")
            assert r.status_code == 200, (value, r.status_code)
            if who is bob:  # another user's cursor (or any) reads only bob's own events: none
                assert "ada_tool_" not in r.text


def test_activity_cursors_of_any_shape_are_safe_on_every_store(stores: Stores) -> None:  # noqa: F811
    for i in range(5):
        stores.audit.append({"action": "EXECUTE", "user": "usr_a", "tool": f"t{i}", "success": True, "ts": i})
    for value in HOSTILE_CURSORS:
        page = stores.audit.activity("usr_a", ActivityQuery(cursor=value, limit=2))
        assert len(page.events) <= 2  # a page, never an exception
        assert stores.audit.activity("usr_b", ActivityQuery(cursor=value)).events == []


def _post_routes(app: Any) -> list[str]:
    """Every browser-facing POST route (cookie-authenticated), with path parameters filled in."""
    out = []
    for route in app.routes:
        if not isinstance(route, Route) or "POST" not in (route.methods or ()):
            continue
        if not route.path.startswith(("/portal", "/jots", "/api/connect", "/authorize")):
            continue
        out.append(re.sub(r"\{[^}]+\}", "x", route.path.replace("{action:str}", "share")))
    return sorted(set(out))


def test_every_state_changing_form_needs_its_csrf_token_and_our_origin(
    gw: Gateway, app: Any, browser: Callable[[str], Browser]
) -> None:
    ada = browser("ada@example.com")
    user = gw.stores.users.get_or_create("ada@example.com")
    key = gw.auth.mint_key(user, label="keep")
    key_id = key.split("_")[1]
    from workbench.stores import Jot

    gw.stores.jots.put(Jot(id="jot_mine", user_id=user.id, title="t", body="b", created_at=1, updated_at=1))
    routes = _post_routes(app)
    assert "/portal/apps/clear-cache" in routes and "/portal/api-keys" in routes and len(routes) >= 15
    token = ada.csrf()
    mine = [f"/portal/api-keys/{key_id}/revoke", f"/portal/api-keys/{key_id}/rotate", "/jots/jot_mine/share"]
    for path in [*routes, *mine]:
        body = {"label": "x", "name": "x", "url": "https://mcp.example/mcp", "code": "x", "email": "e@x"}
        no_token = ada.client.post(path, data=body, headers={"origin": ORIGIN})
        wrong = ada.client.post(path, data={**body, "csrf": "0" * 64}, headers={"origin": ORIGIN})
        foreign = ada.client.post(
            path, data={**body, "csrf": token}, headers={"origin": "https://evil.example"}
        )
        for r in (no_token, wrong, foreign):
            if path == "/portal/browser/x/input" or path.startswith("/portal/browser/"):
                assert r.status_code == 403, (path, r.status_code)  # Origin-gated bridge
                continue
            assert r.status_code in (400, 403), (path, r.status_code, r.headers.get("location"))
    # Nothing happened: the key is live, nothing was minted or registered.
    keys = gw.stores.api_keys.list_for(user.id)
    assert [k.revoked for k in keys] == [False]
    assert gw.external is not None and gw.external.list_for(user.id) == []
    jot = gw.stores.jots.get(user.id, "jot_mine")
    assert jot is not None and jot.share_token is None


def test_a_link_cannot_make_the_portal_say_anything(browser: Callable[[str], Browser]) -> None:
    ada = browser("ada@example.com")
    lie = "Your account is locked. Call +1 555 0100 to unlock it."
    for page in (
        "/portal/integrations",
        "/portal/signin",
        "/portal/apps",
        "/portal/api-keys",
        "/portal/clients",
    ):
        for param in ("error", "notice", "message"):
            shown = ada.notices(f"{page}?{param}={quote(lie)}")
            assert all(lie not in n for n in shown), (page, param, shown)
    from starlette.testclient import TestClient

    anonymous = TestClient(ada.client.app, base_url=ORIGIN).get(f"/portal/signin?error={quote(lie)}")
    assert anonymous.status_code == 200 and lie not in anonymous.text
    # A refused form still explains itself, once, through the session-sealed notice.
    r = ada.post("/portal/integrations/nope/connect")
    assert r.status_code == 303 and r.headers["location"] == "/portal/integrations"
    assert ada.notices("/portal/integrations") == ["That integration cannot be connected here."]
    assert ada.notices("/portal/integrations") == []


PARAMS = [
    "x",
    "%00",
    "..%2F..%2Fportal",
    "%ff%fe",
    "a" * 300,
    "%F0%9F%98%80",
    "%ED%A0%80",
    "-1",
    "9" * 40,
    "%0d%0aSet-Cookie:%20x=1",
    "%22%3E%3Cscript%3Ealert(1)%3C%2Fscript%3E",
    "github",
    "jots",
    "%23operator",
    "%23settings",
    "%23workspace",
]
QUERIES = [
    "",
    "?next=//evil.example/x",
    "?next=%2F%5Cevil.example",
    "?next=https:%2F%2Fevil.example",
    "?next=/%0d%0aLocation:%20https://evil.example",
    "?cursor=99999999999999999999999&integration=%ff&outcome=%00",
    "?state=x&code=y&iss=https://evil.example&error=%3Cb%3E",
    "?token=" + "A" * 5000,
    "?a=%ff%fe&a=1&a=2",
]
BODIES: list[tuple[str | None, bytes]] = [
    ("application/x-www-form-urlencoded", b"csrf=1&name=%ff&url=http%3A%2F%2F127.0.0.1%3A1%2Fx&code=%00"),
    ("application/x-www-form-urlencoded", b"a=" + b"%" * 500 + b"&&&=&=="),
    ("application/json", b'{"token": {"$ne": 1}, "a": [[[[[[[[1]]]]]]]]}'),
    ("application/json", b"\xff\xfe\x00\x00"),
    (
        "multipart/form-data; boundary=zz",
        b"--zz\r\nContent-Disposition: form-data; name=x\r\n\r\n\xff\r\n--zz--",
    ),
    ("multipart/form-data", b"garbage"),
    ("text/plain", b"csrf=x"),
    (None, b""),
]


async def test_every_route_survives_hostile_paths_queries_methods_and_bodies(app: Any) -> None:
    """A bounded crawl: every route of the local app, its parameters replaced by hostile values, with
    and without a session. No answer is 5xx, and no redirect leaves the gateway's own origin."""
    import httpx

    paths: set[str] = set()
    static: set[str] = set()
    for route in app.routes:
        template = getattr(route, "path", "")
        if not re.search(r"\{[^}]+\}", template):
            static.add(template)
            continue
        for value in PARAMS:
            paths.add(re.sub(r"\{[^}]+\}", value, template))
    paths |= static
    paths.discard("/portal/signout")  # it would end the signed-in client's session mid-crawl
    problems: list[tuple[str, str, int | str]] = []
    count = 0
    methods = ("HEAD", "PUT", "DELETE", "PATCH", "OPTIONS")
    transport = httpx.ASGITransport(app=app)
    async with (
        httpx.AsyncClient(transport=transport, base_url=ORIGIN) as signed,
        httpx.AsyncClient(transport=transport, base_url=ORIGIN) as anonymous,
    ):
        r = await signed.post("/api/auth/dev-login", data={"email": "ada@example.com", "next": "/portal"})
        assert r.status_code == 303 and signed.cookies.get("__Host-wb_session")
        for i, path in enumerate(sorted(paths)):
            # A route's own path meets every hostile query; its hostile-parameter variants three.
            queries = QUERIES if path in static else [QUERIES[(i + n) % len(QUERIES)] for n in range(3)]
            for j, client in enumerate((signed, anonymous)):
                for query in queries:
                    r = await client.get(path + query, headers={"origin": ORIGIN})
                    problems.extend(_problems("GET", path + query, r))
                # Each kind of hostile body and odd method, rotated over the paths: a few thousand
                # requests in all, each path meeting several of them.
                query = QUERIES[(i + j) % len(QUERIES)]
                method = methods[(i + j) % len(methods)]
                r = await client.request(method, path + query, headers={"origin": ORIGIN})
                problems.extend(_problems(method, path + query, r))
                for k in range(3):
                    ctype, body = BODIES[(3 * i + k + j) % len(BODIES)]
                    headers = {"origin": ORIGIN, **({"content-type": ctype} if ctype else {})}
                    r = await client.post(path + query, content=body, headers=headers)
                    problems.extend(_problems("POST", path + query, r))
                count += len(queries) + 4
    assert count > 3000
    assert problems == []


def _problems(method: str, url: str, r: Any) -> list[tuple[str, str, int | str]]:
    out: list[tuple[str, str, int | str]] = []
    if r.status_code >= 500:
        out.append((method, url, r.status_code))
    location = r.headers.get("location")
    if location:
        target = urlsplit(location)
        own = not target.netloc or f"{target.scheme}://{target.netloc}" == ORIGIN
        if not own or location.startswith(("//", "/\\")) or "\r" in location or "\n" in location:
            # The OAuth error redirect goes back to a registered client's redirect URI: none here.
            out.append((method, url, "redirect " + location))
    return out


@pytest.mark.parametrize(
    "value",
    [
        "//evil.example",
        "/\\evil.example",
        "https://evil.example",
        "/\t/evil.example",
        "\\\\evil.example",
        "/%2F%2Fevil",
    ],
)
def test_sign_in_never_sends_anyone_off_site(app: Any, value: str) -> None:
    from starlette.testclient import TestClient

    client = TestClient(app, base_url=ORIGIN, follow_redirects=False)
    r = client.post("/api/auth/dev-login", data={"email": "ada@example.com", "next": value})
    assert r.status_code == 303
    target = urlsplit(r.headers["location"])
    assert not target.netloc and not r.headers["location"].startswith(("//", "/\\"))
