"""Superset tools against a fake deployment (bodies shaped like Superset's REST API / OpenAPI examples)."""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path

import httpx
import pytest
from workbench_plugins.superset import tools as st

from tests.plugins.catalog_support import Call, Case, Plugin, check_catalog, run_case, run_error, tool_names
from tests.support.gateways import make_gateway, principal_for

JWT = "eyJ0eXAiOiJKV1QiLCJhbGciOiJIUzI1NiJ9.eyJmcmVzaCI6dHJ1ZSwidHlwZSI6ImFjY2VzcyJ9.c2ln"
CRED = {"username": "analyst", "password": "s3cret!", "base_url": "https://bi.example.com/"}
PLUGIN = Plugin("superset", CRED, f"Bearer {JWT}")
B = "https://bi.example.com"
CSRF = "IjA1ZjQ3YTQ1ZGM2ZTY4ZGFjNTI0ZjIyNjM1ZDE2OGIwOTg0ZTg0NmYi.ZbK0yw.qZ3xVb"
CLIENT_ID = "Xq9rT2bLk0w"

LOGIN = Call(
    "POST",
    f"{B}/api/v1/security/login",
    json={"username": "analyst", "password": "s3cret!", "provider": "db", "refresh": False},
    response={"access_token": JWT},
    auth=None,
)
CSRF_CALL = Call(
    "GET",
    f"{B}/api/v1/security/csrf_token/",
    response={"result": CSRF},
    headers={"set-cookie": "session=eyJjc3JmX3Rva2VuIjoiMDVmNDcifQ.ZbK0yw.sig; Path=/; HttpOnly"},
)
POST_HEADERS = {
    "x-csrftoken": CSRF,
    "referer": f"{B}/sqllab/",
    "cookie": "session=eyJjc3JmX3Rva2VuIjoiMDVmNDcifQ.ZbK0yw.sig",
}
EXECUTED = {
    "status": "success",
    "query_id": 1721,
    "columns": [
        {"column_name": "country", "name": "country", "type": "STRING", "is_dttm": False},
        {"column_name": "revenue", "name": "revenue", "type": "FLOAT", "is_dttm": False},
    ],
    "selected_columns": [
        {"column_name": "country", "name": "country", "type": "STRING", "is_dttm": False},
        {"column_name": "revenue", "name": "revenue", "type": "FLOAT", "is_dttm": False},
    ],
    "expanded_columns": [],
    "data": [{"country": "France", "revenue": 1200.5}, {"country": "Japan", "revenue": 980.0}],
    "query": {
        "dbId": 1,
        "id": CLIENT_ID,
        "queryId": 1721,
        "limit": 1001,
        "limitingFactor": "NOT_LIMITED",
        "rows": 2,
        "state": "success",
        "sql": "SELECT country, SUM(amount) AS revenue FROM sales GROUP BY country",
    },
}
SQL = "SELECT country, SUM(amount) AS revenue FROM sales GROUP BY country"
SQLLAB_DBS = "(page:0,page_size:100,filters:!((col:expose_in_sqllab,opr:eq,value:!t)))"


