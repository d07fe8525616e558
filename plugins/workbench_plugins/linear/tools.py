"""Linear GraphQL tools (https://developers.linear.app/docs/graphql/working-with-the-graphql-api).

Every call is a POST to /graphql with `{query, variables}`. Linear reports failures as an
`errors` array — with HTTP 400 for invalid queries, and sometimes with HTTP 200 and partial
`data` — so both become the tool's error. Connections page Relay-style (`first`/`after`,
`pageInfo.endCursor`).
"""

from __future__ import annotations

from typing import Any, Literal

from workbench.sdk import ToolError, UpstreamError, compact
from workbench.tools import ArgsModel, Field, ToolContext, tool

_ISSUE_FIELDS = """
      id identifier title priority priorityLabel url createdAt updatedAt dueDate
      state { name type } assignee { id name } team { key } project { name }
"""
_PAGE = "pageInfo { hasNextPage endCursor }"

LIST_ISSUES = f"""query Issues($first: Int, $after: String, $filter: IssueFilter) {{
  issues(first: $first, after: $after, filter: $filter, orderBy: updatedAt) {{
    nodes {{ {_ISSUE_FIELDS} }}
    {_PAGE}
  }}
}}"""

SEARCH_ISSUES = f"""query SearchIssues($term: String!, $first: Int, $after: String, $includeComments: Boolean) {{
  searchIssues(term: $term, first: $first, after: $after, includeComments: $includeComments) {{
    nodes {{ {_ISSUE_FIELDS} }}
    {_PAGE}
  }}
}}"""

GET_ISSUE = f"""query Issue($id: String!) {{
  issue(id: $id) {{
    {_ISSUE_FIELDS}
    description
    labels {{ nodes {{ name }} }}
    comments(first: 50) {{ nodes {{ id body createdAt user {{ name }} }} }}
  }}
}}"""

CREATE_ISSUE = """mutation IssueCreate($input: IssueCreateInput!) {
  issueCreate(input: $input) { success issue { id identifier title url } }
}"""

UPDATE_ISSUE = """mutation IssueUpdate($id: String!, $input: IssueUpdateInput!) {
  issueUpdate(id: $id, input: $input) { success issue { id identifier title url state { name } } }
}"""

CREATE_COMMENT = """mutation CommentCreate($input: CommentCreateInput!) {
  commentCreate(input: $input) { success comment { id body url createdAt } }
}"""

LIST_TEAMS = f"""query Teams($first: Int, $after: String) {{
  teams(first: $first, after: $after) {{ nodes {{ id key name description }} {_PAGE} }}
}}"""

LIST_PROJECTS = f"""query Projects($first: Int, $after: String) {{
  projects(first: $first, after: $after) {{
    nodes {{ id name status {{ name type }} progress targetDate url }} {_PAGE}
  }}
}}"""

LIST_USERS = f"""query Users($first: Int, $after: String) {{
  users(first: $first, after: $after) {{ nodes {{ id name displayName email active }} {_PAGE} }}
}}"""

LIST_STATES = f"""query WorkflowStates($first: Int, $after: String, $filter: WorkflowStateFilter) {{
  workflowStates(first: $first, after: $after, filter: $filter) {{
    nodes {{ id name type position team {{ key }} }}
    {_PAGE}
  }}
}}"""

LIST_LABELS = f"""query IssueLabels($first: Int, $after: String, $filter: IssueLabelFilter) {{
  issueLabels(first: $first, after: $after, filter: $filter) {{ nodes {{ id name color team {{ key }} }} {_PAGE} }}
}}"""

VIEWER = """query Viewer {
  viewer { id name displayName email organization { name urlKey } }
}"""


async def gql(ctx: ToolContext, query: str, variables: dict[str, Any] | None = None) -> Any:
    resp = await ctx.http.request("POST", "/graphql", json={"query": query, "variables": variables or {}})
    try:
        body = resp.json()
    except ValueError:
        body = {}
    errors = body.get("errors") if isinstance(body, dict) else None
    if resp.status_code >= 400 or errors:
        detail = errors[0].get("message", "") if errors else resp.text[:500]
        raise UpstreamError(ctx.integration, resp.status_code, detail)
    return body.get("data") or {}


