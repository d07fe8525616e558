"""Salesforce REST API tools (https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/).

Requests go to the org's own host, `instance_url`, which Salesforce returns in the OAuth token
response (and again on every refresh): the manifest names it as the connection's API base
(`base_url_field`), so tools send relative paths through `ctx.http`. Errors come back as a list
`[{"message", "errorCode"}]`; an expired session (401 INVALID_SESSION_ID) is refreshed and
retried by the engine.
"""

from __future__ import annotations

from typing import Any

from workbench.sdk import UpstreamError, compact, pick_many
from workbench.tools import ArgsModel, Field, ToolContext, tool

API_VERSION = "v62.0"
_DATA = f"/services/data/{API_VERSION}"


def _detail(resp: Any) -> str:
    try:
        body = resp.json()
    except ValueError:
        return str(resp.text)[:500].strip()
    if isinstance(body, list) and body and isinstance(body[0], dict):
        return str(body[0].get("message") or body[0].get("errorCode") or body[0])[:500]
    if isinstance(body, dict):
        return str(body.get("message") or body.get("error_description") or body.get("error") or body)[:500]
    return str(body)[:500]


async def sf(ctx: ToolContext, method: str, path: str, *, params: Any = None, json: Any = None) -> Any:
    """Call `instance_url + path`; a path under /services/data is taken as is (pagination URLs)."""
    url = path if path.startswith("/services/") else _DATA + path
    resp = await ctx.http.request(method, url, params=compact(params), json=json)
    if resp.status_code >= 400:
        raise UpstreamError(ctx.integration, resp.status_code, _detail(resp))
    return resp.json() if resp.content else None


def _record(rec: dict[str, Any]) -> dict[str, Any]:
    """A record without Salesforce's `attributes` envelope (its type kept as `type`)."""
    out = {
        k: (_record(v) if isinstance(v, dict) and "attributes" in v else v)
        for k, v in rec.items()
        if k != "attributes"
    }
    kind = (rec.get("attributes") or {}).get("type")
    return {"type": kind, **out} if kind else out


class Query(ArgsModel):
    soql: str | None = Field(
        default=None,
        description="SOQL query, e.g. SELECT Id, Name FROM Account WHERE Industry = 'Energy' LIMIT 50",
    )
    cursor: str | None = Field(
        default=None, description="nextCursor from the previous call (fetches the next batch)"
    )


@tool(
    "salesforce_query",
    "Run a SOQL query on Salesforce and return the matching records (Accounts, Contacts, Opportunities...).",
    Query,
    scopes=("api",),
    keywords=("soql", "select", "records", "data", "find"),
)
async def query(args: Query, ctx: ToolContext) -> Any:
    if args.cursor:
        if not args.cursor.startswith(f"{_DATA}/query/"):
            raise ValueError("cursor must be a nextCursor returned by salesforce_query")
        body = await sf(ctx, "GET", args.cursor)
    elif args.soql:
        body = await sf(ctx, "GET", "/query", params={"q": args.soql})
    else:
        raise ValueError("Give soql (or a cursor to continue a previous query)")
    return {
        "totalSize": body.get("totalSize"),
        "records": [_record(r) for r in body.get("records") or []],
        "nextCursor": None if body.get("done", True) else body.get("nextRecordsUrl"),
    }


_SEARCH_FIELDS = {
    "Account": "Id,Name,Website,Phone",
    "Contact": "Id,Name,Email,Phone,AccountId",
    "Lead": "Id,Name,Email,Company,Status",
    "Opportunity": "Id,Name,StageName,Amount,CloseDate",
}


class Search(ArgsModel):
    text: str = Field(
        min_length=2, description="Words to find across record fields (names, emails, phones...)"
    )
    objects: list[str] = Field(
        default_factory=lambda: list(_SEARCH_FIELDS),
        description="Object types to search (default Account, Contact, Lead, Opportunity)",
    )
    limit: int = Field(default=20, ge=1, le=200, description="Maximum records in total")


