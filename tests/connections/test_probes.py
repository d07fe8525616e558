"""Connect-time checks: every manifest's probe sends exactly the request its provider documents, a
refusal is explained with the provider's own message, a network failure in plain words, and a
failing check stores nothing (portal API-key form, OAuth callback)."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from starlette.testclient import TestClient
from workbench.composition import Gateway, build_registry
from workbench.errors import VerificationFailed
from workbench.guard.plain_errors import describe_transport_error
from workbench.manifest import ApiKeyAuth, NoAuth
from workbench.web.app import create_web_app

from tests.support.gateways import make_gateway, principal_for
from tests.support.processes import free_port

TOKEN = "tok-probe"
ZENDESK = {"email": "ada@acme.com", "api_token": "zd-token", "subdomain": "acme"}
SUPERSET = {"username": "ada", "password": "pw", "base_url": "https://bi.acme.com"}

# integration -> (credential, method, URL, expected Authorization, extra checks, a 2xx answer)
PROBES: dict[str, tuple[dict[str, Any], str, str, str | None, dict[str, str], Any]] = {
    "airtable": ({}, "GET", "https://api.airtable.com/v0/meta/whoami", None, {}, {"id": "usr1"}),
    "atlassian-confluence": (
        {},
        "GET",
        "https://api.atlassian.com/oauth/token/accessible-resources",
        None,
        {},
        [],
    ),
    "atlassian-jira": ({}, "GET", "https://api.atlassian.com/oauth/token/accessible-resources", None, {}, []),
    "github": ({}, "GET", "https://api.github.com/user", None, {}, {"login": "ada"}),
    "google-calendar": (
        {},
        "GET",
        "https://www.googleapis.com/calendar/v3/users/me/calendarList?maxResults=1",
        None,
        {},
        {"items": []},
    ),
    "google-drive": (
        {},
        "GET",
        "https://www.googleapis.com/drive/v3/about?fields=user",
        None,
        {},
        {"user": {}},
    ),
    "google-gmail": ({}, "GET", "https://gmail.googleapis.com/gmail/v1/users/me/profile", None, {}, {}),
    "google-sheets": (
        {},
        "POST",
        f"https://www.googleapis.com/oauth2/v2/tokeninfo?access_token={TOKEN}",
        None,
        {},
        {"scope": "https://www.googleapis.com/auth/spreadsheets"},
    ),
    "hubspot": ({}, "GET", "https://api.hubapi.com/crm/v3/owners/?limit=1", None, {}, {"results": []}),
    "linear": (
        {},
        "POST",
        "https://api.linear.app/graphql",
        None,
        {"body": '{"query": "{ viewer { id } }"}', "content-type": "application/json"},
        {"data": {"viewer": {"id": "u1"}}},
    ),
    "notion": ({}, "GET", "https://api.notion.com/v1/users/me", None, {"notion-version": "2025-09-03"}, {}),
    "salesforce": (
        {"instance_url": "https://acme.my.salesforce.com"},
        "GET",
        "https://acme.my.salesforce.com/services/oauth2/userinfo",
        None,
        {},
        {"user_id": "005"},
    ),
    "slack": ({}, "GET", "https://slack.com/api/auth.test", None, {}, {"ok": True}),
    "stripe": (
        {"api_key": "sk_test_123"},
        "GET",
        "https://api.stripe.com/v1/balance",
        "Bearer sk_test_123",
        {},
        {},
    ),
    "zendesk": (
        ZENDESK,
        "GET",
        "https://acme.zendesk.com/api/v2/users/me",
        "Basic YWRhQGFjbWUuY29tL3Rva2VuOnpkLXRva2Vu",  # ada@acme.com/token:zd-token
        {},
        {"user": {"id": 35436, "name": "Ada", "role": "admin"}},
    ),
    "superset": (
        SUPERSET,
        "POST",
        "https://bi.acme.com/api/v1/security/login",
        "",  # no Authorization: the login carries the credentials in its body
        {"body": '{"username":"ada","password":"pw","provider":"db","refresh":false}'},
        {"access_token": "eyJ.jwt.x"},
    ),
}


def test_every_plugin_that_needs_a_credential_declares_a_probe() -> None:
    needing = {
        m.name for m in build_registry().manifests() if not m.builtin and not isinstance(m.auth, NoAuth)
    }
    declared = {m.name for m in build_registry().manifests() if m.probe is not None}
    assert needing == declared == set(PROBES)


def _gateway(
    tmp_path: Path, answer: Any, status: int = 200, seen: list[httpx.Request] | None = None
) -> Gateway:
    def handler(request: httpx.Request) -> httpx.Response:
        if seen is not None:
            seen.append(request)
        return httpx.Response(status, json=answer)

    return make_gateway(tmp_path, transport=httpx.MockTransport(handler))


def _credential(name: str, extra: dict[str, Any]) -> dict[str, Any]:
    m = build_registry().manifest(name)
    assert m is not None
    return dict(extra) if isinstance(m.auth, ApiKeyAuth) else {"access_token": TOKEN, **extra}


@pytest.mark.parametrize("name", sorted(PROBES))
async def test_the_probe_sends_the_documented_request_and_a_2xx_passes(name: str, tmp_path: Path) -> None:
    extra, method, url, auth, checks, ok = PROBES[name]
    seen: list[httpx.Request] = []
    gw = _gateway(tmp_path, ok, seen=seen)
    manifest = gw.registry.manifest(name)
    assert manifest is not None
    assert await gw.connections.verify(principal_for(gw).user, manifest, _credential(name, extra)) is True
    (request,) = seen
    assert (request.method, str(request.url)) == (method, url)
    assert request.headers.get("authorization", "") == (f"Bearer {TOKEN}" if auth is None else auth)
    for header, value in checks.items():
        got = request.content.decode() if header == "body" else request.headers.get(header)
        assert got == value, header


# (integration, its error answer, what the person reads)
REFUSALS = [
    (
        "stripe",
        401,
        {"error": {"message": "Invalid API Key provided: sk_test_****1234", "type": "invalid_request_error"}},
        "Stripe did not accept these credentials (401): Invalid API Key provided: sk_test_****1234",
    ),
    (
        "zendesk",
        401,
        {"error": "Couldn't authenticate you"},
        "Zendesk did not accept these credentials (401): Couldn't authenticate you",
    ),
    (
        "superset",
        401,
        {"message": "Not authorized"},
        "Apache Superset did not accept these credentials (401): Not authorized",
    ),
    (
        "github",
        401,
        {"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest"},
        "GitHub did not accept these credentials (401): Bad credentials",
    ),
    (
        "google-sheets",
        400,
        {"error": "invalid_token", "error_description": "Invalid Value"},
        "Google Sheets refused the check (400): Invalid Value",
    ),
    (
        "slack",
        200,
        {"ok": False, "error": "invalid_auth"},
        "Slack did not accept these credentials: invalid_auth",
    ),
    (
        "zendesk",
        200,
        {"user": {"id": None, "name": "Anonymous user", "role": "end-user"}},
        "Zendesk did not accept this email address and API token (it answered as an anonymous visitor).",
    ),
    (
        "stripe",
        503,
        {"error": {"message": "Stripe is down for maintenance"}},
        "Stripe answered with an error (503): Stripe is down for maintenance Try again in a moment.",
    ),
]


@pytest.mark.parametrize(
    ("name", "status", "answer", "message"), REFUSALS, ids=[f"{r[0]}-{r[1]}" for r in REFUSALS]
)
async def test_a_refusal_is_explained_with_the_providers_message(
    name: str, status: int, answer: Any, message: str, tmp_path: Path
) -> None:
    gw = _gateway(tmp_path, answer, status)
    manifest = gw.registry.manifest(name)
    assert manifest is not None
    with pytest.raises(VerificationFailed) as failed:
        await gw.connections.verify(principal_for(gw).user, manifest, _credential(name, PROBES[name][0]))
    assert str(failed.value) == message


@pytest.mark.parametrize(
    ("credential", "message"),
    [
        ({**ZENDESK, "subdomain": "acme.evil/x"}, "The Zendesk connection has no valid subdomain"),
        ({**ZENDESK, "subdomain": ""}, "The Zendesk connection has no valid subdomain"),
    ],
)
async def test_a_malformed_field_fails_before_any_request(
    credential: dict[str, Any], message: str, tmp_path: Path
) -> None:
    seen: list[httpx.Request] = []
    gw = _gateway(tmp_path, {}, seen=seen)
    manifest = gw.registry.manifest("zendesk")
    assert manifest is not None
    with pytest.raises(VerificationFailed) as failed:
        await gw.connections.verify(principal_for(gw).user, manifest, credential)
    assert str(failed.value).startswith(message) and seen == []


async def test_a_superset_address_that_is_not_a_url_is_said_plainly(tmp_path: Path) -> None:
    gw = _gateway(tmp_path, {})
    manifest = gw.registry.manifest("superset")
    assert manifest is not None
    with pytest.raises(VerificationFailed) as failed:
        await gw.connections.verify(principal_for(gw).user, manifest, {**SUPERSET, "base_url": "bi.acme.com"})
    assert str(failed.value) == (
        "The Superset connection has no valid base URL (e.g. https://superset.example.com); reconnect."
    )


# -- network failures in plain words ---------------------------------------------------------------


def _raising(exc: Exception) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        raise exc

    return httpx.MockTransport(handler)


def _dns_failure() -> httpx.ConnectError:
    try:
        raise socket.gaierror(-2, "Name or service not known")
    except socket.gaierror as cause:
        try:
            raise httpx.ConnectError("[Errno -2] Name or service not known") from cause
        except httpx.ConnectError as exc:
            return exc


@pytest.mark.parametrize(
    ("exc", "message"),
    [
        (_dns_failure(), "Could not find the server nope.zendesk.com. Check the address for typos."),
        (
            httpx.ConnectTimeout("timed out"),
            "nope.zendesk.com did not answer in time. Check the address, or try again in a moment.",
        ),
        (
            httpx.ConnectError("[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed"),
            "Could not make a secure connection to nope.zendesk.com: its certificate was not accepted.",
        ),
        (
            httpx.ConnectError("[Errno 111] Connection refused"),
            "nope.zendesk.com refused the connection. Check the address and port.",
        ),
        (
            httpx.RemoteProtocolError("Server disconnected"),
            "nope.zendesk.com closed the connection without a valid answer. Try again in a moment.",
        ),
    ],
)
async def test_network_failures_are_explained_in_plain_words(
    exc: Exception, message: str, tmp_path: Path
) -> None:
    gw = make_gateway(tmp_path, transport=_raising(exc))
    manifest = gw.registry.manifest("zendesk")
    assert manifest is not None
    with pytest.raises(VerificationFailed) as failed:
        await gw.connections.verify(principal_for(gw).user, manifest, {**ZENDESK, "subdomain": "nope"})
    assert str(failed.value) == message
    assert "Errno" not in str(failed.value)


async def test_a_tool_call_that_cannot_reach_its_host_says_so_plainly(tmp_path: Path) -> None:
    """Not only connecting: a tool's network failure reaches the agent in the same words."""
    gw = make_gateway(tmp_path, transport=_raising(_dns_failure()))
    principal = principal_for(gw)
    gw.credentials.save(principal.user.id, "zendesk", {**ZENDESK, "subdomain": "nope"})
    out = await gw.runs.execute(principal, [{"tool": "zendesk_list_tickets", "args": {}, "ref_id": None}])
    assert out == {
        "results": [{"error": "Could not find the server nope.zendesk.com. Check the address for typos."}]
    }


