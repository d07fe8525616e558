"""The deployed shape: the authorization server served by the web Lambda function and the token
checked by the MCP Lambda function, over DynamoDB and KMS (moto), with a cold start between steps
so nothing can live in one instance's memory."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import secrets
from collections.abc import Iterator
from html import unescape
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from workbench.composition import build_gateway
from workbench.settings import Settings
from workbench.web.sessions import SESSION_COOKIE

from tests.support.apigw import header, http_api_event, load_entry, response_json
from tests.support.aws import AwsEndpoint

pytestmark = pytest.mark.e2e

PUBLIC = "https://gw.example.test"
REDIRECT = "http://127.0.0.1:33418/callback"


@pytest.fixture
def lambda_env(moto_endpoint: AwsEndpoint, monkeypatch: pytest.MonkeyPatch) -> Iterator[Settings]:
    from workbench.runtime.lambda_handler import reset_instance

    settings = moto_endpoint.fresh_tables()
    for key, value in moto_endpoint.env(settings).items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("WORKBENCH_PUBLIC_URL", PUBLIC)
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "1")
    reset_instance()
    yield Settings.from_env()
    reset_instance()


def cold(surface: str) -> Any:
    """A fresh Lambda instance of `functions/<surface>/app.py`."""
    from workbench.runtime.lambda_handler import reset_instance

    reset_instance()
    return load_entry(surface).handler


def body_text(result: dict[str, Any]) -> str:
    body = result.get("body") or ""
    return base64.b64decode(body).decode() if result.get("isBase64Encoded") else str(body)


def form_event(path: str, data: dict[str, str], cookie: str | None = None) -> dict[str, Any]:
    return http_api_event(
        "POST",
        path,
        headers={"content-type": "application/x-www-form-urlencoded"},
        body=urlencode(data),
        cookies=[cookie] if cookie else None,
    )


def test_oauth_flow_across_cold_lambda_instances(lambda_env: Settings) -> None:
    meta = cold("web")(http_api_event("GET", "/.well-known/oauth-authorization-server"), None)
    assert meta["statusCode"] == 200 and response_json(meta)["issuer"] == PUBLIC
    prm = cold("web")(http_api_event("GET", "/.well-known/oauth-protected-resource/mcp"), None)
    assert response_json(prm)["resource"] == f"{PUBLIC}/mcp"

    reg = cold("web")(
        http_api_event(
            "POST",
            "/register",
            body={
                "client_name": "Lambda agent",
                "redirect_uris": [REDIRECT],
                "token_endpoint_auth_method": "none",
                "grant_types": ["authorization_code", "refresh_token"],
            },
        ),
        None,
    )
    assert reg["statusCode"] == 201, reg
    client_id = response_json(reg)["client_id"]

    gw = build_gateway(lambda_env)
    user = gw.stores.users.get_or_create("ada@example.com")
    cookie = f"{SESSION_COOKIE}={gw.sessions.issue(user.id)}"
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    query = urlencode(
        {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": REDIRECT,
            "state": "st",
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "resource": f"{PUBLIC}/mcp",
        }
    )
    page = cold("web")(http_api_event("GET", "/authorize", query=query, cookies=[cookie]), None)
    assert page["statusCode"] == 200, page
    html = body_text(page)
    assert "Lambda agent wants to use Workbench as ada@example.com" in html
    fields = {
        k: unescape(v) for k, v in re.findall(r'<input type="hidden" name="([a-z]+)" value="([^"]*)">', html)
    }
    decided = cold("web")(form_event("/authorize", {**fields, "decision": "approve"}, cookie), None)
    assert decided["statusCode"] == 303, decided
    answer = parse_qs(urlsplit(header(decided, "location") or "").query)
    assert answer["iss"] == [PUBLIC] and answer["state"] == ["st"]

    token = cold("web")(
        form_event(
            "/token",
            {
                "grant_type": "authorization_code",
                "code": answer["code"][0],
                "redirect_uri": REDIRECT,
                "client_id": client_id,
                "code_verifier": verifier,
                "resource": f"{PUBLIC}/mcp",
            },
        ),
        None,
    )
    assert token["statusCode"] == 200, token
    tokens = response_json(token)

    call = cold("mcp")(
        http_api_event(
            "POST",
            "/mcp",
            route_key="ANY /mcp",
            headers={
                "authorization": f"Bearer {tokens['access_token']}",
                "mcp-protocol-version": "2025-06-18",
            },
            body={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "whoami", "arguments": {}},
            },
        ),
        None,
    )
    assert call["statusCode"] == 200, call
    assert json.loads(response_json(call)["result"]["content"][0]["text"]) == {
        "id": user.id,
        "email": "ada@example.com",
        "grant": {"access": "full", "integrations": "all", "deniedTools": []},  # consented as offered
    }

    refresh = {
        "grant_type": "refresh_token",
        "refresh_token": tokens["refresh_token"],
        "client_id": client_id,
    }
    assert cold("web")(form_event("/token", refresh), None)["statusCode"] == 200
    reuse = cold("web")(form_event("/token", refresh), None)
    assert reuse["statusCode"] == 400 and response_json(reuse)["error"] == "invalid_grant"
