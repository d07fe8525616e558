"""The meta-tools' own shapes (seed 001): whoami, list_integrations, connect / get_auth_url,
wait_for_connection — in-process, with an injectable clock and sleep."""

from __future__ import annotations

from pathlib import Path

import pytest
from workbench.composition import Gateway
from workbench.engine.meta import MetaTools
from workbench.identity.auth import Principal

from tests.support.demo_plugins import demo_registry
from tests.support.gateways import make_gateway, principal_for


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def gw(tmp_path: Path, clock: Clock) -> Gateway:
    gateway = make_gateway(
        tmp_path,
        registry=demo_registry(),
        wait_block_seconds=20,
        plugin_env={"DEMO_CLIENT_ID": "demo-client"},
    )
    gateway.connections.flow.clock = clock
    gateway.connections.flow.sleep = clock.sleep
    return gateway


@pytest.fixture
def me(gw: Gateway) -> Principal:
    return principal_for(gw)


async def call(gw: Gateway, me: Principal, name: str, **args: object) -> dict:
    out = await MetaTools(gw).call(name, me, dict(args))
    assert isinstance(out, dict)
    return out


async def test_whoami_is_identity_only(gw: Gateway, me: Principal) -> None:
    assert await call(gw, me, "whoami") == {
        "id": me.user.id,
        "email": "ada@example.com",
        "grant": {"access": "full", "integrations": "all", "deniedTools": []},
    }


async def test_whoami_for_a_vanished_user(gw: Gateway) -> None:
    from workbench.stores import User

    ghost = Principal(User("usr_gone", "gone@example.com", 0.0), "api_key")
    assert await call(gw, ghost, "whoami") == {"error": "User not found"}


async def test_list_integrations_is_lean_and_per_auth_type(gw: Gateway, me: Principal) -> None:
    out = await call(gw, me, "list_integrations")
    rows = {r["name"]: r for r in out["integrations"]}
    assert all(set(r) == {"name", "version", "connected"} for r in out["integrations"])
    assert rows["demo"] == {"name": "demo", "version": "2.0.0", "connected": False}  # oauth2, no token
    assert rows["free"]["connected"] is True  # auth none
    gw.credentials.save(me.user.id, "demo", {"access_token": "t"})
    rows = {r["name"]: r for r in (await call(gw, me, "list_integrations"))["integrations"]}
    assert rows["demo"]["connected"] is True  # "a stored token exists"
    other = principal_for(gw, "bob@example.com")
    rows = {r["name"]: r for r in (await call(gw, other, "list_integrations"))["integrations"]}
    assert rows["demo"]["connected"] is False


async def test_connect_mints_a_workbench_link_and_contacts_no_provider(gw: Gateway, me: Principal) -> None:
    out = await call(gw, me, "connect", integration="demo")
    assert set(out) == {"connectionId", "type", "url"}
    assert out["type"] == "oauth2"
    assert out["url"] == f"http://127.0.0.1:8787/connect/{out['connectionId']}"
    pending = gw.stores.pending.get(out["connectionId"], now=gw.connections.flow.clock())
    assert pending is not None and pending.user_id == me.user.id and pending.status == "PENDING"
    assert pending.expires_at - pending.created_at == 600  # CONNECT_TTL_SECONDS default


async def test_get_auth_url_is_the_same_handler(gw: Gateway, me: Principal) -> None:
    out = await call(gw, me, "get_auth_url", integration="demo")
    assert set(out) == {"connectionId", "type", "url"} and out["type"] == "oauth2"
    assert await call(gw, me, "get_auth_url", integration="nope") == await call(
        gw, me, "connect", integration="nope"
    )


async def test_connect_refuses_what_it_cannot_connect(gw: Gateway, me: Principal) -> None:
    assert (await call(gw, me, "connect", integration="nope")) == {"error": "Unknown integration: nope"}
    assert "needs no connection" in (await call(gw, me, "connect", integration="free"))["error"]


async def test_wait_reports_connected(gw: Gateway, me: Principal) -> None:
    link = await call(gw, me, "connect", integration="demo")
    gw.stores.pending.mark_connected(link["connectionId"])
    assert await call(gw, me, "wait_for_connection", connectionId=link["connectionId"]) == {
        "status": "CONNECTED"
    }


async def test_wait_polls_once_a_second_and_hands_back_before_the_platform_limit(
    gw: Gateway, me: Principal, clock: Clock
) -> None:
    link = await call(gw, me, "connect", integration="demo")
    out = await call(gw, me, "wait_for_connection", connectionId=link["connectionId"], timeoutSec=600)
    assert out["status"] == "PENDING" and "Call wait_for_connection again" in out["message"]
    assert clock.sleeps == [1.0] * 20  # one poll per second, at most 20 s per call
    assert gw.stores.pending.get(link["connectionId"], now=clock()) is not None  # not reaped


async def test_wait_times_out_at_the_agents_deadline_and_reaps(
    gw: Gateway, me: Principal, clock: Clock
) -> None:
    link = await call(gw, me, "connect", integration="demo")
    out = await call(gw, me, "wait_for_connection", connectionId=link["connectionId"], timeoutSec=5)
    assert out == {"status": "TIMEOUT"}
    assert gw.stores.pending.get(link["connectionId"], now=clock()) is None  # reaped before answering
    assert await call(gw, me, "wait_for_connection", connectionId=link["connectionId"]) == {
        "error": "Unknown connectionId"
    }


async def test_wait_reports_expired_links(gw: Gateway, me: Principal, clock: Clock) -> None:
    link = await call(gw, me, "connect", integration="demo")
    clock.now += 601
    assert await call(gw, me, "wait_for_connection", connectionId=link["connectionId"], timeoutSec=3600) == {
        "status": "EXPIRED"
    }


async def test_no_existence_oracle_for_connection_ids(gw: Gateway, me: Principal) -> None:
    link = await call(gw, me, "connect", integration="demo")
    bob = principal_for(gw, "bob@example.com")
    theirs = await call(gw, bob, "wait_for_connection", connectionId=link["connectionId"])
    unknown = await call(gw, bob, "wait_for_connection", connectionId="conn_does_not_exist")
    assert theirs == unknown == {"error": "Unknown connectionId"}
    # and bob's probe did not disturb alice's pending record
    gw.stores.pending.mark_connected(link["connectionId"])
    assert await call(gw, me, "wait_for_connection", connectionId=link["connectionId"]) == {
        "status": "CONNECTED"
    }