async def test_a_closed_port_is_refused_plainly_over_real_http(tmp_path: Path) -> None:
    gw = make_gateway(tmp_path, egress_allow="loopback")  # no injected transport: a real connection attempt
    manifest = gw.registry.manifest("superset")
    assert manifest is not None
    port = free_port()
    with pytest.raises(VerificationFailed) as failed:
        await gw.connections.verify(
            principal_for(gw).user, manifest, {**SUPERSET, "base_url": f"http://127.0.0.1:{port}"}
        )
    assert str(failed.value) == f"127.0.0.1:{port} refused the connection. Check the address and port."


def test_describe_names_no_host_when_there_is_none() -> None:
    assert describe_transport_error(httpx.ConnectError("boom"), "") == (
        "Could not connect to the server. Check the address, or try again in a moment."
    )


# -- nothing stored on failure: the portal form and the OAuth callback ----------------------------------


def _browser(gw: Gateway) -> TestClient:
    client = TestClient(create_web_app(gw), base_url="https://testserver", follow_redirects=False)
    user = gw.stores.users.get_or_create("ada@example.com")
    client.headers["cookie"] = f"__Host-wb_session={gw.sessions.issue(user.id)}"
    return client


def _csrf(client: TestClient) -> str:
    return client.get("/portal/integrations").text.split('name="csrf" value="')[1].split('"')[0]


