"""Gmail tools against a fake gmail.googleapis.com answering with bodies shaped like Google's
documented Message/Thread/Draft resources."""

from __future__ import annotations

import base64
import json
from email import message_from_bytes, policy
from pathlib import Path
from typing import Any

import httpx
import pytest
from workbench_plugins.google_gmail import tools as google_gmail_tools

from tests.plugins.catalog_support import ANY, Call, Case, Plugin, check_catalog, run_case, run_tool

PLUGIN = Plugin("google-gmail")

ME = "https://gmail.googleapis.com/gmail/v1/users/me"


def b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def sent_mail(request: httpx.Request, key: str = "raw") -> Any:
    body = json.loads(request.content)
    raw = body["message"]["raw"] if key == "message" else body["raw"]
    return message_from_bytes(base64.urlsafe_b64decode(raw), policy=policy.default)


def expect_mail(headers: dict[str, str], text: str, key: str = "raw") -> Any:
    def check(request: httpx.Request) -> None:
        mail = sent_mail(request, key)
        for name, value in headers.items():
            assert mail[name] == value, (name, mail[name])
        assert mail.get_content() == text + "\n"

    return check


def check_reply(request: httpx.Request) -> None:
    expect_mail(
        {
            "To": "Ada Lovelace <ada@example.com>",
            "Subject": "Re: Quarterly numbers",
            "In-Reply-To": "<CAF=abc123@mail.gmail.com>",
            "References": "<CAF=abc123@mail.gmail.com>",
        },
        "Thanks, got them.",
    )(request)
    assert json.loads(request.content)["threadId"] == "18c2f0a1b2c3d4e5"


HEADERS = [
    {"name": "From", "value": "Ada Lovelace <ada@example.com>"},
    {"name": "To", "value": "me@example.com"},
    {"name": "Subject", "value": "Quarterly numbers"},
    {"name": "Date", "value": "Tue, 1 Oct 2024 09:30:00 +0000"},
]
META = {
    "id": "18c2f0a1b2c3d4e5",
    "threadId": "18c2f0a1b2c3d4e5",
    "labelIds": ["INBOX", "UNREAD"],
    "snippet": "Here are the Q3 numbers &amp; a summary",
    "payload": {"mimeType": "multipart/alternative", "headers": HEADERS},
    "sizeEstimate": 5120,
    "internalDate": "1727775000000",
}
SUMMARY = {
    "id": "18c2f0a1b2c3d4e5",
    "threadId": "18c2f0a1b2c3d4e5",
    "from": "Ada Lovelace <ada@example.com>",
    "to": "me@example.com",
    "subject": "Quarterly numbers",
    "date": "Tue, 1 Oct 2024 09:30:00 +0000",
    "snippet": "Here are the Q3 numbers & a summary",
    "labelIds": ["INBOX", "UNREAD"],
}
FULL_MSG = {
    **META,
    "payload": {
        "mimeType": "multipart/mixed",
        "headers": [*HEADERS, {"name": "Cc", "value": "bob@example.com"}],
        "parts": [
            {
                "partId": "0",
                "mimeType": "multipart/alternative",
                "filename": "",
                "body": {"size": 0},
                "parts": [
                    {
                        "partId": "0.0",
                        "mimeType": "text/plain",
                        "filename": "",
                        "body": {"size": 33, "data": b64("Here are the Q3 numbers.\r\n-- Ada")},
                    },
                    {
                        "partId": "0.1",
                        "mimeType": "text/html",
                        "filename": "",
                        "body": {"size": 40, "data": b64("<p>Here are the Q3 numbers.</p>")},
                    },
                ],
            },
            {
                "partId": "1",
                "mimeType": "application/pdf",
                "filename": "q3.pdf",
                "body": {"size": 48213, "attachmentId": "ANGjdJ8abc"},
            },
        ],
    },
}
FULL = {
    **SUMMARY,
    "cc": "bob@example.com",
    "body": "Here are the Q3 numbers.\r\n-- Ada",
    "attachments": [
        {"filename": "q3.pdf", "mimeType": "application/pdf", "size": 48213, "attachmentId": "ANGjdJ8abc"}
    ],
}
SENT = {"id": "18c2f9e8d7c6b5a4", "threadId": "18c2f0a1b2c3d4e5", "labelIds": ["SENT"]}
METADATA_Q = {"format": "metadata", "metadataHeaders": ["From", "To", "Subject", "Date"]}

