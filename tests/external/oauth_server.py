"""An OAuth-protected MCP server built with the official SDK's auth support, on loopback.

`MCPServer(auth_server_provider=…, auth=AuthSettings(…))` serves the MCP endpoint behind bearer
auth (401 with `WWW-Authenticate: Bearer resource_metadata=…`), RFC 9728 protected-resource
metadata, RFC 8414 authorization-server metadata, dynamic client registration, /authorize and
/token. The provider below is the SDK's provider interface, in memory: consent is automatic and
issued to `provider.subject` (the test says who is signing in), tokens are bound to the resource.

With `cimd=True` the server also advertises client ID metadata documents (and RFC 9207 `iss` in
authorization responses): a URL-shaped client_id is resolved by fetching its document through
`provider.fetch_client_document`, as an authorization server does.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from tests.support.processes import free_port
from tests.support.server_thread import start_server_thread


@dataclass
class Provider:
    issuer: str
    subject: str = "nobody"  # who consents next
    access_ttl: int = 3600
    fetch_client_document: Callable[[str], dict[str, Any]] | None = None
    clients: dict[str, OAuthClientInformationFull] = field(default_factory=dict)
    codes: dict[str, AuthorizationCode] = field(default_factory=dict)
    refresh: dict[str, RefreshToken] = field(default_factory=dict)
    access: dict[str, AccessToken] = field(default_factory=dict)
    refreshes: int = 0
    authorize_requests: list[AuthorizationParams] = field(default_factory=list)
    token_resources: list[str | None] = field(default_factory=list)
    with_iss: bool = False

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        if client_id in self.clients:
            return self.clients[client_id]
        if client_id.startswith(("https://", "http://")) and self.fetch_client_document is not None:
            doc = self.fetch_client_document(client_id)
            if doc.get("client_id") != client_id:
                return None
            return OAuthClientInformationFull(
                client_id=client_id,
                redirect_uris=doc["redirect_uris"],
                token_endpoint_auth_method="none",
                grant_types=doc["grant_types"],
                response_types=doc["response_types"],
                client_name=doc.get("client_name"),
            )
        return None

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        self.authorize_requests.append(params)
        code = secrets.token_urlsafe(24)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=client.client_id or "",
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
            subject=self.subject,
        )
        iss = self.issuer if self.with_iss else None
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state, iss=iss)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    def _issue(
        self, client_id: str, scopes: list[str], resource: str | None, subject: str | None
    ) -> OAuthToken:
        access = "at_" + secrets.token_urlsafe(16)
        refresh = "rt_" + secrets.token_urlsafe(16)
        self.access[access] = AccessToken(
            token=access,
            client_id=client_id,
            scopes=scopes,
            expires_at=int(time.time()) + self.access_ttl,
            resource=resource,
            subject=subject,
        )
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, resource=resource, subject=subject
        )
        return OAuthToken(
            access_token=access,
            token_type="Bearer",
            expires_in=self.access_ttl,
            refresh_token=refresh,
            scope=" ".join(scopes) or None,
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        self.token_resources.append(authorization_code.resource)
        return self._issue(
            client.client_id or "",
            authorization_code.scopes,
            authorization_code.resource,
            authorization_code.subject,
        )

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        self.refresh.pop(refresh_token.token, None)  # rotating: the old one is spent
        self.refreshes += 1
        return self._issue(
            client.client_id or "",
            scopes or refresh_token.scopes,
            refresh_token.resource,
            refresh_token.subject,
        )

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)

    def revoke_access_tokens(self) -> None:
        self.access.clear()


@dataclass
class MetadataPatch:
    """Adds CIMD and RFC 9207 support to the SDK's authorization-server metadata document."""

    app: Any
    extra: dict[str, Any]

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if (
            scope["type"] != "http"
            or scope["path"] != "/.well-known/oauth-authorization-server"
            or not self.extra
        ):
            await self.app(scope, receive, send)
            return
        start: dict[str, Any] = {}
        chunks: list[bytes] = []

        async def capture(message: Any) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
            else:
                chunks.append(message.get("body", b""))

        await self.app(scope, receive, capture)
        body = json.dumps({**json.loads(b"".join(chunks)), **self.extra}).encode()
        headers = [(k, v) for k, v in start["headers"] if k.lower() != b"content-length"]
        await send({**start, "headers": [*headers, (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


@dataclass
class OAuthServer:
    base: str
    provider: Provider
    server: uvicorn.Server
    thread: threading.Thread

    @property
    def url(self) -> str:
        return self.base + "/mcp"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)


def start_oauth_server(*, cimd: bool = False) -> OAuthServer:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    provider = Provider(issuer=base, with_iss=cimd)
    mcp = MCPServer(
        "secure",
        version="2.0.0",
        auth_server_provider=provider,
        auth=AuthSettings(
            issuer_url=base,
            resource_server_url=base + "/mcp",
            client_registration_options=ClientRegistrationOptions(enabled=True),
            validate_token_resource=True,
        ),
    )

    @mcp.tool()
    def whoami() -> str:
        """Say whose token this request carries."""
        token = get_access_token()
        return token.subject or "?" if token is not None else "anonymous"

    extra = (
        {
            "client_id_metadata_document_supported": True,
            "authorization_response_iss_parameter_supported": True,
        }
        if cimd
        else {}
    )
    app = MetadataPatch(mcp.streamable_http_app(json_response=True), extra)
    server, thread = start_server_thread(app, port, name="the OAuth MCP server", lifespan="on")
    return OAuthServer(base, provider, server, thread)