def _issue(node: dict[str, Any] | None) -> dict[str, Any] | None:
    if node is None:
        return None
    return {
        "id": node.get("id"),
        "identifier": node.get("identifier"),
        "title": node.get("title"),
        "state": (node.get("state") or {}).get("name"),
        "priority": node.get("priorityLabel"),
        "assignee": (node.get("assignee") or {}).get("name"),
        "team": (node.get("team") or {}).get("key"),
        "project": (node.get("project") or {}).get("name"),
        "dueDate": node.get("dueDate"),
        "url": node.get("url"),
        "updatedAt": node.get("updatedAt"),
    }


def _conn(conn: dict[str, Any], key: str, shape: Any = None) -> dict[str, Any]:
    nodes = conn.get("nodes") or []
    info = conn.get("pageInfo") or {}
    return {
        key: [shape(n) for n in nodes] if shape else nodes,
        "nextCursor": info.get("endCursor") if info.get("hasNextPage") else None,
    }


class Page(ArgsModel):
    perPage: int = Field(default=25, ge=1, le=100, description="Results per page (max 100)")
    cursor: str | None = Field(default=None, description="nextCursor from the previous call")


class ListIssues(Page):
    team_id: str | None = Field(
        default=None, description="Only this team's issues (team id from linear_list_teams)"
    )
    assigned_to_me: bool = Field(default=False, description="Only issues assigned to the connected user")
    state: str | None = Field(
        default=None, description="Only issues in this workflow state, e.g. 'In Progress'"
    )
    open_only: bool = Field(default=False, description="Skip completed and canceled issues")


@tool(
    "linear_list_issues",
    "List Linear issues (tickets), most recently updated first, filtered by team, assignee or state.",
    ListIssues,
    scopes=("read",),
    keywords=("tickets", "show", "assigned", "backlog", "bugs"),
)
async def list_issues(args: ListIssues, ctx: ToolContext) -> Any:
    flt: dict[str, Any] = {}
    if args.team_id:
        flt["team"] = {"id": {"eq": args.team_id}}
    if args.assigned_to_me:
        flt["assignee"] = {"isMe": {"eq": True}}
    if args.state:
        flt["state"] = {"name": {"eqIgnoreCase": args.state}}
    elif args.open_only:
        flt["state"] = {"type": {"nin": ["completed", "canceled"]}}
    variables = compact({"first": args.perPage, "after": args.cursor, "filter": flt or None})
    data = await gql(ctx, LIST_ISSUES, variables)
    return _conn(data.get("issues") or {}, "issues", _issue)


class SearchIssues(Page):
    term: str = Field(min_length=1, description="Words to search for in issue titles and descriptions")
    include_comments: bool = Field(default=False, description="Also search comment text")


@tool(
    "linear_search_issues",
    "Full-text search Linear issues (tickets) by words.",
    SearchIssues,
    scopes=("read",),
    keywords=("find", "look for", "query", "tickets", "bugs", "words"),
)
async def search_issues(args: SearchIssues, ctx: ToolContext) -> Any:
    variables = compact(
        {
            "term": args.term,
            "first": args.perPage,
            "after": args.cursor,
            "includeComments": args.include_comments,
        }
    )
    data = await gql(ctx, SEARCH_ISSUES, variables)
    return _conn(data.get("searchIssues") or {}, "issues", _issue)


class IssueId(ArgsModel):
    id: str = Field(
        description="Issue id or identifier, e.g. ENG-123 (from linear_list_issues or linear_search_issues)"
    )


@tool(
    "linear_get_issue",
    "Get a Linear issue with its description, labels and its first 50 comments.",
    IssueId,
    scopes=("read",),
    keywords=("show", "details", "view", "open", "ticket"),
)
async def get_issue(args: IssueId, ctx: ToolContext) -> Any:
    node = (await gql(ctx, GET_ISSUE, {"id": args.id})).get("issue")
    out = _issue(node) or {}
    out["description"] = node.get("description") if node else None
    out["labels"] = [label.get("name") for label in ((node or {}).get("labels") or {}).get("nodes") or []]
    out["comments"] = [
        {
            "id": c.get("id"),
            "body": c.get("body"),
            "author": (c.get("user") or {}).get("name"),
            "createdAt": c.get("createdAt"),
        }
        for c in ((node or {}).get("comments") or {}).get("nodes") or []
    ]
    return out


