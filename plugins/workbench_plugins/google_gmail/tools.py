"""Gmail API v1 tools (https://developers.google.com/gmail/api/reference/rest), for the
connected user (`users/me`).

Messages are sent as RFC 2822 text, base64url-encoded in `raw`, built with the standard library's
`email` package. Bodies come back as plain text (the text/plain part, or the HTML part with tags
stripped), trimmed.
"""

from __future__ import annotations

import asyncio
import base64
import html
import re
from email.message import EmailMessage
from typing import Any

from workbench.sdk import ToolError, api, compact, pick, pick_many, trim
from workbench.tools import ArgsModel, Field, ToolContext, tool

# Every tool works with the one scope the manifest asks for (the discovery document lists it
# for each method called; tests/plugins/test_definitions.py checks that).
_SCOPES = ("https://www.googleapis.com/auth/gmail.modify",)

ME = "/gmail/v1/users/me"
_SUMMARY_HEADERS = ["From", "To", "Subject", "Date"]
_TAG = re.compile(r"<[^>]+>")
_SPACE = re.compile(r"\n\s*\n\s*")


def _headers(payload: Any) -> dict[str, str]:
    return {h["name"].lower(): h["value"] for h in (payload or {}).get("headers", [])}


def _decode(data: str | None) -> str:
    if not data:
        return ""
    return base64.urlsafe_b64decode(data + "=" * (-len(data) % 4)).decode("utf-8", "replace")


def _parts(payload: Any) -> list[Any]:
    found = [payload]
    for part in payload.get("parts") or []:
        found.extend(_parts(part))
    return found


def _body_text(payload: Any) -> str:
    parts = _parts(payload or {})
    for mime in ("text/plain", "text/html"):
        for part in parts:
            if part.get("mimeType") == mime and (part.get("body") or {}).get("data"):
                text = _decode(part["body"]["data"])
                if mime == "text/html":
                    text = _SPACE.sub("\n\n", html.unescape(_TAG.sub("", text))).strip()
                return text
    return ""


def _summary(msg: Any) -> dict[str, Any]:
    h = _headers(msg.get("payload"))
    return {
        "id": msg.get("id"),
        "threadId": msg.get("threadId"),
        "from": h.get("from"),
        "to": h.get("to"),
        "subject": h.get("subject"),
        "date": h.get("date"),
        "snippet": html.unescape(msg.get("snippet") or ""),
        "labelIds": msg.get("labelIds") or [],
    }


def _full(msg: Any) -> dict[str, Any]:
    payload = msg.get("payload") or {}
    attachments = [
        {
            "filename": p.get("filename"),
            "mimeType": p.get("mimeType"),
            "size": (p.get("body") or {}).get("size"),
            "attachmentId": (p.get("body") or {}).get("attachmentId"),
        }
        for p in _parts(payload)
        if p.get("filename")
    ]
    return {
        **_summary(msg),
        "cc": _headers(payload).get("cc"),
        "body": trim(_body_text(payload), 20_000),
        "attachments": attachments,
    }


def _raw(
    to: list[str],
    subject: str,
    body: str,
    cc: list[str] | None = None,
    bcc: list[str] | None = None,
    extra: dict[str, str] | None = None,
    attachments: list[Attachment] | None = None,
) -> str:
    msg = EmailMessage()
    msg["To"] = ", ".join(to)
    if cc:
        msg["Cc"] = ", ".join(cc)
    if bcc:
        msg["Bcc"] = ", ".join(bcc)
    msg["Subject"] = subject
    for name, value in (extra or {}).items():
        msg[name] = value
    msg.set_content(body)
    for a in attachments or []:
        maintype, _, subtype = a.mimeType.partition("/")
        msg.add_attachment(a.data(), maintype=maintype, subtype=subtype, filename=a.filename)
    return base64.urlsafe_b64encode(msg.as_bytes()).decode()


