"""The portal's custom-apps page: add, test/refresh and remove MCP servers and OpenAPI apps, each
shown with its tools, last discovery, last error and connection state; the workspace code setting;
the admin-only cache clear. Real SDK servers on loopback behind the pages."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient
from workbench.composition import Gateway
from workbench.web.app import create_web_app

from tests.external.servers import Upstreams
from tests.external.test_openapi import PETSTORE, load
from tests.support.demo_plugins import demo_registry
from tests.support.gateways import make_gateway
from tests.support.processes import free_port
from tests.web.conftest import csrf_of

pytestmark = pytest.mark.e2e


@pytest.fixture
def portal_gw(tmp_path: Path, ups: Upstreams) -> Gateway:
    return make_gateway(
        tmp_path,
        registry=demo_registry(),
        dev_login=True,
        egress_allow="loopback",  # the test's MCP servers listen on loopback
        admin_emails=frozenset({"admin@example.com"}),
        external_servers=({"name": "shared", "url": ups.url("plain"), "toolPrefix": "sh_"},),
    )


def browser(gw: Gateway, email: str) -> TestClient:
    client = TestClient(create_web_app(gw), base_url="https://testserver", follow_redirects=False)
    r = client.post("/api/auth/dev-login", data={"email": email, "next": "/portal/apps"})
    assert r.status_code == 303
    return client


def shown(client: TestClient, r: Any) -> str:
    """Post/redirect/get: the post answers 303 to the apps page, which shows its notice once."""
    assert r.status_code == 303 and r.headers["location"] == "/portal/apps", r.text
    page = client.get("/portal/apps").text
    assert '<div class="notice' not in client.get("/portal/apps").text  # once: a reload shows nothing
    return page


def card_of(html: str, name: str) -> str:
    match = re.search(rf'<section class="card" aria-labelledby="app-{name}">(.*?)</section>', html, re.S)
    assert match, f"no card for {name}"
    return match.group(1)


def test_add_test_and_remove_apps_with_their_state(portal_gw: Gateway, ups: Upstreams) -> None:
    client = browser(portal_gw, "ada@example.com")
    page = client.get("/portal/apps")
    assert page.status_code == 200 and "frame-ancestors 'none'" in page.headers["content-security-policy"]
    assert "aria-current=page>Custom apps" in page.text
    token = csrf_of(page.text)
    shared = card_of(page.text, "shared")  # the operator's server, for everyone, without Remove
    assert "from the operator" in shared and "Remove" not in shared
    # Never asked for its tools yet: not "Connected" (issue 25), and no request was made to show it.
    assert "Not contacted yet" in shared and "Connected" not in shared
    assert ups.recorders["plain"].seen == []
    assert "Clear the discovery cache" not in page.text  # not an admin

    r = client.post(
        "/portal/apps/mcp",
        data={
            "csrf": token,
            "name": "plain",
            "url": ups.url("plain"),
            "auth_type": "none",
            "timeout": "5000",
        },
    )
    text = shown(client, r)
    assert "plain is connected: 3 tools discovered." in text
    card = card_of(text, "plain")
    assert "Connected" in card and "<code>plain_echo</code>" in card
    assert re.search(r"Last discovery: \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", card)

    r = client.post(
        "/portal/apps/openapi",
        data={
            "csrf": token,
            "name": "pets",
            "document": json.dumps(load(PETSTORE)),
            "base_url": ups.base + "/api/pets",
            "auth_type": "header",
            "auth_name": "api_key",
            "auth_value": "literal-pet-key",
        },
    )
    text = shown(client, r)
    assert "pets was added with 19 tools. 1 operation(s) were dropped: uploadFile" in text
    card = card_of(text, "pets")
    assert "OpenAPI app" in card and "<code>pets_getPetById</code>" in card
    assert "literal-pet-key" not in text  # a secret typed in is never shown again

    # A server that is down: the failure and its message are shown, the others stay.
    gone = f"http://127.0.0.1:{free_port()}/mcp"
    r = client.post("/portal/apps/mcp", data={"csrf": token, "name": "gone", "url": gone, "timeout": "2000"})
    text = shown(client, r)
    assert 'class="notice error"' in text and "gone: External server &#x27;gone&#x27; is unreachable" in text
    card = card_of(client.get("/portal/apps").text, "gone")
    assert "Last discovery failed" in card and "Last error:" in card and "Last discovery: never" in card

    # Test & refresh runs discovery now.
    ups.script.tools["fresh"] = {"description": "new", "schema": {"type": "object"}}
    r = client.post("/portal/apps/plain/refresh", data={"csrf": token})
    assert "plain is connected: 3 tools discovered." in shown(client, r)

    # Bad input gets a clear error; nothing is stored.
    r = client.post("/portal/apps/mcp", data={"csrf": token, "name": "Bad Name", "url": ups.url("plain")})
    assert "name must start with a lowercase letter" in shown(client, r)
    r = client.post("/portal/apps/openapi", data={"csrf": token, "name": "x", "document": "{"})
    text = shown(client, r)
    assert 'class="notice error"' in text and "neither valid JSON nor valid YAML" in text
    assert 'aria-labelledby="app-x"' not in text

    # Another user sees neither the apps nor can remove them.
    bob = browser(portal_gw, "bob@example.com")
    bob_page = bob.get("/portal/apps").text
    assert 'aria-labelledby="app-plain"' not in bob_page and 'aria-labelledby="app-shared"' in bob_page
    r = bob.post("/portal/apps/plain/remove", data={"csrf": csrf_of(bob_page)})
    assert "No custom app named" in shown(bob, r)

    r = client.post("/portal/apps/plain/remove", data={"csrf": token})
    text = shown(client, r)
    assert "plain was removed." in text and 'aria-labelledby="app-plain"' not in text
    r = client.post("/portal/apps/shared/remove", data={"csrf": token})  # the operator's: not removable
    assert 'class="notice error"' in shown(client, r)


def test_workspace_code_setting_and_admin_only_clear(portal_gw: Gateway, ups: Upstreams) -> None:
    client = browser(portal_gw, "ada@example.com")
    token = csrf_of(client.get("/portal/apps").text)
    r = client.post("/portal/apps/workspace-code", data={"csrf": token, "code": "team-a"})
    text = shown(client, r)
    assert "Your workspace code is now team-a." in text and 'value="team-a"' in text
    user = portal_gw.stores.users.by_email("ada@example.com")
    assert user is not None and portal_gw.external is not None
    assert portal_gw.external.workspace_code(user.id) == "team-a"
    r = client.post("/portal/apps/workspace-code", data={"csrf": token, "code": "bad code"})
    assert 'class="notice error"' in shown(client, r)
    assert portal_gw.external.workspace_code(user.id) == "team-a"

    r = client.post("/portal/apps/clear-cache", data={"csrf": token})
    assert r.status_code == 403 and "Only a Workbench admin" in r.text

    admin = browser(portal_gw, "admin@example.com")
    page = admin.get("/portal/apps").text
    assert "Clear the discovery cache for everyone" in page
    r = admin.post("/portal/apps/clear-cache", data={"csrf": csrf_of(page)})
    assert "The discovery cache was cleared for everyone" in shown(admin, r)

    for path in ("/portal/apps/mcp", "/portal/apps/clear-cache", "/portal/apps/workspace-code"):
        r = admin.post(path, data={"csrf": "0" * 64, "name": "z", "url": ups.url("plain")})
        assert r.status_code == 403 and "Form expired" in r.text
