"""Portal pages in process: sign-in gate, CSRF on every post, security headers, API keys, API-key integrations."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from starlette.testclient import TestClient
from workbench.composition import Gateway, build_registry
from workbench.errors import AuthError
from workbench.web.app import create_web_app
from workbench.web.context import safe_next
from workbench.web.sessions import SESSION_COOKIE

from tests.support.gateways import make_gateway
from tests.web.conftest import TEST_PLUGINS, csrf_of

PAGES = ["/portal/integrations", "/portal/api-keys", "/portal/clients"]

Browser = Callable[[str], TestClient]


@pytest.mark.parametrize("path", [*PAGES, "/portal/signin"])
def test_every_portal_page_forbids_framing(browser_for: Browser, path: str) -> None:
    client = browser_for("ada@example.com")
    if path == "/portal/signin":
        client.cookies.clear()  # a signed-in person is sent on from the sign-in page
    r = client.get(path)
    assert r.status_code == 200
    assert "frame-ancestors 'none'" in r.headers["content-security-policy"]
    assert r.headers["x-frame-options"] == "DENY"
    assert r.headers["cache-control"] == "no-store"


@pytest.mark.parametrize("path", PAGES)
def test_pages_need_a_session_and_come_back_after_sign_in(web_gw: Gateway, path: str) -> None:
    client = TestClient(create_web_app(web_gw), base_url="https://testserver", follow_redirects=False)
    r = client.get(path)
    assert r.status_code == 303
    assert r.headers["location"] == "/portal/signin?next=" + path.replace("/", "%2F")
    assert "frame-ancestors 'none'" in r.headers["content-security-policy"]


def test_session_cookie_is_host_prefixed_secure_httponly_lax(web_gw: Gateway) -> None:
    client = TestClient(create_web_app(web_gw), base_url="https://testserver", follow_redirects=False)
    r = client.post("/api/auth/dev-login", data={"email": "ada@example.com"})
    cookie = r.headers["set-cookie"]
    assert cookie.startswith(f"{SESSION_COOKIE}=")
    for attr in ("HttpOnly", "Path=/", "SameSite=lax", "Secure"):
        assert attr in cookie
    assert "Domain" not in cookie


def test_development_sign_in_is_marked_and_off_unless_enabled(tmp_path: Path, browser_for: Browser) -> None:
    page = TestClient(create_web_app(make_gateway(tmp_path)), base_url="https://testserver")
    off = page.get("/portal/signin")
    assert "Development sign-in" not in off.text and "not configured" in off.text
    assert page.post("/api/auth/dev-login", data={"email": "eve@example.com"}).status_code == 404
    on = browser_for("ada@example.com")
    on.cookies.clear()
    text = on.get("/portal/signin").text
    assert "Development sign-in" in text and "Local gateway only." in text
    assert '<label for="dev-email">Email address</label>' in text


@pytest.mark.parametrize(
    "path",
    [
        "/portal/api-keys",
        "/portal/integrations/testkey/api-key",
        "/portal/integrations/testkey/disconnect",
        "/portal/integrations/testoauth/connect",
        "/portal/signout",
    ],
)
def test_every_state_changing_form_requires_the_csrf_token(
    browser_for: Browser, web_gw: Gateway, path: str
) -> None:
    client = browser_for("ada@example.com")
    user = web_gw.stores.users.by_email("ada@example.com")
    assert user is not None
    web_gw.credentials.save(user.id, "testkey", {"key_id": "k", "key_secret": "s"})
    for data in ({}, {"csrf": "0" * 64}):
        r = client.post(path, data={**data, "label": "x", "key_id": "a", "key_secret": "b"})
        assert r.status_code == 403 and "Form expired" in r.text
    assert web_gw.stores.api_keys.list_for(user.id) == []  # nothing minted
    conn = web_gw.stores.connections.get(user.id, "testkey")
    assert conn is not None and web_gw.credentials.load(conn) == {"key_id": "k", "key_secret": "s"}
    assert client.get("/portal/integrations").status_code == 200  # still signed in


def test_a_foreign_origin_is_refused_even_with_the_token(browser_for: Browser, web_gw: Gateway) -> None:
    client = browser_for("ada@example.com")
    token = csrf_of(client.get("/portal/api-keys").text)
    r = client.post("/portal/api-keys", data={"csrf": token}, headers={"Origin": "https://evil.example"})
    assert r.status_code == 403


REVEALED = re.compile(r'id="revealed-key" tabindex="0">(wb_[^<]+)</code>')


def test_api_key_is_revealed_once_then_rotated_then_revoked(browser_for: Browser, web_gw: Gateway) -> None:
    client = browser_for("ada@example.com")
    user = web_gw.stores.users.by_email("ada@example.com")
    assert user is not None
    token = csrf_of(client.get("/portal/api-keys").text)
    minted = client.post("/portal/api-keys", data={"csrf": token, "label": "laptop"})
    # post/redirect/get: the post answers a redirect, the GET shows the key once
    assert minted.status_code == 303 and minted.headers["location"] == "/portal/api-keys#new-key"
    shown = client.get("/portal/api-keys")
    assert "shown only once" in shown.text
    key = REVEALED.search(shown.text)
    assert key
    first = key.group(1)
    assert web_gw.auth.api_keys.resolve(first).user.email == "ada@example.com"
    assert first not in minted.text and first.split("_", 2)[2] not in minted.headers["set-cookie"]  # sealed
    # the snippets on that page are filled with the new key, and there is a connection test
    assert f"--header &quot;Authorization: Bearer {first}&quot;" in shown.text
    assert (
        'id="test-connection"' in shown.text
        and f'id="test-key" name="key" type="hidden" value="{first}"' in shown.text
    )
    reload = client.get("/portal/api-keys").text  # a reload: never the key again, never a second key
    assert first not in reload and "laptop" in reload
    assert len(web_gw.stores.api_keys.list_for(user.id)) == 1

    key_id = first.split("_")[1]
    confirm = client.get(f"/portal/api-keys/{key_id}/rotate")
    assert confirm.status_code == 200 and "Rotate key" in confirm.text and f"wb_{key_id}_…" in confirm.text
    assert web_gw.auth.api_keys.resolve(first)  # asking is not doing
    rotated = client.post(f"/portal/api-keys/{key_id}/rotate", data={"csrf": csrf_of(confirm.text)})
    assert rotated.status_code == 303
    after = client.get(rotated.headers["location"].split("#")[0]).text
    second = REVEALED.search(after)
    assert second and second.group(1) != first and "was revoked and replaced" in after
    with pytest.raises(AuthError):
        web_gw.auth.api_keys.resolve(first)
    assert web_gw.auth.api_keys.resolve(second.group(1)).user.email == "ada@example.com"

    second_id = second.group(1).split("_")[1]
    confirm = client.get(f"/portal/api-keys/{second_id}/revoke")
    assert "stops working at once" in confirm.text and 'href="/portal/api-keys">Cancel</a>' in confirm.text
    revoked = client.post(f"/portal/api-keys/{second_id}/revoke", data={"csrf": token})
    assert (
        revoked.status_code == 303 and revoked.headers["location"] == f"/portal/api-keys?revoked={second_id}"
    )
    assert "was revoked" in client.get(revoked.headers["location"]).text
    with pytest.raises(AuthError):
        web_gw.auth.api_keys.resolve(second.group(1))


def test_a_flash_cookie_opens_only_in_the_session_that_made_it(browser_for: Browser, web_gw: Gateway) -> None:
    ada = browser_for("ada@example.com")
    minted = ada.post("/portal/api-keys", data={"csrf": csrf_of(ada.get("/portal/api-keys").text)})
    flash = minted.cookies["__Host-wb_flash"]
    bob = browser_for("bob@example.com")
    bob.cookies.set("__Host-wb_flash", flash, domain="testserver")
    assert 'id="revealed-key"' not in bob.get("/portal/api-keys").text


def test_another_users_key_cannot_be_revoked_or_rotated(browser_for: Browser, web_gw: Gateway) -> None:
    bob = web_gw.stores.users.get_or_create("bob@example.com")
    bobs = web_gw.auth.mint_key(bob)
    client = browser_for("ada@example.com")
    token = csrf_of(client.get("/portal/api-keys").text)
    for action in ("revoke", "rotate"):
        asked = client.get(f"/portal/api-keys/{bobs.split('_')[1]}/{action}")
        assert asked.status_code == 303 and asked.headers["location"] == "/portal/api-keys?error=no-such-key"
        r = client.post(f"/portal/api-keys/{bobs.split('_')[1]}/{action}", data={"csrf": token})
        assert r.status_code == 303
        assert "does not exist or is revoked" in client.get(r.headers["location"]).text
    assert web_gw.auth.api_keys.resolve(bobs).user.id == bob.id
    assert bobs.split("_")[1] not in client.get("/portal/api-keys").text


def test_api_key_integration_uses_the_manifest_fields_and_stores_them_encrypted(
    browser_for: Browser, web_gw: Gateway
) -> None:
    client = browser_for("ada@example.com")
    page = client.get("/portal/integrations").text
    assert '<label for="testkey-key_id">Key ID</label>' in page
    assert 'id="testkey-key_secret" name="key_secret" type="password"' in page
    assert 'aria-describedby="testkey-key_id-help"' in page
    token = csrf_of(page)
    user = web_gw.stores.users.by_email("ada@example.com")
    assert user is not None

    missing = client.post("/portal/integrations/testkey/api-key", data={"csrf": token, "key_id": "AK1"})
    assert missing.status_code == 303
    back = client.get(missing.headers["location"].split("#")[0]).text
    card = back[back.index('id="integration-testkey"') :]
    assert 'role="alert">Enter Key secret.</div>' in card[: card.index("</section>")]
    assert web_gw.stores.connections.get(user.id, "testkey") is None

    ok = client.post(
        "/portal/integrations/testkey/api-key",
        data={"csrf": token, "key_id": " AK1 ", "key_secret": "s3cret"},
    )
    assert ok.status_code == 303 and ok.headers["location"] == "/portal/integrations?connected=testkey"
    conn = web_gw.stores.connections.get(user.id, "testkey")
    assert conn is not None and b"s3cret" not in conn.credential
    assert web_gw.credentials.load(conn) == {"key_id": "AK1", "key_secret": "s3cret"}
    assert web_gw.connections.status(user.id)["testkey"] is True
    assert "testkey is connected." in client.get("/portal/integrations?connected=testkey").text

    asked = client.get("/portal/integrations/testkey/disconnect")
    assert (
        "Disconnect Test Key Service?" in asked.text and web_gw.connections.status(user.id)["testkey"] is True
    )
    gone = client.post("/portal/integrations/testkey/disconnect", data={"csrf": token})
    assert gone.headers["location"] == "/portal/integrations?disconnected=testkey"
    assert web_gw.stores.connections.get(user.id, "testkey") is None
    assert web_gw.connections.status(user.id)["testkey"] is False


def test_oauth_connect_button_goes_straight_to_the_provider_with_pkce(
    browser_for: Browser, web_gw: Gateway
) -> None:
    client = browser_for("ada@example.com")
    token = csrf_of(client.get("/portal/integrations").text)
    r = client.post("/portal/integrations/testoauth/connect", data={"csrf": token})
    assert r.status_code == 303
    location = r.headers["location"]
    assert location.startswith("http://127.0.0.1:9/auth?") and "code_challenge_method=S256" in location


def test_mcp_clients_page_renders_without_an_authorization_server(browser_for: Browser) -> None:
    text = browser_for("ada@example.com").get("/portal/clients").text
    assert "<h1>MCP clients</h1>" in text and "aria-current=page>MCP clients" in text


def test_sign_out_clears_the_session(browser_for: Browser) -> None:
    client = browser_for("ada@example.com")
    token = csrf_of(client.get("/portal/integrations").text)
    r = client.post("/portal/signout", data={"csrf": token})
    assert r.status_code == 303 and f'{SESSION_COOKIE}=""' in r.headers["set-cookie"]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("/connect/conn_1", "/connect/conn_1"),
        ("/oauth/authorize?client_id=a&x=1", "/oauth/authorize?client_id=a&x=1"),
        ("//evil.example/x", "/portal/integrations"),
        ("https://evil.example", "/portal/integrations"),
        ("/\\evil.example", "/portal/integrations"),
        ("/x\r\nSet-Cookie: a=b", "/portal/integrations"),
        (None, "/portal/integrations"),
    ],
)
def test_sign_in_only_returns_to_paths_on_this_site(value: str | None, expected: str) -> None:
    assert safe_next(value) == expected


def test_an_oauth_integration_without_its_client_is_folded_into_needs_setup(tmp_path: Path) -> None:
    gw = make_gateway(tmp_path, registry=build_registry(extra=TEST_PLUGINS), dev_login=True, plugin_env={})
    client = TestClient(create_web_app(gw), base_url="https://testserver", follow_redirects=False)
    client.post("/api/auth/dev-login", data={"email": "ada@example.com", "next": "/portal/integrations"})
    page = client.get("/portal/integrations").text
    # What can be connected comes first; the unconfigured ones are one folded section at the end,
    # each saying how to enable it: the variable to set and the redirect URI to register.
    assert page.index('id="sec-ready"') < page.index('id="sec-builtin"') < page.index('id="sec-setup"')
    assert page.index('id="integration-testkey"') < page.index('id="sec-setup"')
    assert 'id="integration-testoauth"' not in page  # no card, so no Connect button that cannot work
    setup = page[page.index('id="setup-testoauth"') :]
    setup = setup[: setup.index("</li>")]
    assert "<code>TESTOAUTH_CLIENT_ID</code>" in setup and "<code>TESTOAUTH_CLIENT_SECRET</code>" in setup
    assert "/api/auth/plugin/testoauth/callback" in setup
    assert "/portal/integrations/testoauth/connect" not in page
    # The built-ins that work at once are shown.
    builtin = page[page.index('id="sec-builtin"') :]
    assert "Jots" in builtin[: builtin.index("</section>")]
    # The API-key integration next to it is unaffected.
    assert "/portal/integrations/testkey/api-key" in page
    # Posting the connect form anyway comes back with the reason, and mints nothing.
    token = csrf_of(page)
    r = client.post("/portal/integrations/testoauth/connect", data={"csrf": token})
    assert r.status_code == 303 and r.headers["location"] == "/portal/integrations"
    shown = client.get(r.headers["location"]).text
    assert "TESTOAUTH_CLIENT_ID" in shown and "NOT_CONFIGURED" not in shown