CASES = [
    Case(
        "gmail_search_messages",
        {"q": "from:ada@example.com is:unread", "limit": 2},
        [
            Call(
                "GET",
                f"{ME}/messages",
                {"q": "from:ada@example.com is:unread", "maxResults": 2},
                json=None,
                response={
                    "messages": [
                        {"id": "18c2f0a1b2c3d4e5", "threadId": "18c2f0a1b2c3d4e5"},
                        {"id": "18c2f0a1b2c3d4e6", "threadId": "18c2f0a1b2c3d4e5"},
                    ],
                    "nextPageToken": "09876543210",
                    "resultSizeEstimate": 14,
                },
            ),
            Call("GET", f"{ME}/messages/18c2f0a1b2c3d4e5", METADATA_Q, response=META),
            Call(
                "GET",
                f"{ME}/messages/18c2f0a1b2c3d4e6",
                METADATA_Q,
                response={**META, "id": "18c2f0a1b2c3d4e6", "labelIds": ["INBOX"]},
            ),
        ],
        {
            "messages": [SUMMARY, {**SUMMARY, "id": "18c2f0a1b2c3d4e6", "labelIds": ["INBOX"]}],
            "nextPageToken": "09876543210",
            "resultSizeEstimate": 14,
        },
    ),
    Case(
        "gmail_get_message",
        {"id": "18c2f0a1b2c3d4e5"},
        [Call("GET", f"{ME}/messages/18c2f0a1b2c3d4e5", {"format": "full"}, response=FULL_MSG)],
        FULL,
    ),
    Case(
        "gmail_get_thread",
        {"id": "18c2f0a1b2c3d4e5"},
        [
            Call(
                "GET",
                f"{ME}/threads/18c2f0a1b2c3d4e5",
                {"format": "full"},
                response={
                    "id": "18c2f0a1b2c3d4e5",
                    "historyId": "12345",
                    "messages": [
                        FULL_MSG,
                        {
                            **META,
                            "id": "18c2f0a1b2c3d4e6",
                            "labelIds": ["SENT"],
                            "snippet": "Thanks",
                            "payload": {
                                "mimeType": "text/html",
                                "headers": HEADERS,
                                "body": {"size": 30, "data": b64("<div>Thanks &amp; <b>bye</b></div>")},
                            },
                        },
                    ],
                },
            )
        ],
        {
            "id": "18c2f0a1b2c3d4e5",
            "messages": [
                FULL,
                {
                    **SUMMARY,
                    "id": "18c2f0a1b2c3d4e6",
                    "labelIds": ["SENT"],
                    "snippet": "Thanks",
                    "cc": None,
                    "body": "Thanks & bye",
                    "attachments": [],
                },
            ],
        },
    ),
    Case(
        "gmail_send_email",
        {
            "to": ["ada@example.com", "bob@example.com"],
            "subject": "Lunch?",
            "body": "Noon at the usual place.",
            "cc": ["carol@example.com"],
        },
        [
            Call(
                "POST",
                f"{ME}/messages/send",
                json=ANY,
                response=SENT,
                check=expect_mail(
                    {
                        "To": "ada@example.com, bob@example.com",
                        "Cc": "carol@example.com",
                        "Subject": "Lunch?",
                    },
                    "Noon at the usual place.",
                ),
            )
        ],
        SENT,
    ),
    Case(
        "gmail_reply_to_message",
        {"id": "18c2f0a1b2c3d4e5", "body": "Thanks, got them."},
        [
            Call(
                "GET",
                f"{ME}/messages/18c2f0a1b2c3d4e5",
                {
                    "format": "metadata",
                    "metadataHeaders": [
                        "Subject",
                        "From",
                        "Reply-To",
                        "To",
                        "Cc",
                        "Message-ID",
                        "References",
                    ],
                },
                response={
                    **META,
                    "payload": {
                        "headers": [*HEADERS, {"name": "Message-ID", "value": "<CAF=abc123@mail.gmail.com>"}]
                    },
                },
            ),
            Call(
                "POST",
                f"{ME}/messages/send",
                json=ANY,
                response=SENT,
                check=check_reply,
            ),
        ],
        SENT,
    ),
    Case(
        "gmail_create_draft",
        {"to": ["ada@example.com"], "subject": "Draft", "body": "Not yet."},
        [
            Call(
                "POST",
                f"{ME}/drafts",
                json=ANY,
                response={
                    "id": "r-5467890123",
                    "message": {"id": "18c2fa", "threadId": "18c2fa", "labelIds": ["DRAFT"]},
                },
                check=expect_mail({"To": "ada@example.com", "Subject": "Draft"}, "Not yet.", key="message"),
            )
        ],
        {"id": "r-5467890123", "message_id": "18c2fa", "message_threadId": "18c2fa"},
    ),
    Case(
        "gmail_list_drafts",
        {"limit": 1},
        [
            Call(
                "GET",
                f"{ME}/drafts",
                {"maxResults": 1},
                response={
                    "drafts": [{"id": "r-5467890123", "message": {"id": "18c2fa", "threadId": "18c2fa"}}],
                    "nextPageToken": "abc",
                    "resultSizeEstimate": 3,
                },
            )
        ],
        {
            "drafts": [{"id": "r-5467890123", "message_id": "18c2fa", "message_threadId": "18c2fa"}],
            "nextPageToken": "abc",
        },
    ),
    Case(
        "gmail_send_draft",
        {"id": "r-5467890123"},
        [
            Call(
                "POST",
                f"{ME}/drafts/send",
                json={"id": "r-5467890123"},
                response={"id": "18c2fa", "threadId": "18c2fa", "labelIds": ["SENT"]},
            )
        ],
        {"id": "18c2fa", "threadId": "18c2fa", "labelIds": ["SENT"]},
    ),
    Case(
        "gmail_list_labels",
        {},
        [
            Call(
                "GET",
                f"{ME}/labels",
                json=None,
                response={
                    "labels": [
                        {"id": "INBOX", "name": "INBOX", "messageListVisibility": "hide", "type": "system"},
                        {"id": "Label_12", "name": "Receipts", "type": "user"},
                    ]
                },
            )
        ],
        {
            "labels": [
                {"id": "INBOX", "name": "INBOX", "type": "system"},
                {"id": "Label_12", "name": "Receipts", "type": "user"},
            ]
        },
    ),
    Case(
        "gmail_modify_labels",
        {"id": "18c2f0a1b2c3d4e5", "add": ["Label_12"], "remove": ["UNREAD", "INBOX"]},
        [
            Call(
                "POST",
                f"{ME}/messages/18c2f0a1b2c3d4e5/modify",
                json={"addLabelIds": ["Label_12"], "removeLabelIds": ["UNREAD", "INBOX"]},
                response={"id": "18c2f0a1b2c3d4e5", "threadId": "18c2f0a1b2c3d4e5", "labelIds": ["Label_12"]},
            )
        ],
        {"id": "18c2f0a1b2c3d4e5", "threadId": "18c2f0a1b2c3d4e5", "labelIds": ["Label_12"]},
    ),
    Case(
        "gmail_trash_message",
        {"id": "18c2f0a1b2c3d4e5"},
        [
            Call(
                "POST",
                f"{ME}/messages/18c2f0a1b2c3d4e5/trash",
                json=None,
                response={"id": "18c2f0a1b2c3d4e5", "threadId": "18c2f0a1b2c3d4e5", "labelIds": ["TRASH"]},
            )
        ],
        {"id": "18c2f0a1b2c3d4e5", "threadId": "18c2f0a1b2c3d4e5", "labelIds": ["TRASH"]},
    ),
    Case(
        "gmail_get_profile",
        {},
        [
            Call(
                "GET",
                f"{ME}/profile",
                response={
                    "emailAddress": "me@example.com",
                    "messagesTotal": 5012,
                    "threadsTotal": 3201,
                    "historyId": "987654",
                },
            )
        ],
        {"emailAddress": "me@example.com", "messagesTotal": 5012, "threadsTotal": 3201},
    ),
]


