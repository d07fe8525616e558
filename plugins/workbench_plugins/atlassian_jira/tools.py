"""Jira Cloud platform REST API v3 tools (https://developer.atlassian.com/cloud/jira/platform/rest/v3/).

Rich text (descriptions, comments) is Atlassian Document Format in v3: tools accept plain text
(blank lines separate paragraphs) and return plain text extracted from ADF.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any, Literal

from workbench.sdk import ToolError, api, compact, pick, pick_many, trim
from workbench.tools import ArgsModel, Field, ToolContext, tool

from workbench_plugins.atlassian_jira.cloud import SiteArgs, accessible_sites, site_path

_FIELDS = "summary,status,issuetype,priority,assignee,reporter,labels,created,updated,project,parent"


def to_adf(text: str) -> dict[str, Any]:
    """Plain text as an ADF document: one paragraph per blank-line-separated block."""
    paragraphs = [p for p in text.split("\n\n") if p.strip()]
    content = []
    for para in paragraphs:
        nodes: list[dict[str, Any]] = []
        for i, line in enumerate(para.split("\n")):
            if i:
                nodes.append({"type": "hardBreak"})
            if line:
                nodes.append({"type": "text", "text": line})
        content.append({"type": "paragraph", "content": nodes})
    return {"type": "doc", "version": 1, "content": content}


def adf_text(node: Any) -> str | None:
    """The text of an ADF document, blocks separated by newlines (None for no document)."""
    if node is None:
        return None
    if isinstance(node, str):
        return node
    parts: list[str] = []

    def walk(n: Any) -> None:
        kind = n.get("type")
        if kind == "text":
            parts.append(n.get("text", ""))
        elif kind == "hardBreak":
            parts.append("\n")
        elif kind == "mention":
            parts.append((n.get("attrs") or {}).get("text", ""))
        for child in n.get("content") or []:
            walk(child)
        if kind in {"paragraph", "heading", "listItem", "codeBlock", "blockquote", "rule"}:
            parts.append("\n")

    walk(node)
    return "".join(parts).strip()


def _issue(raw: Any) -> dict[str, Any]:
    f = raw.get("fields") or {}
    return {
        "key": raw.get("key"),
        "id": raw.get("id"),
        "summary": f.get("summary"),
        "status": (f.get("status") or {}).get("name"),
        "type": (f.get("issuetype") or {}).get("name"),
        "priority": (f.get("priority") or {}).get("name"),
        "assignee": (f.get("assignee") or {}).get("displayName"),
        "reporter": (f.get("reporter") or {}).get("displayName"),
        "project": (f.get("project") or {}).get("key"),
        "parent": (f.get("parent") or {}).get("key"),
        "labels": f.get("labels") or [],
        "created": f.get("created"),
        "updated": f.get("updated"),
    }


def _comment(raw: Any) -> dict[str, Any]:
    return {
        "id": raw.get("id"),
        "author": (raw.get("author") or {}).get("displayName"),
        "body": trim(adf_text(raw.get("body")), 5_000),
        "created": raw.get("created"),
        "updated": raw.get("updated"),
    }


class _IssueRef(SiteArgs):
    issueKey: str = Field(description="Issue key or id, e.g. 'ACME-42'")


class ListSites(ArgsModel):
    pass


@tool(
    "jira_list_sites",
    "List the Atlassian (Jira/Confluence) sites this connection can reach, with their cloudId.",
    ListSites,
    scopes=(),
    keywords=("cloud", "instances", "workspaces", "organisations", "cloudid", "domains"),
)
async def list_sites(args: ListSites, ctx: ToolContext) -> Any:
    return {"sites": await accessible_sites(ctx)}


class SearchIssues(SiteArgs):
    jql: str = Field(
        min_length=1,
        description="JQL query, e.g. 'project = ACME AND status = \"In Progress\" ORDER BY updated DESC'",
    )
    limit: int = Field(default=25, ge=1, le=100, description="Issues per page (max 100)")
    nextPageToken: str | None = Field(default=None, description="Cursor from the previous page")


@tool(
    "jira_search_issues",
    "Search Jira issues (tickets, bugs, stories) with JQL; returns key, summary, status, assignee.",
    SearchIssues,
    scopes=("read:jira-work",),
    keywords=("find", "query", "filter", "look up", "tickets", "bugs", "backlog", "assigned"),
)
async def search_issues(args: SearchIssues, ctx: ToolContext) -> Any:
    base = await site_path(ctx, args.cloudId, "jira")
    found = await api(
        ctx,
        "GET",
        f"{base}/rest/api/3/search/jql",
        params={
            "jql": args.jql,
            "maxResults": args.limit,
            "fields": _FIELDS,
            "nextPageToken": args.nextPageToken,
        },
    )
    return {
        "issues": [_issue(i) for i in found.get("issues", [])],
        "nextPageToken": found.get("nextPageToken"),
    }


@tool(
    "jira_get_issue",
    "Get one Jira issue with its description.",
    _IssueRef,
    scopes=("read:jira-work",),
    keywords=("show", "view", "details", "open", "read", "ticket", "bug", "story"),
)
async def get_issue(args: _IssueRef, ctx: ToolContext) -> Any:
    base = await site_path(ctx, args.cloudId, "jira")
    raw = await api(
        ctx, "GET", f"{base}/rest/api/3/issue/{args.issueKey}", params={"fields": f"{_FIELDS},description"}
    )
    description = adf_text((raw.get("fields") or {}).get("description"))
    return {**_issue(raw), "description": trim(description, 10_000)}


class CreateIssue(SiteArgs):
    projectKey: str = Field(description="Project key, e.g. 'ACME'")
    summary: str = Field(min_length=1, description="One-line title")
    issueType: str = Field(default="Task", description="Issue type name: Task, Bug, Story, Epic, ...")
    description: str | None = Field(default=None, description="Plain text; blank lines separate paragraphs")
    labels: list[str] | None = Field(default=None, description="Labels (no spaces)")
    priority: str | None = Field(default=None, description="Priority name, e.g. 'High'")
    assigneeAccountId: str | None = Field(default=None, description="Assignee's accountId (jira_find_users)")
    parentKey: str | None = Field(default=None, description="Parent issue key (for a sub-task or epic child)")


@tool(
    "jira_create_issue",
    "Create a Jira issue (ticket, bug, task, story) in a project.",
    CreateIssue,
    scopes=("write:jira-work",),
    keywords=(
        "new",
        "file",
        "log",
        "raise",
        "report",
        "open",
        "add",
        "ticket",
        "bug",
        "story",
        "task",
        "epic",
    ),
)
async def create_issue(args: CreateIssue, ctx: ToolContext) -> Any:
    base = await site_path(ctx, args.cloudId, "jira")
    fields = compact(
        {
            "project": {"key": args.projectKey},
            "summary": args.summary,
            "issuetype": {"name": args.issueType},
            "description": to_adf(args.description) if args.description else None,
            "labels": args.labels,
            "priority": {"name": args.priority} if args.priority else None,
            "assignee": {"accountId": args.assigneeAccountId} if args.assigneeAccountId else None,
            "parent": {"key": args.parentKey} if args.parentKey else None,
        }
    )
    created = await api(ctx, "POST", f"{base}/rest/api/3/issue", json={"fields": fields})
    return pick(created, "id", "key", "self")


class UpdateIssue(_IssueRef):
    summary: str | None = Field(default=None, description="New title")
    description: str | None = Field(default=None, description="New description (plain text)")
    labels: list[str] | None = Field(default=None, description="Replace the labels with these")
    priority: str | None = Field(default=None, description="New priority name")


@tool(
    "jira_update_issue",
    "Edit a Jira issue's fields (summary, description, labels, priority).",
    UpdateIssue,
    scopes=("write:jira-work",),
    keywords=("edit", "change", "modify", "set", "rename", "fix", "ticket"),
)
async def update_issue(args: UpdateIssue, ctx: ToolContext) -> Any:
    fields = compact(
        {
            "summary": args.summary,
            "description": to_adf(args.description) if args.description is not None else None,
            "labels": args.labels,
            "priority": {"name": args.priority} if args.priority else None,
        }
    )
    if not fields:
        raise ToolError("Nothing to update: give summary, description, labels or priority.")
    base = await site_path(ctx, args.cloudId, "jira")
    await api(ctx, "PUT", f"{base}/rest/api/3/issue/{args.issueKey}", json={"fields": fields})
    return {"key": args.issueKey, "updated": sorted(fields)}


class DeleteIssue(_IssueRef):
    deleteSubtasks: bool = Field(
        default=False,
        description="Also delete its subtasks (Jira refuses to delete an issue that has any otherwise)",
    )


@tool(
    "jira_delete_issue",
    "Delete a Jira issue for good (and its subtasks when asked).",
    DeleteIssue,
    scopes=("write:jira-work",),
    keywords=("remove", "erase", "destroy", "get rid of", "ticket", "bug"),
)
async def delete_issue(args: DeleteIssue, ctx: ToolContext) -> Any:
    base = await site_path(ctx, args.cloudId, "jira")
    await api(
        ctx,
        "DELETE",
        f"{base}/rest/api/3/issue/{args.issueKey}",
        params={"deleteSubtasks": "true" if args.deleteSubtasks else None},
    )
    return {"key": args.issueKey, "deleted": True}


class AddComment(_IssueRef):
    body: str = Field(min_length=1, description="Comment text (plain text)")


@tool(
    "jira_add_comment",
    "Add a comment to a Jira issue.",
    AddComment,
    scopes=("write:jira-work",),
    keywords=("reply", "note", "remark", "write", "post", "ticket", "mention"),
)
async def add_comment(args: AddComment, ctx: ToolContext) -> Any:
    base = await site_path(ctx, args.cloudId, "jira")
    raw = await api(
        ctx, "POST", f"{base}/rest/api/3/issue/{args.issueKey}/comment", json={"body": to_adf(args.body)}
    )
    return _comment(raw)


class ListComments(_IssueRef):
    limit: int = Field(default=20, ge=1, le=100, description="Comments per page")
    startAt: int = Field(default=0, ge=0, description="Offset (use nextStartAt)")


class UpdateComment(_IssueRef):
    commentId: str = Field(description="The comment's id, from jira_list_comments")
    body: str = Field(min_length=1, description="The comment's new text (plain text); it replaces the old")


@tool(
    "jira_update_comment",
    "Edit the text of a comment on a Jira issue.",
    UpdateComment,
    scopes=("write:jira-work",),
    keywords=("edit", "change", "fix", "correct", "rewrite", "reply", "remark"),
)
async def update_comment(args: UpdateComment, ctx: ToolContext) -> Any:
    base = await site_path(ctx, args.cloudId, "jira")
    raw = await api(
        ctx,
        "PUT",
        f"{base}/rest/api/3/issue/{args.issueKey}/comment/{args.commentId}",
        json={"body": to_adf(args.body)},
    )
    return _comment(raw)


@tool(
    "jira_list_comments",
    "List comments on a Jira issue, newest first.",
    ListComments,
    scopes=("read:jira-work",),
    keywords=("show", "read", "discussion", "replies", "history", "ticket"),
)
async def list_comments(args: ListComments, ctx: ToolContext) -> Any:
    base = await site_path(ctx, args.cloudId, "jira")
    page = await api(
        ctx,
        "GET",
        f"{base}/rest/api/3/issue/{args.issueKey}/comment",
        params={"startAt": args.startAt, "maxResults": args.limit, "orderBy": "-created"},
    )
    comments = page.get("comments", [])
    end = args.startAt + len(comments)
    return {
        "comments": [_comment(c) for c in comments],
        "total": page.get("total"),
        "nextStartAt": end if end < (page.get("total") or 0) else None,
    }


@tool(
    "jira_list_transitions",
    "List the workflow transitions (status changes) available for a Jira issue now.",
    _IssueRef,
    scopes=("read:jira-work",),
    keywords=("statuses", "next status", "allowed", "options", "workflow", "possible", "moves"),
)
async def list_transitions(args: _IssueRef, ctx: ToolContext) -> Any:
    base = await site_path(ctx, args.cloudId, "jira")
    found = await api(ctx, "GET", f"{base}/rest/api/3/issue/{args.issueKey}/transitions")
    return {"transitions": pick_many(found.get("transitions"), "id", "name", "to.name")}


class Transition(_IssueRef):
    transition: str = Field(
        description="Transition id, transition name or target status name, e.g. 'Done' or '31'"
    )


@tool(
    "jira_transition_issue",
    "Move a Jira issue to another status (e.g. In Progress, Done) via a workflow transition.",
    Transition,
    scopes=("read:jira-work", "write:jira-work"),
    keywords=("status", "move", "mark", "progress", "done", "resolve", "close", "reopen", "start", "ticket"),
)
async def transition_issue(args: Transition, ctx: ToolContext) -> Any:
    base = await site_path(ctx, args.cloudId, "jira")
    path = f"{base}/rest/api/3/issue/{args.issueKey}/transitions"
    available = (await api(ctx, "GET", path)).get("transitions", [])
    wanted = args.transition.casefold()
    match = next(
        (
            t
            for t in available
            if wanted in (str(t.get("id")), str(t.get("name", "")).casefold())
            or wanted == str((t.get("to") or {}).get("name", "")).casefold()
        ),
        None,
    )
    if match is None:
        names = ", ".join(f"{t.get('name')} (id {t.get('id')})" for t in available) or "none"
        raise ToolError(f"No transition '{args.transition}' for {args.issueKey}; available: {names}")
    await api(ctx, "POST", path, json={"transition": {"id": match["id"]}})
    return {
        "key": args.issueKey,
        "transition": match.get("name"),
        "status": (match.get("to") or {}).get("name"),
    }


class Assign(_IssueRef):
    accountId: str | None = Field(description="Assignee's accountId (jira_find_users); null to unassign")


@tool(
    "jira_assign_issue",
    "Assign a Jira issue to a user (or unassign it).",
    Assign,
    scopes=("write:jira-work",),
    keywords=("assignee", "owner", "give", "reassign", "delegate", "take", "ticket"),
)
async def assign_issue(args: Assign, ctx: ToolContext) -> Any:
    base = await site_path(ctx, args.cloudId, "jira")
    await api(
        ctx, "PUT", f"{base}/rest/api/3/issue/{args.issueKey}/assignee", json={"accountId": args.accountId}
    )
    return {"key": args.issueKey, "assignee": args.accountId}


class ListProjects(SiteArgs):
    query: str | None = Field(default=None, description="Filter by project key or name (substring)")
    limit: int = Field(default=50, ge=1, le=100, description="Projects per page")
    startAt: int = Field(default=0, ge=0, description="Offset (use nextStartAt)")


@tool(
    "jira_list_projects",
    "List (or find by name) the Jira projects visible to the user.",
    ListProjects,
    scopes=("read:jira-work",),
    keywords=("show", "project keys", "browse"),
)
async def list_projects(args: ListProjects, ctx: ToolContext) -> Any:
    base = await site_path(ctx, args.cloudId, "jira")
    page = await api(
        ctx,
        "GET",
        f"{base}/rest/api/3/project/search",
        params={"query": args.query, "maxResults": args.limit, "startAt": args.startAt},
    )
    values = page.get("values", [])
    return {
        "projects": pick_many(values, "id", "key", "name", "projectTypeKey"),
        "nextStartAt": None if page.get("isLast", True) else args.startAt + len(values),
    }


class FindUsers(SiteArgs):
    query: str = Field(min_length=1, description="Name or email to look for")
    limit: int = Field(default=10, ge=1, le=50, description="Max users")


@tool(
    "jira_find_users",
    "Find Jira users by name or email, to get the accountId for assigning issues.",
    FindUsers,
    scopes=("read:jira-user",),
    keywords=("search", "look up", "people", "person", "member", "colleague", "account id"),
)
async def find_users(args: FindUsers, ctx: ToolContext) -> Any:
    base = await site_path(ctx, args.cloudId, "jira")
    users = await api(
        ctx, "GET", f"{base}/rest/api/3/user/search", params={"query": args.query, "maxResults": args.limit}
    )
    return {"users": pick_many(users, "accountId", "displayName", "emailAddress", "active")}


# -- creating issues: types and fields per project -------------------------------------------------


def _offset_page(page: Any, start: int, key: str) -> tuple[list[Any], int | None]:
    """A startAt/maxResults page and the next offset (None on the last page)."""
    items = page.get(key) or []
    end = start + len(items)
    if "isLast" in page:
        return items, None if page["isLast"] else end
    return items, end if end < (page.get("total") or 0) else None


class _ProjectRef(SiteArgs):
    projectKey: str = Field(description="Project key or id, e.g. 'ACME'")
    limit: int = Field(default=50, ge=1, le=200, description="Results per page")
    startAt: int = Field(default=0, ge=0, description="Offset (use nextStartAt)")


@tool(
    "jira_list_issue_types",
    "List the issue types (Bug, Task, Story, Epic, Sub-task...) that can be created in a Jira project.",
    _ProjectRef,
    scopes=("read:jira-work",),
    keywords=("kinds", "bug", "story", "epic", "task", "subtask", "categories"),
)
async def list_issue_types(args: _ProjectRef, ctx: ToolContext) -> Any:
    base = await site_path(ctx, args.cloudId, "jira")
    page = await api(
        ctx,
        "GET",
        f"{base}/rest/api/3/issue/createmeta/{args.projectKey}/issuetypes",
        params={"startAt": args.startAt, "maxResults": args.limit},
    )
    types, nxt = _offset_page(page, args.startAt, "issueTypes")
    return {"issueTypes": pick_many(types, "id", "name", "subtask", "description"), "nextStartAt": nxt}


class CreateFields(_ProjectRef):
    issueTypeId: str = Field(description="Issue type id (jira_list_issue_types)")


@tool(
    "jira_get_create_fields",
    "List the fields of a Jira project's issue type when creating an issue: which are required, their "
    "types and allowed values.",
    CreateFields,
    scopes=("read:jira-work",),
    keywords=("required", "mandatory", "form", "metadata", "custom fields", "allowed values", "createmeta"),
)
async def get_create_fields(args: CreateFields, ctx: ToolContext) -> Any:
    base = await site_path(ctx, args.cloudId, "jira")
    page = await api(
        ctx,
        "GET",
        f"{base}/rest/api/3/issue/createmeta/{args.projectKey}/issuetypes/{args.issueTypeId}",
        params={"startAt": args.startAt, "maxResults": args.limit},
    )
    fields, nxt = _offset_page(page, args.startAt, "fields")
    shaped = []
    for f in fields:
        allowed = [
            v.get("name") or v.get("value") or v.get("id") for v in (f.get("allowedValues") or [])[:50]
        ]
        shaped.append(
            {
                **pick(f, "fieldId", "name", "required", "schema.type", "schema.items", "hasDefaultValue"),
                "allowedValues": allowed or None,
            }
        )
    return {"fields": shaped, "nextStartAt": nxt}


# -- links and worklogs ----------------------------------------------------------------------------


class ListLinkTypes(SiteArgs):
    pass


@tool(
    "jira_list_link_types",
    "List the Jira issue link types (Blocks, Duplicate, Relates...) with their inward and outward wording.",
    ListLinkTypes,
    scopes=("read:jira-work",),
    keywords=("relationships", "relations", "blocks", "duplicates", "relates", "dependency"),
)
async def list_link_types(args: ListLinkTypes, ctx: ToolContext) -> Any:
    base = await site_path(ctx, args.cloudId, "jira")
    found = await api(ctx, "GET", f"{base}/rest/api/3/issueLinkType")
    return {"linkTypes": pick_many(found.get("issueLinkTypes"), "id", "name", "inward", "outward")}


class LinkIssues(SiteArgs):
    type: str = Field(min_length=1, description="Link type name, e.g. 'Blocks' (jira_list_link_types)")
    outwardIssue: str = Field(description="Issue on the outward side, e.g. the one that blocks ('ACME-1')")
    inwardIssue: str = Field(description="Issue on the inward side, e.g. the one that is blocked ('ACME-2')")
    comment: str | None = Field(default=None, description="Comment to add to the outward issue")


@tool(
    "jira_link_issues",
    "Link two Jira issues (e.g. ACME-1 blocks ACME-2, duplicates, relates to).",
    LinkIssues,
    scopes=("write:jira-work",),
    keywords=("connect", "relate", "relationship", "dependency", "depends", "blocked", "duplicate"),
)
async def link_issues(args: LinkIssues, ctx: ToolContext) -> Any:
    base = await site_path(ctx, args.cloudId, "jira")
    body: dict[str, Any] = {
        "type": {"name": args.type},
        "outwardIssue": {"key": args.outwardIssue},
        "inwardIssue": {"key": args.inwardIssue},
    }
    if args.comment:
        body["comment"] = {"body": to_adf(args.comment)}
    await api(ctx, "POST", f"{base}/rest/api/3/issueLink", json=body)
    return {
        "linked": True,
        "type": args.type,
        "outwardIssue": args.outwardIssue,
        "inwardIssue": args.inwardIssue,
    }


def _worklog(w: Any) -> dict[str, Any]:
    return {
        **pick(w, "id", "author.displayName", "timeSpent", "timeSpentSeconds", "started"),
        "comment": trim(adf_text(w.get("comment")), 2_000),
    }


class ListWorklogs(_IssueRef):
    limit: int = Field(default=50, ge=1, le=1000, description="Worklogs per page")
    startAt: int = Field(default=0, ge=0, description="Offset (use nextStartAt)")


@tool(
    "jira_list_worklogs",
    "List the time logged on a Jira issue (who, how long, when), oldest first.",
    ListWorklogs,
    scopes=("read:jira-work",),
    keywords=("time", "hours", "time tracking", "timesheet", "spent", "logged", "effort"),
)
async def list_worklogs(args: ListWorklogs, ctx: ToolContext) -> Any:
    base = await site_path(ctx, args.cloudId, "jira")
    page = await api(
        ctx,
        "GET",
        f"{base}/rest/api/3/issue/{args.issueKey}/worklog",
        params={"startAt": args.startAt, "maxResults": args.limit},
    )
    logs, nxt = _offset_page(page, args.startAt, "worklogs")
    return {"worklogs": [_worklog(w) for w in logs], "total": page.get("total"), "nextStartAt": nxt}


class AddWorklog(_IssueRef):
    timeSpent: str = Field(
        pattern=r"^\s*(\d+(\.\d+)?[wdhm]\s*)+$",
        description="Time spent in Jira's format, e.g. '3h 30m' or '1d'",
    )
    started: str | None = Field(
        default=None,
        pattern=r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}[+-]\d{4}$",
        description="When the work started, e.g. '2024-05-01T09:00:00.000+0000' (default: now)",
    )
    comment: str | None = Field(default=None, description="What was done")


@tool(
    "jira_add_worklog",
    "Log time spent on a Jira issue (a worklog), optionally with when it started and a comment.",
    AddWorklog,
    scopes=("write:jira-work",),
    keywords=("log time", "track time", "hours", "timesheet", "spent", "record", "effort"),
)
async def add_worklog(args: AddWorklog, ctx: ToolContext) -> Any:
    base = await site_path(ctx, args.cloudId, "jira")
    body = compact(
        {
            "timeSpent": args.timeSpent.strip(),
            "started": args.started,
            "comment": to_adf(args.comment) if args.comment else None,
        }
    )
    return _worklog(await api(ctx, "POST", f"{base}/rest/api/3/issue/{args.issueKey}/worklog", json=body))


# -- boards and sprints (Jira Software Agile API) --------------------------------------------------


class ListBoards(SiteArgs):
    projectKey: str | None = Field(default=None, description="Only boards of this project (key or id)")
    type: Literal["scrum", "kanban", "simple"] | None = Field(
        default=None, description="Only this board type"
    )
    name: str | None = Field(default=None, description="Only boards whose name contains this")
    limit: int = Field(default=50, ge=1, le=50, description="Boards per page (max 50)")
    startAt: int = Field(default=0, ge=0, description="Offset (use nextStartAt)")


@tool(
    "jira_list_boards",
    "List Jira Software boards (scrum and kanban), optionally for one project.",
    ListBoards,
    scopes=("read:board-scope:jira-software", "read:project:jira"),
    keywords=("scrum", "kanban", "show"),
)
async def list_boards(args: ListBoards, ctx: ToolContext) -> Any:
    base = await site_path(ctx, args.cloudId, "jira")
    page = await api(
        ctx,
        "GET",
        f"{base}/rest/agile/1.0/board",
        params={
            "projectKeyOrId": args.projectKey,
            "type": args.type,
            "name": args.name,
            "startAt": args.startAt,
            "maxResults": args.limit,
        },
    )
    boards, nxt = _offset_page(page, args.startAt, "values")
    return {"boards": pick_many(boards, "id", "name", "type", "location.projectKey"), "nextStartAt": nxt}


class ListSprints(SiteArgs):
    boardId: int = Field(ge=1, description="Board id (jira_list_boards); must be a scrum board")
    state: list[Literal["future", "active", "closed"]] | None = Field(
        default=None, description="Only sprints in these states, e.g. ['active']"
    )
    limit: int = Field(default=50, ge=1, le=50, description="Sprints per page (max 50)")
    startAt: int = Field(default=0, ge=0, description="Offset (use nextStartAt)")


@tool(
    "jira_list_sprints",
    "List the sprints of a Jira scrum board (active, future, closed) with their dates and goals.",
    ListSprints,
    scopes=("read:sprint:jira-software",),
    keywords=("iterations", "active sprint", "current", "scrum", "running", "upcoming"),
)
async def list_sprints(args: ListSprints, ctx: ToolContext) -> Any:
    base = await site_path(ctx, args.cloudId, "jira")
    page = await api(
        ctx,
        "GET",
        f"{base}/rest/agile/1.0/board/{args.boardId}/sprint",
        params={
            "state": ",".join(args.state) if args.state else None,
            "startAt": args.startAt,
            "maxResults": args.limit,
        },
    )
    sprints, nxt = _offset_page(page, args.startAt, "values")
    return {
        "sprints": pick_many(sprints, "id", "name", "state", "startDate", "endDate", "completeDate", "goal"),
        "nextStartAt": nxt,
    }


class SprintIssues(SiteArgs):
    sprintId: int = Field(ge=1, description="Sprint id (jira_list_sprints)")
    jql: str | None = Field(default=None, description="Extra JQL filter, e.g. 'status != Done'")
    limit: int = Field(default=50, ge=1, le=100, description="Issues per page")
    startAt: int = Field(default=0, ge=0, description="Offset (use nextStartAt)")


@tool(
    "jira_list_sprint_issues",
    "List the issues in a Jira sprint, optionally filtered with JQL.",
    SprintIssues,
    scopes=("read:sprint:jira-software", "read:issue-details:jira", "read:jql:jira"),
    keywords=("sprint backlog", "tickets", "current sprint", "scope", "planned"),
)
async def list_sprint_issues(args: SprintIssues, ctx: ToolContext) -> Any:
    base = await site_path(ctx, args.cloudId, "jira")
    page = await api(
        ctx,
        "GET",
        f"{base}/rest/agile/1.0/sprint/{args.sprintId}/issue",
        params={"jql": args.jql, "fields": _FIELDS, "startAt": args.startAt, "maxResults": args.limit},
    )
    issues, nxt = _offset_page(page, args.startAt, "issues")
    return {"issues": [_issue(i) for i in issues], "total": page.get("total"), "nextStartAt": nxt}


class MoveToSprint(SiteArgs):
    sprintId: int = Field(ge=1, description="Sprint id to move the issues into, from jira_list_sprints")
    issueKeys: list[str] = Field(
        min_length=1, max_length=50, description="Issue keys, at most 50, e.g. ['ACME-1']"
    )


@tool(
    "jira_move_issues_to_sprint",
    "Move Jira issues (up to 50) into a sprint.",
    MoveToSprint,
    scopes=("write:sprint:jira-software",),
    keywords=("add", "put", "plan", "schedule", "tickets", "sprint planning", "next sprint"),
)
async def move_issues_to_sprint(args: MoveToSprint, ctx: ToolContext) -> Any:
    base = await site_path(ctx, args.cloudId, "jira")
    await api(
        ctx, "POST", f"{base}/rest/agile/1.0/sprint/{args.sprintId}/issue", json={"issues": args.issueKeys}
    )
    return {"sprintId": args.sprintId, "moved": args.issueKeys}


# -- attachments -----------------------------------------------------------------------------------

# What one added attachment may hold (decoded); the MCP request carrying it is capped at 4 MiB too.
MAX_ATTACHMENT_BYTES = 10 * 1024 * 1024
# The usual types by extension (a table: the mimetypes module reads system files on first use).
_MEDIA_TYPES = {
    "txt": "text/plain",
    "log": "text/plain",
    "md": "text/markdown",
    "csv": "text/csv",
    "html": "text/html",
    "json": "application/json",
    "xml": "application/xml",
    "yaml": "application/yaml",
    "yml": "application/yaml",
    "pdf": "application/pdf",
    "zip": "application/zip",
    "png": "image/png",
    "jpg": "image/jpeg",
    "jpeg": "image/jpeg",
    "gif": "image/gif",
    "svg": "image/svg+xml",
}
_FILENAME = r"^[^/\\\x00-\x1f\x7f]+$"


def _attachment(raw: Any) -> dict[str, Any]:
    return {
        **pick(raw, "id", "filename", "mimeType", "size", "created", "author.displayName"),
        "contentUrl": raw.get("content"),
    }


@tool(
    "jira_list_attachments",
    "List the files attached to a Jira issue (name, type, size, who added it, download link).",
    _IssueRef,
    scopes=("read:jira-work",),
    keywords=("files", "uploads", "screenshots", "documents", "images", "show", "ticket"),
)
async def list_attachments(args: _IssueRef, ctx: ToolContext) -> Any:
    base = await site_path(ctx, args.cloudId, "jira")
    raw = await api(ctx, "GET", f"{base}/rest/api/3/issue/{args.issueKey}", params={"fields": "attachment"})
    files = ((raw.get("fields") or {}).get("attachment")) or []
    return {"key": raw.get("key"), "attachments": [_attachment(a) for a in files]}


class AddAttachment(_IssueRef):
    filename: str = Field(
        min_length=1, max_length=255, pattern=_FILENAME, description="File name, e.g. 'report.csv'"
    )
    text: str | None = Field(default=None, description="The file's content as text (saved as UTF-8)")
    contentBase64: str | None = Field(
        default=None, description="The file's content, base64-encoded (for binary files; instead of text)"
    )
    mediaType: str | None = Field(
        default=None,
        max_length=255,
        pattern=r"^[\w.+-]+/[\w.+-]+$",
        description="MIME type, e.g. 'text/csv' (default: guessed from the file name)",
    )


def _content(args: AddAttachment) -> bytes:
    if (args.text is None) == (args.contentBase64 is None):
        raise ToolError("Give the file's content as text or as contentBase64 (one of them).")
    if args.text is not None:
        data = args.text.encode()
    else:
        encoded = "".join(args.contentBase64.split())  # type: ignore[union-attr]
        if len(encoded) > (MAX_ATTACHMENT_BYTES + 2) // 3 * 4:
            raise ToolError(f"The file is larger than {MAX_ATTACHMENT_BYTES // (1024 * 1024)} MB.")
        try:
            data = base64.b64decode(encoded, validate=True)
        except binascii.Error:
            raise ToolError("contentBase64 is not valid base64.") from None
    if len(data) > MAX_ATTACHMENT_BYTES:
        raise ToolError(f"The file is larger than {MAX_ATTACHMENT_BYTES // (1024 * 1024)} MB.")
    return data


@tool(
    "jira_add_attachment",
    "Attach a file to a Jira issue, its content given as text or base64.",
    AddAttachment,
    scopes=("write:jira-work",),
    keywords=("upload", "file", "attach", "screenshot", "log", "document", "ticket"),
)
async def add_attachment(args: AddAttachment, ctx: ToolContext) -> Any:
    data = _content(args)
    ext = args.filename.rsplit(".", 1)[-1].lower() if "." in args.filename else ""
    kind = args.mediaType or _MEDIA_TYPES.get(ext, "application/octet-stream")
    base = await site_path(ctx, args.cloudId, "jira")
    added = await api(
        ctx,
        "POST",
        f"{base}/rest/api/3/issue/{args.issueKey}/attachments",
        files={"file": (args.filename, data, kind)},
        # Jira refuses a multipart POST without it (XSRF protection).
        headers={"X-Atlassian-Token": "no-check"},
    )
    return {"key": args.issueKey, "attachments": [_attachment(a) for a in added or []]}


TOOLS = [
    list_sites,
    search_issues,
    get_issue,
    create_issue,
    update_issue,
    delete_issue,
    add_comment,
    update_comment,
    list_comments,
    list_transitions,
    transition_issue,
    assign_issue,
    list_projects,
    find_users,
    list_issue_types,
    get_create_fields,
    list_link_types,
    link_issues,
    list_worklogs,
    add_worklog,
    list_boards,
    list_sprints,
    list_sprint_issues,
    move_issues_to_sprint,
    list_attachments,
    add_attachment,
]
