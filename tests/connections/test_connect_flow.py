"""connect / redeem / callback in process, against the real loopback OAuth provider where it answers."""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from starlette.testclient import TestClient
from workbench.composition import Gateway, build_registry
from workbench.connections.flow import STATE_TTL_SECONDS
from workbench.connections.provider_oauth import pkce_challenge
from workbench.identity.auth import Principal
from workbench.manifest import CookieAuth, Manifest, NoAuth
from workbench.web.app import create_web_app

from tests.connections.plugins.testoauth import make_manifest
from tests.connections.support import oauth_server, provider_stats
from tests.support.gateways import make_gateway

CLIENT_ID, CLIENT_SECRET = "workbench-testoauth", "plugin-secret-456"
CALLBACK = "http://127.0.0.1:8787/api/auth/plugin/testoauth/callback"


@pytest.fixture(scope="module")
def provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    log = tmp_path_factory.mktemp("provider") / "provider.log"
    with oauth_server(
        "provider", client_id=CLIENT_ID, client_secret=CLIENT_SECRET, redirect_uris=[CALLBACK], log=log
    ) as url:
        yield url


def _tools() -> list[Any]:
    return list(importlib.import_module("tests.connections.plugins.testoauth.tools").TOOLS)


def gateway_for(tmp_path: Path, provider_url: str, **settings: Any) -> Gateway:
    registry = build_registry(plugins=False)
    registry.add(make_manifest(provider_url), _tools)
    registry.add(
        Manifest(
            "cookiesvc",
            "1.0.0",
            "Cookie Service",
            CookieAuth("https://c.example/login", "c.example", ("sid",)),
        ),
        list,
    )
    registry.add(Manifest("open", "1.0.0", "Open Data", NoAuth()), list)
    env = {"TESTOAUTH_CLIENT_ID": CLIENT_ID, "TESTOAUTH_CLIENT_SECRET": CLIENT_SECRET}
    settings.setdefault("egress_allow", "loopback")  # the provider listens on loopback
    return make_gateway(tmp_path, registry=registry, plugin_env=settings.pop("plugin_env", env), **settings)


def browser(gw: Gateway, email: str | None) -> TestClient:
    client = TestClient(create_web_app(gw), base_url="https://testserver", follow_redirects=False)
    if email is not None:
        user = gw.stores.users.get_or_create(email)
        client.headers["cookie"] = f"__Host-wb_session={gw.sessions.issue(user.id)}"
    return client


def agent(gw: Gateway, email: str) -> Principal:
    return Principal(gw.stores.users.get_or_create(email), "api_key")


def redeem(client: TestClient, token: str) -> httpx.Response:
    return client.post(
        "/api/connect/redeem",
        content=json.dumps({"token": token}),
        headers={"content-type": "application/json"},
    )


def test_connect_mints_a_workbench_link_and_contacts_no_provider(tmp_path: Path) -> None:
    calls: list[httpx.Request] = []
    transport = httpx.MockTransport(lambda r: calls.append(r) or httpx.Response(500))
    gw = gateway_for(tmp_path, "http://127.0.0.1:9", transport=transport)
    ada = agent(gw, "ada@example.com")
    started = gw.connections.start(ada.user, "testoauth")
    assert set(started) == {"connectionId", "type", "url"} and started["type"] == "oauth2"
    assert started["url"] == f"http://127.0.0.1:8787/connect/{started['connectionId']}"
    rec = gw.stores.pending.get(started["connectionId"], now=gw.clock())
    assert rec is not None and rec.status == "PENDING" and rec.expires_at - rec.created_at == 600
    cookie = gw.connections.start(ada.user, "cookiesvc")
    assert cookie["type"] == "cookie" and cookie["url"].startswith("http://127.0.0.1:8787/connect/")
    assert calls == []


