"""Slack tools against a fake slack.com/api answering with Slack's documented example bodies."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from workbench_plugins.slack import tools as slack_tools

from tests.plugins.catalog_support import ANY, TOKEN, Call, Case, Plugin, check_catalog, run_case, run_tool

# The connection holds the bot token and, for search, the user token Slack returns next to it.
PLUGIN = Plugin("slack", {"access_token": TOKEN, "user_token": {"access_token": "xoxp-user-1"}})

API = "https://slack.com/api"
CHANNEL = {
    "id": "C012AB3CD",
    "name": "general",
    "is_channel": True,
    "is_private": False,
    "is_archived": False,
    "is_member": True,
    "num_members": 4,
    "topic": {"value": "Company-wide announcements and work-based matters", "creator": "", "last_set": 0},
    "purpose": {"value": "This channel is for team-wide communication and announcements.", "creator": ""},
}
CHANNEL_SHAPED = {
    "id": "C012AB3CD",
    "name": "general",
    "is_private": False,
    "is_archived": False,
    "is_member": True,
    "num_members": 4,
    "topic_value": "Company-wide announcements and work-based matters",
    "purpose_value": "This channel is for team-wide communication and announcements.",
}
USER = {
    "id": "W012A3CDE",
    "team_id": "T012AB3C4",
    "name": "spengler",
    "deleted": False,
    "real_name": "Egon Spengler",
    "tz": "America/Los_Angeles",
    "profile": {"title": "", "real_name": "Egon Spengler", "email": "spengler@ghostbusters.example.com"},
    "is_bot": False,
}
USER_SHAPED = {
    "id": "W012A3CDE",
    "name": "spengler",
    "real_name": "Egon Spengler",
    "profile_email": "spengler@ghostbusters.example.com",
    "profile_title": "",
    "tz": "America/Los_Angeles",
    "is_bot": False,
    "deleted": False,
}
MSG = {
    "type": "message",
    "user": "U012AB3CDE",
    "text": "I find you punny and would like to smell your nose letter",
    "ts": "1512085950.000216",
}
MSG_SHAPED = {
    "ts": "1512085950.000216",
    "user": "U012AB3CDE",
    "bot_id": None,
    "thread_ts": None,
    "reply_count": None,
    "text": "I find you punny and would like to smell your nose letter",
}

CASES = [
    Case(
        "slack_send_message",
        {"channel": "C123ABC456", "text": "Hello world", "threadTs": "1503435956.000247"},
        [
            Call(
                "POST",
                f"{API}/chat.postMessage",
                json={"channel": "C123ABC456", "text": "Hello world", "thread_ts": "1503435956.000247"},
                response={
                    "ok": True,
                    "channel": "C123ABC456",
                    "ts": "1503435956.000247",
                    "message": {
                        "text": "Hello world",
                        "username": "ecto1",
                        "bot_id": "B123ABC456",
                        "type": "message",
                        "subtype": "bot_message",
                        "ts": "1503435956.000247",
                        "thread_ts": "1503435956.000247",
                    },
                },
            )
        ],
        {
            "ok": True,
            "channel": "C123ABC456",
            "ts": "1503435956.000247",
            "user": None,
            "bot_id": "B123ABC456",
            "thread_ts": "1503435956.000247",
            "reply_count": None,
            "text": "Hello world",
        },
    ),
    Case(
        "slack_list_channels",
        {"limit": 2},
        [
            Call(
                "GET",
                f"{API}/conversations.list",
                {"types": "public_channel,private_channel", "exclude_archived": "true", "limit": 2},
                json=None,
                response={
                    "ok": True,
                    "channels": [CHANNEL],
                    "response_metadata": {"next_cursor": "dGVhbTpDMDYxRkE1UEI="},
                },
            )
        ],
        {"channels": [CHANNEL_SHAPED], "nextCursor": "dGVhbTpDMDYxRkE1UEI="},
    ),
    Case(
        "slack_get_channel_history",
        {"channel": "C123ABC456", "limit": 1, "oldest": "1512085950.000000"},
        [
            Call(
                "GET",
                f"{API}/conversations.history",
                {"channel": "C123ABC456", "limit": 1, "oldest": "1512085950.000000"},
                response={
                    "ok": True,
                    "messages": [MSG],
                    "has_more": True,
                    "pin_count": 0,
                    "response_metadata": {"next_cursor": "bmV4dF90czoxNTEyMDg1ODYxMDAwNTQz"},
                },
            )
        ],
        {"messages": [MSG_SHAPED], "nextCursor": "bmV4dF90czoxNTEyMDg1ODYxMDAwNTQz"},
    ),
    Case(
        "slack_get_thread_replies",
        {"channel": "C123ABC456", "ts": "1482960137.003543"},
        [
            Call(
                "GET",
                f"{API}/conversations.replies",
                {"channel": "C123ABC456", "ts": "1482960137.003543", "limit": 50},
                response={
                    "ok": True,
                    "has_more": False,
                    "response_metadata": {"next_cursor": ""},
                    "messages": [
                        {
                            "type": "message",
                            "user": "U061F7AUR",
                            "text": "island",
                            "thread_ts": "1482960137.003543",
                            "reply_count": 3,
                            "ts": "1482960137.003543",
                        },
                        {
                            "type": "message",
                            "user": "U061F7AUR",
                            "text": "one island",
                            "thread_ts": "1482960137.003543",
                            "ts": "1483037603.017503",
                        },
                    ],
                },
            )
        ],
        {
            "messages": [
                {
                    "ts": "1482960137.003543",
                    "user": "U061F7AUR",
                    "bot_id": None,
                    "thread_ts": "1482960137.003543",
                    "reply_count": 3,
                    "text": "island",
                },
                {
                    "ts": "1483037603.017503",
                    "user": "U061F7AUR",
                    "bot_id": None,
                    "thread_ts": "1482960137.003543",
                    "reply_count": None,
                    "text": "one island",
                },
            ],
            "nextCursor": None,
        },
    ),
    Case(
        "slack_update_message",
        {"channel": "C123ABC456", "ts": "1401383885.000061", "text": "Updated text you carefully authored"},
        [
            Call(
                "POST",
                f"{API}/chat.update",
                json={
                    "channel": "C123ABC456",
                    "ts": "1401383885.000061",
                    "text": "Updated text you carefully authored",
                },
                response={
                    "ok": True,
                    "channel": "C123ABC456",
                    "ts": "1401383885.000061",
                    "text": "Updated text you carefully authored",
                    "message": {"text": "x", "user": "U34567890"},
                },
            )
        ],
        {
            "ok": True,
            "channel": "C123ABC456",
            "ts": "1401383885.000061",
            "text": "Updated text you carefully authored",
        },
    ),
    Case(
        "slack_delete_message",
        {"channel": "C123ABC456", "ts": "1401383885.000061"},
        [
            Call(
                "POST",
                f"{API}/chat.delete",
                json={"channel": "C123ABC456", "ts": "1401383885.000061"},
                response={"ok": True, "channel": "C123ABC456", "ts": "1401383885.000061"},
            )
        ],
        {"ok": True, "channel": "C123ABC456", "ts": "1401383885.000061"},
    ),
    Case(
        "slack_add_reaction",
        {"channel": "C123ABC456", "ts": "1234567890.123456", "name": ":thumbsup:"},
        [
            Call(
                "POST",
                f"{API}/reactions.add",
                json={"channel": "C123ABC456", "timestamp": "1234567890.123456", "name": "thumbsup"},
                response={"ok": True},
            )
        ],
        {"ok": True},
    ),
    Case(
        "slack_get_permalink",
        {"channel": "C123ABC456", "ts": "1358546515.000008"},
        [
            Call(
                "GET",
                f"{API}/chat.getPermalink",
                {"channel": "C123ABC456", "message_ts": "1358546515.000008"},
                response={
                    "ok": True,
                    "channel": "C123ABC456",
                    "permalink": "https://ghostbusters.slack.com/archives/C1H9RESGA/p135854651500008",
                },
            )
        ],
        {
            "channel": "C123ABC456",
            "permalink": "https://ghostbusters.slack.com/archives/C1H9RESGA/p135854651500008",
        },
    ),
    Case(
        "slack_list_users",
        {"limit": 1, "cursor": "dXNlcjpVMEc5V0ZYTlo="},
        [
            Call(
                "GET",
                f"{API}/users.list",
                {"limit": 1, "cursor": "dXNlcjpVMEc5V0ZYTlo="},
                response={
                    "ok": True,
                    "members": [USER],
                    "cache_ts": 1498777272,
                    "response_metadata": {"next_cursor": "dXNlcjpVMEc5V0ZYTlp="},
                },
            )
        ],
        {"users": [USER_SHAPED], "nextCursor": "dXNlcjpVMEc5V0ZYTlp="},
    ),
    Case(
        "slack_get_user",
        {"user": "W012A3CDE"},
        [Call("GET", f"{API}/users.info", {"user": "W012A3CDE"}, response={"ok": True, "user": USER})],
        USER_SHAPED,
    ),
    Case(
        "slack_find_user_by_email",
        {"email": "spengler@ghostbusters.example.com"},
        [
            Call(
                "GET",
                f"{API}/users.lookupByEmail",
                {"email": "spengler@ghostbusters.example.com"},
                response={"ok": True, "user": USER},
            )
        ],
        USER_SHAPED,
    ),
    Case(
        "slack_create_channel",
        {"name": "endeavor"},
        [
            Call(
                "POST",
                f"{API}/conversations.create",
                json={"name": "endeavor", "is_private": False},
                response={
                    "ok": True,
                    "channel": {**CHANNEL, "id": "C0EAQDV4Z", "name": "endeavor", "num_members": 1},
                },
            )
        ],
        {**CHANNEL_SHAPED, "id": "C0EAQDV4Z", "name": "endeavor", "num_members": 1},
    ),
    Case(
        "slack_join_channel",
        {"channel": "C012AB3CD"},
        [
            Call(
                "POST",
                f"{API}/conversations.join",
                json={"channel": "C012AB3CD"},
                response={"ok": True, "channel": CHANNEL, "warning": "already_in_channel"},
            )
        ],
        CHANNEL_SHAPED,
    ),
    Case(
        "slack_invite_to_channel",
        {"channel": "C012AB3CD", "users": ["W1234567890", "U2345678901"]},
        [
            Call(
                "POST",
                f"{API}/conversations.invite",
                json={"channel": "C012AB3CD", "users": "W1234567890,U2345678901"},
                response={"ok": True, "channel": CHANNEL},
            )
        ],
        CHANNEL_SHAPED,
    ),
]


UPLOAD_URL = "https://files.slack.com/upload/v1/CwABAAAAXgsAAgAAAA4CAA"


def check_uploaded_bytes(request: httpx.Request) -> None:
    assert request.content == b"name,total\nada,3\n"
    assert request.headers["content-type"] == "application/octet-stream"


CASES += [
    Case(
        "slack_open_dm",
        {"users": ["W1234567890"]},
        [
            Call(
                "POST",
                f"{API}/conversations.open",
                json={"users": "W1234567890", "return_im": True},
                response={"ok": True, "no_op": True, "already_open": True, "channel": {"id": "D069C7QFK"}},
            )
        ],
        {"channel": "D069C7QFK", "alreadyOpen": True},
    ),
    Case(
        "slack_get_channel_info",
        {"channel": "C012AB3CD"},
        [
            Call(
                "GET",
                f"{API}/conversations.info",
                {"channel": "C012AB3CD", "include_num_members": "true"},
                response={
                    "ok": True,
                    "channel": {
                        **CHANNEL,
                        "created": 1449252889,
                        "creator": "W012A3BCD",
                        "is_im": False,
                        "is_mpim": False,
                    },
                },
            )
        ],
        {**CHANNEL_SHAPED, "created": 1449252889, "creator": "W012A3BCD", "is_im": False, "is_mpim": False},
    ),
    Case(
        "slack_upload_file",
        {
            "channel": "C012AB3CD",
            "filename": "totals.csv",
            "content": "name,total\nada,3\n",
            "initialComment": "Totals",
        },
        [
            Call(
                "POST",
                f"{API}/files.getUploadURLExternal",
                form=[("filename", "totals.csv"), ("length", "17")],
                response={"ok": True, "upload_url": UPLOAD_URL, "file_id": "F123ABC456"},
            ),
            Call(
                "POST",
                "https://files.slack.com/upload/v1/CwABAAAAXgsAAgAAAA4CAA",
                json=ANY,
                check=check_uploaded_bytes,
                response="OK - 17",
            ),
            Call(
                "POST",
                f"{API}/files.completeUploadExternal",
                json={
                    "files": [{"id": "F123ABC456", "title": "totals.csv"}],
                    "channel_id": "C012AB3CD",
                    "initial_comment": "Totals",
                },
                response={
                    "ok": True,
                    "files": [
                        {
                            "id": "F123ABC456",
                            "name": "totals.csv",
                            "title": "totals.csv",
                            "permalink": "https://example.slack.com/files/U1/F123ABC456/totals.csv",
                        }
                    ],
                },
            ),
        ],
        {
            "ok": True,
            "files": [
                {
                    "id": "F123ABC456",
                    "title": "totals.csv",
                    "name": "totals.csv",
                    "permalink": "https://example.slack.com/files/U1/F123ABC456/totals.csv",
                }
            ],
        },
    ),
]


USER_TOKEN = "xoxp-user-1"
SEARCH_HIT = {
    "iid": "cb64bdaa-c1e8-4631-8a91-0f78080113e9",
    "ts": "1508284197.000015",
    "text": "The meeting is cancelled",
    "user": "U2U85N1RZ",
    "username": "roach",
    "channel": {"id": "C7EE5NTBX", "name": "general", "is_private": False},
    "permalink": "https://example.slack.com/archives/C7EE5NTBX/p1508284197000015",
    "type": "message",
}

CASES += [
    Case(
        "slack_search_messages",
        {"query": "cancelled in:#general", "count": 1},
        [
            Call(
                "GET",
                f"{API}/search.messages",
                {
                    "query": "cancelled in:#general",
                    "sort": "timestamp",
                    "sort_dir": "desc",
                    "count": 1,
                    "page": 1,
                },
                response={
                    "ok": True,
                    "query": "cancelled in:#general",
                    "messages": {
                        "total": 2,
                        "matches": [SEARCH_HIT],
                        "paging": {"count": 1, "total": 2, "page": 1, "pages": 2},
                    },
                },
                auth=f"Bearer {USER_TOKEN}",
            )
        ],
        {
            "total": 2,
            "messages": [
                {
                    "ts": "1508284197.000015",
                    "user": "U2U85N1RZ",
                    "username": "roach",
                    "channel_id": "C7EE5NTBX",
                    "channel_name": "general",
                    "permalink": "https://example.slack.com/archives/C7EE5NTBX/p1508284197000015",
                    "text": "The meeting is cancelled",
                }
            ],
            "nextPage": 2,
        },
    ),
]


def test_every_tool_has_a_case() -> None:
    from workbench_plugins.slack.tools import TOOLS

    assert sorted(t.name for t in TOOLS) == sorted(c.tool for c in CASES)


def test_catalog_entries_are_well_formed() -> None:
    check_catalog("slack", slack_tools)


@pytest.mark.parametrize("case", CASES, ids=str)
async def test_tool_request_and_result(tmp_path: Path, case: Case) -> None:
    await run_case(PLUGIN, tmp_path, case)


async def test_ok_false_with_http_200_passes_through_as_result(tmp_path: Path) -> None:
    """Seed 000: Slack's 200 error body is a {result}, unchanged — not an {error}."""
    body = {"ok": False, "error": "channel_not_found"}
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "slack_send_message",
        {"channel": "C404", "text": "hi"},
        [Call("POST", f"{API}/chat.postMessage", json={"channel": "C404", "text": "hi"}, response=body)],
    )
    assert out == {"results": [{"result": {"ok": False, "error": "channel_not_found"}}]}