_MAX_ATTACH = 18_000_000  # bytes in all: Gmail's 25 MB send limit applies after base64 (x4/3)


class Attachment(ArgsModel):
    filename: str = Field(min_length=1, max_length=255, description="File name shown to the recipient")
    contentBase64: str = Field(
        min_length=1, description="The file's bytes, base64-encoded (standard or URL-safe)"
    )
    mimeType: str = Field(
        default="application/octet-stream",
        pattern=r"^[\w.+-]+/[\w.+-]+$",
        description="e.g. 'application/pdf'",
    )

    def data(self) -> bytes:
        text = self.contentBase64.strip().replace("-", "+").replace("_", "/")
        try:
            return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
        except ValueError as exc:
            raise ToolError(f"attachment '{self.filename}': contentBase64 is not valid base64") from exc


def _check_attachments(attachments: list[Attachment] | None) -> None:
    total = sum(len(a.data()) for a in attachments or [])
    if total > _MAX_ATTACH:
        raise ToolError(f"attachments total {total} bytes; the limit is {_MAX_ATTACH} bytes.")


class SearchMessages(ArgsModel):
    q: str = Field(
        default="",
        description="Gmail search, e.g. 'from:ada@example.com is:unread newer_than:7d' ('' for all)",
    )
    labelIds: list[str] | None = Field(
        default=None, description="Only messages with all these label ids (from gmail_list_labels)"
    )
    limit: int = Field(default=10, ge=1, le=50, description="Messages per page")
    pageToken: str | None = Field(default=None, description="Cursor from the previous page")


@tool(
    "gmail_search_messages",
    "Search (find, list) Gmail emails with Gmail query syntax; returns sender, subject, date, snippet.",
    SearchMessages,
    scopes=_SCOPES,
    keywords=("find", "look for", "query", "unread", "emails"),
)
async def search_messages(args: SearchMessages, ctx: ToolContext) -> Any:
    page = await api(
        ctx,
        "GET",
        f"{ME}/messages",
        params={
            "q": args.q or None,
            "labelIds": args.labelIds,
            "maxResults": args.limit,
            "pageToken": args.pageToken,
        },
    )
    # The list holds ids only; fetch each one's headers (a handful of small requests, concurrently).
    details = await asyncio.gather(
        *(
            api(
                ctx,
                "GET",
                f"{ME}/messages/{m['id']}",
                params={"format": "metadata", "metadataHeaders": _SUMMARY_HEADERS},
            )
            for m in page.get("messages", [])
        )
    )
    return {
        "messages": [_summary(m) for m in details],
        "nextPageToken": page.get("nextPageToken"),
        "resultSizeEstimate": page.get("resultSizeEstimate"),
    }


class MessageRef(ArgsModel):
    id: str = Field(description="Message id")


@tool(
    "gmail_get_message",
    "Read one Gmail email: headers, plain-text body and attachment list (gmail_get_attachment downloads one).",
    MessageRef,
    scopes=_SCOPES,
    keywords=("open", "read", "view", "show", "email body"),
)
async def get_message(args: MessageRef, ctx: ToolContext) -> Any:
    return _full(await api(ctx, "GET", f"{ME}/messages/{args.id}", params={"format": "full"}))


class ThreadRef(ArgsModel):
    id: str = Field(description="Thread id")


@tool(
    "gmail_get_thread",
    "Read a whole Gmail conversation (thread), oldest message first.",
    ThreadRef,
    scopes=_SCOPES,
    keywords=("conversation", "whole thread", "chain", "replies", "history"),
)
async def get_thread(args: ThreadRef, ctx: ToolContext) -> Any:
    thread = await api(ctx, "GET", f"{ME}/threads/{args.id}", params={"format": "full"})
    return {"id": thread.get("id"), "messages": [_full(m) for m in thread.get("messages", [])]}


