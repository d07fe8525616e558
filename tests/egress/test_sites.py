"""Every fetch site against every class of internal destination, with loopback NOT allowed.

A canary listener on 127.0.0.1 stands in for an internal service (the Lambda runtime API, a
database's HTTP port); each test asserts it received no connection at all. Public-looking names are
answered by an injected resolver, and their (public) address is routed to a local TLS server, so
the allowed path is real too: the same request with a public destination does go out.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient
from workbench.composition import Gateway, build_registry
from workbench.connections.provider_oauth import ProviderError
from workbench.manifest import ApiKeyAuth, ApiKeyField, Manifest, OAuth2Auth
from workbench.oauth.errors import OAuthError
from workbench.proxy.app import create_proxy_app
from workbench.web.app import create_web_app

from tests.egress.internet import PUBLIC_IP, Answer, Canary, Internet, canary, json_answer
from tests.support.gateways import make_gateway, principal_for

NAMES = ["public.test", "redirect.test", "mcp.public.test", "acme.zendesk.com", "api.github.com"]

# Hosts that ARE the loopback address, in every textual form (the port is the canary's).
LITERALS = [
    "127.0.0.1",
    "2130706433",
    "0x7f000001",
    "0x7f.1",
    "0177.0.0.1",
    "127.1",
    "127.000.000.001",
    "[::ffff:127.0.0.1]",
    "[::7f00:1]",
    "[::ffff:0:7f00:1]",
    "[64:ff9b::7f00:1]",
    "[64:ff9b:1::7f00:1]",
    "[2002:7f00:1::1]",
    "[::1]",
]
# Names whose DNS answers lead inward: loopback, a split answer (one public, one loopback), an
# IPv4-mapped answer, and a rebinding server (public for the first question, loopback after).
DNS = {
    "internal.test": [["127.0.0.1"]],
    "split.test": [[PUBLIC_IP, "127.0.0.1"]],
    "mapped.test": [["::ffff:127.0.0.1"]],
    "rebind.test": [[PUBLIC_IP], ["127.0.0.1"]],
}
NAMES_INWARD = ["internal.test", "split.test", "mapped.test"]


@pytest.fixture
def net(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Internet]:
    internet = Internet(tmp_path, [*NAMES, *DNS])
    monkeypatch.setenv("SSL_CERT_FILE", str(internet.ca_file))  # the egress transport trusts the test CA
    try:
        yield internet
    finally:
        internet.close()


@pytest.fixture
def inside() -> Iterator[Canary]:
    with canary() as c:
        yield c


def gateway(tmp_path: Path, net: Internet, **settings: Any) -> Gateway:
    net.dns = {name: [list(a) for a in answers] for name, answers in DNS.items()}
    return make_gateway(tmp_path, resolver=net.resolver, route=net.route, **settings)


def url_for(host: str, inside: Canary, path: str = "") -> str:
    port = inside.port if host in LITERALS else 443
    return f"https://{host}:{port}{path}"


async def run(gw: Gateway, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    out = await gw.runs.execute(principal_for(gw), [{"tool": tool, "args": args, "ref_id": None}])
    result: dict[str, Any] = out["results"][0]
    return result


def refused(result: dict[str, Any]) -> bool:
    """An error that says so (`0177.0.0.1` is already refused by httpx's own URL parser)."""
    error = str(result.get("error", ""))
    return "Refused" in error or "refused" in error or "Invalid IPv4 address" in error


# -- plugins whose base URL comes from the user's connection -------------------------------------

SUPERSET_LOGIN = {"access_token": "jwt-1"}


@pytest.mark.parametrize("host", [*LITERALS, *NAMES_INWARD, "rebind.test"])
async def test_superset_never_reaches_an_internal_address(
    tmp_path: Path, net: Internet, inside: Canary, host: str
) -> None:
    gw = gateway(tmp_path, net)
    me = principal_for(gw)
    gw.credentials.save(
        me.user.id, "superset", {"username": "u", "password": "p", "base_url": url_for(host, inside)}
    )
    net.answer = lambda method, h, path: json_answer(SUPERSET_LOGIN if "login" in path else {"result": []})
    result = await run(gw, "superset_list_databases", {})
    if host == "rebind.test":  # resolved once: the public answer is the one connected to
        assert "error" not in result, result
        assert net.asked.count("rebind.test") == 1
    else:
        assert refused(result), result
    assert inside.connections == 0


async def test_superset_on_a_public_host_works(tmp_path: Path, net: Internet, inside: Canary) -> None:
    gw = gateway(tmp_path, net)
    me = principal_for(gw)
    gw.credentials.save(
        me.user.id, "superset", {"username": "u", "password": "p", "base_url": "https://public.test"}
    )
    net.answer = lambda method, h, path: json_answer(SUPERSET_LOGIN if "login" in path else {"result": []})
    result = await run(gw, "superset_list_databases", {})
    assert "error" not in result, result
    assert ("POST", "public.test", "/api/v1/security/login") in net.seen


@pytest.mark.parametrize("host", [*LITERALS, *NAMES_INWARD])
async def test_salesforce_instance_url_never_reaches_an_internal_address(
    tmp_path: Path, net: Internet, inside: Canary, host: str
) -> None:
    gw = gateway(tmp_path, net)
    me = principal_for(gw)
    gw.credentials.save(
        me.user.id, "salesforce", {"access_token": "t", "instance_url": url_for(host, inside)}
    )
    result = await run(gw, "salesforce_query", {"soql": "SELECT Id FROM Account"})
    assert refused(result) or "instance_url" in str(result), result
    assert inside.connections == 0


@pytest.mark.parametrize(
    "answers", [["127.0.0.1"], [PUBLIC_IP, "127.0.0.1"], ["::ffff:127.0.0.1"], ["10.0.0.7"]]
)
async def test_zendesk_subdomain_that_resolves_inward_is_refused(
    tmp_path: Path, net: Internet, inside: Canary, answers: list[str]
) -> None:
    gw = gateway(tmp_path, net)
    net.dns["inner.zendesk.com"] = [answers]
    me = principal_for(gw)
    gw.credentials.save(me.user.id, "zendesk", {"email": "a@b.c", "api_token": "t", "subdomain": "inner"})
    result = await run(gw, "zendesk_list_tickets", {})
    assert refused(result), result
    assert inside.connections == 0


async def test_a_fixed_base_plugin_whose_name_rebinds_inward_is_refused(
    tmp_path: Path, net: Internet, inside: Canary
) -> None:
    gw = gateway(tmp_path, net)
    net.dns["api.github.com"] = [["127.0.0.1"]]
    me = principal_for(gw)
    gw.credentials.save(me.user.id, "github", {"access_token": "gh-token-12345678"})
    result = await run(gw, "github_list_prs", {"owner": "o", "repo": "r"})
    assert refused(result), result
    assert inside.connections == 0


@pytest.mark.parametrize("plugin", ["superset", "salesforce"])
async def test_a_redirect_towards_an_internal_address_is_not_followed(
    tmp_path: Path, net: Internet, inside: Canary, plugin: str
) -> None:
    gw = gateway(tmp_path, net)
    me = principal_for(gw)
    to = f"http://127.0.0.1:{inside.port}/latest/meta-data"
    net.answer = lambda method, h, path: Answer(302, [("Location", to)], b"")
    if plugin == "superset":
        gw.credentials.save(
            me.user.id, "superset", {"username": "u", "password": "p", "base_url": "https://redirect.test"}
        )
        result = await run(gw, "superset_list_databases", {})
    else:
        gw.credentials.save(
            me.user.id, "salesforce", {"access_token": "t", "instance_url": "https://redirect.test"}
        )
        result = await run(gw, "salesforce_query", {"soql": "SELECT Id FROM Account"})
    assert "error" in result, result
    assert net.seen and all(h == "redirect.test" for _, h, _ in net.seen)
    assert inside.connections == 0


async def test_every_redirect_hop_a_client_follows_is_checked(net: Internet, inside: Canary) -> None:
    """A caller that does follow redirects still has each hop checked (here: an httpx client with
    follow_redirects=True on the egress transport)."""
    from workbench.guard.egress import EgressPolicy, EgressRefused
    from workbench.guard.egress_transport import EgressTransport

    to = f"https://127.0.0.1:{inside.port}/x"
    net.answer = lambda method, h, path: Answer(302, [("Location", to)], b"")
    policy = EgressPolicy(resolver=net.resolver, route=net.route)
    async with httpx.AsyncClient(
        transport=EgressTransport(policy, verify=net.ssl_context()), follow_redirects=True
    ) as http:
        with pytest.raises(EgressRefused, match="loopback"):
            await http.get("https://redirect.test/start")
    assert net.seen == [("GET", "redirect.test", "/start")]
    assert inside.connections == 0


# -- the portal form where the user enters the URL -----------------------------------------------


def _unescape(text: str) -> str:
    import html

    return html.unescape(text)


def _portal(gw: Gateway) -> TestClient:
    client = TestClient(create_web_app(gw), base_url="https://testserver", follow_redirects=False)
    r = client.post("/api/auth/dev-login", data={"email": "ada@example.com", "next": "/portal/integrations"})
    assert r.status_code == 303
    return client


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("base_url", "https://127.0.0.1:{port}", "Superset URL: 127.0.0.1 is a loopback address"),
        (
            "base_url",
            "https://2130706433:{port}",
            "Superset URL: 2130706433 is an IPv4 address in a non-standard form",
        ),
        (
            "base_url",
            "https://[::ffff:127.0.0.1]:{port}",
            "Superset URL: ::ffff:7f00:1 is an IPv4-mapped address",
        ),
        ("base_url", "https://internal.test", "Superset URL: internal.test resolves to 127.0.0.1"),
        ("base_url", "http://public.test", "Superset URL: the URL must use https"),
        ("base_url", "https://user@public.test", "Superset URL: the URL must not contain user:password@"),
    ],
)
def test_the_portal_refuses_an_internal_superset_url_and_stores_nothing(
    tmp_path: Path, net: Internet, inside: Canary, field: str, value: str, message: str
) -> None:
    gw = gateway(tmp_path, net, dev_login=True)
    web = _portal(gw)
    page = web.get("/portal/integrations").text
    csrf = re.search(r'name="csrf" value="([0-9a-f]{64})"', page)
    assert csrf
    form = {"csrf": csrf.group(1), "username": "u", "password": "p", field: value.format(port=inside.port)}
    r = web.post("/portal/integrations/superset/api-key", data=form, headers={"Origin": "https://testserver"})
    assert r.status_code == 303, r.text[:300]  # post/redirect/get: the error shows on the card
    shown = _unescape(web.get(r.headers["location"]).text)
    assert message in shown, shown[:3000]
    user = gw.stores.users.by_email("ada@example.com")
    assert user is not None and gw.stores.connections.get(user.id, "superset") is None
    assert inside.connections == 0


