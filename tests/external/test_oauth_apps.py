"""OAuth-protected MCP servers (the official SDK's auth support, on loopback): RFC 9728 discovery,
RFC 8414 metadata, dynamic client registration or a client ID metadata document, PKCE and resource
indicators; the plugins' connect → link → consent → wait_for_connection flow, for two users with
their own tokens; lazy refresh on expiry and refresh after a refused token."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from starlette.testclient import TestClient
from workbench.composition import Gateway
from workbench.web.app import create_web_app

from tests.external.conftest import Agent, FakeClock
from tests.external.oauth_server import OAuthServer, start_oauth_server
from tests.external.servers import Upstreams
from tests.support.demo_plugins import demo_registry
from tests.support.gateways import make_gateway, principal_for

pytestmark = pytest.mark.e2e


@pytest.fixture
def secure() -> Iterator[OAuthServer]:
    server = start_oauth_server()
    try:
        yield server
    finally:
        server.stop()


def gateway(tmp_path: Path, clock: FakeClock, **settings: Any) -> Gateway:
    settings.setdefault("egress_allow", "loopback")  # the test's servers listen on loopback
    gw = make_gateway(tmp_path, registry=demo_registry(), dev_login=True, **settings)
    assert gw.external is not None and gw.external.oauth is not None
    gw.external.clock = clock
    gw.credentials.clock = clock
    gw.external.oauth.clock = clock
    return gw


def browser(gw: Gateway, email: str) -> TestClient:
    client = TestClient(create_web_app(gw), base_url="https://testserver", follow_redirects=False)
    assert client.post("/api/auth/dev-login", data={"email": email, "next": "/portal"}).status_code == 303
    return client


async def connect(gw: Gateway, agent: Agent, server: OAuthServer, app: str, subject: str) -> dict[str, Any]:
    """The whole flow as a person and their agent go through it; returns the consent request."""
    started = await agent.call("connect", integration=app)
    assert started["type"] == "oauth2" and started["url"].endswith(f"/connect/{started['connectionId']}")
    person = browser(gw, agent.principal.user.email)
    redeemed = person.post("/api/connect/redeem", json={"token": started["connectionId"]})
    assert redeemed.status_code == 200, redeemed.text
    consent = redeemed.json()["url"]
    server.provider.subject = subject  # who signs in at the server
    async with httpx.AsyncClient() as http:
        answer = await http.get(consent)
    assert answer.status_code == 302, answer.text
    back = urlsplit(answer.headers["location"])
    assert back.path == "/api/auth/apps/callback"
    done = person.get(f"{back.path}?{back.query}")
    assert done.status_code == 303 and done.headers["location"] == f"/portal/apps?connected={app}"
    assert await agent.call("wait_for_connection", connectionId=started["connectionId"]) == {
        "status": "CONNECTED"
    }
    return {k: v[0] for k, v in parse_qs(urlsplit(consent).query).items()}


async def test_operator_oauth_server_two_users_connect_and_refresh(
    tmp_path: Path, secure: OAuthServer, clock: FakeClock
) -> None:
    gw = gateway(
        tmp_path, clock, external_servers=({"name": "secure", "url": secure.url, "auth": {"type": "oauth"}},)
    )
    ada = Agent(gw, principal_for(gw, "ada@example.com"))
    bob = Agent(gw, principal_for(gw, "bob@example.com"))

    # Not connected yet: the plugins' NOT_CONNECTED shape, and list_integrations says so.
    assert await ada.run("secure_whoami") == {
        "error": "NOT_CONNECTED",
        "integration": "secure",
        "message": "secure not connected. Use connect('secure') to connect.",
    }
    listed = {i["name"]: i for i in (await ada.call("list_integrations"))["integrations"]}
    assert listed["secure"]["connected"] is False
    assert "secure_whoami" not in await ada.search("whose token")

    consent = await connect(gw, ada, secure, "secure", "ada")
    # PKCE S256, the resource indicator, Workbench's callback; a client registered dynamically.
    assert consent["code_challenge_method"] == "S256" and len(consent["code_challenge"]) == 43
    assert consent["resource"] == secure.url
    assert consent["redirect_uri"] == "http://127.0.0.1:8787/api/auth/apps/callback"
    assert consent["client_id"] in secure.provider.clients
    assert secure.provider.token_resources == [secure.url]

    assert await ada.run("secure_whoami") == {"result": "ada"}
    assert "secure_whoami" in await ada.search("whose token")
    assert await bob.run("secure_whoami") == {
        "error": "NOT_CONNECTED",
        "integration": "secure",
        "message": "secure not connected. Use connect('secure') to connect.",
    }
    await connect(gw, bob, secure, "secure", "bob")
    assert await bob.run("secure_whoami") == {"result": "bob"}
    assert await ada.run("secure_whoami") == {"result": "ada"}  # each user's own token
    assert len(secure.provider.clients) == 1  # one registration, shared by the operator's app

    # Tokens are stored encrypted like any connection.
    conn = gw.stores.connections.get(ada.principal.user.id, "secure")
    assert conn is not None and b"at_" not in conn.credential
    first = gw.credentials.load(conn)

    # Lazy refresh when the token is about to expire (the one refresh mechanism).
    clock.advance(3600)
    assert await ada.run("secure_whoami") == {"result": "ada"}
    assert secure.provider.refreshes == 1
    second = gw.credentials.load(gw.stores.connections.get(ada.principal.user.id, "secure"))  # type: ignore[arg-type]
    assert second["access_token"] != first["access_token"]
    assert second["refresh_token"] != first["refresh_token"]  # rotated, and the new one kept

    # A token the server refuses before its expiry: refreshed once, the call retried once.
    secure.provider.revoke_access_tokens()
    assert await bob.run("secure_whoami") == {"result": "bob"}
    assert secure.provider.refreshes == 2


async def test_user_oauth_app_and_the_portal_connect_button(
    tmp_path: Path, secure: OAuthServer, clock: FakeClock
) -> None:
    gw = gateway(tmp_path, clock)
    ada = Agent(gw, principal_for(gw, "ada@example.com"))
    out = await ada.run("apps_register_server", name="mine", url=secure.url, auth={"type": "oauth"})
    assert out["result"]["error"] == "'mine' is not connected. Use connect('mine') to connect."
    assert out["result"]["auth"] == {"type": "oauth"}

    person = browser(gw, "ada@example.com")
    page = person.get("/portal/apps").text
    assert "Not connected" in page and 'aria-label="Connect mine"' in page
    from tests.web.conftest import csrf_of

    answer = person.post("/portal/apps/mine/connect", data={"csrf": csrf_of(page)})
    assert answer.status_code == 303 and answer.headers["location"].startswith(secure.base + "/authorize?")
    secure.provider.subject = "ada-user-app"
    async with httpx.AsyncClient() as http:
        back = urlsplit((await http.get(answer.headers["location"])).headers["location"])
    assert person.get(f"{back.path}?{back.query}").status_code == 303
    assert await ada.run("mine_whoami") == {"result": "ada-user-app"}
    assert "Connected" in person.get("/portal/apps").text

    # A second consent response cannot be replayed; another user's session cannot finish it.
    assert person.get(f"{back.path}?{back.query}").status_code == 400

    # Removing the app removes its tokens and OAuth client.
    await ada.run("apps_remove", name="mine")
    assert gw.stores.connections.get(ada.principal.user.id, "mine") is None


async def test_client_id_metadata_document_first_and_issuer_checked(tmp_path: Path, clock: FakeClock) -> None:
    server = start_oauth_server(cimd=True)
    try:
        gw = gateway(
            tmp_path,
            clock,
            external_servers=({"name": "secure", "url": server.url, "auth": {"type": "oauth"}},),
        )
        web = TestClient(create_web_app(gw), base_url="http://127.0.0.1:8787")

        def fetch(url: str) -> dict[str, Any]:  # the authorization server fetches Workbench's document
            assert url == "http://127.0.0.1:8787/oauth/apps/client-metadata.json"
            value: dict[str, Any] = web.get(urlsplit(url).path).json()
            return value

        server.provider.fetch_client_document = fetch
        ada = Agent(gw, principal_for(gw, "ada@example.com"))
        consent = await connect(gw, ada, server, "secure", "ada")
        assert consent["client_id"] == "http://127.0.0.1:8787/oauth/apps/client-metadata.json"
        assert server.provider.clients == {}  # no dynamic registration
        assert await ada.run("secure_whoami") == {"result": "ada"}

        # RFC 9207: a response claiming another issuer is refused before the code is used.
        started = await ada.call("connect", integration="secure")
        person = browser(gw, "ada@example.com")
        url = person.post("/api/connect/redeem", json={"token": started["connectionId"]}).json()["url"]
        async with httpx.AsyncClient() as http:
            back = urlsplit((await http.get(url)).headers["location"])
        forged = back.query.replace("iss=", "iss=https%3A%2F%2Fevil.example&x=")
        answer = person.get(f"{back.path}?{forged}")
        assert answer.status_code == 400 and "did not come from the authorization server" in answer.text
    finally:
        server.stop()


async def test_openapi_app_with_oauth2_authorization_code(
    tmp_path: Path, secure: OAuthServer, ups: Upstreams, clock: FakeClock
) -> None:
    """An API whose document declares an oauth2 authorizationCode flow (here served by the SDK's
    authorization server, with a client registered beforehand, as API providers do)."""
    from mcp.shared.auth import OAuthClientInformationFull

    secure.provider.clients["wb-notes"] = OAuthClientInformationFull(
        client_id="wb-notes",
        client_secret="notes-secret-9",
        redirect_uris=["http://127.0.0.1:8787/api/auth/apps/callback"],
        token_endpoint_auth_method="client_secret_post",
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
    )
    document = {
        "openapi": "3.1.0",
        "info": {"title": "Notes", "version": "4.2.0"},
        "servers": [{"url": ups.base + "/api/notes"}],
        "components": {
            "securitySchemes": {
                "notes_oauth": {
                    "type": "oauth2",
                    "flows": {
                        "authorizationCode": {
                            "authorizationUrl": secure.base + "/authorize",
                            "tokenUrl": secure.base + "/token",
                            "scopes": {},
                        }
                    },
                }
            }
        },
        "paths": {
            "/notes/{id}": {
                "get": {
                    "operationId": "getNote",
                    "summary": "Read a note",
                    "parameters": [
                        {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
                    ],
                }
            }
        },
    }
    gw = gateway(tmp_path, clock)
    ada = Agent(gw, principal_for(gw, "ada@example.com"))
    out = await ada.run(
        "apps_register_openapi",
        name="notes",
        document=document,
        auth={"type": "oauth2", "clientId": "wb-notes", "clientSecret": "notes-secret-9"},
    )
    assert out["result"]["auth"] == {"type": "oauth"} and "notes-secret-9" not in str(out)
    assert (await ada.run("notes_getNote", id="n1"))["error"] == "NOT_CONNECTED"

    consent = await connect(gw, ada, secure, "notes", "ada")
    assert consent["client_id"] == "wb-notes" and "resource" not in consent
    got = (await ada.run("notes_getNote", id="n1"))["result"]
    assert got["path"] == "/api/notes/notes/n1"
    token = ups.api.seen[-1].headers["authorization"].removeprefix("Bearer ")
    assert token in secure.provider.access and secure.provider.access[token].subject == "ada"

    clock.advance(3600)  # expired: refreshed with the client's secret, then used
    await ada.run("notes_getNote", id="n2")
    assert secure.provider.refreshes == 1
    assert ups.api.seen[-1].headers["authorization"] != f"Bearer {token}"
