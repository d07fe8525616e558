"""Airtable Web API tools (https://airtable.com/developers/web/api/introduction).

Records live at /v0/{baseId}/{tableIdOrName}; lists page with `pageSize` (max 100) and an
`offset` token; writes take at most 10 records per request.
"""

from __future__ import annotations

from typing import Any, Literal
from urllib.parse import quote

from workbench.sdk import api, pick, pick_many
from workbench.tools import ArgsModel, Field, ToolContext, tool

_MAX_WRITE = 10


def _table_path(base_id: str, table: str) -> str:
    return f"/v0/{base_id}/{quote(table, safe='')}"


def _records(body: Any) -> dict[str, Any]:
    return {
        "records": pick_many(body.get("records"), "id", "createdTime", "fields"),
        "nextCursor": body.get("offset"),
    }


class Table(ArgsModel):
    base_id: str = Field(description="Base id (app...), from airtable_list_bases")
    table: str = Field(description="Table id (tbl...) or table name")


class Cursor(ArgsModel):
    cursor: str | None = Field(default=None, description="nextCursor (offset) from the previous call")


@tool(
    "airtable_list_bases",
    "List the Airtable bases the user can access.",
    Cursor,
    scopes=("schema.bases:read",),
    keywords=("show", "workspaces", "databases", "apps"),
)
async def list_bases(args: Cursor, ctx: ToolContext) -> Any:
    body = await api(ctx, "GET", "/v0/meta/bases", params={"offset": args.cursor})
    return {
        "bases": pick_many(body.get("bases"), "id", "name", "permissionLevel"),
        "nextCursor": body.get("offset"),
    }


class BaseId(ArgsModel):
    base_id: str = Field(description="Base id (app...), from airtable_list_bases")


@tool(
    "airtable_get_base_schema",
    "Get an Airtable base's tables with their fields (names, types) and views.",
    BaseId,
    scopes=("schema.bases:read",),
    keywords=("structure", "fields", "columns", "layout", "metadata", "describe"),
)
async def get_base_schema(args: BaseId, ctx: ToolContext) -> Any:
    body = await api(ctx, "GET", f"/v0/meta/bases/{args.base_id}/tables")
    return {
        "tables": [
            {
                **pick(t, "id", "name", "description", "primaryFieldId"),
                "fields": pick_many(t.get("fields"), "id", "name", "type"),
                "views": pick_many(t.get("views"), "id", "name", "type"),
            }
            for t in body.get("tables") or []
        ]
    }


class ListRecords(Table, Cursor):
    perPage: int = Field(default=50, ge=1, le=100, description="Records per page (max 100)")
    view: str | None = Field(default=None, description="Only records visible in this view, in its order")
    filter_formula: str | None = Field(
        default=None, description="Airtable formula records must satisfy, e.g. {Status} = 'Done'"
    )
    fields: list[str] | None = Field(default=None, description="Only these fields (default: all)")
    sort_field: str | None = Field(default=None, description="Sort by this field")
    sort_direction: Literal["asc", "desc"] = Field(default="asc", description="Sort direction")


@tool(
    "airtable_list_records",
    "List records (rows) of an Airtable table, optionally filtered by a formula, view or sort.",
    ListRecords,
    scopes=("data.records:read",),
    keywords=("show", "rows", "entries", "browse", "filter", "view", "table data"),
)
async def list_records(args: ListRecords, ctx: ToolContext) -> Any:
    return _records(
        await api(
            ctx, "GET", _table_path(args.base_id, args.table), params=_list_params(args, args.filter_formula)
        )
    )


def _list_params(args: ListRecords, formula: str | None) -> dict[str, Any]:
    # httpx takes a list value as a repeated key, which is how Airtable reads fields[].
    params: dict[str, Any] = {
        "pageSize": args.perPage,
        "offset": args.cursor,
        "view": args.view,
        "filterByFormula": formula,
        "fields[]": args.fields or None,
    }
    if args.sort_field:
        params["sort[0][field]"] = args.sort_field
        params["sort[0][direction]"] = args.sort_direction
    return params


class SearchRecords(ListRecords):
    field: str = Field(description="Field (column) name to search in")
    query: str = Field(min_length=1, description="Text to find (case-insensitive substring)")