def test_redeem_is_for_the_same_user_only_and_unknown_ids_look_the_same(
    tmp_path: Path, provider: str
) -> None:
    gw = gateway_for(tmp_path, provider)
    link = gw.connections.start(agent(gw, "ada@example.com").user, "testoauth")["connectionId"]
    mismatch = {"error": "ACCOUNT_MISMATCH"}
    for who, token in [
        ("bob@example.com", link),
        (None, link),
        ("ada@example.com", "conn_nope"),
        ("bob@example.com", "conn_nope"),
    ]:
        r = redeem(browser(gw, who), token)
        assert (r.status_code, r.json()) == (403, mismatch)
    page_other = browser(gw, "bob@example.com").get(f"/connect/{link}")
    page_unknown = browser(gw, "bob@example.com").get("/connect/conn_nope")
    assert page_other.status_code == page_unknown.status_code == 403
    assert (
        page_other.text.replace(link, "").split("<main")[1]
        == page_unknown.text.replace("conn_nope", "").split("<main")[1]
    )

    r = redeem(browser(gw, "ada@example.com"), link)
    assert r.status_code == 200 and r.json()["type"] == "oauth2"
    url = urlsplit(r.json()["url"])
    q = {k: v[0] for k, v in parse_qs(url.query).items()}
    assert f"{url.scheme}://{url.netloc}{url.path}" == f"{provider}/auth"
    assert q["client_id"] == CLIENT_ID and q["redirect_uri"] == CALLBACK and q["response_type"] == "code"
    assert q["code_challenge_method"] == "S256" and "code_verifier" not in q
    state = gw.stores.pending.take_state(q["state"], now=gw.clock())
    assert state is not None and state.connection_id == link and state.integration == "testoauth"
    assert pkce_challenge(state.code_verifier) == q["code_challenge"]
    assert state.expires_at - gw.clock() <= STATE_TTL_SECONDS
    assert gw.stores.pending.take_state(q["state"], now=gw.clock()) is None  # single-use


def test_cookie_links_redeem_to_the_live_browser_page(tmp_path: Path) -> None:
    gw = gateway_for(tmp_path, "http://127.0.0.1:9")
    link = gw.connections.start(agent(gw, "ada@example.com").user, "cookiesvc")["connectionId"]
    r = redeem(browser(gw, "ada@example.com"), link)
    assert r.json() == {"type": "cookie", "url": f"http://127.0.0.1:8787/portal/browser/{link}"}


async def test_expired_link_is_expired_for_redeem_page_and_wait(tmp_path: Path) -> None:
    gw = gateway_for(tmp_path, "http://127.0.0.1:9", connect_ttl_seconds=0)
    ada = agent(gw, "ada@example.com")
    link = gw.connections.start(ada.user, "testoauth")["connectionId"]
    r = redeem(browser(gw, "ada@example.com"), link)
    assert (r.status_code, r.json()) == (410, {"error": "EXPIRED"})
    page = browser(gw, "ada@example.com").get(f"/connect/{link}")
    assert page.status_code == 410 and "This link has expired." in page.text
    assert await gw.connections.wait(ada.user, link, 600) == {"status": "EXPIRED"}
    assert await gw.connections.wait(ada.user, link, 600) == {"error": "Unknown connectionId"}  # reaped


async def test_wait_for_connection_has_no_existence_oracle(tmp_path: Path) -> None:
    gw = gateway_for(tmp_path, "http://127.0.0.1:9")
    link = gw.connections.start(agent(gw, "ada@example.com").user, "testoauth")["connectionId"]
    bob = agent(gw, "bob@example.com").user
    assert await gw.connections.wait(bob, link, 600) == await gw.connections.wait(bob, "conn_nope", 600)
    assert await gw.connections.wait(bob, link, 600) == {"error": "Unknown connectionId"}
    assert gw.stores.pending.get(link, now=gw.clock()) is not None  # bob's probe reaped nothing


def start_consent(gw: Gateway, email: str = "ada@example.com") -> tuple[str, str, TestClient]:
    client = browser(gw, email)
    link = gw.connections.start(agent(gw, email).user, "testoauth")["connectionId"]
    url = redeem(client, link).json()["url"]
    return link, parse_qs(urlsplit(url).query)["state"][0], client


