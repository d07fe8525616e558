"""GitHub REST API tools (https://docs.github.com/en/rest).

List tools take `perPage` (max 100) and `page`, and return `nextPage` read from GitHub's `Link`
header (None on the last page).
"""

from __future__ import annotations

import base64
import codecs
from typing import Any, Literal

from workbench.sdk import (
    ToolError,
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
from workbench.tools import ArgsModel, Field, ToolContext, tool

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


class _Repo(ArgsModel):
    owner: str = Field(description="Repository owner (user or organisation), e.g. 'octocat'")
    repo: str = Field(description="Repository name, e.g. 'hello-world'")


class _Paged(ArgsModel):
    perPage: int = Field(default=30, ge=1, le=100, description="Results per page (max 100)")
    page: int = Field(default=1, ge=1, description="Page number, starting at 1 (use nextPage)")


async def _page(
    ctx: ToolContext, path: str, args: _Paged, params: dict[str, Any] | None = None
) -> tuple[Any, Any]:
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
    keywords=("pull requests", "merge requests", "open", "pending", "waiting", "review queue", "show"),
)
async def list_prs(args: ListPrs, ctx: ToolContext) -> Any:
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


@tool(
    "github_create_pr",
    "Create (open) a pull request on a GitHub repository.",
    CreatePr,
    scopes=("repo",),
    keywords=("open", "new", "submit", "propose", "raise", "merge request", "branch", "changes"),
)
async def create_pr(args: CreatePr, ctx: ToolContext) -> Any:
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
    keywords=("show", "details", "view", "info", "status", "mergeable"),
)
async def get_pr(args: PrRef, ctx: ToolContext) -> Any:
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
    keywords=("diff", "changes", "changed files", "patch", "what changed", "modified"),
)
async def list_pr_files(args: ListPrFiles, ctx: ToolContext) -> Any:
    files, nxt = await _page(ctx, f"/repos/{args.owner}/{args.repo}/pulls/{args.number}/files", args)
    shaped = []
    for f in files:
        item = pick(f, "filename", "status", "additions", "deletions", "changes")
        item["patch"] = trim(f.get("patch"), 3_000)
        shaped.append(item)
    return {"files": shaped, "nextPage": nxt}


@tool(
    "github_get_pr_diff",
    "Get a pull request's whole diff (unified diff text of every changed file).",
    PrRef,
    scopes=("repo",),
    keywords=("patch", "changes", "code review", "what changed", "unified diff"),
)
async def get_pr_diff(args: PrRef, ctx: ToolContext) -> Any:
    resp = await api_response(
        ctx,
        "GET",
        f"/repos/{args.owner}/{args.repo}/pulls/{args.number}",
        headers={"Accept": "application/vnd.github.diff"},
    )
    return {"diff": trim(resp.text, 60_000)}


class ListReleases(_Repo, _Paged):
    pass


@tool(
    "github_list_releases",
    "List a repository's releases, newest first, with their tags and notes.",
    ListReleases,
    scopes=("repo",),
    keywords=("versions", "tags", "changelog", "release notes", "published", "latest version"),
)
async def list_releases(args: ListReleases, ctx: ToolContext) -> Any:
    releases, nxt = await _page(ctx, f"/repos/{args.owner}/{args.repo}/releases", args)
    shaped = []
    for r in releases:
        item = pick(
            r, "id", "tag_name", "name", "draft", "prerelease", "published_at", "html_url", "author.login"
        )
        item["body"] = trim(r.get("body"), 3_000)
        shaped.append(item)
    return {"releases": shaped, "nextPage": nxt}


class MergePr(PrRef):
    method: Literal["merge", "squash", "rebase"] = Field(default="merge", description="Merge method")
    commitTitle: str | None = Field(default=None, description="Title of the merge commit")
    commitMessage: str | None = Field(default=None, description="Extra detail for the merge commit")
    sha: str | None = Field(default=None, description="Merge only if the PR head is still this commit")


