"""Confluence Cloud tools: REST API v2 (https://developer.atlassian.com/cloud/confluence/rest/v2/)
for spaces, pages and comments, and v1 `/wiki/rest/api/search` for CQL search (v2 has none).

Page bodies are Confluence storage format (XHTML) unless `representation="wiki"` is given.
List tools take `limit` and `cursor` and return `nextCursor`, read from the `_links.next` URL.
"""

from __future__ import annotations

import html
import re
from typing import Any, Literal

from workbench.sdk import ToolError, api, compact, pick, pick_many, query_param, trim
from workbench.tools import Field, ToolContext, tool

from workbench_plugins.atlassian_jira.cloud import SiteArgs, site_path


async def _v2(ctx: ToolContext, cloud_id: str | None) -> str:
    return f"{await site_path(ctx, cloud_id, 'confluence')}/wiki/api/v2"


def _next_cursor(body: Any) -> str | None:
    return query_param(((body or {}).get("_links") or {}).get("next"), "cursor")


def _page(raw: Any, base: str | None = None) -> dict[str, Any]:
    out = pick(raw, "id", "title", "status", "spaceId", "parentId", "version.number", "createdAt")
    links = raw.get("_links") or {}
    webui = links.get("webui")
    root = links.get("base") or base
    out["url"] = f"{root}{webui}" if webui and root else webui
    return out


class _Paged(SiteArgs):
    limit: int = Field(default=25, ge=1, le=250, description="Results per page")
    cursor: str | None = Field(default=None, description="Cursor from the previous page (nextCursor)")


class ListSpaces(_Paged):
    keys: list[str] | None = Field(default=None, description="Only these space keys, e.g. ['ENG']")


@tool(
    "confluence_list_spaces",
    "List Confluence spaces (id, key, name) the user can see.",
    ListSpaces,
    scopes=("read:space:confluence",),
    keywords=("show", "workspaces"),
)
async def list_spaces(args: ListSpaces, ctx: ToolContext) -> Any:
    base = await _v2(ctx, args.cloudId)
    body = await api(
        ctx,
        "GET",
        f"{base}/spaces",
        params={
            "limit": args.limit,
            "cursor": args.cursor,
            "keys": ",".join(args.keys) if args.keys else None,
        },
    )
    spaces = [pick(s, "id", "key", "name", "type", "status") for s in body.get("results", [])]
    return {"spaces": spaces, "nextCursor": _next_cursor(body)}


class ListPages(_Paged):
    spaceId: str | None = Field(default=None, description="Space id (confluence_list_spaces)")
    spaceKey: str | None = Field(default=None, description="Space key, e.g. 'ENG' (instead of spaceId)")
    title: str | None = Field(default=None, description="Only pages with exactly this title")


@tool(
    "confluence_list_pages",
    "List pages in a Confluence space (or find one by exact title).",
    ListPages,
    scopes=("read:space:confluence", "read:page:confluence"),
    keywords=("show", "documents", "articles", "browse"),
)
async def list_pages(args: ListPages, ctx: ToolContext) -> Any:
    base = await _v2(ctx, args.cloudId)
    space_id = args.spaceId
    if space_id is None:
        if not args.spaceKey:
            raise ToolError("Give spaceId or spaceKey.")
        found = (await api(ctx, "GET", f"{base}/spaces", params={"keys": args.spaceKey})).get("results") or []
        if not found:
            raise ToolError(f"No Confluence space with key '{args.spaceKey}'.")
        space_id = found[0]["id"]
    body = await api(
        ctx,
        "GET",
        f"{base}/spaces/{space_id}/pages",
        params={"limit": args.limit, "cursor": args.cursor, "title": args.title},
    )
    root = (body.get("_links") or {}).get("base")
    return {"pages": [_page(p, root) for p in body.get("results", [])], "nextCursor": _next_cursor(body)}


class PageRef(SiteArgs):
    pageId: str = Field(
        description="Page id, from confluence_list_pages, confluence_search or confluence_list_child_pages"
    )


@tool(
    "confluence_get_page",
    "Read a Confluence page: title, version and body (storage format).",
    PageRef,
    scopes=("read:page:confluence",),
    keywords=("article", "show", "open", "view", "text", "contents", "document"),
)
async def get_page(args: PageRef, ctx: ToolContext) -> Any:
    base = await _v2(ctx, args.cloudId)
    raw = await api(ctx, "GET", f"{base}/pages/{args.pageId}", params={"body-format": "storage"})
    body = ((raw.get("body") or {}).get("storage") or {}).get("value")
    return {**_page(raw), "body": trim(body, 30_000)}