def test_a_bad_key_in_the_portal_stores_nothing_and_shows_the_providers_message(tmp_path: Path) -> None:
    keys = {"sk_test_good": 200}

    def stripe(request: httpx.Request) -> httpx.Response:
        key = request.headers["authorization"].removeprefix("Bearer ")
        if keys.get(key) == 200:
            return httpx.Response(200, json={"object": "balance", "available": []})
        return httpx.Response(401, json={"error": {"message": f"Invalid API Key provided: {key[:8]}****"}})

    gw = make_gateway(tmp_path, transport=httpx.MockTransport(stripe))
    client = _browser(gw)
    user = gw.stores.users.get_or_create("ada@example.com")
    r = client.post(
        "/portal/integrations/stripe/api-key",
        data={"csrf": _csrf(client), "api_key": "sk_test_wrong"},
        headers={"origin": "https://testserver"},
    )
    assert r.status_code == 303  # post/redirect/get: the error shows once, on the page it leads to
    flash = f"; __Host-wb_flash={r.cookies['__Host-wb_flash']}"  # this client sets its cookie header itself
    page = client.get(
        r.headers["location"].split("#")[0], headers={"cookie": client.headers["cookie"] + flash}
    ).text
    card = page.split('id="integration-stripe"')[1].split("</section>")[0]
    assert (
        '<div class="notice error" role="alert">Stripe did not accept these credentials (401): '
        "Invalid API Key provided: sk_test_****</div>"
    ) in card
    assert "sk_test_wrong" not in page and "sk_test_wrong" not in r.headers["location"]
    assert gw.stores.connections.get(user.id, "stripe") is None

    ok = client.post(
        "/portal/integrations/stripe/api-key",
        data={"csrf": _csrf(client), "api_key": "sk_test_good"},
        headers={"origin": "https://testserver"},
    )
    assert (ok.status_code, ok.headers["location"]) == (303, "/portal/integrations?connected=stripe")
    stored = gw.stores.connections.get(user.id, "stripe")
    assert stored is not None and stored.verified_at is not None and stored.last_error == ""
    page = client.get("/portal/integrations").text
    card = page.split('id="integration-stripe"')[1].split("</section>")[0]
    assert f'<p class="muted" id="verified-stripe">Verified {_when(stored.verified_at)}</p>' in card