class Compose(ArgsModel):
    to: list[str] = Field(min_length=1, description="Recipient addresses")
    subject: str = Field(description="Subject line")
    body: str = Field(description="Plain-text body")
    cc: list[str] | None = Field(default=None, description="Cc addresses")
    bcc: list[str] | None = Field(default=None, description="Bcc addresses")
    attachments: list[Attachment] | None = Field(
        default=None, max_length=20, description="Files to attach (at most 18 MB in all)"
    )


@tool(
    "gmail_send_email",
    "Send an email (mail, message), with optional file attachments, from the connected Gmail account.",
    Compose,
    scopes=_SCOPES,
    keywords=("write", "compose", "message", "notify", "contact", "drop a line"),
)
async def send_email(args: Compose, ctx: ToolContext) -> Any:
    _check_attachments(args.attachments)
    raw = _raw(args.to, args.subject, args.body, args.cc, args.bcc, attachments=args.attachments)
    sent = await api(ctx, "POST", f"{ME}/messages/send", json={"raw": raw})
    return pick(sent, "id", "threadId", "labelIds")


class Reply(ArgsModel):
    id: str = Field(description="Id of the message to reply to")
    body: str = Field(description="Plain-text reply")
    replyAll: bool = Field(default=False, description="Also reply to the other recipients (To and Cc)")


@tool(
    "gmail_reply_to_message",
    "Reply to a Gmail email in its thread (keeps subject and threading headers).",
    Reply,
    scopes=_SCOPES,
    keywords=("respond", "answer", "write back", "follow up"),
)
async def reply_to_message(args: Reply, ctx: ToolContext) -> Any:
    raw, thread_id = await _reply(ctx, args)
    sent = await api(ctx, "POST", f"{ME}/messages/send", json={"raw": raw, "threadId": thread_id})
    return pick(sent, "id", "threadId", "labelIds")


async def _reply(ctx: ToolContext, args: Reply) -> tuple[str, Any]:
    """The reply's raw RFC 2822 text (threading headers set) and the thread to put it in."""
    original = await api(
        ctx,
        "GET",
        f"{ME}/messages/{args.id}",
        params={
            "format": "metadata",
            "metadataHeaders": ["Subject", "From", "Reply-To", "To", "Cc", "Message-ID", "References"],
        },
    )
    h = _headers(original.get("payload"))
    to = [h.get("reply-to") or h.get("from") or ""]
    cc = [a for a in (h.get("to"), h.get("cc")) if a] if args.replyAll else None
    subject = h.get("subject") or ""
    if not subject.lower().startswith("re:"):
        subject = f"Re: {subject}"
    message_id = h.get("message-id", "")
    threading = {"In-Reply-To": message_id, "References": f"{h.get('references', '')} {message_id}".strip()}
    raw = _raw(to, subject, args.body, cc, extra=threading if message_id else None)
    return raw, original.get("threadId")


@tool(
    "gmail_create_reply_draft",
    "Save a reply to a Gmail email as a draft in its thread (to review and send later).",
    Reply,
    scopes=_SCOPES,
    keywords=("prepare", "respond later", "answer", "write back"),
)
async def create_reply_draft(args: Reply, ctx: ToolContext) -> Any:
    raw, thread_id = await _reply(ctx, args)
    draft = await api(ctx, "POST", f"{ME}/drafts", json={"message": {"raw": raw, "threadId": thread_id}})
    return pick(draft, "id", "message.id", "message.threadId")


@tool(
    "gmail_create_draft",
    "Save an email as a Gmail draft (to review and send later).",
    Compose,
    scopes=_SCOPES,
    keywords=("compose", "prepare", "write", "save for later"),
)
async def create_draft(args: Compose, ctx: ToolContext) -> Any:
    _check_attachments(args.attachments)
    raw = _raw(args.to, args.subject, args.body, args.cc, args.bcc, attachments=args.attachments)
    draft = await api(ctx, "POST", f"{ME}/drafts", json={"message": {"raw": raw}})
    return pick(draft, "id", "message.id", "message.threadId")