@tool(
    "airtable_search_records",
    "Find Airtable records whose field contains some text (case-insensitive).",
    SearchRecords,
    scopes=("data.records:read",),
    keywords=("find", "look up", "lookup", "rows", "containing", "matching", "entries"),
)
async def search_records(args: SearchRecords, ctx: ToolContext) -> Any:
    needle = args.query.replace("\\", "\\\\").replace('"', '\\"')
    field = args.field.replace("}", "\\}")
    formula = f'SEARCH(LOWER("{needle}"), LOWER({{{field}}}))'
    if args.filter_formula:
        formula = f"AND({formula}, {args.filter_formula})"
    return _records(
        await api(ctx, "GET", _table_path(args.base_id, args.table), params=_list_params(args, formula))
    )


class RecordRef(Table):
    record_id: str = Field(
        description="Record id (rec...), from airtable_list_records or airtable_search_records"
    )


@tool(
    "airtable_get_record",
    "Get one Airtable record with all its fields.",
    RecordRef,
    scopes=("data.records:read",),
    keywords=("show", "row", "entry", "details", "open", "fetch"),
)
async def get_record(args: RecordRef, ctx: ToolContext) -> Any:
    rec = await api(ctx, "GET", f"{_table_path(args.base_id, args.table)}/{args.record_id}")
    return pick(rec, "id", "createdTime", "fields")


class CreateRecords(Table):
    records: list[dict[str, Any]] = Field(
        min_length=1, max_length=_MAX_WRITE, description="Up to 10 records, each a {field name: value} object"
    )
    typecast: bool = Field(default=False, description="Let Airtable convert strings to the fields' types")


@tool(
    "airtable_create_records",
    "Create up to 10 records (rows) in an Airtable table.",
    CreateRecords,
    scopes=("data.records:write",),
    keywords=("add", "insert", "new", "rows", "entries", "append"),
)
async def create_records(args: CreateRecords, ctx: ToolContext) -> Any:
    body = {"records": [{"fields": f} for f in args.records], "typecast": args.typecast}
    return _records(await api(ctx, "POST", _table_path(args.base_id, args.table), json=body))


class RecordUpdate(ArgsModel):
    id: str = Field(description="Record id (rec...), from airtable_list_records or airtable_search_records")
    fields: dict[str, Any] = Field(description="Fields to change; others are left as they are")


class UpdateRecords(Table):
    records: list[RecordUpdate] = Field(min_length=1, max_length=_MAX_WRITE, description="Up to 10 records")
    typecast: bool = Field(default=False, description="Let Airtable convert strings to the fields' types")


@tool(
    "airtable_update_records",
    "Update fields of up to 10 Airtable records (others keep their values).",
    UpdateRecords,
    scopes=("data.records:write",),
    keywords=("edit", "change", "modify", "fix", "set", "rows", "entries", "values"),
)
async def update_records(args: UpdateRecords, ctx: ToolContext) -> Any:
    body = {"records": [r.model_dump() for r in args.records], "typecast": args.typecast}
    return _records(await api(ctx, "PATCH", _table_path(args.base_id, args.table), json=body))


class UpsertRecords(CreateRecords):
    merge_on: list[str] = Field(
        min_length=1,
        max_length=3,
        description="Field names that identify a record (1-3); match updates, else create",
    )


@tool(
    "airtable_upsert_records",
    "Create or update up to 10 Airtable records, matching existing ones on key fields.",
    UpsertRecords,
    scopes=("data.records:write",),
    keywords=("insert or update", "sync", "merge", "match", "dedupe", "rows"),
)
async def upsert_records(args: UpsertRecords, ctx: ToolContext) -> Any:
    body = {
        "performUpsert": {"fieldsToMergeOn": args.merge_on},
        "records": [{"fields": f} for f in args.records],
        "typecast": args.typecast,
    }
    res = await api(ctx, "PATCH", _table_path(args.base_id, args.table), json=body)
    return {
        "records": pick_many(res.get("records"), "id", "createdTime", "fields"),
        "createdRecords": res.get("createdRecords", []),
        "updatedRecords": res.get("updatedRecords", []),
    }


class DeleteRecords(Table):
    record_ids: list[str] = Field(
        min_length=1,
        max_length=_MAX_WRITE,
        description="Up to 10 record ids (rec...), from airtable_list_records or airtable_search_records",
    )