class CreateIssue(ArgsModel):
    team_id: str = Field(description="Team id the issue belongs to (see linear_list_teams)")
    title: str = Field(min_length=1, description="Issue title")
    description: str | None = Field(default=None, description="Markdown description")
    priority: int | None = Field(
        default=None, ge=0, le=4, description="0 none, 1 urgent, 2 high, 3 medium, 4 low"
    )
    assignee_id: str | None = Field(default=None, description="User id to assign, from linear_list_users")
    state_id: str | None = Field(
        default=None, description="Workflow state id (see linear_list_workflow_states)"
    )
    label_ids: list[str] | None = Field(default=None, description="Label ids, from linear_list_labels")
    project_id: str | None = Field(default=None, description="Project id, from linear_list_projects")
    due_date: str | None = Field(default=None, description="Due date, YYYY-MM-DD")


@tool(
    "linear_create_issue",
    "Create a Linear issue (ticket) in a team.",
    CreateIssue,
    scopes=("write",),
    keywords=("new", "file", "log", "report", "open", "add", "ticket", "bug", "task"),
)
async def create_issue(args: CreateIssue, ctx: ToolContext) -> Any:
    input_ = compact(
        {
            "teamId": args.team_id,
            "title": args.title,
            "description": args.description,
            "priority": args.priority,
            "assigneeId": args.assignee_id,
            "stateId": args.state_id,
            "labelIds": args.label_ids,
            "projectId": args.project_id,
            "dueDate": args.due_date,
        }
    )
    res = (await gql(ctx, CREATE_ISSUE, {"input": input_})).get("issueCreate") or {}
    return {"success": res.get("success"), **((res.get("issue")) or {})}


class UpdateIssue(IssueId):
    title: str | None = Field(default=None, description="New title")
    description: str | None = Field(default=None, description="New Markdown description")
    priority: int | None = Field(
        default=None, ge=0, le=4, description="0 none, 1 urgent, 2 high, 3 medium, 4 low"
    )
    assignee_id: str | None = Field(default=None, description="User id to assign, from linear_list_users")
    state_id: str | None = Field(
        default=None, description="Workflow state id to move the issue to, from linear_list_workflow_states"
    )
    label_ids: list[str] | None = Field(
        default=None, description="Replace the labels with these label ids (from linear_list_labels)"
    )
    due_date: str | None = Field(default=None, description="Due date, YYYY-MM-DD")


@tool(
    "linear_update_issue",
    "Update a Linear issue: change state (e.g. close it), assignee, priority, title, labels.",
    UpdateIssue,
    scopes=("write",),
    keywords=("edit", "change", "close", "status", "state", "priority", "assign", "move", "done", "ticket"),
)
async def update_issue(args: UpdateIssue, ctx: ToolContext) -> Any:
    input_ = compact(
        {
            "title": args.title,
            "description": args.description,
            "priority": args.priority,
            "assigneeId": args.assignee_id,
            "stateId": args.state_id,
            "labelIds": args.label_ids,
            "dueDate": args.due_date,
        }
    )
    if not input_:
        raise ValueError("Nothing to update: give at least one field to change")
    res = (await gql(ctx, UPDATE_ISSUE, {"id": args.id, "input": input_})).get("issueUpdate") or {}
    issue = res.get("issue") or {}
    return {
        "success": res.get("success"),
        **{k: issue.get(k) for k in ("id", "identifier", "title", "url")},
        "state": (issue.get("state") or {}).get("name"),
    }


class AddComment(ArgsModel):
    issue_id: str = Field(
        description="Issue id or identifier, e.g. ENG-123 (from linear_list_issues or linear_search_issues)"
    )
    body: str = Field(min_length=1, description="Comment text (Markdown)")


@tool(
    "linear_add_comment",
    "Comment on a Linear issue.",
    AddComment,
    scopes=("write",),
    keywords=("reply", "note", "write", "post", "remark", "ticket"),
)
async def add_comment(args: AddComment, ctx: ToolContext) -> Any:
    res = (await gql(ctx, CREATE_COMMENT, {"input": {"issueId": args.issue_id, "body": args.body}})).get(
        "commentCreate"
    ) or {}
    return {"success": res.get("success"), **(res.get("comment") or {})}


def _page_vars(args: Page) -> dict[str, Any]:
    return compact({"first": args.perPage, "after": args.cursor}) or {}


@tool(
    "linear_list_teams",
    "List the Linear teams (with ids and keys) the user belongs to.",
    Page,
    scopes=("read",),
    keywords=("groups", "show", "team keys"),
)
async def list_teams(args: Page, ctx: ToolContext) -> Any:
    return _conn((await gql(ctx, LIST_TEAMS, _page_vars(args))).get("teams") or {}, "teams")