@tool(
    "salesforce_search",
    "Full-text search Salesforce records (accounts, contacts, leads, opportunities) by keyword.",
    Search,
    scopes=("api",),
    keywords=("sosl", "find", "look up", "keyword"),
)
async def search(args: Search, ctx: ToolContext) -> Any:
    # parameterizedSearch takes the text as a plain parameter, so no SOSL escaping is needed.
    params: list[tuple[str, Any]] = [("q", args.text)]
    for obj in args.objects:
        params.append(("sobject", obj))
        params.append((f"{obj}.fields", _SEARCH_FIELDS.get(obj, "Id,Name")))
    params.append(("overallLimit", args.limit))
    resp = await ctx.http.request("GET", f"{_DATA}/parameterizedSearch/", params=params)
    if resp.status_code >= 400:
        raise UpstreamError(ctx.integration, resp.status_code, _detail(resp))
    return {"records": [_record(r) for r in resp.json().get("searchRecords") or []]}


class RecordRef(ArgsModel):
    object: str = Field(description="Object API name, e.g. Account, Contact, Opportunity, Case, MyObject__c")
    id: str = Field(description="Record id (15 or 18 characters)")


class GetRecord(RecordRef):
    fields: list[str] | None = Field(default=None, description="Field API names to return (default: all)")


@tool(
    "salesforce_get_record",
    "Get one Salesforce record by object type and id.",
    GetRecord,
    scopes=("api",),
    keywords=("show", "details", "view", "account", "contact", "lead", "opportunity"),
)
async def get_record(args: GetRecord, ctx: ToolContext) -> Any:
    params = {"fields": ",".join(args.fields)} if args.fields else None
    return _record(await sf(ctx, "GET", f"/sobjects/{args.object}/{args.id}", params=params))


class CreateRecord(ArgsModel):
    object: str = Field(description="Object API name, e.g. Lead, Contact, Task")
    fields: dict[str, Any] = Field(
        description="Field values by API name, e.g. {'LastName': 'Doe', 'Company': 'Acme'}"
    )


@tool(
    "salesforce_create_record",
    "Create a Salesforce record (lead, contact, account, task...).",
    CreateRecord,
    scopes=("api",),
    keywords=("new", "add", "lead", "contact", "account", "opportunity", "case"),
)
async def create_record(args: CreateRecord, ctx: ToolContext) -> Any:
    res = await sf(ctx, "POST", f"/sobjects/{args.object}", json=args.fields)
    return {"id": res.get("id"), "success": res.get("success"), "errors": res.get("errors") or []}


class UpdateRecord(RecordRef):
    fields: dict[str, Any] = Field(description="Field values to change, by API name")


@tool(
    "salesforce_update_record",
    "Update fields of a Salesforce record.",
    UpdateRecord,
    scopes=("api",),
    keywords=("edit", "change", "modify", "set", "fields"),
)
async def update_record(args: UpdateRecord, ctx: ToolContext) -> Any:
    await sf(ctx, "PATCH", f"/sobjects/{args.object}/{args.id}", json=args.fields)
    return {"id": args.id, "updated": True}


@tool(
    "salesforce_delete_record",
    "Delete a Salesforce record (moves it to the recycle bin).",
    RecordRef,
    scopes=("api",),
    keywords=("remove", "erase", "recycle", "get rid"),
)
async def delete_record(args: RecordRef, ctx: ToolContext) -> Any:
    await sf(ctx, "DELETE", f"/sobjects/{args.object}/{args.id}")
    return {"id": args.id, "deleted": True}


class ObjectName(ArgsModel):
    object: str = Field(description="Object API name, e.g. Opportunity")


