"""Google Sheets API v4 tools (https://developers.google.com/sheets/api/reference/rest).

Ranges are A1 notation, e.g. "Sheet1!A1:D20" or "'Q3 numbers'!A:A". Values are written with
`valueInputOption=USER_ENTERED` by default, so "=SUM(A1:A3)" becomes a formula and "3.5" a
number, as if typed in the UI.
"""

from __future__ import annotations

from typing import Any, Literal
from urllib.parse import quote

from workbench.sdk import api, compact, pick
from workbench.tools import ArgsModel, Field, ToolContext, tool

# Every tool works with the one scope the manifest asks for (the discovery document lists it
# for each method called; tests/plugins/test_definitions.py checks that).
_SCOPES = ("https://www.googleapis.com/auth/spreadsheets",)

S = "/v4/spreadsheets"
_MAX_ROWS = 2_000

Cell = str | int | float | bool | None
InputOption = Literal["USER_ENTERED", "RAW"]


def _range(a1: str) -> str:
    return quote(a1, safe="")


def _values(vr: Any) -> dict[str, Any]:
    rows = (vr or {}).get("values") or []
    out: dict[str, Any] = {
        "range": (vr or {}).get("range"),
        "values": rows[:_MAX_ROWS],
        "rowCount": len(rows),
    }
    if len(rows) > _MAX_ROWS:
        out["truncated"] = f"only the first {_MAX_ROWS} rows are returned; read a narrower range"
    return out


class SheetRef(ArgsModel):
    spreadsheetId: str = Field(
        description="Spreadsheet id: from its URL (/spreadsheets/d/<id>/edit), or its file id from google_drive_search"
    )


class Create(ArgsModel):
    title: str = Field(min_length=1, description="Spreadsheet title")
    sheetTitles: list[str] | None = Field(
        default=None, description="Tab names to create (default: one 'Sheet1')"
    )


@tool(
    "sheets_create_spreadsheet",
    "Create a new Google Sheets spreadsheet.",
    Create,
    scopes=_SCOPES,
    keywords=("new", "workbook", "make", "blank", "start"),
)
async def create_spreadsheet(args: Create, ctx: ToolContext) -> Any:
    body = compact(
        {
            "properties": {"title": args.title},
            "sheets": [{"properties": {"title": t}} for t in args.sheetTitles] if args.sheetTitles else None,
        }
    )
    created = await api(ctx, "POST", S, json=body)
    return {
        **pick(created, "spreadsheetId", "spreadsheetUrl", "properties.title"),
        "sheets": [(s.get("properties") or {}).get("title") for s in created.get("sheets", [])],
    }


@tool(
    "sheets_get_spreadsheet",
    "Get a spreadsheet's title and its sheets (tabs) with their ids and sizes.",
    SheetRef,
    scopes=_SCOPES,
    keywords=("tabs", "metadata", "info", "structure", "title", "worksheets"),
)
async def get_spreadsheet(args: SheetRef, ctx: ToolContext) -> Any:
    meta = await api(
        ctx,
        "GET",
        f"{S}/{args.spreadsheetId}",
        params={"fields": "spreadsheetId,spreadsheetUrl,properties.title,sheets.properties"},
    )
    sheets = [
        pick(
            s.get("properties"),
            "sheetId",
            "title",
            "index",
            "gridProperties.rowCount",
            "gridProperties.columnCount",
        )
        for s in meta.get("sheets", [])
    ]
    return {**pick(meta, "spreadsheetId", "spreadsheetUrl", "properties.title"), "sheets": sheets}


class ReadRange(SheetRef):
    range: str = Field(description="A1 range, e.g. 'Sheet1!A1:D20'")
    valueRender: Literal["FORMATTED_VALUE", "UNFORMATTED_VALUE", "FORMULA"] = Field(
        default="FORMATTED_VALUE", description="How values are returned"
    )


@tool(
    "sheets_read_range",
    "Read cell values from a range of a Google Sheet (rows of cells).",
    ReadRange,
    scopes=_SCOPES,
    keywords=("cells", "values", "data", "get", "rows", "columns", "open", "view", "table"),
)
async def read_range(args: ReadRange, ctx: ToolContext) -> Any:
    vr = await api(
        ctx,
        "GET",
        f"{S}/{args.spreadsheetId}/values/{_range(args.range)}",
        params={"valueRenderOption": args.valueRender},
    )
    return _values(vr)


class BatchRead(SheetRef):
    ranges: list[str] = Field(min_length=1, description="A1 ranges to read")


@tool(
    "sheets_batch_read",
    "Read several ranges of a Google Sheet in one call.",
    BatchRead,
    scopes=_SCOPES,
    keywords=("multiple ranges", "several", "many", "at once", "bulk", "cells"),
)
async def batch_read(args: BatchRead, ctx: ToolContext) -> Any:
    found = await api(ctx, "GET", f"{S}/{args.spreadsheetId}/values:batchGet", params={"ranges": args.ranges})
    return {"valueRanges": [_values(vr) for vr in found.get("valueRanges", [])]}


class WriteRange(SheetRef):
    range: str = Field(description="A1 range to write, e.g. 'Sheet1!A1' (grows to fit the values)")
    values: list[list[Cell]] = Field(min_length=1, description="Rows of cell values")
    valueInputOption: InputOption = Field(
        default="USER_ENTERED", description="Parse like typed input, or RAW"
    )


_UPDATED = ("updatedRange", "updatedRows", "updatedColumns", "updatedCells")