async def test_ok_false_on_a_read_passes_through_too(tmp_path: Path) -> None:
    body = {"ok": False, "error": "not_in_channel", "response_metadata": {"messages": []}}
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "slack_get_channel_history",
        {"channel": "C1"},
        [Call("GET", f"{API}/conversations.history", {"channel": "C1", "limit": 50}, response=body)],
    )
    assert out == {"results": [{"result": body}]}


async def test_http_error_is_a_tool_error(tmp_path: Path) -> None:
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "slack_get_user",
        {"user": "U1"},
        [Call("GET", f"{API}/users.info", {"user": "U1"}, status=500, response="upstream exploded")],
    )
    assert out == {"results": [{"error": "slack API error 500: upstream exploded"}]}


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ({}, "Give exactly one of content (text) or contentBase64 (binary)."),
        (
            {"content": "a", "contentBase64": "YQ=="},
            "Give exactly one of content (text) or contentBase64 (binary).",
        ),
        ({"contentBase64": "%%%"}, "contentBase64 is not valid base64."),
        ({"content": ""}, "The file is empty; Slack does not take empty files."),
        (
            {"content": "x" * 10_000_001},
            "The file is 10000001 bytes; this tool uploads at most 10000000 bytes.",
        ),
    ],
)
async def test_upload_refuses_bad_content_before_any_request(tmp_path: Path, args: dict, error: str) -> None:
    out = await run_tool(
        PLUGIN, tmp_path, "slack_upload_file", {"channel": "C1", "filename": "f", **args}, []
    )
    assert out == {"results": [{"error": error}]}


