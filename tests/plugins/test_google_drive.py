"""Google Drive tools against a fake www.googleapis.com answering with Drive v3 File/Permission
resources as documented."""

from __future__ import annotations

import base64
import json
from email import message_from_bytes, policy
from pathlib import Path
from typing import Any

import httpx
import pytest
from workbench_plugins.google_drive import tools as google_drive_tools

from tests.plugins.catalog_support import ANY, Call, Case, Plugin, check_catalog, run_case, run_tool

PLUGIN = Plugin("google-drive")

FILES = "https://www.googleapis.com/drive/v3/files"
UPLOAD = "https://www.googleapis.com/upload/drive/v3/files"
FIELDS = "id,name,mimeType,size,modifiedTime,webViewLink,parents"
ALL = {"supportsAllDrives": "true"}
LIST_Q = {"fields": f"nextPageToken,files({FIELDS})", "includeItemsFromAllDrives": "true", **ALL}
DOC_ID = "1BxiMVs0XRA5nFMdKvBdBZjgmUUqptlbs74OgvE2upms"
FILE = {
    "kind": "drive#file",
    "id": DOC_ID,
    "name": "Q3 report",
    "mimeType": "application/vnd.google-apps.document",
    "modifiedTime": "2024-10-01T09:30:00.000Z",
    "webViewLink": f"https://docs.google.com/document/d/{DOC_ID}/edit?usp=drivesdk",
    "parents": ["0AFolderRootId"],
}
SHAPED = {
    **{k: FILE.get(k) for k in ("id", "name", "mimeType")},
    "size": None,
    "modifiedTime": FILE["modifiedTime"],
    "webViewLink": FILE["webViewLink"],
    "parents": FILE["parents"],
}
CSV_FILE = {
    "kind": "drive#file",
    "id": "1CsvFileId",
    "name": "export.csv",
    "mimeType": "text/csv",
    "size": "23",
    "modifiedTime": "2024-10-02T10:00:00.000Z",
    "webViewLink": "https://drive.google.com/file/d/1CsvFileId/view?usp=drivesdk",
    "parents": ["0AFolder"],
}
CSV_SHAPED = {
    k: CSV_FILE[k] for k in ("id", "name", "mimeType", "size", "modifiedTime", "webViewLink", "parents")
}


def multipart(request: httpx.Request) -> tuple[dict[str, Any], Any]:
    head = f"Content-Type: {request.headers['content-type']}\r\n\r\n".encode()
    mail = message_from_bytes(head + request.content, policy=policy.default)
    assert mail.get_content_type() == "multipart/related"
    meta_part, media_part = list(mail.iter_parts())
    assert meta_part.get_content_type() == "application/json"
    return json.loads(meta_part.get_content()), media_part


def expect_upload(request: httpx.Request) -> None:
    meta, media = multipart(request)
    assert meta == {"name": "export.csv", "parents": ["0AFolder"]}
    assert media.get_content_type() == "text/csv"
    assert media.get_content() == "id,total\r\n1,10\r\n2,13\n"


def expect_media(request: httpx.Request) -> None:
    assert request.headers["content-type"] == "text/csv; charset=UTF-8"
    assert request.content == b"id,total\n1,11\n"


