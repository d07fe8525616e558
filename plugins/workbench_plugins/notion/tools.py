"""Notion API tools (https://developers.notion.com/reference).

Every request carries `Notion-Version: 2025-09-03`: a database is a container of one or more
**data sources** (the tables: their columns and rows). Querying rows, reading columns and creating
a row go to a data source: the tools take a `database_id` and use its data source when it has
exactly one, or a `data_source_id` (listed by notion_get_database) when it has several. Lists page
with `start_cursor`/`page_size` and answer `next_cursor`/`has_more`. Results flatten Notion's
rich-text and property objects into plain values.
"""

from __future__ import annotations

import contextlib
from typing import Any, Literal

from workbench.sdk import ToolError, api, pick
from workbench.tools import ArgsModel, Field, ToolContext, tool

NOTION_VERSION = "2025-09-03"
_HEADERS = {"Notion-Version": NOTION_VERSION}


async def _call(ctx: ToolContext, method: str, path: str, *, params: Any = None, json: Any = None) -> Any:
    return await api(ctx, method, f"/v1{path}", params=params, json=json, headers=_HEADERS)


def plain_text(rich: Any) -> str:
    return "".join(part.get("plain_text") or "" for part in rich or [] if isinstance(part, dict))


def _rich(text: str) -> list[dict[str, Any]]:
    # Notion caps one text object at 2000 characters.
    return [
        {"type": "text", "text": {"content": text[i : i + 2000]}} for i in range(0, len(text), 2000)
    ] or []


def _paragraphs(text: str) -> list[dict[str, Any]]:
    """Plain text as paragraph blocks, one per blank-line-separated paragraph."""
    parts = [p.strip() for p in text.split("\n\n")]
    return [
        {"object": "block", "type": "paragraph", "paragraph": {"rich_text": _rich(p)}} for p in parts if p
    ]


def prop_value(prop: dict[str, Any]) -> Any:
    """A Notion property value as a plain JSON value."""
    kind = prop.get("type", "")
    value = prop.get(kind)
    if kind in ("title", "rich_text"):
        return plain_text(value)
    if kind in ("select", "status"):
        return value.get("name") if isinstance(value, dict) else None
    if kind == "multi_select":
        return [v.get("name") for v in value or []]
    if kind == "date":
        if not value:
            return None
        return value.get("start") if not value.get("end") else {"start": value["start"], "end": value["end"]}
    if kind == "people":
        return [p.get("name") or p.get("id") for p in value or []]
    if kind == "relation":
        return [r.get("id") for r in value or []]
    if kind == "files":
        return [f.get("name") for f in value or []]
    if kind in ("formula", "rollup") and isinstance(value, dict):
        inner = value.get("type", "")
        return value.get(inner)
    if kind in ("created_by", "last_edited_by") and isinstance(value, dict):
        return value.get("name") or value.get("id")
    return value


def page_title(page: dict[str, Any]) -> str:
    if page.get("object") in ("database", "data_source"):
        return plain_text(page.get("title"))
    for prop in (page.get("properties") or {}).values():
        if isinstance(prop, dict) and prop.get("type") == "title":
            return plain_text(prop.get("title"))
    return ""


def _parent(obj: dict[str, Any]) -> dict[str, Any]:
    parent = obj.get("parent") or {}
    kind = parent.get("type", "")
    out = {"type": kind, "id": parent.get(kind) if kind != "workspace" else None}
    if kind == "data_source_id" and parent.get("database_id"):
        out["database_id"] = parent["database_id"]  # a row: its data source, and that one's database
    return out


async def data_source_of(ctx: ToolContext, database_id: str | None, data_source_id: str | None) -> str:
    """The data source a row operation goes to: the one given, or the database's only one."""
    if data_source_id:
        return data_source_id
    if not database_id:
        raise ToolError("Give database_id (from notion_search) or data_source_id (from notion_get_database).")
    db = await _call(ctx, "GET", f"/databases/{database_id}")
    sources = [d for d in db.get("data_sources") or [] if isinstance(d, dict) and d.get("id")]
    if len(sources) == 1:
        return str(sources[0]["id"])
    if not sources:
        raise ToolError(f"Notion database {database_id} has no data source this integration can see.")
    listed = ", ".join(f"{d.get('name') or '(untitled)'} (id {d['id']})" for d in sources)
    raise ToolError(f"This database has {len(sources)} data sources: {listed}. Pass data_source_id.")


