"""The authorization code flow end to end in process, and every way it must refuse."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import jwt
from workbench.identity.tokens import FileSigningKeys, TokenService

from tests.oauth.conftest import AS, BASE, MCP, REDIRECT, consent_fields, pkce, redirect_query

FULL_GRANT = {"access": "full", "integrations": "all", "deniedTools": []}


def authorize_params(client_id: str, challenge: str, **extra: str) -> dict[str, str]:
    return {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": REDIRECT,
        "state": "st-1",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "resource": MCP,
        **extra,
    }


def whoami(auth: AS, token: str) -> dict[str, object]:
    r = auth.mcp(token)
    assert r.status_code == 200, r.text
    return dict(json.loads(r.json()["result"]["content"][0]["text"]))


# -- discovery ---------------------------------------------------------------------------------------


def test_unauthenticated_mcp_points_at_resource_metadata_which_names_the_authorization_server(
    auth: AS,
) -> None:
    r = auth.http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert r.status_code == 401
    challenge = r.headers["www-authenticate"]
    assert challenge == f'Bearer resource_metadata="{BASE}/.well-known/oauth-protected-resource/mcp"'
    prm = auth.http.get("/.well-known/oauth-protected-resource/mcp")
    assert prm.status_code == 200 and prm.headers["content-type"] == "application/json"
    assert prm.json()["resource"] == MCP
    assert prm.json()["authorization_servers"] == [BASE]
    assert prm.json()["bearer_methods_supported"] == ["header"]
    root = auth.http.get("/.well-known/oauth-protected-resource").json()
    assert root["resource"] == BASE and root["authorization_servers"] == [BASE]


def test_authorization_server_metadata(auth: AS) -> None:
    r = auth.http.get("/.well-known/oauth-authorization-server")
    assert r.status_code == 200
    meta = r.json()
    assert meta["issuer"] == BASE
    assert meta["authorization_endpoint"] == f"{BASE}/authorize"
    assert meta["token_endpoint"] == f"{BASE}/token"
    assert meta["registration_endpoint"] == f"{BASE}/register"
    assert meta["revocation_endpoint"] == f"{BASE}/revoke"
    assert meta["code_challenge_methods_supported"] == ["S256"]
    assert meta["response_types_supported"] == ["code"]
    assert meta["grant_types_supported"] == ["authorization_code", "refresh_token"]
    assert meta["client_id_metadata_document_supported"] is True
    assert meta["authorization_response_iss_parameter_supported"] is True
    jwks = auth.http.get("/.well-known/jwks.json").json()
    assert jwks == auth.gw.tokens.jwks() and jwks["keys"][0]["alg"] == "ES256"
    # Browser-based clients may call the cookie-less endpoints cross-origin.
    for path in ["/token", "/register", "/revoke", "/.well-known/oauth-authorization-server"]:
        pre = auth.http.options(
            path, headers={"Origin": "https://inspector.example", "Access-Control-Request-Method": "POST"}
        )
        assert pre.status_code == 204 and pre.headers["access-control-allow-origin"] == "*", path
    assert r.headers["access-control-allow-origin"] == "*"


# -- the happy path ----------------------------------------------------------------------------------


def test_full_flow_issues_a_short_lived_audience_bound_jwt_that_works_on_mcp(auth: AS) -> None:
    client = auth.register()
    verifier, challenge = pkce()
    page = auth.authorize(authorize_params(client["client_id"], challenge, scope="mcp offline_access"))
    assert page.status_code == 200
    # The consent page names the client, the account, and where the code will go.
    assert "Test Agent wants to use Workbench as ada@example.com" in page.text
    assert "127.0.0.1:33418" in page.text
    assert "has not verified its name" in page.text
    assert page.headers["x-frame-options"] == "DENY"
    done = auth.consent(page)
    assert done.status_code == 303
    query = redirect_query(done.headers["location"])
    assert set(query) == {"code", "state", "iss"}
    assert query["state"] == ["st-1"] and query["iss"] == [BASE]
    r = auth.token(
        {
            "grant_type": "authorization_code",
            "code": query["code"][0],
            "redirect_uri": REDIRECT,
            "client_id": client["client_id"],
            "code_verifier": verifier,
            "resource": MCP,
        }
    )
    assert r.status_code == 200, r.text
    assert r.headers["cache-control"] == "no-store"
    body = r.json()
    assert set(body) == {"access_token", "token_type", "expires_in", "scope", "refresh_token"}
    assert body["token_type"] == "Bearer" and body["expires_in"] == 900
    assert body["scope"] == "mcp offline_access"
    assert body["refresh_token"].startswith("wbr_")
    claims = jwt.decode(body["access_token"], options={"verify_signature": False})
    assert claims["aud"] == MCP and claims["iss"] == BASE
    assert claims["sub"] == auth.user.id and claims["client_id"] == client["client_id"]
    assert claims["exp"] - claims["iat"] == 900
    assert jwt.get_unverified_header(body["access_token"])["alg"] == "ES256"
    assert whoami(auth, body["access_token"]) == {
        "id": auth.user.id,
        "email": "ada@example.com",
        "grant": FULL_GRANT,
    }
    # The refresh token is stored only as a hash.
    stored = auth.gw.stores.oauth_refresh.list_for(auth.user.id)  # type: ignore[union-attr]
    assert len(stored) == 1 and body["refresh_token"] not in repr(stored)


def test_authorize_without_a_portal_session_sends_the_browser_to_sign_in(auth: AS) -> None:
    client = auth.register()
    _, challenge = pkce()
    params = authorize_params(client["client_id"], challenge)
    r = auth.http.get("/authorize", params=params)
    assert r.status_code == 303
    location = r.headers["location"]
    assert location.startswith("/portal/signin?next=")
    back = parse_qs(urlsplit(location).query)["next"][0]
    assert back.startswith("/authorize?") and parse_qs(urlsplit(back).query)["client_id"] == [
        client["client_id"]
    ]
    # A forged session cookie is no session either.
    r = auth.http.get(
        "/authorize", params=params, headers={"Cookie": "__Host-wb_session=usr_x.9999999999.00"}
    )
    assert r.status_code == 303 and r.headers["location"].startswith("/portal/signin?next=")


def test_deny_returns_access_denied_with_state_and_iss(auth: AS) -> None:
    client = auth.register()
    _, challenge = pkce()
    done = auth.consent(auth.authorize(authorize_params(client["client_id"], challenge)), "deny")
    query = redirect_query(done.headers["location"])
    assert query["error"] == ["access_denied"] and query["state"] == ["st-1"] and query["iss"] == [BASE]
    assert "code" not in query


def test_redirect_uri_with_a_query_keeps_it(auth: AS) -> None:
    uri = "https://app.example.com/cb?tenant=7"
    client = auth.register(redirect_uris=[uri])
    _, challenge = pkce()
    page = auth.authorize(authorize_params(client["client_id"], challenge, redirect_uri=uri))
    location = auth.consent(page).headers["location"]
    assert location.startswith(uri + "&code=")
    assert redirect_query(location, uri)["tenant"] == ["7"]


# -- /authorize refusals -------------------------------------------------------------------------------


def test_wrong_redirect_uri_is_an_error_page_never_a_redirect(auth: AS) -> None:
    client = auth.register()
    _, challenge = pkce()
    for uri in [
        "http://127.0.0.1:33418/callback/",
        "http://127.0.0.1:33419/callback",
        "http://localhost:33418/callback",
        "https://evil.example/callback",
        REDIRECT + "?x=1",
    ]:
        r = auth.authorize(authorize_params(client["client_id"], challenge, redirect_uri=uri))
        assert r.status_code == 400, uri
        assert "location" not in r.headers
        assert "redirect_uri is not registered for this client" in r.text
    r = auth.authorize(authorize_params("wbc_unknown", challenge))
    assert r.status_code == 400 and "not registered with Workbench" in r.text


def test_missing_or_plain_pkce_is_refused_at_the_redirect_uri(auth: AS) -> None:
    client = auth.register()
    verifier, challenge = pkce()
    cases = [
        ({"code_challenge": ""}, "code_challenge is required"),
        ({"code_challenge_method": "plain", "code_challenge": verifier[:43]}, "must be S256"),
        ({"code_challenge_method": ""}, "must be S256"),
        ({"code_challenge": "short"}, "43 characters"),
    ]
    for override, message in cases:
        params = authorize_params(client["client_id"], challenge)
        params.update(override)
        r = auth.authorize({k: v for k, v in params.items() if v != ""})
        assert r.status_code == 303, override
        query = redirect_query(r.headers["location"])
        assert query["error"] == ["invalid_request"], override
        assert message in query["error_description"][0]
        assert query["state"] == ["st-1"] and query["iss"] == [BASE]
    auth_code_count = len(auth.gw.stores.oauth_codes._rows)  # type: ignore[union-attr]
    assert auth_code_count == 0


def test_other_resources_and_response_types_are_refused(auth: AS) -> None:
    client = auth.register()
    _, challenge = pkce()
    r = auth.authorize(authorize_params(client["client_id"], challenge, resource="https://other.example/mcp"))
    assert redirect_query(r.headers["location"])["error"] == ["invalid_target"]
    r = auth.authorize(authorize_params(client["client_id"], challenge, response_type="token"))
    assert redirect_query(r.headers["location"])["error"] == ["unsupported_response_type"]
    # The canonical forms of this server's resource are accepted.
    for resource in [MCP.upper().replace("/MCP", "/mcp"), MCP + "/", BASE]:
        r = auth.authorize(authorize_params(client["client_id"], challenge, resource=resource))
        assert r.status_code == 200, resource


def test_replayed_consent_is_refused_and_issues_no_second_code(auth: AS) -> None:
    client = auth.register()
    _, challenge = pkce()
    page = auth.authorize(authorize_params(client["client_id"], challenge))
    first = auth.consent(page)
    assert first.status_code == 303
    again = auth.consent(page)
    assert again.status_code == 400
    assert "already answered or has expired" in again.text
    assert len(auth.gw.stores.oauth_codes._rows) == 1  # type: ignore[union-attr]


def test_consent_needs_the_csrf_token_and_the_same_user(auth: AS) -> None:
    client = auth.register()
    _, challenge = pkce()
    page = auth.authorize(authorize_params(client["client_id"], challenge))
    fields = consent_fields(page.text)
    no_csrf = auth.http.post(
        "/authorize", data={**fields, "csrf": "", "decision": "approve"}, headers={"Cookie": auth.cookie}
    )
    assert no_csrf.status_code == 403
    # Another signed-in user cannot answer a consent that was shown to Ada, even with their own CSRF token.
    _, eve_cookie = auth.session_for("eve@example.com")
    eve_page = auth.authorize(authorize_params(client["client_id"], challenge), cookie=eve_cookie)
    eve_csrf = consent_fields(eve_page.text)["csrf"]
    r = auth.http.post(
        "/authorize",
        data={**fields, "csrf": eve_csrf, "decision": "approve"},
        headers={"Cookie": eve_cookie},
    )
    assert r.status_code == 400 and "does not match" in r.text
    # A tampered request blob (another redirect URI) does not match what was shown.
    page = auth.authorize(authorize_params(client["client_id"], challenge))
    fields = consent_fields(page.text)
    tampered = fields["request"][:-8] + "AAAAAAA="
    r = auth.http.post(
        "/authorize",
        data={**fields, "request": tampered, "decision": "approve"},
        headers={"Cookie": auth.cookie},
    )
    assert r.status_code == 400
    assert auth.gw.stores.oauth_codes._rows == {}  # type: ignore[union-attr]


# -- /token refusals ------------------------------------------------------------------------------------


def exchange(auth: AS, client: str, code: str, verifier: str, **extra: str) -> Any:
    return auth.token(
        {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": REDIRECT,
            "client_id": client,
            "code_verifier": verifier,
            **extra,
        }
    )


def test_reused_code_is_refused_and_revokes_what_it_issued(auth: AS) -> None:
    client = auth.register()
    verifier, challenge = pkce()
    code = auth.code_for(client["client_id"], challenge)
    first = exchange(auth, client["client_id"], code, verifier)
    assert first.status_code == 200
    refresh = first.json()["refresh_token"]
    second = exchange(auth, client["client_id"], code, verifier)
    assert second.status_code == 400
    assert second.json()["error"] == "invalid_grant"
    r = auth.token(
        {"grant_type": "refresh_token", "refresh_token": refresh, "client_id": client["client_id"]}
    )
    assert r.status_code == 400 and r.json()["error"] == "invalid_grant"


def test_code_is_bound_to_verifier_redirect_uri_client_resource_and_lifetime(auth: AS) -> None:
    client = auth.register(redirect_uris=[REDIRECT, "http://127.0.0.1:40000/cb"])
    other = auth.register()
    cases = [
        ({"code_verifier": pkce()[0]}, "PKCE verification failed"),
        ({"code_verifier": ""}, "code_verifier is required"),
        ({"redirect_uri": "http://127.0.0.1:40000/cb"}, "redirect_uri does not match"),
        ({"client_id": other["client_id"]}, "issued to another client"),
        ({"resource": "https://other.example/mcp"}, "the grant is for"),
    ]
    for override, message in cases:
        verifier, challenge = pkce()
        code = auth.code_for(client["client_id"], challenge)
        r = exchange(auth, client["client_id"], code, verifier, **override)
        assert r.status_code == 400, override
        assert message in r.json()["error_description"], r.json()
    verifier, challenge = pkce()
    code = auth.code_for(client["client_id"], challenge)
    auth.clock.offset = 61
    r = exchange(auth, client["client_id"], code, verifier)
    assert r.json() == {"error": "invalid_grant", "error_description": "the authorization code has expired"}


def test_token_endpoint_error_shapes(auth: AS) -> None:
    client = auth.register()
    r = auth.token({"grant_type": "password", "username": "a", "password": "b"})
    assert r.status_code == 400 and r.json()["error"] == "unsupported_grant_type"
    assert r.headers["cache-control"] == "no-store"
    r = auth.token({"grant_type": "authorization_code", "code": "x", "code_verifier": "y" * 43})
    assert r.status_code == 401 and r.json()["error"] == "invalid_client"
    r = auth.http.post("/token", json={"grant_type": "authorization_code"})
    assert r.status_code == 400 and r.json()["error"] == "invalid_request"
    r = auth.http.post(
        "/token",
        content=f"grant_type=refresh_token&grant_type=refresh_token&client_id={client['client_id']}",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert r.status_code == 400 and "more than once" in r.json()["error_description"]
    r = exchange(auth, client["client_id"], "not-a-code", pkce()[0])
    assert r.json()["error"] == "invalid_grant"


# -- access tokens at /mcp -------------------------------------------------------------------------------


def test_tokens_for_another_audience_expired_or_signed_by_another_key_are_rejected(
    auth: AS, tmp_path: Path
) -> None:
    claims = {"sub": auth.user.id, "email": "ada@example.com", "client_id": "wbc_x", "scope": "mcp"}
    good = auth.gw.tokens.mint(claims, audience=MCP, ttl_seconds=60)
    assert auth.mcp(good).status_code == 200

    def rejected(token: str) -> str:
        r = auth.mcp(token)
        assert r.status_code == 401
        assert r.headers["www-authenticate"].startswith("Bearer resource_metadata=")
        return str(r.json()["error"]["message"])

    # Another audience: the curl proxy's, or any other server's.
    assert rejected(auth.gw.tokens.mint(claims, audience=BASE + "/proxy", ttl_seconds=60)) == (
        "Unauthorized: invalid token"
    )
    assert rejected(auth.gw.tokens.mint(claims, audience="https://other.example/mcp", ttl_seconds=60))
    # Expired.
    auth.clock.offset = -3600
    stale = auth.gw.tokens.mint(claims, audience=MCP, ttl_seconds=60)
    auth.clock.offset = 0
    assert rejected(stale) == "Unauthorized: token expired"
    # Signed by another key (unknown kid), and by another key under our kid.
    stranger = TokenService(FileSigningKeys(tmp_path / "other-keys"), BASE)
    assert rejected(stranger.mint(claims, audience=MCP, ttl_seconds=60)) == (
        "Unauthorized: token signed by an unknown key"
    )
    our_kid = auth.gw.tokens.source.signing_keys()[0].kid
    other_key = stranger.source.signing_keys()[0].private_key
    forged = jwt.encode(
        {**jwt.decode(good, options={"verify_signature": False})},
        other_key,
        algorithm="ES256",
        headers={"kid": our_kid},
    )
    assert rejected(forged) == "Unauthorized: invalid token"
    # Another issuer, and a token without the client_id claim (not an access token).
    assert rejected(
        TokenService(auth.gw.tokens.source, "https://evil.example").mint(claims, audience=MCP, ttl_seconds=60)
    )
    no_client = {k: v for k, v in claims.items() if k != "client_id"}
    assert rejected(auth.gw.tokens.mint(no_client, audience=MCP, ttl_seconds=60)) == (
        "Unauthorized: not an access token"
    )
    # Rotation: a new signing key signs; tokens from the old key keep verifying until it is removed.
    auth.gw.tokens.source.rotate()
    assert auth.mcp(good).status_code == 200
    newer = auth.gw.tokens.mint(claims, audience=MCP, ttl_seconds=60)
    assert jwt.get_unverified_header(newer)["kid"] != our_kid
    assert auth.mcp(newer).status_code == 200


def test_api_keys_still_work_next_to_oauth(auth: AS) -> None:
    key = auth.gw.auth.mint_key(auth.user)
    assert whoami(auth, key)["id"] == auth.user.id


def test_signin_redirect_keeps_the_full_authorize_url(auth: AS) -> None:
    r = auth.http.get("/authorize?client_id=a%20b&state=x%26y")
    assert r.headers["location"] == "/portal/signin?next=" + quote(
        "/authorize?client_id=a%20b&state=x%26y", safe=""
    )
