"""Google Drive API v3 tools (https://developers.google.com/drive/api/reference/rest/v3).

Metadata calls go to /drive/v3; content goes to /upload/drive/v3 (multipart upload: JSON
metadata and the content in one multipart/related request). All calls support shared drives.
List tools take `limit` and `pageToken` and return `nextPageToken`.
"""

from __future__ import annotations

import base64
import json
import uuid
from typing import Any, Literal

from workbench.sdk import ToolError, api, api_response, compact, pick, pick_many, trim
from workbench.tools import ArgsModel, Field, ToolContext, tool

# Every tool works with the one scope the manifest asks for (the discovery document lists it
# for each method called; tests/plugins/test_definitions.py checks that).
_SCOPES = ("https://www.googleapis.com/auth/drive",)

FILES = "/drive/v3/files"
UPLOAD = "/upload/drive/v3/files"
_F = ("id", "name", "mimeType", "size", "modifiedTime", "webViewLink", "parents")
FIELDS = ",".join(_F)
_ALL = {"supportsAllDrives": "true"}
_GOOGLE = "application/vnd.google-apps."
FOLDER = f"{_GOOGLE}folder"
# What a Google-native file is exported as when read as text.
_EXPORT = {
    f"{_GOOGLE}document": "text/plain",
    f"{_GOOGLE}spreadsheet": "text/csv",
    f"{_GOOGLE}presentation": "text/plain",
}
_TEXTUAL = ("text/", "application/json", "application/xml", "application/javascript", "application/x-yaml")


