"""Airtable tools against a fake api.airtable.com (bodies from Airtable's Web API reference examples)."""

from __future__ import annotations

import base64
from pathlib import Path
from urllib.parse import parse_qsl

import httpx
import pytest
import workbench_plugins.airtable as airtable_pkg
from workbench_plugins.airtable import tools as airtable_tools

from tests.plugins.catalog_support import (
    Call,
    Case,
    Plugin,
    check_catalog,
    exchange_code,
    run_case,
    run_error,
    tool_names,
)
from tests.support.gateways import make_gateway, principal_for

PLUGIN = Plugin("airtable", {"access_token": "oaa_airtable_tok"}, "Bearer oaa_airtable_tok")
API = "https://api.airtable.com/v0"
BASE = "appLkNDICXNqxSDhG"
TABLES = f"{API}/{BASE}/Design projects"

REC = {
    "id": "rec560UJdUtocSouk",
    "createdTime": "2022-09-12T21:03:48.000Z",
    "fields": {"Name": "Apartment", "Status": "In progress", "Client": ["recj4Sy7wBcJYsiCU"]},
}
REC2 = {
    "id": "rec3lbPRG4aVqkeOQ",
    "createdTime": "2022-09-12T21:03:48.000Z",
    "fields": {"Name": "Ski chalet", "Status": "Complete"},
}
COMMENT = {
    "author": {"email": "foo@bar.com", "id": "usrL2PNC5o3H4lBEi", "name": "Foo Bar"},
    "createdTime": "2021-03-01T09:00:00.000Z",
    "id": "comB5z37Mg9zaEPw6",
    "lastUpdatedTime": None,
    "text": "Hello, @[usr00000mentioned]!",
}
COMMENT_OUT = {
    "id": "comB5z37Mg9zaEPw6",
    "text": "Hello, @[usr00000mentioned]!",
    "createdTime": "2021-03-01T09:00:00.000Z",
    "author": "Foo Bar",
}

