"""search_tools and get_tool_schema over the real catalog (seed 001, issue 6)."""

from __future__ import annotations

from typing import Any

import pytest
from workbench.composition import Gateway
from workbench.engine.meta import MetaTools
from workbench.errors import InvalidInput
from workbench.identity.auth import Principal

from tests.support.gateways import principal_for


async def search(gw: Gateway, me: Principal, query: str, **extra: Any) -> list[dict[str, Any]]:
    out = await MetaTools(gw).call("search_tools", me, {"query": query, **extra})
    return list(out["tools"])


@pytest.mark.parametrize(
    ("query", "tool"),
    [
        ("create jira issue", "jira_create_issue"),
        ("issue jira create", "jira_create_issue"),  # words in any order
        ("open a ticket in jira", "jira_create_issue"),  # ticket ~ issue
        ("list PRs", "github_list_prs"),  # PR ~ pull request
        ("send email", "gmail_send_email"),
        ("message the team on slack", "slack_send_message"),  # message ~ send
        ("creat jira tiket", "jira_create_issue"),  # typos
        ("lsit pul requests", "github_list_prs"),
        ("upload a file to google drive", "google_drive_upload"),
        ("export query results as csv from superset", "superset_export_csv"),
    ],
)
async def test_finds_the_right_tool_first(
    gateway: Gateway, principal: Principal, query: str, tool: str
) -> None:
    hits = await search(gateway, principal, query)
    assert hits[0]["name"] == tool


async def test_hit_shape_order_and_limits(gateway: Gateway, principal: Principal) -> None:
    hits = await search(gateway, principal, "list")
    assert len(hits) == 10  # top 10 by default
    assert set(hits[0]) == {"name", "description", "integration", "score", "connected", "annotations"}
    scores = [h["score"] for h in hits]
    assert scores == sorted(scores, reverse=True) and all(0 < s <= 1 for s in scores)
    assert len(await search(gateway, principal, "list", limit=50)) == 50
    with pytest.raises(InvalidInput):
        await search(gateway, principal, "list", limit=51)
    with pytest.raises(InvalidInput):
        await MetaTools(gateway).call("search_tools", principal, {})


async def test_hits_say_whether_the_caller_is_connected(gateway: Gateway, principal: Principal) -> None:
    gateway.credentials.save(principal.user.id, "github", {"access_token": "t"})
    hits = {
        h["name"]: h for h in await search(gateway, principal, "pull request issue jira github", limit=50)
    }
    assert hits["github_list_prs"]["connected"] is True and hits["github_list_prs"]["integration"] == "github"
    assert hits["jira_create_issue"]["connected"] is False
    other = principal_for(gateway, "someone-else@example.com")
    assert {h["name"]: h["connected"] for h in await search(gateway, other, "pull requests")}[
        "github_list_prs"
    ] is False


async def test_covers_builtin_tools(gateway: Gateway, principal: Principal) -> None:
    assert "create_jot" in [h["name"] for h in (await search(gateway, principal, "create a note"))[:3]]
    assert (await search(gateway, principal, "list my jots"))[0]["name"] == "list_jots"
    assert (await search(gateway, principal, "take a screenshot"))[0]["name"] == "browser_screenshot"


async def test_get_tool_schema_is_portable_json_schema(gateway: Gateway, principal: Principal) -> None:
    meta = MetaTools(gateway)
    out = await meta.call("get_tool_schema", principal, {"tool": "github_create_pr"})
    schema = out["schema"]
    assert schema["type"] == "object" and {"owner", "repo", "title", "head", "base"} <= set(
        schema["required"]
    )
    assert "$defs" not in str(schema) and "$ref" not in str(schema)
    assert out["annotations"] == {
        "title": "GitHub: Create PR",
        "readOnlyHint": False,
        "destructiveHint": False,
        "idempotentHint": False,
        "openWorldHint": True,
    }
    assert await meta.call("get_tool_schema", principal, {"tool": "nope"}) == {"error": "Tool not found"}


async def test_hits_carry_the_tools_annotations(gateway: Gateway, principal: Principal) -> None:
    hits = {h["name"]: h for h in await search(gateway, principal, "delete jot list jots", limit=20)}
    assert hits["list_jots"]["annotations"] == {
        "title": "Jots: List jots",
        "readOnlyHint": True,
        "destructiveHint": False,
        "idempotentHint": True,
        "openWorldHint": False,
    }
    assert hits["delete_jot"]["annotations"]["destructiveHint"] is True