class CreatePage(SiteArgs):
    spaceId: str = Field(description="Space id (confluence_list_spaces)")
    title: str = Field(min_length=1, description="Page title (unique within the space)")
    body: str = Field(description="Page content, e.g. '<p>Hello</p>' in storage format")
    parentId: str | None = Field(
        default=None, description="Parent page id, from confluence_list_pages (default: the space home page)"
    )
    representation: Literal["storage", "wiki"] = Field(
        default="storage", description="Body format: storage (XHTML) or wiki markup"
    )


@tool(
    "confluence_create_page",
    "Create (write, publish) a new Confluence page in a space.",
    CreatePage,
    scopes=("write:page:confluence",),
    keywords=("article", "new", "add", "document", "draft", "post"),
)
async def create_page(args: CreatePage, ctx: ToolContext) -> Any:
    base = await _v2(ctx, args.cloudId)
    raw = await api(
        ctx,
        "POST",
        f"{base}/pages",
        json=compact(
            {
                "spaceId": args.spaceId,
                "status": "current",
                "title": args.title,
                "parentId": args.parentId,
                "body": {"representation": args.representation, "value": args.body},
            }
        ),
    )
    return _page(raw)


class UpdatePage(PageRef):
    body: str = Field(description="The full new content (replaces the old body)")
    title: str | None = Field(default=None, description="New title (default: keep the current one)")
    versionMessage: str | None = Field(default=None, description="Change note shown in page history")
    representation: Literal["storage", "wiki"] = Field(default="storage", description="Body format")


@tool(
    "confluence_update_page",
    "Update (edit) a Confluence page's content and title; the version number is bumped for you.",
    UpdatePage,
    scopes=("read:page:confluence", "write:page:confluence"),
    keywords=("article", "change", "rewrite", "revise", "fix", "modify", "document"),
)
async def update_page(args: UpdatePage, ctx: ToolContext) -> Any:
    base = await _v2(ctx, args.cloudId)
    current = await api(ctx, "GET", f"{base}/pages/{args.pageId}")
    version = int((current.get("version") or {}).get("number") or 0) + 1
    raw = await api(
        ctx,
        "PUT",
        f"{base}/pages/{args.pageId}",
        json={
            "id": args.pageId,
            "status": "current",
            "title": args.title or current.get("title"),
            "body": {"representation": args.representation, "value": args.body},
            "version": compact({"number": version, "message": args.versionMessage}),
        },
    )
    return _page(raw)


@tool(
    "confluence_delete_page",
    "Delete a Confluence page (moves it to the space's trash).",
    PageRef,
    scopes=("delete:page:confluence",),
    keywords=("article", "remove", "erase", "get rid", "document"),
)
async def delete_page(args: PageRef, ctx: ToolContext) -> Any:
    base = await _v2(ctx, args.cloudId)
    await api(ctx, "DELETE", f"{base}/pages/{args.pageId}")
    return {"id": args.pageId, "deleted": True}


class ListChildren(PageRef, _Paged):
    pass


@tool(
    "confluence_list_child_pages",
    "List the direct child pages of a Confluence page.",
    ListChildren,
    scopes=("read:page:confluence",),
    keywords=("subpages", "children", "nested", "under", "hierarchy", "tree"),
)
async def list_child_pages(args: ListChildren, ctx: ToolContext) -> Any:
    base = await _v2(ctx, args.cloudId)
    body = await api(
        ctx,
        "GET",
        f"{base}/pages/{args.pageId}/children",
        params={"limit": args.limit, "cursor": args.cursor},
    )
    children = [pick(c, "id", "title", "status", "spaceId", "childPosition") for c in body.get("results", [])]
    return {"pages": children, "nextCursor": _next_cursor(body)}


class Search(_Paged):
    cql: str = Field(
        min_length=1,
        description="CQL query, e.g. 'type = page AND space = ENG AND text ~ \"onboarding\"'",
    )