@tool(
    "salesforce_describe_object",
    "Describe a Salesforce object: its fields (API names, labels, types, picklist values).",
    ObjectName,
    scopes=("api",),
    keywords=("schema", "fields", "metadata", "structure", "picklist"),
)
async def describe_object(args: ObjectName, ctx: ToolContext) -> Any:
    d = await sf(ctx, "GET", f"/sobjects/{args.object}/describe")
    fields = []
    for f in d.get("fields") or []:
        entry = {k: f.get(k) for k in ("name", "label", "type", "nillable", "createable", "updateable")}
        picks = [p.get("value") for p in f.get("picklistValues") or [] if p.get("active", True)]
        if picks:
            entry["picklistValues"] = picks
        if f.get("referenceTo"):
            entry["referenceTo"] = f["referenceTo"]
        fields.append(entry)
    return {"name": d.get("name"), "label": d.get("label"), "custom": d.get("custom"), "fields": fields}


class ListObjects(ArgsModel):
    custom_only: bool = Field(default=False, description="Only custom objects (names ending in __c)")


@tool(
    "salesforce_list_objects",
    "List the Salesforce object types (standard and custom) in the org.",
    ListObjects,
    scopes=("api",),
    keywords=("sobjects", "object types", "entities", "schema"),
)
async def list_objects(args: ListObjects, ctx: ToolContext) -> Any:
    body = await sf(ctx, "GET", "/sobjects")
    objs = [
        o
        for o in body.get("sobjects") or []
        if o.get("queryable") and (o.get("custom") or not args.custom_only)
    ]
    return {"objects": pick_many(objs, "name", "label", "custom")}


class Limit(ArgsModel):
    limit: int = Field(default=20, ge=1, le=200, description="How many to return")


@tool(
    "salesforce_list_recent",
    "List the Salesforce records the user viewed or changed most recently.",
    Limit,
    scopes=("api",),
    keywords=("recently viewed", "recent items", "history", "last"),
)
async def list_recent(args: Limit, ctx: ToolContext) -> Any:
    body = await sf(ctx, "GET", "/recent", params={"limit": args.limit})
    return {"records": [_record(r) for r in body or []]}


@tool(
    "salesforce_list_reports",
    "List Salesforce reports the user recently viewed (ids for running them).",
    Limit,
    scopes=("api",),
    keywords=("dashboards",),
)
async def list_reports(args: Limit, ctx: ToolContext) -> Any:
    body = await sf(ctx, "GET", "/analytics/reports")
    return {"reports": pick_many((body or [])[: args.limit], "id", "name")}


class RunReport(ArgsModel):
    report_id: str = Field(description="Report id (00O...), from salesforce_list_reports")
    max_rows: int = Field(default=200, ge=1, le=2000, description="Most detail rows to return")


@tool(
    "salesforce_run_report",
    "Run a Salesforce report and return its columns, rows and totals.",
    RunReport,
    scopes=("api",),
    keywords=("execute", "results", "totals", "numbers"),
)
async def run_report(args: RunReport, ctx: ToolContext) -> Any:
    body = await sf(ctx, "GET", f"/analytics/reports/{args.report_id}", params={"includeDetails": "true"})
    meta = body.get("reportMetadata") or {}
    info = (body.get("reportExtendedMetadata") or {}).get("detailColumnInfo") or {}
    columns = [(info.get(c) or {}).get("label", c) for c in meta.get("detailColumns") or []]
    rows: list[list[Any]] = []
    totals: list[Any] = []
    for key, cell in (body.get("factMap") or {}).items():
        for row in cell.get("rows") or []:
            rows.append([d.get("label") for d in row.get("dataCells") or []])
        if key == "T!T":
            totals = [a.get("label") for a in cell.get("aggregates") or []]
    return {
        "name": meta.get("name"),
        "columns": columns,
        "rows": rows[: args.max_rows],
        "rowCount": len(rows),
        "totals": totals,
        "allData": body.get("allData"),
    }


TOOLS = [
    query,
    search,
    get_record,
    create_record,
    update_record,
    delete_record,
    describe_object,
    list_objects,
    list_recent,
    list_reports,
    run_report,
]