@pytest.fixture(autouse=True)
def fixed_client_id(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(st, "new_client_id", lambda: CLIENT_ID)
    st._TOKENS.clear()  # each test starts logged out
    st._LOCKS.clear()


CASES = [
    Case(
        "superset_list_databases",
        {"perPage": 1},
        [
            LOGIN,
            Call(
                "GET",
                f"{B}/api/v1/database/",
                [("q", "(page:0,page_size:1)")],
                response={
                    "count": 2,
                    "ids": [1],
                    "result": [
                        {
                            "id": 1,
                            "database_name": "examples",
                            "backend": "postgresql",
                            "expose_in_sqllab": True,
                            "allow_run_async": False,
                            "allow_dml": False,
                            "allow_file_upload": False,
                            "changed_on_delta_humanized": "2 days ago",
                        }
                    ],
                },
            ),
        ],
        {
            "databases": [
                {
                    "id": 1,
                    "database_name": "examples",
                    "backend": "postgresql",
                    "expose_in_sqllab": True,
                    "allow_run_async": False,
                    "allow_dml": False,
                }
            ],
            "count": 2,
            "nextCursor": "1",
        },
    ),
    Case(
        "superset_list_schemas",
        {"database_id": 1},
        [
            LOGIN,
            Call(
                "GET",
                f"{B}/api/v1/database/1/schemas/",
                response={"result": ["information_schema", "public"]},
            ),
        ],
        {"schemas": ["information_schema", "public"]},
    ),
    Case(
        "superset_list_tables",
        {"database_id": 1, "schema_name": "public"},
        [
            LOGIN,
            Call(
                "GET",
                f"{B}/api/v1/database/1/tables/",
                [("q", "(schema_name:public)")],
                response={
                    "count": 2,
                    "result": [
                        {"extra": None, "type": "table", "value": "sales"},
                        {"extra": None, "type": "view", "value": "sales_by_month"},
                    ],
                },
            ),
        ],
        {"tables": [{"name": "sales", "type": "table"}, {"name": "sales_by_month", "type": "view"}]},
    ),
    Case(
        "superset_get_table_columns",
        {"database_id": 1, "schema_name": "public", "table": "sales"},
        [
            LOGIN,
            Call(
                "GET",
                f"{B}/api/v1/database/1/table_metadata/",
                [("name", "sales"), ("schema", "public")],
                response={
                    "name": "sales",
                    "columns": [
                        {"name": "country", "type": "VARCHAR(64)", "longType": "VARCHAR(64)", "keys": []},
                        {
                            "name": "amount",
                            "type": "DOUBLE PRECISION",
                            "longType": "DOUBLE PRECISION",
                            "keys": [],
                        },
                    ],
                    "selectStar": "SELECT\n  country,\n  amount\nFROM public.sales\nLIMIT 100",
                    "primaryKey": {"constrained_columns": None, "name": None},
                    "foreignKeys": [],
                    "indexes": [],
                },
            ),
        ],
        {
            "table": "sales",
            "columns": [
                {"name": "country", "type": "VARCHAR(64)"},
                {"name": "amount", "type": "DOUBLE PRECISION"},
            ],
        },
    ),
    Case(
        "superset_run_sql",
        {"sql": SQL, "database_id": 1, "schema_name": "public", "limit": 10},
        [
            LOGIN,
            CSRF_CALL,
            Call(
                "POST",
                f"{B}/api/v1/sqllab/execute/",
                json={
                    "database_id": 1,
                    "sql": SQL,
                    "client_id": CLIENT_ID,
                    "runAsync": False,
                    "schema": "public",
                    "queryLimit": 10,
                },
                response=EXECUTED,
                expect_headers=POST_HEADERS,
            ),
        ],
        {
            "columns": ["country", "revenue"],
            "rows": [{"country": "France", "revenue": 1200.5}, {"country": "Japan", "revenue": 980.0}],
            "row_count": 2,
            "limited": False,
            "query_id": 1721,
        },
    ),
    Case(
        "superset_export_csv",
        {"sql": SQL, "database_id": 1},
        [
            LOGIN,
            CSRF_CALL,
            Call(
                "POST",
                f"{B}/api/v1/sqllab/execute/",
                json={"database_id": 1, "sql": SQL, "client_id": CLIENT_ID, "runAsync": False},
                response=EXECUTED,
                expect_headers=POST_HEADERS,
            ),
            Call(
                "GET",
                f"{B}/api/v1/sqllab/export/{CLIENT_ID}/",
                response="country,revenue\r\nFrance,1200.5\r\nJapan,980.0\r\n",
                headers={
                    "content-type": "text/csv; charset=utf-8",
                    "content-disposition": "attachment; filename=Untitled%20Query%201%2020240301_101500.csv",
                },
                expect_headers={"accept": "text/csv"},
            ),
        ],
        {
            "filename": "Untitled Query 1 20240301_101500.csv",
            "csv": "country,revenue\r\nFrance,1200.5\r\nJapan,980.0\r\n",
            "row_count": 2,
            "columns": ["country", "revenue"],
        },
    ),
    Case(
        "superset_list_dashboards",
        {"search": "Sales", "cursor": "1", "perPage": 10},
        [
            LOGIN,
            Call(
                "GET",
                f"{B}/api/v1/dashboard/",
                [("q", "(page:1,page_size:10,filters:!((col:dashboard_title,opr:ct,value:Sales)))")],
                response={
                    "count": 12,
                    "ids": [7],
                    "result": [
                        {
                            "id": 7,
                            "dashboard_title": "Sales Dashboard",
                            "url": "/superset/dashboard/7/",
                            "published": True,
                            "changed_on_utc": "2024-03-01T10:15:00.000000+0000",
                            "changed_by_name": "Ada Lovelace",
                            "status": "published",
                        }
                    ],
                },
            ),
        ],
        {
            "dashboards": [
                {
                    "id": 7,
                    "dashboard_title": "Sales Dashboard",
                    "url": "/superset/dashboard/7/",
                    "published": True,
                    "changed_on_utc": "2024-03-01T10:15:00.000000+0000",
                    "changed_by_name": "Ada Lovelace",
                }
            ],
            "count": 12,
            "nextCursor": None,
        },
    ),
    Case(
        "superset_get_dashboard",
        {"dashboard_id": 7},
        [
            LOGIN,
            Call(
                "GET",
                f"{B}/api/v1/dashboard/7",
                response={
                    "id": 7,
                    "result": {
                        "id": 7,
                        "dashboard_title": "Sales Dashboard",
                        "url": "/superset/dashboard/7/",
                        "published": True,
                        "changed_on_delta_humanized": "3 days ago",
                        "owners": [{"id": 1, "first_name": "Ada", "last_name": "Lovelace"}],
                        "json_metadata": "{}",
                        "position_json": "{}",
                    },
                },
            ),
            Call(
                "GET",
                f"{B}/api/v1/dashboard/7/charts",
                response={
                    "result": [
                        {
                            "id": 42,
                            "slice_name": "Revenue by country",
                            "form_data": {"viz_type": "echarts_timeseries_bar"},
                        }
                    ]
                },
            ),
        ],
        {
            "id": 7,
            "dashboard_title": "Sales Dashboard",
            "url": "/superset/dashboard/7/",
            "published": True,
            "changed_on_delta_humanized": "3 days ago",
            "owners": ["Ada Lovelace"],
            "charts": [{"id": 42, "name": "Revenue by country", "viz_type": "echarts_timeseries_bar"}],
        },
    ),
    Case(
        "superset_list_charts",
        {},
        [
            LOGIN,
            Call(
                "GET",
                f"{B}/api/v1/chart/",
                [("q", "(page:0,page_size:25)")],
                response={
                    "count": 1,
                    "result": [
                        {
                            "id": 42,
                            "slice_name": "Revenue by country",
                            "viz_type": "echarts_timeseries_bar",
                            "datasource_name_text": "public.sales",
                            "url": "/explore/?slice_id=42",
                            "changed_on_utc": "2024-03-01T10:15:00.000000+0000",
                            "cache_timeout": None,
                        }
                    ],
                },
            ),
        ],
        {
            "charts": [
                {
                    "id": 42,
                    "slice_name": "Revenue by country",
                    "viz_type": "echarts_timeseries_bar",
                    "datasource_name_text": "public.sales",
                    "url": "/explore/?slice_id=42",
                    "changed_on_utc": "2024-03-01T10:15:00.000000+0000",
                }
            ],
            "count": 1,
            "nextCursor": None,
        },
    ),
    Case(
        "superset_get_chart_data",
        {"chart_id": 42, "limit": 1},
        [
            LOGIN,
            Call(
                "GET",
                f"{B}/api/v1/chart/42/data/",
                [("format", "json"), ("type", "full")],
                response={
                    "result": [
                        {
                            "cache_key": "c1",
                            "colnames": ["country", "revenue"],
                            "coltypes": [1, 0],
                            "data": [
                                {"country": "France", "revenue": 1200.5},
                                {"country": "Japan", "revenue": 980.0},
                            ],
                            "rowcount": 2,
                            "status": "success",
                        }
                    ]
                },
            ),
        ],
        {
            "columns": ["country", "revenue"],
            "rows": [{"country": "France", "revenue": 1200.5}],
            "row_count": 2,
        },
    ),
    Case(
        "superset_list_datasets",
        {"search": "sales"},
        [
            LOGIN,
            Call(
                "GET",
                f"{B}/api/v1/dataset/",
                [("q", "(page:0,page_size:25,filters:!((col:table_name,opr:ct,value:sales)))")],
                response={
                    "count": 1,
                    "result": [
                        {
                            "id": 3,
                            "table_name": "sales",
                            "schema": "public",
                            "database": {"id": 1, "database_name": "examples"},
                            "kind": "physical",
                            "changed_on_utc": "2024-03-01T10:15:00.000000+0000",
                        }
                    ],
                },
            ),
        ],
        {
            "datasets": [
                {
                    "id": 3,
                    "table_name": "sales",
                    "schema": "public",
                    "database": "examples",
                    "kind": "physical",
                    "changed_on_utc": "2024-03-01T10:15:00.000000+0000",
                }
            ],
            "count": 1,
            "nextCursor": None,
        },
    ),
    Case(
        "superset_list_saved_queries",
        {"search": "Ada's"},
        [
            LOGIN,
            Call(
                "GET",
                f"{B}/api/v1/saved_query/",
                [("q", "(page:0,page_size:25,filters:!((col:label,opr:ct,value:'Ada!'s')))")],
                response={
                    "count": 1,
                    "result": [
                        {
                            "id": 5,
                            "label": "Ada's revenue query",
                            "description": "",
                            "sql": SQL,
                            "schema": "public",
                            "changed_on_delta_humanized": "a month ago",
                        }
                    ],
                },
            ),
        ],
        {
            "queries": [
                {
                    "id": 5,
                    "label": "Ada's revenue query",
                    "description": "",
                    "sql": SQL,
                    "schema": "public",
                    "changed_on_delta_humanized": "a month ago",
                }
            ],
            "count": 1,
            "nextCursor": None,
        },
    ),
]


def test_every_tool_has_a_case() -> None:
    assert tool_names(st) == {c.tool for c in CASES}


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        ({"page": 0, "page_size": 25}, "(page:0,page_size:25)"),
        ([1, "a b", True, False, None], "!(1,'a b',!t,!f,!n)"),
        (["eq", "public.sales", "9lives", "-x", ""], "!(eq,public.sales,'9lives','-x','')"),
        ("it's 100%!", "'it!'s 100%!!'"),
        ({"filters": []}, "(filters:!())"),
    ],
)
def test_rison(value: object, encoded: str) -> None:
    assert st.rison(value) == encoded


