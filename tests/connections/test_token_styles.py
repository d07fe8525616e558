"""Token requests follow each manifest's declared style, against a loopback provider that enforces it.

Each case takes the style of a real plugin manifest (its URLs pointed at the loopback provider):
form or JSON body, client secret in the body or as HTTP Basic, extra headers, PKCE or none. The
whole code flow runs over real HTTP (consent URL -> /authorize -> code -> exchange -> refresh), and
the same provider refuses a manifest that declares any other style, so a passing case proves the
style is the one the provider insists on.
"""

from __future__ import annotations

import dataclasses
import secrets
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from workbench.connections.provider_oauth import ProviderError, ProviderOAuth, pkce_verifier
from workbench.manifest import Manifest, OAuth2Auth
from workbench.settings import Settings

from tests.connections.loopback_provider import CLIENT_ID, CLIENT_SECRET, Style, loopback_provider


def _plugin(name: str) -> Manifest:
    from workbench.composition import build_registry

    manifest = build_registry().manifest(name)
    assert manifest is not None
    return manifest


def _at(manifest: Manifest, provider_url: str, **auth_changes: Any) -> Manifest:
    """The manifest with its OAuth endpoints on the loopback provider (style fields unchanged)."""
    assert isinstance(manifest.auth, OAuth2Auth)
    auth = dataclasses.replace(
        manifest.auth,
        authorize_url=f"{provider_url}/authorize",
        token_url=f"{provider_url}/token",
        login_hosts=None,
        **auth_changes,
    )
    return dataclasses.replace(manifest, auth=auth)


def _oauth(tmp_path: Path, manifest: Manifest) -> ProviderOAuth:
    settings = Settings(store="memory", data_dir=tmp_path, public_url="http://127.0.0.1:8787")
    stem = manifest.name.upper().replace("-", "_")
    object.__setattr__(
        settings, "plugin_env", {f"{stem}_CLIENT_ID": CLIENT_ID, f"{stem}_CLIENT_SECRET": CLIENT_SECRET}
    )
    return ProviderOAuth(settings)  # real HTTP to the loopback provider


async def _code_flow(oauth: ProviderOAuth, manifest: Manifest) -> Any:
    verifier = pkce_verifier()
    url = oauth.consent_url(manifest, state=secrets.token_urlsafe(8), verifier=verifier)
    async with httpx.AsyncClient() as http:
        answer = await http.get(url)
    assert answer.status_code == 302
    code = parse_qs(urlsplit(answer.headers["location"]).query)["code"][0]
    return await oauth.exchange_code(manifest, code=code, verifier=verifier)


def _style_of(manifest: Manifest) -> Style:
    auth = manifest.auth
    assert isinstance(auth, OAuth2Auth)
    return Style(
        body=auth.token_body, client_auth=auth.token_auth, headers=auth.token_headers, pkce=auth.pkce
    )


# (plugin whose declared style is used, what that style is): one per distinct style in the catalog.
CASES = [
    ("github", Style("form", "client_secret_post")),
    ("airtable", Style("form", "client_secret_basic")),
    ("notion", Style("json", "client_secret_basic", (("Notion-Version", "2025-09-03"),), pkce=False)),
    # Salesforce: no expires_in, and the org's API host in the answer.
    (
        "salesforce",
        Style(
            "form",
            "client_secret_post",
            expires_in=None,
            extra=(("instance_url", "https://acme.my.salesforce.com"),),
        ),
    ),
]


@pytest.mark.parametrize(("plugin", "style"), CASES, ids=[c[0] for c in CASES])
async def test_each_declared_style_passes_the_provider_that_enforces_it(
    plugin: str, style: Style, tmp_path: Path
) -> None:
    real = _plugin(plugin)
    declared = _style_of(real)  # the manifest declares what the provider documents
    assert (declared.body, declared.client_auth, declared.headers, declared.pkce) == (
        style.body,
        style.client_auth,
        style.headers,
        style.pkce,
    )
    with loopback_provider(style) as provider:
        manifest = _at(real, provider.url)
        oauth = _oauth(tmp_path, manifest)
        tokens = await _code_flow(oauth, manifest)
        assert tokens.credential["access_token"].startswith("at-")
        again = await oauth.refresh(manifest, tokens.credential["refresh_token"])
        assert again.credential["access_token"] != tokens.credential["access_token"]
        assert provider.refusals == []
        assert (provider.stats["code_grants"], provider.stats["refresh_grants"]) == (1, 1)


WRONG = [
    ("form body to a JSON endpoint", {"token_body": "form"}, "expected a JSON body"),
    (
        "secret in the body instead of Basic",
        {"token_auth": "client_secret_post"},
        "client_secret in the body",
    ),
    ("without the version header", {"token_headers": ()}, "missing header Notion-Version"),
    ("a PKCE verifier it does not know", {"pkce": True}, "unknown fields ['code_verifier']"),
]


@pytest.mark.parametrize(("what", "change", "reason"), WRONG, ids=[w[0] for w in WRONG])
async def test_the_notion_style_provider_refuses_any_other_style(
    what: str, change: dict[str, Any], reason: str, tmp_path: Path
) -> None:
    notion = _plugin("notion")
    with loopback_provider(_style_of(notion)) as provider:
        manifest = _at(notion, provider.url, **change)
        with pytest.raises(ProviderError) as refused:
            await _code_flow(_oauth(tmp_path, manifest), manifest)
        assert refused.value.permanent
        assert len(provider.refusals) == 1 and reason in provider.refusals[0]
        assert provider.stats["code_grants"] == 0


@pytest.mark.parametrize(
    ("style", "declared", "reason"),
    [
        (
            Style("form", "client_secret_basic"),
            {"token_auth": "client_secret_post"},
            "client_secret in the body",
        ),
        (Style("form", "client_secret_post"), {"token_auth": "client_secret_basic"}, "Authorization header"),
        (Style("form", "client_secret_post"), {"token_body": "json"}, "expected a form body"),
        (Style("form", "client_secret_post"), {"pkce": False}, "PKCE verification failed"),
    ],
    ids=["basic-vs-post", "post-vs-basic", "form-vs-json", "pkce-required"],
)
async def test_form_style_providers_refuse_a_mismatched_manifest(
    style: Style, declared: dict[str, Any], reason: str, tmp_path: Path
) -> None:
    with loopback_provider(style) as provider:
        manifest = _at(_plugin("github"), provider.url, **declared)
        with pytest.raises(ProviderError):
            await _code_flow(_oauth(tmp_path, manifest), manifest)
        assert len(provider.refusals) == 1 and reason in provider.refusals[0], provider.refusals


async def test_a_public_client_with_basic_style_identifies_itself_in_the_body(tmp_path: Path) -> None:
    """No secret configured (PKCE-only client): the client id goes in the body, no Basic header."""
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, json={"access_token": "at", "token_type": "bearer"})

    manifest = _plugin("airtable")
    settings = Settings(store="memory", data_dir=tmp_path, public_url="http://127.0.0.1:8787")
    object.__setattr__(settings, "plugin_env", {"AIRTABLE_CLIENT_ID": "public-id"})
    oauth = ProviderOAuth(settings, transport=httpx.MockTransport(handler))
    await oauth.exchange_code(manifest, code="c", verifier="v" * 43)
    assert "authorization" not in sent[0].headers
    form = parse_qs(sent[0].content.decode())
    assert form["client_id"] == ["public-id"] and "client_secret" not in form
    assert form["code_verifier"] == ["v" * 43]
