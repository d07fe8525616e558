"""GitHub REST API tools (https://docs.github.com/en/rest).

List tools take `perPage` (max 100) and `page`, and return `nextPage` read from GitHub's `Link`
header (None on the last page).
"""

from __future__ import annotations

import base64
import codecs
from typing import Any, Literal

from pydantic import BaseModel, Field
from workbench.sdk import (
    UpstreamError,
    api,
    api_response,
    compact,
    next_link,
    pick,
    pick_many,
    query_param,
    trim,
)
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
_ISSUE_FIELDS = ("number", "title", "state", "html_url", "user.login", "comments", "created_at", "updated_at")
_REPO_FIELDS = (
    "full_name",
    "description",
    "private",
    "html_url",
    "default_branch",
    "language",
    "stargazers_count",
    "open_issues_count",
    "updated_at",
)


class _Repo(BaseModel):
    owner: str = Field(description="Repository owner (user or organisation), e.g. 'octocat'")
    repo: str = Field(description="Repository name, e.g. 'hello-world'")


class _Paged(BaseModel):
    perPage: int = Field(default=30, ge=1, le=100, description="Results per page (max 100)")
    page: int = Field(default=1, ge=1, description="Page number, starting at 1 (use nextPage)")


async def _page(ctx: Any, path: str, args: _Paged, params: dict[str, Any] | None = None) -> tuple[Any, Any]:
    """One page of a GitHub list endpoint and the next page number (None on the last page)."""
    resp = await api_response(
        ctx, "GET", path, params={**(params or {}), "per_page": args.perPage, "page": args.page}
    )
    nxt = query_param(next_link(resp), "page")
    return resp.json(), int(nxt) if nxt else None


def _issue(raw: Any) -> dict[str, Any]:
    out = pick(raw, *_ISSUE_FIELDS)
    out["labels"] = [label.get("name") for label in raw.get("labels") or []]
    out["assignees"] = [a.get("login") for a in raw.get("assignees") or []]
    out["isPullRequest"] = "pull_request" in raw
    return out


# -- pull requests ---------------------------------------------------------------------------------


class ListPrs(_Repo, _Paged):
    state: Literal["open", "closed", "all"] = Field(default="open", description="Filter by state")
    base: str | None = Field(default=None, description="Only PRs merging into this branch")
    head: str | None = Field(default=None, description="Only PRs from this branch, as 'user:branch'")


@tool(
    "github_list_prs",
    "List pull requests (PRs) of a GitHub repository, newest first.",
    ListPrs,
    scopes=("repo",),
)
async def list_prs(args: ListPrs, ctx: Any) -> Any:
    prs, nxt = await _page(
        ctx,
        f"/repos/{args.owner}/{args.repo}/pulls",
        args,
        {"state": args.state, "base": args.base, "head": args.head},
    )
    return {"pullRequests": pick_many(prs, *_PR_FIELDS), "nextPage": nxt}


class CreatePr(_Repo):
    title: str = Field(min_length=1, description="Pull request title")
    head: str = Field(description="Branch with the changes (or owner:branch for a fork)")
    base: str = Field(description="Branch to merge into, e.g. 'main'")
    body: str | None = Field(default=None, description="Description (Markdown)")
    draft: bool = Field(default=False, description="Open as a draft pull request")


@tool("github_create_pr", "Create (open) a pull request on a GitHub repository.", CreatePr, scopes=("repo",))
async def create_pr(args: CreatePr, ctx: Any) -> Any:
    pr = await api(
        ctx,
        "POST",
        f"/repos/{args.owner}/{args.repo}/pulls",
        json=compact(
            {
                "title": args.title,
                "head": args.head,
                "base": args.base,
                "body": args.body,
                "draft": args.draft,
            }
        ),
    )
    return pick(pr, *_PR_FIELDS)


class PrRef(_Repo):
    number: int = Field(ge=1, description="Pull request number")


@tool(
    "github_get_pr",
    "Get one pull request: title, description, branches, merge state and size of the change.",
    PrRef,
    scopes=("repo",),
)
async def get_pr(args: PrRef, ctx: Any) -> Any:
    pr = await api(ctx, "GET", f"/repos/{args.owner}/{args.repo}/pulls/{args.number}")
    out = pick(
        pr,
        *_PR_FIELDS,
        "merged",
        "mergeable",
        "mergeable_state",
        "commits",
        "additions",
        "deletions",
        "changed_files",
    )
    out["body"] = trim(pr.get("body"), 10_000)
    return out