def test_catalog_entries() -> None:
    check_catalog("superset", st)


@pytest.mark.parametrize("case", CASES, ids=str)
async def test_tool(case: Case, tmp_path: Path) -> None:
    await run_case(PLUGIN, tmp_path, case)


async def test_export_csv_with_only_sql_uses_the_single_sqllab_database(tmp_path: Path) -> None:
    """Seed 001's example passes only `sql`: the one database exposed in SQL Lab is used."""
    await run_case(
        PLUGIN,
        tmp_path,
        Case(
            "superset_export_csv",
            {"sql": SQL, "filename": "revenue"},
            [
                LOGIN,
                Call(
                    "GET",
                    f"{B}/api/v1/database/",
                    [("q", SQLLAB_DBS)],
                    response={"count": 1, "result": [{"id": 4, "database_name": "warehouse"}]},
                ),
                CSRF_CALL,
                Call(
                    "POST",
                    f"{B}/api/v1/sqllab/execute/",
                    json={"database_id": 4, "sql": SQL, "client_id": CLIENT_ID, "runAsync": False},
                    response=EXECUTED,
                    expect_headers=POST_HEADERS,
                ),
                Call(
                    "GET",
                    f"{B}/api/v1/sqllab/export/{CLIENT_ID}/",
                    response="\ufeffcountry,revenue\nFrance,1200.5\n",
                    headers={"content-type": "text/csv; charset=utf-8"},
                ),
            ],
            {
                "filename": "revenue.csv",
                "csv": "country,revenue\nFrance,1200.5\n",
                "row_count": 1,
                "columns": ["country", "revenue"],
            },
        ),
    )


