"""Zendesk tools against a fake acme.zendesk.com (bodies from Zendesk's API reference examples)."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from workbench_plugins.zendesk import tools as zendesk_tools

from tests.plugins.catalog_support import (
    Call,
    Case,
    Plugin,
    check_catalog,
    run_case,
    run_error,
    run_tool,
    tool_names,
)

CRED = {
    "email": "jdoe@example.com",
    "api_token": "6wiIBWbGkBMo1mRDMuVwkw1EPsNkeUj95PIz2akv",
    "subdomain": "acme",
}
BASIC = (
    "Basic " + base64.b64encode(b"jdoe@example.com/token:6wiIBWbGkBMo1mRDMuVwkw1EPsNkeUj95PIz2akv").decode()
)
PLUGIN = Plugin("zendesk", CRED, BASIC)
API = "https://acme.zendesk.com/api/v2"

TICKET = {
    "id": 35436,
    "url": "https://acme.zendesk.com/api/v2/tickets/35436.json",
    "assignee_id": 235323,
    "created_at": "2009-07-20T22:55:29Z",
    "description": "The fire is very colorful.",
    "group_id": 98738,
    "organization_id": 509974,
    "priority": "high",
    "requester_id": 20978392,
    "status": "open",
    "subject": "Help, my printer is on fire!",
    "tags": ["enterprise", "other_tag"],
    "type": "incident",
    "updated_at": "2011-05-05T10:38:52Z",
    "via": {"channel": "web"},
}
TICKET_OUT = {k: TICKET[k] for k in zendesk_tools._TICKET}
USER = {
    "id": 35436,
    "url": "https://acme.zendesk.com/api/v2/users/35436.json",
    "name": "Johnny Agent",
    "email": "johnny@example.com",
    "role": "agent",
    "organization_id": 57542,
    "active": True,
    "created_at": "2009-07-20T22:55:29Z",
    "time_zone": "Copenhagen",
}
USER_OUT = {k: USER[k] for k in zendesk_tools._USER}
META_MORE = {"has_more": True, "after_cursor": "xxx", "before_cursor": "yyy"}
META_END = {"has_more": False, "after_cursor": None, "before_cursor": "yyy"}

CASES = [
    Case(
        "zendesk_list_tickets",
        {"perPage": 2},
        [
            Call(
                "GET",
                f"{API}/tickets",
                [("page[size]", "2")],
                response={
                    "tickets": [TICKET],
                    "meta": META_MORE,
                    "links": {"next": f"{API}/tickets.json?page[after]=xxx"},
                },
            )
        ],
        {"tickets": [TICKET_OUT], "nextCursor": "xxx"},
    ),
    Case(
        "zendesk_get_ticket",
        {"ticket_id": 35436},
        [Call("GET", f"{API}/tickets/35436", response={"ticket": TICKET})],
        TICKET_OUT,
    ),
    Case(
        "zendesk_search_tickets",
        {"query": "status:open printer", "cursor": "2", "sort_by": "updated_at"},
        [
            Call(
                "GET",
                f"{API}/search",
                [
                    ("query", "type:ticket status:open printer"),
                    ("per_page", "25"),
                    ("page", "2"),
                    ("sort_by", "updated_at"),
                    ("sort_order", "desc"),
                ],
                response={
                    "results": [{**TICKET, "result_type": "ticket"}],
                    "count": 1234,
                    "next_page": f"{API}/search.json?page=3&query=type%3Aticket",
                    "previous_page": f"{API}/search.json?page=1",
                },
            )
        ],
        {"tickets": [TICKET_OUT], "count": 1234, "nextCursor": "3"},
    ),
    Case(
        "zendesk_create_ticket",
        {
            "subject": "Help, my printer is on fire!",
            "body": "The smoke is very colorful.",
            "priority": "urgent",
            "requester_email": "jdoe@example.com",
            "requester_name": "Jane Doe",
        },
        [
            Call(
                "POST",
                f"{API}/tickets",
                json={
                    "ticket": {
                        "subject": "Help, my printer is on fire!",
                        "comment": {"body": "The smoke is very colorful."},
                        "priority": "urgent",
                        "requester": {"email": "jdoe@example.com", "name": "Jane Doe"},
                    }
                },
                status=201,
                response={"ticket": TICKET, "audit": {"events": []}},
            )
        ],
        TICKET_OUT,
    ),
    Case(
        "zendesk_update_ticket",
        {"ticket_id": 35436, "status": "solved", "tags": ["printer"]},
        [
            Call(
                "PUT",
                f"{API}/tickets/35436",
                json={"ticket": {"status": "solved", "tags": ["printer"]}},
                response={"ticket": {**TICKET, "status": "solved", "tags": ["printer"]}, "audit": {}},
            )
        ],
        {**TICKET_OUT, "status": "solved", "tags": ["printer"]},
    ),
    Case(
        "zendesk_add_comment",
        {"ticket_id": 35436, "body": "Checked with engineering.", "public": False},
        [
            Call(
                "PUT",
                f"{API}/tickets/35436",
                json={"ticket": {"comment": {"body": "Checked with engineering.", "public": False}}},
                response={"ticket": TICKET, "audit": {}},
            )
        ],
        {"id": 35436, "status": "open", "updated_at": "2011-05-05T10:38:52Z"},
    ),
    Case(
        "zendesk_list_ticket_comments",
        {"ticket_id": 35436, "cursor": "abc"},
        [
            Call(
                "GET",
                f"{API}/tickets/35436/comments",
                [("page[size]", "25"), ("page[after]", "abc")],
                response={
                    "comments": [
                        {
                            "id": 1274,
                            "type": "Comment",
                            "author_id": 123123,
                            "body": "Thanks for your help!",
                            "html_body": "<p>Thanks for your help!</p>",
                            "public": True,
                            "attachments": [],
                            "created_at": "2009-07-20T22:55:29Z",
                        }
                    ],
                    "meta": META_END,
                },
            )
        ],
        {
            "comments": [
                {
                    "id": 1274,
                    "author_id": 123123,
                    "body": "Thanks for your help!",
                    "public": True,
                    "created_at": "2009-07-20T22:55:29Z",
                }
            ],
            "nextCursor": None,
        },
    ),
    Case(
        "zendesk_list_users",
        {"role": "agent"},
        [
            Call(
                "GET",
                f"{API}/users",
                [("page[size]", "25"), ("role", "agent")],
                response={"users": [USER], "meta": META_END},
            )
        ],
        {"users": [USER_OUT], "nextCursor": None},
    ),
    Case(
        "zendesk_search_users",
        {"query": "johnny@example.com"},
        [
            Call(
                "GET",
                f"{API}/users/search",
                [("query", "johnny@example.com")],
                response={"users": [USER], "count": 1},
            )
        ],
        {"users": [USER_OUT]},
    ),
    Case(
        "zendesk_create_user",
        {"name": "Roger Wilco", "email": "roge@example.org"},
        [
            Call(
                "POST",
                f"{API}/users",
                json={"user": {"name": "Roger Wilco", "email": "roge@example.org", "role": "end-user"}},
                status=201,
                response={
                    "user": {
                        "id": 9873843,
                        "name": "Roger Wilco",
                        "email": "roge@example.org",
                        "role": "end-user",
                        "organization_id": None,
                        "active": True,
                        "created_at": "2024-01-02T03:04:05Z",
                    }
                },
            )
        ],
        {
            "id": 9873843,
            "name": "Roger Wilco",
            "email": "roge@example.org",
            "role": "end-user",
            "organization_id": None,
            "active": True,
            "created_at": "2024-01-02T03:04:05Z",
        },
    ),
    Case(
        "zendesk_list_organizations",
        {},
        [
            Call(
                "GET",
                f"{API}/organizations",
                [("page[size]", "25")],
                response={
                    "organizations": [
                        {
                            "id": 35436,
                            "name": "One Organization",
                            "domain_names": ["example.com"],
                            "tags": ["vip"],
                            "created_at": "2009-07-20T22:55:29Z",
                            "details": "This is a kind of organization",
                        }
                    ],
                    "meta": META_END,
                },
            )
        ],
        {
            "organizations": [
                {
                    "id": 35436,
                    "name": "One Organization",
                    "domain_names": ["example.com"],
                    "tags": ["vip"],
                    "created_at": "2009-07-20T22:55:29Z",
                }
            ],
            "nextCursor": None,
        },
    ),
    Case(
        "zendesk_list_groups",
        {},
        [
            Call(
                "GET",
                f"{API}/groups",
                [("page[size]", "25")],
                response={
                    "groups": [
                        {
                            "id": 211,
                            "name": "DJs",
                            "description": "Peeps who DJ",
                            "default": True,
                            "created_at": "2009-05-13T00:07:08Z",
                        },
                        {
                            "id": 122,
                            "name": "MCs",
                            "description": "Peeps who MC",
                            "default": False,
                            "created_at": "2009-08-26T00:07:08Z",
                        },
                    ],
                    "meta": META_END,
                },
            )
        ],
        {
            "groups": [
                {"id": 211, "name": "DJs", "description": "Peeps who DJ", "default": True},
                {"id": 122, "name": "MCs", "description": "Peeps who MC", "default": False},
            ],
            "nextCursor": None,
        },
    ),
]


MACRO = {
    "id": 25,
    "title": "Close and redirect to topics",
    "description": "Close the ticket with a link to the forum",
    "active": True,
    "updated_at": "2019-09-16T02:17:38Z",
    "actions": [{"field": "status", "value": "solved"}, {"field": "priority", "value": "normal"}],
    "restriction": None,
}
MACRO_RESULT = {
    "result": {
        "ticket": {"id": 35436, "status": "solved", "priority": "normal"},
        "comment": {
            "body": "Thanks, see the forum.",
            "html_body": "<p>Thanks, see the forum.</p>",
            "public": True,
            "scoped_body": [],
        },
    }
}

CASES += [
    Case(
        "zendesk_list_macros",
        {"active": True, "perPage": 10},
        [
            Call(
                "GET",
                f"{API}/macros",
                {"page[size]": 10, "active": "true"},
                response={"macros": [MACRO], "meta": META_END},
            )
        ],
        {
            "macros": [
                {
                    "id": 25,
                    "title": "Close and redirect to topics",
                    "description": "Close the ticket with a link to the forum",
                    "active": True,
                    "updated_at": "2019-09-16T02:17:38Z",
                    "actions": [
                        {"field": "status", "value": "solved"},
                        {"field": "priority", "value": "normal"},
                    ],
                }
            ],
            "nextCursor": None,
        },
    ),
    Case(
        "zendesk_apply_macro",
        {"ticket_id": 35436, "macro_id": 25},
        [
            Call("GET", f"{API}/tickets/35436/macros/25/apply", response=MACRO_RESULT),
            Call(
                "PUT",
                f"{API}/tickets/35436",
                json={
                    "ticket": {
                        "status": "solved",
                        "priority": "normal",
                        "comment": {
                            "body": "Thanks, see the forum.",
                            "html_body": "<p>Thanks, see the forum.</p>",
                            "public": True,
                        },
                    }
                },
                response={"ticket": {**TICKET, "status": "solved"}},
            ),
        ],
        {"ticket_id": 35436, "applied": True, "ticket": {**TICKET_OUT, "status": "solved"}},
    ),
    Case(
        "zendesk_search_articles",
        {"query": "carrot", "locale": "en-us", "perPage": 1},
        [
            Call(
                "GET",
                f"{API}/help_center/articles/search",
                {"query": "carrot", "locale": "en-us", "per_page": 1, "page": 1},
                response={
                    "count": 3,
                    "next_page": "https://acme.zendesk.com/api/v2/help_center/articles/search.json?page=2&per_page=1&query=carrot",
                    "page": 1,
                    "page_count": 3,
                    "per_page": 1,
                    "previous_page": None,
                    "results": [
                        {
                            "id": 35467,
                            "title": "Carrot cake recipe",
                            "html_url": "https://acme.zendesk.com/hc/en-us/articles/35467-Carrot-cake-recipe",
                            "snippet": "Grate the <em>carrots</em> finely",
                            "locale": "en-us",
                            "section_id": 98838,
                            "author_id": 888887,
                            "body": "<p>Grate the carrots finely.</p>",
                            "updated_at": "2023-01-02T10:00:00Z",
                        }
                    ],
                },
            )
        ],
        {
            "articles": [
                {
                    "id": 35467,
                    "title": "Carrot cake recipe",
                    "html_url": "https://acme.zendesk.com/hc/en-us/articles/35467-Carrot-cake-recipe",
                    "snippet": "Grate the <em>carrots</em> finely",
                    "locale": "en-us",
                    "section_id": 98838,
                    "updated_at": "2023-01-02T10:00:00Z",
                }
            ],
            "nextPage": 2,
        },
    ),
    Case(
        "zendesk_list_views",
        {},
        [
            Call(
                "GET",
                f"{API}/views",
                {"page[size]": 25},
                response={
                    "views": [
                        {
                            "id": 25,
                            "title": "Tickets updated <12 Hours",
                            "active": True,
                            "position": 3,
                            "updated_at": "2011-05-05T10:38:52Z",
                            "conditions": {},
                        }
                    ],
                    "meta": META_MORE,
                },
            )
        ],
        {
            "views": [
                {
                    "id": 25,
                    "title": "Tickets updated <12 Hours",
                    "active": True,
                    "position": 3,
                    "updated_at": "2011-05-05T10:38:52Z",
                }
            ],
            "nextCursor": "xxx",
        },
    ),
    Case(
        "zendesk_list_view_tickets",
        {"view_id": 25, "perPage": 2, "cursor": "abc"},
        [
            Call(
                "GET",
                f"{API}/views/25/tickets",
                {"page[size]": 2, "page[after]": "abc"},
                response={"tickets": [TICKET], "meta": META_END},
            )
        ],
        {"tickets": [TICKET_OUT], "nextCursor": None},
    ),
]


def test_every_tool_has_a_case() -> None:
    assert tool_names(zendesk_tools) == {c.tool for c in CASES}


def test_catalog_entries() -> None:
    check_catalog("zendesk", zendesk_tools)


@pytest.mark.parametrize("case", CASES, ids=str)
async def test_tool(case: Case, tmp_path: Path) -> None:
    await run_case(PLUGIN, tmp_path, case)


async def test_full_host_in_subdomain_field_is_accepted(tmp_path: Path) -> None:
    plugin = Plugin("zendesk", {**CRED, "subdomain": "https://Acme.zendesk.com/"}, BASIC)
    await run_case(plugin, tmp_path, CASES[1])


async def test_a_subdomain_that_is_not_a_label_is_refused(tmp_path: Path) -> None:
    plugin = Plugin("zendesk", {**CRED, "subdomain": "evil.example#"}, BASIC)
    await run_error(
        plugin,
        tmp_path,
        "zendesk_get_ticket",
        {"ticket_id": 1},
        [],
        "The Zendesk connection has no valid subdomain (the 'acme' in acme.zendesk.com); reconnect.",
    )


async def test_update_without_changes_is_refused(tmp_path: Path) -> None:
    await run_error(
        PLUGIN,
        tmp_path,
        "zendesk_update_ticket",
        {"ticket_id": 1},
        [],
        "Nothing to update: give at least one field to change",
    )


async def test_upstream_error_becomes_tool_error(tmp_path: Path) -> None:
    await run_error(
        PLUGIN,
        tmp_path,
        "zendesk_get_ticket",
        {"ticket_id": 99},
        [
            Call(
                "GET",
                f"{API}/tickets/99",
                status=404,
                response={"error": "RecordNotFound", "description": "Not found"},
            )
        ],
        "zendesk API error 404: RecordNotFound: Not found",
    )


async def test_validation_error_names_the_problem(tmp_path: Path) -> None:
    await run_error(
        PLUGIN,
        tmp_path,
        "zendesk_create_user",
        {"name": "Roger", "email": "nope"},
        [
            Call(
                "POST",
                f"{API}/users",
                json={"user": {"name": "Roger", "email": "nope", "role": "end-user"}},
                status=422,
                response={
                    "error": "RecordInvalid",
                    "description": "Record validation errors",
                    "details": {
                        "email": [
                            {"description": "Email: nope is not properly formatted", "error": "InvalidFormat"}
                        ]
                    },
                },
            )
        ],
        "zendesk API error 422: RecordInvalid: Record validation errors: Email: nope is not properly formatted",
    )


async def test_apply_macro_preview_changes_nothing(tmp_path: Path) -> None:
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "zendesk_apply_macro",
        {"ticket_id": 35436, "macro_id": 25, "preview": True},
        [Call("GET", f"{API}/tickets/35436/macros/25/apply", response=MACRO_RESULT)],
    )
    assert out == {
        "results": [
            {
                "result": {
                    "ticket_id": 35436,
                    "applied": False,
                    "changes": {
                        "status": "solved",
                        "priority": "normal",
                        "comment": {
                            "body": "Thanks, see the forum.",
                            "html_body": "<p>Thanks, see the forum.</p>",
                            "public": True,
                        },
                    },
                }
            }
        ]
    }