class ListPrFiles(PrRef, _Paged):
    pass


@tool(
    "github_list_pr_files",
    "List the files a pull request changes, with a short diff of each.",
    ListPrFiles,
    scopes=("repo",),
)
async def list_pr_files(args: ListPrFiles, ctx: Any) -> Any:
    files, nxt = await _page(ctx, f"/repos/{args.owner}/{args.repo}/pulls/{args.number}/files", args)
    shaped = []
    for f in files:
        item = pick(f, "filename", "status", "additions", "deletions", "changes")
        item["patch"] = trim(f.get("patch"), 3_000)
        shaped.append(item)
    return {"files": shaped, "nextPage": nxt}


class MergePr(PrRef):
    method: Literal["merge", "squash", "rebase"] = Field(default="merge", description="Merge method")
    commitTitle: str | None = Field(default=None, description="Title of the merge commit")
    commitMessage: str | None = Field(default=None, description="Extra detail for the merge commit")
    sha: str | None = Field(default=None, description="Merge only if the PR head is still this commit")


@tool("github_merge_pr", "Merge a pull request (merge, squash or rebase).", MergePr, scopes=("repo",))
async def merge_pr(args: MergePr, ctx: Any) -> Any:
    out = await api(
        ctx,
        "PUT",
        f"/repos/{args.owner}/{args.repo}/pulls/{args.number}/merge",
        json=compact(
            {
                "merge_method": args.method,
                "commit_title": args.commitTitle,
                "commit_message": args.commitMessage,
                "sha": args.sha,
            }
        ),
    )
    return pick(out, "sha", "merged", "message")


class ReviewPr(PrRef):
    event: Literal["APPROVE", "REQUEST_CHANGES", "COMMENT"] = Field(
        description="APPROVE, REQUEST_CHANGES or COMMENT"
    )
    body: str | None = Field(default=None, description="Review text (required for REQUEST_CHANGES/COMMENT)")


@tool(
    "github_review_pr",
    "Review a pull request: approve it, request changes, or comment.",
    ReviewPr,
    scopes=("repo",),
)
async def review_pr(args: ReviewPr, ctx: Any) -> Any:
    review = await api(
        ctx,
        "POST",
        f"/repos/{args.owner}/{args.repo}/pulls/{args.number}/reviews",
        json=compact({"event": args.event, "body": args.body}),
    )
    return pick(review, "id", "state", "html_url", "user.login", "submitted_at")


# -- issues ----------------------------------------------------------------------------------------


class ListIssues(_Repo, _Paged):
    state: Literal["open", "closed", "all"] = Field(default="open", description="Filter by state")
    labels: str | None = Field(default=None, description="Comma-separated label names, e.g. 'bug,ui'")
    assignee: str | None = Field(default=None, description="Login, '*' for any, 'none' for unassigned")


@tool(
    "github_list_issues",
    "List issues of a GitHub repository (GitHub also lists pull requests here; see isPullRequest).",
    ListIssues,
    scopes=("repo",),
)
async def list_issues(args: ListIssues, ctx: Any) -> Any:
    issues, nxt = await _page(
        ctx,
        f"/repos/{args.owner}/{args.repo}/issues",
        args,
        {"state": args.state, "labels": args.labels, "assignee": args.assignee},
    )
    return {"issues": [_issue(i) for i in issues], "nextPage": nxt}


class IssueRef(_Repo):
    number: int = Field(ge=1, description="Issue number")


@tool("github_get_issue", "Get one GitHub issue with its description.", IssueRef, scopes=("repo",))
async def get_issue(args: IssueRef, ctx: Any) -> Any:
    issue = await api(ctx, "GET", f"/repos/{args.owner}/{args.repo}/issues/{args.number}")
    return {**_issue(issue), "body": trim(issue.get("body"), 10_000)}


class CreateIssue(_Repo):
    title: str = Field(min_length=1, description="Issue title")
    body: str | None = Field(default=None, description="Description (Markdown)")
    labels: list[str] | None = Field(default=None, description="Label names to add")
    assignees: list[str] | None = Field(default=None, description="Logins to assign")


@tool(
    "github_create_issue",
    "Create (open, file) a new issue in a GitHub repository.",
    CreateIssue,
    scopes=("repo",),
)
async def create_issue(args: CreateIssue, ctx: Any) -> Any:
    issue = await api(
        ctx,
        "POST",
        f"/repos/{args.owner}/{args.repo}/issues",
        json=compact(
            {"title": args.title, "body": args.body, "labels": args.labels, "assignees": args.assignees}
        ),
    )
    return _issue(issue)