@tool(
    "github_merge_pr",
    "Merge a pull request (merge, squash or rebase).",
    MergePr,
    scopes=("repo",),
    keywords=("land", "ship", "squash", "rebase", "accept", "integrate", "combine"),
)
async def merge_pr(args: MergePr, ctx: ToolContext) -> Any:
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
    keywords=("approve", "lgtm", "request changes", "reject", "feedback"),
)
async def review_pr(args: ReviewPr, ctx: ToolContext) -> Any:
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
    keywords=("show", "open issues", "bugs", "tickets", "backlog", "browse"),
)
async def list_issues(args: ListIssues, ctx: ToolContext) -> Any:
    issues, nxt = await _page(
        ctx,
        f"/repos/{args.owner}/{args.repo}/issues",
        args,
        {"state": args.state, "labels": args.labels, "assignee": args.assignee},
    )
    return {"issues": [_issue(i) for i in issues], "nextPage": nxt}


class IssueRef(_Repo):
    number: int = Field(ge=1, description="Issue number")


@tool(
    "github_get_issue",
    "Get one GitHub issue with its description.",
    IssueRef,
    scopes=("repo",),
    keywords=("show", "view", "details", "open", "read", "bug", "ticket"),
)
async def get_issue(args: IssueRef, ctx: ToolContext) -> Any:
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
    keywords=("new", "file", "report", "log", "raise", "open", "bug", "ticket", "feature request"),
)
async def create_issue(args: CreateIssue, ctx: ToolContext) -> Any:
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
    keywords=("edit", "change", "close", "reopen", "resolve", "labels", "rename", "bug", "ticket"),
)
async def update_issue(args: UpdateIssue, ctx: ToolContext) -> Any:
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
    keywords=("reply", "respond", "note", "write", "post", "discussion", "conversation", "bug", "ticket"),
)
async def comment_issue(args: CommentIssue, ctx: ToolContext) -> Any:
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
    keywords=("find", "query", "look up", "filter", "across", "bugs", "tickets"),
)
async def search_issues(args: SearchIssues, ctx: ToolContext) -> Any:
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
    keywords=("repositories", "projects", "show", "codebases", "organisation"),
)
async def list_repos(args: ListRepos, ctx: ToolContext) -> Any:
    repos, nxt = await _page(ctx, "/user/repos", args, {"sort": args.sort, "visibility": args.visibility})
    return {"repositories": pick_many(repos, *_REPO_FIELDS), "nextPage": nxt}


@tool(
    "github_get_repo",
    "Get a GitHub repository's details: description, default branch, stats.",
    _Repo,
    scopes=("repo",),
    keywords=("details", "info", "stars", "default branch", "metadata", "project"),
)
async def get_repo(args: _Repo, ctx: ToolContext) -> Any:
    repo = await api(ctx, "GET", f"/repos/{args.owner}/{args.repo}")
    return pick(repo, *_REPO_FIELDS, "forks_count", "topics", "archived")


class ListBranches(_Repo, _Paged):
    pass


@tool(
    "github_list_branches",
    "List branches of a GitHub repository.",
    ListBranches,
    scopes=("repo",),
    keywords=("refs", "heads", "show", "feature branches"),
)
async def list_branches(args: ListBranches, ctx: ToolContext) -> Any:
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
    keywords=("history", "log", "changes", "changelog", "recent changes", "git log", "who changed"),
)
async def list_commits(args: ListCommits, ctx: ToolContext) -> Any:
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
    keywords=("read", "open", "view", "contents", "source", "code", "download", "show", "folder"),
)
async def get_file(args: GetFile, ctx: ToolContext) -> Any:
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


async def _raw_head(ctx: ToolContext, path: str, ref: str | None) -> bytes:
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
    keywords=("find", "grep", "look for", "source", "function", "symbol", "usages"),
)
async def search_code(args: SearchCode, ctx: ToolContext) -> Any:
    found, nxt = await _page(ctx, "/search/code", args, {"q": args.q})
    return {
        "totalCount": found.get("total_count"),
        "items": pick_many(found.get("items"), "name", "path", "repository.full_name", "html_url"),
        "nextPage": nxt,
    }


