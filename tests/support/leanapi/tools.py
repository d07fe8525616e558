"""leanapi's tool: its arguments declared with workbench.tools.Arguments (no pydantic import)."""

from __future__ import annotations

from typing import Any

from workbench.tools import Arg, Arguments, ToolContext, tool

GET = Arguments(
    "Get",
    Arg("path", str, default="fast", min_length=1, max_length=40, description="What to read"),
    Arg("repeat", int, default=1, ge=1, le=3, description="How many times to read it"),
)


@tool("leanapi_get", "Read one thing from the lean API.", GET)
async def get(args: Any, ctx: ToolContext) -> Any:
    answers = [(await ctx.http.get(f"/{args.path}")).json() for _ in range(args.repeat)]
    return answers[0] if len(answers) == 1 else answers


TOOLS = [get]
