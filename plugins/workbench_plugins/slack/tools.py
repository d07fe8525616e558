"""Slack Web API tools (https://api.slack.com/methods).

Slack answers most failures with HTTP 200 and `{"ok": false, "error": "channel_not_found"}`.
Such a body is not an HTTP error, so it passes through unchanged as the tool's `{result}`
(seed 000; see the Troubleshooting section of docs/plugins.md) — only a successful body is
shaped. Real HTTP errors (401, 429, 5xx) still become `{error}`.

List methods take `limit` and `cursor` and return `nextCursor` (None on the last page).
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any, Literal
from urllib.parse import urlsplit

from workbench.sdk import ToolError, api, compact, pick, pick_many, trim
from workbench.tools import ArgsModel, Field, TokenKind, ToolContext, tool


async def _slack(
    ctx: ToolContext,
    method: str,
    shape: Callable[[dict[str, Any]], Any],
    *,
    params: dict[str, Any] | None = None,
    json: dict[str, Any] | None = None,
    kind: TokenKind = "access",
) -> Any:
    """Call a Web API method (GET with query for reads, POST JSON for writes); shape only an ok body.
    `kind="user"` sends the user token (search.messages takes no bot token)."""
    if json is not None:
        body = await api(ctx, "POST", f"/{method}", json=compact(json), kind=kind)
    else:
        body = await api(ctx, "GET", f"/{method}", params=params, kind=kind)
    if not isinstance(body, dict) or not body.get("ok"):
        return body  # Slack's 200 {"ok": false, "error": ...} passes through as the result
    return shape(body)


def _cursor(body: dict[str, Any]) -> str | None:
    return (body.get("response_metadata") or {}).get("next_cursor") or None


def _message(m: Any) -> dict[str, Any]:
    out = pick(m, "ts", "user", "bot_id", "thread_ts", "reply_count")
    out["text"] = trim(m.get("text"), 4_000)
    return out


_CHANNEL = (
    "id",
    "name",
    "is_private",
    "is_archived",
    "is_member",
    "num_members",
    "topic.value",
    "purpose.value",
)
_USER = ("id", "name", "real_name", "profile.email", "profile.title", "tz", "is_bot", "deleted")


class _Paged(ArgsModel):
    limit: int = Field(default=100, ge=1, le=1000, description="Items per page")
    cursor: str | None = Field(default=None, description="Cursor from the previous page (nextCursor)")


class SendMessage(ArgsModel):
    channel: str = Field(description="Channel id (C…), DM id (D…) or user id (U…) to DM; '#name' also works")
    text: str = Field(min_length=1, description="Message text (Slack mrkdwn)")
    threadTs: str | None = Field(default=None, description="Reply in the thread of this message ts")
    replyBroadcast: bool | None = Field(default=None, description="Also post a thread reply to the channel")
    unfurlLinks: bool | None = Field(default=None, description="Show link previews")


@tool(
    "slack_send_message",
    "Send (post) a message to a Slack channel, DM or thread.",
    SendMessage,
    scopes=("chat:write", "chat:write.public"),
    keywords=(
        "post",
        "say",
        "tell",
        "notify",
        "announce",
        "inform",
        "ping",
        "write",
        "share",
        "broadcast",
        "let know",
    ),
)
async def send_message(args: SendMessage, ctx: ToolContext) -> Any:
    return await _slack(
        ctx,
        "chat.postMessage",
        lambda b: {"ok": True, "channel": b.get("channel"), "ts": b.get("ts"), **_message(b.get("message"))},
        json={
            "channel": args.channel,
            "text": args.text,
            "thread_ts": args.threadTs,
            "reply_broadcast": args.replyBroadcast,
            "unfurl_links": args.unfurlLinks,
        },
    )


class ListChannels(_Paged):
    types: str = Field(
        default="public_channel,private_channel",
        description="Comma-separated: public_channel, private_channel, mpim, im",
    )
    excludeArchived: bool = Field(default=True, description="Leave out archived channels")


@tool(
    "slack_list_channels",
    "List Slack channels (id, name, topic, member count).",
    ListChannels,
    scopes=("channels:read", "groups:read", "im:read", "mpim:read"),
    keywords=("rooms", "conversations", "show"),
)
async def list_channels(args: ListChannels, ctx: ToolContext) -> Any:
    return await _slack(
        ctx,
        "conversations.list",
        lambda b: {"channels": pick_many(b.get("channels"), *_CHANNEL), "nextCursor": _cursor(b)},
        params={
            "types": args.types,
            "exclude_archived": str(args.excludeArchived).lower(),
            "limit": args.limit,
            "cursor": args.cursor,
        },
    )


class History(_Paged):
    channel: str = Field(description="Channel id, e.g. C0123456789")
    limit: int = Field(default=50, ge=1, le=999, description="Messages per page")
    oldest: str | None = Field(default=None, description="Only messages after this ts (Unix seconds)")
    latest: str | None = Field(default=None, description="Only messages before this ts (Unix seconds)")


@tool(
    "slack_get_channel_history",
    "Read recent messages of a Slack channel, newest first.",
    History,
    scopes=("channels:history", "groups:history", "im:history", "mpim:history"),
    keywords=("messages", "recent", "latest", "conversation", "what was said", "read", "catch up"),
)
async def get_channel_history(args: History, ctx: ToolContext) -> Any:
    return await _slack(
        ctx,
        "conversations.history",
        lambda b: {"messages": [_message(m) for m in b.get("messages", [])], "nextCursor": _cursor(b)},
        params={
            "channel": args.channel,
            "limit": args.limit,
            "cursor": args.cursor,
            "oldest": args.oldest,
            "latest": args.latest,
        },
    )


class Replies(_Paged):
    channel: str = Field(description="Channel id")
    ts: str = Field(description="ts of the thread's parent message")
    limit: int = Field(default=50, ge=1, le=999, description="Messages per page")


@tool(
    "slack_get_thread_replies",
    "Read a Slack thread: the parent message and its replies.",
    Replies,
    scopes=("channels:history", "groups:history", "im:history", "mpim:history"),
    keywords=("conversation", "responses", "discussion"),
)
async def get_thread_replies(args: Replies, ctx: ToolContext) -> Any:
    return await _slack(
        ctx,
        "conversations.replies",
        lambda b: {"messages": [_message(m) for m in b.get("messages", [])], "nextCursor": _cursor(b)},
        params={"channel": args.channel, "ts": args.ts, "limit": args.limit, "cursor": args.cursor},
    )


class UpdateMessage(ArgsModel):
    channel: str = Field(description="Channel id the message is in")
    ts: str = Field(description="ts of the message to edit")
    text: str = Field(min_length=1, description="New text")


@tool(
    "slack_update_message",
    "Edit a Slack message the app posted.",
    UpdateMessage,
    scopes=("chat:write",),
    keywords=("edit", "change", "fix", "correct", "rewrite"),
)
async def update_message(args: UpdateMessage, ctx: ToolContext) -> Any:
    return await _slack(
        ctx,
        "chat.update",
        lambda b: pick(b, "ok", "channel", "ts", "text"),
        json={"channel": args.channel, "ts": args.ts, "text": args.text},
    )


class MessageRef(ArgsModel):
    channel: str = Field(description="Channel id the message is in")
    ts: str = Field(description="The message's ts")


@tool(
    "slack_delete_message",
    "Delete a Slack message the app posted.",
    MessageRef,
    scopes=("chat:write",),
    keywords=("remove", "erase", "retract", "unsend", "take back"),
)
async def delete_message(args: MessageRef, ctx: ToolContext) -> Any:
    return await _slack(
        ctx,
        "chat.delete",
        lambda b: pick(b, "ok", "channel", "ts"),
        json={"channel": args.channel, "ts": args.ts},
    )


class Reaction(MessageRef):
    name: str = Field(description="Emoji name without colons, e.g. 'thumbsup'")


@tool(
    "slack_add_reaction",
    "Add an emoji reaction to a Slack message.",
    Reaction,
    scopes=("reactions:write",),
    keywords=("react", "acknowledge", "emoticon"),
)
async def add_reaction(args: Reaction, ctx: ToolContext) -> Any:
    return await _slack(
        ctx,
        "reactions.add",
        lambda b: {"ok": True},
        json={"channel": args.channel, "timestamp": args.ts, "name": args.name.strip(":")},
    )


@tool(
    "slack_get_permalink",
    "Get the permanent link (URL) to a Slack message.",
    MessageRef,
    scopes=(),
    keywords=("link", "url", "share link", "reference"),
)
async def get_permalink(args: MessageRef, ctx: ToolContext) -> Any:
    return await _slack(
        ctx,
        "chat.getPermalink",
        lambda b: pick(b, "channel", "permalink"),
        params={"channel": args.channel, "message_ts": args.ts},
    )


@tool(
    "slack_list_users",
    "List the members of the Slack workspace (id, name, email).",
    _Paged,
    scopes=("users:read", "users:read.email"),
    keywords=("people", "members", "teammates", "colleagues", "directory", "everyone"),
)
async def list_users(args: _Paged, ctx: ToolContext) -> Any:
    return await _slack(
        ctx,
        "users.list",
        lambda b: {"users": pick_many(b.get("members"), *_USER), "nextCursor": _cursor(b)},
        params={"limit": args.limit, "cursor": args.cursor},
    )


class UserRef(ArgsModel):
    user: str = Field(description="User id, e.g. U0123456789")


@tool(
    "slack_get_user",
    "Get a Slack user's profile by id.",
    UserRef,
    scopes=("users:read", "users:read.email"),
    keywords=("profile", "person", "member", "details", "info"),
)
async def get_user(args: UserRef, ctx: ToolContext) -> Any:
    return await _slack(ctx, "users.info", lambda b: pick(b.get("user"), *_USER), params={"user": args.user})


class ByEmail(ArgsModel):
    email: str = Field(description="Email address of the person")


@tool(
    "slack_find_user_by_email",
    "Find a Slack user by email address (to DM or mention them).",
    ByEmail,
    scopes=("users:read", "users:read.email"),
    keywords=("look up", "lookup", "person", "member", "email address"),
)
async def find_user_by_email(args: ByEmail, ctx: ToolContext) -> Any:
    return await _slack(
        ctx, "users.lookupByEmail", lambda b: pick(b.get("user"), *_USER), params={"email": args.email}
    )


class CreateChannel(ArgsModel):
    name: str = Field(description="Channel name: lowercase, no spaces or periods, max 80 characters")
    isPrivate: bool = Field(default=False, description="Create a private channel")


@tool(
    "slack_create_channel",
    "Create a new Slack channel.",
    CreateChannel,
    scopes=("channels:manage", "groups:write"),
    keywords=("new channel", "room", "start", "make", "set up"),
)
async def create_channel(args: CreateChannel, ctx: ToolContext) -> Any:
    return await _slack(
        ctx,
        "conversations.create",
        lambda b: pick(b.get("channel"), *_CHANNEL),
        json={"name": args.name, "is_private": args.isPrivate},
    )


class ChannelRef(ArgsModel):
    channel: str = Field(description="Channel id")


@tool(
    "slack_join_channel",
    "Join a public Slack channel (so the app can read and post there).",
    ChannelRef,
    scopes=("channels:join",),
    keywords=("enter", "become member", "subscribe", "participate"),
)
async def join_channel(args: ChannelRef, ctx: ToolContext) -> Any:
    return await _slack(
        ctx, "conversations.join", lambda b: pick(b.get("channel"), *_CHANNEL), json={"channel": args.channel}
    )


class Invite(ChannelRef):
    users: list[str] = Field(min_length=1, max_length=1000, description="User ids to invite")


@tool(
    "slack_invite_to_channel",
    "Invite (add) users to a Slack channel.",
    Invite,
    scopes=("channels:manage", "groups:write"),
    keywords=("add people", "bring in", "include", "members", "access"),
)
async def invite_to_channel(args: Invite, ctx: ToolContext) -> Any:
    return await _slack(
        ctx,
        "conversations.invite",
        lambda b: pick(b.get("channel"), *_CHANNEL),
        json={"channel": args.channel, "users": ",".join(args.users)},
    )


class OpenDm(ArgsModel):
    users: list[str] = Field(
        min_length=1, max_length=8, description="User ids (U…): one for a direct message, 2-8 for a group DM"
    )


@tool(
    "slack_open_dm",
    "Open (or find) a Slack direct message with one person or a group DM; returns the DM's channel id.",
    OpenDm,
    scopes=("im:write", "mpim:write"),
    keywords=("direct message", "private", "conversation", "one-on-one", "start"),
)
async def open_dm(args: OpenDm, ctx: ToolContext) -> Any:
    return await _slack(
        ctx,
        "conversations.open",
        lambda b: {
            "channel": (b.get("channel") or {}).get("id"),
            "alreadyOpen": bool(b.get("already_open")),
        },
        json={"users": ",".join(args.users), "return_im": True},
    )


@tool(
    "slack_get_channel_info",
    "Get a Slack channel's details: name, topic, purpose, member count, private or archived.",
    ChannelRef,
    scopes=("channels:read", "groups:read", "im:read", "mpim:read"),
    keywords=("details", "topic", "purpose", "members count"),
)
async def get_channel_info(args: ChannelRef, ctx: ToolContext) -> Any:
    return await _slack(
        ctx,
        "conversations.info",
        lambda b: {**pick(b.get("channel"), *_CHANNEL, "created", "creator", "is_im", "is_mpim")},
        params={"channel": args.channel, "include_num_members": "true"},
    )


_MAX_UPLOAD = 10_000_000  # bytes one call may upload


class UploadFile(ArgsModel):
    channel: str = Field(description="Channel id (C…) or DM id (D…) to share the file in")
    filename: str = Field(min_length=1, max_length=255, description="File name, e.g. 'report.csv'")
    content: str | None = Field(default=None, description="Text content of the file (or give contentBase64)")
    contentBase64: str | None = Field(
        default=None, description="Binary content, base64-encoded (up to 10 MB)"
    )
    title: str | None = Field(
        default=None, max_length=255, description="Title shown in Slack (default: filename)"
    )
    initialComment: str | None = Field(default=None, description="Message posted with the file")
    threadTs: str | None = Field(default=None, description="Share it as a reply in this thread")


def _upload_bytes(args: UploadFile) -> bytes:
    if (args.content is None) == (args.contentBase64 is None):
        raise ToolError("Give exactly one of content (text) or contentBase64 (binary).")
    if args.content is not None:
        data = args.content.encode()
    else:
        try:
            data = base64.b64decode(str(args.contentBase64).strip(), validate=True)
        except ValueError as exc:
            raise ToolError("contentBase64 is not valid base64.") from exc
    if not data:
        raise ToolError("The file is empty; Slack does not take empty files.")
    if len(data) > _MAX_UPLOAD:
        raise ToolError(f"The file is {len(data)} bytes; this tool uploads at most {_MAX_UPLOAD} bytes.")
    return data


@tool(
    "slack_upload_file",
    "Upload a file (text or base64 bytes, up to 10 MB) and share it in a Slack channel, DM or thread.",
    UploadFile,
    scopes=("files:write",),
    keywords=("attach", "share file", "send file", "document", "image", "post file"),
)
async def upload_file(args: UploadFile, ctx: ToolContext) -> Any:
    data = _upload_bytes(args)
    # Slack's upload flow: reserve an upload URL, send the bytes there, then complete and share.
    ticket = await api(
        ctx, "POST", "/files.getUploadURLExternal", data={"filename": args.filename, "length": str(len(data))}
    )
    if not isinstance(ticket, dict) or not ticket.get("ok"):
        return ticket
    url = urlsplit(str(ticket.get("upload_url")))
    if url.scheme != "https" or url.hostname != "files.slack.com":
        # The credential goes along with the bytes: only to Slack's own upload host.
        raise ToolError("Slack answered with an upload URL outside files.slack.com; not uploading.")
    await api(
        ctx, "POST", ticket["upload_url"], content=data, headers={"Content-Type": "application/octet-stream"}
    )
    return await _slack(
        ctx,
        "files.completeUploadExternal",
        lambda b: {"ok": True, "files": pick_many(b.get("files"), "id", "title", "name", "permalink")},
        json={
            "files": [{"id": ticket["file_id"], "title": args.title or args.filename}],
            "channel_id": args.channel,
            "initial_comment": args.initialComment,
            "thread_ts": args.threadTs,
        },
    )


class SearchMessages(ArgsModel):
    query: str = Field(
        min_length=1,
        max_length=1_000,
        description="Slack search, e.g. 'deploy in:#ops from:@ada after:2024-05-01' (modifiers as in Slack)",
    )
    sort: Literal["timestamp", "score"] = Field(
        default="timestamp", description="Newest first, or best match"
    )
    count: int = Field(default=20, ge=1, le=100, description="Messages per page (max 100)")
    page: int = Field(default=1, ge=1, le=100, description="Page number, starting at 1 (use nextPage)")


@tool(
    "slack_search_messages",
    "Search Slack messages across the channels the connected person can see (Slack search syntax); "
    "returns text, author, channel and a permalink.",
    SearchMessages,
    scopes=("search:read",),
    keywords=("find", "look for", "grep", "mentions", "history", "where did"),
)
async def search_messages(args: SearchMessages, ctx: ToolContext) -> Any:
    def shape(b: dict[str, Any]) -> Any:
        found = b.get("messages") or {}
        paging = found.get("paging") or {}
        page, pages = paging.get("page") or args.page, paging.get("pages") or 0
        matches = [
            {
                **pick(m, "ts", "user", "username", "channel.id", "channel.name", "permalink"),
                "text": trim(m.get("text"), 4_000),
            }
            for m in found.get("matches") or []
        ]
        return {
            "total": found.get("total"),
            "messages": matches,
            "nextPage": page + 1 if page < pages else None,
        }

    return await _slack(
        ctx,
        "search.messages",
        shape,
        params={
            "query": args.query,
            "sort": args.sort,
            "sort_dir": "desc",
            "count": args.count,
            "page": args.page,
        },
        kind="user",
    )


TOOLS = [
    send_message,
    list_channels,
    get_channel_history,
    get_thread_replies,
    update_message,
    delete_message,
    add_reaction,
    get_permalink,
    list_users,
    get_user,
    find_user_by_email,
    create_channel,
    join_channel,
    invite_to_channel,
    open_dm,
    get_channel_info,
    upload_file,
    search_messages,
]