@tool(
    "linear_list_projects",
    "List Linear projects with status, progress and target date.",
    Page,
    scopes=("read",),
    keywords=("roadmap", "initiatives", "show", "progress", "milestones"),
)
async def list_projects(args: Page, ctx: ToolContext) -> Any:
    return _conn(
        (await gql(ctx, LIST_PROJECTS, _page_vars(args))).get("projects") or {}, "projects", _project
    )


def _project(node: dict[str, Any]) -> dict[str, Any]:
    """`state` is the status's type (backlog, planned, started, paused, completed, canceled: what the
    deprecated Project.state held); `status` its name as the workspace shows it."""
    status = node.get("status") or {}
    return {
        **{k: node.get(k) for k in ("id", "name")},
        "state": status.get("type"),
        "status": status.get("name"),
        **{k: node.get(k) for k in ("progress", "targetDate", "url")},
    }


@tool(
    "linear_list_users",
    "List the people in the Linear workspace (ids for assigning issues).",
    Page,
    scopes=("read",),
    keywords=("people", "members", "teammates", "colleagues", "assignees", "show"),
)
async def list_users(args: Page, ctx: ToolContext) -> Any:
    return _conn((await gql(ctx, LIST_USERS, _page_vars(args))).get("users") or {}, "users")


class TeamPage(Page):
    team_id: str | None = Field(default=None, description="Only this team's (team id from linear_list_teams)")


def _team_vars(args: TeamPage) -> dict[str, Any]:
    return {
        **_page_vars(args),
        **({"filter": {"team": {"id": {"eq": args.team_id}}}} if args.team_id else {}),
    }


def _state(node: dict[str, Any]) -> dict[str, Any]:
    return {
        **{k: node.get(k) for k in ("id", "name", "type", "position")},
        "team": (node.get("team") or {}).get("key"),
    }


@tool(
    "linear_list_workflow_states",
    "List Linear workflow states (Backlog, Todo, In Progress, Done...) with ids, per team.",
    TeamPage,
    scopes=("read",),
    keywords=("statuses", "columns", "stages"),
)
async def list_workflow_states(args: TeamPage, ctx: ToolContext) -> Any:
    data = await gql(ctx, LIST_STATES, _team_vars(args))
    return _conn(data.get("workflowStates") or {}, "states", _state)


def _label(node: dict[str, Any]) -> dict[str, Any]:
    return {**{k: node.get(k) for k in ("id", "name", "color")}, "team": (node.get("team") or {}).get("key")}


@tool(
    "linear_list_labels",
    "List Linear issue labels with their ids.",
    TeamPage,
    scopes=("read",),
    keywords=("tags", "categories", "show"),
)
async def list_labels(args: TeamPage, ctx: ToolContext) -> Any:
    return _conn((await gql(ctx, LIST_LABELS, _team_vars(args))).get("issueLabels") or {}, "labels", _label)


class NoArgs(ArgsModel):
    pass


@tool(
    "linear_get_viewer",
    "Get the connected Linear user (who am I) and their organization.",
    NoArgs,
    scopes=("read",),
    keywords=("myself", "who am i", "my account", "current user", "profile", "identity"),
)
async def get_viewer(args: NoArgs, ctx: ToolContext) -> Any:
    viewer = (await gql(ctx, VIEWER)).get("viewer") or {}
    org = viewer.get("organization") or {}
    return {
        **{k: viewer.get(k) for k in ("id", "name", "displayName", "email")},
        "organization": org.get("name"),
        "organizationKey": org.get("urlKey"),
    }


# -- cycles, projects, archiving -------------------------------------------------------------------

LIST_CYCLES = f"""query Cycles($first: Int, $after: String, $filter: CycleFilter) {{
  cycles(first: $first, after: $after, filter: $filter) {{
    nodes {{ id number name startsAt endsAt completedAt progress isActive team {{ key }} }}
    {_PAGE}
  }}
}}"""

CYCLE_ISSUES = f"""query CycleIssues($id: String!, $first: Int, $after: String) {{
  cycle(id: $id) {{
    id number name
    issues(first: $first, after: $after) {{ nodes {{ {_ISSUE_FIELDS} }} {_PAGE} }}
  }}
}}"""

CREATE_PROJECT = """mutation ProjectCreate($input: ProjectCreateInput!) {
  projectCreate(input: $input) { success project { id name status { name type } progress targetDate url } }
}"""

ARCHIVE_ISSUE = """mutation IssueArchive($id: String!) {
  issueArchive(id: $id) { success }
}"""


