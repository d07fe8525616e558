"""Issue 12: dynamic client registration under abuse. /register is throttled per client address
and in all (counters in the store, so every instance counts against the same numbers), answers 429
in the RFC 7591 error shape with Retry-After, refuses past a cap on registered clients, and a
client that never completes a grant is removed after a while (default 24 h)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from workbench.composition import Gateway, build_gateway, build_registry
from workbench.identity.crypto import LocalKeyProvider
from workbench.runtime.local_app import create_local_app
from workbench.settings import Settings

from tests.oauth.conftest import AS, BASE, REDIRECT, Clock, make_as, pkce
from tests.support.aws import AwsEndpoint

CLIENT = {"client_name": "Agent", "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"}
KEY = os.urandom(32)


def gateway(clock: Clock, **settings: Any) -> Gateway:
    store = settings.pop("store", "memory")
    base = Settings(store=store, public_url=BASE, **settings)
    return build_gateway(
        base,
        registry=build_registry(plugins=False),
        key_provider=LocalKeyProvider.from_secret(KEY),
        clock=clock,
    )


async def register(gw: Gateway, address: str = "198.51.100.7", body: Any = None) -> httpx.Response:
    transport = httpx.ASGITransport(app=create_local_app(gw), client=(address, 40000))
    async with httpx.AsyncClient(transport=transport, base_url=BASE) as http:
        return await http.post("/register", json=CLIENT if body is None else body)


def assert_throttled(r: httpx.Response, window: int) -> None:
    assert r.status_code == 429
    body = r.json()
    assert set(body) == {"error", "error_description"} and body["error"] == "temporarily_unavailable"
    assert 1 <= int(r.headers["retry-after"]) <= window
    assert r.headers["cache-control"] == "no-store" and r.headers["access-control-allow-origin"] == "*"


async def test_per_address_limit_then_429_with_retry_after(tmp_path: Path) -> None:
    clock = Clock()
    gw = gateway(clock, data_dir=tmp_path, oauth_register_per_ip=3, oauth_register_window_seconds=600)
    assert [(await register(gw)).status_code for _ in range(3)] == [201, 201, 201]
    refused = await register(gw)
    assert_throttled(refused, 600)
    assert "this address" in refused.json()["error_description"]
    assert (await register(gw, "203.0.113.5")).status_code == 201  # someone else is not affected
    clock.offset += 600  # the next window
    assert (await register(gw)).status_code == 201


async def test_an_ipv6_caller_is_counted_by_its_64(tmp_path: Path) -> None:
    gw = gateway(Clock(), data_dir=tmp_path, oauth_register_per_ip=2)
    for host in ("2001:db8:1:2::1", "2001:db8:1:2:ffff::9"):
        assert (await register(gw, host)).status_code == 201
    assert (await register(gw, "2001:db8:1:2:abcd::77")).status_code == 429  # same /64
    assert (await register(gw, "2001:db8:1:3::1")).status_code == 201  # the next /64


async def test_a_throttled_request_is_refused_before_its_body_is_read(tmp_path: Path) -> None:
    gw = gateway(Clock(), data_dir=tmp_path, oauth_register_per_ip=1)
    assert (await register(gw)).status_code == 201
    pulled = 0

    async def body() -> AsyncIterator[bytes]:
        nonlocal pulled
        for _ in range(100):
            pulled += 1024
            yield b" " * 1024

    transport = httpx.ASGITransport(app=create_local_app(gw), client=("198.51.100.7", 1))
    async with httpx.AsyncClient(transport=transport, base_url=BASE) as http:
        r = await http.post("/register", content=body(), headers={"Content-Type": "application/json"})
    assert r.status_code == 429 and pulled == 0
    # malformed attempts count too: a flood of garbage cannot dodge the limit
    other = gateway(Clock(), data_dir=tmp_path / "b", oauth_register_per_ip=2)
    assert [(await register(other, body=[1])).status_code for _ in range(3)] == [400, 400, 429]


async def test_the_global_limit_is_shared_by_two_instances(tmp_path: Path) -> None:
    """Two gateways on one store (two processes on one SQLite file, or two Lambdas on one table)."""
    clock = Clock()
    settings = {
        "store": "sqlite",
        "data_dir": tmp_path,
        "oauth_register_global": 4,
        "oauth_register_per_ip": 0,
    }
    one, two = gateway(clock, **settings), gateway(clock, **settings)
    answers = []
    for i in range(6):
        answers.append((await register(one if i % 2 else two, f"198.51.100.{i}")).status_code)
    assert answers == [201, 201, 201, 201, 429, 429]
    refused = await register(one, "192.0.2.200")
    assert_throttled(refused, 600)
    assert "this address" not in refused.json()["error_description"]


@pytest.mark.e2e
async def test_the_limits_hold_across_instances_on_dynamodb(
    moto_endpoint: AwsEndpoint, tmp_path: Path
) -> None:
    clock = Clock()
    settings = moto_endpoint.fresh_tables(
        key_backend="local", data_dir=tmp_path, oauth_register_per_ip=2, oauth_register_global=3
    )

    def instance() -> Gateway:
        return build_gateway(
            settings,
            registry=build_registry(plugins=False),
            key_provider=LocalKeyProvider.from_secret(KEY),
            clock=clock,
        )

    one, two = instance(), instance()
    assert (await register(one, "198.51.100.1")).status_code == 201
    assert (await register(two, "198.51.100.1")).status_code == 201
    assert (await register(one, "198.51.100.1")).status_code == 429  # per address, counted on both
    assert (await register(two, "198.51.100.2")).status_code == 201
    assert (await register(one, "198.51.100.3")).status_code == 429  # global, counted on both
    assert one.stores.oauth_clients is not None and one.stores.oauth_clients.count(clock()) == 3


async def test_registration_is_capped(tmp_path: Path) -> None:
    clock = Clock()
    gw = gateway(clock, data_dir=tmp_path, oauth_max_clients=2, oauth_unused_client_seconds=3600)
    assert [(await register(gw, f"198.51.100.{i}")).status_code for i in range(2)] == [201, 201]
    full = await register(gw, "198.51.100.9")
    assert full.status_code == 429 and "maximum of 2 registered clients" in full.json()["error_description"]
    assert int(full.headers["retry-after"]) > 0
    clock.offset += 3600  # both expired unused: room again
    assert (await register(gw, "198.51.100.9")).status_code == 201
    assert gw.stores.oauth_clients is not None and gw.stores.oauth_clients.count(clock()) == 1


def test_a_client_that_never_completes_a_grant_is_removed(tmp_path: Path) -> None:
    server = make_as(tmp_path, oauth_unused_client_seconds=24 * 3600)
    with server.http:
        idle = server.register()["client_id"]
        used = server.register()["client_id"]
        server.tokens_for(used)  # a completed grant keeps the registration
        server.clock.offset += 24 * 3600 - 1
        assert authorize_status(server, idle) == 200  # still there a second before
        server.clock.offset += 1
        # the idle one is unknown everywhere now, the used one still works
        assert authorize_status(server, idle) == 400
        r = server.token(
            {"grant_type": "authorization_code", "code": "x", "code_verifier": "y" * 43, "client_id": idle}
        )
        assert (r.status_code, r.json()["error"]) == (401, "invalid_client")
        assert authorize_status(server, used) == 200
        server.tokens_for(used, cookie=server.session_for("ada@example.com")[1])
        assert server.gw.stores.oauth_clients is not None
        assert server.gw.stores.oauth_clients.get(idle, now=server.clock()) is None


def test_the_default_lifetime_of_an_unused_registration_is_24_hours(tmp_path: Path) -> None:
    assert Settings().oauth_unused_client_seconds == 86_400
    server = make_as(tmp_path)
    with server.http:
        client_id = server.register()["client_id"]
        stored = server.gw.stores.oauth_clients.get(client_id) if server.gw.stores.oauth_clients else None
        assert stored is not None and stored.expires_at is not None
        assert abs(stored.expires_at - (server.clock() + 86_400)) < 5


def test_limits_are_configurable_from_the_environment() -> None:
    s = Settings.from_env(
        {
            "WORKBENCH_OAUTH_REGISTER_PER_IP": "5",
            "WORKBENCH_OAUTH_REGISTER_GLOBAL": "50",
            "WORKBENCH_OAUTH_REGISTER_WINDOW_SECONDS": "60",
            "WORKBENCH_OAUTH_MAX_CLIENTS": "7",
            "WORKBENCH_OAUTH_UNUSED_CLIENT_SECONDS": "3600",
        }
    )
    assert (s.oauth_register_per_ip, s.oauth_register_global, s.oauth_register_window_seconds) == (5, 50, 60)
    assert (s.oauth_max_clients, s.oauth_unused_client_seconds) == (7, 3600)


def authorize_status(server: AS, client_id: str) -> int:
    """200: the consent page; 400: an error page (an unknown client). A fresh portal session each
    time, since the tests move the clock past a session's lifetime."""
    _, challenge = pkce()
    _, cookie = server.session_for("ada@example.com")
    r = server.authorize(
        {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": REDIRECT,
            "state": "s",
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "resource": BASE + "/mcp",
        },
        cookie=cookie,
    )
    return int(r.status_code)