PDF = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj<<>>endobj\n"
REPLY_META_Q = {
    "format": "metadata",
    "metadataHeaders": ["Subject", "From", "Reply-To", "To", "Cc", "Message-ID", "References"],
}


def check_reply_draft(request: httpx.Request) -> None:
    body = json.loads(request.content)
    assert body["message"]["threadId"] == "18c2f0a1b2c3d4e5"
    mail = message_from_bytes(base64.urlsafe_b64decode(body["message"]["raw"]), policy=policy.default)
    assert mail["Subject"] == "Re: Quarterly numbers" and mail["In-Reply-To"] == "<CAF=abc123@mail.gmail.com>"
    assert mail.get_content().strip() == "Draft answer."


def check_attached(request: httpx.Request) -> None:
    mail = sent_mail(request)
    assert mail["To"] == "ada@example.com" and mail["Subject"] == "Report"
    parts = list(mail.iter_attachments())
    assert [(p.get_filename(), p.get_content_type(), p.get_content()) for p in parts] == [
        ("q3.pdf", "application/pdf", PDF)
    ]
    assert mail.get_body(("plain",)).get_content().strip() == "Attached."


CASES += [
    Case(
        "gmail_get_attachment",
        {"id": "18c2f0a1b2c3d4e5", "attachmentId": "ANGjdJ8x"},
        [
            Call(
                "GET",
                f"{ME}/messages/18c2f0a1b2c3d4e5/attachments/ANGjdJ8x",
                response={"size": len(PDF), "data": base64.urlsafe_b64encode(PDF).decode().rstrip("=")},
            )
        ],
        {"attachmentId": "ANGjdJ8x", "size": len(PDF), "contentBase64": base64.b64encode(PDF).decode()},
    ),
    Case(
        "gmail_search_threads",
        {"q": "from:ada@example.com", "limit": 2},
        [
            Call(
                "GET",
                f"{ME}/threads",
                {"q": "from:ada@example.com", "maxResults": 2},
                response={
                    "threads": [
                        {
                            "id": "18c2f0a1b2c3d4e5",
                            "snippet": "Here are the Q3 numbers &amp; notes",
                            "historyId": "9",
                        }
                    ],
                    "nextPageToken": "09876",
                    "resultSizeEstimate": 3,
                },
            )
        ],
        {
            "threads": [{"id": "18c2f0a1b2c3d4e5", "snippet": "Here are the Q3 numbers & notes"}],
            "nextPageToken": "09876",
            "resultSizeEstimate": 3,
        },
    ),
    Case(
        "gmail_create_reply_draft",
        {"id": "18c2f0a1b2c3d4e5", "body": "Draft answer."},
        [
            Call(
                "GET",
                f"{ME}/messages/18c2f0a1b2c3d4e5",
                REPLY_META_Q,
                response={
                    **META,
                    "payload": {
                        "headers": [*HEADERS, {"name": "Message-ID", "value": "<CAF=abc123@mail.gmail.com>"}]
                    },
                },
            ),
            Call(
                "POST",
                f"{ME}/drafts",
                json=ANY,
                check=check_reply_draft,
                response={
                    "id": "r-1",
                    "message": {"id": "18c3", "threadId": "18c2f0a1b2c3d4e5", "labelIds": ["DRAFT"]},
                },
            ),
        ],
        {"id": "r-1", "message_id": "18c3", "message_threadId": "18c2f0a1b2c3d4e5"},
    ),
    Case(
        "gmail_create_label",
        {"name": "Clients/Acme", "showInMessageList": False},
        [
            Call(
                "POST",
                f"{ME}/labels",
                json={
                    "name": "Clients/Acme",
                    "messageListVisibility": "hide",
                    "labelListVisibility": "labelShow",
                },
                response={"id": "Label_12", "name": "Clients/Acme", "type": "user"},
            )
        ],
        {"id": "Label_12", "name": "Clients/Acme", "type": "user"},
    ),
]


