"""Zendesk Support API tools (https://developer.zendesk.com/api-reference/ticketing/introduction/).

Each account has its own host, so requests go to https://{subdomain}.zendesk.com/api/v2 with
Basic auth `{email}/token:{api_token}`, both built here from the stored credential. Lists use
cursor pagination (`page[size]`, `page[after]` → `meta.after_cursor`); search is offset-paged.
"""

from __future__ import annotations

import re
from typing import Any, Literal

import httpx
from workbench.sdk import ToolError, UpstreamError, compact, pick
from workbench.tools import ArgsModel, Field, ToolContext, tool

_SUBDOMAIN = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")

_TICKET = (
    "id",
    "subject",
    "description",
    "status",
    "priority",
    "type",
    "requester_id",
    "assignee_id",
    "group_id",
    "organization_id",
    "tags",
    "created_at",
    "updated_at",
)
_USER = ("id", "name", "email", "role", "organization_id", "active", "created_at")


async def _site(ctx: ToolContext) -> tuple[str, httpx.Auth]:
    cred = await ctx.credential()
    sub = str(cred.get("subdomain") or "").strip().lower().removeprefix("https://")
    sub = sub.removesuffix("/").removesuffix(".zendesk.com")
    if not _SUBDOMAIN.match(sub):
        raise ValueError(
            "The Zendesk connection has no valid subdomain (the 'acme' in acme.zendesk.com); reconnect."
        )
    email = str(cred.get("email") or "")
    user = email if email.endswith("/token") else f"{email}/token"
    return f"https://{sub}.zendesk.com/api/v2", httpx.BasicAuth(user, str(cred.get("api_token") or ""))


def _detail(resp: httpx.Response) -> str:
    try:
        body = resp.json()
    except ValueError:
        return resp.text[:500].strip()
    if not isinstance(body, dict):
        return str(body)[:500]
    err = body.get("error")
    if isinstance(err, dict):  # {"error": {"title", "message"}}
        return str(err.get("message") or err.get("title") or err)[:500]
    parts = [str(p) for p in (err, body.get("description")) if p]
    for problems in (body.get("details") or {}).values():  # validation errors, per field
        parts.extend(
            str(p.get("description")) for p in problems if isinstance(p, dict) and p.get("description")
        )
    return ": ".join(parts)[:500] if parts else str(body)[:500]


async def zd(ctx: ToolContext, method: str, path: str, *, params: Any = None, json: Any = None) -> Any:
    base, auth = await _site(ctx)
    resp = await ctx.http.request(method, base + path, params=compact(params), json=json, auth=auth)
    if resp.status_code >= 400:
        raise UpstreamError(ctx.integration, resp.status_code, _detail(resp))
    return resp.json() if resp.content else None


def _cursor_params(args: Any) -> dict[str, Any]:
    return {"page[size]": args.perPage, "page[after]": args.cursor}


def _next(body: dict[str, Any]) -> str | None:
    meta = body.get("meta") or {}
    return meta.get("after_cursor") if meta.get("has_more") else None


class Page(ArgsModel):
    perPage: int = Field(default=25, ge=1, le=100, description="Results per page (max 100)")
    cursor: str | None = Field(default=None, description="nextCursor from the previous call")


@tool(
    "zendesk_list_tickets",
    "List Zendesk support tickets in id order (use zendesk_search_tickets to filter or sort by date).",
    Page,
    keywords=("requests", "cases", "queue", "show"),
)
async def list_tickets(args: Page, ctx: ToolContext) -> Any:
    body = await zd(ctx, "GET", "/tickets", params=_cursor_params(args))
    return {"tickets": [pick(t, *_TICKET) for t in body.get("tickets") or []], "nextCursor": _next(body)}


class TicketId(ArgsModel):
    ticket_id: int = Field(description="Ticket number, from zendesk_list_tickets or zendesk_search_tickets")


@tool(
    "zendesk_get_ticket",
    "Get one Zendesk ticket (subject, status, priority, requester, tags).",
    TicketId,
    keywords=("case", "request", "details", "show", "view"),
)
async def get_ticket(args: TicketId, ctx: ToolContext) -> Any:
    return pick((await zd(ctx, "GET", f"/tickets/{args.ticket_id}")).get("ticket"), *_TICKET)


class SearchTickets(ArgsModel):
    query: str = Field(
        description="Zendesk search terms, e.g. 'status:open priority:urgent', 'requester:jdoe@example.com refund'"
    )
    perPage: int = Field(default=25, ge=1, le=100, description="Results per page (max 100)")
    cursor: str | None = Field(default=None, description="nextCursor (page number) from the previous call")
    sort_by: Literal["updated_at", "created_at", "priority", "status", "ticket_type"] | None = Field(
        default=None, description="Sort field (default: relevance)"
    )
    sort_order: Literal["asc", "desc"] = Field(default="desc", description="Sort direction, with sort_by")


