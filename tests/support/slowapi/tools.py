"""slowapi's tools: one GET each, through the engine's HTTP client (its timeouts apply)."""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import BaseModel
from workbench.tools import tool


class NoArgs(BaseModel):
    pass


class Big(BaseModel):
    bytes: int


@tool("slowapi_fast", "Answers at once.", NoArgs)
async def fast(args: NoArgs, ctx: Any) -> Any:
    return (await ctx.http.get("/fast")).json()


@tool("slowapi_slow", "Answers only after a long while.", NoArgs)
async def slow(args: NoArgs, ctx: Any) -> Any:
    return (await ctx.http.get("/slow")).json()


@tool("slowapi_nap", "Sleeps without any HTTP (no upstream timeout applies).", NoArgs)
async def nap(args: NoArgs, ctx: Any) -> Any:
    await asyncio.sleep(15)
    return {"napped": True}


@tool("slowapi_big", "Answers about `bytes` bytes of JSON.", Big)
async def big(args: Big, ctx: Any) -> Any:
    return (await ctx.http.get("/big", params={"bytes": args.bytes})).json()


TOOLS = [fast, slow, nap, big]