async def test_export_csv_asks_for_a_database_when_several_exist(tmp_path: Path) -> None:
    await run_error(
        PLUGIN,
        tmp_path,
        "superset_export_csv",
        {"sql": SQL},
        [
            LOGIN,
            Call(
                "GET",
                f"{B}/api/v1/database/",
                [("q", SQLLAB_DBS)],
                response={
                    "count": 2,
                    "result": [
                        {"id": 1, "database_name": "examples"},
                        {"id": 4, "database_name": "warehouse"},
                    ],
                },
            ),
        ],
        "Give database_id: 2 SQL Lab databases are available (1=examples, 4=warehouse)",
    )


async def test_sql_error_becomes_tool_error(tmp_path: Path) -> None:
    await run_error(
        PLUGIN,
        tmp_path,
        "superset_export_csv",
        {"sql": "SELECT nope FROM sales", "database_id": 1},
        [
            LOGIN,
            CSRF_CALL,
            Call(
                "POST",
                f"{B}/api/v1/sqllab/execute/",
                json={
                    "database_id": 1,
                    "sql": "SELECT nope FROM sales",
                    "client_id": CLIENT_ID,
                    "runAsync": False,
                },
                status=400,
                response={
                    "errors": [
                        {
                            "message": 'postgresql error: column "nope" does not exist',
                            "error_type": "COLUMN_DOES_NOT_EXIST_ERROR",
                            "level": "error",
                            "extra": {"engine_name": "PostgreSQL"},
                        }
                    ]
                },
            ),
        ],
        'superset API error 400: postgresql error: column "nope" does not exist',
    )


