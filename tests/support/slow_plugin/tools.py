from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

from pydantic import BaseModel, Field
from workbench.tools import tool

_state = {"current": 0, "peak": 0}


class SleepArgs(BaseModel):
    ms: int = Field(default=100, ge=0, le=5000)


@tool("probe_sleep", "Sleep, then report the peak number of probe_sleep calls running at once.", SleepArgs)
async def probe_sleep(args: SleepArgs, ctx: Any) -> Any:
    _state["current"] += 1
    _state["peak"] = max(_state["peak"], _state["current"])
    try:
        await asyncio.sleep(args.ms / 1000)
    finally:
        _state["current"] -= 1
    return {"peak": _state["peak"]}


@tool(
    "probe_block", "Block its thread with time.sleep (a sync tool), then say which thread ran it.", SleepArgs
)
def probe_block(args: SleepArgs, ctx: Any) -> Any:
    time.sleep(args.ms / 1000)
    return {"thread": threading.current_thread().name}


class NoArgs(BaseModel):
    pass


@tool("probe_noop", "Do nothing (benchmark probe).", NoArgs)
def probe_noop(args: NoArgs, ctx: Any) -> Any:
    return {"ok": True}


TOOLS = [probe_sleep, probe_block, probe_noop]