@tool(
    "sheets_write_range",
    "Write (update, overwrite) cell values in a range of a Google Sheet.",
    WriteRange,
    scopes=_SCOPES,
    keywords=("update", "set", "fill", "put", "enter", "cells", "values"),
)
async def write_range(args: WriteRange, ctx: ToolContext) -> Any:
    done = await api(
        ctx,
        "PUT",
        f"{S}/{args.spreadsheetId}/values/{_range(args.range)}",
        params={"valueInputOption": args.valueInputOption},
        json={"range": args.range, "majorDimension": "ROWS", "values": args.values},
    )
    return pick(done, *_UPDATED)


class AppendRows(SheetRef):
    range: str = Field(description="Table to append to, e.g. 'Sheet1!A:D' or 'Sheet1'")
    values: list[list[Cell]] = Field(min_length=1, description="Rows to add after the table's last row")
    valueInputOption: InputOption = Field(
        default="USER_ENTERED", description="Parse like typed input, or RAW"
    )


@tool(
    "sheets_append_rows",
    "Append (add) rows to the end of a table in a Google Sheet.",
    AppendRows,
    scopes=_SCOPES,
    keywords=("add", "insert", "new rows", "log", "record", "at the end"),
)
async def append_rows(args: AppendRows, ctx: ToolContext) -> Any:
    done = await api(
        ctx,
        "POST",
        f"{S}/{args.spreadsheetId}/values/{_range(args.range)}:append",
        params={"valueInputOption": args.valueInputOption, "insertDataOption": "INSERT_ROWS"},
        json={"majorDimension": "ROWS", "values": args.values},
    )
    return {"tableRange": done.get("tableRange"), **pick(done.get("updates"), *_UPDATED)}


class ClearRange(SheetRef):
    range: str = Field(description="A1 range to clear (values only; formatting stays)")


@tool(
    "sheets_clear_range",
    "Clear (erase) the values in a range of a Google Sheet.",
    ClearRange,
    scopes=_SCOPES,
    keywords=("erase", "wipe", "empty", "blank", "reset", "remove values", "cells"),
)
async def clear_range(args: ClearRange, ctx: ToolContext) -> Any:
    done = await api(ctx, "POST", f"{S}/{args.spreadsheetId}/values/{_range(args.range)}:clear", json={})
    return pick(done, "spreadsheetId", "clearedRange")


class RangeValues(ArgsModel):
    range: str = Field(description="A1 range")
    values: list[list[Cell]] = Field(description="Rows of cell values")


class BatchWrite(SheetRef):
    data: list[RangeValues] = Field(min_length=1, description="Ranges and the values to write to each")
    valueInputOption: InputOption = Field(
        default="USER_ENTERED", description="Parse like typed input, or RAW"
    )


@tool(
    "sheets_batch_write",
    "Write values to several ranges of a Google Sheet in one call.",
    BatchWrite,
    scopes=_SCOPES,
    keywords=("multiple ranges", "several", "bulk", "at once", "many cells"),
)
async def batch_write(args: BatchWrite, ctx: ToolContext) -> Any:
    done = await api(
        ctx,
        "POST",
        f"{S}/{args.spreadsheetId}/values:batchUpdate",
        json={
            "valueInputOption": args.valueInputOption,
            "data": [{"range": d.range, "majorDimension": "ROWS", "values": d.values} for d in args.data],
        },
    )
    return pick(done, "totalUpdatedRows", "totalUpdatedColumns", "totalUpdatedCells", "totalUpdatedSheets")


class AddSheet(SheetRef):
    title: str = Field(min_length=1, description="Name of the new sheet (tab)")
    rows: int | None = Field(default=None, ge=1, description="Row count (default 1000)")
    columns: int | None = Field(default=None, ge=1, description="Column count (default 26)")


@tool(
    "sheets_add_sheet",
    "Add a new sheet (tab) to a Google Sheets spreadsheet.",
    AddSheet,
    scopes=_SCOPES,
    keywords=("new tab", "worksheet", "add tab", "page"),
)
async def add_sheet(args: AddSheet, ctx: ToolContext) -> Any:
    grid = compact({"rowCount": args.rows, "columnCount": args.columns})
    props = compact({"title": args.title, "gridProperties": grid or None})
    done = await api(
        ctx,
        "POST",
        f"{S}/{args.spreadsheetId}:batchUpdate",
        json={"requests": [{"addSheet": {"properties": props}}]},
    )
    added = ((done.get("replies") or [{}])[0].get("addSheet") or {}).get("properties")
    return pick(added, "sheetId", "title", "index")


class DeleteSheet(SheetRef):
    sheetId: int = Field(description="Numeric sheet id (sheets_get_spreadsheet), not the title")


@tool(
    "sheets_delete_sheet",
    "Delete a sheet (tab) from a Google Sheets spreadsheet.",
    DeleteSheet,
    scopes=_SCOPES,
    keywords=("remove tab", "worksheet", "drop", "erase", "get rid"),
)
async def delete_sheet(args: DeleteSheet, ctx: ToolContext) -> Any:
    await api(
        ctx,
        "POST",
        f"{S}/{args.spreadsheetId}:batchUpdate",
        json={"requests": [{"deleteSheet": {"sheetId": args.sheetId}}]},
    )
    return {"spreadsheetId": args.spreadsheetId, "deletedSheetId": args.sheetId}


TOOLS = [
    create_spreadsheet,
    get_spreadsheet,
    read_range,
    batch_read,
    write_range,
    append_rows,
    clear_range,
    batch_write,
    add_sheet,
    delete_sheet,
]