async def test_upload_never_sends_the_token_off_slack(tmp_path: Path) -> None:
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "slack_upload_file",
        {"channel": "C1", "filename": "f.bin", "contentBase64": "AAEC"},
        [
            Call(
                "POST",
                f"{API}/files.getUploadURLExternal",
                form=[("filename", "f.bin"), ("length", "3")],
                response={"ok": True, "upload_url": "https://evil.example/upload", "file_id": "F1"},
            )
        ],
    )
    assert out == {
        "results": [{"error": "Slack answered with an upload URL outside files.slack.com; not uploading."}]
    }


async def test_upload_passes_slack_refusal_through(tmp_path: Path) -> None:
    refusal = {"ok": False, "error": "missing_scope", "needed": "files:write"}
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "slack_upload_file",
        {"channel": "C1", "filename": "f.txt", "content": "hi"},
        [
            Call(
                "POST",
                f"{API}/files.getUploadURLExternal",
                form=[("filename", "f.txt"), ("length", "2")],
                response=refusal,
            )
        ],
    )
    assert out == {"results": [{"result": refusal}]}


async def test_search_without_a_user_token_asks_to_reconnect(tmp_path: Path) -> None:
    out = await run_tool(Plugin("slack"), tmp_path, "slack_search_messages", {"query": "x"}, [])
    assert out == {
        "results": [
            {
                "error": "slack has no user token for this connection. "
                "Use connect('slack') to reconnect and grant the user permissions."
            }
        ]
    }