def _page(page: dict[str, Any], *, properties: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": page.get("id"),
        "object": page.get("object"),
        "title": page_title(page),
        "url": page.get("url"),
        "parent": _parent(page),
        "created_time": page.get("created_time"),
        "last_edited_time": page.get("last_edited_time"),
        "archived": page.get("archived"),
    }
    if properties and page.get("object") == "page":
        out["properties"] = {k: prop_value(v) for k, v in (page.get("properties") or {}).items()}
    return out


def _block(block: dict[str, Any]) -> dict[str, Any]:
    kind = block.get("type", "")
    body = block.get(kind) or {}
    out: dict[str, Any] = {"id": block.get("id"), "type": kind, "text": plain_text(body.get("rich_text"))}
    if kind == "to_do":
        out["checked"] = body.get("checked")
    if kind in ("child_page", "child_database"):
        out["text"] = body.get("title", "")
    out["has_children"] = block.get("has_children")
    return out


def _cursor(body: dict[str, Any]) -> dict[str, Any]:
    return {"hasMore": bool(body.get("has_more")), "nextCursor": body.get("next_cursor")}


class Page(ArgsModel):
    perPage: int = Field(default=25, ge=1, le=100, description="Results per page (max 100)")
    cursor: str | None = Field(default=None, description="nextCursor from the previous call")


class Search(Page):
    query: str = Field(
        default="", description="Words in the page or database title; empty lists everything shared"
    )
    type: Literal["page", "database"] | None = Field(
        default=None, description="Only pages, or only databases (their data sources: the tables)"
    )


@tool(
    "notion_search",
    "Search Notion pages and databases shared with the integration by title.",
    Search,
    keywords=("find", "look for", "lookup", "pages", "databases", "title"),
)
async def search(args: Search, ctx: ToolContext) -> Any:
    body: dict[str, Any] = {"query": args.query, "page_size": args.perPage}
    if args.type:  # since 2025-09-03 search finds a database's data sources, not the database
        body["filter"] = {"property": "object", "value": "data_source" if args.type == "database" else "page"}
    if args.cursor:
        body["start_cursor"] = args.cursor
    res = await _call(ctx, "POST", "/search", json=body)
    return {"results": [_page(r, properties=False) for r in res.get("results") or []], **_cursor(res)}


class PageId(ArgsModel):
    page_id: str = Field(
        description="Notion page id (UUID, with or without dashes), from notion_search or notion_query_database"
    )


@tool(
    "notion_get_page",
    "Get a Notion page's title, URL and property values.",
    PageId,
    keywords=("properties", "metadata", "info", "fields", "url", "details"),
)
async def get_page(args: PageId, ctx: ToolContext) -> Any:
    return _page(await _call(ctx, "GET", f"/pages/{args.page_id}"))


class BlockChildren(Page):
    block_id: str = Field(
        description="Page or block id whose content to read (pages from notion_search, blocks from notion_get_page_content)"
    )


@tool(
    "notion_get_page_content",
    "Read the content (blocks: paragraphs, headings, lists, to-dos) of a Notion page as plain text.",
    BlockChildren,
    keywords=("read", "text", "body", "open", "view", "document"),
)
async def get_page_content(args: BlockChildren, ctx: ToolContext) -> Any:
    res = await _call(
        ctx,
        "GET",
        f"/blocks/{args.block_id}/children",
        params={"page_size": args.perPage, "start_cursor": args.cursor},
    )
    return {"blocks": [_block(b) for b in res.get("results") or []], **_cursor(res)}


class CreatePage(ArgsModel):
    title: str = Field(description="Page title")
    parent_page_id: str | None = Field(
        default=None, description="Create as a sub-page of this page (page id from notion_search)"
    )
    parent_database_id: str | None = Field(
        default=None,
        description="Create as a row of this database (database id from notion_search); its data source "
        "when it has one, else pass parent_data_source_id",
    )
    parent_data_source_id: str | None = Field(
        default=None, description="Create as a row of this data source (id from notion_get_database)"
    )
    title_property: str = Field(
        default="title", description="Name of the database's title column (e.g. 'Name'); 'title' for pages"
    )
    properties: dict[str, Any] | None = Field(
        default=None,
        description="Extra property values in Notion's format, e.g. {'Status': {'status': {'name': 'Done'}}}",
    )
    content: str | None = Field(default=None, description="Body text; blank lines separate paragraphs")


