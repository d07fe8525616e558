"""Apache Superset REST API tools (https://superset.apache.org/docs/api).

Auth: POST /api/v1/security/login {username, password, provider: "db"} gives a JWT access token,
sent as `Authorization: Bearer` to the connection's own base URL; it is reused (per process) until
a minute before its `exp`, so a batch of tools logs in once. Writes (SQL Lab
execute) also need a CSRF token: GET /api/v1/security/csrf_token/ returns it and sets the session
cookie it is bound to; the POST carries both plus a Referer (Flask-WTF checks it over HTTPS).

`superset_export_csv` runs the SQL with POST /api/v1/sqllab/execute/ (synchronously, under a
client_id we choose) and downloads the result as CSV from GET /api/v1/sqllab/export/<client_id>/
— Superset's own CSV rendering, the same as SQL Lab's "Download to CSV", which needs the user's
`can_export_csv on SQLLab` permission. Column names come from the execute response.

List endpoints take a Rison-encoded `q` (page is 0-based) and answer `{count, result}`.
"""

from __future__ import annotations

import asyncio
import base64
import csv
import hashlib
import io
import json as json_lib
import re
import secrets
import time
from collections.abc import Generator, Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

import httpx
from workbench.sdk import UpstreamError, compact
from workbench.tools import ArgsModel, Field, ToolContext, tool

__all__ = ["TOOLS", "new_client_id", "probe", "rison"]


def new_client_id() -> str:
    """SQL Lab's client_id column holds 11 characters."""
    return secrets.token_urlsafe(8)[:11]


# A Rison identifier (written bare): no reserved characters, not starting with a digit or '-'.
_RISON_ID = re.compile(r"[A-Za-z_./~][A-Za-z0-9_./~-]*")


def rison(value: Any) -> str:
    """Rison encoding (what Superset's `q` parameters take); non-identifier strings are quoted."""
    if value is True:
        return "!t"
    if value is False:
        return "!f"
    if value is None:
        return "!n"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        if _RISON_ID.fullmatch(value):
            return value
        return "'" + value.replace("!", "!!").replace("'", "!'") + "'"
    if isinstance(value, dict):
        return "(" + ",".join(f"{k}:{rison(v)}" for k, v in value.items()) + ")"
    if isinstance(value, list | tuple):
        return "!(" + ",".join(rison(v) for v in value) + ")"
    raise TypeError(f"cannot rison-encode {type(value).__name__}")


class _Bearer(httpx.Auth):
    def __init__(self, token: str) -> None:
        self._token = token

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["Authorization"] = f"Bearer {self._token}"
        yield request


def _detail(resp: httpx.Response) -> str:
    try:
        body = resp.json()
    except ValueError:
        return resp.text[:500].strip()
    if isinstance(body, dict):
        errors = body.get("errors")
        if isinstance(errors, list) and errors and isinstance(errors[0], dict):
            return str(errors[0].get("message") or errors[0])[:500]
        for key in ("message", "msg", "error"):
            if body.get(key):
                return str(body[key])[:500]
    return str(body)[:500]


# Access tokens by (deployment, user, password digest), reused until a minute before they expire:
# Superset rate-limits its login endpoint, and an agent's batch may run several tools at once.
# Process memory only; a 401 on a reused token drops it and logs in again once.
_TOKENS: dict[str, tuple[str, float]] = {}
_LOCKS: dict[tuple[int, str], asyncio.Lock] = {}
_REUSE_MARGIN = 60.0
_DEFAULT_TTL = 300.0


def _cache_key(user_id: str, base: str, cred: Mapping[str, Any]) -> str:
    raw = "\0".join((user_id, base, str(cred.get("username")), str(cred.get("password"))))
    return hashlib.sha256(raw.encode()).hexdigest()


def _jwt_exp(token: str) -> float | None:
    try:
        payload = token.split(".")[1]
        claims = json_lib.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        return float(claims["exp"])
    except (IndexError, ValueError, KeyError, TypeError):
        return None