# -- conversation and reviews ----------------------------------------------------------------------


def _comment(c: Any) -> dict[str, Any]:
    return {
        **pick(c, "id", "user.login", "created_at", "updated_at", "html_url"),
        "body": trim(c.get("body"), 4_000),
    }


class ListComments(IssueRef, _Paged):
    since: str | None = Field(default=None, description="Only comments updated after this ISO 8601 time")


@tool(
    "github_list_comments",
    "List the comments of a GitHub issue or pull request conversation, oldest first.",
    ListComments,
    scopes=("repo",),
    keywords=("show", "read", "discussion", "conversation", "replies", "thread"),
)
async def list_comments(args: ListComments, ctx: ToolContext) -> Any:
    comments, nxt = await _page(
        ctx, f"/repos/{args.owner}/{args.repo}/issues/{args.number}/comments", args, {"since": args.since}
    )
    return {"comments": [_comment(c) for c in comments], "nextPage": nxt}


class ListReviews(PrRef, _Paged):
    pass


@tool(
    "github_list_pr_reviews",
    "List the reviews of a pull request: who approved, requested changes or commented, oldest first.",
    ListReviews,
    scopes=("repo",),
    keywords=("approvals", "reviewers", "review status", "changes requested"),
)
async def list_pr_reviews(args: ListReviews, ctx: ToolContext) -> Any:
    reviews, nxt = await _page(ctx, f"/repos/{args.owner}/{args.repo}/pulls/{args.number}/reviews", args)
    shaped = [
        {
            **pick(r, "id", "user.login", "state", "submitted_at", "commit_id", "html_url"),
            "body": trim(r.get("body"), 4_000),
        }
        for r in reviews
    ]
    return {"reviews": shaped, "nextPage": nxt}


def _review_comment(c: Any) -> dict[str, Any]:
    out = pick(
        c,
        "id",
        "pull_request_review_id",
        "in_reply_to_id",
        "user.login",
        "path",
        "line",
        "side",
        "commit_id",
        "created_at",
        "html_url",
    )
    out["body"] = trim(c.get("body"), 4_000)
    out["diff_hunk"] = trim(c.get("diff_hunk"), 1_500)
    return out


@tool(
    "github_list_pr_review_comments",
    "List a pull request's review comments (the ones on lines of the diff), oldest first.",
    ListReviews,
    scopes=("repo",),
    keywords=("inline comments", "line comments", "code comments", "diff comments", "review feedback"),
)
async def list_pr_review_comments(args: ListReviews, ctx: ToolContext) -> Any:
    comments, nxt = await _page(ctx, f"/repos/{args.owner}/{args.repo}/pulls/{args.number}/comments", args)
    return {"comments": [_review_comment(c) for c in comments], "nextPage": nxt}


class AddReviewComment(PrRef):
    body: str = Field(min_length=1, max_length=65_536, description="Comment text (Markdown)")
    inReplyTo: int | None = Field(
        default=None,
        ge=1,
        description="Reply to this review comment id (then path/line/commitId are not needed)",
    )
    commitId: str | None = Field(
        default=None,
        description="SHA of the PR commit to comment on (its head commit; commit shas come from github_list_commits)",
    )
    path: str | None = Field(default=None, description="File path in the diff, e.g. 'src/app.py'")
    line: int | None = Field(default=None, ge=1, description="Line of the file in the diff to comment on")
    side: Literal["LEFT", "RIGHT"] = Field(
        default="RIGHT", description="RIGHT: the new version of the line; LEFT: the old one"
    )
    startLine: int | None = Field(
        default=None, ge=1, description="First line, for a comment on a range of lines"
    )