@tool(
    "confluence_search",
    "Search Confluence pages and content with CQL (full-text, by space, label, title).",
    Search,
    scopes=("search:confluence",),
    keywords=("find", "look up", "articles", "query"),
)
async def search(args: Search, ctx: ToolContext) -> Any:
    site = await site_path(ctx, args.cloudId, "confluence")
    body = await api(
        ctx,
        "GET",
        f"{site}/wiki/rest/api/search",
        params={"cql": args.cql, "limit": args.limit, "cursor": args.cursor},
    )
    root = (body.get("_links") or {}).get("base")
    results = []
    for r in body.get("results", []):
        content = r.get("content") or {}
        url = r.get("url")
        results.append(
            {
                "id": content.get("id"),
                "type": content.get("type"),
                "title": r.get("title") or content.get("title"),
                "excerpt": trim(r.get("excerpt"), 500),
                "url": f"{root}{url}" if root and url else url,
                "lastModified": r.get("lastModified"),
            }
        )
    return {"results": results, "totalSize": body.get("totalSize"), "nextCursor": _next_cursor(body)}


class ListComments(PageRef, _Paged):
    pass


@tool(
    "confluence_list_comments",
    "List the footer comments on a Confluence page.",
    ListComments,
    scopes=("read:comment:confluence",),
    keywords=("feedback", "discussion", "remarks", "show", "read"),
)
async def list_comments(args: ListComments, ctx: ToolContext) -> Any:
    base = await _v2(ctx, args.cloudId)
    body = await api(
        ctx,
        "GET",
        f"{base}/pages/{args.pageId}/footer-comments",
        params={"body-format": "storage", "limit": args.limit, "cursor": args.cursor},
    )
    comments = [
        {
            **pick(c, "id", "version.authorId", "version.createdAt"),
            "body": trim(((c.get("body") or {}).get("storage") or {}).get("value"), 5_000),
        }
        for c in body.get("results", [])
    ]
    return {"comments": comments, "nextCursor": _next_cursor(body)}


class ListLabels(PageRef, _Paged):
    prefix: Literal["global", "my", "team", "system"] | None = Field(
        default=None, description="Only labels of this prefix (most labels are 'global')"
    )


@tool(
    "confluence_list_page_labels",
    "List the labels (tags) on a Confluence page.",
    ListLabels,
    scopes=("read:page:confluence",),
    keywords=("tags", "categories", "topics", "keywords", "show"),
)
async def list_page_labels(args: ListLabels, ctx: ToolContext) -> Any:
    base = await _v2(ctx, args.cloudId)
    body = await api(
        ctx,
        "GET",
        f"{base}/pages/{args.pageId}/labels",
        params={"prefix": args.prefix, "limit": args.limit, "cursor": args.cursor},
    )
    return {
        "labels": pick_many(body.get("results"), "id", "name", "prefix"),
        "nextCursor": _next_cursor(body),
    }


class AddComment(PageRef):
    body: str = Field(min_length=1, description="Comment in storage format, e.g. '<p>Looks good</p>'")


@tool(
    "confluence_add_comment",
    "Add a footer comment to a Confluence page.",
    AddComment,
    scopes=("write:comment:confluence",),
    keywords=("feedback", "remark", "write", "note", "reply", "post"),
)
async def add_comment(args: AddComment, ctx: ToolContext) -> Any:
    base = await _v2(ctx, args.cloudId)
    raw = await api(
        ctx,
        "POST",
        f"{base}/footer-comments",
        json={"pageId": args.pageId, "body": {"representation": "storage", "value": args.body}},
    )
    return pick(raw, "id", "pageId", "version.number", "version.createdAt")


# -- attachments and inline comments ---------------------------------------------------------------


class ListAttachments(PageRef, _Paged):
    filename: str | None = Field(default=None, description="Only the attachment with this file name")
    mediaType: str | None = Field(
        default=None, description="Only attachments of this type, e.g. 'application/pdf'"
    )


@tool(
    "confluence_list_page_attachments",
    "List the files attached to a Confluence page (name, type, size, download link).",
    ListAttachments,
    scopes=("read:attachment:confluence",),
    keywords=("files", "documents", "uploads", "images", "pdf", "download", "show"),
)
async def list_page_attachments(args: ListAttachments, ctx: ToolContext) -> Any:
    base = await _v2(ctx, args.cloudId)
    body = await api(
        ctx,
        "GET",
        f"{base}/pages/{args.pageId}/attachments",
        params={
            "filename": args.filename,
            "mediaType": args.mediaType,
            "limit": args.limit,
            "cursor": args.cursor,
        },
    )
    root = (body.get("_links") or {}).get("base")
    files = []
    for a in body.get("results") or []:
        item = pick(a, "id", "title", "mediaType", "fileSize", "comment", "createdAt", "version.number")
        download = a.get("downloadLink") or (a.get("_links") or {}).get("download")
        item["downloadUrl"] = f"{root}{download}" if root and download else download
        files.append(item)
    return {"attachments": files, "nextCursor": _next_cursor(body)}