class ListDrafts(ArgsModel):
    limit: int = Field(default=20, ge=1, le=100, description="Drafts per page")
    pageToken: str | None = Field(default=None, description="Cursor from the previous page")


@tool(
    "gmail_list_drafts",
    "List Gmail drafts (ids, to send with gmail_send_draft).",
    ListDrafts,
    scopes=_SCOPES,
    keywords=("show", "unsent", "saved drafts", "outbox"),
)
async def list_drafts(args: ListDrafts, ctx: ToolContext) -> Any:
    page = await api(
        ctx, "GET", f"{ME}/drafts", params={"maxResults": args.limit, "pageToken": args.pageToken}
    )
    return {
        "drafts": pick_many(page.get("drafts"), "id", "message.id", "message.threadId"),
        "nextPageToken": page.get("nextPageToken"),
    }


class DraftRef(ArgsModel):
    id: str = Field(description="Draft id")


@tool(
    "gmail_send_draft",
    "Send an existing Gmail draft.",
    DraftRef,
    scopes=_SCOPES,
    keywords=("deliver", "dispatch", "unsent", "saved draft"),
)
async def send_draft(args: DraftRef, ctx: ToolContext) -> Any:
    sent = await api(ctx, "POST", f"{ME}/drafts/send", json={"id": args.id})
    return pick(sent, "id", "threadId", "labelIds")


class NoArgs(ArgsModel):
    pass


@tool(
    "gmail_list_labels",
    "List Gmail labels (system and user labels, with ids).",
    NoArgs,
    scopes=_SCOPES,
    keywords=("folders", "categories", "tags", "show"),
)
async def list_labels(args: NoArgs, ctx: ToolContext) -> Any:
    page = await api(ctx, "GET", f"{ME}/labels")
    return {"labels": pick_many(page.get("labels"), "id", "name", "type")}


class ModifyLabels(MessageRef):
    add: list[str] | None = Field(default=None, description="Label ids to add, e.g. ['STARRED']")
    remove: list[str] | None = Field(
        default=None, description="Label ids to remove: ['UNREAD'] marks read, ['INBOX'] archives"
    )


@tool(
    "gmail_modify_labels",
    "Label, archive, star or mark a Gmail email read/unread by adding or removing label ids.",
    ModifyLabels,
    scopes=_SCOPES,
    keywords=(
        "star",
        "flag",
        "mark read",
        "mark unread",
        "archive",
        "important",
        "tag",
        "move",
        "categorise",
        "folder",
    ),
)
async def modify_labels(args: ModifyLabels, ctx: ToolContext) -> Any:
    msg = await api(
        ctx,
        "POST",
        f"{ME}/messages/{args.id}/modify",
        json=compact({"addLabelIds": args.add, "removeLabelIds": args.remove}),
    )
    return pick(msg, "id", "threadId", "labelIds")


@tool(
    "gmail_trash_message",
    "Move a Gmail email to the trash.",
    MessageRef,
    scopes=_SCOPES,
    keywords=("delete", "remove", "discard", "erase", "throw away", "get rid"),
)
async def trash_message(args: MessageRef, ctx: ToolContext) -> Any:
    msg = await api(ctx, "POST", f"{ME}/messages/{args.id}/trash")
    return pick(msg, "id", "threadId", "labelIds")


@tool(
    "gmail_get_profile",
    "Get the connected Gmail address and mailbox totals.",
    NoArgs,
    scopes=_SCOPES,
    keywords=("my address", "account", "who am i", "mailbox size", "email address", "totals"),
)
async def get_profile(args: NoArgs, ctx: ToolContext) -> Any:
    profile = await api(ctx, "GET", f"{ME}/profile")
    return pick(profile, "emailAddress", "messagesTotal", "threadsTotal")


# -- attachments, threads, labels ------------------------------------------------------------------

_MAX_DOWNLOAD = 5_000_000  # bytes of one attachment returned (as base64: about 6.7 MB of text)


