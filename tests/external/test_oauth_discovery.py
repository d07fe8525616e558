"""OAuth discovery and registration rules for OAuth-protected servers, against scripted metadata
(httpx.MockTransport): the order of the well-known URIs, the exact-issuer rule, PKCE, CIMD before
DCR, and the address policy applied to every URL a server's metadata names."""

from __future__ import annotations

import ipaddress
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from workbench.external.oauth import AppOAuth, OAuthSetupError, parse_challenge

from tests.support.gateways import make_gateway

MCP = "https://mcp.example.com/tenant/mcp"
PRM = "https://mcp.example.com/.well-known/oauth-protected-resource/tenant/mcp"
ISSUER = "https://auth.example.com/t1"
AS_META = "https://auth.example.com/.well-known/oauth-authorization-server/t1"


def as_meta(**extra: Any) -> dict[str, Any]:
    return {
        "issuer": ISSUER,
        "authorization_endpoint": "https://auth.example.com/t1/authorize",
        "token_endpoint": "https://auth.example.com/t1/token",
        "registration_endpoint": "https://auth.example.com/t1/register",
        "code_challenge_methods_supported": ["S256"],
        **extra,
    }


def oauth(tmp_path: Path, docs: dict[str, Any], seen: list[str], **kw: Any) -> AppOAuth:
    def answer(request: httpx.Request) -> httpx.Response:
        url = str(request.url)
        seen.append(f"{request.method} {url}")
        if request.method == "POST" and url.endswith("/register"):
            return httpx.Response(201, json={"client_id": "dyn-1", "token_endpoint_auth_method": "none"})
        if url in docs:
            return httpx.Response(200, json=docs[url])
        return httpx.Response(404)

    gw = make_gateway(tmp_path)
    assert gw.external is not None and gw.external.oauth is not None
    base = gw.external.oauth
    return AppOAuth(
        public_url=kw.pop("public_url", "https://wb.example.com"),
        store=base.store,
        cipher=base.cipher,
        pending=base.pending,
        credentials=base.credentials,
        transport=httpx.MockTransport(answer),
        **kw,
    )


def test_challenge_parsing() -> None:
    header = 'Bearer error="invalid_token", resource_metadata="https://x/.well-known/a", scope="files:read b"'
    assert parse_challenge(header) == {
        "error": "invalid_token",
        "resource_metadata": "https://x/.well-known/a",
        "scope": "files:read b",
    }
    assert parse_challenge('Basic realm="x"') == {}


async def test_well_known_order_exact_issuer_and_dcr(tmp_path: Path) -> None:
    seen: list[str] = []
    docs = {
        PRM: {"resource": MCP, "authorization_servers": [ISSUER], "scopes_supported": ["mcp:tools"]},
        AS_META: as_meta(scopes_supported=["mcp:tools", "offline_access"]),
    }
    plan = await oauth(tmp_path, docs, seen).prepare("u1", "app", MCP, "Bearer")
    # No resource_metadata in the challenge: the path-specific well-known URI first.
    assert seen[0] == f"GET {PRM}"
    assert seen[1] == f"GET {AS_META}"  # RFC 8414 path insertion first
    assert seen[2] == "POST https://auth.example.com/t1/register"
    assert (plan.client_id, plan.registration, plan.resource) == ("dyn-1", "dcr", MCP)
    assert plan.scope == "mcp:tools offline_access"


async def test_cimd_is_preferred_when_offered_over_https(tmp_path: Path) -> None:
    seen: list[str] = []
    docs = {
        PRM: {"resource": MCP, "authorization_servers": [ISSUER]},
        AS_META: as_meta(client_id_metadata_document_supported=True),
    }
    plan = await oauth(tmp_path, docs, seen).prepare("u1", "app", MCP, 'Bearer scope="a b"')
    assert plan.client_id == "https://wb.example.com/oauth/apps/client-metadata.json"
    assert plan.registration == "cimd" and plan.scope == "a b"  # the challenge's scope wins
    assert not any(s.startswith("POST") for s in seen)  # no dynamic registration


@pytest.mark.parametrize(
    ("docs", "message"),
    [
        (
            {PRM: {"resource": "https://other.example.com/mcp", "authorization_servers": [ISSUER]}},
            "another resource",
        ),
        (
            {
                PRM: {"resource": MCP, "authorization_servers": [ISSUER]},
                AS_META: as_meta(issuer="https://evil.example"),
            },
            "different issuer",
        ),
        (
            {
                PRM: {"resource": MCP, "authorization_servers": [ISSUER]},
                AS_META: as_meta(code_challenge_methods_supported=["plain"]),
            },
            "PKCE",
        ),
        (
            {
                PRM: {"resource": MCP, "authorization_servers": [ISSUER]},
                AS_META: as_meta(registration_endpoint=None),
            },
            "neither client ID metadata",
        ),
        ({}, "no protected-resource metadata"),
    ],
)
async def test_unusable_setups_are_refused_with_a_reason(
    tmp_path: Path, docs: dict[str, Any], message: str
) -> None:
    docs = {k: {kk: vv for kk, vv in v.items() if vv is not None} for k, v in docs.items()}
    with pytest.raises(OAuthSetupError, match=message):
        await oauth(tmp_path, docs, []).prepare("u1", "app", MCP, "Bearer")


def refuse_internal(host: str) -> str | None:
    try:
        ip = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None
    return "url must not point at a loopback, private or link-local address" if not ip.is_global else None


async def test_metadata_urls_are_held_to_the_address_policy(tmp_path: Path) -> None:
    seen: list[str] = []
    inward = 'Bearer resource_metadata="http://169.254.169.254/latest/meta-data/iam"'
    with pytest.raises(OAuthSetupError, match="refused"):
        await oauth(tmp_path, {}, seen, refuse_host=refuse_internal).prepare("u1", "app", MCP, inward)
    assert seen == []  # not even one request inward

    docs = {
        PRM: {"resource": MCP, "authorization_servers": [ISSUER]},
        AS_META: as_meta(token_endpoint="https://10.0.0.7/token"),
    }
    with pytest.raises(OAuthSetupError, match="token endpoint is refused"):
        await oauth(tmp_path, docs, seen, refuse_host=refuse_internal).prepare("u1", "app", MCP, "Bearer")
    assert json.dumps(seen).count("10.0.0.7") == 0


async def test_a_registration_answer_too_large_is_a_clear_refusal(tmp_path: Path) -> None:
    """The registration endpoint is the server's to choose: its answer is read up to a bound (256 KB),
    and past it connecting fails with a reason, never an internal error."""
    docs = {PRM: {"resource": MCP, "authorization_servers": [ISSUER]}, AS_META: as_meta()}
    reads: list[int] = []

    async def endless() -> Any:
        for _ in range(10_000):  # 640 MB if read to the end
            reads.append(1)
            yield b" " * 65536

    def answer(request: httpx.Request) -> httpx.Response:
        url = str(request.url)
        if request.method == "POST":
            return httpx.Response(201, content=endless(), headers={"content-type": "application/json"})
        return httpx.Response(200, json=docs[url]) if url in docs else httpx.Response(404)

    app = oauth(tmp_path, docs, [])
    app.transport = httpx.MockTransport(answer)
    with pytest.raises(OAuthSetupError, match=r"client registration failed: the upstream response is larger"):
        await app.prepare("u1", "app", MCP, "Bearer")
    assert len(reads) <= 6  # stopped at the bound, not at the end
