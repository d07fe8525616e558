"""Linear tools against a fake api.linear.app/graphql (bodies shaped like Linear's GraphQL responses)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from workbench_plugins.linear import tools as lt

from tests.plugins.catalog_support import Call, Case, Plugin, check_catalog, run_case, run_error, tool_names

PLUGIN = Plugin("linear", {"access_token": "lin_oauth_8f1c"}, "Bearer lin_oauth_8f1c")
GQL = "https://api.linear.app/graphql"

ISSUE = {
    "id": "9cfb482a-81e3-4154-b5b9-2c805e70a02d",
    "identifier": "ENG-123",
    "title": "Checkout fails on Safari",
    "priority": 2,
    "priorityLabel": "High",
    "url": "https://linear.app/acme/issue/ENG-123/checkout-fails-on-safari",
    "createdAt": "2024-03-01T10:00:00.000Z",
    "updatedAt": "2024-03-02T12:30:00.000Z",
    "dueDate": None,
    "state": {"name": "In Progress", "type": "started"},
    "assignee": {"id": "u1", "name": "Ada Lovelace"},
    "team": {"key": "ENG"},
    "project": None,
}
ISSUE_OUT = {
    "id": "9cfb482a-81e3-4154-b5b9-2c805e70a02d",
    "identifier": "ENG-123",
    "title": "Checkout fails on Safari",
    "state": "In Progress",
    "priority": "High",
    "assignee": "Ada Lovelace",
    "team": "ENG",
    "project": None,
    "dueDate": None,
    "url": "https://linear.app/acme/issue/ENG-123/checkout-fails-on-safari",
    "updatedAt": "2024-03-02T12:30:00.000Z",
}


def gql(query: str, variables: dict, data: dict) -> Call:
    return Call("POST", GQL, json={"query": query, "variables": variables}, response={"data": data})


def conn(*nodes: dict, end: str | None = None) -> dict:
    return {"nodes": list(nodes), "pageInfo": {"hasNextPage": end is not None, "endCursor": end}}


CASES = [
    Case(
        "linear_list_issues",
        {"team_id": "team-1", "assigned_to_me": True, "open_only": True, "perPage": 10},
        [
            gql(
                lt.LIST_ISSUES,
                {
                    "first": 10,
                    "filter": {
                        "team": {"id": {"eq": "team-1"}},
                        "assignee": {"isMe": {"eq": True}},
                        "state": {"type": {"nin": ["completed", "canceled"]}},
                    },
                },
                {"issues": conn(ISSUE, end="c2")},
            )
        ],
        {"issues": [ISSUE_OUT], "nextCursor": "c2"},
    ),
    Case(
        "linear_search_issues",
        {"term": "safari checkout", "cursor": "c1"},
        [
            gql(
                lt.SEARCH_ISSUES,
                {"term": "safari checkout", "first": 25, "after": "c1", "includeComments": False},
                {"searchIssues": conn(ISSUE)},
            )
        ],
        {"issues": [ISSUE_OUT], "nextCursor": None},
    ),
    Case(
        "linear_get_issue",
        {"id": "ENG-123"},
        [
            gql(
                lt.GET_ISSUE,
                {"id": "ENG-123"},
                {
                    "issue": {
                        **ISSUE,
                        "description": "Steps: open checkout in Safari 17.",
                        "labels": {"nodes": [{"name": "Bug"}]},
                        "comments": {
                            "nodes": [
                                {
                                    "id": "c-1",
                                    "body": "Repro'd on 17.2",
                                    "createdAt": "2024-03-02T11:00:00.000Z",
                                    "user": {"name": "Grace Hopper"},
                                }
                            ]
                        },
                    }
                },
            )
        ],
        {
            **ISSUE_OUT,
            "description": "Steps: open checkout in Safari 17.",
            "labels": ["Bug"],
            "comments": [
                {
                    "id": "c-1",
                    "body": "Repro'd on 17.2",
                    "author": "Grace Hopper",
                    "createdAt": "2024-03-02T11:00:00.000Z",
                }
            ],
        },
    ),
    Case(
        "linear_create_issue",
        {"team_id": "team-1", "title": "Checkout fails on Safari", "priority": 2, "label_ids": ["l1"]},
        [
            gql(
                lt.CREATE_ISSUE,
                {
                    "input": {
                        "teamId": "team-1",
                        "title": "Checkout fails on Safari",
                        "priority": 2,
                        "labelIds": ["l1"],
                    }
                },
                {
                    "issueCreate": {
                        "success": True,
                        "issue": {
                            "id": ISSUE["id"],
                            "identifier": "ENG-123",
                            "title": "Checkout fails on Safari",
                            "url": ISSUE["url"],
                        },
                    }
                },
            )
        ],
        {
            "success": True,
            "id": ISSUE["id"],
            "identifier": "ENG-123",
            "title": "Checkout fails on Safari",
            "url": ISSUE["url"],
        },
    ),
    Case(
        "linear_update_issue",
        {"id": "ENG-123", "state_id": "state-done"},
        [
            gql(
                lt.UPDATE_ISSUE,
                {"id": "ENG-123", "input": {"stateId": "state-done"}},
                {
                    "issueUpdate": {
                        "success": True,
                        "issue": {
                            "id": ISSUE["id"],
                            "identifier": "ENG-123",
                            "title": "Checkout fails on Safari",
                            "url": ISSUE["url"],
                            "state": {"name": "Done"},
                        },
                    }
                },
            )
        ],
        {
            "success": True,
            "id": ISSUE["id"],
            "identifier": "ENG-123",
            "title": "Checkout fails on Safari",
            "url": ISSUE["url"],
            "state": "Done",
        },
    ),
    Case(
        "linear_add_comment",
        {"issue_id": "ENG-123", "body": "Fixed in #42"},
        [
            gql(
                lt.CREATE_COMMENT,
                {"input": {"issueId": "ENG-123", "body": "Fixed in #42"}},
                {
                    "commentCreate": {
                        "success": True,
                        "comment": {
                            "id": "cm-9",
                            "body": "Fixed in #42",
                            "url": "https://linear.app/acme/issue/ENG-123#comment-cm9",
                            "createdAt": "2024-03-03T09:00:00.000Z",
                        },
                    }
                },
            )
        ],
        {
            "success": True,
            "id": "cm-9",
            "body": "Fixed in #42",
            "url": "https://linear.app/acme/issue/ENG-123#comment-cm9",
            "createdAt": "2024-03-03T09:00:00.000Z",
        },
    ),
    Case(
        "linear_list_teams",
        {},
        [
            gql(
                lt.LIST_TEAMS,
                {"first": 25},
                {"teams": conn({"id": "team-1", "key": "ENG", "name": "Engineering", "description": None})},
            )
        ],
        {
            "teams": [{"id": "team-1", "key": "ENG", "name": "Engineering", "description": None}],
            "nextCursor": None,
        },
    ),
    Case(
        "linear_list_projects",
        {"perPage": 1},
        [
            gql(
                lt.LIST_PROJECTS,
                {"first": 1},
                {
                    "projects": conn(
                        {
                            "id": "p1",
                            "name": "Checkout v2",
                            "status": {"name": "In Progress", "type": "started"},
                            "progress": 0.4,
                            "targetDate": "2024-06-30",
                            "url": "https://linear.app/acme/project/checkout-v2",
                        },
                        end="p1c",
                    )
                },
            )
        ],
        {
            "projects": [
                {
                    "id": "p1",
                    "name": "Checkout v2",
                    "state": "started",
                    "status": "In Progress",
                    "progress": 0.4,
                    "targetDate": "2024-06-30",
                    "url": "https://linear.app/acme/project/checkout-v2",
                }
            ],
            "nextCursor": "p1c",
        },
    ),
    Case(
        "linear_list_users",
        {},
        [
            gql(
                lt.LIST_USERS,
                {"first": 25},
                {
                    "users": conn(
                        {
                            "id": "u1",
                            "name": "Ada Lovelace",
                            "displayName": "ada",
                            "email": "ada@acme.io",
                            "active": True,
                        }
                    )
                },
            )
        ],
        {
            "users": [
                {
                    "id": "u1",
                    "name": "Ada Lovelace",
                    "displayName": "ada",
                    "email": "ada@acme.io",
                    "active": True,
                }
            ],
            "nextCursor": None,
        },
    ),
    Case(
        "linear_list_workflow_states",
        {"team_id": "team-1"},
        [
            gql(
                lt.LIST_STATES,
                {"first": 25, "filter": {"team": {"id": {"eq": "team-1"}}}},
                {
                    "workflowStates": conn(
                        {
                            "id": "s1",
                            "name": "Todo",
                            "type": "unstarted",
                            "position": 1,
                            "team": {"key": "ENG"},
                        },
                        {
                            "id": "state-done",
                            "name": "Done",
                            "type": "completed",
                            "position": 3,
                            "team": {"key": "ENG"},
                        },
                    )
                },
            )
        ],
        {
            "states": [
                {"id": "s1", "name": "Todo", "type": "unstarted", "position": 1, "team": "ENG"},
                {"id": "state-done", "name": "Done", "type": "completed", "position": 3, "team": "ENG"},
            ],
            "nextCursor": None,
        },
    ),
    Case(
        "linear_list_labels",
        {},
        [
            gql(
                lt.LIST_LABELS,
                {"first": 25},
                {"issueLabels": conn({"id": "l1", "name": "Bug", "color": "#eb5757", "team": None})},
            )
        ],
        {"labels": [{"id": "l1", "name": "Bug", "color": "#eb5757", "team": None}], "nextCursor": None},
    ),
    Case(
        "linear_get_viewer",
        {},
        [
            gql(
                lt.VIEWER,
                {},
                {
                    "viewer": {
                        "id": "u1",
                        "name": "Ada Lovelace",
                        "displayName": "ada",
                        "email": "ada@acme.io",
                        "organization": {"name": "Acme", "urlKey": "acme"},
                    }
                },
            )
        ],
        {
            "id": "u1",
            "name": "Ada Lovelace",
            "displayName": "ada",
            "email": "ada@acme.io",
            "organization": "Acme",
            "organizationKey": "acme",
        },
    ),
]

ROOT_FIELDS = {
    "LIST_ISSUES": "issues",
    "SEARCH_ISSUES": "searchIssues",
    "GET_ISSUE": "issue",
    "CREATE_ISSUE": "issueCreate",
    "UPDATE_ISSUE": "issueUpdate",
    "CREATE_COMMENT": "commentCreate",
    "LIST_TEAMS": "teams",
    "LIST_PROJECTS": "projects",
    "LIST_USERS": "users",
    "LIST_STATES": "workflowStates",
    "LIST_LABELS": "issueLabels",
    "VIEWER": "viewer",
}


CYCLE = {
    "id": "cyc-1",
    "number": 12,
    "name": None,
    "startsAt": "2024-05-06T00:00:00.000Z",
    "endsAt": "2024-05-20T00:00:00.000Z",
    "completedAt": None,
    "progress": 0.4,
    "isActive": True,
    "team": {"key": "ENG"},
}

CASES += [
    Case(
        "linear_list_cycles",
        {"team_id": "team-1", "when": "active"},
        [
            gql(
                lt.LIST_CYCLES,
                {"first": 25, "filter": {"team": {"id": {"eq": "team-1"}}, "isActive": {"eq": True}}},
                {"cycles": conn(CYCLE)},
            )
        ],
        {"cycles": [{**CYCLE, "team": "ENG"}], "nextCursor": None},
    ),
    Case(
        "linear_list_cycle_issues",
        {"cycle_id": "cyc-1", "perPage": 10},
        [
            gql(
                lt.CYCLE_ISSUES,
                {"id": "cyc-1", "first": 10},
                {"cycle": {"id": "cyc-1", "number": 12, "name": None, "issues": conn(ISSUE, end="c2")}},
            )
        ],
        {"cycle": {"id": "cyc-1", "number": 12, "name": None}, "issues": [ISSUE_OUT], "nextCursor": "c2"},
    ),
    Case(
        "linear_create_project",
        {"name": "Search v2", "team_ids": ["team-1"], "target_date": "2024-09-30"},
        [
            gql(
                lt.CREATE_PROJECT,
                {"input": {"name": "Search v2", "teamIds": ["team-1"], "targetDate": "2024-09-30"}},
                {
                    "projectCreate": {
                        "success": True,
                        "project": {
                            "id": "proj-9",
                            "name": "Search v2",
                            "status": {"name": "Planned", "type": "planned"},
                            "progress": 0,
                            "targetDate": "2024-09-30",
                            "url": "https://linear.app/acme/project/search-v2",
                        },
                    }
                },
            )
        ],
        {
            "success": True,
            "id": "proj-9",
            "name": "Search v2",
            "state": "planned",
            "status": "Planned",
            "progress": 0,
            "targetDate": "2024-09-30",
            "url": "https://linear.app/acme/project/search-v2",
        },
    ),
    Case(
        "linear_archive_issue",
        {"id": "ENG-123"},
        [gql(lt.ARCHIVE_ISSUE, {"id": "ENG-123"}, {"issueArchive": {"success": True}})],
        {"id": "ENG-123", "archived": True},
    ),
]


def test_every_tool_has_a_case() -> None:
    assert tool_names(lt) == {c.tool for c in CASES}


@pytest.mark.parametrize(("name", "root"), ROOT_FIELDS.items())
def test_documents_select_the_root_field(name: str, root: str) -> None:
    doc = getattr(lt, name)
    assert re.search(rf"^\s+{root}[ ({{]", doc, re.M), doc
    assert doc.count("{") == doc.count("}")


def test_catalog_entries() -> None:
    check_catalog("linear", lt)


@pytest.mark.parametrize("case", CASES, ids=str)
async def test_tool(case: Case, tmp_path: Path) -> None:
    await run_case(PLUGIN, tmp_path, case)


async def test_update_without_changes_is_refused(tmp_path: Path) -> None:
    await run_error(
        PLUGIN,
        tmp_path,
        "linear_update_issue",
        {"id": "ENG-1"},
        [],
        "Nothing to update: give at least one field to change",
    )


async def test_graphql_error_with_http_400(tmp_path: Path) -> None:
    call = gql(lt.GET_ISSUE, {"id": "ENG-404"}, {})
    call.status = 400
    call.response = {
        "errors": [
            {
                "message": "Entity not found: Issue",
                "extensions": {
                    "type": "invalid input",
                    "code": "INPUT_ERROR",
                    "userPresentableMessage": "Could not find referenced Issue.",
                },
            }
        ]
    }
    await run_error(
        PLUGIN,
        tmp_path,
        "linear_get_issue",
        {"id": "ENG-404"},
        [call],
        "linear API error 400: Entity not found: Issue",
    )


async def test_graphql_error_with_http_200_is_still_an_error(tmp_path: Path) -> None:
    call = gql(lt.CREATE_COMMENT, {"input": {"issueId": "ENG-1", "body": "x"}}, {})
    call.response = {
        "data": None,
        "errors": [{"message": "Argument Validation Error", "path": ["commentCreate"]}],
    }
    await run_error(
        PLUGIN,
        tmp_path,
        "linear_add_comment",
        {"issue_id": "ENG-1", "body": "x"},
        [call],
        "linear API error 200: Argument Validation Error",
    )