@tool(
    "zendesk_search_tickets",
    "Search Zendesk tickets with Zendesk's query syntax (status, priority, requester, words).",
    SearchTickets,
    keywords=("find", "filter", "look up", "cases", "requests", "open", "unsolved", "pending"),
)
async def search_tickets(args: SearchTickets, ctx: ToolContext) -> Any:
    page = int(args.cursor) if args.cursor and args.cursor.isdigit() else 1
    body = await zd(
        ctx,
        "GET",
        "/search",
        params={
            "query": f"type:ticket {args.query}",
            "per_page": args.perPage,
            "page": page,
            "sort_by": args.sort_by,
            "sort_order": args.sort_order if args.sort_by else None,
        },
    )
    return {
        "tickets": [pick(t, *_TICKET) for t in body.get("results") or []],
        "count": body.get("count"),
        "nextCursor": str(page + 1) if body.get("next_page") else None,
    }


class CreateTicket(ArgsModel):
    subject: str = Field(min_length=1, description="Ticket subject")
    body: str = Field(min_length=1, description="First comment (the problem description)")
    requester_email: str | None = Field(default=None, description="Requester's email (created if unknown)")
    requester_name: str | None = Field(default=None, description="Requester's name, for a new requester")
    priority: Literal["urgent", "high", "normal", "low"] | None = Field(
        default=None, description="Ticket priority"
    )
    type: Literal["problem", "incident", "question", "task"] | None = Field(
        default=None, description="Ticket type"
    )
    tags: list[str] | None = Field(default=None, description="Tags to set")
    assignee_id: int | None = Field(
        default=None, description="Agent to assign (user id from zendesk_search_users or zendesk_list_users)"
    )
    group_id: int | None = Field(
        default=None, description="Group to assign (group id from zendesk_list_groups)"
    )


@tool(
    "zendesk_create_ticket",
    "Create a Zendesk support ticket.",
    CreateTicket,
    keywords=("new", "open", "file", "log", "raise", "case", "request", "complaint"),
)
async def create_ticket(args: CreateTicket, ctx: ToolContext) -> Any:
    ticket: dict[str, Any] = (
        compact(
            {
                "subject": args.subject,
                "comment": {"body": args.body},
                "priority": args.priority,
                "type": args.type,
                "tags": args.tags,
                "assignee_id": args.assignee_id,
                "group_id": args.group_id,
            }
        )
        or {}
    )
    if args.requester_email:
        ticket["requester"] = compact({"email": args.requester_email, "name": args.requester_name})
    body = await zd(ctx, "POST", "/tickets", json={"ticket": ticket})
    return pick(body.get("ticket"), *_TICKET)


class UpdateTicket(TicketId):
    status: Literal["new", "open", "pending", "hold", "solved", "closed"] | None = Field(
        default=None, description="New status (solved/closed to resolve)"
    )
    priority: Literal["urgent", "high", "normal", "low"] | None = Field(
        default=None, description="New priority"
    )
    assignee_id: int | None = Field(
        default=None, description="Agent to assign (user id from zendesk_search_users or zendesk_list_users)"
    )
    group_id: int | None = Field(
        default=None, description="Group to assign (group id from zendesk_list_groups)"
    )
    subject: str | None = Field(default=None, description="New subject")
    tags: list[str] | None = Field(default=None, description="Replace the ticket's tags")


@tool(
    "zendesk_update_ticket",
    "Update a Zendesk ticket: status (solve/close), priority, assignee, tags.",
    UpdateTicket,
    keywords=("solve", "close", "resolve", "escalate", "reassign", "tag", "case"),
)
async def update_ticket(args: UpdateTicket, ctx: ToolContext) -> Any:
    changes = compact(args.model_dump(exclude={"ticket_id"})) or {}
    if not changes:
        raise ValueError("Nothing to update: give at least one field to change")
    body = await zd(ctx, "PUT", f"/tickets/{args.ticket_id}", json={"ticket": changes})
    return pick(body.get("ticket"), *_TICKET)


class AddComment(TicketId):
    body: str = Field(min_length=1, description="Comment text")
    public: bool = Field(default=True, description="Public reply to the requester (false: internal note)")


@tool(
    "zendesk_add_comment",
    "Reply to a Zendesk ticket, publicly or as an internal note.",
    AddComment,
    keywords=("respond", "answer", "message", "internal note", "public reply", "customer"),
)
async def add_comment(args: AddComment, ctx: ToolContext) -> Any:
    body = await zd(
        ctx,
        "PUT",
        f"/tickets/{args.ticket_id}",
        json={"ticket": {"comment": {"body": args.body, "public": args.public}}},
    )
    return pick(body.get("ticket"), "id", "status", "updated_at")