class ListCycles(Page):
    team_id: str | None = Field(
        default=None, description="Only this team's cycles (team id from linear_list_teams)"
    )
    when: Literal["all", "active", "upcoming", "past"] = Field(
        default="all", description="Only the active cycle, upcoming ones or past ones"
    )


@tool(
    "linear_list_cycles",
    "List Linear cycles (sprints) with dates and progress, optionally the active one of a team.",
    ListCycles,
    scopes=("read",),
    keywords=("sprints", "iterations", "current cycle", "active", "show"),
)
async def list_cycles(args: ListCycles, ctx: ToolContext) -> Any:
    flt: dict[str, Any] = {}
    if args.team_id:
        flt["team"] = {"id": {"eq": args.team_id}}
    if args.when == "active":
        flt["isActive"] = {"eq": True}
    elif args.when == "upcoming":
        flt["isFuture"] = {"eq": True}
    elif args.when == "past":
        flt["isPast"] = {"eq": True}
    variables = {**_page_vars(args), **({"filter": flt} if flt else {})}
    cycles = (await gql(ctx, LIST_CYCLES, variables)).get("cycles") or {}
    return _conn(cycles, "cycles", lambda c: {**c, "team": (c.get("team") or {}).get("key")})


class CycleIssues(Page):
    cycle_id: str = Field(description="Cycle id (linear_list_cycles)")


@tool(
    "linear_list_cycle_issues",
    "List the issues planned in a Linear cycle (sprint).",
    CycleIssues,
    scopes=("read",),
    keywords=("sprint", "iteration", "planned", "scope", "tickets"),
)
async def list_cycle_issues(args: CycleIssues, ctx: ToolContext) -> Any:
    cycle = (await gql(ctx, CYCLE_ISSUES, {"id": args.cycle_id, **_page_vars(args)})).get("cycle")
    if cycle is None:
        raise ToolError(f"No Linear cycle with id {args.cycle_id}.")
    return {
        "cycle": {k: cycle.get(k) for k in ("id", "number", "name")},
        **_conn(cycle.get("issues") or {}, "issues", _issue),
    }


class CreateProject(ArgsModel):
    name: str = Field(min_length=1, max_length=255, description="Project name")
    team_ids: list[str] = Field(
        min_length=1,
        max_length=20,
        description="Ids of the teams the project belongs to, from linear_list_teams",
    )
    description: str | None = Field(default=None, max_length=255, description="Short summary")
    content: str | None = Field(default=None, description="Project description (Markdown)")
    lead_id: str | None = Field(
        default=None, description="User id of the project lead, from linear_list_users"
    )
    start_date: str | None = Field(
        default=None, pattern=r"^\d{4}-\d{2}-\d{2}$", description="Start, YYYY-MM-DD"
    )
    target_date: str | None = Field(
        default=None, pattern=r"^\d{4}-\d{2}-\d{2}$", description="Target, YYYY-MM-DD"
    )


@tool(
    "linear_create_project",
    "Create a Linear project for one or more teams.",
    CreateProject,
    scopes=("write",),
    keywords=("new", "start", "initiative", "add", "make"),
)
async def create_project(args: CreateProject, ctx: ToolContext) -> Any:
    project_input = compact(
        {
            "name": args.name,
            "teamIds": args.team_ids,
            "description": args.description,
            "content": args.content,
            "leadId": args.lead_id,
            "startDate": args.start_date,
            "targetDate": args.target_date,
        }
    )
    res = (await gql(ctx, CREATE_PROJECT, {"input": project_input})).get("projectCreate") or {}
    project = res.get("project")
    return {"success": res.get("success"), **(_project(project) if isinstance(project, dict) else {})}


class IssueRef(ArgsModel):
    id: str = Field(description="Issue id or identifier, e.g. 'ENG-123'")


@tool(
    "linear_archive_issue",
    "Archive a Linear issue (hide it from views; it can be restored in Linear).",
    IssueRef,
    scopes=("write",),
    keywords=("shelve", "park", "remove", "ticket"),
)
async def archive_issue(args: IssueRef, ctx: ToolContext) -> Any:
    res = (await gql(ctx, ARCHIVE_ISSUE, {"id": args.id})).get("issueArchive") or {}
    return {"id": args.id, "archived": bool(res.get("success"))}


TOOLS = [
    list_issues,
    search_issues,
    get_issue,
    create_issue,
    update_issue,
    add_comment,
    list_teams,
    list_projects,
    list_users,
    list_workflow_states,
    list_labels,
    get_viewer,
    list_cycles,
    list_cycle_issues,
    create_project,
    archive_issue,
]