class AttachmentRef(MessageRef):
    attachmentId: str = Field(description="attachmentId from gmail_get_message's attachment list")


@tool(
    "gmail_get_attachment",
    "Download a Gmail attachment as base64 (up to 5 MB; a larger one is refused with its size).",
    AttachmentRef,
    scopes=_SCOPES,
    keywords=("file", "pdf", "document", "save", "open attachment"),
)
async def get_attachment(args: AttachmentRef, ctx: ToolContext) -> Any:
    body = await api(ctx, "GET", f"{ME}/messages/{args.id}/attachments/{args.attachmentId}")
    size = body.get("size")
    if isinstance(size, int) and size > _MAX_DOWNLOAD:
        raise ToolError(f"The attachment is {size} bytes; this tool returns at most {_MAX_DOWNLOAD} bytes.")
    data = body.get("data") or ""
    raw = base64.urlsafe_b64decode(data + "=" * (-len(data) % 4))
    if len(raw) > _MAX_DOWNLOAD:
        raise ToolError(
            f"The attachment is {len(raw)} bytes; this tool returns at most {_MAX_DOWNLOAD} bytes."
        )
    return {
        "attachmentId": args.attachmentId,
        "size": len(raw),
        "contentBase64": base64.b64encode(raw).decode(),
    }


class SearchThreads(ArgsModel):
    q: str = Field(
        default="", description="Gmail search, e.g. 'from:ada@example.com newer_than:7d' ('' for all)"
    )
    labelIds: list[str] | None = Field(
        default=None, description="Only threads with all these label ids (from gmail_list_labels)"
    )
    limit: int = Field(default=10, ge=1, le=50, description="Threads per page")
    pageToken: str | None = Field(default=None, description="Cursor from the previous page")


@tool(
    "gmail_search_threads",
    "Search (list) Gmail conversations (threads) with Gmail query syntax; returns thread ids and snippets.",
    SearchThreads,
    scopes=_SCOPES,
    keywords=("conversations", "find", "chains", "discussions"),
)
async def search_threads(args: SearchThreads, ctx: ToolContext) -> Any:
    page = await api(
        ctx,
        "GET",
        f"{ME}/threads",
        params={
            "q": args.q or None,
            "labelIds": args.labelIds,
            "maxResults": args.limit,
            "pageToken": args.pageToken,
        },
    )
    return {
        "threads": [
            {"id": t.get("id"), "snippet": html.unescape(t.get("snippet") or "")}
            for t in page.get("threads") or []
        ],
        "nextPageToken": page.get("nextPageToken"),
        "resultSizeEstimate": page.get("resultSizeEstimate"),
    }


class CreateLabel(ArgsModel):
    name: str = Field(min_length=1, max_length=225, description="Label name; 'Parent/Child' nests it")
    showInMessageList: bool = Field(default=True, description="Show the label on messages in the list")
    showInLabelList: bool = Field(default=True, description="Show the label in the label list")


@tool(
    "gmail_create_label",
    "Create a Gmail label (its id then works with gmail_modify_labels).",
    CreateLabel,
    scopes=_SCOPES,
    keywords=("new label", "folder", "category", "tag", "add label"),
)
async def create_label(args: CreateLabel, ctx: ToolContext) -> Any:
    label = await api(
        ctx,
        "POST",
        f"{ME}/labels",
        json={
            "name": args.name,
            "messageListVisibility": "show" if args.showInMessageList else "hide",
            "labelListVisibility": "labelShow" if args.showInLabelList else "labelHide",
        },
    )
    return pick(label, "id", "name", "type")


TOOLS = [
    search_messages,
    get_message,
    get_thread,
    send_email,
    reply_to_message,
    create_draft,
    list_drafts,
    send_draft,
    list_labels,
    modify_labels,
    trash_message,
    get_profile,
    get_attachment,
    search_threads,
    create_reply_draft,
    create_label,
]
