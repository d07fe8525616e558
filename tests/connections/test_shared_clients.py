"""Token requests that overlap in one process never break each other (issue 29, item 1).

The provider token client, the SSO client and every other shared HTTP client are used by many
requests at once; one request finishing must not close the pool the others are still reading from
(it did: `async with httpx.AsyncClient(transport=<the shared pool>)` closed it, the others failed
with ReadError after the provider had rotated their refresh tokens, and their users had to
reconnect). Here 20 refreshes of 20 users, 30 provider callbacks and 20 SSO exchanges run at the
same moment on one gateway against one loopback provider whose token endpoint is slow enough for
all 60 to be in flight together; every one must succeed, with no refresh token replayed.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
from workbench.composition import Gateway, build_registry
from workbench.connections.provider_oauth import pkce_verifier
from workbench.web.app import create_web_app
from workbench.web.oidc import OidcClient

from tests.connections.loopback_provider import CLIENT_ID, CLIENT_SECRET, Style, loopback_provider
from tests.connections.plugins.testoauth import make_manifest
from tests.support.gateways import make_gateway

N = 20
CALLBACKS = 30  # the issue lost 2-4 of 30 authorization codes on one instance


def _gateway(tmp_path: Path, provider_url: str) -> Gateway:
    manifest = make_manifest(provider_url)
    auth = dataclasses.replace(
        manifest.auth,  # type: ignore[arg-type]
        authorize_url=f"{provider_url}/authorize",
        token_url=f"{provider_url}/token",
    )
    registry = build_registry(plugins=False)
    registry.add(dataclasses.replace(manifest, auth=auth), list)
    return make_gateway(
        tmp_path,
        registry=registry,
        egress_allow="loopback",
        plugin_env={"TESTOAUTH_CLIENT_ID": CLIENT_ID, "TESTOAUTH_CLIENT_SECRET": CLIENT_SECRET},
    )


async def _code(provider: httpx.AsyncClient, url: str) -> str:
    answer = await provider.get(url)
    assert answer.status_code == 302, answer.text
    return parse_qs(urlsplit(answer.headers["location"]).query)["code"][0]


async def test_overlapping_refreshes_callbacks_and_sso_exchanges_all_succeed(tmp_path: Path) -> None:
    with loopback_provider(Style(), delay=0.3) as provider:
        gw = _gateway(tmp_path, provider.url)
        manifest = gw.registry.manifest("testoauth")
        assert manifest is not None
        web = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=create_web_app(gw)), base_url="https://testserver"
        )
        browser = httpx.AsyncClient(follow_redirects=False)  # the person's browser at the provider
        # The portal's SSO client, on the same shared transport as the provider token client.
        sso = OidcClient(
            provider.url,
            CLIENT_ID,
            CLIENT_SECRET,
            "http://127.0.0.1:8787/api/auth/oidc/callback",
            transport=gw.provider_oauth.transport,
        )

        # 20 users whose access tokens have expired, each holding a live, rotating refresh token.
        expired = {}
        for i in range(N):
            user = gw.stores.users.get_or_create(f"refresh{i}@example.com")
            issued = provider.token_response()
            gw.credentials.save(user.id, "testoauth", issued, expires_at=time.time() - 1)
            expired[user.id] = issued["refresh_token"]

        async def refresh(user_id: str) -> str:
            conn = await asyncio.to_thread(gw.stores.connections.get, user_id, "testoauth")
            cred = await gw.credentials.access(manifest, user_id, conn)
            return str(cred["refresh_token"])

        async def callback(i: int) -> httpx.Response:
            user = gw.stores.users.get_or_create(f"connect{i}@example.com")
            cookie = {"cookie": f"__Host-wb_session={gw.sessions.issue(user.id)}"}
            link = gw.connections.start(user, "testoauth")["connectionId"]
            redeemed = await web.post(
                "/api/connect/redeem",
                content=json.dumps({"token": link}),
                headers={"content-type": "application/json", **cookie},
            )
            consent = redeemed.json()["url"]
            code = await _code(browser, consent)
            state = parse_qs(urlsplit(consent).query)["state"][0]
            return await web.get(
                f"/api/auth/plugin/testoauth/callback?code={code}&state={state}", headers=cookie
            )

        async def sign_in(i: int) -> str:
            verifier = pkce_verifier()
            url = await sso.authorize_url(state=f"s{i}", verifier=verifier)
            code = await _code(browser, f"{url}&login_hint=sso{i}%40example.com")
            return (await sso.finish(code=code, verifier=verifier)).email

        await sso.metadata()  # discovery once, so the 20 exchanges start together
        results = await asyncio.gather(
            *(refresh(user_id) for user_id in expired),
            *(callback(i) for i in range(CALLBACKS)),
            *(sign_in(i) for i in range(N)),
            return_exceptions=True,
        )
        await web.aclose()
        await browser.aclose()

    failures = [(i, repr(r)) for i, r in enumerate(results) if isinstance(r, BaseException)]
    assert failures == []
    rotated, callbacks, emails = results[:N], results[N : N + CALLBACKS], results[N + CALLBACKS :]
    # Every refresh reached the provider once, with the token it had issued; none was replayed.
    assert provider.stats["refresh_grants"] == N
    assert provider.stats["refused"] == 0, provider.refusals
    assert set(rotated).isdisjoint(expired.values())
    for user_id, new_refresh in zip(expired, rotated, strict=True):
        stored = gw.stores.connections.get(user_id, "testoauth")
        assert stored is not None and stored.status == "connected"
        assert gw.credentials.load(stored)["refresh_token"] == new_refresh
    # Every callback stored its user's connection.
    assert [(r.status_code, r.headers["location"]) for r in callbacks] == [  # type: ignore[union-attr]
        (303, "/portal/integrations?connected=testoauth")
    ] * CALLBACKS
    for i in range(CALLBACKS):
        user = gw.stores.users.by_email(f"connect{i}@example.com")
        assert user is not None and gw.stores.connections.get(user.id, "testoauth") is not None
    # Every SSO exchange signed its own person in.
    assert emails == [f"sso{i}@example.com" for i in range(N)]
    assert provider.stats["code_grants"] == CALLBACKS + N