def _when(ts: float) -> str:
    import time

    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(ts))


def test_the_portal_shows_last_error_and_needs_reconnecting(tmp_path: Path) -> None:
    from dataclasses import replace

    gw = make_gateway(tmp_path)
    client = _browser(gw)
    user = gw.stores.users.get_or_create("ada@example.com")
    gw.credentials.save(user.id, "github", {"access_token": "t"}, verified_at=1_800_000_000.0)
    conn = gw.stores.connections.get(user.id, "github")
    assert conn is not None
    gw.stores.connections.put(
        replace(
            conn,
            status="reconnect_required",
            last_error="the provider refused the refresh (invalid_grant)",
            last_error_at=1_800_000_600.0,
            version=conn.version + 1,
        )
    )
    card = client.get("/portal/integrations").text.split('id="integration-github"')[1].split("</section>")[0]
    assert '<span class="status warn">Needs reconnecting</span>' in card
    assert '<p class="muted" id="verified-github">Verified 2027-01-15 08:00 UTC</p>' in card
    assert (
        '<p class="help" id="last-error-github">Last error (2027-01-15 08:10 UTC): '
        "the provider refused the refresh (invalid_grant)</p>"
    ) in card


def _github_consent(
    tmp_path: Path, api_status: int, api_body: dict[str, Any]
) -> tuple[Gateway, Any, str, httpx.Response]:
    """Connect GitHub through the web surface; its API answers the probe with (status, body).
    Returns the gateway, the user, the link and the callback's answer."""

    def github(request: httpx.Request) -> httpx.Response:
        if request.url.host == "github.com":  # the token endpoint
            return httpx.Response(
                200, json={"access_token": "gho_x", "token_type": "bearer", "scope": "repo"}
            )
        return httpx.Response(api_status, json=api_body)

    gw = make_gateway(
        tmp_path,
        transport=httpx.MockTransport(github),
        plugin_env={"GITHUB_CLIENT_ID": "Iv1.x", "GITHUB_CLIENT_SECRET": "s"},
    )
    client = _browser(gw)
    user = gw.stores.users.get_or_create("ada@example.com")
    link = gw.connections.start(user, "github")["connectionId"]
    redeemed = client.post(
        "/api/connect/redeem",
        content=json.dumps({"token": link}),
        headers={"content-type": "application/json"},
    )
    state = parse_qs(urlsplit(redeemed.json()["url"]).query)["state"][0]
    return gw, user, link, client.get(f"/api/auth/plugin/github/callback?code=c0de&state={state}")