def test_the_portal_refuses_a_zendesk_subdomain_that_resolves_inward(
    tmp_path: Path, net: Internet, inside: Canary
) -> None:
    gw = gateway(tmp_path, net, dev_login=True)
    net.dns["inner.zendesk.com"] = [["169.254.169.254"]]
    web = _portal(gw)
    csrf = re.search(r'name="csrf" value="([0-9a-f]{64})"', web.get("/portal/integrations").text)
    assert csrf
    form = {"csrf": csrf.group(1), "email": "a@b.c", "api_token": "t", "subdomain": "inner"}
    r = web.post("/portal/integrations/zendesk/api-key", data=form, headers={"Origin": "https://testserver"})
    assert r.status_code == 303
    shown = _unescape(web.get(r.headers["location"]).text)
    assert (
        "Zendesk subdomain: inner.zendesk.com resolves to 169.254.169.254, a cloud metadata address" in shown
    )
    user = gw.stores.users.by_email("ada@example.com")
    assert user is not None and gw.stores.connections.get(user.id, "zendesk") is None


# -- custom apps (external MCP servers) ----------------------------------------------------------


async def register(gw: Gateway, url: str) -> dict[str, Any]:
    return await run(gw, "apps_register_server", {"name": "mine", "url": url, "timeout": 2000})