def assert_nothing_stored(gw: Gateway, link: str, email: str = "ada@example.com") -> None:
    user = gw.stores.users.by_email(email)
    assert user is not None
    assert gw.stores.connections.get(user.id, "testoauth") is None
    rec = gw.stores.pending.get(link, now=gw.clock())
    assert rec is not None and rec.status == "PENDING"


def test_wrong_code_is_refused_by_the_provider_and_nothing_is_stored_then_the_state_is_spent(
    tmp_path: Path, provider: str
) -> None:
    gw = gateway_for(tmp_path, provider)
    link, state, client = start_consent(gw)
    errors_before = provider_stats(provider)
    r = client.get(f"/api/auth/plugin/testoauth/callback?code=not-a-real-code&state={state}")
    assert r.status_code == 400
    assert "The provider refused the authorization code (invalid_grant). Nothing was stored" in r.text
    assert "frame-ancestors 'none'" in r.headers["content-security-policy"]
    assert provider_stats(provider)["code_grants"] == errors_before["code_grants"]
    assert_nothing_stored(gw, link)
    replay = client.get(f"/api/auth/plugin/testoauth/callback?code=another&state={state}")
    assert replay.status_code == 400 and "already used, has expired, or was not started here" in replay.text
    assert_nothing_stored(gw, link)


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("state={state}", "has no authorization code"),
        ("state={state}&code=", "has no authorization code"),
        ("state={state}&error=access_denied", "did not grant access (access_denied)"),
        ("code=abc", "already used, has expired, or was not started here"),
        ("code=abc&state=forged", "already used, has expired, or was not started here"),
    ],
)
def test_bad_callbacks_are_clear_400s_and_store_nothing(tmp_path: Path, query: str, message: str) -> None:
    transport = httpx.MockTransport(lambda r: pytest.fail(f"provider contacted: {r.url}"))
    gw = gateway_for(tmp_path, "http://127.0.0.1:9", transport=transport)
    link, state, client = start_consent(gw)
    r = client.get("/api/auth/plugin/testoauth/callback?" + query.format(state=state))
    assert r.status_code == 400 and message in r.text
    assert_nothing_stored(gw, link)


def test_callback_for_another_integration_or_another_account_is_refused(tmp_path: Path) -> None:
    transport = httpx.MockTransport(lambda r: pytest.fail(f"provider contacted: {r.url}"))
    gw = gateway_for(tmp_path, "http://127.0.0.1:9", transport=transport)
    link, state, _ = start_consent(gw)
    r = browser(gw, "ada@example.com").get(f"/api/auth/plugin/github/callback?code=c&state={state}")
    assert r.status_code == 400
    link2, state2, _ = start_consent(gw)
    r2 = browser(gw, "bob@example.com").get(f"/api/auth/plugin/testoauth/callback?code=c&state={state2}")
    assert r2.status_code == 400 and "not signed in to Workbench as the account" in r2.text
    assert_nothing_stored(gw, link)
    assert_nothing_stored(gw, link2)


def _token_endpoint(seen: list[dict[str, Any]]) -> httpx.MockTransport:
    def handle(request: httpx.Request) -> httpx.Response:
        assert request.headers["content-type"] == "application/x-www-form-urlencoded"
        seen.append({k: v[0] for k, v in parse_qs(request.content.decode()).items()})
        return httpx.Response(
            200, json={"access_token": "AT", "refresh_token": "RT", "expires_in": 120, "token_type": "Bearer"}
        )

    return httpx.MockTransport(handle)