class ListComments(TicketId, Page):
    pass


@tool(
    "zendesk_list_ticket_comments",
    "List the conversation (comments) on a Zendesk ticket.",
    ListComments,
    keywords=("thread", "history", "replies", "messages"),
)
async def list_ticket_comments(args: ListComments, ctx: ToolContext) -> Any:
    body = await zd(ctx, "GET", f"/tickets/{args.ticket_id}/comments", params=_cursor_params(args))
    comments = [
        pick(c, "id", "author_id", "body", "public", "created_at") for c in body.get("comments") or []
    ]
    return {"comments": comments, "nextCursor": _next(body)}


class ListUsers(Page):
    role: Literal["end-user", "agent", "admin"] | None = Field(
        default=None, description="Only users with this role"
    )


@tool(
    "zendesk_list_users",
    "List Zendesk users (end users, agents, admins).",
    ListUsers,
    keywords=("people", "agents", "customers", "requesters", "show"),
)
async def list_users(args: ListUsers, ctx: ToolContext) -> Any:
    body = await zd(ctx, "GET", "/users", params={**_cursor_params(args), "role": args.role})
    return {"users": [pick(u, *_USER) for u in body.get("users") or []], "nextCursor": _next(body)}


class SearchUsers(ArgsModel):
    query: str = Field(min_length=1, description="Name, email or part of it")


@tool(
    "zendesk_search_users",
    "Find Zendesk users by name or email.",
    SearchUsers,
    keywords=("find", "look up", "customer", "requester", "agent"),
)
async def search_users(args: SearchUsers, ctx: ToolContext) -> Any:
    body = await zd(ctx, "GET", "/users/search", params={"query": args.query})
    return {"users": [pick(u, *_USER) for u in body.get("users") or []]}


class CreateUser(ArgsModel):
    name: str = Field(min_length=1, description="Full name")
    email: str | None = Field(default=None, description="Email address")
    role: Literal["end-user", "agent", "admin"] = Field(default="end-user", description="User role")
    organization_id: int | None = Field(
        default=None, description="Organization to add the user to (id from zendesk_list_organizations)"
    )


@tool(
    "zendesk_create_user",
    "Create a Zendesk user (an end user/customer by default).",
    CreateUser,
    keywords=("new", "add", "customer", "requester", "end user", "agent"),
)
async def create_user(args: CreateUser, ctx: ToolContext) -> Any:
    body = await zd(ctx, "POST", "/users", json={"user": compact(args.model_dump())})
    return pick(body.get("user"), *_USER)


@tool(
    "zendesk_list_organizations",
    "List Zendesk organizations (customer companies).",
    Page,
    keywords=("companies", "organisations", "accounts", "customers"),
)
async def list_organizations(args: Page, ctx: ToolContext) -> Any:
    body = await zd(ctx, "GET", "/organizations", params=_cursor_params(args))
    orgs = [
        pick(o, "id", "name", "domain_names", "tags", "created_at") for o in body.get("organizations") or []
    ]
    return {"organizations": orgs, "nextCursor": _next(body)}


@tool(
    "zendesk_list_groups",
    "List Zendesk agent groups (for assigning tickets).",
    Page,
    keywords=("teams", "departments", "agent groups"),
)
async def list_groups(args: Page, ctx: ToolContext) -> Any:
    body = await zd(ctx, "GET", "/groups", params=_cursor_params(args))
    groups = [pick(g, "id", "name", "description", "default") for g in body.get("groups") or []]
    return {"groups": groups, "nextCursor": _next(body)}


# -- macros and views ------------------------------------------------------------------------------


class ListMacros(Page):
    active: bool | None = Field(default=None, description="Only active (true) or inactive (false) macros")


@tool(
    "zendesk_list_macros",
    "List Zendesk macros (canned replies and ticket updates) with their ids and what they do.",
    ListMacros,
    keywords=("canned responses", "templates", "saved replies", "shortcuts"),
)
async def list_macros(args: ListMacros, ctx: ToolContext) -> Any:
    active = None if args.active is None else str(args.active).lower()
    body = await zd(ctx, "GET", "/macros", params={**_cursor_params(args), "active": active})
    macros = [
        {
            **pick(m, "id", "title", "description", "active", "updated_at"),
            "actions": [pick(a, "field", "value") for a in m.get("actions") or []],
        }
        for m in body.get("macros") or []
    ]
    return {"macros": macros, "nextCursor": _next(body)}