@pytest.mark.parametrize("host", [*LITERALS, *NAMES_INWARD])
async def test_a_custom_app_on_an_internal_address_is_refused_at_registration(
    tmp_path: Path, net: Internet, inside: Canary, host: str
) -> None:
    gw = gateway(tmp_path, net)
    result = await register(gw, url_for(host, inside, "/mcp"))
    assert str(result.get("error", "")).startswith("url: Refused: "), result
    assert (await run(gw, "apps_list", {}))["result"]["apps"] == []
    assert inside.connections == 0


async def test_a_custom_app_that_rebinds_after_registration_is_refused_on_call(
    tmp_path: Path, net: Internet, inside: Canary
) -> None:
    gw = gateway(tmp_path, net)
    net.answer = lambda method, h, path: Answer(503, [], b"")  # the public server is down for now
    out = await register(gw, f"https://rebind.test:{inside.port}/mcp")
    assert "result" in out, out  # the entry-time answer was public
    asked = net.asked.count("rebind.test")
    assert asked >= 1
    result = await run(gw, "mine_anything", {})
    assert "error" in result
    assert inside.connections == 0


@pytest.mark.parametrize(
    ("later", "why"),
    [
        ("127.0.0.1:{port}", "loopback"),
        ("2130706433:{port}", "non-standard form"),
        ("[::ffff:127.0.0.1]:{port}", "IPv4-mapped"),
    ],
)
async def test_a_vault_host_that_turns_internal_is_refused_on_call(
    tmp_path: Path, net: Internet, inside: Canary, later: str, why: str
) -> None:
    gw = gateway(tmp_path, net)
    me = principal_for(gw)
    gw.vault.set(me.user.id, "HOST", "mcp.public.test")
    net.answer = lambda method, h, path: Answer(503, [], b"")
    assert "result" in await register(gw, "https://{{vault:HOST}}/mcp")
    gw.vault.set(me.user.id, "HOST", later.format(port=inside.port))
    assert gw.external is not None
    gw.external.invalidate(me.user.id, "mine")
    result = await run(gw, "mine_anything", {})
    assert why in str(result.get("error")), result
    assert inside.connections == 0