CASES = [
    Case(
        "google_drive_list_files",
        {"folderId": "0AFolder", "limit": 2},
        [
            Call(
                "GET",
                FILES,
                {
                    "q": "trashed = false and '0AFolder' in parents",
                    "pageSize": 2,
                    "orderBy": "modifiedTime desc",
                    **LIST_Q,
                },
                json=None,
                response={
                    "kind": "drive#fileList",
                    "incompleteSearch": False,
                    "files": [FILE],
                    "nextPageToken": "~!!~AI9FV7T",
                },
            )
        ],
        {"files": [SHAPED], "nextPageToken": "~!!~AI9FV7T"},
    ),
    Case(
        "google_drive_search",
        {"text": "Ada's report", "mimeType": "application/vnd.google-apps.document"},
        [
            Call(
                "GET",
                FILES,
                {
                    "q": "fullText contains 'Ada\\'s report' and trashed = false and "
                    "mimeType = 'application/vnd.google-apps.document'",
                    "pageSize": 25,
                    **LIST_Q,
                },
                response={"files": [FILE]},
            )
        ],
        {"files": [SHAPED], "nextPageToken": None},
    ),
    Case(
        "google_drive_get_file",
        {"fileId": DOC_ID},
        [
            Call(
                "GET",
                f"{FILES}/{DOC_ID}",
                {"fields": f"{FIELDS},description,owners(emailAddress)", **ALL},
                response={
                    **FILE,
                    "description": "Numbers",
                    "owners": [{"displayName": "Ada", "emailAddress": "ada@example.com"}],
                },
            )
        ],
        {**SHAPED, "description": "Numbers", "owners": ["ada@example.com"]},
    ),
    Case(
        "google_drive_read_file",
        {"fileId": DOC_ID},
        [
            Call("GET", f"{FILES}/{DOC_ID}", {"fields": "id,name,mimeType,size", **ALL}, response=FILE),
            Call(
                "GET",
                f"{FILES}/{DOC_ID}/export",
                {"mimeType": "text/plain"},
                response="Q3 report\r\nRevenue up.",
            ),
        ],
        {
            "id": DOC_ID,
            "name": "Q3 report",
            "mimeType": "application/vnd.google-apps.document",
            "content": "Q3 report\r\nRevenue up.",
        },
    ),
    Case(
        "google_drive_upload",
        {
            "name": "export.csv",
            "content": "id,total\r\n1,10\r\n2,13\n",
            "mimeType": "text/csv",
            "parents": ["0AFolder"],
        },
        [
            Call(
                "POST",
                UPLOAD,
                {"uploadType": "multipart", "fields": FIELDS, **ALL},
                json=ANY,
                response=CSV_FILE,
                check=expect_upload,
            )
        ],
        CSV_SHAPED,
    ),
    Case(
        "google_drive_update_file_content",
        {"fileId": "1CsvFileId", "content": "id,total\n1,11\n", "mimeType": "text/csv"},
        [
            Call(
                "PATCH",
                f"{UPLOAD}/1CsvFileId",
                {"uploadType": "media", "fields": FIELDS, **ALL},
                json=ANY,
                response=CSV_FILE,
                check=expect_media,
            )
        ],
        CSV_SHAPED,
    ),
    Case(
        "google_drive_create_folder",
        {"name": "Reports", "parentId": "0AFolderRootId"},
        [
            Call(
                "POST",
                FILES,
                {"fields": FIELDS, **ALL},
                json={
                    "name": "Reports",
                    "mimeType": "application/vnd.google-apps.folder",
                    "parents": ["0AFolderRootId"],
                },
                response={
                    "id": "1FolderId",
                    "name": "Reports",
                    "mimeType": "application/vnd.google-apps.folder",
                    "webViewLink": "https://drive.google.com/drive/folders/1FolderId",
                    "parents": ["0AFolderRootId"],
                    "modifiedTime": "2024-10-01T09:30:00.000Z",
                },
            )
        ],
        {
            "id": "1FolderId",
            "name": "Reports",
            "mimeType": "application/vnd.google-apps.folder",
            "size": None,
            "modifiedTime": "2024-10-01T09:30:00.000Z",
            "webViewLink": "https://drive.google.com/drive/folders/1FolderId",
            "parents": ["0AFolderRootId"],
        },
    ),
    Case(
        "google_drive_update_file",
        {
            "fileId": DOC_ID,
            "name": "Q3 report (final)",
            "addParents": ["1FolderId"],
            "removeParents": ["0AFolderRootId"],
        },
        [
            Call(
                "PATCH",
                f"{FILES}/{DOC_ID}",
                {"addParents": "1FolderId", "removeParents": "0AFolderRootId", "fields": FIELDS, **ALL},
                json={"name": "Q3 report (final)"},
                response={**FILE, "name": "Q3 report (final)", "parents": ["1FolderId"]},
            )
        ],
        {**SHAPED, "name": "Q3 report (final)", "parents": ["1FolderId"]},
    ),
    Case(
        "google_drive_copy_file",
        {"fileId": DOC_ID, "name": "Q4 report"},
        [
            Call(
                "POST",
                f"{FILES}/{DOC_ID}/copy",
                {"fields": FIELDS, **ALL},
                json={"name": "Q4 report"},
                response={**FILE, "id": "1CopyId", "name": "Q4 report"},
            )
        ],
        {**SHAPED, "id": "1CopyId", "name": "Q4 report"},
    ),
    Case(
        "google_drive_trash_file",
        {"fileId": DOC_ID},
        [
            Call(
                "PATCH",
                f"{FILES}/{DOC_ID}",
                {"fields": "id,name,trashed", **ALL},
                json={"trashed": True},
                response={"id": DOC_ID, "name": "Q3 report", "trashed": True},
            )
        ],
        {"id": DOC_ID, "name": "Q3 report", "trashed": True},
    ),
    Case(
        "google_drive_share_file",
        {"fileId": DOC_ID, "role": "writer", "emailAddress": "bob@example.com", "message": "Please review"},
        [
            Call(
                "POST",
                f"{FILES}/{DOC_ID}/permissions",
                {
                    "sendNotificationEmail": "true",
                    "emailMessage": "Please review",
                    "fields": "id,type,role,emailAddress,domain",
                    **ALL,
                },
                json={"role": "writer", "type": "user", "emailAddress": "bob@example.com"},
                response={
                    "kind": "drive#permission",
                    "id": "04109509928597328544",
                    "type": "user",
                    "role": "writer",
                    "emailAddress": "bob@example.com",
                },
            )
        ],
        {
            "id": "04109509928597328544",
            "type": "user",
            "role": "writer",
            "emailAddress": "bob@example.com",
            "domain": None,
        },
    ),
    Case(
        "google_drive_list_permissions",
        {"fileId": DOC_ID},
        [
            Call(
                "GET",
                f"{FILES}/{DOC_ID}/permissions",
                {"fields": "permissions(id,type,role,emailAddress,domain,displayName)", **ALL},
                response={
                    "permissions": [
                        {"id": "anyoneWithLink", "type": "anyone", "role": "reader"},
                        {
                            "id": "0410",
                            "type": "user",
                            "role": "owner",
                            "emailAddress": "ada@example.com",
                            "displayName": "Ada Lovelace",
                        },
                    ]
                },
            )
        ],
        {
            "permissions": [
                {
                    "id": "anyoneWithLink",
                    "type": "anyone",
                    "role": "reader",
                    "emailAddress": None,
                    "domain": None,
                    "displayName": None,
                },
                {
                    "id": "0410",
                    "type": "user",
                    "role": "owner",
                    "emailAddress": "ada@example.com",
                    "domain": None,
                    "displayName": "Ada Lovelace",
                },
            ]
        },
    ),
]