@tool(
    "github_add_pr_review_comment",
    "Comment on a line (or range) of a pull request's diff, or reply to a review comment.",
    AddReviewComment,
    scopes=("repo",),
    keywords=("inline", "line", "code comment", "suggestion", "review feedback", "diff"),
)
async def add_pr_review_comment(args: AddReviewComment, ctx: ToolContext) -> Any:
    base = f"/repos/{args.owner}/{args.repo}/pulls/{args.number}/comments"
    if args.inReplyTo is not None:
        created = await api(ctx, "POST", f"{base}/{args.inReplyTo}/replies", json={"body": args.body})
        return _review_comment(created)
    if not (args.commitId and args.path and args.line):
        raise ToolError("Give commitId, path and line to comment on the diff, or inReplyTo to reply.")
    body = compact(
        {
            "body": args.body,
            "commit_id": args.commitId,
            "path": args.path,
            "line": args.line,
            "side": args.side,
            "start_line": args.startLine,
            "start_side": args.side if args.startLine else None,
        }
    )
    return _review_comment(await api(ctx, "POST", base, json=body))


# -- writing to a repository -----------------------------------------------------------------------

_MAX_FILE_BYTES = 1_000_000  # what one tool call may write; larger files belong in git itself


class PutFile(_Repo):
    path: str = Field(min_length=1, description="File path in the repository, e.g. 'docs/intro.md'")
    content: str = Field(description="The whole new file content (text, at most 1 MB as UTF-8)")
    message: str = Field(min_length=1, description="Commit message")
    branch: str | None = Field(default=None, description="Branch to commit to (default: the default branch)")
    sha: str | None = Field(
        default=None,
        description="Blob sha of the file being replaced (required to update; github_get_file gives it)",
    )


@tool(
    "github_create_or_update_file",
    "Create or update (commit) one text file in a GitHub repository branch.",
    PutFile,
    # Files under .github/workflows/ also need the `workflow` scope.
    scopes=("repo", "workflow"),
    keywords=("commit", "write", "edit", "save", "push", "change", "add file", "fix"),
)
async def create_or_update_file(args: PutFile, ctx: ToolContext) -> Any:
    raw = args.content.encode()
    if len(raw) > _MAX_FILE_BYTES:
        raise ToolError(
            f"content is {len(raw)} bytes; this tool writes files of at most {_MAX_FILE_BYTES} bytes."
        )
    out = await api(
        ctx,
        "PUT",
        f"/repos/{args.owner}/{args.repo}/contents/{args.path}",
        json=compact(
            {
                "message": args.message,
                "content": base64.b64encode(raw).decode(),
                "branch": args.branch,
                "sha": args.sha,
            }
        ),
    )
    return {
        **pick(out.get("content"), "path", "sha", "html_url"),
        "commit": pick(out.get("commit"), "sha", "html_url"),
    }


class CreateBranch(_Repo):
    branch: str = Field(min_length=1, max_length=250, description="Name of the new branch, e.g. 'fix/typo'")
    fromBranch: str | None = Field(
        default=None, description="Branch to start from (default: the default branch)"
    )
    fromSha: str | None = Field(default=None, description="Commit SHA to start from (instead of fromBranch)")


@tool(
    "github_create_branch",
    "Create a branch in a GitHub repository from another branch or a commit.",
    CreateBranch,
    scopes=("repo",),
    keywords=("new branch", "checkout", "branch off", "start"),
)
async def create_branch(args: CreateBranch, ctx: ToolContext) -> Any:
    repo = f"/repos/{args.owner}/{args.repo}"
    sha = args.fromSha
    if sha is None:
        start = args.fromBranch or (await api(ctx, "GET", repo)).get("default_branch")
        sha = ((await api(ctx, "GET", f"{repo}/git/ref/heads/{start}")).get("object") or {}).get("sha")
    ref = await api(ctx, "POST", f"{repo}/git/refs", json={"ref": f"refs/heads/{args.branch}", "sha": sha})
    return {"branch": args.branch, "ref": ref.get("ref"), "sha": (ref.get("object") or {}).get("sha")}


# -- Actions ---------------------------------------------------------------------------------------

_RUN_FIELDS = (
    "id",
    "name",
    "display_title",
    "status",
    "conclusion",
    "event",
    "head_branch",
    "head_sha",
    "run_number",
    "run_attempt",
    "html_url",
    "created_at",
    "updated_at",
)