class ListInlineComments(PageRef, _Paged):
    resolution: Literal["open", "reopened", "resolved", "dangling"] | None = Field(
        default=None, description="Only comments in this state (default: all)"
    )


def _inline(c: Any) -> dict[str, Any]:
    props = c.get("properties") or {}
    return {
        **pick(c, "id", "resolutionStatus", "version.authorId", "version.createdAt"),
        "selection": props.get("inlineOriginalSelection"),
        "body": trim(((c.get("body") or {}).get("storage") or {}).get("value"), 5_000),
    }


@tool(
    "confluence_list_inline_comments",
    "List the inline comments on a Confluence page: each with the text it is anchored to and whether "
    "it is resolved.",
    ListInlineComments,
    scopes=("read:comment:confluence",),
    keywords=("annotations", "highlights", "review notes", "feedback", "remarks", "show"),
)
async def list_inline_comments(args: ListInlineComments, ctx: ToolContext) -> Any:
    base = await _v2(ctx, args.cloudId)
    body = await api(
        ctx,
        "GET",
        f"{base}/pages/{args.pageId}/inline-comments",
        params={
            "body-format": "storage",
            "resolution-status": args.resolution,
            "limit": args.limit,
            "cursor": args.cursor,
        },
    )
    return {"comments": [_inline(c) for c in body.get("results") or []], "nextCursor": _next_cursor(body)}


class AddInlineComment(PageRef):
    body: str = Field(
        min_length=1, description="Comment in storage format, e.g. '<p>Is this still true?</p>'"
    )
    selection: str = Field(
        min_length=1,
        max_length=1000,
        description="The text on the page to anchor the comment to, exactly as shown",
    )
    occurrence: int | None = Field(
        default=None,
        ge=1,
        description="Which appearance of the text to anchor to (1 = first), needed when it appears more than once",
    )


_TAG = re.compile(r"<[^>]*>")


def _page_text(storage: str) -> str:
    """A storage-format body as the text a reader sees (tags dropped, entities decoded)."""
    return html.unescape(_TAG.sub("", storage))


@tool(
    "confluence_add_inline_comment",
    "Add an inline comment to a Confluence page, anchored to a piece of its text (reads the page first "
    "to find the text).",
    AddInlineComment,
    scopes=("read:page:confluence", "write:comment:confluence"),
    keywords=("annotate", "highlight", "remark", "review", "note", "feedback"),
)
async def add_inline_comment(args: AddInlineComment, ctx: ToolContext) -> Any:
    base = await _v2(ctx, args.cloudId)
    # The API anchors by (text, how many times it appears, which one): count it on the page now.
    page = await api(ctx, "GET", f"{base}/pages/{args.pageId}", params={"body-format": "storage"})
    storage = ((page.get("body") or {}).get("storage") or {}).get("value") or ""
    count = _page_text(storage).count(args.selection)
    if count == 0:
        raise ToolError(f"The text '{trim(args.selection, 80)}' does not appear on page {args.pageId}.")
    if args.occurrence is None and count > 1:
        raise ToolError(
            f"The text appears {count} times on page {args.pageId}: give occurrence (1 to {count})."
        )
    index = (args.occurrence or 1) - 1
    if index >= count:
        raise ToolError(
            f"The text appears {count} times on page {args.pageId}; occurrence {index + 1} is past it."
        )
    raw = await api(
        ctx,
        "POST",
        f"{base}/inline-comments",
        json={
            "pageId": args.pageId,
            "body": {"representation": "storage", "value": args.body},
            "inlineCommentProperties": {
                "textSelection": args.selection,
                "textSelectionMatchCount": count,
                "textSelectionMatchIndex": index,
            },
        },
    )
    return {**pick(raw, "id", "pageId", "resolutionStatus", "version.number"), "selection": args.selection}


TOOLS = [
    list_spaces,
    list_pages,
    get_page,
    create_page,
    update_page,
    delete_page,
    list_child_pages,
    search,
    list_comments,
    add_comment,
    list_page_labels,
    list_page_attachments,
    list_inline_comments,
    add_inline_comment,
]