@pytest.mark.parametrize("trusted", [(), ("10.9.9.9",)])
async def test_the_per_address_limit_ignores_a_forged_forwarded_for(tmp_path: Path, trusted: Any) -> None:
    """Served the way `workbench serve` serves it (uvicorn, loopback peer): X-Forwarded-For is not
    believed unless the operator names the proxy (WORKBENCH_TRUSTED_PROXIES); a loopback peer that
    is not that proxy cannot reset its count by sending a new address each time."""
    from workbench.runtime.uvicorn_server import server_options

    from tests.support.processes import free_port
    from tests.support.server_thread import start_server_thread

    gw = gateway(Clock(), data_dir=tmp_path, oauth_register_per_ip=2, trusted_proxies=trusted)
    port = free_port()
    server, thread = start_server_thread(
        create_local_app(gw), port, name="gateway", **server_options(gw.settings.trusted_proxies)
    )
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
            codes = [
                (
                    await http.post("/register", json=CLIENT, headers={"X-Forwarded-For": f"198.51.100.{i}"})
                ).status_code
                for i in range(4)
            ]
    finally:
        server.should_exit = True
        thread.join(10)
    assert codes == [201, 201, 429, 429]


def test_trusted_proxies_setting() -> None:
    env = {"WORKBENCH_TRUSTED_PROXIES": "10.0.0.1, 192.168.0.0/16"}
    assert Settings.from_env(env).trusted_proxies == ("10.0.0.1", "192.168.0.0/16")
    assert Settings.from_env({}).trusted_proxies == ()
    with pytest.raises(ValueError, match="WORKBENCH_TRUSTED_PROXIES"):
        Settings.from_env({"WORKBENCH_TRUSTED_PROXIES": "proxy.local"})