@pytest.mark.parametrize("secret", [CLIENT_SECRET, None])
def test_code_exchange_sends_the_verifier_and_stores_tokens_encrypted_with_expiry(
    tmp_path: Path, secret: str | None
) -> None:
    seen: list[dict[str, Any]] = []
    env = {"TESTOAUTH_CLIENT_ID": CLIENT_ID, **({"TESTOAUTH_CLIENT_SECRET": secret} if secret else {})}
    gw = gateway_for(tmp_path, "http://127.0.0.1:9", transport=_token_endpoint(seen), plugin_env=env)
    link, state, client = start_consent(gw)
    verifier = gw.stores.pending.take_state(state, now=gw.clock())
    assert verifier is not None
    gw.stores.pending.put_state(verifier)  # peeked; put back for the callback
    r = client.get(f"/api/auth/plugin/testoauth/callback?code=good&state={state}")
    assert r.status_code == 303 and r.headers["location"] == "/portal/integrations?connected=testoauth"
    expected = {
        "grant_type": "authorization_code",
        "code": "good",
        "redirect_uri": CALLBACK,
        "code_verifier": verifier.code_verifier,
        "client_id": CLIENT_ID,
        **({"client_secret": secret} if secret else {}),
    }
    assert seen == [expected]
    user = gw.stores.users.by_email("ada@example.com")
    assert user is not None
    conn = gw.stores.connections.get(user.id, "testoauth")
    assert conn is not None and b"AT" not in conn.credential
    assert gw.credentials.load(conn) == {"access_token": "AT", "refresh_token": "RT", "token_type": "Bearer"}
    assert conn.expires_at is not None and 110 < conn.expires_at - gw.clock() <= 120
    rec = gw.stores.pending.get(link, now=gw.clock())
    assert rec is not None and rec.status == "CONNECTED"