@tool(
    "airtable_delete_records",
    "Delete up to 10 Airtable records.",
    DeleteRecords,
    scopes=("data.records:write",),
    keywords=("remove", "erase", "drop", "get rid", "rows", "entries"),
)
async def delete_records(args: DeleteRecords, ctx: ToolContext) -> Any:
    res = await api(
        ctx, "DELETE", _table_path(args.base_id, args.table), params={"records[]": args.record_ids}
    )
    return {"deleted": [r.get("id") for r in res.get("records") or [] if r.get("deleted")]}


class FieldSpec(ArgsModel):
    name: str = Field(description="Field name")
    type: str = Field(
        default="singleLineText",
        description="Airtable field type, e.g. singleLineText, multilineText, number, checkbox, date, email, "
        "singleSelect",
    )
    description: str | None = Field(default=None, description="Field description")
    options: dict[str, Any] | None = Field(
        default=None,
        description="Type options, e.g. {'precision': 2} for number, {'choices': [{'name': 'A'}]}",
    )


def _field_body(spec: FieldSpec) -> dict[str, Any]:
    return {k: v for k, v in spec.model_dump().items() if v is not None}


class CreateTable(BaseId):
    name: str = Field(description="Table name")
    fields: list[FieldSpec] = Field(min_length=1, description="Columns; the first one is the primary field")
    description: str | None = Field(default=None, description="Table description")


@tool(
    "airtable_create_table",
    "Create a table with the given fields (columns) in an Airtable base.",
    CreateTable,
    scopes=("schema.bases:write",),
    keywords=("new table", "add", "make", "sheet", "columns"),
)
async def create_table(args: CreateTable, ctx: ToolContext) -> Any:
    body: dict[str, Any] = {"name": args.name, "fields": [_field_body(f) for f in args.fields]}
    if args.description:
        body["description"] = args.description
    t = await api(ctx, "POST", f"/v0/meta/bases/{args.base_id}/tables", json=body)
    return {
        **pick(t, "id", "name", "primaryFieldId"),
        "fields": pick_many(t.get("fields"), "id", "name", "type"),
    }


class CreateField(BaseId, FieldSpec):
    table_id: str = Field(description="Table id (tbl...), from airtable_get_base_schema")


@tool(
    "airtable_create_field",
    "Add a field (column) to an Airtable table.",
    CreateField,
    scopes=("schema.bases:write",),
    keywords=("new column", "add", "column", "attribute", "property"),
)
async def create_field(args: CreateField, ctx: ToolContext) -> Any:
    spec = FieldSpec(**args.model_dump(include={"name", "type", "description", "options"}))
    f = await api(
        ctx, "POST", f"/v0/meta/bases/{args.base_id}/tables/{args.table_id}/fields", json=_field_body(spec)
    )
    return pick(f, "id", "name", "type", "description")


def _comment(c: Any) -> dict[str, Any]:
    return {**pick(c, "id", "text", "createdTime"), "author": (c.get("author") or {}).get("name")}


class ListComments(RecordRef, Cursor):
    perPage: int = Field(default=50, ge=1, le=100, description="Comments per page (max 100)")


@tool(
    "airtable_list_comments",
    "List comments on an Airtable record, newest first.",
    ListComments,
    scopes=("data.recordComments:read",),
    keywords=("show", "discussion", "notes", "feedback", "row"),
)
async def list_comments(args: ListComments, ctx: ToolContext) -> Any:
    body = await api(
        ctx,
        "GET",
        f"{_table_path(args.base_id, args.table)}/{args.record_id}/comments",
        params={"pageSize": args.perPage, "offset": args.cursor},
    )
    return {"comments": [_comment(c) for c in body.get("comments") or []], "nextCursor": body.get("offset")}


class AddComment(RecordRef):
    text: str = Field(min_length=1, description="Comment text; mention someone with @[usrXXXX]")


@tool(
    "airtable_add_comment",
    "Add a comment to an Airtable record.",
    AddComment,
    scopes=("data.recordComments:write",),
    keywords=("note", "remark", "write", "post", "mention", "row"),
)
async def add_comment(args: AddComment, ctx: ToolContext) -> Any:
    c = await api(
        ctx,
        "POST",
        f"{_table_path(args.base_id, args.table)}/{args.record_id}/comments",
        json={"text": args.text},
    )
    return _comment(c)


TOOLS = [
    list_bases,
    get_base_schema,
    list_records,
    search_records,
    get_record,
    create_records,
    update_records,
    upsert_records,
    delete_records,
    create_table,
    create_field,
    list_comments,
    add_comment,
]