PDF_BYTES = b"%PDF-1.7\n\xe2\xe3\xcf\xd3 scanned page\n"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"

CASES += [
    Case(
        "google_drive_download_file",
        {"fileId": "1Pdf"},
        [
            Call(
                "GET",
                f"{FILES}/1Pdf",
                {"fields": "id,name,mimeType,size", **ALL},
                response={
                    "id": "1Pdf",
                    "name": "scan.pdf",
                    "mimeType": "application/pdf",
                    "size": str(len(PDF_BYTES)),
                },
            ),
            Call("GET", f"{FILES}/1Pdf", {"alt": "media", **ALL}, response=PDF_BYTES.decode("latin-1")),
        ],
        {
            "id": "1Pdf",
            "name": "scan.pdf",
            "mimeType": "application/pdf",
            "size": len(PDF_BYTES.decode("latin-1").encode()),
            "contentBase64": base64.b64encode(PDF_BYTES.decode("latin-1").encode()).decode(),
        },
    ),
    Case(
        "google_drive_list_shared_drives",
        {"limit": 10},
        [
            Call(
                "GET",
                "https://www.googleapis.com/drive/v3/drives",
                {"pageSize": 10, "fields": "nextPageToken,drives(id,name,createdTime,hidden)"},
                response={
                    "kind": "drive#driveList",
                    "drives": [
                        {
                            "kind": "drive#drive",
                            "id": "0AFx",
                            "name": "Sales",
                            "createdTime": "2024-01-02T03:04:05Z",
                            "hidden": False,
                        }
                    ],
                    "nextPageToken": "~!!~AI9",
                },
            )
        ],
        {
            "drives": [
                {"id": "0AFx", "name": "Sales", "createdTime": "2024-01-02T03:04:05Z", "hidden": False}
            ],
            "nextPageToken": "~!!~AI9",
        },
    ),
]


def test_every_tool_has_a_case() -> None:
    from workbench_plugins.google_drive.tools import TOOLS

    assert sorted(t.name for t in TOOLS) == sorted(c.tool for c in CASES)


def test_catalog_entries_are_well_formed() -> None:
    check_catalog("google-drive", google_drive_tools)


@pytest.mark.parametrize("case", CASES, ids=str)
async def test_tool_request_and_result(tmp_path: Path, case: Case) -> None:
    await run_case(PLUGIN, tmp_path, case)


async def test_upload_can_convert_to_a_google_sheet(tmp_path: Path) -> None:
    def check(request: httpx.Request) -> None:
        meta, media = multipart(request)
        assert meta == {"name": "export", "mimeType": "application/vnd.google-apps.spreadsheet"}
        assert media.get_content_type() == "text/csv"

    sheet = {
        "id": "1SheetId",
        "name": "export",
        "mimeType": "application/vnd.google-apps.spreadsheet",
        "webViewLink": "https://docs.google.com/spreadsheets/d/1SheetId/edit?usp=drivesdk",
    }
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "google_drive_upload",
        {"name": "export", "content": "a,b\n1,2\n", "mimeType": "text/csv", "convertTo": "spreadsheet"},
        [
            Call(
                "POST",
                UPLOAD,
                {"uploadType": "multipart", "fields": FIELDS, **ALL},
                json=ANY,
                response=sheet,
                check=check,
            )
        ],
    )
    result = out["results"][0]["result"]
    assert (result["id"], result["webViewLink"]) == ("1SheetId", sheet["webViewLink"])


