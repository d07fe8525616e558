"""Hostile OpenAPI documents: YAML alias bombs, recursive anchors, `$ref` fan-out. Each is refused
with a clear error, quickly, and never holds up the event loop for another caller."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from workbench.guard import yamltext

from tests.external.conftest import Agent
from tests.external.servers import Upstreams

pytestmark = pytest.mark.e2e

# On the loop, these documents held it for a minute; off it, the loop keeps ticking. The bound is
# loose because the machine running the tests is shared (the 50 ms target is measured by bench/).
STALL = 0.5


def bomb(levels: int = 9, fan: int = 9) -> str:
    """The classic 'billion laughs': each level is `fan` aliases of the one before."""
    lines = ['a0: &a0 ["lol"]']
    for i in range(1, levels):
        refs = ",".join(f"*a{i - 1}" for _ in range(fan))
        lines.append(f"a{i}: &a{i} [{refs}]")
    return "openapi: 3.0.0\n" + "\n".join(lines) + "\npaths: {/x: {get: {operationId: x}}}\n"


def test_the_bomb_is_small() -> None:
    assert len(bomb()) < 700


def test_alias_expansion_is_refused_before_it_is_built() -> None:
    started = time.perf_counter()
    with pytest.raises(yamltext.YamlRejected, match="expands to more than"):
        yamltext.load(bomb())
    assert time.perf_counter() - started < 1.0


def test_alias_count_depth_and_recursion_are_refused() -> None:
    many = "a: &a x\nb: [" + ",".join(["*a"] * 1001) + "]\n"
    with pytest.raises(yamltext.YamlRejected, match="more than 1000 YAML aliases"):
        yamltext.load(many)
    deep = "a: &a " + "[" * 100 + "]" * 100 + "\nb: " + "[" * 40 + "*a" + "]" * 40 + "\n"
    with pytest.raises(yamltext.YamlRejected, match="nested deeper than 128"):
        yamltext.load(deep)
    with pytest.raises(yamltext.YamlRejected, match="recursive"):
        yamltext.load("a: &a [1, *a]\n")
    with pytest.raises(yamltext.YamlRejected, match="not valid YAML"):
        yamltext.load("a: [\n")


def test_ordinary_yaml_with_aliases_still_loads() -> None:
    value = yamltext.load("base: &b {type: string}\nx: *b\ny: {<<: *b, format: date}\n")
    assert value == {
        "base": {"type": "string"},
        "x": {"type": "string"},
        "y": {"type": "string", "format": "date"},
    }


async def _loop_stalls(work: Any) -> tuple[Any, float]:
    """Run `work` while measuring the longest gap between 5 ms ticks of the event loop."""
    worst = 0.0
    done = False

    async def tick() -> None:
        nonlocal worst
        last = time.perf_counter()
        while not done:
            await asyncio.sleep(0.005)
            now = time.perf_counter()
            worst = max(worst, now - last - 0.005)
            last = now

    ticker = asyncio.create_task(tick())
    try:
        result = await work
    finally:
        done = True
        await ticker
    return result, worst


async def test_register_refuses_the_bomb_without_stalling_the_loop(agent: Agent, ups: Upstreams) -> None:
    out, stall = await _loop_stalls(
        agent.run("apps_register_openapi", name="bomb", document=bomb(), baseUrl=ups.base)
    )
    assert "expands to more than 1000000 nodes" in out["error"]
    assert stall < STALL, f"the event loop stalled {stall * 1000:.0f} ms"
    assert (await agent.run("apps_list"))["result"]["apps"] == []


async def test_ref_fan_out_is_refused_per_operation(agent: Agent, ups: Upstreams) -> None:
    """Schemas that each reference the next one ten times: 10**12 nodes once inlined."""
    schemas: dict[str, Any] = {"s0": {"type": "string"}}
    for i in range(1, 13):
        schemas[f"s{i}"] = {
            "type": "object",
            "properties": {f"p{j}": {"$ref": f"#/components/schemas/s{i - 1}"} for j in range(10)},
        }
    body = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/s12"}}}}
    doc = {
        "openapi": "3.0.3",
        "components": {"schemas": schemas},
        "paths": {
            "/big": {"post": {"operationId": "big", "requestBody": body}},
            "/ok": {"get": {"operationId": "ok"}},
        },
    }
    out, stall = await _loop_stalls(
        agent.run("apps_register_openapi", name="fan", document=doc, baseUrl=ups.base)
    )
    result = out["result"]
    assert result["operations"] == 1
    assert result["dropped"] == [{"operation": "big", "reason": "its input schema is too large"}]
    assert stall < STALL, f"the event loop stalled {stall * 1000:.0f} ms"
