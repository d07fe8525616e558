"""Seed 002: Tool.execute result semantics, every case."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel
from workbench.tools import CancelSignal, Tool, ToolResult, error_text, tool


def make(fn: Any) -> Tool:
    return Tool(name="t", description="d", fn=fn)


async def test_sync_execute_returns_tool_result_directly() -> None:
    def double(args: dict[str, Any]) -> ToolResult:
        n = args["n"]
        return ToolResult(True, {"value": n * 2}, f"{n} x 2 = {n * 2}")

    assert await make(double).execute({"n": 21}) == ToolResult(True, {"value": 42}, "21 x 2 = 42")


async def test_async_execute_is_awaited() -> None:
    async def fetch(args: dict[str, Any]) -> ToolResult:
        await asyncio.sleep(0)
        return ToolResult(True, {"id": args["id"]}, f"Fetched user {args['id']}")

    result = await make(fetch).execute({"id": "7"})
    assert result.as_dict() == {"success": True, "json": {"id": "7"}, "text": "Fetched user 7"}


async def test_plain_return_value_becomes_success_json() -> None:
    result = await make(lambda args: {"city": args["city"]}).execute({"city": "Jakarta"})
    assert result == ToolResult(True, {"city": "Jakarta"}, "ok")


async def test_emit_callback_is_passed_straight_through() -> None:
    def process(args: dict[str, Any], ctx: Any, emit: Any) -> ToolResult:
        for i, _ in enumerate(args["items"]):
            emit({"stage": "progress", "index": i, "total": len(args["items"])})
        return ToolResult(True, {"processed": len(args["items"])}, "Done")

    events: list[Any] = []
    result = await make(process).execute({"items": ["a", "b", "c"]}, None, events.append)
    assert result.json == {"processed": 3}
    assert events == [{"stage": "progress", "index": i, "total": 3} for i in range(3)]


async def test_pre_aborted_signal_never_calls_execute() -> None:
    called = []
    signal = CancelSignal()
    signal.abort("Pre-aborted signal")
    result = await make(lambda args: called.append(1)).execute({}, signal)
    assert result == ToolResult(False, None, "Pre-aborted signal")
    assert called == []


async def test_mid_flight_abort_wins_even_if_execute_ignores_the_signal() -> None:
    async def stubborn(args: dict[str, Any]) -> ToolResult:
        await asyncio.sleep(5)  # ignores the signal entirely
        return ToolResult(True, {}, "Done")

    signal = CancelSignal()
    loop = asyncio.get_running_loop()
    loop.call_later(0.05, signal.abort, "User cancelled")
    started = loop.time()
    result = await make(stubborn).execute({}, signal)
    assert result == ToolResult(False, None, "User cancelled")
    assert loop.time() - started < 2


async def test_mid_flight_abort_when_execute_rejects_with_its_own_error() -> None:
    async def polite(args: dict[str, Any], ctx: Any) -> ToolResult:
        await asyncio.sleep(5)
        return ToolResult(True, {}, "Done")

    signal = CancelSignal()
    asyncio.get_running_loop().call_later(0.02, signal.abort, None)
    result = await make(polite).execute({}, signal)
    assert result == ToolResult(False, None, "Aborted")  # no reason → 'Aborted'


async def test_post_resolve_abort_returns_the_aborted_shape() -> None:
    signal = CancelSignal()

    async def resolves_then_abort(args: dict[str, Any]) -> ToolResult:
        signal.abort("late")  # the abort lands after the value is ready, before the wrapper returns
        return ToolResult(True, {"x": 1}, "ok")

    assert await make(resolves_then_abort).execute({}, signal) == ToolResult(False, None, "late")


async def test_sync_execute_without_signal_passes_value_through() -> None:
    assert await make(lambda args: ToolResult(True, 1, "one")).execute({}) == ToolResult(True, 1, "one")


async def test_sync_throw_becomes_failure() -> None:
    def failing(args: dict[str, Any]) -> None:
        raise RuntimeError("Something went wrong")

    assert await make(failing).execute({}) == ToolResult(False, None, "Something went wrong")


@pytest.mark.parametrize(
    ("exc", "text"),
    [
        (ValueError("boom"), "boom"),  # an error with a message → the message
        (ValueError(""), ""),  # empty message → ''
        (ValueError(), ""),  # no message at all → ''
        (Exception({"code": 42}), "{'code': 42}"),  # a non-string value → str(value)
        (Exception(42), "42"),
    ],
)
async def test_error_to_text_table(exc: Exception, text: str) -> None:
    def thrower(args: dict[str, Any]) -> None:
        raise exc

    assert error_text(exc) == text
    assert await make(thrower).execute({}) == ToolResult(False, None, text)


@pytest.mark.parametrize(
    ("reason", "text"), [("User cancelled", "User cancelled"), (None, "Aborted"), (7, "7")]
)
async def test_abort_reason_text(reason: Any, text: str) -> None:
    signal = CancelSignal()
    signal.abort(reason)
    assert (await make(lambda a: 1).execute({}, signal)).text == text


async def test_async_throw_becomes_failure() -> None:
    async def failing(args: dict[str, Any]) -> None:
        raise LookupError("missing")

    assert await make(failing).execute({}) == ToolResult(False, None, "missing")


def test_schema_is_derived_from_the_pydantic_model() -> None:
    class Args(BaseModel):
        owner: str
        per_page: int = 30

    @tool("x_list", "List things.", Args)
    def list_things(args: Args) -> None:
        return None

    schema = list_things.json_schema()
    assert schema["type"] == "object"
    assert schema["required"] == ["owner"]
    assert schema["properties"]["per_page"] == {"type": "integer", "default": 30}


def test_raw_parameters_schema_passes_through_unchanged() -> None:
    params = {"type": "object", "properties": {"n": {"type": "number"}}, "required": ["n"]}
    t = tool("x_raw", "Raw.", parameters=params)(lambda args: args)
    assert t.json_schema() is params