def _quote(value: str) -> str:
    """A string literal for a Drive query (q) expression."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


async def _list(ctx: ToolContext, q: str, limit: int, page_token: str | None, order_by: str | None) -> Any:
    page = await api(
        ctx,
        "GET",
        FILES,
        params={
            "q": q,
            "pageSize": limit,
            "pageToken": page_token,
            "orderBy": order_by,
            "fields": f"nextPageToken,files({FIELDS})",
            "includeItemsFromAllDrives": "true",
            **_ALL,
        },
    )
    return {"files": pick_many(page.get("files"), *_F), "nextPageToken": page.get("nextPageToken")}


class ListFiles(ArgsModel):
    folderId: str | None = Field(
        default=None,
        description="Only files directly in this folder: a folder id from google_drive_list_files or google_drive_search ('root' for My Drive)",
    )
    q: str | None = Field(
        default=None,
        description="Extra Drive query, e.g. \"mimeType = 'application/pdf'\" or \"name contains 'Q3'\"",
    )
    limit: int = Field(default=25, ge=1, le=1000, description="Files per page")
    pageToken: str | None = Field(default=None, description="Cursor from the previous page")
    orderBy: str | None = Field(default="modifiedTime desc", description="e.g. 'modifiedTime desc', 'name'")


@tool(
    "google_drive_list_files",
    "List files in Google Drive or in one folder, newest first.",
    ListFiles,
    scopes=_SCOPES,
    keywords=("show", "browse", "folder contents", "recent"),
)
async def list_files(args: ListFiles, ctx: ToolContext) -> Any:
    clauses = ["trashed = false"]
    if args.folderId:
        clauses.append(f"{_quote(args.folderId)} in parents")
    if args.q:
        clauses.append(f"({args.q})")
    return await _list(ctx, " and ".join(clauses), args.limit, args.pageToken, args.orderBy)


class Search(ArgsModel):
    text: str = Field(min_length=1, description="Words to find in file names and contents")
    mimeType: str | None = Field(default=None, description="Only this type, e.g. 'application/pdf'")
    limit: int = Field(default=25, ge=1, le=1000, description="Files per page")
    pageToken: str | None = Field(default=None, description="Cursor from the previous page")


@tool(
    "google_drive_search",
    "Search (find) Google Drive files by words in their name or content.",
    Search,
    scopes=_SCOPES,
    keywords=("find", "look for", "lookup", "locate", "named", "containing"),
)
async def search(args: Search, ctx: ToolContext) -> Any:
    q = f"fullText contains {_quote(args.text)} and trashed = false"
    if args.mimeType:
        q += f" and mimeType = {_quote(args.mimeType)}"
    return await _list(ctx, q, args.limit, args.pageToken, None)


class FileRef(ArgsModel):
    fileId: str = Field(description="Drive file id, from google_drive_list_files or google_drive_search")


@tool(
    "google_drive_get_file",
    "Get a Google Drive file's metadata (name, type, size, link, folder).",
    FileRef,
    scopes=_SCOPES,
    keywords=("metadata", "info", "details", "properties", "size", "link", "owner"),
)
async def get_file(args: FileRef, ctx: ToolContext) -> Any:
    meta = await api(
        ctx,
        "GET",
        f"{FILES}/{args.fileId}",
        params={"fields": f"{FIELDS},description,owners(emailAddress)", **_ALL},
    )
    return {
        **pick(meta, *_F, "description"),
        "owners": [o.get("emailAddress") for o in meta.get("owners") or []],
    }


class ReadFile(FileRef):
    maxChars: int = Field(
        default=50_000, ge=100, le=200_000, description="Cut the text after this many characters"
    )


@tool(
    "google_drive_read_file",
    "Read a Google Drive file's contents as text: Docs and Slides as plain text, text files as is, and "
    "a Google Sheet's first sheet only, as CSV (sheets_read_range reads any sheet); "
    "google_drive_download_file gets PDFs and other binary files.",
    ReadFile,
    scopes=_SCOPES,
    keywords=("open", "contents", "text", "google doc", "docs", "slides", "view", "document"),
)
async def read_file(args: ReadFile, ctx: ToolContext) -> Any:
    meta = await api(ctx, "GET", f"{FILES}/{args.fileId}", params={"fields": "id,name,mimeType,size", **_ALL})
    mime = meta.get("mimeType", "")
    if mime in _EXPORT:
        resp = await api_response(
            ctx, "GET", f"{FILES}/{args.fileId}/export", params={"mimeType": _EXPORT[mime]}
        )
    elif mime.startswith(_TEXTUAL):
        resp = await api_response(ctx, "GET", f"{FILES}/{args.fileId}", params={"alt": "media", **_ALL})
    else:
        raise ToolError(
            f"'{meta.get('name')}' is {mime or 'binary'}; only Google Docs/Sheets/Slides and text files can be read as text; google_drive_download_file returns its bytes."
        )
    return {**pick(meta, "id", "name", "mimeType"), "content": trim(resp.text, args.maxChars)}


class Upload(ArgsModel):
    name: str = Field(min_length=1, description="File name, e.g. 'report.csv'")
    content: str = Field(description="The file's text content")
    mimeType: str = Field(default="text/plain", description="Content type, e.g. 'text/csv', 'text/markdown'")
    parents: list[str] | None = Field(
        default=None, description="Folder ids to put the file in (default: My Drive)"
    )
    description: str | None = Field(default=None, description="File description")
    convertTo: Literal["document", "spreadsheet", "presentation"] | None = Field(
        default=None, description="Convert into a Google Doc/Sheet/Slides file (e.g. CSV -> spreadsheet)"
    )


@tool(
    "google_drive_upload",
    "Upload (create, save) a text file to Google Drive; returns its id and webViewLink.",
    Upload,
    scopes=_SCOPES,
    keywords=("save", "store", "put", "add", "new file", "create file", "backup"),
)
async def upload(args: Upload, ctx: ToolContext) -> Any:
    metadata = compact(
        {
            "name": args.name,
            "parents": args.parents,
            "description": args.description,
            "mimeType": f"{_GOOGLE}{args.convertTo}" if args.convertTo else None,
        }
    )
    boundary = f"workbench-{uuid.uuid4().hex}"
    body = (
        f"--{boundary}\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n{json.dumps(metadata)}\r\n"
        f"--{boundary}\r\nContent-Type: {args.mimeType}; charset=UTF-8\r\n\r\n{args.content}\r\n"
        f"--{boundary}--\r\n"
    ).encode()
    created = await api(
        ctx,
        "POST",
        UPLOAD,
        params={"uploadType": "multipart", "fields": FIELDS, **_ALL},
        content=body,
        headers={"Content-Type": f"multipart/related; boundary={boundary}"},
    )
    return pick(created, *_F)


class UpdateContent(FileRef):
    content: str = Field(description="The new text content (replaces the old)")
    mimeType: str = Field(default="text/plain", description="Content type")


@tool(
    "google_drive_update_file_content",
    "Replace the contents of an existing Google Drive file.",
    UpdateContent,
    scopes=_SCOPES,
    keywords=("overwrite", "replace", "edit", "rewrite", "change text", "new version"),
)
async def update_file_content(args: UpdateContent, ctx: ToolContext) -> Any:
    updated = await api(
        ctx,
        "PATCH",
        f"{UPLOAD}/{args.fileId}",
        params={"uploadType": "media", "fields": FIELDS, **_ALL},
        content=args.content.encode(),
        headers={"Content-Type": f"{args.mimeType}; charset=UTF-8"},
    )
    return pick(updated, *_F)


class CreateFolder(ArgsModel):
    name: str = Field(min_length=1, description="Folder name")
    parentId: str | None = Field(
        default=None,
        description="Parent folder id, from google_drive_list_files or google_drive_search (default: My Drive)",
    )


@tool(
    "google_drive_create_folder",
    "Create a folder in Google Drive.",
    CreateFolder,
    scopes=_SCOPES,
    keywords=("new folder", "directory", "mkdir", "organise", "make"),
)
async def create_folder(args: CreateFolder, ctx: ToolContext) -> Any:
    created = await api(
        ctx,
        "POST",
        FILES,
        params={"fields": FIELDS, **_ALL},
        json=compact(
            {"name": args.name, "mimeType": FOLDER, "parents": [args.parentId] if args.parentId else None}
        ),
    )
    return pick(created, *_F)


class UpdateFile(FileRef):
    name: str | None = Field(default=None, description="New name (rename)")
    description: str | None = Field(default=None, description="New description")
    addParents: list[str] | None = Field(default=None, description="Folder ids to move/add the file to")
    removeParents: list[str] | None = Field(default=None, description="Folder ids to take the file out of")


@tool(
    "google_drive_update_file",
    "Rename, describe or move a Google Drive file between folders.",
    UpdateFile,
    scopes=_SCOPES,
    keywords=("rename", "move", "describe", "change name", "relocate", "title"),
)
async def update_file(args: UpdateFile, ctx: ToolContext) -> Any:
    updated = await api(
        ctx,
        "PATCH",
        f"{FILES}/{args.fileId}",
        params={
            "addParents": ",".join(args.addParents) if args.addParents else None,
            "removeParents": ",".join(args.removeParents) if args.removeParents else None,
            "fields": FIELDS,
            **_ALL,
        },
        json=compact({"name": args.name, "description": args.description}),
    )
    return pick(updated, *_F)


class CopyFile(FileRef):
    name: str | None = Field(default=None, description="Name of the copy (default: 'Copy of …')")
    parentId: str | None = Field(
        default=None,
        description="Folder id for the copy, from google_drive_list_files or google_drive_search",
    )


@tool(
    "google_drive_copy_file",
    "Copy (duplicate) a Google Drive file.",
    CopyFile,
    scopes=_SCOPES,
    keywords=("duplicate", "clone", "make a copy"),
)
async def copy_file(args: CopyFile, ctx: ToolContext) -> Any:
    copied = await api(
        ctx,
        "POST",
        f"{FILES}/{args.fileId}/copy",
        params={"fields": FIELDS, **_ALL},
        json=compact({"name": args.name, "parents": [args.parentId] if args.parentId else None}),
    )
    return pick(copied, *_F)


@tool(
    "google_drive_trash_file",
    "Move a Google Drive file to the trash (recoverable delete).",
    FileRef,
    scopes=_SCOPES,
    keywords=("delete", "remove", "discard", "erase", "throw away"),
)
async def trash_file(args: FileRef, ctx: ToolContext) -> Any:
    trashed = await api(
        ctx,
        "PATCH",
        f"{FILES}/{args.fileId}",
        params={"fields": "id,name,trashed", **_ALL},
        json={"trashed": True},
    )
    return pick(trashed, "id", "name", "trashed")


class Share(FileRef):
    role: Literal["reader", "commenter", "writer", "fileOrganizer", "organizer"] = Field(
        default="reader", description="Access to grant"
    )
    type: Literal["user", "group", "domain", "anyone"] = Field(default="user", description="Who gets access")
    emailAddress: str | None = Field(default=None, description="For type user or group")
    domain: str | None = Field(default=None, description="For type domain, e.g. 'example.com'")
    notify: bool = Field(default=True, description="Email the person about the share")
    message: str | None = Field(default=None, description="Text to include in the notification email")


@tool(
    "google_drive_share_file",
    "Share a Google Drive file: give a person, group or domain access.",
    Share,
    scopes=_SCOPES,
    keywords=(
        "permission",
        "access",
        "invite",
        "collaborator",
        "give access",
        "grant",
        "editor",
        "viewer",
        "send link",
    ),
)
async def share_file(args: Share, ctx: ToolContext) -> Any:
    if args.type in ("user", "group") and not args.emailAddress:
        raise ToolError(f"emailAddress is required to share with a {args.type}.")
    if args.type == "domain" and not args.domain:
        raise ToolError("domain is required to share with a domain.")
    personal = args.type in ("user", "group")
    perm = await api(
        ctx,
        "POST",
        f"{FILES}/{args.fileId}/permissions",
        params={
            # Drive only notifies people and groups; for domain/anyone these must be left out.
            "sendNotificationEmail": str(args.notify).lower() if personal else None,
            "emailMessage": args.message if personal and args.notify else None,
            "fields": "id,type,role,emailAddress,domain",
            **_ALL,
        },
        json=compact(
            {"role": args.role, "type": args.type, "emailAddress": args.emailAddress, "domain": args.domain}
        ),
    )
    return pick(perm, "id", "type", "role", "emailAddress", "domain")


@tool(
    "google_drive_list_permissions",
    "List who has access to a Google Drive file and with which role.",
    FileRef,
    scopes=_SCOPES,
    keywords=("who has access", "shared with", "sharing", "access list", "visibility", "collaborators"),
)
async def list_permissions(args: FileRef, ctx: ToolContext) -> Any:
    found = await api(
        ctx,
        "GET",
        f"{FILES}/{args.fileId}/permissions",
        params={"fields": "permissions(id,type,role,emailAddress,domain,displayName)", **_ALL},
    )
    return {
        "permissions": pick_many(
            found.get("permissions"), "id", "type", "role", "emailAddress", "domain", "displayName"
        )
    }


# -- binary download, shared drives ----------------------------------------------------------------

_MAX_DOWNLOAD = 5_000_000  # bytes returned (as base64: about 6.7 MB of text)
_EXPORT_AS = {
    "pdf": "application/pdf",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
}


class Download(FileRef):
    exportAs: Literal["pdf", "docx", "xlsx", "pptx"] = Field(
        default="pdf", description="Format for a Google Doc/Sheet/Slides file (ignored for other files)"
    )


@tool(
    "google_drive_download_file",
    "Download a Google Drive file's bytes as base64 (PDFs, images, Office files; Google Docs exported, "
    "e.g. as PDF); up to 5 MB.",
    Download,
    scopes=_SCOPES,
    keywords=("save locally", "export", "pdf", "binary", "get file", "fetch", "bytes", "attachment"),
)
async def download_file(args: Download, ctx: ToolContext) -> Any:
    meta = await api(ctx, "GET", f"{FILES}/{args.fileId}", params={"fields": "id,name,mimeType,size", **_ALL})
    mime = meta.get("mimeType", "")
    if mime == FOLDER:
        raise ToolError(f"'{meta.get('name')}' is a folder; list it with google_drive_list_files.")
    if mime.startswith(_GOOGLE):
        mime = _EXPORT_AS[args.exportAs]
        resp = await api_response(ctx, "GET", f"{FILES}/{args.fileId}/export", params={"mimeType": mime})
    else:
        if int(meta.get("size") or 0) > _MAX_DOWNLOAD:
            raise ToolError(
                f"'{meta.get('name')}' is {meta.get('size')} bytes; this tool returns at most {_MAX_DOWNLOAD} bytes."
            )
        resp = await api_response(ctx, "GET", f"{FILES}/{args.fileId}", params={"alt": "media", **_ALL})
    data = resp.content
    if len(data) > _MAX_DOWNLOAD:
        raise ToolError(
            f"'{meta.get('name')}' is {len(data)} bytes as {mime}; this tool returns at most {_MAX_DOWNLOAD} bytes."
        )
    return {
        **pick(meta, "id", "name"),
        "mimeType": mime,
        "size": len(data),
        "contentBase64": base64.b64encode(data).decode(),
    }


class ListDrives(ArgsModel):
    q: str | None = Field(
        default=None, description="Drive search on shared drives, e.g. \"name contains 'Sales'\""
    )
    limit: int = Field(default=50, ge=1, le=100, description="Shared drives per page")
    pageToken: str | None = Field(default=None, description="Cursor from the previous page")


@tool(
    "google_drive_list_shared_drives",
    "List the shared drives (team drives) the user is a member of; their ids work as folderId.",
    ListDrives,
    scopes=_SCOPES,
    keywords=("team drives", "workspaces", "show"),
)
async def list_shared_drives(args: ListDrives, ctx: ToolContext) -> Any:
    page = await api(
        ctx,
        "GET",
        "/drive/v3/drives",
        params={
            "q": args.q,
            "pageSize": args.limit,
            "pageToken": args.pageToken,
            "fields": "nextPageToken,drives(id,name,createdTime,hidden)",
        },
    )
    return {
        "drives": pick_many(page.get("drives"), "id", "name", "createdTime", "hidden"),
        "nextPageToken": page.get("nextPageToken"),
    }


TOOLS = [
    list_files,
    search,
    get_file,
    read_file,
    upload,
    update_file_content,
    create_folder,
    update_file,
    copy_file,
    trash_file,
    share_file,
    list_permissions,
    download_file,
    list_shared_drives,
]
