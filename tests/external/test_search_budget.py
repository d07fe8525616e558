"""Search stays fast when a server hangs: one overall discovery budget per search (2 s), failures
remembered for a back-off period, retried in the background of a later request; the agent still
gets the seed's transient error when it calls the failed server's tool."""

from __future__ import annotations

import asyncio
import time

import pytest
from workbench.composition import Gateway

from tests.external.conftest import Agent, FakeClock
from tests.external.servers import Upstreams

pytestmark = pytest.mark.e2e

TRANSIENT = "Transient error: external server 'hang' did not answer within 3 s. Try again later."


async def timed_search(agent: Agent, query: str) -> tuple[list[str], float]:
    started = time.monotonic()
    out = await agent.call("search_tools", query=query, limit=50)
    return [t["name"] for t in out["tools"]], time.monotonic() - started


async def test_search_answers_within_3s_while_a_server_hangs(
    gw: Gateway, agent: Agent, ups: Upstreams, clock: FakeClock
) -> None:
    assert gw.external is not None
    me = agent.principal.user.id
    await gw.external.register(me, name="hang", url=ups.url("hang"), timeout_ms=3000)
    await agent.run("apps_register_server", name="plain", url=ups.url("plain"))
    hang = ups.recorders["hang"]

    names, took = await timed_search(agent, "echo text back")
    assert took < 3.0
    assert "plain_echo" in names  # the healthy server's tools, from what is known
    assert len(hang.seen) == 1  # the hanging discovery goes on in the background

    # Calling a tool of the hanging server: the seed's transient error once its timeout passes.
    started = time.monotonic()
    assert await agent.run("hang_anything") == {"error": TRANSIENT}
    assert time.monotonic() - started < 3.5
    assert len(hang.seen) == 1  # it joined the discovery already under way

    # Backing off: search skips it at once, and a call answers the remembered error without
    # traffic, saying that it is remembered (it did not wait another 3 s).
    names, took = await timed_search(agent, "echo text back")
    assert took < 0.5 and "plain_echo" in names
    started = time.monotonic()
    assert await agent.run("hang_anything") == {
        "error": "Transient error: external server 'hang' did not answer within 3 s (last tried 0 s ago, "
        "not asked again this time; retried in 30 s). Try again later."
    }
    assert time.monotonic() - started < 0.5
    assert len(hang.seen) == 1

    # After the back-off, a later search retries it in the background and still answers at once.
    clock.advance(31)
    names, took = await timed_search(agent, "echo text back")
    assert took < 0.5 and "plain_echo" in names
    for _ in range(100):
        if len(hang.seen) == 2:
            break
        await asyncio.sleep(0.02)
    assert len(hang.seen) == 2


async def test_a_server_that_recovers_is_back_after_the_background_retry(
    gw: Gateway, agent: Agent, ups: Upstreams, clock: FakeClock
) -> None:
    await agent.run("apps_register_server", name="odd", url=ups.url("odd"))
    assert gw.external is not None
    gw.external.clear_cache()
    ups.recorders["odd"].fail_next[:] = [503, 503]  # down: 5xx, retried once, then a failure
    names, _ = await timed_search(agent, "look something up")
    assert "odd_lookup" not in names
    out = await agent.run("odd_lookup", q="x")
    assert out == {
        "error": "External server 'odd' failed with HTTP 503 (retried once) (last tried 0 s ago, not asked "
        "again this time; retried in 30 s). Try again later."
    }

    clock.advance(31)  # back-off over; the server is healthy again
    names, _ = await timed_search(agent, "look something up")  # starts the retry in the background
    for _ in range(100):
        names, _ = await timed_search(agent, "look something up")
        if "odd_lookup" in names:
            break
        await asyncio.sleep(0.02)
    assert "odd_lookup" in names
    assert (await agent.run("odd_lookup", q="x"))["result"] == '{"got": {"q": "x"}}'


async def test_expired_entries_are_pruned_on_a_long_lived_instance(
    gw: Gateway, agent: Agent, ups: Upstreams, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    from workbench.external import service
    from workbench.external.client import McpSession, Unreachable

    monkeypatch.setattr(service, "_PRUNE_AT", 10)
    ext = gw.external
    assert ext is not None
    for i in range(20):  # other users' entries, long expired
        ext._cache[(f"u{i}", "x")] = service._Entry({}, McpSession(), clock() - 1)
        ext._failures[(f"f{i}", "x")] = service._Failure(Unreachable("x", ""), clock() - 1, (0.0, 0.0))
    ext._cache[("live", "x")] = service._Entry({}, McpSession(), clock() + 60)
    await agent.run("apps_register_server", name="plain", url=ups.url("plain"))
    assert set(ext._cache) == {("live", "x"), (agent.principal.user.id, "plain")}
    assert ext._failures == {}