async def test_a_vault_url_that_turns_to_plain_http_is_refused_on_call(
    tmp_path: Path, net: Internet, inside: Canary
) -> None:
    gw = gateway(tmp_path, net)
    me = principal_for(gw)
    gw.vault.set(me.user.id, "URL", "https://mcp.public.test/mcp")
    net.answer = lambda method, h, path: Answer(503, [], b"")
    assert "result" in await register(gw, "{{vault:URL}}")
    gw.vault.set(me.user.id, "URL", f"http://127.0.0.1:{inside.port}/mcp")
    assert gw.external is not None
    gw.external.invalidate(me.user.id, "mine")
    result = await run(gw, "mine_anything", {})
    assert "must use https" in str(result.get("error")), result
    assert inside.connections == 0


async def test_a_custom_app_redirect_inward_is_not_followed(
    tmp_path: Path, net: Internet, inside: Canary
) -> None:
    gw = gateway(tmp_path, net)
    to = f"http://127.0.0.1:{inside.port}/mcp"
    net.answer = lambda method, h, path: Answer(307, [("Location", to)], b"")
    out = await register(gw, "https://mcp.public.test/mcp")
    assert "error" in out or "error" in out.get("result", {}), out
    assert all(h == "mcp.public.test" for _, h, _ in net.seen) and net.seen
    assert inside.connections == 0


# -- OAuth client ID metadata documents ----------------------------------------------------------


@pytest.mark.parametrize("host", [*LITERALS, *NAMES_INWARD])
async def test_a_client_metadata_document_on_an_internal_address_is_refused(
    tmp_path: Path, net: Internet, inside: Canary, host: str
) -> None:
    gw = gateway(tmp_path, net)
    assert gw.oauth is not None
    with pytest.raises(OAuthError) as info:
        await gw.oauth.clients.resolve(url_for(host, inside, "/client.json"))
    assert info.value.error == "invalid_client"
    assert inside.connections == 0


async def test_a_rebinding_metadata_host_is_resolved_once(
    tmp_path: Path, net: Internet, inside: Canary
) -> None:
    gw = gateway(tmp_path, net)
    assert gw.oauth is not None
    url = f"https://rebind.test:{inside.port}/client.json"
    net.answer = lambda method, h, path: json_answer(
        {"client_id": url, "client_name": "Rebinder", "redirect_uris": ["https://app.example/cb"]}
    )
    info = await gw.oauth.clients.resolve(url)
    assert info is not None and info.client_name == "Rebinder"  # fetched from the public answer
    assert net.asked.count("rebind.test") == 1  # one resolution: no second answer to rebind to
    assert inside.connections == 0