class Session:
    """A logged-in conversation with a Superset deployment, for the length of a tool call."""

    def __init__(self, ctx: ToolContext, base: str, cred: Mapping[str, Any]) -> None:
        self.ctx, self.base, self._cred = ctx, base, cred
        self._key = _cache_key(str(getattr(ctx, "user_id", "")), base, cred)
        self._auth: _Bearer | None = None
        self._reused = False
        self._csrf: str | None = None

    async def login(self, *, fresh: bool = False) -> None:
        lock = _LOCKS.setdefault((id(asyncio.get_running_loop()), self._key), asyncio.Lock())
        async with lock:  # one login per deployment/user however many tools run at once
            hit = _TOKENS.get(self._key)
            if hit and not fresh and hit[1] - time.time() > _REUSE_MARGIN:
                self._auth, self._reused = _Bearer(hit[0]), True
                return
            token = await self._login_request()
            _TOKENS[self._key] = (token, _jwt_exp(token) or time.time() + _DEFAULT_TTL)
            self._auth, self._reused, self._csrf = _Bearer(token), False, None

    async def _login_request(self) -> str:
        resp = await self.ctx.http.request(
            "POST",
            self.base + "/api/v1/security/login",
            json={
                "username": self._cred.get("username"),
                "password": self._cred.get("password"),
                "provider": "db",
                "refresh": False,
            },
            auth=None,  # the login itself carries the credentials in its body
        )
        if resp.status_code >= 400:
            raise UpstreamError(self.ctx.integration, resp.status_code, _detail(resp))
        token = resp.json().get("access_token")
        if not token:
            raise UpstreamError(self.ctx.integration, resp.status_code, "login returned no access_token")
        return str(token)

    async def _send(self, method: str, path: str, params: Any, json: Any, headers: Any) -> httpx.Response:
        resp: httpx.Response = await self.ctx.http.request(
            method, self.base + path, params=compact(params), json=json, headers=headers, auth=self._auth
        )
        return resp

    async def request(
        self, method: str, path: str, *, params: Any = None, json: Any = None, headers: Any = None
    ) -> httpx.Response:
        resp = await self._send(method, path, params, json, headers)
        if resp.status_code == 401 and self._reused:  # the reused token was revoked or expired early
            await self.login(fresh=True)
            if headers and "X-CSRFToken" in headers:
                headers = {**headers, "X-CSRFToken": await self._csrf_token()}
            resp = await self._send(method, path, params, json, headers)
        if resp.status_code >= 400:
            raise UpstreamError(self.ctx.integration, resp.status_code, _detail(resp))
        return resp

    async def get(self, path: str, params: Any = None) -> Any:
        return (await self.request("GET", path, params=params)).json()

    async def _csrf_token(self) -> str:
        if self._csrf is None:
            self._csrf = str((await self.get("/api/v1/security/csrf_token/")).get("result") or "")
        return self._csrf

    async def post(self, path: str, json: Any) -> Any:
        headers = {"X-CSRFToken": await self._csrf_token(), "Referer": self.base + "/sqllab/"}
        return (await self.request("POST", path, json=json, headers=headers)).json()


async def _session(ctx: ToolContext) -> Session:
    cred = await ctx.credential()
    base = str(cred.get("base_url") or "").strip().rstrip("/")
    parts = urlsplit(base)
    if parts.scheme not in ("https", "http") or not parts.netloc:
        raise ValueError(
            "The Superset connection has no valid base URL (e.g. https://superset.example.com); reconnect."
        )
    return Session(ctx, base, cred)


async def login(ctx: ToolContext) -> Session:
    session = await _session(ctx)
    await session.login()
    return session


async def probe(ctx: ToolContext) -> None:
    """Connecting checks the address, username and password with a real login (never a reused token)."""
    session = await _session(ctx)
    await session.login(fresh=True)


def _list_q(
    page: int, page_size: int, filters: list[dict[str, Any]], columns: list[str] | None = None
) -> str:
    q: dict[str, Any] = {"page": page, "page_size": page_size}
    if filters:
        q["filters"] = filters
    if columns:
        q["columns"] = columns
    return rison(q)