@tool(
    "notion_create_page",
    "Create a Notion page under a page, or a new row (page) in a Notion database.",
    CreatePage,
    keywords=("new", "add", "write", "document", "row", "entry", "item", "record"),
)
async def create_page(args: CreatePage, ctx: ToolContext) -> Any:
    row = bool(args.parent_database_id or args.parent_data_source_id)
    if bool(args.parent_page_id) == row:
        raise ValueError("Give exactly one of parent_page_id or parent_database_id / parent_data_source_id")
    if args.parent_page_id:
        parent = {"page_id": args.parent_page_id}
    else:
        source = await data_source_of(ctx, args.parent_database_id, args.parent_data_source_id)
        parent = {"type": "data_source_id", "data_source_id": source}
    body: dict[str, Any] = {
        "parent": parent,
        "properties": {args.title_property: {"title": _rich(args.title)}, **(args.properties or {})},
    }
    children = _paragraphs(args.content or "")
    if len(children) > _MAX_BLOCKS:
        raise ToolError(f"{len(children)} paragraphs; one call writes at most {_MAX_BLOCKS}.")
    if children:
        body["children"] = children[:_BATCH]  # a page is created with at most 100 blocks
    page = await _call(ctx, "POST", "/pages", json=body)
    if len(children) > _BATCH:
        await _append(ctx, page["id"], children[_BATCH:])
    return _page(page)


class UpdatePage(PageId):
    properties: dict[str, Any] = Field(
        description="Property values to set, in Notion's format, e.g. {'Status': {'status': {'name': 'Done'}}}"
    )


@tool(
    "notion_update_page",
    "Update property values of a Notion page or database row.",
    UpdatePage,
    keywords=("edit", "change", "set", "properties", "fields", "row"),
)
async def update_page(args: UpdatePage, ctx: ToolContext) -> Any:
    return _page(await _call(ctx, "PATCH", f"/pages/{args.page_id}", json={"properties": args.properties}))


@tool(
    "notion_archive_page",
    "Archive (move to trash / delete) a Notion page.",
    PageId,
    keywords=("delete", "remove", "trash", "hide", "erase"),
)
async def archive_page(args: PageId, ctx: ToolContext) -> Any:
    return _page(
        await _call(ctx, "PATCH", f"/pages/{args.page_id}", json={"archived": True}), properties=False
    )


class MovePage(PageId):
    parent_page_id: str | None = Field(
        default=None, description="Move under this page (page id from notion_search)"
    )
    parent_database_id: str | None = Field(
        default=None,
        description="Move into this database as a row (database id from notion_search); its data source when "
        "it has one, else pass parent_data_source_id",
    )
    parent_data_source_id: str | None = Field(
        default=None, description="Move into this data source as a row (id from notion_get_database)"
    )


@tool(
    "notion_move_page",
    "Move a Notion page under another page, or into a database as a row.",
    MovePage,
    keywords=("relocate", "reparent", "file under", "put in", "nest", "reorganize"),
)
async def move_page(args: MovePage, ctx: ToolContext) -> Any:
    row = bool(args.parent_database_id or args.parent_data_source_id)
    if bool(args.parent_page_id) == row:
        raise ValueError("Give exactly one of parent_page_id or parent_database_id / parent_data_source_id")
    if args.parent_page_id:
        parent = {"type": "page_id", "page_id": args.parent_page_id}
    else:
        source = await data_source_of(ctx, args.parent_database_id, args.parent_data_source_id)
        parent = {"type": "data_source_id", "data_source_id": source}
    return _page(await _call(ctx, "POST", f"/pages/{args.page_id}/move", json={"parent": parent}))


class AppendText(ArgsModel):
    block_id: str = Field(
        description="Page (or block) id to append to (from notion_search or notion_get_page_content)"
    )
    text: str = Field(min_length=1, description="Text to append; blank lines separate paragraphs")


