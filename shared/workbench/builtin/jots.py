"""Jots: the user's own notes. Another user's jot is indistinguishable from one that never existed.

Each jot is also a web page on the jots host (`url`, for its owner signed in to the portal). Setting
`shared: true` (on create_jot or update_jot) mints a share link (`shareUrl`) anyone can open;
`shared: false` revokes it, and sharing again mints a new link. That keeps the jots tools at six.
"""

from __future__ import annotations

from typing import Any

from workbench.arguments import Arg, Arguments
from workbench.builtin import JOTS
from workbench.stores import Jot
from workbench.tools import tool

MANIFEST = JOTS

NOT_FOUND = "Jot not found"


def _view(jot: Jot, ctx: Any, *, body: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {"id": jot.id, "title": jot.title, "updatedAt": jot.updated_at}
    if body:
        out["body"] = jot.body
    base = str(getattr(ctx.services, "public_url", "") or "").rstrip("/")
    out["url"] = f"{base}/jots/{jot.id}"
    out["shared"] = jot.share_token is not None
    if jot.share_token is not None:
        out["shareUrl"] = f"{base}/jots/s/{jot.share_token}"
    return out


# Declared without pydantic (workbench.arguments): an instance's first list_jots skips its import.
CreateJot = Arguments(
    "CreateJot",
    Arg("title", str, min_length=1, max_length=200, description="Short title"),
    Arg("body", str, default="", max_length=100_000, description="Markdown text"),
    Arg("shared", bool, default=False, description="Also create a share link anyone can open"),
)
JotId = Arguments("JotId", Arg("id", str, description="Jot id, as create_jot or list_jots returns it"))
ListJots = Arguments("ListJots", Arg("limit", int, default=50, ge=1, le=200))
UpdateJot = Arguments(
    "UpdateJot",
    Arg("id", str),
    Arg("title", str, optional=True, default=None, min_length=1, max_length=200),
    Arg("body", str, optional=True, default=None, max_length=100_000),
    Arg(
        "shared",
        bool,
        optional=True,
        default=None,
        description="true: make (or keep) a share link; false: revoke it",
    ),
)
SearchJots = Arguments(
    "SearchJots",
    Arg("query", str, min_length=1, description="Words to look for in titles and bodies"),
    Arg("limit", int, default=20, ge=1, le=100),
)


@tool(
    "create_jot",
    "Create a note (jot) with a title and a markdown body.",
    CreateJot,
    keywords=("write down", "remember", "save", "record", "keep", "new"),
    keeps_arguments=True,
)
def create_jot(args: Any, ctx: Any) -> dict[str, Any]:
    jot = ctx.services.jots.create(ctx.user_id, args.title, args.body, shared=args.shared)
    return _view(jot, ctx)


@tool(
    "get_jot",
    "Get one jot (note) by id, with its full body.",
    JotId,
    keywords=("show", "open", "view", "read", "display"),
)
def get_jot(args: Any, ctx: Any) -> dict[str, Any]:
    jot = ctx.services.jots.get(ctx.user_id, args.id)
    if jot is None:
        raise LookupError(NOT_FOUND)
    return _view(jot, ctx)


@tool(
    "list_jots",
    "List your jots (notes), most recently updated first, without bodies.",
    ListJots,
    keywords=("show", "browse", "memos", "notebook", "overview"),
)
def list_jots(args: Any, ctx: Any) -> dict[str, Any]:
    jots = ctx.services.jots.list_for(ctx.user_id, args.limit)
    return {"jots": [_view(j, ctx, body=False) for j in jots]}


@tool(
    "update_jot",
    "Update a jot's (note's) title and/or body; shared true/false makes or revokes its share link.",
    UpdateJot,
    keywords=("edit", "change", "rewrite", "fix", "share link", "publish", "unshare"),
    keeps_arguments=True,
)
def update_jot(args: Any, ctx: Any) -> dict[str, Any]:
    updated = ctx.services.jots.update(
        ctx.user_id, args.id, title=args.title, body=args.body, shared=args.shared
    )
    if updated is None:
        raise LookupError(NOT_FOUND)
    return _view(updated, ctx)


@tool(
    "delete_jot",
    "Delete a jot (note) by id.",
    JotId,
    keywords=("remove", "erase", "discard", "throw away", "get rid"),
)
def delete_jot(args: Any, ctx: Any) -> dict[str, Any]:
    if not ctx.services.jots.delete(ctx.user_id, args.id):
        raise LookupError(NOT_FOUND)
    return {"deleted": args.id}


@tool(
    "search_jots",
    "Search your jots (notes) for words in their title or body.",
    SearchJots,
    keywords=("find", "look for", "lookup", "mentioning", "memos", "recall"),
)
def search_jots(args: Any, ctx: Any) -> dict[str, Any]:
    hits = ctx.services.jots.search(ctx.user_id, args.query, args.limit)
    return {"jots": [_view(j, ctx, body=False) for j in hits]}


TOOLS = [create_jot, get_jot, list_jots, update_jot, delete_jot, search_jots]