# -- provider token endpoints ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "host", ["127.0.0.1", "2130706433", "[::ffff:127.0.0.1]", "internal.test", "split.test"]
)
async def test_a_token_endpoint_on_an_internal_address_is_refused(
    tmp_path: Path, net: Internet, inside: Canary, host: str
) -> None:
    registry = build_registry(plugins=False)
    token_url = url_for(host, inside, "/token")
    auth = OAuth2Auth(authorize_url="https://public.test/authorize", token_url=token_url)
    registry.add(Manifest("tokeny", "1.0.0", "Tokeny", auth, tool_prefix="tokeny_"), list)
    net.dns = {name: [list(a) for a in answers] for name, answers in DNS.items()}
    gw = make_gateway(
        tmp_path,
        registry=registry,
        resolver=net.resolver,
        route=net.route,
        plugin_env={"TOKENY_CLIENT_ID": "cid"},
    )
    manifest = gw.registry.manifest("tokeny")
    assert manifest is not None
    with pytest.raises(ProviderError) as info:
        await gw.provider_oauth.exchange_code(manifest, code="c", verifier="v" * 43)
    assert "Refused" in str(info.value)
    assert inside.connections == 0


# -- the curl proxy --------------------------------------------------------------------------------


def _proxy_gateway(tmp_path: Path, net: Internet, base_url: str) -> Gateway:
    registry = build_registry(plugins=False)
    auth = ApiKeyAuth(fields=(ApiKeyField("token", "Token"),), header="Authorization", scheme="Bearer")
    registry.add(
        Manifest("acme", "1.0.0", "Acme", auth, base_url=base_url, tool_prefix="acme_", curl_proxy=True), list
    )
    net.dns = {name: [list(a) for a in answers] for name, answers in DNS.items()}
    return make_gateway(tmp_path, registry=registry, resolver=net.resolver, route=net.route)


@pytest.mark.parametrize("host", [*LITERALS, *NAMES_INWARD, "rebind.test"])
async def test_the_proxy_never_reaches_an_internal_address(
    tmp_path: Path, net: Internet, inside: Canary, host: str
) -> None:
    gw = _proxy_gateway(tmp_path, net, url_for(host, inside, "/api"))
    me = principal_for(gw)
    gw.credentials.save(me.user.id, "acme", {"token": "acme-secret-0123456789"})
    token = gw.curl.mint(me, ["acme"], 600)["token"]
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=create_proxy_app(gw)), base_url="http://127.0.0.1:8787"
    ) as http:
        r = await http.get("/c/acme/items", headers={"Authorization": f"Bearer {token}"})
    if host == "rebind.test":
        assert r.status_code == 200, r.text
        assert net.asked.count("rebind.test") == 1
    else:
        assert r.status_code in (403, 502), r.text
        assert r.json()["error"].startswith("Refused"), r.text
    audit = [e for e in gw.stores.audit.list_for(me.user.id, limit=10) if e["action"] == "PROXY"]
    assert audit and audit[0]["status"] == r.status_code
    assert inside.connections == 0


# -- OpenAPI apps ---------------------------------------------------------------------------------

PETS = {
    "openapi": "3.0.0",
    "info": {"title": "Pets", "version": "1"},
    "paths": {"/pets": {"get": {"operationId": "listPets", "responses": {"200": {"description": "ok"}}}}},
}


@pytest.mark.parametrize(
    "host", ["127.0.0.1", "2130706433", "[::ffff:127.0.0.1]", "internal.test", "split.test"]
)
async def test_an_openapi_app_on_an_internal_address_is_refused_at_registration(
    tmp_path: Path, net: Internet, inside: Canary, host: str
) -> None:
    gw = gateway(tmp_path, net)
    args = {"name": "pets", "document": PETS, "baseUrl": url_for(host, inside, "/v1")}
    result = await run(gw, "apps_register_openapi", args)
    assert str(result.get("error", "")).startswith("baseUrl: Refused: "), result
    assert (await run(gw, "apps_list", {}))["result"]["apps"] == []
    assert inside.connections == 0


async def test_an_openapi_app_that_rebinds_after_registration_is_refused_on_call(
    tmp_path: Path, net: Internet, inside: Canary
) -> None:
    gw = gateway(tmp_path, net)
    net.dns["rebind.test"] = [[PUBLIC_IP], ["127.0.0.1"]]
    args = {"name": "pets", "document": PETS, "baseUrl": f"https://rebind.test:{inside.port}/v1"}
    assert "result" in await run(gw, "apps_register_openapi", args)
    result = await run(gw, "pets_listPets", {})
    assert "loopback" in str(result.get("error")), result
    assert inside.connections == 0
