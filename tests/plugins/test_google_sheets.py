"""Google Sheets tools against a fake sheets.googleapis.com answering with the documented
Spreadsheet / ValueRange / UpdateValuesResponse bodies."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from workbench_plugins.google_sheets import tools as google_sheets_tools

from tests.plugins.catalog_support import Call, Case, Plugin, check_catalog, run_case, run_tool

PLUGIN = Plugin("google-sheets")

SID = "1BxiMVs0XRA5nFMdKvBdBZjgmUUqptlbs74OgvE2upms"
S = f"https://sheets.googleapis.com/v4/spreadsheets/{SID}"
URL = f"https://docs.google.com/spreadsheets/d/{SID}/edit"
ROWS = [["Item", "Cost", "Stocked", "Ship Date"], ["Wheel", "$20.50", "4", "3/1/2016"]]

CASES = [
    Case(
        "sheets_create_spreadsheet",
        {"title": "Budget", "sheetTitles": ["2024", "2025"]},
        [
            Call(
                "POST",
                "https://sheets.googleapis.com/v4/spreadsheets",
                json={
                    "properties": {"title": "Budget"},
                    "sheets": [{"properties": {"title": "2024"}}, {"properties": {"title": "2025"}}],
                },
                response={
                    "spreadsheetId": SID,
                    "spreadsheetUrl": URL,
                    "properties": {"title": "Budget", "locale": "en_US"},
                    "sheets": [
                        {"properties": {"sheetId": 0, "title": "2024", "index": 0}},
                        {"properties": {"sheetId": 1, "title": "2025", "index": 1}},
                    ],
                },
            )
        ],
        {
            "spreadsheetId": SID,
            "spreadsheetUrl": URL,
            "properties_title": "Budget",
            "sheets": ["2024", "2025"],
        },
    ),
    Case(
        "sheets_get_spreadsheet",
        {"spreadsheetId": SID},
        [
            Call(
                "GET",
                S,
                {"fields": "spreadsheetId,spreadsheetUrl,properties.title,sheets.properties"},
                json=None,
                response={
                    "spreadsheetId": SID,
                    "spreadsheetUrl": URL,
                    "properties": {"title": "Budget"},
                    "sheets": [
                        {
                            "properties": {
                                "sheetId": 0,
                                "title": "Sheet1",
                                "index": 0,
                                "sheetType": "GRID",
                                "gridProperties": {"rowCount": 1000, "columnCount": 26},
                            }
                        }
                    ],
                },
            )
        ],
        {
            "spreadsheetId": SID,
            "spreadsheetUrl": URL,
            "properties_title": "Budget",
            "sheets": [
                {
                    "sheetId": 0,
                    "title": "Sheet1",
                    "index": 0,
                    "gridProperties_rowCount": 1000,
                    "gridProperties_columnCount": 26,
                }
            ],
        },
    ),
    Case(
        "sheets_read_range",
        {"spreadsheetId": SID, "range": "Sheet1!A1:D5"},
        [
            Call(
                "GET",
                f"{S}/values/Sheet1!A1:D5",
                {"valueRenderOption": "FORMATTED_VALUE"},
                response={"range": "Sheet1!A1:D5", "majorDimension": "ROWS", "values": ROWS},
            )
        ],
        {"range": "Sheet1!A1:D5", "values": ROWS, "rowCount": 2},
    ),
    Case(
        "sheets_batch_read",
        {"spreadsheetId": SID, "ranges": ["Sheet1!B:B", "Sheet1!D:D"]},
        [
            Call(
                "GET",
                f"{S}/values:batchGet",
                {"ranges": ["Sheet1!B:B", "Sheet1!D:D"]},
                response={
                    "spreadsheetId": SID,
                    "valueRanges": [
                        {
                            "range": "Sheet1!B1:B1000",
                            "majorDimension": "ROWS",
                            "values": [["Cost"], ["$20.50"]],
                        },
                        {
                            "range": "Sheet1!D1:D1000",
                            "majorDimension": "ROWS",
                            "values": [["Ship Date"], ["3/1/2016"]],
                        },
                    ],
                },
            )
        ],
        {
            "valueRanges": [
                {"range": "Sheet1!B1:B1000", "values": [["Cost"], ["$20.50"]], "rowCount": 2},
                {"range": "Sheet1!D1:D1000", "values": [["Ship Date"], ["3/1/2016"]], "rowCount": 2},
            ]
        },
    ),
    Case(
        "sheets_write_range",
        {
            "spreadsheetId": SID,
            "range": "'Q3 numbers'!A1:D2",
            "values": [["Door", "$15", 2, "3/15/2016"], ["Engine", "$100", 1, "=TODAY()"]],
        },
        [
            Call(
                "PUT",
                f"{S}/values/'Q3 numbers'!A1:D2",
                {"valueInputOption": "USER_ENTERED"},
                json={
                    "range": "'Q3 numbers'!A1:D2",
                    "majorDimension": "ROWS",
                    "values": [["Door", "$15", 2, "3/15/2016"], ["Engine", "$100", 1, "=TODAY()"]],
                },
                response={
                    "spreadsheetId": SID,
                    "updatedRange": "'Q3 numbers'!A1:D2",
                    "updatedRows": 2,
                    "updatedColumns": 4,
                    "updatedCells": 8,
                },
            )
        ],
        {"updatedRange": "'Q3 numbers'!A1:D2", "updatedRows": 2, "updatedColumns": 4, "updatedCells": 8},
    ),
    Case(
        "sheets_append_rows",
        {
            "spreadsheetId": SID,
            "range": "Sheet1!A:D",
            "values": [["Door", "$15", "2", "3/15/2016"]],
            "valueInputOption": "RAW",
        },
        [
            Call(
                "POST",
                f"{S}/values/Sheet1!A:D:append",
                {"valueInputOption": "RAW", "insertDataOption": "INSERT_ROWS"},
                json={"majorDimension": "ROWS", "values": [["Door", "$15", "2", "3/15/2016"]]},
                response={
                    "spreadsheetId": SID,
                    "tableRange": "Sheet1!A1:D2",
                    "updates": {
                        "spreadsheetId": SID,
                        "updatedRange": "Sheet1!A3:D3",
                        "updatedRows": 1,
                        "updatedColumns": 4,
                        "updatedCells": 4,
                    },
                },
            )
        ],
        {
            "tableRange": "Sheet1!A1:D2",
            "updatedRange": "Sheet1!A3:D3",
            "updatedRows": 1,
            "updatedColumns": 4,
            "updatedCells": 4,
        },
    ),
    Case(
        "sheets_clear_range",
        {"spreadsheetId": SID, "range": "Sheet1!A2:D"},
        [
            Call(
                "POST",
                f"{S}/values/Sheet1!A2:D:clear",
                json={},
                response={"spreadsheetId": SID, "clearedRange": "Sheet1!A2:D1000"},
            )
        ],
        {"spreadsheetId": SID, "clearedRange": "Sheet1!A2:D1000"},
    ),
    Case(
        "sheets_batch_write",
        {
            "spreadsheetId": SID,
            "data": [
                {"range": "Sheet1!A1", "values": [["x"]]},
                {"range": "Sheet1!B1:B2", "values": [[1], [2]]},
            ],
        },
        [
            Call(
                "POST",
                f"{S}/values:batchUpdate",
                json={
                    "valueInputOption": "USER_ENTERED",
                    "data": [
                        {"range": "Sheet1!A1", "majorDimension": "ROWS", "values": [["x"]]},
                        {"range": "Sheet1!B1:B2", "majorDimension": "ROWS", "values": [[1], [2]]},
                    ],
                },
                response={
                    "spreadsheetId": SID,
                    "totalUpdatedRows": 2,
                    "totalUpdatedColumns": 2,
                    "totalUpdatedCells": 3,
                    "totalUpdatedSheets": 1,
                    "responses": [],
                },
            )
        ],
        {"totalUpdatedRows": 2, "totalUpdatedColumns": 2, "totalUpdatedCells": 3, "totalUpdatedSheets": 1},
    ),
    Case(
        "sheets_add_sheet",
        {"spreadsheetId": SID, "title": "Deposits", "rows": 20, "columns": 12},
        [
            Call(
                "POST",
                f"{S}:batchUpdate",
                json={
                    "requests": [
                        {
                            "addSheet": {
                                "properties": {
                                    "title": "Deposits",
                                    "gridProperties": {"rowCount": 20, "columnCount": 12},
                                }
                            }
                        }
                    ]
                },
                response={
                    "spreadsheetId": SID,
                    "replies": [
                        {
                            "addSheet": {
                                "properties": {
                                    "sheetId": 123456,
                                    "title": "Deposits",
                                    "index": 1,
                                    "sheetType": "GRID",
                                    "gridProperties": {"rowCount": 20, "columnCount": 12},
                                }
                            }
                        }
                    ],
                },
            )
        ],
        {"sheetId": 123456, "title": "Deposits", "index": 1},
    ),
    Case(
        "sheets_delete_sheet",
        {"spreadsheetId": SID, "sheetId": 123456},
        [
            Call(
                "POST",
                f"{S}:batchUpdate",
                json={"requests": [{"deleteSheet": {"sheetId": 123456}}]},
                response={"spreadsheetId": SID, "replies": [{}]},
            )
        ],
        {"spreadsheetId": SID, "deletedSheetId": 123456},
    ),
]


def test_every_tool_has_a_case() -> None:
    from workbench_plugins.google_sheets.tools import TOOLS

    assert sorted(t.name for t in TOOLS) == sorted(c.tool for c in CASES)


def test_catalog_entries_are_well_formed() -> None:
    check_catalog("google-sheets", google_sheets_tools)


@pytest.mark.parametrize("case", CASES, ids=str)
async def test_tool_request_and_result(tmp_path: Path, case: Case) -> None:
    await run_case(PLUGIN, tmp_path, case)


async def test_range_is_one_encoded_path_segment(tmp_path: Path) -> None:
    """A sheet name with '/', '#' or '?' must not break the URL."""

    def check(request: httpx.Request) -> None:
        assert (
            request.url.raw_path
            == f"/v4/spreadsheets/{SID}/values/%27a%2Fb%23c%3F%27%21A1?valueRenderOption=FORMATTED_VALUE".encode()
        )

    await run_tool(
        PLUGIN,
        tmp_path,
        "sheets_read_range",
        {"spreadsheetId": SID, "range": "'a/b#c?'!A1"},
        [
            Call(
                "GET",
                f"{S}/values/'a/b#c?'!A1",
                {"valueRenderOption": "FORMATTED_VALUE"},
                response={"range": "'a/b#c?'!A1"},
                check=check,
            )
        ],
    )


async def test_upstream_400_becomes_tool_error(tmp_path: Path) -> None:
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "sheets_read_range",
        {"spreadsheetId": SID, "range": "Nope!A1"},
        [
            Call(
                "GET",
                f"{S}/values/Nope!A1",
                {"valueRenderOption": "FORMATTED_VALUE"},
                status=400,
                response={
                    "error": {
                        "code": 400,
                        "message": "Unable to parse range: Nope!A1",
                        "status": "INVALID_ARGUMENT",
                    }
                },
            )
        ],
    )
    assert out == {"results": [{"error": "google-sheets API error 400: Unable to parse range: Nope!A1"}]}
