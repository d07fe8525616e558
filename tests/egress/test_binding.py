"""curl_session tokens live no longer than the credential that minted them: revoking the API key, or
the OAuth grant (portal client revocation, RFC 7009 /revoke), stops them on the next request, on
this instance and on any other that shares the store. The proxy answers 401 then; before, the
request passes the token checks (here it then fails on the network, which no test may use)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from starlette.testclient import TestClient
from workbench.composition import Gateway, build_gateway
from workbench.proxy.app import create_proxy_app

from tests.oauth.conftest import make_as
from tests.support.gateways import make_gateway

KEY_REVOKED = "the API key that minted this curl_session token was revoked"
GRANT_REVOKED = "the OAuth grant that minted this curl_session token was revoked"


def proxy_get(gw: Gateway, token: str) -> Any:
    with TestClient(create_proxy_app(gw), base_url="http://127.0.0.1:8787") as http:
        return http.get("/c/github/user", headers={"Authorization": f"Bearer {token}"})


def second_instance(gw: Gateway) -> Gateway:
    """Another warm instance: its own caches and services, the same store and signing keys."""
    return build_gateway(gw.settings, stores=gw.stores, registry=gw.registry, key_provider=gw.cipher.provider)


async def test_revoking_the_api_key_stops_its_curl_sessions_at_once_everywhere(tmp_path: Path) -> None:
    gw = make_gateway(tmp_path)
    other = second_instance(gw)
    user = gw.stores.users.get_or_create("ada@example.com")
    key, spare = gw.auth.mint_key(user), gw.auth.mint_key(user)
    token = gw.curl.mint(await gw.auth.authenticate(key), ["github"], 600)["token"]
    spare_token = gw.curl.mint(await gw.auth.authenticate(spare), ["github"], 600)["token"]
    for instance in (gw, other):
        assert proxy_get(instance, token).status_code != 401

    key_id = key.split("_")[1]
    assert gw.stores.api_keys.revoke(user.id, key_id)  # what the portal's revoke does

    for instance in (gw, other):
        r = proxy_get(instance, token)
        assert r.status_code == 401 and r.json() == {"error": "Unauthorized", "message": KEY_REVOKED}
        assert r.headers["www-authenticate"].startswith("Bearer ")
        assert proxy_get(instance, spare_token).status_code != 401  # only that key's tokens


async def test_revoking_the_oauth_client_in_the_portal_stops_its_curl_sessions(tmp_path: Path) -> None:
    auth = make_as(tmp_path)
    with auth.http:
        client = auth.register()["client_id"]
        tokens = auth.tokens_for(client)
        principal = await auth.gw.auth.authenticate(tokens["access_token"])
        assert principal.via == "oauth" and principal.credential_id
        curl = auth.gw.curl.mint(principal, ["github"], 600)["token"]
        other = second_instance(auth.gw)
        assert proxy_get(auth.gw, curl).status_code != 401
        assert proxy_get(other, curl).status_code != 401

        assert auth.gw.oauth is not None
        assert auth.gw.oauth.revoke_client(auth.user.id, client)  # the MCP clients page

        for instance in (auth.gw, other):
            r = proxy_get(instance, curl)
            assert r.status_code == 401 and r.json()["message"] == GRANT_REVOKED


async def test_revoking_the_refresh_token_stops_the_grants_curl_sessions(tmp_path: Path) -> None:
    auth = make_as(tmp_path)
    with auth.http:
        client = auth.register()["client_id"]
        tokens = auth.tokens_for(client)
        curl = auth.gw.curl.mint(await auth.gw.auth.authenticate(tokens["access_token"]), ["github"], 600)[
            "token"
        ]
        assert proxy_get(auth.gw, curl).status_code != 401
        r = auth.http.post("/revoke", data={"token": tokens["refresh_token"], "client_id": client})
        assert r.status_code == 200
        assert proxy_get(auth.gw, curl).json()["message"] == GRANT_REVOKED
        # A second grant of the same client is its own credential: unaffected by the first's revocation.
        fresh = auth.tokens_for(client, state="st-2")
        curl2 = auth.gw.curl.mint(await auth.gw.auth.authenticate(fresh["access_token"]), ["github"], 600)[
            "token"
        ]
        assert proxy_get(auth.gw, curl2).status_code != 401


def test_a_token_that_names_no_credential_is_refused(tmp_path: Path) -> None:
    gw = make_gateway(tmp_path)
    user = gw.stores.users.get_or_create("ada@example.com")
    forged = gw.tokens.mint(
        {"sub": user.id, "typ": "curl_session", "integrations": ["github"]},
        audience=gw.settings.public_url.rstrip("/") + "/c",
        ttl_seconds=600,
    )
    r = proxy_get(gw, forged)
    assert r.status_code == 401
    assert r.json()["message"] == "this curl_session token is not bound to a credential; mint a new one"


async def test_an_oauth_minted_curl_tokens_grant_is_read_with_the_requests_one_batch(tmp_path: Path) -> None:
    """The access token names its grant's refresh token; the curl token minted with it carries that
    name, and the proxy reads the record by key with the user and the connection (no family Query
    after them); revoked elsewhere, it is refused at once."""
    auth = make_as(tmp_path)
    with auth.http:
        client = auth.register()["client_id"]
        tokens = auth.tokens_for(client)
        curl = auth.gw.curl.mint(await auth.gw.auth.authenticate(tokens["access_token"]), ["github"], 600)[
            "token"
        ]
        other = second_instance(auth.gw)
        reads: list[dict[str, Any]] = []
        inner = other.curl._read_together

        def read(**asked: Any) -> Any:
            reads.append(asked)
            return inner(**asked)

        other.curl._read_together = read
        families: list[str] = []
        refresh = other.stores.oauth_refresh
        real = refresh.family_exists
        refresh.family_exists = lambda family: families.append(family) or real(family)  # type: ignore[method-assign]
        try:
            assert proxy_get(other, curl).status_code != 401
            assert len(reads) == 1 and reads[0]["refresh_token"] and reads[0]["connection"], reads
            assert auth.gw.oauth.revoke_client(auth.user.id, client)
            r = proxy_get(other, curl)
            assert r.status_code == 401 and r.json()["message"] == GRANT_REVOKED
            assert families == []
        finally:
            refresh.family_exists = real  # type: ignore[method-assign]
