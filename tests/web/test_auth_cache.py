"""Authentication cached per warm instance (issue 14): a bearer token resolved moments ago is not read
from the store again, for at most WORKBENCH_AUTH_CACHE_SECONDS (15 s by default, 30 s at most).

What a user relies on: a key revoked or rotated through this instance (portal, CLI) stops working at
once; a key is never refused because of an earlier failed lookup; an OAuth access token is never
accepted past its own expiry because of the cache.
"""

from __future__ import annotations

import base64
import json
import re
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from workbench.composition import Gateway
from workbench.identity.auth import AuthCache, Principal, _hash
from workbench.mcp.app import create_mcp_app
from workbench.rest.app import create_rest_app
from workbench.settings import Settings
from workbench.stores import ApiKeyRecord, User

from tests.support.clock import ManualClock as Clock
from tests.support.gateways import make_gateway
from tests.web.conftest import csrf_of

REVEALED = re.compile(r'id="revealed-key" tabindex="0">(wb_[^<]+)</code>')


class Counting:
    """Counts the calls made to a store."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            return attr(*args, **kwargs)

        return call


TOOLS_LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


async def _status(gw: Gateway, key: str) -> int:
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=create_mcp_app(gw)), base_url="http://gw"
    ) as c:
        r = await c.post("/mcp", json=TOOLS_LIST, headers={"Authorization": f"Bearer {key}"})
    return r.status_code


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def gw(tmp_path: Path, clock: Clock) -> Gateway:
    gw = make_gateway(tmp_path, auth_cache_seconds=15)
    gw.auth_cache.clock = clock
    return gw


async def test_a_warm_instance_reads_the_key_and_user_once_per_ttl(gw: Gateway, clock: Clock) -> None:
    user = gw.stores.users.get_or_create("ada@example.com")
    key = gw.auth.mint_key(user)
    keys = gw.auth.api_keys.keys = Counting(gw.auth.api_keys.keys)
    users = gw.auth.api_keys.users = Counting(gw.auth.api_keys.users)
    together = Counting(gw.stores)
    gw.auth.api_keys._read_together = together.read_together
    assert [await _status(gw, key) for _ in range(3)] == [200, 200, 200]
    assert (keys.calls, users.calls, together.calls) == (1, 1, 0)
    clock.now += 14.9
    assert await _status(gw, key) == 200 and keys.calls == 1
    clock.now += 0.2  # past the TTL: the key and its remembered holder are read again, in one read
    assert await _status(gw, key) == 200 and (keys.calls, users.calls, together.calls) == (1, 1, 1)


async def test_a_revoked_key_stops_working_at_once_on_this_instance(gw: Gateway) -> None:
    user = gw.stores.users.get_or_create("ada@example.com")
    key, other = gw.auth.mint_key(user), gw.auth.mint_key(user)
    assert await _status(gw, key) == 200 and await _status(gw, other) == 200  # both cached
    assert gw.stores.api_keys.revoke(user.id, key.split("_")[1])  # what the portal and the CLI call
    assert await _status(gw, key) == 401
    assert await _status(gw, other) == 200  # the user's other key is untouched
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=create_rest_app(gw)), base_url="http://gw"
    ) as c:
        r = await c.post("/rest/jots", json={"tool": "list_jots"}, headers={"Authorization": f"Bearer {key}"})
    assert r.status_code == 401


async def test_revoke_and_rotate_in_the_portal_take_effect_at_once(tmp_path: Path) -> None:
    from starlette.testclient import TestClient
    from workbench.web.app import create_web_app

    gw = make_gateway(tmp_path, dev_login=True, auth_cache_seconds=30)
    browser = TestClient(create_web_app(gw), base_url="https://testserver", follow_redirects=False)
    browser.post("/api/auth/dev-login", data={"email": "ada@example.com", "next": "/portal/integrations"})
    browser.post("/portal/api-keys", data={"csrf": csrf_of(browser.get("/portal/api-keys").text)})
    first = REVEALED.search(browser.get("/portal/api-keys").text)
    assert first is not None
    key = first.group(1)
    assert await _status(gw, key) == 200  # now in this instance's cache

    confirm = browser.get(f"/portal/api-keys/{key.split('_')[1]}/rotate")
    # The page says how long other instances may take.
    assert "may still accept it on the others for up to 30 seconds" in confirm.text
    rotated = browser.post(
        f"/portal/api-keys/{key.split('_')[1]}/rotate", data={"csrf": csrf_of(confirm.text)}
    )
    second = REVEALED.search(browser.get(rotated.headers["location"].split("#")[0]).text)
    assert second is not None
    assert await _status(gw, key) == 401
    assert await _status(gw, second.group(1)) == 200

    new_id = second.group(1).split("_")[1]
    confirm = browser.get(f"/portal/api-keys/{new_id}/revoke")
    browser.post(f"/portal/api-keys/{new_id}/revoke", data={"csrf": csrf_of(confirm.text)})
    assert await _status(gw, second.group(1)) == 401


async def test_a_failed_lookup_is_never_cached(gw: Gateway) -> None:
    """A key that did not exist a moment ago (written by another instance just now) works at once."""
    user = gw.stores.users.get_or_create("ada@example.com")
    key_id, secret = "Abcdefghjkmn", "s" * 43
    key = f"wb_{key_id}_{secret}"
    assert await _status(gw, key) == 401
    gw.stores.api_keys.add(ApiKeyRecord(key_id, user.id, _hash(secret), time.time()))
    assert await _status(gw, key) == 200


async def test_a_store_failure_is_not_remembered(gw: Gateway) -> None:
    user = gw.stores.users.get_or_create("ada@example.com")
    key = gw.auth.mint_key(user)
    real = gw.auth.api_keys.keys

    class Down:
        def get(self, key_id: str) -> None:
            raise OSError("store unreachable")

    gw.auth.api_keys.keys = Down()  # type: ignore[assignment]
    with pytest.raises(OSError):
        await gw.auth.authenticate(key)
    gw.auth.api_keys.keys = real
    assert (await gw.auth.authenticate(key)).user.id == user.id


def test_a_lookup_that_raced_a_revocation_is_not_stored() -> None:
    cache = AuthCache(15)
    principal = Principal(User("usr_a", "a@example.com", 0.0), "api_key")
    key = "wb_Abcdefghjkmn_" + "s" * 43
    started = cache.generation  # a resolve begins, reads the (not yet revoked) key...
    cache.forget_key("Abcdefghjkmn")  # ...the key is revoked meanwhile...
    cache.put(key, principal, started)  # ...and the resolve's answer arrives
    assert cache.get(key) is None
    cache.put(key, principal, cache.generation)
    assert cache.get(key) == principal


def _jwt(exp: float) -> str:
    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'ES256'})}.{part({'sub': 'usr_a', 'exp': exp})}.c2ln"


def test_an_access_token_is_never_cached_past_its_expiry() -> None:
    clock = Clock()
    cache = AuthCache(15, clock=clock)
    principal = Principal(User("usr_a", "a@example.com", 0.0), "oauth", client_id="cl")
    token = _jwt(clock.now + 5)
    cache.put(token, principal, cache.generation)
    assert cache.get(token) == principal
    clock.now += 5
    assert cache.get(token) is None  # its exp, well before the cache's 15 s
    expired = _jwt(clock.now - 1)
    cache.put(expired, principal, cache.generation)
    assert cache.get(expired) is None


async def test_an_oauth_access_token_is_verified_once_per_ttl(gw: Gateway, clock: Clock) -> None:
    user = gw.stores.users.get_or_create("ada@example.com")
    oauth = gw.oauth
    assert oauth is not None
    token = gw.tokens.mint(
        {"sub": user.id, "email": user.email, "client_id": "cl_1", "scope": ""},
        audience=oauth.audience,
        ttl_seconds=900,
    )
    verified: list[str] = []
    tokens = gw.tokens  # what checks an access token's signature (identity.auth.AccessTokenVerifier)
    real = tokens.verify

    def counting(raw: str, **kw: Any) -> dict[str, Any]:
        verified.append(raw)
        return real(raw, **kw)

    tokens.verify = counting  # type: ignore[method-assign]
    assert [await _status(gw, token) for _ in range(3)] == [200, 200, 200]
    assert len(verified) == 1
    clock.now += 16
    assert await _status(gw, token) == 200 and len(verified) == 2


def test_the_setting_is_bounded() -> None:
    assert Settings.from_env({"WORKBENCH_AUTH_CACHE_SECONDS": "300"}).auth_cache_seconds == 30
    assert Settings.from_env({"WORKBENCH_AUTH_CACHE_SECONDS": "-1"}).auth_cache_seconds == 0
    assert Settings.from_env({}).auth_cache_seconds == 15
    assert AuthCache(300).ttl == 30
    off = AuthCache(0)
    off.put("wb_Abcdefghjkmn_" + "s" * 43, Principal(User("u", "e", 0.0), "api_key"), off.generation)
    assert off.get("wb_Abcdefghjkmn_" + "s" * 43) is None