class ListRuns(_Repo, _Paged):
    workflow: str | None = Field(
        default=None, description="Only runs of this workflow: its file name (e.g. 'ci.yml') or id"
    )
    branch: str | None = Field(default=None, description="Only runs for this branch")
    status: (
        Literal[
            "completed",
            "action_required",
            "cancelled",
            "failure",
            "neutral",
            "skipped",
            "stale",
            "success",
            "timed_out",
            "in_progress",
            "queued",
            "requested",
            "waiting",
            "pending",
        ]
        | None
    ) = Field(default=None, description="Only runs with this status or conclusion")
    event: str | None = Field(default=None, description="Only runs triggered by this event, e.g. 'push'")


@tool(
    "github_list_workflow_runs",
    "List GitHub Actions workflow runs (CI builds) of a repository, newest first, with status and result.",
    ListRuns,
    scopes=("repo",),
    keywords=("ci", "builds", "actions", "pipelines", "checks", "tests", "failed", "status", "jobs"),
)
async def list_workflow_runs(args: ListRuns, ctx: ToolContext) -> Any:
    repo = f"/repos/{args.owner}/{args.repo}/actions"
    path = f"{repo}/workflows/{args.workflow}/runs" if args.workflow else f"{repo}/runs"
    found, nxt = await _page(
        ctx, path, args, {"branch": args.branch, "status": args.status, "event": args.event}
    )
    return {
        "totalCount": found.get("total_count"),
        "runs": pick_many(found.get("workflow_runs"), *_RUN_FIELDS),
        "nextPage": nxt,
    }


class Rerun(_Repo):
    runId: int = Field(ge=1, description="Workflow run id (github_list_workflow_runs)")
    onlyFailed: bool = Field(
        default=False, description="Re-run only the failed jobs (and what they depend on)"
    )


@tool(
    "github_rerun_workflow_run",
    "Re-run a GitHub Actions workflow run, all of its jobs or only the failed ones.",
    Rerun,
    scopes=("repo",),
    keywords=(
        "retry",
        "restart",
        "re-run",
        "rebuild",
        "run again",
        "trigger",
        "ci",
        "build",
        "failed",
        "jobs",
    ),
)
async def rerun_workflow_run(args: Rerun, ctx: ToolContext) -> Any:
    action = "rerun-failed-jobs" if args.onlyFailed else "rerun"
    await api(ctx, "POST", f"/repos/{args.owner}/{args.repo}/actions/runs/{args.runId}/{action}")
    return {"runId": args.runId, "rerunRequested": True, "onlyFailed": args.onlyFailed}


class ListJobs(_Repo, _Paged):
    runId: int = Field(ge=1, description="Workflow run id (github_list_workflow_runs)")
    filter: Literal["latest", "all"] = Field(
        default="latest",
        description="'latest': the jobs of the run's latest attempt; 'all': of every attempt",
    )


@tool(
    "github_list_workflow_jobs",
    "List the jobs of a GitHub Actions workflow run with their status, result and failed steps.",
    ListJobs,
    scopes=("repo",),
    keywords=("ci", "build", "actions", "steps", "failed", "checks", "pipeline"),
)
async def list_workflow_jobs(args: ListJobs, ctx: ToolContext) -> Any:
    path = f"/repos/{args.owner}/{args.repo}/actions/runs/{args.runId}/jobs"
    found, nxt = await _page(ctx, path, args, {"filter": args.filter})
    jobs = []
    for job in found.get("jobs") or []:
        item = pick(
            job, "id", "name", "status", "conclusion", "run_attempt", "started_at", "completed_at", "html_url"
        )
        item["failedSteps"] = [
            s.get("name") for s in job.get("steps") or [] if s.get("conclusion") == "failure"
        ]
        jobs.append(item)
    return {"totalCount": found.get("total_count"), "jobs": jobs, "nextPage": nxt}


# A job's log is read up to this many bytes (logs of long jobs run to tens of megabytes); the
# answer is its last lines, within this many characters.
MAX_LOG_BYTES = 8 * 1024 * 1024
MAX_LOG_CHARS = 60_000
_REDIRECTS = (301, 302, 303, 307, 308)