class UpdateIssue(IssueRef):
    title: str | None = Field(default=None, description="New title")
    body: str | None = Field(default=None, description="New description")
    state: Literal["open", "closed"] | None = Field(default=None, description="Close or reopen")
    stateReason: Literal["completed", "not_planned", "reopened"] | None = Field(
        default=None, description="Why the state changed"
    )
    labels: list[str] | None = Field(default=None, description="Replace all labels with these")
    assignees: list[str] | None = Field(default=None, description="Replace all assignees with these")


@tool(
    "github_update_issue",
    "Update a GitHub issue: edit title/body, close or reopen, set labels.",
    UpdateIssue,
    scopes=("repo",),
)
async def update_issue(args: UpdateIssue, ctx: Any) -> Any:
    issue = await api(
        ctx,
        "PATCH",
        f"/repos/{args.owner}/{args.repo}/issues/{args.number}",
        json=compact(
            {
                "title": args.title,
                "body": args.body,
                "state": args.state,
                "state_reason": args.stateReason,
                "labels": args.labels,
                "assignees": args.assignees,
            }
        ),
    )
    return _issue(issue)


class CommentIssue(IssueRef):
    body: str = Field(min_length=1, description="Comment text (Markdown)")


@tool(
    "github_comment_issue",
    "Add a comment to a GitHub issue or pull request conversation.",
    CommentIssue,
    scopes=("repo",),
)
async def comment_issue(args: CommentIssue, ctx: Any) -> Any:
    comment = await api(
        ctx,
        "POST",
        f"/repos/{args.owner}/{args.repo}/issues/{args.number}/comments",
        json={"body": args.body},
    )
    return pick(comment, "id", "html_url", "user.login", "created_at")


class SearchIssues(_Paged):
    q: str = Field(
        min_length=1,
        description="GitHub search query, e.g. 'repo:acme/api is:pr is:open author:ada' or 'label:bug crash'",
    )


@tool(
    "github_search_issues",
    "Search issues and pull requests across GitHub with the GitHub search syntax.",
    SearchIssues,
    scopes=("repo",),
)
async def search_issues(args: SearchIssues, ctx: Any) -> Any:
    found, nxt = await _page(ctx, "/search/issues", args, {"q": args.q})
    return {
        "totalCount": found.get("total_count"),
        "items": [{**_issue(i), "repository_url": i.get("repository_url")} for i in found.get("items", [])],
        "nextPage": nxt,
    }


# -- repositories and code -------------------------------------------------------------------------


class ListRepos(_Paged):
    sort: Literal["created", "updated", "pushed", "full_name"] = Field(
        default="updated", description="Sort order"
    )
    visibility: Literal["all", "public", "private"] = Field(default="all", description="Filter by visibility")


@tool(
    "github_list_repos",
    "List repositories the connected GitHub user can access (own, collaborator, organisation).",
    ListRepos,
    scopes=("repo",),
)
async def list_repos(args: ListRepos, ctx: Any) -> Any:
    repos, nxt = await _page(ctx, "/user/repos", args, {"sort": args.sort, "visibility": args.visibility})
    return {"repositories": pick_many(repos, *_REPO_FIELDS), "nextPage": nxt}


@tool(
    "github_get_repo",
    "Get a GitHub repository's details: description, default branch, stats.",
    _Repo,
    scopes=("repo",),
)
async def get_repo(args: _Repo, ctx: Any) -> Any:
    repo = await api(ctx, "GET", f"/repos/{args.owner}/{args.repo}")
    return pick(repo, *_REPO_FIELDS, "forks_count", "topics", "archived")


class ListBranches(_Repo, _Paged):
    pass


@tool("github_list_branches", "List branches of a GitHub repository.", ListBranches, scopes=("repo",))
async def list_branches(args: ListBranches, ctx: Any) -> Any:
    branches, nxt = await _page(ctx, f"/repos/{args.owner}/{args.repo}/branches", args)
    return {"branches": pick_many(branches, "name", "commit.sha", "protected"), "nextPage": nxt}


class ListCommits(_Repo, _Paged):
    sha: str | None = Field(default=None, description="Branch name or commit SHA to start from")
    path: str | None = Field(default=None, description="Only commits touching this file path")
    since: str | None = Field(default=None, description="ISO 8601 time, e.g. 2024-01-01T00:00:00Z")