def _next(body: dict[str, Any], page: int, page_size: int) -> str | None:
    count = int(body.get("count") or 0)
    return str(page + 1) if (page + 1) * page_size < count else None


class Page(ArgsModel):
    perPage: int = Field(default=25, ge=1, le=100, description="Results per page (max 100)")
    cursor: str | None = Field(default=None, description="nextCursor (page number) from the previous call")

    @property
    def page(self) -> int:
        return int(self.cursor) if self.cursor and self.cursor.isdigit() else 0


async def _list(
    ctx: ToolContext, path: str, args: Page, filters: list[dict[str, Any]], fields: tuple[str, ...], key: str
) -> dict[str, Any]:
    s = await login(ctx)
    body = await s.get(path, {"q": _list_q(args.page, args.perPage, filters)})
    items = [{f: item.get(f) for f in fields} for item in body.get("result") or []]
    return {key: items, "count": body.get("count"), "nextCursor": _next(body, args.page, args.perPage)}


def _contains(column: str, text: str | None) -> list[dict[str, Any]]:
    return [{"col": column, "opr": "ct", "value": text}] if text else []


_DB_FIELDS = ("id", "database_name", "backend", "expose_in_sqllab", "allow_run_async", "allow_dml")


@tool(
    "superset_list_databases",
    "List the databases connected to Superset (ids for SQL Lab queries).",
    Page,
    keywords=("data sources", "connections", "warehouses", "show"),
)
async def list_databases(args: Page, ctx: ToolContext) -> Any:
    return await _list(ctx, "/api/v1/database/", args, [], _DB_FIELDS, "databases")


class DatabaseId(ArgsModel):
    database_id: int = Field(description="Superset database id (see superset_list_databases)")


@tool(
    "superset_list_schemas",
    "List the schemas of a Superset database.",
    DatabaseId,
    keywords=("namespaces", "show"),
)
async def list_schemas(args: DatabaseId, ctx: ToolContext) -> Any:
    s = await login(ctx)
    return {"schemas": (await s.get(f"/api/v1/database/{args.database_id}/schemas/")).get("result") or []}


class ListTables(DatabaseId):
    schema_name: str = Field(description="Schema to list, e.g. public")


@tool(
    "superset_list_tables",
    "List the tables and views in a schema of a Superset database.",
    ListTables,
    keywords=("show", "relations"),
)
async def list_tables(args: ListTables, ctx: ToolContext) -> Any:
    s = await login(ctx)
    body = await s.get(
        f"/api/v1/database/{args.database_id}/tables/", {"q": rison({"schema_name": args.schema_name})}
    )
    return {"tables": [{"name": t.get("value"), "type": t.get("type")} for t in body.get("result") or []]}


class TableRef(ListTables):
    table: str = Field(description="Table name")


@tool(
    "superset_get_table_columns",
    "Get the columns (names and types) of a table in a Superset database.",
    TableRef,
    keywords=("fields", "schema", "structure", "types", "describe"),
)
async def get_table_columns(args: TableRef, ctx: ToolContext) -> Any:
    s = await login(ctx)
    body = await s.get(
        f"/api/v1/database/{args.database_id}/table_metadata/",
        {"name": args.table, "schema": args.schema_name},
    )
    cols = [{"name": c.get("name"), "type": c.get("type")} for c in body.get("columns") or []]
    return {"table": body.get("name", args.table), "columns": cols}


class Sql(ArgsModel):
    sql: str = Field(min_length=1, description="SQL to run (SELECT ...)")
    database_id: int | None = Field(
        default=None,
        description="Database id, from superset_list_databases; omitted: the only SQL Lab database, if there is exactly one",
    )
    schema_name: str | None = Field(default=None, description="Default schema for unqualified table names")


