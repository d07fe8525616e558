"""GitHub REST API tools (https://docs.github.com/en/rest)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field
from workbench.sdk import api, pick, pick_many
from workbench.tools import tool

_PR_FIELDS = (
    "number",
    "title",
    "state",
    "draft",
    "html_url",
    "user.login",
    "head.ref",
    "base.ref",
    "created_at",
    "updated_at",
)


class ListPrs(BaseModel):
    owner: str = Field(description="Repository owner (user or organisation)")
    repo: str = Field(description="Repository name")
    state: Literal["open", "closed", "all"] = "open"
    perPage: int = Field(default=30, ge=1, le=100, description="Results per page (max 100)")
    page: int = Field(default=1, ge=1)


@tool("github_list_prs", "List pull requests (PRs) of a GitHub repository, newest first.", ListPrs)
async def list_prs(args: ListPrs, ctx: Any) -> Any:
    prs = await api(
        ctx,
        "GET",
        f"/repos/{args.owner}/{args.repo}/pulls",
        params={"state": args.state, "per_page": args.perPage, "page": args.page},
    )
    return {"pullRequests": pick_many(prs, *_PR_FIELDS), "page": args.page}


class CreatePr(BaseModel):
    owner: str
    repo: str
    title: str = Field(min_length=1)
    head: str = Field(description="Branch with the changes (or owner:branch for a fork)")
    base: str = Field(description="Branch to merge into")
    body: str | None = None
    draft: bool = False


@tool("github_create_pr", "Create (open) a pull request on a GitHub repository.", CreatePr)
async def create_pr(args: CreatePr, ctx: Any) -> Any:
    pr = await api(
        ctx,
        "POST",
        f"/repos/{args.owner}/{args.repo}/pulls",
        json={
            "title": args.title,
            "head": args.head,
            "base": args.base,
            "body": args.body,
            "draft": args.draft,
        },
    )
    return pick(pr, *_PR_FIELDS)


TOOLS = [list_prs, create_pr]
