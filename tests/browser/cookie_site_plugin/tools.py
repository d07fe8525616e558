"""The cookie test site's one tool: who the stored session cookie signs in as."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from workbench.sdk import api
from workbench.tools import tool

__all__ = ["TOOLS"]


class NoArgs(BaseModel):
    pass


@tool("cookie_site_whoami", "Who the connected session is signed in as on the cookie test site.", NoArgs)
async def whoami(args: NoArgs, ctx: Any) -> Any:
    return await api(ctx, "GET", "/api/me")


TOOLS = [whoami]
