"""Connecting the providers whose connection layer is special, with the real manifests, the real web
surface and an exact fake provider (httpx.MockTransport routing by host):

- Salesforce: the person picks the sign-in host (production, sandbox, My Domain); consent, code
  exchange, the probe and every refresh use that host; `instance_url` from the token response is
  the API base; an expired session (401 INVALID_SESSION_ID, no expiry was announced) is refreshed
  at the chosen host and the call retried.
- Slack: the user scopes are requested in the same consent; the user token is stored next to the
  bot token and a tool asks for it with kind="user".
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from starlette.testclient import TestClient
from workbench.composition import Gateway
from workbench.connections.provider_oauth import login_host_for
from workbench.errors import InvalidInput
from workbench.manifest import LoginHosts
from workbench.web.app import create_web_app

from tests.support.gateways import make_gateway, principal_for

INSTANCE = "https://acme.my.salesforce.com"
ENV = {
    "SALESFORCE_CLIENT_ID": "3MVG9-sf",
    "SALESFORCE_CLIENT_SECRET": "sf-secret",
    "SLACK_CLIENT_ID": "111.222",
    "SLACK_CLIENT_SECRET": "slack-secret",
}
Route = Callable[[httpx.Request], httpx.Response]


class Provider:
    """Answers by (host, path); records every request."""

    def __init__(self, routes: dict[tuple[str, str], Route]) -> None:
        self.routes = routes
        self.seen: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        # A copy: a retried request is the same object with new headers.
        self.seen.append(
            httpx.Request(
                request.method, request.url, headers=request.headers.copy(), content=request.content
            )
        )
        route = self.routes.get((request.url.host, request.url.path))
        if route is None:
            return httpx.Response(404, json={"error": f"no route {request.url.host}{request.url.path}"})
        return route(request)

    def at(self, host: str, path: str) -> list[httpx.Request]:
        return [r for r in self.seen if (r.url.host, r.url.path) == (host, path)]


def gateway(tmp_path: Path, provider: Provider) -> Gateway:
    return make_gateway(tmp_path, transport=httpx.MockTransport(provider), plugin_env=ENV)


def signed_in(gw: Gateway, email: str = "ada@example.com") -> TestClient:
    client = TestClient(create_web_app(gw), base_url="https://testserver", follow_redirects=False)
    user = gw.stores.users.get_or_create(email)
    client.headers["cookie"] = f"__Host-wb_session={gw.sessions.issue(user.id)}"
    return client


def redeem(client: TestClient, token: str, **extra: str) -> httpx.Response:
    return client.post(
        "/api/connect/redeem",
        content=json.dumps({"token": token, **extra}),
        headers={"content-type": "application/json"},
    )


# -- login hosts --------------------------------------------------------------------------------------

HOSTS = LoginHosts(
    choices=(("Production", "login.salesforce.com"), ("Sandbox", "test.salesforce.com")),
    custom_suffixes=(".my.salesforce.com",),
)


@pytest.mark.parametrize(
    ("typed", "host"),
    [
        (None, "login.salesforce.com"),
        ("", "login.salesforce.com"),
        ("test.salesforce.com", "test.salesforce.com"),
        ("acme.my.salesforce.com", "acme.my.salesforce.com"),
        ("https://Acme--Dev.sandbox.my.salesforce.com/", "acme--dev.sandbox.my.salesforce.com"),
    ],
)
def test_login_host_choices_and_my_domain_hosts_are_accepted(typed: str | None, host: str) -> None:
    assert login_host_for(HOSTS, typed) == host


@pytest.mark.parametrize(
    "typed",
    [
        "evil.example",
        "login.salesforce.com.evil.example",
        "my.salesforce.com",
        ".my.salesforce.com",
        "acme.my.salesforce.com.",
        "acme.my.salesforce.com:8443",
        "acme.my.salesforce.com/path",
        "acme@evil.example/.my.salesforce.com",
        "127.0.0.1",
        "acme_x.my.salesforce.com",
        "-acme.my.salesforce.com",
        "a" * 250 + ".my.salesforce.com",
    ],
)
def test_any_other_login_host_is_refused_before_the_secret_could_go_there(typed: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        login_host_for(HOSTS, typed)
    assert str(refused.value) == (
        "The sign-in host must be a host name ending in ….my.salesforce.com, e.g. acme.my.salesforce.com."
    )


# -- Salesforce end to end ------------------------------------------------------------------------------


class SalesforceOrg(Provider):
    """Salesforce at one sign-in host, with its org's API at INSTANCE. `end_session()` is the session
    timing out: only a refresh gives a token the API accepts again."""

    def __init__(self, login_host: str) -> None:
        self.refreshes = 0
        self.live = "00D!session-1"
        self.issued = 1
        super().__init__(
            {
                (login_host, "/services/oauth2/token"): self.token,
                ("acme.my.salesforce.com", "/services/oauth2/userinfo"): self.api_call,
                ("acme.my.salesforce.com", "/services/data/v62.0/sobjects"): self.api_call,
            }
        )

    def end_session(self) -> None:
        self.live = "(ended)"

    def token(self, request: httpx.Request) -> httpx.Response:
        form = dict(httpx.QueryParams(request.content.decode()))
        assert (form["client_id"], form["client_secret"]) == ("3MVG9-sf", "sf-secret")
        if form["grant_type"] == "authorization_code":
            assert form["code"] == "aPrx-code" and len(form["code_verifier"]) == 43
            body = {"access_token": self.live, "refresh_token": "5Aep-refresh", "scope": "api refresh_token"}
        else:
            assert form == {
                "grant_type": "refresh_token",
                "refresh_token": "5Aep-refresh",
                "client_id": "3MVG9-sf",
                "client_secret": "sf-secret",
            }
            self.refreshes += 1
            self.issued += 1
            self.live = f"00D!session-{self.issued}"
            body = {"access_token": self.live, "scope": "api refresh_token"}  # no new refresh token
        # Salesforce's token response: no expires_in, the org's host in instance_url.
        return httpx.Response(
            200, json={**body, "instance_url": INSTANCE, "token_type": "Bearer", "issued_at": "1278448384422"}
        )

    def api_call(self, request: httpx.Request) -> httpx.Response:
        if request.headers["authorization"] != f"Bearer {self.live}":
            return httpx.Response(
                401, json=[{"message": "Session expired or invalid", "errorCode": "INVALID_SESSION_ID"}]
            )
        if request.url.path == "/services/oauth2/userinfo":
            return httpx.Response(
                200, json={"preferred_username": "ada@acme.com", "organization_id": "00Dxx"}
            )
        sobjects = [{"name": "Account", "label": "Account", "custom": False, "queryable": True}]
        return httpx.Response(200, json={"encoding": "UTF-8", "maxBatchSize": 200, "sobjects": sobjects})


async def test_salesforce_my_domain_connect_then_an_expired_session_refreshes_at_that_host(
    tmp_path: Path,
) -> None:
    provider = SalesforceOrg("acme.my.salesforce.com")
    gw = gateway(tmp_path, provider)
    client = signed_in(gw)
    principal = principal_for(gw)

    # The agent's link: the page offers the sign-in hosts; the person picks their My Domain.
    link = gw.connections.start(principal.user, "salesforce")["connectionId"]
    page = client.get(f"/connect/{link}")
    assert '<select id="link-login-host" name="login_host">' in page.text
    assert '<option value="test.salesforce.com">Sandbox (test.salesforce.com)</option>' in page.text
    assert 'name="login_host_custom"' in page.text
    answer = redeem(client, link, login_host="acme.my.salesforce.com")
    assert answer.status_code == 200
    consent = urlsplit(answer.json()["url"])
    assert f"{consent.scheme}://{consent.netloc}{consent.path}" == (
        "https://acme.my.salesforce.com/services/oauth2/authorize"
    )
    state = parse_qs(consent.query)["state"][0]

    done = client.get(f"/api/auth/plugin/salesforce/callback?code=aPrx-code&state={state}")
    assert (done.status_code, done.headers["location"]) == (303, "/portal/integrations?connected=salesforce")
    stored = gw.stores.connections.get(principal.user.id, "salesforce")
    assert stored is not None and stored.expires_at is None and stored.verified_at is not None
    assert gw.credentials.load(stored) == {
        "access_token": "00D!session-1",
        "refresh_token": "5Aep-refresh",
        "token_type": "Bearer",
        "scope": "api refresh_token",
        "instance_url": INSTANCE,
        "login_host": "acme.my.salesforce.com",
    }
    assert len(provider.at("acme.my.salesforce.com", "/services/oauth2/userinfo")) == 1  # the probe

    out = await gw.runs.execute(principal, [{"tool": "salesforce_list_objects", "args": {}, "ref_id": None}])
    assert "result" in out["results"][0], out  # the session-1 token is still live
    # Hours later the session times out at Salesforce; nothing local knew when.
    provider.end_session()
    out = await gw.runs.execute(principal, [{"tool": "salesforce_list_objects", "args": {}, "ref_id": None}])
    assert out["results"][0]["result"]["objects"][0]["name"] == "Account", out
    sobjects = provider.at("acme.my.salesforce.com", "/services/data/v62.0/sobjects")
    assert [r.headers["authorization"] for r in sobjects] == [
        "Bearer 00D!session-1",
        "Bearer 00D!session-1",  # refused (INVALID_SESSION_ID): refreshed at the My Domain host...
        "Bearer 00D!session-2",  # ...and the same request sent again with the new session
    ]
    assert provider.refreshes == 1
    assert len(provider.at("acme.my.salesforce.com", "/services/oauth2/token")) == 2  # code + one refresh
    assert provider.at("login.salesforce.com", "/services/oauth2/token") == []
    refreshed = gw.stores.connections.get(principal.user.id, "salesforce")
    assert refreshed is not None
    cred = gw.credentials.load(refreshed)
    assert cred["access_token"] == "00D!session-2" and cred["refresh_token"] == "5Aep-refresh"
    assert cred["login_host"] == "acme.my.salesforce.com" and cred["instance_url"] == INSTANCE


def test_a_login_host_outside_salesforce_is_refused_on_the_link_page(tmp_path: Path) -> None:
    provider = SalesforceOrg("acme.my.salesforce.com")
    gw = gateway(tmp_path, provider)
    client = signed_in(gw)
    link = gw.connections.start(principal_for(gw).user, "salesforce")["connectionId"]
    answer = redeem(client, link, login_host="attacker.example")
    assert answer.status_code == 400
    assert answer.json() == {
        "error": "INVALID_LOGIN_HOST",
        "message": "The sign-in host must be a host name ending in ….my.salesforce.com, e.g. acme.my.salesforce.com.",
    }
    # The form on the link page says the same, and the link stays usable.
    page = client.get(f"/connect/{link}")
    csrf = page.text.split('name="csrf" value="')[1].split('"')[0]
    form = client.post(
        "/api/connect/redeem",
        data={"csrf": csrf, "token": link, "login_host": "custom", "login_host_custom": "attacker.example"},
        headers={"origin": "https://testserver"},
    )
    assert form.status_code == 303 and form.headers["location"] == f"/connect/{link}"  # post/redirect/get
    flash = (
        f"; __Host-wb_flash={form.cookies['__Host-wb_flash']}"  # this client sets its cookie header itself
    )
    again = client.get(form.headers["location"], headers={"cookie": client.headers["cookie"] + flash})
    assert "ending in ….my.salesforce.com" in again.text and 'role="alert"' in again.text
    sandbox = client.post(
        "/api/connect/redeem",
        data={"csrf": csrf, "token": link, "login_host": "test.salesforce.com"},
        headers={"origin": "https://testserver"},
    )
    assert sandbox.status_code == 303
    assert sandbox.headers["location"].startswith("https://test.salesforce.com/services/oauth2/authorize?")
    assert provider.seen == []  # nothing was sent anywhere


def test_the_portal_connect_button_carries_the_chosen_host(tmp_path: Path) -> None:
    gw = gateway(tmp_path, Provider({}))
    client = signed_in(gw)
    page = client.get("/portal/integrations")
    card = page.text.split('id="integration-salesforce"')[1].split("</section>")[0]
    assert 'name="login_host"' in card and 'name="login_host_custom"' in card
    csrf = page.text.split('name="csrf" value="')[1].split('"')[0]
    r = client.post(
        "/portal/integrations/salesforce/connect",
        data={
            "csrf": csrf,
            "login_host": "custom",
            "login_host_custom": "acme--uat.sandbox.my.salesforce.com",
        },
        headers={"origin": "https://testserver"},
    )
    assert r.status_code == 303
    assert r.headers["location"].startswith(
        "https://acme--uat.sandbox.my.salesforce.com/services/oauth2/authorize?"
    )


# -- Slack user token ------------------------------------------------------------------------------


async def test_slack_requests_user_scopes_and_a_tool_uses_the_user_token(tmp_path: Path) -> None:
    def token(request: httpx.Request) -> httpx.Response:
        form = dict(httpx.QueryParams(request.content.decode()))
        assert form["grant_type"] == "authorization_code" and form["code"] == "slack-code"
        return httpx.Response(
            200,
            json={
                "ok": True,
                "access_token": "xoxb-bot",
                "token_type": "bot",
                "scope": "chat:write,channels:read",
                "bot_user_id": "U0BOT",
                "app_id": "A0APP",
                "team": {"name": "Acme", "id": "T9TK3CUKW"},
                "enterprise": None,
                "authed_user": {
                    "id": "U1234",
                    "scope": "search:read",
                    "access_token": "xoxp-user",
                    "token_type": "user",
                },
            },
        )

    def auth_test(request: httpx.Request) -> httpx.Response:
        assert request.headers["authorization"] == "Bearer xoxb-bot"
        return httpx.Response(200, json={"ok": True, "team": "Acme", "user": "bot"})

    def search(request: httpx.Request) -> httpx.Response:
        if request.headers["authorization"] != "Bearer xoxp-user":
            return httpx.Response(200, json={"ok": False, "error": "not_allowed_token_type"})
        found = {
            "total": 1,
            "matches": [{"ts": "1.2", "text": "invoice 42"}],
            "paging": {"page": 1, "pages": 1},
        }
        return httpx.Response(200, json={"ok": True, "messages": found})

    provider = Provider(
        {
            ("slack.com", "/api/oauth.v2.access"): token,
            ("slack.com", "/api/auth.test"): auth_test,
            ("slack.com", "/api/search.messages"): search,
        }
    )
    gw = gateway(tmp_path, provider)
    client = signed_in(gw)
    principal = principal_for(gw)
    link = gw.connections.start(principal.user, "slack")["connectionId"]
    consent = urlsplit(redeem(client, link).json()["url"])
    q = {k: v[0] for k, v in parse_qs(consent.query).items()}
    assert q["user_scope"] == "search:read" and "chat:write" in q["scope"].split(",")
    done = client.get(f"/api/auth/plugin/slack/callback?code=slack-code&state={q['state']}")
    assert done.status_code == 303, done.text
    stored = gw.stores.connections.get(principal.user.id, "slack")
    assert stored is not None
    cred = gw.credentials.load(stored)
    assert cred["access_token"] == "xoxb-bot"
    assert cred["user_token"] == {
        "access_token": "xoxp-user",
        "token_type": "user",
        "scope": "search:read",
        "id": "U1234",
    }

    search_call = [{"tool": "slack_search_messages", "args": {"query": "invoice"}, "ref_id": None}]
    out = await gw.runs.execute(principal, search_call)
    assert out["results"][0]["result"]["messages"][0]["text"] == "invoice 42", out
    assert provider.at("slack.com", "/api/search.messages")[0].headers["authorization"] == "Bearer xoxp-user"
    # A connection made without the user scopes says how to fix it.
    gw.credentials.save(principal.user.id, "slack", {"access_token": "xoxb-bot"})
    out = await gw.runs.execute(principal, search_call)
    assert out == {
        "results": [
            {
                "error": "slack has no user token for this connection. Use connect('slack') to reconnect "
                "and grant the user permissions."
            }
        ]
    }


def test_choosing_my_domain_without_typing_a_host_is_refused_not_taken_as_production(tmp_path: Path) -> None:
    gw = gateway(tmp_path, Provider({}))
    client = signed_in(gw)
    csrf = client.get("/portal/integrations").text.split('name="csrf" value="')[1].split('"')[0]
    r = client.post(
        "/portal/integrations/salesforce/connect",
        data={"csrf": csrf, "login_host": "custom", "login_host_custom": "  "},
        headers={"origin": "https://testserver"},
    )
    assert r.status_code == 303 and r.headers["location"] == "/portal/integrations"
    # The reason rides the session-sealed flash cookie (this client sends a fixed Cookie header).
    flash = next(
        c.split(";")[0] for c in r.headers.get_list("set-cookie") if c.startswith("__Host-wb_flash=")
    )
    page = client.get(r.headers["location"], headers={"cookie": f"{client.headers['cookie']}; {flash}"}).text
    assert (
        '<div class="notice error" role="alert">Salesforce: The sign-in host must be a host name ending in '
        "….my.salesforce.com, e.g. acme.my.salesforce.com.</div>"
    ) in page


def test_a_typed_sign_in_host_must_pass_the_egress_policy(tmp_path: Path) -> None:
    """A My Domain host is under Salesforce's suffix, and still checked like every user-set URL:
    one whose DNS answer is a private address is refused before the secret could go there."""

    async def resolver(host: str, port: int) -> list[str]:
        return ["10.1.2.3"] if host == "internal.my.salesforce.com" else ["13.110.14.8"]

    provider = SalesforceOrg("acme.my.salesforce.com")
    gw = make_gateway(tmp_path, transport=httpx.MockTransport(provider), resolver=resolver, plugin_env=ENV)
    client = signed_in(gw)
    link = gw.connections.start(principal_for(gw).user, "salesforce")["connectionId"]
    refused = redeem(client, link, login_host="internal.my.salesforce.com")
    assert refused.status_code == 400
    body = refused.json()
    assert body["error"] == "INVALID_LOGIN_HOST"
    assert body["message"] == (
        "The sign-in host internal.my.salesforce.com is refused: internal.my.salesforce.com resolves to "
        "10.1.2.3, a private address, not a public internet address."
    )
    accepted = redeem(client, link, login_host="acme.my.salesforce.com")
    assert accepted.status_code == 200
    assert accepted.json()["url"].startswith("https://acme.my.salesforce.com/services/oauth2/authorize?")
    assert provider.seen == []