async def _database_id(s: Session, given: int | None) -> int:
    if given is not None:
        return given
    q = rison(
        {"page": 0, "page_size": 100, "filters": [{"col": "expose_in_sqllab", "opr": "eq", "value": True}]}
    )
    dbs = (await s.get("/api/v1/database/", {"q": q})).get("result") or []
    if len(dbs) == 1:
        return int(dbs[0]["id"])
    names = ", ".join(f"{d.get('id')}={d.get('database_name')}" for d in dbs) or "none"
    raise ValueError(f"Give database_id: {len(dbs)} SQL Lab databases are available ({names})")


async def _execute(s: Session, args: Sql, client_id: str, limit: int | None) -> dict[str, Any]:
    database_id = await _database_id(s, args.database_id)
    payload = compact(
        {
            "database_id": database_id,
            "sql": args.sql,
            "client_id": client_id,
            "runAsync": False,
            "schema": args.schema_name,
            "queryLimit": limit,
        }
    )
    body: dict[str, Any] = await s.post("/api/v1/sqllab/execute/", payload)
    status = body.get("status")
    if status not in ("success", "fulfilled"):
        raise UpstreamError(s.ctx.integration, 200, str(body.get("error") or f"query {status or 'failed'}"))
    return body


def _columns(body: dict[str, Any]) -> list[str]:
    return [str(c.get("column_name") or c.get("name")) for c in body.get("columns") or []]


class RunSql(Sql):
    limit: int = Field(default=100, ge=1, le=10000, description="Most rows to return")


@tool(
    "superset_run_sql",
    "Run a SQL query in Superset SQL Lab and return the rows as JSON (for small results; use "
    "superset_export_csv for files).",
    RunSql,
    keywords=("query", "execute", "select", "data", "rows"),
)
async def run_sql(args: RunSql, ctx: ToolContext) -> Any:
    s = await login(ctx)
    body = await _execute(s, args, new_client_id(), args.limit)
    rows = body.get("data") or []
    query = body.get("query") or {}
    return {
        "columns": _columns(body),
        "rows": rows,
        "row_count": len(rows),
        "limited": query.get("limitingFactor") not in (None, "", "NOT_LIMITED"),
        "query_id": body.get("query_id"),
    }


class ExportCsv(Sql):
    filename: str | None = Field(default=None, description="File name for the CSV (default: Superset's)")


def _filename(resp: httpx.Response, given: str | None, client_id: str) -> str:
    if given:
        return given if given.lower().endswith(".csv") else f"{given}.csv"
    disposition = resp.headers.get("content-disposition", "")
    match = re.search(r"filename\*?=(?:UTF-8'')?\"?([^\";]+)\"?", disposition)
    name = unquote(match.group(1)).strip() if match else ""
    return name or f"superset_{client_id}.csv"


@tool(
    "superset_export_csv",
    "Run SQL in Superset SQL Lab on a database and export the full result as CSV text: returns "
    "{filename, csv, row_count, columns}.",
    ExportCsv,
    keywords=("download", "spreadsheet", "file", "dump", "extract", "excel"),
)
async def export_csv(args: ExportCsv, ctx: ToolContext) -> Any:
    s = await login(ctx)
    client_id = new_client_id()
    body = await _execute(s, args, client_id, None)
    resp = await s.request("GET", f"/api/v1/sqllab/export/{client_id}/", headers={"Accept": "text/csv"})
    text = resp.text.removeprefix("\ufeff")
    records = list(csv.reader(io.StringIO(text)))
    columns = _columns(body) or (records[0] if records else [])
    return {
        "filename": _filename(resp, args.filename, client_id),
        "csv": text,
        "row_count": max(len(records) - 1, 0),
        "columns": columns,
    }


class Search(Page):
    search: str | None = Field(default=None, description="Only items whose title contains this text")


_DASH_FIELDS = ("id", "dashboard_title", "url", "published", "changed_on_utc", "changed_by_name")


@tool(
    "superset_list_dashboards",
    "List Superset dashboards, optionally by title.",
    Search,
    keywords=("reports", "boards", "show"),
)
async def list_dashboards(args: Search, ctx: ToolContext) -> Any:
    return await _list(
        ctx, "/api/v1/dashboard/", args, _contains("dashboard_title", args.search), _DASH_FIELDS, "dashboards"
    )


