"""Salesforce tools against a fake org (bodies from the Salesforce REST API Developer Guide examples)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
import workbench_plugins.salesforce as sf_pkg
from workbench.connections.provider_oauth import ProviderOAuth
from workbench.engine.registry import Registry
from workbench.settings import Settings
from workbench_plugins.salesforce import tools as sf_tools

from tests.plugins.catalog_support import Call, Case, Plugin, check_catalog, run_case, run_error, tool_names

TOKEN = "00Dxx0000001gPL!AR8AQJXg5oj8jXSgxJfA0lBog.39AsX.LVpxezPwuX5VAIrrbbHMuol7GQxnMeYMN7cj8EoWr78nt1u44zU31IbYNNJguseu"
INSTANCE = "https://acme.my.salesforce.com"
PLUGIN = Plugin(
    "salesforce",
    {"access_token": TOKEN, "instance_url": INSTANCE, "token_type": "Bearer"},
    f"Bearer {TOKEN}",
)
D = f"{INSTANCE}/services/data/v62.0"

ACCOUNT = {
    "attributes": {"type": "Account", "url": "/services/data/v62.0/sobjects/Account/001D000000IRFmaIAH"},
    "Id": "001D000000IRFmaIAH",
    "Name": "Edge Communications",
    "Owner": {
        "attributes": {"type": "User", "url": "/services/data/v62.0/sobjects/User/005D0000001KyEIIA0"},
        "Name": "Ada",
    },
}
ACCOUNT_OUT = {
    "type": "Account",
    "Id": "001D000000IRFmaIAH",
    "Name": "Edge Communications",
    "Owner": {"type": "User", "Name": "Ada"},
}

CASES = [
    Case(
        "salesforce_query",
        {"soql": "SELECT Id, Name, Owner.Name FROM Account LIMIT 2"},
        [
            Call(
                "GET",
                f"{D}/query",
                [("q", "SELECT Id, Name, Owner.Name FROM Account LIMIT 2")],
                response={
                    "totalSize": 3214,
                    "done": False,
                    "nextRecordsUrl": "/services/data/v62.0/query/01gD0000002HU6KIAW-2000",
                    "records": [ACCOUNT],
                },
            )
        ],
        {
            "totalSize": 3214,
            "records": [ACCOUNT_OUT],
            "nextCursor": "/services/data/v62.0/query/01gD0000002HU6KIAW-2000",
        },
    ),
    Case(
        "salesforce_search",
        {"text": "Edge", "objects": ["Account", "Contact"], "limit": 5},
        [
            Call(
                "GET",
                f"{D}/parameterizedSearch/",
                [
                    ("q", "Edge"),
                    ("sobject", "Account"),
                    ("sobject", "Contact"),
                    ("Account.fields", "Id,Name,Website,Phone"),
                    ("Contact.fields", "Id,Name,Email,Phone,AccountId"),
                    ("overallLimit", "5"),
                ],
                response={
                    "searchRecords": [
                        {
                            "attributes": {"type": "Account", "url": "/x"},
                            "Id": "001D000000IRFmaIAH",
                            "Name": "Edge Communications",
                            "Website": None,
                            "Phone": "(512) 757-6000",
                        },
                    ]
                },
            )
        ],
        {
            "records": [
                {
                    "type": "Account",
                    "Id": "001D000000IRFmaIAH",
                    "Name": "Edge Communications",
                    "Website": None,
                    "Phone": "(512) 757-6000",
                }
            ]
        },
    ),
    Case(
        "salesforce_get_record",
        {"object": "Account", "id": "001D000000IRFmaIAH", "fields": ["Id", "Name"]},
        [
            Call(
                "GET",
                f"{D}/sobjects/Account/001D000000IRFmaIAH",
                [("fields", "Id,Name")],
                response={k: ACCOUNT[k] for k in ("attributes", "Id", "Name")},
            )
        ],
        {"type": "Account", "Id": "001D000000IRFmaIAH", "Name": "Edge Communications"},
    ),
    Case(
        "salesforce_create_record",
        {"object": "Account", "fields": {"Name": "Express Logistics and Transport"}},
        [
            Call(
                "POST",
                f"{D}/sobjects/Account",
                json={"Name": "Express Logistics and Transport"},
                status=201,
                response={"id": "001D000000IqhSLIAZ", "errors": [], "success": True},
            )
        ],
        {"id": "001D000000IqhSLIAZ", "success": True, "errors": []},
    ),
    Case(
        "salesforce_update_record",
        {"object": "Account", "id": "001D000000IqhSLIAZ", "fields": {"BillingCity": "San Francisco"}},
        [
            Call(
                "PATCH",
                f"{D}/sobjects/Account/001D000000IqhSLIAZ",
                json={"BillingCity": "San Francisco"},
                status=204,
            )
        ],
        {"id": "001D000000IqhSLIAZ", "updated": True},
    ),
    Case(
        "salesforce_delete_record",
        {"object": "Account", "id": "001D000000IqhSLIAZ"},
        [Call("DELETE", f"{D}/sobjects/Account/001D000000IqhSLIAZ", status=204)],
        {"id": "001D000000IqhSLIAZ", "deleted": True},
    ),
    Case(
        "salesforce_describe_object",
        {"object": "Opportunity"},
        [
            Call(
                "GET",
                f"{D}/sobjects/Opportunity/describe",
                response={
                    "name": "Opportunity",
                    "label": "Opportunity",
                    "custom": False,
                    "fields": [
                        {
                            "name": "Id",
                            "label": "Opportunity ID",
                            "type": "id",
                            "nillable": False,
                            "createable": False,
                            "updateable": False,
                            "picklistValues": [],
                            "referenceTo": [],
                        },
                        {
                            "name": "StageName",
                            "label": "Stage",
                            "type": "picklist",
                            "nillable": False,
                            "createable": True,
                            "updateable": True,
                            "picklistValues": [
                                {"active": True, "label": "Prospecting", "value": "Prospecting"},
                                {"active": False, "label": "Old", "value": "Old"},
                                {"active": True, "label": "Closed Won", "value": "Closed Won"},
                            ],
                            "referenceTo": [],
                        },
                        {
                            "name": "AccountId",
                            "label": "Account ID",
                            "type": "reference",
                            "nillable": True,
                            "createable": True,
                            "updateable": True,
                            "picklistValues": [],
                            "referenceTo": ["Account"],
                        },
                    ],
                },
            )
        ],
        {
            "name": "Opportunity",
            "label": "Opportunity",
            "custom": False,
            "fields": [
                {
                    "name": "Id",
                    "label": "Opportunity ID",
                    "type": "id",
                    "nillable": False,
                    "createable": False,
                    "updateable": False,
                },
                {
                    "name": "StageName",
                    "label": "Stage",
                    "type": "picklist",
                    "nillable": False,
                    "createable": True,
                    "updateable": True,
                    "picklistValues": ["Prospecting", "Closed Won"],
                },
                {
                    "name": "AccountId",
                    "label": "Account ID",
                    "type": "reference",
                    "nillable": True,
                    "createable": True,
                    "updateable": True,
                    "referenceTo": ["Account"],
                },
            ],
        },
    ),
    Case(
        "salesforce_list_objects",
        {"custom_only": True},
        [
            Call(
                "GET",
                f"{D}/sobjects",
                response={
                    "encoding": "UTF-8",
                    "maxBatchSize": 200,
                    "sobjects": [
                        {
                            "name": "Account",
                            "label": "Account",
                            "custom": False,
                            "queryable": True,
                            "keyPrefix": "001",
                        },
                        {
                            "name": "Invoice__c",
                            "label": "Invoice",
                            "custom": True,
                            "queryable": True,
                            "keyPrefix": "a00",
                        },
                        {
                            "name": "Hidden__c",
                            "label": "Hidden",
                            "custom": True,
                            "queryable": False,
                            "keyPrefix": "a01",
                        },
                    ],
                },
            )
        ],
        {"objects": [{"name": "Invoice__c", "label": "Invoice", "custom": True}]},
    ),
    Case(
        "salesforce_list_recent",
        {"limit": 2},
        [
            Call(
                "GET",
                f"{D}/recent",
                [("limit", "2")],
                response=[
                    {
                        "attributes": {
                            "type": "Account",
                            "url": "/services/data/v62.0/sobjects/Account/a06U000000CelH0IAJ",
                        },
                        "Id": "a06U000000CelH0IAJ",
                        "Name": "Acme",
                    },
                    {
                        "attributes": {"type": "Opportunity", "url": "/x"},
                        "Id": "a06U000000CelGvIAJ",
                        "Name": "Acme - 600 Widgets",
                    },
                ],
            )
        ],
        {
            "records": [
                {"type": "Account", "Id": "a06U000000CelH0IAJ", "Name": "Acme"},
                {"type": "Opportunity", "Id": "a06U000000CelGvIAJ", "Name": "Acme - 600 Widgets"},
            ]
        },
    ),
    Case(
        "salesforce_list_reports",
        {"limit": 1},
        [
            Call(
                "GET",
                f"{D}/analytics/reports",
                response=[
                    {
                        "name": "Deals Closing This Quarter",
                        "id": "00OD0000001ZbP7MAK",
                        "url": "/services/data/v62.0/analytics/reports/00OD0000001ZbP7MAK",
                        "describeUrl": "/d",
                        "instancesUrl": "/i",
                    },
                    {
                        "name": "Opportunity Pipeline",
                        "id": "00OD0000001ZbNHMA0",
                        "url": "/u",
                        "describeUrl": "/d",
                        "instancesUrl": "/i",
                    },
                ],
            )
        ],
        {"reports": [{"id": "00OD0000001ZbP7MAK", "name": "Deals Closing This Quarter"}]},
    ),
    Case(
        "salesforce_run_report",
        {"report_id": "00OD0000001ZbP7MAK"},
        [
            Call(
                "GET",
                f"{D}/analytics/reports/00OD0000001ZbP7MAK",
                [("includeDetails", "true")],
                response={
                    "attributes": {
                        "reportId": "00OD0000001ZbP7MAK",
                        "reportName": "Deals Closing This Quarter",
                        "type": "Report",
                    },
                    "allData": True,
                    "factMap": {
                        "T!T": {
                            "aggregates": [
                                {"label": "$1,500,000.00", "value": 1500000},
                                {"label": "2", "value": 2},
                            ],
                            "rows": [
                                {
                                    "dataCells": [
                                        {"label": "Acme - 600 Widgets", "value": "006D000000CsIoyIAF"},
                                        {
                                            "label": "$1,000,000.00",
                                            "value": {"amount": 1000000, "currency": None},
                                        },
                                    ]
                                },
                                {
                                    "dataCells": [
                                        {"label": "Edge Emergency Generator", "value": "006D000000CsIozIAF"},
                                        {
                                            "label": "$500,000.00",
                                            "value": {"amount": 500000, "currency": None},
                                        },
                                    ]
                                },
                            ],
                        }
                    },
                    "reportExtendedMetadata": {
                        "detailColumnInfo": {
                            "OPPORTUNITY_NAME": {"label": "Opportunity Name", "dataType": "string"},
                            "AMOUNT": {"label": "Amount", "dataType": "currency"},
                        }
                    },
                    "reportMetadata": {
                        "name": "Deals Closing This Quarter",
                        "id": "00OD0000001ZbP7MAK",
                        "reportFormat": "TABULAR",
                        "detailColumns": ["OPPORTUNITY_NAME", "AMOUNT"],
                    },
                },
            )
        ],
        {
            "name": "Deals Closing This Quarter",
            "columns": ["Opportunity Name", "Amount"],
            "rows": [["Acme - 600 Widgets", "$1,000,000.00"], ["Edge Emergency Generator", "$500,000.00"]],
            "rowCount": 2,
            "totals": ["$1,500,000.00", "2"],
            "allData": True,
        },
    ),
]


def test_every_tool_has_a_case() -> None:
    assert tool_names(sf_tools) == {c.tool for c in CASES}


def test_catalog_entries() -> None:
    check_catalog("salesforce", sf_tools)


@pytest.mark.parametrize("case", CASES, ids=str)
async def test_tool(case: Case, tmp_path: Path) -> None:
    await run_case(PLUGIN, tmp_path, case)


async def test_query_continues_from_the_cursor(tmp_path: Path) -> None:
    await run_case(
        PLUGIN,
        tmp_path,
        Case(
            "salesforce_query",
            {"cursor": "/services/data/v62.0/query/01gD0000002HU6KIAW-2000"},
            [
                Call(
                    "GET",
                    f"{D}/query/01gD0000002HU6KIAW-2000",
                    response={"totalSize": 3214, "done": True, "records": [ACCOUNT]},
                )
            ],
            {"totalSize": 3214, "records": [ACCOUNT_OUT], "nextCursor": None},
        ),
    )


async def test_query_refuses_a_foreign_cursor(tmp_path: Path) -> None:
    await run_error(
        PLUGIN,
        tmp_path,
        "salesforce_query",
        {"cursor": "https://evil.example/steal"},
        [],
        "cursor must be a nextCursor returned by salesforce_query",
    )


async def test_connection_without_instance_url_is_a_clear_error(tmp_path: Path) -> None:
    plugin = Plugin("salesforce", {"access_token": TOKEN}, f"Bearer {TOKEN}")
    await run_error(
        plugin,
        tmp_path,
        "salesforce_list_objects",
        {},
        [],
        "The Salesforce connection has no instance_url; reconnect Salesforce.",
    )


async def test_upstream_error_becomes_tool_error(tmp_path: Path) -> None:
    await run_error(
        PLUGIN,
        tmp_path,
        "salesforce_query",
        {"soql": "SELECT Nope FROM Account"},
        [
            Call(
                "GET",
                f"{D}/query",
                [("q", "SELECT Nope FROM Account")],
                status=400,
                response=[
                    {
                        "message": "\nSELECT Nope FROM Account\n       ^\nERROR at Row:1:Column:8\nNo such column 'Nope' on entity 'Account'.",
                        "errorCode": "INVALID_FIELD",
                    }
                ],
            )
        ],
        "salesforce API error 400: \nSELECT Nope FROM Account\n       ^\nERROR at Row:1:Column:8\nNo such column 'Nope' on entity 'Account'.",
    )


async def test_connecting_keeps_instance_url_from_the_token_response(tmp_path: Path) -> None:
    """The documented token response carries the org's host; the stored credential must keep it."""
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(
            200,
            json={
                "access_token": TOKEN,
                "refresh_token": "5Aep861KIwKdekr90I4iHdtDgWwRoG7O_6uHrgJ.yVtMS0UaGxRYypdqsxbg_AVPoU7jAqm0Uqi0hZXmn1lHlWWCW",
                "signature": "d/SxeYBxH0GSVko0HMgcUxuZy0PA2cDDz1u7g7JtDHw=",
                "scope": "refresh_token api",
                "instance_url": INSTANCE,
                "id": "https://login.salesforce.com/id/00Dxx0000001gPLEAY/005xx000001SwiUAAS",
                "token_type": "Bearer",
                "issued_at": "1278448384422",
            },
        )

    registry = Registry()
    registry.add(sf_pkg.manifest, lambda: [])
    settings = Settings(store="memory", data_dir=tmp_path, public_url="http://127.0.0.1:8787")
    object.__setattr__(
        settings, "plugin_env", {"SALESFORCE_CLIENT_ID": "3MVG9", "SALESFORCE_CLIENT_SECRET": "s"}
    )
    oauth = ProviderOAuth(settings, transport=httpx.MockTransport(handler))
    tokens = await oauth.exchange_code(
        sf_pkg.manifest,
        code="aPrx4sgoM2Nd1zWeFVlOWveD0HhYmiDiLmlLnXEBgX01tpVOQMWVSUuafFPHu3kCSjzk4CUTZg==",
        verifier="v" * 43,
    )
    assert str(sent[0].url) == "https://login.salesforce.com/services/oauth2/token"
    assert tokens.credential == {
        "access_token": TOKEN,
        "refresh_token": "5Aep861KIwKdekr90I4iHdtDgWwRoG7O_6uHrgJ.yVtMS0UaGxRYypdqsxbg_AVPoU7jAqm0Uqi0hZXmn1lHlWWCW",
        "token_type": "Bearer",
        "scope": "refresh_token api",
        "instance_url": INSTANCE,
    }