CASES = [
    Case(
        "airtable_list_bases",
        {"cursor": "itr23sEjsdfEr3282/appSW9R5uCNmRmfl6"},
        [
            Call(
                "GET",
                f"{API}/meta/bases",
                [("offset", "itr23sEjsdfEr3282/appSW9R5uCNmRmfl6")],
                response={
                    "bases": [
                        {"id": "appY3WxIBCdKPDdIa", "name": "Apartment Hunting", "permissionLevel": "create"},
                        {"id": "appSW9R5uCNmRmfl6", "name": "Project Tracker", "permissionLevel": "edit"},
                    ]
                },
            )
        ],
        {
            "bases": [
                {"id": "appY3WxIBCdKPDdIa", "name": "Apartment Hunting", "permissionLevel": "create"},
                {"id": "appSW9R5uCNmRmfl6", "name": "Project Tracker", "permissionLevel": "edit"},
            ],
            "nextCursor": None,
        },
    ),
    Case(
        "airtable_get_base_schema",
        {"base_id": BASE},
        [
            Call(
                "GET",
                f"{API}/meta/bases/{BASE}/tables",
                response={
                    "tables": [
                        {
                            "description": "Apartments to track.",
                            "fields": [
                                {
                                    "description": "Name of the apartment",
                                    "id": "fld1VnoyuotSTyxW1",
                                    "name": "Name",
                                    "type": "singleLineText",
                                },
                                {
                                    "id": "fldoaIqdn5szURHpw",
                                    "name": "Pictures",
                                    "type": "multipleAttachments",
                                    "options": {"isReversed": False},
                                },
                            ],
                            "id": "tbltp8DGLhqbUmjK1",
                            "name": "Apartments",
                            "primaryFieldId": "fld1VnoyuotSTyxW1",
                            "views": [{"id": "viwQpsuEDqHFqegkp", "name": "Grid view", "type": "grid"}],
                        }
                    ]
                },
            )
        ],
        {
            "tables": [
                {
                    "id": "tbltp8DGLhqbUmjK1",
                    "name": "Apartments",
                    "description": "Apartments to track.",
                    "primaryFieldId": "fld1VnoyuotSTyxW1",
                    "fields": [
                        {"id": "fld1VnoyuotSTyxW1", "name": "Name", "type": "singleLineText"},
                        {"id": "fldoaIqdn5szURHpw", "name": "Pictures", "type": "multipleAttachments"},
                    ],
                    "views": [{"id": "viwQpsuEDqHFqegkp", "name": "Grid view", "type": "grid"}],
                }
            ]
        },
    ),
    Case(
        "airtable_list_records",
        {
            "base_id": BASE,
            "table": "Design projects",
            "perPage": 2,
            "view": "Grid view",
            "filter_formula": "{Status} = 'In progress'",
            "fields": ["Name", "Status"],
            "sort_field": "Name",
            "sort_direction": "desc",
        },
        [
            Call(
                "GET",
                TABLES,
                [
                    ("pageSize", "2"),
                    ("view", "Grid view"),
                    ("filterByFormula", "{Status} = 'In progress'"),
                    ("fields[]", "Name"),
                    ("fields[]", "Status"),
                    ("sort[0][field]", "Name"),
                    ("sort[0][direction]", "desc"),
                ],
                response={"offset": "itrPb0pOyGvdmFvDk/rec560UJdUtocSouk", "records": [REC, REC2]},
            )
        ],
        {"records": [REC, REC2], "nextCursor": "itrPb0pOyGvdmFvDk/rec560UJdUtocSouk"},
    ),
    Case(
        "airtable_search_records",
        {"base_id": BASE, "table": "Design projects", "field": "Name", "query": 'Ski "chalet"'},
        [
            Call(
                "GET",
                TABLES,
                [("pageSize", "50"), ("filterByFormula", 'SEARCH(LOWER("Ski \\"chalet\\""), LOWER({Name}))')],
                response={"records": [REC2]},
            )
        ],
        {"records": [REC2], "nextCursor": None},
    ),
    Case(
        "airtable_get_record",
        {"base_id": BASE, "table": "tblFBi4J2XWpifhYJ", "record_id": "rec560UJdUtocSouk"},
        [Call("GET", f"{API}/{BASE}/tblFBi4J2XWpifhYJ/rec560UJdUtocSouk", response=REC)],
        REC,
    ),
    Case(
        "airtable_create_records",
        {"base_id": BASE, "table": "Design projects", "records": [{"Name": "Apartment"}], "typecast": True},
        [
            Call(
                "POST",
                TABLES,
                json={"records": [{"fields": {"Name": "Apartment"}}], "typecast": True},
                response={"records": [REC]},
            )
        ],
        {"records": [REC], "nextCursor": None},
    ),
    Case(
        "airtable_update_records",
        {
            "base_id": BASE,
            "table": "Design projects",
            "records": [{"id": "rec560UJdUtocSouk", "fields": {"Status": "In progress"}}],
        },
        [
            Call(
                "PATCH",
                TABLES,
                json={
                    "records": [{"id": "rec560UJdUtocSouk", "fields": {"Status": "In progress"}}],
                    "typecast": False,
                },
                response={"records": [REC]},
            )
        ],
        {"records": [REC], "nextCursor": None},
    ),
    Case(
        "airtable_upsert_records",
        {
            "base_id": BASE,
            "table": "Design projects",
            "merge_on": ["Name"],
            "records": [
                {"Name": "Apartment", "Status": "In progress"},
                {"Name": "Ski chalet", "Status": "Complete"},
            ],
        },
        [
            Call(
                "PATCH",
                TABLES,
                json={
                    "performUpsert": {"fieldsToMergeOn": ["Name"]},
                    "records": [
                        {"fields": {"Name": "Apartment", "Status": "In progress"}},
                        {"fields": {"Name": "Ski chalet", "Status": "Complete"}},
                    ],
                    "typecast": False,
                },
                response={
                    "createdRecords": ["rec3lbPRG4aVqkeOQ"],
                    "records": [REC, REC2],
                    "updatedRecords": ["rec560UJdUtocSouk"],
                },
            )
        ],
        {
            "records": [REC, REC2],
            "createdRecords": ["rec3lbPRG4aVqkeOQ"],
            "updatedRecords": ["rec560UJdUtocSouk"],
        },
    ),
    Case(
        "airtable_delete_records",
        {
            "base_id": BASE,
            "table": "Design projects",
            "record_ids": ["rec560UJdUtocSouk", "rec3lbPRG4aVqkeOQ"],
        },
        [
            Call(
                "DELETE",
                TABLES,
                [("records[]", "rec560UJdUtocSouk"), ("records[]", "rec3lbPRG4aVqkeOQ")],
                response={
                    "records": [
                        {"deleted": True, "id": "rec560UJdUtocSouk"},
                        {"deleted": True, "id": "rec3lbPRG4aVqkeOQ"},
                    ]
                },
            )
        ],
        {"deleted": ["rec560UJdUtocSouk", "rec3lbPRG4aVqkeOQ"]},
    ),
    Case(
        "airtable_create_table",
        {
            "base_id": BASE,
            "name": "Apartments",
            "description": "A to-do list of places to visit",
            "fields": [
                {"name": "Name", "description": "Name of the apartment"},
                {"name": "Address", "type": "singleLineText"},
                {"name": "Visited", "type": "checkbox", "options": {"color": "greenBright", "icon": "check"}},
            ],
        },
        [
            Call(
                "POST",
                f"{API}/meta/bases/{BASE}/tables",
                json={
                    "name": "Apartments",
                    "fields": [
                        {"name": "Name", "type": "singleLineText", "description": "Name of the apartment"},
                        {"name": "Address", "type": "singleLineText"},
                        {
                            "name": "Visited",
                            "type": "checkbox",
                            "options": {"color": "greenBright", "icon": "check"},
                        },
                    ],
                    "description": "A to-do list of places to visit",
                },
                response={
                    "description": "A to-do list of places to visit",
                    "fields": [
                        {
                            "description": "Name of the apartment",
                            "id": "fld1VnoyuotSTyxW1",
                            "name": "Name",
                            "type": "singleLineText",
                        },
                        {"id": "fldoi0c3GaRQJ3xnI", "name": "Address", "type": "singleLineText"},
                        {
                            "id": "fldumZe00w09RYTW6",
                            "name": "Visited",
                            "options": {"color": "redBright", "icon": "star"},
                            "type": "checkbox",
                        },
                    ],
                    "id": "tbltp8DGLhqbUmjK1",
                    "name": "Apartments",
                    "primaryFieldId": "fld1VnoyuotSTyxW1",
                    "views": [{"id": "viwQpsuEDqHFqegkp", "name": "Grid view", "type": "grid"}],
                },
            )
        ],
        {
            "id": "tbltp8DGLhqbUmjK1",
            "name": "Apartments",
            "primaryFieldId": "fld1VnoyuotSTyxW1",
            "fields": [
                {"id": "fld1VnoyuotSTyxW1", "name": "Name", "type": "singleLineText"},
                {"id": "fldoi0c3GaRQJ3xnI", "name": "Address", "type": "singleLineText"},
                {"id": "fldumZe00w09RYTW6", "name": "Visited", "type": "checkbox"},
            ],
        },
    ),
    Case(
        "airtable_create_field",
        {
            "base_id": BASE,
            "table_id": "tbltp8DGLhqbUmjK1",
            "name": "Visited",
            "type": "checkbox",
            "description": "Whether I have visited this apartment yet.",
            "options": {"color": "greenBright", "icon": "check"},
        },
        [
            Call(
                "POST",
                f"{API}/meta/bases/{BASE}/tables/tbltp8DGLhqbUmjK1/fields",
                json={
                    "name": "Visited",
                    "type": "checkbox",
                    "description": "Whether I have visited this apartment yet.",
                    "options": {"color": "greenBright", "icon": "check"},
                },
                response={
                    "description": "Whether I have visited this apartment yet.",
                    "id": "fldumZe00w09RYTW6",
                    "name": "Visited",
                    "options": {"color": "redBright", "icon": "star"},
                    "type": "checkbox",
                },
            )
        ],
        {
            "id": "fldumZe00w09RYTW6",
            "name": "Visited",
            "type": "checkbox",
            "description": "Whether I have visited this apartment yet.",
        },
    ),
    Case(
        "airtable_list_comments",
        {"base_id": BASE, "table": "Design projects", "record_id": "rec560UJdUtocSouk", "perPage": 10},
        [
            Call(
                "GET",
                f"{TABLES}/rec560UJdUtocSouk/comments",
                [("pageSize", "10")],
                response={"comments": [COMMENT], "offset": "comB5z37Mg9zaEPw6"},
            )
        ],
        {"comments": [COMMENT_OUT], "nextCursor": "comB5z37Mg9zaEPw6"},
    ),
    Case(
        "airtable_add_comment",
        {
            "base_id": BASE,
            "table": "Design projects",
            "record_id": "rec560UJdUtocSouk",
            "text": "Hello, @[usr00000mentioned]!",
        },
        [
            Call(
                "POST",
                f"{TABLES}/rec560UJdUtocSouk/comments",
                json={"text": "Hello, @[usr00000mentioned]!"},
                response=COMMENT,
            )
        ],
        COMMENT_OUT,
    ),
]