def test_a_failing_check_after_the_oauth_callback_stores_nothing(tmp_path: Path) -> None:
    gw, user, link, r = _github_consent(
        tmp_path, 403, {"message": "Resource protected by organization SAML enforcement."}
    )
    assert r.status_code == 400
    assert (
        "GitHub signed you in, but checking the connection failed: GitHub did not accept these credentials "
        "(403): Resource protected by organization SAML enforcement. Nothing was stored."
    ) in r.text.replace("&#x27;", "'")
    assert gw.stores.connections.get(user.id, "github") is None
    rec = gw.stores.pending.get(link, now=gw.clock())
    assert rec is not None and rec.status == "PENDING"  # the agent's wait keeps waiting


async def test_oauth_connect_records_when_it_was_verified(tmp_path: Path) -> None:
    gw, user, link, r = _github_consent(tmp_path, 200, {"login": "ada"})
    assert r.status_code == 303
    stored = gw.stores.connections.get(user.id, "github")
    assert stored is not None and stored.verified_at is not None
    assert await gw.connections.wait(user, link, 60) == {"status": "CONNECTED"}


async def test_the_check_goes_through_the_egress_policy(tmp_path: Path) -> None:
    """The probe is a server-side request to a user-set address: a private answer is refused, plainly."""

    async def resolver(host: str, port: int) -> list[str]:
        return ["10.1.2.3"]

    gw = make_gateway(tmp_path, resolver=resolver)  # real transport behind the egress policy
    manifest = gw.registry.manifest("superset")
    assert manifest is not None
    with pytest.raises(VerificationFailed) as failed:
        await gw.connections.verify(
            principal_for(gw).user, manifest, {**SUPERSET, "base_url": "https://bi.internal.example"}
        )
    assert str(failed.value) == (
        "Workbench will not connect there: bi.internal.example resolves to 10.1.2.3, a private address, "
        "not a public internet address."
    )