@tool(
    "notion_append_text",
    "Append paragraphs of text (up to 1,000) to the end of a Notion page.",
    AppendText,
    keywords=("add", "write", "paragraph", "at the end", "continue", "extend"),
)
async def append_text(args: AppendText, ctx: ToolContext) -> Any:
    added = await _append(ctx, args.block_id, _paragraphs(args.text))
    return {"blocks": [_block(b) for b in added]}


class DatabaseId(ArgsModel):
    database_id: str = Field(description="Notion database id, from notion_search")


class GetDatabase(DatabaseId):
    data_source_id: str | None = Field(
        default=None,
        description="Which of its data sources to show the columns of (an id from notion_get_database's "
        "data_sources); default: the only one",
    )


def _columns(source: dict[str, Any]) -> dict[str, Any]:
    columns = {}
    for name, prop in (source.get("properties") or {}).items():
        kind = prop.get("type")
        options = (
            (prop.get(kind) or {}).get("options") if kind in ("select", "multi_select", "status") else None
        )
        column: dict[str, Any] = {"type": kind}
        if options:
            column["options"] = [o.get("name") for o in options]
        if kind == "relation":  # which table its values are rows of
            column["data_source_id"] = (prop.get("relation") or {}).get("data_source_id")
        columns[name] = column
    return columns


@tool(
    "notion_get_database",
    "Get a Notion database's title, its data sources (tables) and the columns (property names and types) "
    "of its data source.",
    GetDatabase,
    keywords=("columns", "schema", "properties", "structure", "fields", "table", "data source"),
)
async def get_database(args: GetDatabase, ctx: ToolContext) -> Any:
    db = await _call(ctx, "GET", f"/databases/{args.database_id}")
    sources = [
        {"id": d.get("id"), "name": d.get("name")}
        for d in db.get("data_sources") or []
        if isinstance(d, dict) and d.get("id")
    ]
    out = {**_page(db, properties=False), "data_sources": sources, "columns": None}
    chosen = args.data_source_id or (sources[0]["id"] if len(sources) == 1 else None)
    if chosen:
        source = await _call(ctx, "GET", f"/data_sources/{chosen}")
        out["data_source_id"] = chosen
        out["columns"] = _columns(source)
    return out


class QueryDatabase(Page):
    database_id: str | None = Field(
        default=None, description="Notion database id, from notion_search (its only data source is queried)"
    )
    data_source_id: str | None = Field(
        default=None,
        description="Data source to query (id from notion_get_database), for a database with several",
    )
    filter: dict[str, Any] | None = Field(
        default=None,
        description="Notion filter object, e.g. {'property': 'Status', 'status': {'equals': 'Done'}}",
    )
    sorts: list[dict[str, Any]] | None = Field(
        default=None, description="Notion sorts, e.g. [{'property': 'Due', 'direction': 'ascending'}]"
    )


@tool(
    "notion_query_database",
    "Query rows of a Notion database (its data source) with an optional filter and sort.",
    QueryDatabase,
    keywords=("rows", "entries", "filter", "sort", "list", "table", "records", "items", "data source"),
)
async def query_database(args: QueryDatabase, ctx: ToolContext) -> Any:
    source = await data_source_of(ctx, args.database_id, args.data_source_id)
    body: dict[str, Any] = {"page_size": args.perPage}
    if args.filter:
        body["filter"] = args.filter
    if args.sorts:
        body["sorts"] = args.sorts
    if args.cursor:
        body["start_cursor"] = args.cursor
    res = await _call(ctx, "POST", f"/data_sources/{source}/query", json=body)
    return {"rows": [_page(r) for r in res.get("results") or []], **_cursor(res)}


@tool(
    "notion_list_users",
    "List the people and bots in the Notion workspace.",
    Page,
    keywords=("people", "members", "teammates", "bots", "workspace members"),
)
async def list_users(args: Page, ctx: ToolContext) -> Any:
    res = await _call(ctx, "GET", "/users", params={"page_size": args.perPage, "start_cursor": args.cursor})
    users = [
        {**pick(u, "id", "type", "name", "avatar_url"), "email": (u.get("person") or {}).get("email")}
        for u in res.get("results") or []
    ]
    return {"users": users, **_cursor(res)}


class AddComment(PageId):
    text: str = Field(min_length=1, description="Comment text")


