"""The official `mcp` SDK client completes the whole OAuth flow against a real local gateway process:
discovery from the 401, dynamic registration, authorization with PKCE through a scripted sign-in and
consent, the token exchange, tools/list and a tool call; then it refreshes once its token expires."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

import anyio
import httpx
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)

from tests.support.processes import local_gateway

pytestmark = pytest.mark.e2e

REDIRECT = "http://127.0.0.1:47123/callback"  # nothing listens: the scripted browser reads the redirect
EMAIL = "sdk-user@example.com"


class MemoryStorage:
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None
        self.history: list[OAuthToken] = []

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens
        self.history.append(tokens)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class ScriptedBrowser:
    """What a person does in the browser: sign in (development sign-in), read the consent page, allow."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.result: AuthorizationCodeResult | None = None
        self.consent_page = ""
        self.visited: list[str] = []

    async def open(self, authorization_url: str) -> None:
        async with httpx.AsyncClient(timeout=30, follow_redirects=False) as http:
            r = await http.get(authorization_url)
            self.visited.append(str(r.url))
            assert r.status_code == 303, r.text
            signin = urljoin(self.base, r.headers["location"])
            assert urlsplit(signin).path == "/portal/signin"
            page = await http.get(signin)
            assert page.status_code == 200 and "Development sign-in" in page.text
            next_path = unescape(re.search(r'name="next" value="([^"]*)"', page.text).group(1))  # type: ignore[union-attr]
            r = await http.post(f"{self.base}/api/auth/dev-login", data={"email": EMAIL, "next": next_path})
            assert r.status_code == 303, r.text
            cookie = next(c.split(";")[0] for c in r.headers.get_list("set-cookie") if "wb_session=" in c)
            back = urljoin(self.base, r.headers["location"])
            assert back == authorization_url, (back, authorization_url)
            consent = await http.get(back, headers={"Cookie": cookie})
            assert consent.status_code == 200, consent.text
            self.consent_page = consent.text
            fields = dict(re.findall(r'<input type="hidden" name="([a-z]+)" value="([^"]*)">', consent.text))
            r = await http.post(
                f"{self.base}/authorize",
                data={**{k: unescape(v) for k, v in fields.items()}, "decision": "approve"},
                headers={"Cookie": cookie},
            )
            assert r.status_code == 303, r.text
            location = r.headers["location"]
            assert location.startswith(REDIRECT + "?")
            query = parse_qs(urlsplit(location).query)
            self.result = AuthorizationCodeResult(
                code=query["code"][0], state=query["state"][0], iss=query["iss"][0]
            )

    async def callback(self) -> AuthorizationCodeResult:
        assert self.result is not None
        return self.result


def payload(result: Any) -> Any:
    assert result.is_error is False
    return json.loads(result.content[0].text)


async def test_sdk_client_signs_in_with_oauth_calls_tools_and_refreshes(tmp_path: Path) -> None:
    env = {"WORKBENCH_DEV_LOGIN": "1", "WORKBENCH_OAUTH_ACCESS_TOKEN_TTL": "2"}
    with local_gateway(tmp_path, extra_env=env) as (base, _key):
        storage = MemoryStorage()
        browser = ScriptedBrowser(base)
        provider = OAuthClientProvider(
            server_url=f"{base}/mcp",
            client_metadata=OAuthClientMetadata(
                client_name="SDK e2e agent",
                redirect_uris=[REDIRECT],  # type: ignore[list-item]
                grant_types=["authorization_code", "refresh_token"],
                response_types=["code"],
                token_endpoint_auth_method="none",
            ),
            storage=storage,
            redirect_handler=browser.open,
            callback_handler=browser.callback,
        )
        async with (
            httpx2.AsyncClient(auth=provider, timeout=30) as http,
            streamable_http_client(f"{base}/mcp", http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            tools = (await session.list_tools()).tools
            assert "execute_tools" in [t.name for t in tools] and len(tools) == 9
            me = payload(await session.call_tool("whoami", {}))
            assert me["email"] == EMAIL

            # Registered dynamically, consented by name, PKCE S256, code with state and iss.
            assert storage.client is not None and storage.client.client_id.startswith("wbc_")
            assert "SDK e2e agent wants to use Workbench as sdk-user@example.com" in browser.consent_page
            auth_query = parse_qs(urlsplit(browser.visited[0]).query)
            assert auth_query["code_challenge_method"] == ["S256"]
            assert auth_query["resource"] == [f"{base}/mcp"]
            first = storage.tokens
            assert first is not None and first.refresh_token and first.expires_in == 2

            # The access token expires; the next call refreshes (rotating the refresh token) and works.
            await anyio.sleep(2.5)
            listed = payload(await session.call_tool("list_integrations", {}))
            assert "integrations" in listed
            second = storage.tokens
            assert second is not None and second.access_token != first.access_token
            assert second.refresh_token and second.refresh_token != first.refresh_token
            assert payload(await session.call_tool("whoami", {}))["email"] == EMAIL

        async with httpx.AsyncClient(timeout=30) as raw:
            # Reusing the rotated refresh token is refused and revokes the whole family.
            client_id = storage.client.client_id
            reuse = await raw.post(
                f"{base}/token",
                data={
                    "grant_type": "refresh_token",
                    "refresh_token": first.refresh_token,
                    "client_id": client_id,
                },
            )
            assert reuse.status_code == 400 and reuse.json()["error"] == "invalid_grant"
            after = await raw.post(
                f"{base}/token",
                data={
                    "grant_type": "refresh_token",
                    "refresh_token": second.refresh_token,
                    "client_id": client_id,
                },
            )
            assert after.status_code == 400 and after.json()["error"] == "invalid_grant"