async def test_sharing_with_anyone_sends_no_notification_fields(tmp_path: Path) -> None:
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "google_drive_share_file",
        {"fileId": DOC_ID, "type": "anyone", "message": "ignored"},
        [
            Call(
                "POST",
                f"{FILES}/{DOC_ID}/permissions",
                {"fields": "id,type,role,emailAddress,domain", **ALL},
                json={"role": "reader", "type": "anyone"},
                response={"id": "anyoneWithLink", "type": "anyone", "role": "reader"},
            )
        ],
    )
    assert out == {
        "results": [
            {
                "result": {
                    "id": "anyoneWithLink",
                    "type": "anyone",
                    "role": "reader",
                    "emailAddress": None,
                    "domain": None,
                }
            }
        ]
    }


async def test_sharing_with_a_user_needs_an_email(tmp_path: Path) -> None:
    out = await run_tool(PLUGIN, tmp_path, "google_drive_share_file", {"fileId": DOC_ID}, [])
    assert out == {"results": [{"error": "emailAddress is required to share with a user."}]}


async def test_reading_a_binary_file_is_refused_clearly(tmp_path: Path) -> None:
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "google_drive_read_file",
        {"fileId": "1Pdf"},
        [
            Call(
                "GET",
                f"{FILES}/1Pdf",
                {"fields": "id,name,mimeType,size", **ALL},
                response={"id": "1Pdf", "name": "scan.pdf", "mimeType": "application/pdf"},
            )
        ],
    )
    assert out == {
        "results": [
            {
                "error": "'scan.pdf' is application/pdf; only Google Docs/Sheets/Slides and text "
                "files can be read as text; google_drive_download_file returns its bytes."
            }
        ]
    }


async def test_upstream_404_becomes_tool_error(tmp_path: Path) -> None:
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "google_drive_get_file",
        {"fileId": "nope"},
        [
            Call(
                "GET",
                f"{FILES}/nope",
                {"fields": f"{FIELDS},description,owners(emailAddress)", **ALL},
                status=404,
                response={
                    "error": {
                        "code": 404,
                        "message": "File not found: nope.",
                        "errors": [
                            {
                                "message": "File not found: nope.",
                                "domain": "global",
                                "reason": "notFound",
                                "location": "fileId",
                                "locationType": "parameter",
                            }
                        ],
                    }
                },
            )
        ],
    )
    assert out == {"results": [{"error": "google-drive API error 404: File not found: nope."}]}


async def test_download_exports_a_google_doc(tmp_path: Path) -> None:
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "google_drive_download_file",
        {"fileId": "1Doc", "exportAs": "docx"},
        [
            Call(
                "GET",
                f"{FILES}/1Doc",
                {"fields": "id,name,mimeType,size", **ALL},
                response={"id": "1Doc", "name": "Plan", "mimeType": "application/vnd.google-apps.document"},
            ),
            Call("GET", f"{FILES}/1Doc/export", {"mimeType": DOCX}, response="PK-docx"),
        ],
    )
    assert out == {
        "results": [
            {
                "result": {
                    "id": "1Doc",
                    "name": "Plan",
                    "mimeType": DOCX,
                    "size": 7,
                    "contentBase64": "UEstZG9jeA==",
                }
            }
        ]
    }


async def test_download_refuses_files_over_the_cap_before_fetching_them(tmp_path: Path) -> None:
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "google_drive_download_file",
        {"fileId": "1Big"},
        [
            Call(
                "GET",
                f"{FILES}/1Big",
                {"fields": "id,name,mimeType,size", **ALL},
                response={"id": "1Big", "name": "video.mp4", "mimeType": "video/mp4", "size": "5000001"},
            )
        ],
    )
    assert out == {
        "results": [{"error": "'video.mp4' is 5000001 bytes; this tool returns at most 5000000 bytes."}]
    }


async def test_download_refuses_an_export_over_the_cap(tmp_path: Path) -> None:
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "google_drive_download_file",
        {"fileId": "1Deck"},
        [
            Call(
                "GET",
                f"{FILES}/1Deck",
                {"fields": "id,name,mimeType,size", **ALL},
                response={
                    "id": "1Deck",
                    "name": "Deck",
                    "mimeType": "application/vnd.google-apps.presentation",
                },
            ),
            Call("GET", f"{FILES}/1Deck/export", {"mimeType": "application/pdf"}, response="x" * 5_000_001),
        ],
    )
    assert out == {
        "results": [
            {"error": "'Deck' is 5000001 bytes as application/pdf; this tool returns at most 5000000 bytes."}
        ]
    }