@tool(
    "notion_add_comment",
    "Add a comment to a Notion page.",
    AddComment,
    keywords=("reply", "note", "remark", "feedback", "write", "discussion"),
)
async def add_comment(args: AddComment, ctx: ToolContext) -> Any:
    res = await _call(
        ctx, "POST", "/comments", json={"parent": {"page_id": args.page_id}, "rich_text": _rich(args.text)}
    )
    return _comment(res)


def _comment(c: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": c.get("id"),
        "discussion_id": c.get("discussion_id"),
        "text": plain_text(c.get("rich_text")),
        "created_time": c.get("created_time"),
        "created_by": (c.get("created_by") or {}).get("id"),
    }


class ListComments(Page):
    block_id: str = Field(
        description="Page or block id whose open comments to list (from notion_search or notion_get_page_content)"
    )


@tool(
    "notion_list_comments",
    "List the open comments on a Notion page or block.",
    ListComments,
    keywords=("discussion", "feedback", "remarks", "show", "read"),
)
async def list_comments(args: ListComments, ctx: ToolContext) -> Any:
    res = await _call(
        ctx,
        "GET",
        "/comments",
        params={"block_id": args.block_id, "page_size": args.perPage, "start_cursor": args.cursor},
    )
    return {"comments": [_comment(c) for c in res.get("results") or []], **_cursor(res)}


# -- blocks: append in batches, update, delete -----------------------------------------------------

_BATCH = 100  # Notion appends at most 100 blocks per request
_MAX_BLOCKS = 1_000  # what one tool call may append: at most 10 requests


async def _append(
    ctx: ToolContext, block_id: str, children: list[dict[str, Any]], after: str | None = None
) -> list[Any]:
    """Append `children` in order, 100 per request; each batch goes after the previous one."""
    if len(children) > _MAX_BLOCKS:
        raise ToolError(f"{len(children)} blocks; one call appends at most {_MAX_BLOCKS}.")
    added: list[Any] = []
    for start in range(0, len(children), _BATCH):
        body: dict[str, Any] = {"children": children[start : start + _BATCH]}
        if after:
            body["after"] = after
        res = await _call(ctx, "PATCH", f"/blocks/{block_id}/children", json=body)
        results = res.get("results") or []
        added.extend(results)
        if after and results:
            # With `after`, the next batch must follow the last block just added, not the anchor.
            after = results[-1].get("id") or after
    return added


class AppendBlocks(ArgsModel):
    block_id: str = Field(
        description="Page (or block) id to append to (from notion_search or notion_get_page_content)"
    )
    children: list[dict[str, Any]] = Field(
        min_length=1,
        max_length=_MAX_BLOCKS,
        description="Notion block objects, e.g. {'type': 'heading_2', 'heading_2': {'rich_text': "
        "[{'text': {'content': 'Plan'}}]}}; up to 1,000, sent 100 per request",
    )
    after: str | None = Field(
        default=None, description="Insert after this child block id (default: at the end)"
    )


@tool(
    "notion_append_blocks",
    "Append Notion blocks (headings, lists, to-dos, code...) to a page, any number up to 1,000, in order.",
    AppendBlocks,
    keywords=("add", "headings", "bullets", "checklist", "code", "content", "insert", "structured"),
)
async def append_blocks(args: AppendBlocks, ctx: ToolContext) -> Any:
    added = await _append(ctx, args.block_id, args.children, args.after)
    return {"appended": len(added), "blocks": [_block(b) for b in added]}


_TEXT_BLOCKS = (
    "paragraph",
    "heading_1",
    "heading_2",
    "heading_3",
    "bulleted_list_item",
    "numbered_list_item",
    "to_do",
    "toggle",
    "quote",
    "callout",
    "code",
)


class UpdateBlock(ArgsModel):
    block_id: str = Field(description="Block id (notion_get_page_content lists them)")
    text: str | None = Field(default=None, max_length=100_000, description="New text of a text block")
    checked: bool | None = Field(default=None, description="Tick (true) or untick (false) a to-do block")