class GetJobLogs(_Repo):
    jobId: int = Field(ge=1, description="Job id (github_list_workflow_jobs)")
    tailLines: int = Field(
        default=500,
        ge=1,
        le=5000,
        description="How many lines from the end of the log to return (a failure's cause is usually there)",
    )


@tool(
    "github_get_job_logs",
    "Get the log of one GitHub Actions job: its last lines (the earlier ones are left out, and the "
    "answer says how many).",
    GetJobLogs,
    scopes=("repo",),
    keywords=("ci", "build", "output", "error", "failed", "console", "actions", "why did it fail"),
)
async def get_job_logs(args: GetJobLogs, ctx: ToolContext) -> Any:
    resp = await api_response(ctx, "GET", f"/repos/{args.owner}/{args.repo}/actions/jobs/{args.jobId}/logs")
    if resp.status_code in _REDIRECTS:
        # GitHub answers with a short-lived signed URL on another host. The signature is the
        # credential there: the request carries no Authorization header (auth=None skips the
        # injected token) and goes through the same egress guard as every upstream call.
        location = resp.headers.get("location", "")
        if not location.startswith("https://"):
            raise ToolError("GitHub did not give an https address for the job's log.")
        request = ctx.http.build_request("GET", location, headers={"Accept": "text/plain"})
        request.headers.pop("Authorization", None)
        resp = await ctx.http.send(request, auth=None, stream=True)
        try:
            if resp.status_code >= 400:
                detail = (await _read_capped(resp, 2_000)).decode("utf-8", "replace").strip()
                raise UpstreamError(ctx.integration, resp.status_code, detail[:500])
            data = await _read_capped(resp, MAX_LOG_BYTES)
        finally:
            await resp.aclose()
    else:
        data = resp.content  # served directly (GitHub Enterprise Server may)
    return _log_tail(data, args.tailLines, cut=len(data) > MAX_LOG_BYTES)


async def _read_capped(resp: Any, cap: int) -> bytes:
    """At most `cap` + 1 bytes of a streamed body (the extra byte says there was more)."""
    body = bytearray()
    async for chunk in resp.aiter_bytes():
        body.extend(chunk)
        if len(body) > cap:
            return bytes(body[: cap + 1])
    return bytes(body)


def _size(n: int) -> str:
    return f"{n // (1024 * 1024)} MB" if n >= 1024 * 1024 else f"{n} bytes"


def _log_tail(data: bytes, lines: int, *, cut: bool) -> dict[str, Any]:
    if cut:  # up to the bound's last whole line
        data = data[:MAX_LOG_BYTES]
        data = data[: data.rfind(b"\n") + 1] or data
    data = data.removeprefix(b"\xef\xbb\xbf")
    total = data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
    start = len(data.rstrip(b"\n"))
    for _ in range(lines):
        start = data.rfind(b"\n", 0, start)
        if start < 0:
            break
    tail = data[start + 1 :].decode("utf-8", "replace") if start >= 0 else data.decode("utf-8", "replace")
    kept = min(lines, total)
    notes = []
    if cut:
        notes.append(f"the log is longer than {_size(MAX_LOG_BYTES)}: only its start was read")
    if kept < total:
        notes.append(f"{total - kept} earlier lines left out")
    if len(tail) > MAX_LOG_CHARS:
        notes.append(f"{len(tail) - MAX_LOG_CHARS} characters of the first lines shown left out")
        tail = tail[-MAX_LOG_CHARS:]
    text = (f"…[{'; '.join(notes)}]\n" if notes else "") + tail
    return {"lines": kept, "totalLines": None if cut else total, "truncated": bool(notes), "log": text}


TOOLS = [
    list_prs,
    create_pr,
    get_pr,
    list_pr_files,
    get_pr_diff,
    list_releases,
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
    list_comments,
    list_pr_reviews,
    list_pr_review_comments,
    add_pr_review_comment,
    create_or_update_file,
    create_branch,
    list_workflow_runs,
    rerun_workflow_run,
    list_workflow_jobs,
    get_job_logs,
]
