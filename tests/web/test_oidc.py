"""Portal SSO: the ID token checks (signature, iss, aud, exp, nonce, email) and the browser binding of `state`.

The provider here is an httpx.MockTransport serving discovery, JWKS and the token endpoint with
tokens signed by a key made for the test; the real oidc-provider path runs in the e2e test.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from starlette.applications import Starlette
from starlette.testclient import TestClient
from workbench.connections.provider_oauth import pkce_challenge
from workbench.web.app import web_routes
from workbench.web.oidc import OidcClient, OidcError, nonce_for
from workbench.web.sessions import SESSION_COOKIE
from workbench.web.signin import SSO_COOKIE

from tests.support.gateways import make_gateway

ISSUER = "https://idp.example"
CLIENT = ("portal", "portal-secret")
REDIRECT = "http://127.0.0.1:8787/api/auth/oidc/callback"
KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
OTHER_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)


def jwk() -> dict[str, Any]:
    return {**json.loads(RSAAlgorithm.to_jwk(KEY.public_key())), "kid": "k1", "use": "sig", "alg": "RS256"}


class Idp:
    """Discovery, JWKS and a token endpoint answering with `self.claims` signed by `self.key`."""

    def __init__(self) -> None:
        self.claims: dict[str, Any] = {}
        self.key: Any = KEY
        self.token_requests: list[httpx.Request] = []

    def id_token(self) -> str:
        now = int(time.time())
        base = {"iss": ISSUER, "aud": CLIENT[0], "sub": "u-1", "iat": now, "exp": now + 300}
        return jwt.encode({**base, **self.claims}, self.key, algorithm="RS256", headers={"kid": "k1"})

    def handle(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path == "/.well-known/openid-configuration":
            return httpx.Response(
                200,
                json={
                    "issuer": ISSUER,
                    "authorization_endpoint": f"{ISSUER}/authorize",
                    "token_endpoint": f"{ISSUER}/token",
                    "jwks_uri": f"{ISSUER}/jwks",
                    "id_token_signing_alg_values_supported": ["RS256"],
                },
            )
        if path == "/jwks":
            return httpx.Response(200, json={"keys": [jwk()]})
        if path == "/token":
            self.token_requests.append(request)
            return httpx.Response(200, json={"id_token": self.id_token(), "token_type": "Bearer"})
        return httpx.Response(404)

    def client(self) -> OidcClient:
        return OidcClient(ISSUER, *CLIENT, REDIRECT, transport=httpx.MockTransport(self.handle))


async def test_a_valid_id_token_signs_in_by_verified_email() -> None:
    idp = Idp()
    idp.claims = {"nonce": nonce_for("v" * 43), "email": "Ada@Example.com", "email_verified": True}
    who = await idp.client().finish(code="c1", verifier="v" * 43)
    assert (who.email, who.subject) == ("ada@example.com", "u-1")
    (req,) = idp.token_requests
    form = parse_qs(req.content.decode())
    assert form == {
        "grant_type": ["authorization_code"],
        "code": ["c1"],
        "redirect_uri": [REDIRECT],
        "code_verifier": ["v" * 43],
    }
    assert req.headers["authorization"].startswith("Basic ")  # client_secret_basic, the OIDC default


@pytest.mark.parametrize(
    ("claims", "key", "message"),
    [
        ({"nonce": "wrong"}, KEY, "nonce mismatch"),
        ({"aud": "someone-else"}, KEY, "not valid (InvalidAudienceError)"),
        ({"iss": "https://evil.example"}, KEY, "not valid (InvalidIssuerError)"),
        ({"exp": int(time.time()) - 3600}, KEY, "not valid (ExpiredSignatureError)"),
        ({}, OTHER_KEY, "not valid (InvalidSignatureError)"),
        ({"email": None}, KEY, "did not share an email address"),
        ({"email_verified": False}, KEY, "is not verified"),
    ],
)
async def test_id_tokens_that_fail_a_check_are_refused(
    claims: dict[str, Any], key: Any, message: str
) -> None:
    idp = Idp()
    idp.claims = {"nonce": nonce_for("v" * 43), "email": "ada@example.com", **claims}
    idp.key = key
    with pytest.raises(OidcError) as err:
        await idp.client().finish(code="c1", verifier="v" * 43)
    assert message in str(err.value)


async def test_unsigned_tokens_are_refused() -> None:
    idp = Idp()
    token = jwt.encode(
        {"iss": ISSUER, "aud": CLIENT[0], "sub": "x", "email": "a@b.c"}, None, algorithm="none"
    )
    idp.id_token = lambda: token  # type: ignore[method-assign]
    with pytest.raises(OidcError) as err:
        await idp.client().finish(code="c1", verifier="v" * 43)
    assert "algorithm" in str(err.value)


def test_login_redirect_carries_pkce_state_nonce_and_binds_state_to_the_browser(tmp_path: Path) -> None:
    idp = Idp()
    gw = make_gateway(
        tmp_path,
        transport=httpx.MockTransport(idp.handle),
        oidc_issuer=ISSUER,
        oidc_client_id=CLIENT[0],
        oidc_client_secret=CLIENT[1],
    )
    http = TestClient(Starlette(routes=web_routes(gw)), base_url="https://testserver", follow_redirects=False)
    r = http.get("/api/auth/oidc/login?next=/connect/conn_1")
    assert r.status_code == 303
    q = {k: v[0] for k, v in parse_qs(urlsplit(r.headers["location"]).query).items()}
    assert q["code_challenge_method"] == "S256" and q["scope"] == "openid email"
    assert q["redirect_uri"] == REDIRECT and q["client_id"] == CLIENT[0]
    cookie = r.headers["set-cookie"]
    assert cookie.startswith(f"{SSO_COOKIE}={q['state']};") and "HttpOnly" in cookie and "Secure" in cookie
    state = gw.stores.pending.take_state(q["state"], now=gw.clock())
    assert state is not None and state.connection_id == "/connect/conn_1"
    assert pkce_challenge(state.code_verifier) == q["code_challenge"]
    assert q["nonce"] == nonce_for(state.code_verifier)
    gw.stores.pending.put_state(state)

    # Without the browser-binding cookie (a callback URL pushed into another browser): refused.
    http.cookies.clear()
    stray = http.get(f"/api/auth/oidc/callback?code=c&state={q['state']}")
    assert stray.status_code == 400 and "did not start in this browser" in stray.text
    assert idp.token_requests == []

    # In the browser that started it: signed in, sent on to `next`, state spent.
    idp.claims = {"nonce": q["nonce"], "email": "ada@example.com"}
    ok = http.get(
        f"/api/auth/oidc/callback?code=c&state={q['state']}", headers={"cookie": f"{SSO_COOKIE}={q['state']}"}
    )
    assert ok.status_code == 303 and ok.headers["location"] == "/connect/conn_1"
    assert f"{SESSION_COOKIE}=" in ok.headers["set-cookie"]
    user = gw.stores.users.by_email("ada@example.com")
    assert user is not None
    again = http.get(
        f"/api/auth/oidc/callback?code=c&state={q['state']}", headers={"cookie": f"{SSO_COOKIE}={q['state']}"}
    )
    assert again.status_code == 400 and "already used" in again.text