class DashboardId(ArgsModel):
    dashboard_id: int = Field(description="Dashboard id, from superset_list_dashboards")


@tool(
    "superset_get_dashboard",
    "Get a Superset dashboard with the charts on it.",
    DashboardId,
    keywords=("details", "widgets", "show", "view"),
)
async def get_dashboard(args: DashboardId, ctx: ToolContext) -> Any:
    s = await login(ctx)
    dash = (await s.get(f"/api/v1/dashboard/{args.dashboard_id}")).get("result") or {}
    charts = (await s.get(f"/api/v1/dashboard/{args.dashboard_id}/charts")).get("result") or []
    return {
        **{
            k: dash.get(k)
            for k in ("id", "dashboard_title", "url", "published", "changed_on_delta_humanized")
        },
        "owners": [
            f"{o.get('first_name', '')} {o.get('last_name', '')}".strip() for o in dash.get("owners") or []
        ],
        "charts": [
            {
                "id": c.get("id"),
                "name": c.get("slice_name"),
                "viz_type": (c.get("form_data") or {}).get("viz_type"),
            }
            for c in charts
        ],
    }


_CHART_FIELDS = ("id", "slice_name", "viz_type", "datasource_name_text", "url", "changed_on_utc")


@tool(
    "superset_list_charts",
    "List Superset charts, optionally by name.",
    Search,
    keywords=("graphs", "visualisations", "plots", "show"),
)
async def list_charts(args: Search, ctx: ToolContext) -> Any:
    return await _list(
        ctx, "/api/v1/chart/", args, _contains("slice_name", args.search), _CHART_FIELDS, "charts"
    )


class ChartData(ArgsModel):
    chart_id: int = Field(description="Chart id, from superset_list_charts")
    limit: int = Field(default=500, ge=1, le=10000, description="Most rows to return")


@tool(
    "superset_get_chart_data",
    "Get the data behind a saved Superset chart (its query result rows).",
    ChartData,
    keywords=("numbers", "results", "values", "underlying", "graph"),
)
async def get_chart_data(args: ChartData, ctx: ToolContext) -> Any:
    s = await login(ctx)
    body = await s.get(f"/api/v1/chart/{args.chart_id}/data/", {"format": "json", "type": "full"})
    results = body.get("result") or []
    first = results[0] if results else {}
    rows = first.get("data") or []
    return {
        "columns": first.get("colnames") or [],
        "rows": rows[: args.limit],
        "row_count": first.get("rowcount", len(rows)),
    }


_DATASET_FIELDS = ("id", "table_name", "schema", "database", "kind", "changed_on_utc")


@tool(
    "superset_list_datasets",
    "List Superset datasets (tables and virtual SQL datasets), optionally by name.",
    Search,
    keywords=("sources", "virtual", "models", "show"),
)
async def list_datasets(args: Search, ctx: ToolContext) -> Any:
    out = await _list(
        ctx, "/api/v1/dataset/", args, _contains("table_name", args.search), _DATASET_FIELDS, "datasets"
    )
    for ds in out["datasets"]:
        db = ds.get("database")
        ds["database"] = db.get("database_name") if isinstance(db, dict) else db
    return out


_SAVED_FIELDS = ("id", "label", "description", "sql", "schema", "changed_on_delta_humanized")


@tool(
    "superset_list_saved_queries",
    "List saved SQL Lab queries in Superset, optionally by label.",
    Search,
    keywords=("stored", "snippets", "favourites"),
)
async def list_saved_queries(args: Search, ctx: ToolContext) -> Any:
    return await _list(
        ctx, "/api/v1/saved_query/", args, _contains("label", args.search), _SAVED_FIELDS, "queries"
    )


TOOLS = [
    list_databases,
    list_schemas,
    list_tables,
    get_table_columns,
    run_sql,
    export_csv,
    list_dashboards,
    get_dashboard,
    list_charts,
    get_chart_data,
    list_datasets,
    list_saved_queries,
]