def test_every_tool_has_a_case() -> None:
    from workbench_plugins.google_gmail.tools import TOOLS

    assert sorted(t.name for t in TOOLS) == sorted(c.tool for c in CASES)


def test_catalog_entries_are_well_formed() -> None:
    check_catalog("google-gmail", google_gmail_tools)


@pytest.mark.parametrize("case", CASES, ids=str)
async def test_tool_request_and_result(tmp_path: Path, case: Case) -> None:
    await run_case(PLUGIN, tmp_path, case)


async def test_upstream_404_becomes_tool_error(tmp_path: Path) -> None:
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "gmail_get_message",
        {"id": "nope"},
        [
            Call(
                "GET",
                f"{ME}/messages/nope",
                {"format": "full"},
                status=404,
                response={
                    "error": {
                        "code": 404,
                        "message": "Requested entity was not found.",
                        "errors": [
                            {
                                "message": "Requested entity was not found.",
                                "domain": "global",
                                "reason": "notFound",
                            }
                        ],
                        "status": "NOT_FOUND",
                    }
                },
            )
        ],
    )
    assert out == {"results": [{"error": "google-gmail API error 404: Requested entity was not found."}]}


async def test_send_email_with_an_attachment(tmp_path: Path) -> None:
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "gmail_send_email",
        {
            "to": ["ada@example.com"],
            "subject": "Report",
            "body": "Attached.",
            "attachments": [
                {
                    "filename": "q3.pdf",
                    "mimeType": "application/pdf",
                    "contentBase64": base64.b64encode(PDF).decode(),
                }
            ],
        },
        [Call("POST", f"{ME}/messages/send", json=ANY, response=SENT, check=check_attached)],
    )
    assert out == {"results": [{"result": SENT}]}


async def test_attachments_are_checked_before_sending(tmp_path: Path) -> None:
    bad = {
        "to": ["a@b.c"],
        "subject": "s",
        "body": "b",
        "attachments": [{"filename": "x", "contentBase64": "***"}],
    }
    out = await run_tool(PLUGIN, tmp_path, "gmail_send_email", bad, [])
    assert out == {"results": [{"error": "attachment 'x': contentBase64 is not valid base64"}]}
    big = base64.b64encode(b"\0" * 18_000_001).decode()
    too_big = {**bad, "attachments": [{"filename": "x", "contentBase64": big}]}
    out = await run_tool(PLUGIN, tmp_path, "gmail_create_draft", too_big, [])
    assert out == {"results": [{"error": "attachments total 18000001 bytes; the limit is 18000000 bytes."}]}


async def test_attachment_over_the_cap_is_refused_with_its_size(tmp_path: Path) -> None:
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "gmail_get_attachment",
        {"id": "m1", "attachmentId": "a1"},
        [Call("GET", f"{ME}/messages/m1/attachments/a1", response={"size": 7_000_000, "data": "AAAA"})],
    )
    assert out == {
        "results": [{"error": "The attachment is 7000000 bytes; this tool returns at most 5000000 bytes."}]
    }