async def test_refresh_request_is_form_encoded_with_the_client(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []
    gw = gateway_for(tmp_path, "http://127.0.0.1:9", transport=_token_endpoint(seen))
    assert gw.provider_oauth is not None
    tokens = await gw.provider_oauth.refresh(make_manifest("http://127.0.0.1:9"), "RT0")
    assert seen == [
        {
            "grant_type": "refresh_token",
            "refresh_token": "RT0",
            "client_id": CLIENT_ID,
            "client_secret": CLIENT_SECRET,
        }
    ]
    assert tokens.credential["access_token"] == "AT" and tokens.expires_in == 120


async def test_rejected_refresh_at_the_real_provider_asks_the_agent_to_connect(
    tmp_path: Path, provider: str
) -> None:
    gw = gateway_for(tmp_path, provider)
    ada = agent(gw, "ada@example.com")
    gw.credentials.save(
        ada.user.id,
        "testoauth",
        {"access_token": "old", "refresh_token": "revoked-at-provider"},
        expires_at=gw.clock() + 5,
    )
    first = await gw.runs.execute(ada, [{"tool": "testoauth_whoami", "args": {}, "ref_id": None}])
    # The refusal's own call and every later one give the same answer, with the provider's reason,
    # in the shape that is the agent's cue to connect (issue 29: it was three different answers).
    refused = {
        "error": "NOT_CONNECTED",
        "integration": "testoauth",
        "message": "testoauth must be connected again: the provider refused the refresh (invalid_grant). "
        "Use connect('testoauth') to reconnect.",
    }
    assert first["results"][0] == refused
    conn = gw.stores.connections.get(ada.user.id, "testoauth")
    assert conn is not None and conn.status == "reconnect_required"
    again = await gw.runs.execute(ada, [{"tool": "testoauth_whoami", "args": {}, "ref_id": None}])
    assert again["results"][0] == refused


def test_list_integrations_connected_per_auth_type(tmp_path: Path) -> None:
    gw = gateway_for(tmp_path, "http://127.0.0.1:9")
    ada = agent(gw, "ada@example.com").user
    status = gw.connections.status(ada.id)
    assert status["open"] is True and status["testoauth"] is False and status["cookiesvc"] is False
    gw.credentials.save(ada.id, "testoauth", {"access_token": "x"}, expires_at=gw.clock() - 100)
    gw.credentials.save(
        ada.id, "cookiesvc", {"cookies": [{"name": "sid", "value": "1", "expires": gw.clock() - 1}]}
    )
    status = gw.connections.status(ada.id)
    assert status["testoauth"] is True  # a stored token exists (even an expired one: it refreshes on use)
    assert status["cookiesvc"] is False  # cookie integrations: a live-cookie check
    gw.credentials.save(
        ada.id, "cookiesvc", {"cookies": [{"name": "sid", "value": "1", "expires": gw.clock() + 60}]}
    )
    assert gw.connections.status(ada.id)["cookiesvc"] is True
    gw.credentials.save(ada.id, "testoauth#refresh-lease", {})  # lease rows never count as integrations
    assert set(gw.connections.status(ada.id)) == {m.name for m in gw.registry.manifests()}


@pytest.mark.parametrize("tool", ["connect", "get_auth_url"])
async def test_an_integration_without_its_oauth_client_is_not_configured_at_once(
    tmp_path: Path, tool: str
) -> None:
    """No TESTOAUTH_CLIENT_ID: connect names the missing setting instead of minting a link that fails
    at redeem, and nothing is written."""
    from workbench.engine.meta import MetaTools

    gw = gateway_for(
        tmp_path, "http://127.0.0.1:9", plugin_env={"TESTOAUTH_CLIENT_SECRET": "only-the-secret"}
    )
    ada = agent(gw, "ada@example.com")
    answer = await MetaTools(gw).call(tool, ada, {"integration": "testoauth"})
    assert answer == {
        "error": "NOT_CONFIGURED",
        "integration": "testoauth",
        "message": "testoauth is not configured on this gateway: it has no OAuth client. The operator sets "
        "TESTOAUTH_CLIENT_ID (and TESTOAUTH_CLIENT_SECRET for a confidential client) in the gateway's "
        "environment (then restart it).",
    }
    assert gw.stores.pending._pending == {}  # type: ignore[attr-defined]  # the memory adapter: no record
    # Other integrations are unaffected: a cookie integration still gets its link.
    assert gw.connections.start(ada.user, "cookiesvc")["type"] == "cookie"


def test_a_client_id_without_a_secret_is_a_public_client_not_unconfigured(tmp_path: Path) -> None:
    gw = gateway_for(tmp_path, "http://127.0.0.1:9", plugin_env={"TESTOAUTH_CLIENT_ID": "public-client"})
    started = gw.connections.start(agent(gw, "ada@example.com").user, "testoauth")
    assert started["type"] == "oauth2"


def test_a_callback_after_the_link_expired_stores_nothing_and_says_so(tmp_path: Path) -> None:
    """Issue 29: the credential used to be stored while wait_for_connection answered EXPIRED."""
    from dataclasses import replace

    seen: list[dict[str, Any]] = []
    gw = gateway_for(tmp_path, "http://127.0.0.1:9", transport=_token_endpoint(seen))
    link, state, client = start_consent(gw)
    rec = gw.stores.pending.get(link, now=gw.clock())
    assert rec is not None
    gw.stores.pending.put(replace(rec, expires_at=gw.clock() - 1))  # the link's time ran out
    r = client.get(f"/api/auth/plugin/testoauth/callback?code=good&state={state}")
    assert r.status_code == 400
    assert "This connect link has expired, so nothing was stored." in r.text
    assert seen == []  # the code was never exchanged
    user = gw.stores.users.by_email("ada@example.com")
    assert user is not None and gw.stores.connections.get(user.id, "testoauth") is None


async def test_a_callback_opened_by_another_account_leaves_the_state_to_its_owner(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []
    gw = gateway_for(tmp_path, "http://127.0.0.1:9", transport=_token_endpoint(seen))
    link, state, owner = start_consent(gw)
    url = f"/api/auth/plugin/testoauth/callback?code=good&state={state}"
    other = browser(gw, "mallory@example.com").get(url)
    assert other.status_code == 400 and "not signed in to Workbench as the account" in other.text
    assert seen == []
    mine = owner.get(url)  # the owner's own callback still works
    assert mine.status_code == 303 and mine.headers["location"] == "/portal/integrations?connected=testoauth"
    assert len(seen) == 1
    assert await gw.connections.wait(agent(gw, "ada@example.com").user, link, 600) == {"status": "CONNECTED"}
    assert owner.get(url).status_code == 400  # and then it is spent