def test_every_tool_has_a_case() -> None:
    assert tool_names(airtable_tools) == {c.tool for c in CASES}


def test_catalog_entries() -> None:
    check_catalog("airtable", airtable_tools)


@pytest.mark.parametrize("case", CASES, ids=str)
async def test_tool(case: Case, tmp_path: Path) -> None:
    await run_case(PLUGIN, tmp_path, case)


async def test_table_names_are_path_encoded(tmp_path: Path) -> None:
    seen: list[bytes] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.raw_path)
        return httpx.Response(200, json={"id": "rec1", "createdTime": "t", "fields": {}})

    gw = make_gateway(tmp_path, transport=httpx.MockTransport(handler))
    p = principal_for(gw)
    gw.credentials.save(p.user.id, "airtable", PLUGIN.credential)
    await gw.runs.execute(
        p,
        [
            {
                "tool": "airtable_get_record",
                "args": {"base_id": BASE, "table": "Q1/Q2 plans", "record_id": "rec1"},
                "ref_id": None,
            }
        ],
    )
    assert seen == [f"/v0/{BASE}/Q1%2FQ2%20plans/rec1".encode()]


async def test_upstream_error_becomes_tool_error(tmp_path: Path) -> None:
    await run_error(
        PLUGIN,
        tmp_path,
        "airtable_get_record",
        {"base_id": BASE, "table": "Design projects", "record_id": "recNope"},
        [
            Call(
                "GET",
                f"{TABLES}/recNope",
                status=404,
                response={
                    "error": {
                        "type": "MODEL_ID_NOT_FOUND",
                        "message": 'Could not find a record with ID "recNope".',
                    }
                },
            )
        ],
        'airtable API error 404: Could not find a record with ID "recNope".',
    )


async def test_connecting_sends_client_credentials_as_http_basic(tmp_path: Path) -> None:
    request, tokens = await exchange_code(
        tmp_path,
        airtable_pkg.manifest,
        {
            "access_token": "oaa_airtable_tok",
            "refresh_token": "oaa_refresh",
            "token_type": "Bearer",
            "scope": "data.records:read data.records:write",
            "expires_in": 3600,
            "refresh_expires_in": 5184000,
        },
    )
    assert str(request.url) == "https://airtable.com/oauth2/v1/token"
    assert (
        request.headers["authorization"]
        == "Basic " + base64.b64encode(b"client-id-1:s3cr3t%2F%2B%3D").decode()
    )
    form = dict(parse_qsl(request.content.decode()))
    assert "client_secret" not in form and form["code_verifier"] == "v" * 43
    assert tokens.credential["refresh_token"] == "oaa_refresh"