@tool(
    "notion_update_block",
    "Edit a Notion block: replace the text of a paragraph, heading, list item, to-do, quote or code "
    "block, or tick a to-do.",
    UpdateBlock,
    keywords=("edit", "change", "check", "tick", "complete", "checkbox", "paragraph", "fix", "todo"),
)
async def update_block(args: UpdateBlock, ctx: ToolContext) -> Any:
    if args.text is None and args.checked is None:
        raise ToolError("Nothing to change: give text or checked.")
    block = await _call(ctx, "GET", f"/blocks/{args.block_id}")
    kind = block.get("type", "")
    if kind not in _TEXT_BLOCKS:
        raise ToolError(
            f"Block {args.block_id} is a {kind or 'unknown'} block; only text blocks can be edited here."
        )
    if args.checked is not None and kind != "to_do":
        raise ToolError(f"Block {args.block_id} is a {kind} block; only to-do blocks can be checked.")
    change: dict[str, Any] = {}
    if args.text is not None:
        change["rich_text"] = _rich(args.text)
    if args.checked is not None:
        change["checked"] = args.checked
    return _block(await _call(ctx, "PATCH", f"/blocks/{args.block_id}", json={kind: change}))


class BlockId(ArgsModel):
    block_id: str = Field(description="Block id, from notion_get_page_content")


@tool(
    "notion_delete_block",
    "Delete (archive) a Notion block from its page.",
    BlockId,
    keywords=("remove", "erase", "paragraph", "line", "item"),
)
async def delete_block(args: BlockId, ctx: ToolContext) -> Any:
    block = await _call(ctx, "DELETE", f"/blocks/{args.block_id}")
    return {"id": block.get("id"), "archived": block.get("archived")}


# -- databases -------------------------------------------------------------------------------------


class CreateDatabase(ArgsModel):
    parent_page_id: str = Field(description="Page id to create the database in (from notion_search)")
    title: str = Field(min_length=1, max_length=2_000, description="Database title")
    title_property: str = Field(default="Name", min_length=1, description="Name of the title column")
    properties: dict[str, dict[str, Any]] | None = Field(
        default=None,
        max_length=100,
        description="Other columns in Notion's schema format, e.g. {'Status': {'select': {'options': "
        "[{'name': 'Open'}]}}, 'Due': {'date': {}}}; a relation names the table it links to: "
        "{'Project': {'relation': {'data_source_id': '<id from notion_get_database>', "
        "'single_property': {}}}}",
    )
    inline: bool = Field(default=False, description="Show it inline in the page (true) or as a child page")


@tool(
    "notion_create_database",
    "Create a Notion database (a table) in a page, with a title column and any other columns.",
    CreateDatabase,
    keywords=("new table", "tracker", "table", "spreadsheet"),
)
async def create_database(args: CreateDatabase, ctx: ToolContext) -> Any:
    props: dict[str, Any] = {args.title_property: {"title": {}}, **(args.properties or {})}
    db = await _call(
        ctx,
        "POST",
        "/databases",
        json={
            "parent": {"type": "page_id", "page_id": args.parent_page_id},
            "title": _rich(args.title),
            "is_inline": args.inline,
            "initial_data_source": {"properties": props},  # the columns live on its data source
        },
    )
    sources = [d for d in db.get("data_sources") or [] if isinstance(d, dict)]
    return {
        "id": db.get("id"),
        "title": plain_text(db.get("title")),
        "url": db.get("url"),
        "data_source_id": sources[0].get("id") if sources else None,
        "properties": {name: next(iter(spec), None) for name, spec in props.items()},
    }


# -- duplicate a page ------------------------------------------------------------------------------

# Block types the API creates (its BlockObjectRequest types; tests/plugins/test_notion.py holds this
# set against @notionhq/client's). Everything else is left out of a copy and counted in `not_copied`:
# child pages and databases, link previews, synced blocks, buttons, AI and meeting-notes blocks,
# and what the API reports as `unsupported`.
COPYABLE_BLOCKS = frozenset(
    {
        "paragraph",
        "heading_1",
        "heading_2",
        "heading_3",
        "heading_4",
        "bulleted_list_item",
        "numbered_list_item",
        "to_do",
        "toggle",
        "quote",
        "callout",
        "code",
        "divider",
        "equation",
        "bookmark",
        "embed",
        "image",
        "video",
        "pdf",
        "file",
        "audio",
        "table",
        "table_row",
        "column_list",
        "column",
        "table_of_contents",
        "breadcrumb",
        "link_to_page",
    }
)
_FILE_BLOCKS = ("image", "video", "pdf", "file", "audio")
# These are created together with their children (a table with its rows, columns with their content).
_WITH_CHILDREN = ("table", "column_list", "column")
# Property types Notion computes: never written.
_COMPUTED = frozenset(
    {
        "formula",
        "rollup",
        "created_time",
        "created_by",
        "last_edited_time",
        "last_edited_by",
        "unique_id",
        "verification",
        "button",
    }
)
MAX_COPY_BLOCKS = 500  # blocks one duplicate reads and writes at most
MAX_COPY_DEPTH = 8  # levels of nested blocks


