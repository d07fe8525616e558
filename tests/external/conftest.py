"""Fixtures: the SDK-built upstream servers (once per session) and a gateway with a fake clock."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from workbench.composition import Gateway
from workbench.engine.meta import MetaTools
from workbench.identity.auth import Principal

from tests.external.servers import Upstreams, start_upstreams
from tests.support.demo_plugins import demo_registry, demo_upstream
from tests.support.gateways import make_gateway, principal_for


class FakeClock:
    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture(scope="session")
def upstreams_session() -> Iterator[Upstreams]:
    ups, server, thread = start_upstreams()
    try:
        yield ups
    finally:
        ups.hang.release.set()
        server.should_exit = True
        thread.join(10)


@pytest.fixture
def ups(upstreams_session: Upstreams) -> Upstreams:
    upstreams_session.reset()
    return upstreams_session


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def plugin_upstream() -> list[httpx.Request]:
    return []  # requests the demo plugin's upstream (httpx.MockTransport) received


@pytest.fixture
def gw(
    tmp_path: Path, clock: FakeClock, sleeps: list[float], plugin_upstream: list[httpx.Request]
) -> Gateway:
    # Built-ins plus the small demo plugins, so plugin-collision checks do not depend on the catalog.
    gateway = make_gateway(
        tmp_path,
        registry=demo_registry(),
        transport=demo_upstream(plugin_upstream),
        egress_allow="loopback",  # the test's MCP servers listen on loopback
    )
    assert gateway.external is not None
    gateway.external.clock = clock  # the discovery cache's clock, injected

    async def no_wait(seconds: float) -> None:
        sleeps.append(seconds)  # the 5xx backoff, recorded instead of slept

    gateway.external.client.sleep = no_wait
    return gateway


@pytest.fixture
def me(gw: Gateway) -> Principal:
    return principal_for(gw, "ada@example.com")


@pytest.fixture
def other(gw: Gateway) -> Principal:
    return principal_for(gw, "bob@example.com")


class Agent:
    """Calls meta-tools the way an MCP client would, for one principal."""

    def __init__(self, gw: Gateway, principal: Principal) -> None:
        self.meta = MetaTools(gw)
        self.principal = principal

    async def call(self, name: str, **args: Any) -> Any:
        return await self.meta.call(name, self.principal, args)

    async def run(self, tool: str, **args: Any) -> dict[str, Any]:
        out = await self.call("execute_tools", executions=[{"tool": tool, "args": args}])
        return dict(out["results"][0])

    async def search(self, query: str, limit: int = 50) -> list[str]:
        out = await self.call("search_tools", query=query, limit=limit)
        return [t["name"] for t in out["tools"]]


@pytest.fixture
def agent(gw: Gateway, me: Principal) -> Agent:
    return Agent(gw, me)


@pytest.fixture
def bob(gw: Gateway, other: Principal) -> Agent:
    return Agent(gw, other)