@tool(
    "github_list_commits",
    "List commits of a GitHub repository branch, newest first.",
    ListCommits,
    scopes=("repo",),
)
async def list_commits(args: ListCommits, ctx: Any) -> Any:
    commits, nxt = await _page(
        ctx,
        f"/repos/{args.owner}/{args.repo}/commits",
        args,
        {"sha": args.sha, "path": args.path, "since": args.since},
    )
    shaped = [
        {
            "sha": c.get("sha"),
            "message": (c.get("commit") or {}).get("message"),
            **pick(c, "commit.author.name", "commit.author.date", "author.login", "html_url"),
        }
        for c in commits
    ]
    return {"commits": shaped, "nextPage": nxt}


class GetFile(_Repo):
    path: str = Field(description="Path inside the repository, e.g. 'src/app.py' ('' for the root)")
    ref: str | None = Field(default=None, description="Branch, tag or commit (default: default branch)")


_MAX_TEXT = 50_000  # characters of a file returned
_RAW_BYTES = 200_000  # bytes read of a file over 1 MB: enough for _MAX_TEXT characters of UTF-8


@tool(
    "github_get_file",
    "Read a text file from a GitHub repository (first 50,000 characters; files over 1 MB are read raw) "
    "or list a directory.",
    GetFile,
    scopes=("repo",),
)
async def get_file(args: GetFile, ctx: Any) -> Any:
    path = f"/repos/{args.owner}/{args.repo}/contents/{args.path}"
    found = await api(ctx, "GET", path, params={"ref": args.ref})
    if isinstance(found, list):  # a directory
        return {"type": "dir", "entries": pick_many(found, "name", "path", "type", "size")}
    out = pick(found, "type", "path", "sha", "size", "html_url")
    if found.get("encoding") == "base64" and found.get("content") is not None:
        raw = base64.b64decode(found["content"])
    elif found.get("type") == "file" and found.get("encoding") == "none":
        # GitHub leaves `content` empty for files of 1-100 MB; only the raw media type carries them.
        raw = await _raw_head(ctx, path, args.ref)
    else:
        return out
    size = found.get("size") or len(raw)
    partial = size > len(raw)
    try:
        # A partial read may end inside a multi-byte character: decode it as an unfinished stream.
        text = codecs.getincrementaldecoder("utf-8")().decode(raw, final=not partial)
    except UnicodeDecodeError:
        text = None
    if text is None or "\0" in text[:8_000]:
        out["content"], out["binary"] = None, True
    elif partial:
        shown = text[:_MAX_TEXT]
        out["content"] = f"{shown}\n…[truncated: first {len(shown)} characters of a {size}-byte file]"
    else:
        out["content"] = trim(text, _MAX_TEXT)
    return out


async def _raw_head(ctx: Any, path: str, ref: str | None) -> bytes:
    """The first _RAW_BYTES of a file, read raw and streamed (the file may be up to 100 MB)."""
    params = {"ref": ref} if ref else None
    headers = {"Accept": "application/vnd.github.raw+json"}
    async with ctx.http.stream("GET", path, params=params, headers=headers) as resp:
        if resp.status_code >= 400:
            await resp.aread()
            raise UpstreamError(ctx.integration, resp.status_code, resp.text[:500])
        chunks: list[bytes] = []
        got = 0
        async for chunk in resp.aiter_bytes():
            chunks.append(chunk)
            got += len(chunk)
            if got >= _RAW_BYTES:
                break
    return b"".join(chunks)[:_RAW_BYTES]


class SearchCode(_Paged):
    q: str = Field(
        min_length=1, description="Code search query, e.g. 'addClass repo:jquery/jquery language:js'"
    )


@tool(
    "github_search_code",
    "Search code in GitHub repositories (files matching a query).",
    SearchCode,
    scopes=("repo",),
)
async def search_code(args: SearchCode, ctx: Any) -> Any:
    found, nxt = await _page(ctx, "/search/code", args, {"q": args.q})
    return {
        "totalCount": found.get("total_count"),
        "items": pick_many(found.get("items"), "name", "path", "repository.full_name", "html_url"),
        "nextPage": nxt,
    }


TOOLS = [
    list_prs,
    create_pr,
    get_pr,
    list_pr_files,
    merge_pr,
    review_pr,
    list_issues,
    get_issue,
    create_issue,
    update_issue,
    comment_issue,
    search_issues,
    list_repos,
    get_repo,
    list_branches,
    list_commits,
    get_file,
    search_code,
]