class _Node:
    __slots__ = ("block", "children")

    def __init__(self, block: dict[str, Any]) -> None:
        self.block = block
        self.children: list[_Node] = []


class _Copy:
    """What a duplicate read: the tree of blocks it will write, and what it leaves out."""

    def __init__(self) -> None:
        self.count = 0
        self.skipped: dict[str, int] = {}

    def skip(self, what: str) -> None:
        self.skipped[what] = self.skipped.get(what, 0) + 1

    def keeps(self, block: dict[str, Any]) -> bool:
        kind = block.get("type", "")
        if kind not in COPYABLE_BLOCKS:
            self.skip(kind or "unknown")
            return False
        body = block.get(kind) or {}
        if kind in _FILE_BLOCKS and body.get("type") != "external":
            self.skip(f"{kind} (uploaded to Notion)")  # its URL expires within the hour
            return False
        return True

    async def read(self, ctx: ToolContext, block_id: str, depth: int = 0) -> list[_Node]:
        nodes: list[_Node] = []
        cursor = None
        while True:
            res = await _call(
                ctx,
                "GET",
                f"/blocks/{block_id}/children",
                params={"page_size": _BATCH, "start_cursor": cursor},
            )
            for block in res.get("results") or []:
                if not isinstance(block, dict) or not self.keeps(block):
                    continue
                self.count += 1
                if self.count > MAX_COPY_BLOCKS:
                    raise ToolError(
                        f"The page has more than {MAX_COPY_BLOCKS} blocks; duplicate copies at most "
                        f"{MAX_COPY_BLOCKS}. Nothing was created."
                    )
                nodes.append(_Node(block))
            if not res.get("has_more") or not res.get("next_cursor"):
                break
            cursor = res["next_cursor"]
        for node in nodes:
            if node.block.get("has_children"):
                if depth + 1 >= MAX_COPY_DEPTH:
                    raise ToolError(
                        f"The page nests blocks more than {MAX_COPY_DEPTH} levels deep; duplicate copies at "
                        f"most {MAX_COPY_DEPTH}. Nothing was created."
                    )
                node.children = await self.read(ctx, node.block["id"], depth + 1)
        return nodes


def _request(node: _Node) -> dict[str, Any]:
    """A block as the API creates it: its type's body, and for a table or columns their children."""
    kind = node.block["type"]
    body = {k: v for k, v in (node.block.get(kind) or {}).items() if k != "children"}
    if kind in _WITH_CHILDREN:
        kids = node.children[:_BATCH]
        if kind == "column" and not kids:  # a column holds at least one block
            kids = [_Node({"type": "paragraph", "paragraph": {"rich_text": []}})]
        body["children"] = [_request(k) for k in kids]
    return {"object": "block", "type": kind, kind: body}


async def _write(ctx: ToolContext, parent_id: str, nodes: list[_Node]) -> None:
    """Append `nodes` under `parent_id`, 100 per request, then each one's children under its copy."""
    for start in range(0, len(nodes), _BATCH):
        batch = nodes[start : start + _BATCH]
        res = await _call(
            ctx, "PATCH", f"/blocks/{parent_id}/children", json={"children": [_request(n) for n in batch]}
        )
        for node, made in zip(batch, res.get("results") or [], strict=False):
            await _write_children(ctx, node, str(made.get("id")))


def _deeper(node: _Node) -> bool:
    """Whether `node` has children that creating it (see _request) does not write."""
    kind = node.block["type"]
    if kind not in _WITH_CHILDREN:
        return bool(node.children)
    if len(node.children) > _BATCH:
        return True
    return kind != "table" and any(_deeper(k) for k in node.children)


