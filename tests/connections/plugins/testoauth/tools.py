"""One tool that calls the provider's protected API with the user's access token."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from workbench.sdk import api
from workbench.tools import tool


class NoArgs(BaseModel):
    pass


@tool("testoauth_whoami", "Who the provider says the connected account is.", NoArgs)
async def whoami(args: NoArgs, ctx: Any) -> Any:
    return await api(ctx, "GET", "/api/whoami")


TOOLS = [whoami]
