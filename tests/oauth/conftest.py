"""An in-process gateway with the authorization server and /mcp mounted, and helpers that walk the
OAuth flow the way a client and a signed-in user would."""

from __future__ import annotations

import base64
import hashlib
import os
import re
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from html import unescape
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient
from workbench.composition import Gateway, build_gateway, build_registry
from workbench.identity.crypto import LocalKeyProvider
from workbench.mcp.app import mcp_routes
from workbench.oauth.routes import oauth_routes
from workbench.settings import Settings
from workbench.stores import User
from workbench.stores.memory import memory_stores
from workbench.web.sessions import SESSION_COOKIE

from tests.support.aws import dynalite_endpoint, moto_endpoint

__all__ = ["dynalite_endpoint", "moto_endpoint"]  # session fixtures, re-exported for pytest

BASE = "http://127.0.0.1:8787"
MCP = BASE + "/mcp"
REDIRECT = "http://127.0.0.1:33418/callback"
# Every parameter the token and revocation endpoints read (fuzz tests draw form keys from these).
TOKEN_KEYS = [
    "grant_type",
    "code",
    "redirect_uri",
    "client_id",
    "client_secret",
    "code_verifier",
    "refresh_token",
    "resource",
    "scope",
    "token",
    "token_type_hint",
]


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    return verifier, challenge


@dataclass
class Clock:
    offset: float = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset


@dataclass
class AS:
    """The gateway under test, an HTTP client for it, and one signed-in user."""

    gw: Gateway
    http: TestClient
    clock: Clock
    user: User
    cookie: str
    sessions: dict[str, str] = field(default_factory=dict)

    def session_for(self, email: str) -> tuple[User, str]:
        user = self.gw.stores.users.get_or_create(email)
        return user, f"{SESSION_COOKIE}={self.gw.sessions.issue(user.id)}"

    def register(self, **overrides: Any) -> dict[str, Any]:
        body = {
            "client_name": "Test Agent",
            "redirect_uris": [REDIRECT],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
            **overrides,
        }
        r = self.http.post("/register", json=body)
        assert r.status_code == 201, r.text
        return dict(r.json())

    def authorize(self, params: dict[str, str], *, cookie: str | None = None) -> Any:
        return self.http.get("/authorize?" + urlencode(params), headers={"Cookie": cookie or self.cookie})

    def consent(self, page: Any, decision: str = "approve", *, cookie: str | None = None) -> Any:
        assert page.status_code == 200, page.text
        fields = consent_fields(page.text)
        return self.http.post(
            "/authorize",
            data={**fields, "decision": decision},
            headers={"Cookie": cookie or self.cookie},
        )

    def code_for(
        self,
        client_id: str,
        challenge: str,
        *,
        redirect_uri: str = REDIRECT,
        state: str = "st-1",
        scope: str | None = "mcp offline_access",
        cookie: str | None = None,
    ) -> str:
        params = {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": redirect_uri,
            "state": state,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "resource": MCP,
        }
        if scope:
            params["scope"] = scope
        page = self.authorize(params, cookie=cookie)
        done = self.consent(page, cookie=cookie)
        assert done.status_code == 303, done.text
        query = redirect_query(done.headers["location"], redirect_uri)
        assert query["state"] == [state]
        assert query["iss"] == [BASE]
        return query["code"][0]

    def token(self, data: dict[str, str], **kwargs: Any) -> Any:
        return self.http.post("/token", data=data, **kwargs)

    def tokens_for(self, client_id: str, **kwargs: Any) -> dict[str, Any]:
        verifier, challenge = pkce()
        code = self.code_for(client_id, challenge, **kwargs)
        r = self.token(
            {
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": kwargs.get("redirect_uri", REDIRECT),
                "client_id": client_id,
                "code_verifier": verifier,
                "resource": MCP,
            }
        )
        assert r.status_code == 200, r.text
        return dict(r.json())

    def mcp(self, token: str, method: str = "tools/call", params: dict[str, Any] | None = None) -> Any:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
        if method == "tools/call" and params is None:
            body["params"] = {"name": "whoami", "arguments": {}}
        return self.http.post("/mcp", json=body, headers={"Authorization": f"Bearer {token}"})


def consent_fields(html: str) -> dict[str, str]:
    """The hidden inputs of the consent form (csrf, txn, request)."""
    found = dict(re.findall(r'<input type="hidden" name="([a-z]+)" value="([^"]*)">', html))
    return {k: unescape(v) for k, v in found.items()}


def redirect_query(location: str, redirect_uri: str = REDIRECT) -> dict[str, list[str]]:
    """The query of a redirect to `redirect_uri` (whose own query parameters come first, kept)."""
    parts, expected = urlsplit(location), urlsplit(redirect_uri)
    assert (parts.scheme, parts.netloc, parts.path) == (expected.scheme, expected.netloc, expected.path)
    assert parts.query.startswith(expected.query), location
    return parse_qs(parts.query)


def make_as(tmp_path: Path, clock: Clock | None = None, **settings: Any) -> AS:
    clock = clock or Clock()
    base = Settings(store="memory", data_dir=tmp_path, public_url=BASE, **settings)
    gw = build_gateway(
        base,
        stores=memory_stores(),
        registry=build_registry(),
        key_provider=LocalKeyProvider.from_secret(os.urandom(32)),
        clock=clock,
    )
    app = Starlette(routes=[*oauth_routes(gw), *mcp_routes(gw)])
    http = TestClient(app, base_url=BASE, follow_redirects=False)
    user = gw.stores.users.get_or_create("ada@example.com")
    cookie = f"{SESSION_COOKIE}={gw.sessions.issue(user.id)}"
    return AS(gw=gw, http=http, clock=clock, user=user, cookie=cookie)


@pytest.fixture
def auth(tmp_path: Path) -> Iterator[AS]:
    server = make_as(tmp_path)
    with server.http:
        yield server