async def _write_children(ctx: ToolContext, node: _Node, new_id: str) -> None:
    """The children of `node` not written with it, under its copy `new_id`. A table or a column list
    was created with its first 100 children (a column list: its columns with theirs); the rest follow,
    and children nested deeper go under the copies, whose ids are read back."""
    if not _deeper(node):
        return
    if node.block["type"] not in _WITH_CHILDREN:
        await _write(ctx, new_id, node.children)
        return
    sent = node.children[:_BATCH]
    if any(_deeper(k) for k in sent):
        made = await _children_ids(ctx, new_id)
        for child, child_id in zip(sent, made, strict=False):
            await _write_children(ctx, child, child_id)
    if len(node.children) > _BATCH:
        await _write(ctx, new_id, node.children[_BATCH:])


async def _children_ids(ctx: ToolContext, block_id: str) -> list[str]:
    ids: list[str] = []
    cursor = None
    while True:
        res = await _call(
            ctx, "GET", f"/blocks/{block_id}/children", params={"page_size": _BATCH, "start_cursor": cursor}
        )
        ids.extend(str(b.get("id")) for b in res.get("results") or [])
        if not res.get("has_more") or not res.get("next_cursor"):
            return ids
        cursor = res["next_cursor"]


def _writable_properties(page: dict[str, Any], title: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, prop in (page.get("properties") or {}).items():
        kind = prop.get("type", "") if isinstance(prop, dict) else ""
        if not kind or kind in _COMPUTED:
            continue
        value = prop.get(kind)
        if kind == "title" and title is not None:
            value = _rich(title)
        elif kind == "files":
            value = [f for f in value or [] if isinstance(f, dict) and f.get("type") == "external"]
        elif kind == "relation":
            value = [{"id": r.get("id")} for r in value or [] if isinstance(r, dict)]
        out[name] = {kind: value}
    return out


class DuplicatePage(PageId):
    title: str | None = Field(
        default=None, max_length=2_000, description="Title of the copy (default: the same)"
    )
    parent_page_id: str | None = Field(
        default=None,
        description="Create the copy under this page instead (page id from notion_search); default: the "
        "original's parent",
    )


@tool(
    "notion_duplicate_page",
    "Duplicate a Notion page under the same parent (or another page): its properties and content "
    "blocks. Not copied: comments, sub-pages, inline databases, files uploaded to Notion, synced "
    "blocks, link previews and other blocks the API cannot create.",
    DuplicatePage,
    keywords=("copy", "clone", "template", "make a copy", "replicate"),
)
async def duplicate_page(args: DuplicatePage, ctx: ToolContext) -> Any:
    page = await _call(ctx, "GET", f"/pages/{args.page_id}")
    parent: dict[str, Any]
    if args.parent_page_id:
        parent = {"type": "page_id", "page_id": args.parent_page_id}
    else:
        where = _parent(page)
        if where["type"] not in ("page_id", "data_source_id") or not where["id"]:
            raise ToolError(
                f"The page's parent is a {where['type'] or 'unknown'}, where the API cannot create a page: "
                "give parent_page_id."
            )
        parent = {"type": where["type"], where["type"]: where["id"]}
    copy = _Copy()
    tree = await copy.read(ctx, args.page_id)  # all of it first: a page too large is refused unwritten
    properties = _writable_properties(page, args.title)
    if parent["type"] == "page_id":  # under a page only the title is a property
        properties = {k: v for k, v in properties.items() if "title" in v}
    body: dict[str, Any] = {"parent": parent, "properties": properties}
    for key in ("icon", "cover"):
        art = page.get(key)
        if isinstance(art, dict) and art.get("type") in ("emoji", "external", "custom_emoji"):
            body[key] = art
        elif art:
            copy.skip(f"{key} (uploaded to Notion)")
    made = await _call(ctx, "POST", "/pages", json=body)
    try:
        await _write(ctx, made["id"], tree)
    except Exception:
        # Nothing half-written: the partial copy goes to the trash, the error is the answer.
        with contextlib.suppress(Exception):
            await _call(ctx, "PATCH", f"/pages/{made['id']}", json={"archived": True})
        raise
    return {**_page(made, properties=False), "copied_blocks": copy.count, "not_copied": copy.skipped}


TOOLS = [
    search,
    get_page,
    get_page_content,
    create_page,
    update_page,
    archive_page,
    move_page,
    append_text,
    get_database,
    query_database,
    list_users,
    add_comment,
    list_comments,
    append_blocks,
    update_block,
    delete_block,
    create_database,
    duplicate_page,
]
