"""Each meta-tool is one record (workbench.engine.meta.META_TOOLS): tools/list, dispatch, the pool
a handler runs in and docs/meta-tools.md all come from it."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from workbench.composition import Gateway
from workbench.engine import meta
from workbench.engine.meta import META_TOOLS, MetaTool, MetaTools, listed_tools, meta_tools_markdown
from workbench.errors import InvalidInput
from workbench.identity.auth import Principal

from tests.support.gateways import make_gateway

DOC = Path(__file__).resolve().parents[2] / "docs" / "meta-tools.md"
SEED_NAMES = [
    "search_tools",
    "get_tool_schema",
    "execute_tools",
    "whoami",
    "list_integrations",
    "connect",
    "wait_for_connection",
    "get_auth_url",
    "curl_session",
]


def test_the_nine_records_in_the_seed_order() -> None:
    assert [t.name for t in META_TOOLS] == SEED_NAMES


def test_tools_list_is_derived_from_the_records() -> None:
    newest = listed_tools(annotations=True, structured=True)
    oldest = listed_tools(annotations=False, structured=False)
    for tool, new, old in zip(META_TOOLS, newest, oldest, strict=True):
        assert old == {"name": tool.name, "description": tool.description, "inputSchema": tool.input_schema}
        assert new["title"] == tool.title == new["annotations"]["title"]
        assert new["annotations"] == {"title": tool.title, **tool.hints}
        assert new.get("outputSchema") == tool.output_schema


def test_a_listing_is_a_copy_callers_may_change() -> None:
    listed = listed_tools(annotations=True, structured=True)
    listed[0]["inputSchema"]["properties"].clear()
    assert META_TOOLS[0].input_schema["properties"]  # the record is untouched


def test_where_a_handler_runs_is_declared_and_checked() -> None:
    async def coroutine(gw: Any, principal: Any, args: dict[str, Any]) -> Any:
        return None

    def plain(gw: Any, principal: Any, args: dict[str, Any]) -> Any:
        return None

    common: dict[str, Any] = {"title": "T", "description": "d", "input_schema": {}, "hints": {}}
    MetaTool(name="a", handler=coroutine, runs="loop", **common)
    MetaTool(name="b", handler=plain, runs="pool", **common)
    with pytest.raises(TypeError, match="runs='loop' needs a coroutine"):
        MetaTool(name="c", handler=plain, runs="loop", **common)
    with pytest.raises(TypeError, match="runs='pool' needs a plain"):
        MetaTool(name="d", handler=coroutine, runs="pool", **common)


@pytest.fixture
def gw(tmp_path: Path) -> Gateway:
    return make_gateway(tmp_path)


async def test_dispatch_runs_pool_handlers_off_the_loop_and_loop_handlers_on_it(
    gw: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: dict[str, str] = {}
    loop_thread = threading.current_thread().name

    def on_pool(gw: Any, principal: Any, args: dict[str, Any]) -> Any:
        seen["pool"] = threading.current_thread().name
        return {"ok": 1}

    async def on_loop(gw: Any, principal: Any, args: dict[str, Any]) -> Any:
        seen["loop"] = threading.current_thread().name
        return {"ok": 2}

    common: dict[str, Any] = {"title": "T", "description": "d", "input_schema": {}, "hints": {}}
    records = {
        "p": MetaTool(name="p", handler=on_pool, runs="pool", **common),
        "l": MetaTool(name="l", handler=on_loop, runs="loop", **common),
    }
    monkeypatch.setattr(meta, "_BY_NAME", records)
    user = gw.stores.users.get_or_create("ada@example.com")
    me = Principal(user=user, via="api_key")
    assert await MetaTools(gw).call("p", me, {}) == {"ok": 1}
    assert await MetaTools(gw).call("l", me, {}) == {"ok": 2}
    assert seen["loop"] == loop_thread
    assert seen["pool"] != loop_thread and seen["pool"].startswith("workbench-store")


async def test_a_name_without_a_record_is_unknown(gw: Gateway) -> None:
    user = gw.stores.users.get_or_create("ada@example.com")
    with pytest.raises(InvalidInput, match="Unknown tool: _whoami"):
        await MetaTools(gw).call("_whoami", Principal(user=user, via="api_key"), {})


def test_the_docs_page_is_written_from_the_records() -> None:
    assert DOC.read_text() == meta_tools_markdown(), (
        "docs/meta-tools.md is stale: regenerate it with "
        "uv run python -c \"from workbench.engine.meta import meta_tools_markdown as m; print(m(), end='')\" "
        "> docs/meta-tools.md"
    )