async def test_bad_login_becomes_tool_error(tmp_path: Path) -> None:
    login = Call(
        LOGIN.method,
        LOGIN.url,
        json=LOGIN.json,
        status=401,
        response={"message": "Not authorized"},
        auth=None,
    )
    await run_error(
        PLUGIN,
        tmp_path,
        "superset_list_schemas",
        {"database_id": 1},
        [login],
        "superset API error 401: Not authorized",
    )


async def test_connection_without_base_url_is_a_clear_error(tmp_path: Path) -> None:
    plugin = Plugin("superset", {**CRED, "base_url": "bi.example.com"}, "")
    await run_error(
        plugin,
        tmp_path,
        "superset_list_schemas",
        {"database_id": 1},
        [],
        "The Superset connection has no valid base URL (e.g. https://superset.example.com); reconnect.",
    )


def _jwt(exp: float) -> str:
    claims = (
        base64.urlsafe_b64encode(json.dumps({"type": "access", "exp": int(exp)}).encode())
        .decode()
        .rstrip("=")
    )
    return f"eyJhbGciOiJIUzI1NiJ9.{claims}.c2ln"


def _fake_superset(tokens: list[str], revoked: set[str]) -> tuple[httpx.MockTransport, list[str]]:
    """A deployment that hands out `tokens` in order and rejects any token in `revoked`."""
    log: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/v1/security/login":
            log.append("login")
            return httpx.Response(
                200, json={"access_token": tokens[len([x for x in log if x == "login"]) - 1]}
            )
        bearer = request.headers.get("authorization", "").removeprefix("Bearer ")
        log.append(f"{request.url.path} {bearer[-12:]}")
        if bearer in revoked:
            return httpx.Response(401, json={"msg": "Token has been revoked"})
        return httpx.Response(200, json={"result": ["public"]})

    return httpx.MockTransport(handler), log


async def test_a_batch_logs_in_once_and_reuses_the_token(tmp_path: Path) -> None:
    token = _jwt(time.time() + 900)
    transport, log = _fake_superset([token], set())
    gw = make_gateway(tmp_path, transport=transport)
    p = principal_for(gw)
    gw.credentials.save(p.user.id, "superset", CRED)
    calls = [{"tool": "superset_list_schemas", "args": {"database_id": i}, "ref_id": None} for i in (1, 2, 3)]
    out = await gw.runs.execute(p, calls)
    assert out == {"results": [{"result": {"schemas": ["public"]}}] * 3}
    assert log.count("login") == 1
    out = await gw.runs.execute(p, calls[:1])  # a later call still reuses it
    assert log.count("login") == 1


async def test_a_token_near_expiry_is_not_reused(tmp_path: Path) -> None:
    transport, log = _fake_superset([_jwt(time.time() + 30), _jwt(time.time() + 900)], set())
    gw = make_gateway(tmp_path, transport=transport)
    p = principal_for(gw)
    gw.credentials.save(p.user.id, "superset", CRED)
    for _ in range(2):
        await gw.runs.execute(
            p, [{"tool": "superset_list_schemas", "args": {"database_id": 1}, "ref_id": None}]
        )
    assert log.count("login") == 2


async def test_a_revoked_reused_token_logs_in_again_once(tmp_path: Path) -> None:
    old, new = _jwt(time.time() + 900), _jwt(time.time() + 901)
    revoked: set[str] = set()
    transport, log = _fake_superset([old, new], revoked)
    gw = make_gateway(tmp_path, transport=transport)
    p = principal_for(gw)
    gw.credentials.save(p.user.id, "superset", CRED)
    call = [{"tool": "superset_list_schemas", "args": {"database_id": 1}, "ref_id": None}]
    await gw.runs.execute(p, call)
    revoked.add(old)  # e.g. the user logged out everywhere
    out = await gw.runs.execute(p, call)
    assert out == {"results": [{"result": {"schemas": ["public"]}}]}
    assert log == [
        "login",
        f"/api/v1/database/1/schemas/ {old[-12:]}",
        f"/api/v1/database/1/schemas/ {old[-12:]}",
        "login",
        f"/api/v1/database/1/schemas/ {new[-12:]}",
    ]


async def test_another_users_token_is_never_reused(tmp_path: Path) -> None:
    transport, log = _fake_superset([_jwt(time.time() + 900), _jwt(time.time() + 901)], set())
    gw = make_gateway(tmp_path, transport=transport)
    for email in ("ada@example.com", "bob@example.com"):
        p = principal_for(gw, email)
        gw.credentials.save(p.user.id, "superset", CRED)  # same Superset login, different workbench users
        await gw.runs.execute(
            p, [{"tool": "superset_list_schemas", "args": {"database_id": 1}, "ref_id": None}]
        )
    assert log.count("login") == 2
