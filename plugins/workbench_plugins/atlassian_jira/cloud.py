"""Which Atlassian Cloud site a call goes to.

An OAuth 2.0 (3LO) token is not tied to one site: it reaches every site the user granted, and
calls are routed by cloud id through https://api.atlassian.com/ex/{product}/{cloudId}/... Tools
take an optional `cloudId`; without it the site is discovered with
GET /oauth/token/accessible-resources. One matching site is used as is; several are an error that
lists them, so the agent can pick one and pass its id (nothing is guessed). Passing `cloudId`
saves that extra request.
"""

from __future__ import annotations

from typing import Any, Literal

from workbench.sdk import ToolError, api, pick_many
from workbench.tools import ArgsModel, Field, ToolContext

__all__ = ["SiteArgs", "accessible_sites", "site_path"]

RESOURCES = "/oauth/token/accessible-resources"


class SiteArgs(ArgsModel):
    cloudId: str | None = Field(
        default=None,
        description="Atlassian site (cloud) id, from jira_list_sites; optional when the connection reaches only one site",
    )


async def accessible_sites(ctx: ToolContext) -> list[dict[str, Any]]:
    return pick_many(await api(ctx, "GET", RESOURCES), "id", "name", "url", "scopes")


async def site_path(ctx: ToolContext, cloud_id: str | None, product: Literal["jira", "confluence"]) -> str:
    """The path prefix for the product's API on the chosen site, e.g. '/ex/jira/<cloudId>'."""
    if cloud_id:
        return f"/ex/{product}/{cloud_id}"
    sites = await accessible_sites(ctx)
    usable = [s for s in sites if any(product in scope for scope in s.get("scopes") or [])]
    if len(usable) == 1:
        return f"/ex/{product}/{usable[0]['id']}"
    if not usable:
        raise ToolError(
            f"This Atlassian connection cannot reach any {product} site; reconnect and grant one."
        )
    names = ", ".join(f"{s['name']} ({s['url']}): cloudId={s['id']}" for s in usable)
    raise ToolError(f"This connection reaches {len(usable)} {product} sites; pass cloudId, one of: {names}")
