"""HubSpot tools against a fake api.hubapi.com (bodies from HubSpot's CRM API reference examples)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qsl

import pytest
import workbench_plugins.hubspot as hubspot_pkg
from workbench_plugins.hubspot import tools as hubspot_tools

from tests.plugins.catalog_support import (
    Call,
    Case,
    Plugin,
    check_catalog,
    exchange_code,
    run_case,
    run_error,
    run_tool,
    tool_names,
)

PLUGIN = Plugin(
    "hubspot", {"access_token": "CJSP5qf1KhICAQEYs-gDIIGOBii1_wY"}, "Bearer CJSP5qf1KhICAQEYs-gDIIGOBii1_wY"
)
API = "https://api.hubapi.com"
CONTACT_PROPS = "email,firstname,lastname,phone,company,jobtitle,lifecyclestage,hubspot_owner_id"
DEAL_PROPS = ["dealname", "amount", "dealstage", "pipeline", "closedate", "hubspot_owner_id"]

CONTACT = {
    "id": "512",
    "properties": {
        "company": "Biglytics",
        "createdate": "2019-10-30T03:30:17.883Z",
        "email": "bcooper@biglytics.net",
        "firstname": "Bryan",
        "lastmodifieddate": "2019-12-07T16:50:06.678Z",
        "lastname": "Cooper",
        "phone": "(877) 929-0687",
    },
    "createdAt": "2019-10-30T03:30:17.883Z",
    "updatedAt": "2019-12-07T16:50:06.678Z",
    "archived": False,
}
CONTACT_OUT = {k: CONTACT[k] for k in ("id", "properties", "createdAt", "updatedAt")}
COMPANY = {
    "id": "5001",
    "properties": {"domain": "biglytics.net", "name": "Biglytics", "industry": "Technology"},
    "createdAt": "2019-10-30T03:30:17.883Z",
    "updatedAt": "2019-12-07T16:50:06.678Z",
    "archived": False,
}
COMPANY_OUT = {k: COMPANY[k] for k in ("id", "properties", "createdAt", "updatedAt")}
DEAL = {
    "id": "9001",
    "properties": {
        "amount": "1500.00",
        "closedate": "2019-12-07T16:50:06.678Z",
        "dealname": "Custom data integrations",
        "dealstage": "presentationscheduled",
        "pipeline": "default",
    },
    "createdAt": "2019-10-30T03:30:17.883Z",
    "updatedAt": "2019-12-07T16:50:06.678Z",
    "archived": False,
}
DEAL_OUT = {k: DEAL[k] for k in ("id", "properties", "createdAt", "updatedAt")}


def page(*items: dict, after: str | None = None) -> dict:
    body: dict = {"results": list(items)}
    if after:
        body["paging"] = {"next": {"after": after, "link": f"?after={after}"}}
    return body


CASES = [
    Case(
        "hubspot_list_contacts",
        {"limit": 1},
        [
            Call(
                "GET",
                f"{API}/crm/v3/objects/contacts",
                [("limit", "1"), ("properties", CONTACT_PROPS)],
                response=page(CONTACT, after="NTI1Cg%3D%3D"),
            )
        ],
        {"contacts": [CONTACT_OUT], "nextCursor": "NTI1Cg%3D%3D"},
    ),
    Case(
        "hubspot_get_contact",
        {"contact_id": "bcooper@biglytics.net", "id_property": "email", "properties": ["email", "phone"]},
        [
            Call(
                "GET",
                f"{API}/crm/v3/objects/contacts/bcooper@biglytics.net",
                [("properties", "email,phone"), ("idProperty", "email")],
                response=CONTACT,
            )
        ],
        CONTACT_OUT,
    ),
    Case(
        "hubspot_search_contacts",
        {
            "query": "Biglytics",
            "filters": [{"propertyName": "lifecyclestage", "operator": "EQ", "value": "customer"}],
            "limit": 5,
            "cursor": "20",
        },
        [
            Call(
                "POST",
                f"{API}/crm/v3/objects/contacts/search",
                json={
                    "limit": 5,
                    "properties": CONTACT_PROPS.split(","),
                    "query": "Biglytics",
                    "filterGroups": [
                        {
                            "filters": [
                                {"propertyName": "lifecyclestage", "operator": "EQ", "value": "customer"}
                            ]
                        }
                    ],
                    "after": "20",
                },
                response={"total": 1, "results": [CONTACT]},
            )
        ],
        {"contacts": [CONTACT_OUT], "nextCursor": None, "total": 1},
    ),
    Case(
        "hubspot_search_deals",
        {"filters": [{"propertyName": "amount", "operator": "GT", "value": "1000"}]},
        [
            Call(
                "POST",
                f"{API}/crm/v3/objects/deals/search",
                json={
                    "limit": 20,
                    "properties": DEAL_PROPS,
                    "filterGroups": [
                        {"filters": [{"propertyName": "amount", "operator": "GT", "value": "1000"}]}
                    ],
                },
                response={"total": 2, "results": [DEAL], "paging": {"next": {"after": "1"}}},
            )
        ],
        {"deals": [DEAL_OUT], "nextCursor": "1", "total": 2},
    ),
    Case(
        "hubspot_create_contact",
        {
            "email": "bcooper@biglytics.net",
            "firstname": "Bryan",
            "lastname": "Cooper",
            "properties": {"website": "biglytics.net"},
        },
        [
            Call(
                "POST",
                f"{API}/crm/v3/objects/contacts",
                json={
                    "properties": {
                        "email": "bcooper@biglytics.net",
                        "firstname": "Bryan",
                        "lastname": "Cooper",
                        "website": "biglytics.net",
                    }
                },
                status=201,
                response=CONTACT,
            )
        ],
        CONTACT_OUT,
    ),
    Case(
        "hubspot_update_contact",
        {"id": "512", "properties": {"lifecyclestage": "customer"}},
        [
            Call(
                "PATCH",
                f"{API}/crm/v3/objects/contacts/512",
                json={"properties": {"lifecyclestage": "customer"}},
                response=CONTACT,
            )
        ],
        CONTACT_OUT,
    ),
    Case(
        "hubspot_list_companies",
        {"properties": ["name", "domain"], "cursor": "abc"},
        [
            Call(
                "GET",
                f"{API}/crm/v3/objects/companies",
                [("limit", "20"), ("after", "abc"), ("properties", "name,domain")],
                response=page(COMPANY),
            )
        ],
        {"companies": [COMPANY_OUT], "nextCursor": None},
    ),
    Case(
        "hubspot_create_company",
        {"name": "Biglytics", "domain": "biglytics.net", "properties": {"industry": "Technology"}},
        [
            Call(
                "POST",
                f"{API}/crm/v3/objects/companies",
                json={
                    "properties": {"name": "Biglytics", "domain": "biglytics.net", "industry": "Technology"}
                },
                status=201,
                response=COMPANY,
            )
        ],
        COMPANY_OUT,
    ),
    Case(
        "hubspot_list_deals",
        {},
        [
            Call(
                "GET",
                f"{API}/crm/v3/objects/deals",
                [("limit", "20"), ("properties", ",".join(DEAL_PROPS))],
                response=page(DEAL),
            )
        ],
        {"deals": [DEAL_OUT], "nextCursor": None},
    ),
    Case(
        "hubspot_create_deal",
        {
            "dealname": "Custom data integrations",
            "amount": "1500.00",
            "contact_id": "512",
            "company_id": "5001",
        },
        [
            # No stage given: the pipeline's first stage by displayOrder (not the listing order)
            Call(
                "GET",
                f"{API}/crm/v3/pipelines/deals/default",
                response={
                    "id": "default",
                    "label": "Sales Pipeline",
                    "displayOrder": 0,
                    "stages": [
                        {"id": "qualifiedtobuy", "label": "Qualified To Buy", "displayOrder": 1},
                        {"id": "appointmentscheduled", "label": "Appointment Scheduled", "displayOrder": 0},
                    ],
                },
            ),
            Call(
                "POST",
                f"{API}/crm/v3/objects/deals",
                json={
                    "properties": {
                        "dealname": "Custom data integrations",
                        "dealstage": "appointmentscheduled",
                        "pipeline": "default",
                        "amount": "1500.00",
                    },
                    "associations": [
                        {
                            "to": {"id": "512"},
                            "types": [{"associationCategory": "HUBSPOT_DEFINED", "associationTypeId": 3}],
                        },
                        {
                            "to": {"id": "5001"},
                            "types": [{"associationCategory": "HUBSPOT_DEFINED", "associationTypeId": 5}],
                        },
                    ],
                },
                status=201,
                response=DEAL,
            ),
        ],
        DEAL_OUT,
    ),
    Case(
        "hubspot_update_deal",
        {"id": "9001", "properties": {"dealstage": "closedwon"}},
        [
            Call(
                "PATCH",
                f"{API}/crm/v3/objects/deals/9001",
                json={"properties": {"dealstage": "closedwon"}},
                response=DEAL,
            )
        ],
        DEAL_OUT,
    ),
    Case(
        "hubspot_create_note",
        {
            "body": "Spoke with decision maker Carla.",
            "timestamp": "2021-11-12T15:48:22Z",
            "contact_id": "512",
            "deal_id": "9001",
        },
        [
            Call(
                "POST",
                f"{API}/crm/v3/objects/notes",
                json={
                    "properties": {
                        "hs_timestamp": "2021-11-12T15:48:22Z",
                        "hs_note_body": "Spoke with decision maker Carla.",
                    },
                    "associations": [
                        {
                            "to": {"id": "512"},
                            "types": [{"associationCategory": "HUBSPOT_DEFINED", "associationTypeId": 202}],
                        },
                        {
                            "to": {"id": "9001"},
                            "types": [{"associationCategory": "HUBSPOT_DEFINED", "associationTypeId": 214}],
                        },
                    ],
                },
                status=201,
                response={
                    "id": "18",
                    "properties": {
                        "hs_note_body": "Spoke with decision maker Carla.",
                        "hs_timestamp": "2021-11-12T15:48:22Z",
                    },
                    "createdAt": "2021-11-12T15:48:22.412Z",
                    "updatedAt": "2021-11-12T15:48:22.412Z",
                    "archived": False,
                },
            )
        ],
        {
            "id": "18",
            "properties": {
                "hs_note_body": "Spoke with decision maker Carla.",
                "hs_timestamp": "2021-11-12T15:48:22Z",
            },
            "createdAt": "2021-11-12T15:48:22.412Z",
            "updatedAt": "2021-11-12T15:48:22.412Z",
        },
    ),
    Case(
        "hubspot_list_properties",
        {"object_type": "deals"},
        [
            Call(
                "GET",
                f"{API}/crm/v3/properties/deals",
                {"archived": "false"},
                response={
                    "results": [
                        {
                            "name": "dealstage",
                            "label": "Deal Stage",
                            "type": "enumeration",
                            "fieldType": "radio",
                            "description": "The stage of the deal.",
                            "groupName": "dealinformation",
                            "options": [
                                {
                                    "label": "Appointment Scheduled",
                                    "value": "appointmentscheduled",
                                    "displayOrder": 0,
                                },
                                {"label": "Closed Won", "value": "closedwon", "displayOrder": 5},
                            ],
                            "modificationMetadata": {"archivable": False, "readOnlyValue": False},
                            "hidden": False,
                        },
                        {
                            "name": "hs_object_id",
                            "label": "Record ID",
                            "type": "number",
                            "fieldType": "number",
                            "description": "The unique ID for this record.",
                            "groupName": "dealinformation",
                            "options": [],
                            "modificationMetadata": {"archivable": True, "readOnlyValue": True},
                        },
                    ]
                },
            )
        ],
        {
            "properties": [
                {
                    "name": "dealstage",
                    "label": "Deal Stage",
                    "type": "enumeration",
                    "fieldType": "radio",
                    "groupName": "dealinformation",
                    "description": "The stage of the deal.",
                    "options": ["appointmentscheduled", "closedwon"],
                },
                {
                    "name": "hs_object_id",
                    "label": "Record ID",
                    "type": "number",
                    "fieldType": "number",
                    "groupName": "dealinformation",
                    "description": "The unique ID for this record.",
                    "readOnly": True,
                },
            ]
        },
    ),
    Case(
        "hubspot_list_owners",
        {"email": "ada@example.com"},
        [
            Call(
                "GET",
                f"{API}/crm/v3/owners",
                [("email", "ada@example.com"), ("limit", "100")],
                response={
                    "results": [
                        {
                            "id": "41629779",
                            "email": "ada@example.com",
                            "type": "PERSON",
                            "firstName": "Ada",
                            "lastName": "Lovelace",
                            "userId": 9586504,
                            "createdAt": "2019-12-25T13:01:35.228Z",
                            "updatedAt": "2023-08-22T13:40:26.790Z",
                            "archived": False,
                            "teams": [{"id": "368389", "name": "Sales Team", "primary": True}],
                        }
                    ]
                },
            )
        ],
        {
            "owners": [
                {
                    "id": "41629779",
                    "email": "ada@example.com",
                    "firstName": "Ada",
                    "lastName": "Lovelace",
                    "userId": 9586504,
                    "archived": False,
                }
            ],
            "nextCursor": None,
        },
    ),
]


COMPANY_PROPS = "name,domain,industry,city,country,phone,numberofemployees,hubspot_owner_id"
PIPELINE = {
    "id": "default",
    "label": "Sales Pipeline",
    "displayOrder": 0,
    "archived": False,
    "stages": [
        {"id": "closedwon", "label": "Closed Won", "displayOrder": 5, "metadata": {"probability": "1.0"}},
        {
            "id": "appointmentscheduled",
            "label": "Appointment Scheduled",
            "displayOrder": 0,
            "metadata": {"probability": "0.2"},
        },
    ],
}
TASK = {
    "id": "7301",
    "properties": {
        "hs_task_subject": "Call Bryan",
        "hs_task_status": "NOT_STARTED",
        "hs_timestamp": "2024-05-01T17:00:00Z",
    },
    "createdAt": "2024-04-29T10:00:00Z",
    "updatedAt": "2024-04-29T10:00:00Z",
    "archived": False,
}

# HubSpot's default ticket pipeline (the tickets guide's example ids) and a ticket record.
TICKET_PIPELINE = {
    "id": "0",
    "label": "Support Pipeline",
    "displayOrder": 0,
    "archived": False,
    "stages": [
        {"id": "4", "label": "Closed", "displayOrder": 3, "metadata": {"ticketState": "CLOSED"}},
        {"id": "1", "label": "New", "displayOrder": 0, "metadata": {"ticketState": "OPEN"}},
    ],
}
TICKET = {
    "id": "512",
    "properties": {
        "hs_pipeline": "0",
        "hs_pipeline_stage": "1",
        "hs_ticket_priority": "HIGH",
        "subject": "troubleshoot report",
        "createdate": "2019-10-30T03:30:17.883Z",
    },
    "createdAt": "2019-10-30T03:30:17.883Z",
    "updatedAt": "2019-12-07T16:50:06.678Z",
    "archived": False,
}
TICKET_OUT = {k: TICKET[k] for k in ("id", "properties", "createdAt", "updatedAt")}
TICKET_PROPS = "subject,content,hs_pipeline,hs_pipeline_stage,hs_ticket_priority,hs_ticket_category,hubspot_owner_id,createdate"

CASES += [
    Case(
        "hubspot_get_company",
        {"id": "5001"},
        [
            Call(
                "GET", f"{API}/crm/v3/objects/companies/5001", {"properties": COMPANY_PROPS}, response=COMPANY
            )
        ],
        COMPANY_OUT,
    ),
    Case(
        "hubspot_search_companies",
        {"query": "biglytics", "limit": 5},
        [
            Call(
                "POST",
                f"{API}/crm/v3/objects/companies/search",
                json={"limit": 5, "properties": COMPANY_PROPS.split(","), "query": "biglytics"},
                response={"total": 1, "results": [COMPANY]},
            )
        ],
        {"companies": [COMPANY_OUT], "nextCursor": None, "total": 1},
    ),
    Case(
        "hubspot_update_company",
        {"id": "5001", "properties": {"city": "Cambridge"}},
        [
            Call(
                "PATCH",
                f"{API}/crm/v3/objects/companies/5001",
                json={"properties": {"city": "Cambridge"}},
                response=COMPANY,
            )
        ],
        COMPANY_OUT,
    ),
    Case(
        "hubspot_get_deal",
        {"id": "9001", "properties": ["dealname", "dealstage"]},
        [
            Call(
                "GET", f"{API}/crm/v3/objects/deals/9001", {"properties": "dealname,dealstage"}, response=DEAL
            )
        ],
        DEAL_OUT,
    ),
    Case(
        "hubspot_list_pipelines",
        {},
        [
            Call(
                "GET",
                f"{API}/crm/v3/pipelines/deals",
                response={
                    "results": [
                        {**PIPELINE, "id": "p2", "label": "Renewals", "displayOrder": 1, "stages": []},
                        PIPELINE,
                    ]
                },
            )
        ],
        {
            "pipelines": [
                {
                    "id": "default",
                    "label": "Sales Pipeline",
                    "displayOrder": 0,
                    "archived": False,
                    "stages": [
                        {
                            "id": "appointmentscheduled",
                            "label": "Appointment Scheduled",
                            "displayOrder": 0,
                            "probability": "0.2",
                        },
                        {"id": "closedwon", "label": "Closed Won", "displayOrder": 5, "probability": "1.0"},
                    ],
                },
                {"id": "p2", "label": "Renewals", "displayOrder": 1, "archived": False, "stages": []},
            ]
        },
    ),
    Case(
        "hubspot_list_associations",
        {"object_type": "deals", "object_id": "9001", "to_object_type": "contacts", "limit": 2},
        [
            Call(
                "GET",
                f"{API}/crm/v4/objects/deals/9001/associations/contacts",
                {"limit": 2},
                response={
                    "results": [
                        {
                            "toObjectId": 512,
                            "associationTypes": [
                                {"category": "HUBSPOT_DEFINED", "typeId": 3, "label": None},
                                {"category": "USER_DEFINED", "typeId": 27, "label": "Decision maker"},
                            ],
                        }
                    ],
                    "paging": {"next": {"after": "MTI0"}},
                },
            )
        ],
        {"associations": [{"id": "512", "labels": ["Decision maker"]}], "nextCursor": "MTI0"},
    ),
    Case(
        "hubspot_associate_records",
        {
            "object_type": "contacts",
            "object_id": "512",
            "to_object_type": "companies",
            "to_object_id": "5001",
        },
        [
            Call(
                "PUT",
                f"{API}/crm/v4/objects/contacts/512/associations/default/companies/5001",
                response={
                    "status": "COMPLETE",
                    "results": [
                        {
                            "from": {"id": "512"},
                            "to": {"id": "5001"},
                            "associationSpec": {
                                "associationCategory": "HUBSPOT_DEFINED",
                                "associationTypeId": 279,
                            },
                        }
                    ],
                },
            )
        ],
        {
            "associated": True,
            "results": [{"from_id": "512", "to_id": "5001", "associationSpec_associationTypeId": 279}],
        },
    ),
    Case(
        "hubspot_create_task",
        {
            "subject": "Call Bryan",
            "due": "2024-05-01T17:00:00Z",
            "priority": "HIGH",
            "contact_id": "512",
            "deal_id": "9001",
        },
        [
            Call(
                "POST",
                f"{API}/crm/v3/objects/tasks",
                json={
                    "properties": {
                        "hs_task_subject": "Call Bryan",
                        "hs_timestamp": "2024-05-01T17:00:00Z",
                        "hs_task_status": "NOT_STARTED",
                        "hs_task_priority": "HIGH",
                        "hs_task_type": "TODO",
                    },
                    "associations": [
                        {
                            "to": {"id": "512"},
                            "types": [{"associationCategory": "HUBSPOT_DEFINED", "associationTypeId": 204}],
                        },
                        {
                            "to": {"id": "9001"},
                            "types": [{"associationCategory": "HUBSPOT_DEFINED", "associationTypeId": 216}],
                        },
                    ],
                },
                status=201,
                response=TASK,
            )
        ],
        {k: TASK[k] for k in ("id", "properties", "createdAt", "updatedAt")},
    ),
    Case(
        "hubspot_list_tickets",
        {"limit": 1},
        [
            Call(
                "GET",
                f"{API}/crm/v3/objects/tickets",
                {"limit": 1, "properties": TICKET_PROPS},
                response=page(TICKET, after="NTI1Cg=="),
            )
        ],
        {"tickets": [TICKET_OUT], "nextCursor": "NTI1Cg=="},
    ),
    Case(
        "hubspot_get_ticket",
        {"id": "512", "properties": ["subject", "hs_pipeline_stage"]},
        [
            Call(
                "GET",
                f"{API}/crm/v3/objects/tickets/512",
                {"properties": "subject,hs_pipeline_stage"},
                response=TICKET,
            )
        ],
        TICKET_OUT,
    ),
    Case(
        "hubspot_search_tickets",
        {"filters": [{"propertyName": "hs_ticket_priority", "operator": "EQ", "value": "HIGH"}]},
        [
            Call(
                "POST",
                f"{API}/crm/v3/objects/tickets/search",
                json={
                    "limit": 20,
                    "properties": TICKET_PROPS.split(","),
                    "filterGroups": [
                        {
                            "filters": [
                                {"propertyName": "hs_ticket_priority", "operator": "EQ", "value": "HIGH"}
                            ]
                        }
                    ],
                },
                response={"total": 1, **page(TICKET)},
            )
        ],
        {"tickets": [TICKET_OUT], "nextCursor": None, "total": 1},
    ),
    Case(
        "hubspot_create_ticket",
        {"subject": "troubleshoot report", "priority": "HIGH", "contact_id": "201", "company_id": "5001"},
        [
            # No stage given: the pipeline's first stage by displayOrder
            Call("GET", f"{API}/crm/v3/pipelines/tickets/0", response=TICKET_PIPELINE),
            Call(
                "POST",
                f"{API}/crm/v3/objects/tickets",
                json={
                    "properties": {
                        "subject": "troubleshoot report",
                        "hs_pipeline": "0",
                        "hs_pipeline_stage": "1",
                        "hs_ticket_priority": "HIGH",
                    },
                    "associations": [
                        {
                            "to": {"id": "201"},
                            "types": [{"associationCategory": "HUBSPOT_DEFINED", "associationTypeId": 16}],
                        },
                        {
                            "to": {"id": "5001"},
                            "types": [{"associationCategory": "HUBSPOT_DEFINED", "associationTypeId": 26}],
                        },
                    ],
                },
                status=201,
                response=TICKET,
            ),
        ],
        TICKET_OUT,
    ),
    Case(
        "hubspot_update_ticket",
        {"id": "512", "properties": {"hs_pipeline_stage": "4"}},
        [
            Call(
                "PATCH",
                f"{API}/crm/v3/objects/tickets/512",
                json={"properties": {"hs_pipeline_stage": "4"}},
                response={**TICKET, "properties": {**TICKET["properties"], "hs_pipeline_stage": "4"}},
            )
        ],
        {**TICKET_OUT, "properties": {**TICKET["properties"], "hs_pipeline_stage": "4"}},
    ),
    Case(
        "hubspot_list_pipelines",
        {"object_type": "tickets"},
        [Call("GET", f"{API}/crm/v3/pipelines/tickets", response={"results": [TICKET_PIPELINE]})],
        {
            "pipelines": [
                {
                    "id": "0",
                    "label": "Support Pipeline",
                    "displayOrder": 0,
                    "archived": False,
                    "stages": [
                        {
                            "id": "1",
                            "label": "New",
                            "displayOrder": 0,
                            "probability": None,
                            "ticketState": "OPEN",
                        },
                        {
                            "id": "4",
                            "label": "Closed",
                            "displayOrder": 3,
                            "probability": None,
                            "ticketState": "CLOSED",
                        },
                    ],
                }
            ]
        },
    ),
]


def test_every_tool_has_a_case() -> None:
    assert tool_names(hubspot_tools) == {c.tool for c in CASES}


def test_catalog_entries() -> None:
    check_catalog("hubspot", hubspot_tools)


@pytest.mark.parametrize("case", CASES, ids=str)
async def test_tool(case: Case, tmp_path: Path) -> None:
    await run_case(PLUGIN, tmp_path, case)


async def test_note_needs_a_record_to_attach_to(tmp_path: Path) -> None:
    await run_error(
        PLUGIN,
        tmp_path,
        "hubspot_create_note",
        {"body": "x", "timestamp": "2021-11-12T15:48:22Z"},
        [],
        "Give at least one of contact_id, company_id or deal_id",
    )


async def test_upstream_error_becomes_tool_error(tmp_path: Path) -> None:
    await run_error(
        PLUGIN,
        tmp_path,
        "hubspot_update_deal",
        {"id": "1", "properties": {"dealstage": "x"}},
        [
            Call(
                "PATCH",
                f"{API}/crm/v3/objects/deals/1",
                json={"properties": {"dealstage": "x"}},
                status=404,
                response={
                    "status": "error",
                    "message": "Object not found.  objectId are usually numeric.",
                    "correlationId": "6f4c3e2a-1b0d-4a8e-9f2b-7d5c8e9a1b2c",
                    "category": "OBJECT_NOT_FOUND",
                },
            )
        ],
        "hubspot API error 404: Object not found.  objectId are usually numeric.",
    )


async def test_connecting_sends_the_client_secret_in_the_body(tmp_path: Path) -> None:
    request, _ = await exchange_code(
        tmp_path,
        hubspot_pkg.manifest,
        {"access_token": "CJSP5qf1KhICAQEYs-gDIIGOBii1_wY", "refresh_token": "6f18f21e", "expires_in": 1800},
    )
    assert str(request.url) == "https://api.hubapi.com/oauth/v1/token"
    assert "authorization" not in request.headers
    form = dict(parse_qsl(request.content.decode()))
    assert form["client_id"] == "client-id-1" and form["client_secret"] == "s3cr3t/+="


async def test_create_deal_with_a_stage_makes_no_pipeline_lookup(tmp_path: Path) -> None:
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "hubspot_create_deal",
        {"dealname": "Renewal", "pipeline": "7788", "dealstage": "7788-won"},
        [
            Call(
                "POST",
                f"{API}/crm/v3/objects/deals",
                json={"properties": {"dealname": "Renewal", "dealstage": "7788-won", "pipeline": "7788"}},
                status=201,
                response=DEAL,
            )
        ],
    )
    assert out == {"results": [{"result": DEAL_OUT}]}


async def test_create_deal_in_a_pipeline_without_stages_is_refused(tmp_path: Path) -> None:
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "hubspot_create_deal",
        {"dealname": "Renewal", "pipeline": "7788"},
        [Call("GET", f"{API}/crm/v3/pipelines/deals/7788", response={"id": "7788", "stages": []})],
    )
    assert out == {"results": [{"error": "Pipeline '7788' has no stages; give dealstage."}]}