class ApplyMacro(TicketId):
    macro_id: int = Field(ge=1, description="Macro id (zendesk_list_macros)")
    preview: bool = Field(default=False, description="Only show what the macro would change; change nothing")


@tool(
    "zendesk_apply_macro",
    "Apply a Zendesk macro to a ticket (its reply and field changes), or preview what it would do.",
    ApplyMacro,
    keywords=("canned response", "template", "run macro", "saved reply"),
)
async def apply_macro(args: ApplyMacro, ctx: ToolContext) -> Any:
    # Zendesk's apply endpoint only computes the result; saving it is a ticket update.
    result = (await zd(ctx, "GET", f"/tickets/{args.ticket_id}/macros/{args.macro_id}/apply")).get(
        "result"
    ) or {}
    changes = {k: v for k, v in (result.get("ticket") or {}).items() if k != "id"}
    comment = result.get("comment")
    if comment:
        changes["comment"] = {k: comment[k] for k in ("body", "html_body", "public") if k in comment}
    if args.preview:
        return {"ticket_id": args.ticket_id, "applied": False, "changes": changes}
    body = await zd(ctx, "PUT", f"/tickets/{args.ticket_id}", json={"ticket": changes})
    return {"ticket_id": args.ticket_id, "applied": True, "ticket": pick(body.get("ticket"), *_TICKET)}


class ListViews(Page):
    active: bool | None = Field(default=None, description="Only active (true) or inactive (false) views")


class SearchArticles(ArgsModel):
    query: str = Field(min_length=1, max_length=500, description="Words to look for in Help Center articles")
    locale: str | None = Field(
        default=None, max_length=20, description="Only articles in this locale, e.g. 'en-us'"
    )
    perPage: int = Field(default=25, ge=1, le=100, description="Results per page (max 100)")
    page: int = Field(default=1, ge=1, description="Page number, starting at 1 (use nextPage)")


@tool(
    "zendesk_search_articles",
    "Search the Zendesk Help Center (knowledge base) articles; returns titles, links and a snippet.",
    SearchArticles,
    keywords=("knowledge base", "help center", "faq", "docs", "tutorials", "guides", "kb"),
)
async def search_articles(args: SearchArticles, ctx: ToolContext) -> Any:
    params = {"query": args.query, "locale": args.locale, "per_page": args.perPage, "page": args.page}
    body = await zd(ctx, "GET", "/help_center/articles/search", params=params)
    articles = [
        pick(a, "id", "title", "html_url", "snippet", "locale", "section_id", "updated_at")
        for a in body.get("results") or []
    ]
    return {"articles": articles, "nextPage": args.page + 1 if body.get("next_page") else None}


@tool(
    "zendesk_list_views",
    "List Zendesk views (saved ticket queues, e.g. 'My unsolved tickets').",
    ListViews,
    keywords=("queues", "saved filters", "inbox"),
)
async def list_views(args: ListViews, ctx: ToolContext) -> Any:
    active = None if args.active is None else str(args.active).lower()
    body = await zd(ctx, "GET", "/views", params={**_cursor_params(args), "active": active})
    views = [pick(v, "id", "title", "active", "position", "updated_at") for v in body.get("views") or []]
    return {"views": views, "nextCursor": _next(body)}


class ViewTickets(Page):
    view_id: int = Field(ge=1, description="View id (zendesk_list_views)")


@tool(
    "zendesk_list_view_tickets",
    "List the tickets in a Zendesk view (queue), in the view's order.",
    ViewTickets,
    keywords=("queue", "inbox", "unsolved"),
)
async def list_view_tickets(args: ViewTickets, ctx: ToolContext) -> Any:
    body = await zd(ctx, "GET", f"/views/{args.view_id}/tickets", params=_cursor_params(args))
    return {"tickets": [pick(t, *_TICKET) for t in body.get("tickets") or []], "nextCursor": _next(body)}


async def probe(ctx: ToolContext) -> None:
    """Connecting checks the subdomain, email and token: GET /users/me as those credentials. Zendesk
    answers an unauthenticated caller with an anonymous user (no id), so that fails too."""
    me = (await zd(ctx, "GET", "/users/me") or {}).get("user") or {}
    if not me.get("id"):
        raise ToolError(
            "Zendesk did not accept this email address and API token (it answered as an anonymous visitor)."
        )


TOOLS = [
    list_tickets,
    get_ticket,
    search_tickets,
    create_ticket,
    update_ticket,
    add_comment,
    list_ticket_comments,
    list_users,
    search_users,
    create_user,
    list_organizations,
    list_groups,
    list_macros,
    apply_macro,
    list_views,
    list_view_tickets,
    search_articles,
]
