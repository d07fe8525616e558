"""Jira tools against a fake api.atlassian.com answering with Atlassian's documented example bodies."""

from __future__ import annotations

import email
import email.policy
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from workbench_plugins.atlassian_jira import tools as atlassian_jira_tools

from tests.plugins.catalog_support import ANY, Call, Case, Plugin, check_catalog, run_case, run_tool

PLUGIN = Plugin("atlassian-jira")

GW = "https://api.atlassian.com"
CLOUD = "1324a887-45db-1bf4-1e99-ef0ff456d421"
J = f"{GW}/ex/jira/{CLOUD}/rest/api/3"
FIELDS = "summary,status,issuetype,priority,assignee,reporter,labels,created,updated,project,parent"
SITE = {
    "id": CLOUD,
    "name": "Site name",
    "url": "https://your-domain.atlassian.net",
    "scopes": ["write:jira-work", "read:jira-user", "manage:jira-configuration"],
    "avatarUrl": "https://site-admin-avatar-cdn.prod.public.atl-paas.net/avatars/240/flag.png",
}
RESOURCES = Call("GET", f"{GW}/oauth/token/accessible-resources", json=None, response=[SITE])
ADF = {
    "type": "doc",
    "version": 1,
    "content": [
        {"type": "paragraph", "content": [{"type": "text", "text": "Main order flow broken"}]},
        {
            "type": "paragraph",
            "content": [
                {"type": "text", "text": "Steps:"},
                {"type": "hardBreak"},
                {"type": "text", "text": "1. open cart"},
            ],
        },
    ],
}
ISSUE = {
    "id": "10002",
    "key": "ED-1",
    "self": f"{J}/issue/10002",
    "fields": {
        "summary": "Main order flow broken",
        "status": {"name": "In Progress", "id": "3"},
        "issuetype": {"name": "Bug", "id": "10004"},
        "priority": {"name": "High"},
        "assignee": {"accountId": "5b10a2844c20165700ede21g", "displayName": "Mia Krystof"},
        "reporter": {"accountId": "5b10ac8d82e05b22cc7d4ef5", "displayName": "Emma Richards"},
        "project": {"key": "ED", "name": "Edison Project"},
        "labels": ["checkout"],
        "created": "2024-01-17T12:34:00.000+0000",
        "updated": "2024-01-18T09:00:00.000+0000",
    },
}
SHAPED = {
    "key": "ED-1",
    "id": "10002",
    "summary": "Main order flow broken",
    "status": "In Progress",
    "type": "Bug",
    "priority": "High",
    "assignee": "Mia Krystof",
    "reporter": "Emma Richards",
    "project": "ED",
    "parent": None,
    "labels": ["checkout"],
    "created": "2024-01-17T12:34:00.000+0000",
    "updated": "2024-01-18T09:00:00.000+0000",
}
COMMENT = {
    "id": "10000",
    "author": {"accountId": "5b10a2844c20165700ede21g", "displayName": "Mia Krystof", "active": False},
    "body": {
        "type": "doc",
        "version": 1,
        "content": [
            {"type": "paragraph", "content": [{"type": "text", "text": "Lorem ipsum dolor sit amet."}]}
        ],
    },
    "created": "2021-01-17T12:34:00.000+0000",
    "updated": "2021-01-18T23:45:00.000+0000",
}
COMMENT_SHAPED = {
    "id": "10000",
    "author": "Mia Krystof",
    "body": "Lorem ipsum dolor sit amet.",
    "created": "2021-01-17T12:34:00.000+0000",
    "updated": "2021-01-18T23:45:00.000+0000",
}
TRANSITIONS = {
    "transitions": [
        {"id": "2", "name": "Close Issue", "to": {"name": "Closed", "id": "6"}, "hasScreen": False},
        {"id": "711", "name": "Start work", "to": {"name": "In Progress", "id": "3"}},
    ]
}

# Jira's documented Attachment example (POST /issue/{key}/attachments answers a list of them).
ATTACHMENT = {
    "self": "https://your-domain.atlassian.net/rest/api/3/attachments/10000",
    "id": "10001",
    "filename": "picture.jpg",
    "author": {"accountId": "5b10a2844c20165700ede21g", "displayName": "Mia Krystof", "active": False},
    "created": "2023-06-24T19:24:50.000+0000",
    "size": 23123,
    "mimeType": "image/jpeg",
    "content": "https://your-domain.atlassian.net/jira/rest/api/3/attachment/content/10000",
    "thumbnail": "https://your-domain.atlassian.net/jira/rest/api/3/attachment/thumbnail/10000",
}
ATTACHMENT_SHAPED = {
    "id": "10001",
    "filename": "picture.jpg",
    "mimeType": "image/jpeg",
    "size": 23123,
    "created": "2023-06-24T19:24:50.000+0000",
    "author_displayName": "Mia Krystof",
    "contentUrl": "https://your-domain.atlassian.net/jira/rest/api/3/attachment/content/10000",
}


def _one_file(name: str, kind: str, data: bytes) -> Callable[[httpx.Request], None]:
    """The request is multipart/form-data with exactly one part, `file`, holding `data`."""

    def check(request: httpx.Request) -> None:
        ctype = request.headers["content-type"]
        assert ctype.startswith("multipart/form-data; boundary="), ctype
        message = email.message_from_bytes(
            b"Content-Type: " + ctype.encode() + b"\r\n\r\n" + request.content, policy=email.policy.HTTP
        )
        parts = list(message.iter_parts())  # type: ignore[attr-defined]
        assert len(parts) == 1
        assert parts[0].get_param("name", header="content-disposition") == "file"
        assert parts[0].get_filename() == name
        assert parts[0].get_content_type() == kind
        assert parts[0].get_payload(decode=True) == data

    return check


CASES = [
    Case(
        "jira_list_sites",
        {},
        [RESOURCES],
        {
            "sites": [
                {
                    "id": CLOUD,
                    "name": "Site name",
                    "url": "https://your-domain.atlassian.net",
                    "scopes": SITE["scopes"],
                }
            ]
        },
    ),
    Case(
        "jira_search_issues",
        {"jql": "project = ED AND status = 'In Progress'", "limit": 2},
        # no cloudId: the site is discovered first
        [
            RESOURCES,
            Call(
                "GET",
                f"{J}/search/jql",
                {"jql": "project = ED AND status = 'In Progress'", "maxResults": 2, "fields": FIELDS},
                json=None,
                response={"issues": [ISSUE], "nextPageToken": "CAEaAggD", "isLast": False},
            ),
        ],
        {"issues": [SHAPED], "nextPageToken": "CAEaAggD"},
    ),
    Case(
        "jira_get_issue",
        {"issueKey": "ED-1", "cloudId": CLOUD},
        [
            Call(
                "GET",
                f"{J}/issue/ED-1",
                {"fields": f"{FIELDS},description"},
                response={**ISSUE, "fields": {**ISSUE["fields"], "description": ADF}},
            )
        ],
        {**SHAPED, "description": "Main order flow broken\nSteps:\n1. open cart"},
    ),
    Case(
        "jira_create_issue",
        {
            "cloudId": CLOUD,
            "projectKey": "ED",
            "summary": "Main order flow broken",
            "issueType": "Bug",
            "description": "Main order flow broken\n\nSteps:\n1. open cart",
            "labels": ["checkout"],
            "priority": "High",
            "assigneeAccountId": "5b10a2844c20165700ede21g",
        },
        [
            Call(
                "POST",
                f"{J}/issue",
                json={
                    "fields": {
                        "project": {"key": "ED"},
                        "summary": "Main order flow broken",
                        "issuetype": {"name": "Bug"},
                        "description": ADF,
                        "labels": ["checkout"],
                        "priority": {"name": "High"},
                        "assignee": {"accountId": "5b10a2844c20165700ede21g"},
                    }
                },
                status=201,
                response={
                    "id": "10000",
                    "key": "ED-24",
                    "self": f"{J}/issue/10000",
                    "transition": {"status": 200},
                },
            )
        ],
        {"id": "10000", "key": "ED-24", "self": f"{J}/issue/10000"},
    ),
    Case(
        "jira_update_issue",
        {"cloudId": CLOUD, "issueKey": "ED-1", "summary": "Order flow fixed?", "labels": ["checkout", "p1"]},
        [
            Call(
                "PUT",
                f"{J}/issue/ED-1",
                json={"fields": {"summary": "Order flow fixed?", "labels": ["checkout", "p1"]}},
                status=204,
            )
        ],
        {"key": "ED-1", "updated": ["labels", "summary"]},
    ),
    Case(
        "jira_delete_issue",
        {"cloudId": CLOUD, "issueKey": "ED-1", "deleteSubtasks": True},
        [Call("DELETE", f"{J}/issue/ED-1", {"deleteSubtasks": "true"}, status=204)],
        {"key": "ED-1", "deleted": True},
    ),
    Case(
        "jira_add_comment",
        {"cloudId": CLOUD, "issueKey": "ED-1", "body": "Lorem ipsum dolor sit amet."},
        [
            Call(
                "POST",
                f"{J}/issue/ED-1/comment",
                json={"body": COMMENT["body"]},
                status=201,
                response=COMMENT,
            )
        ],
        COMMENT_SHAPED,
    ),
    Case(
        "jira_update_comment",
        {"cloudId": CLOUD, "issueKey": "ED-1", "commentId": "10000", "body": "Lorem ipsum dolor sit amet."},
        [
            Call(
                "PUT",
                f"{J}/issue/ED-1/comment/10000",
                json={"body": COMMENT["body"]},
                response=COMMENT,
            )
        ],
        COMMENT_SHAPED,
    ),
    Case(
        "jira_list_comments",
        {"cloudId": CLOUD, "issueKey": "ED-1", "limit": 1},
        [
            Call(
                "GET",
                f"{J}/issue/ED-1/comment",
                {"startAt": 0, "maxResults": 1, "orderBy": "-created"},
                response={"comments": [COMMENT], "maxResults": 1, "startAt": 0, "total": 3},
            )
        ],
        {"comments": [COMMENT_SHAPED], "total": 3, "nextStartAt": 1},
    ),
    Case(
        "jira_list_transitions",
        {"cloudId": CLOUD, "issueKey": "ED-1"},
        [Call("GET", f"{J}/issue/ED-1/transitions", response=TRANSITIONS)],
        {
            "transitions": [
                {"id": "2", "name": "Close Issue", "to_name": "Closed"},
                {"id": "711", "name": "Start work", "to_name": "In Progress"},
            ]
        },
    ),
    Case(
        "jira_transition_issue",
        {"cloudId": CLOUD, "issueKey": "ED-1", "transition": "closed"},  # target status, any case
        [
            Call("GET", f"{J}/issue/ED-1/transitions", response=TRANSITIONS),
            Call("POST", f"{J}/issue/ED-1/transitions", json={"transition": {"id": "2"}}, status=204),
        ],
        {"key": "ED-1", "transition": "Close Issue", "status": "Closed"},
    ),
    Case(
        "jira_assign_issue",
        {"cloudId": CLOUD, "issueKey": "ED-1", "accountId": "5b10ac8d82e05b22cc7d4ef5"},
        [Call("PUT", f"{J}/issue/ED-1/assignee", json={"accountId": "5b10ac8d82e05b22cc7d4ef5"}, status=204)],
        {"key": "ED-1", "assignee": "5b10ac8d82e05b22cc7d4ef5"},
    ),
    Case(
        "jira_list_projects",
        {"cloudId": CLOUD, "limit": 2},
        [
            Call(
                "GET",
                f"{J}/project/search",
                {"maxResults": 2, "startAt": 0},
                response={
                    "isLast": False,
                    "maxResults": 2,
                    "startAt": 0,
                    "total": 7,
                    "values": [
                        {
                            "id": "10000",
                            "key": "EX",
                            "name": "Example",
                            "projectTypeKey": "software",
                            "self": "x",
                        },
                        {"id": "10001", "key": "ABC", "name": "Alphabetical", "projectTypeKey": "business"},
                    ],
                },
            )
        ],
        {
            "projects": [
                {"id": "10000", "key": "EX", "name": "Example", "projectTypeKey": "software"},
                {"id": "10001", "key": "ABC", "name": "Alphabetical", "projectTypeKey": "business"},
            ],
            "nextStartAt": 2,
        },
    ),
    Case(
        "jira_find_users",
        {"cloudId": CLOUD, "query": "mia"},
        [
            Call(
                "GET",
                f"{J}/user/search",
                {"query": "mia", "maxResults": 10},
                response=[
                    {
                        "accountId": "5b10a2844c20165700ede21g",
                        "accountType": "atlassian",
                        "displayName": "Mia Krystof",
                        "emailAddress": "mia@example.com",
                        "active": True,
                    }
                ],
            )
        ],
        {
            "users": [
                {
                    "accountId": "5b10a2844c20165700ede21g",
                    "displayName": "Mia Krystof",
                    "emailAddress": "mia@example.com",
                    "active": True,
                }
            ]
        },
    ),
]


AG = f"{GW}/ex/jira/{CLOUD}/rest/agile/1.0"
C = {"cloudId": CLOUD}
WORKLOG = {
    "id": "100028",
    "author": {"accountId": "5b10a2844c20165700ede21g", "displayName": "Mia Krystof"},
    "comment": {
        "type": "doc",
        "version": 1,
        "content": [{"type": "paragraph", "content": [{"type": "text", "text": "I did some work here."}]}],
    },
    "started": "2021-01-17T12:34:00.000+0000",
    "timeSpent": "3h 20m",
    "timeSpentSeconds": 12000,
    "issueId": "10002",
}
WORKLOG_SHAPED = {
    "id": "100028",
    "author_displayName": "Mia Krystof",
    "timeSpent": "3h 20m",
    "timeSpentSeconds": 12000,
    "started": "2021-01-17T12:34:00.000+0000",
    "comment": "I did some work here.",
}

CASES += [
    Case(
        "jira_list_issue_types",
        {**C, "projectKey": "ED"},
        [
            Call(
                "GET",
                f"{J}/issue/createmeta/ED/issuetypes",
                {"startAt": 0, "maxResults": 50},
                response={
                    "issueTypes": [
                        {
                            "id": "10001",
                            "name": "Bug",
                            "subtask": False,
                            "description": "A problem",
                            "iconUrl": "x",
                        },
                        {"id": "10003", "name": "Sub-task", "subtask": True, "description": ""},
                    ],
                    "maxResults": 50,
                    "startAt": 0,
                    "total": 2,
                },
            )
        ],
        {
            "issueTypes": [
                {"id": "10001", "name": "Bug", "subtask": False, "description": "A problem"},
                {"id": "10003", "name": "Sub-task", "subtask": True, "description": ""},
            ],
            "nextStartAt": None,
        },
    ),
    Case(
        "jira_get_create_fields",
        {**C, "projectKey": "ED", "issueTypeId": "10001", "limit": 2},
        [
            Call(
                "GET",
                f"{J}/issue/createmeta/ED/issuetypes/10001",
                {"startAt": 0, "maxResults": 2},
                response={
                    "fields": [
                        {
                            "fieldId": "summary",
                            "name": "Summary",
                            "required": True,
                            "schema": {"type": "string", "system": "summary"},
                            "hasDefaultValue": False,
                        },
                        {
                            "fieldId": "priority",
                            "name": "Priority",
                            "required": False,
                            "schema": {"type": "priority"},
                            "hasDefaultValue": True,
                            "allowedValues": [{"id": "1", "name": "Highest"}, {"id": "3", "name": "Medium"}],
                        },
                    ],
                    "maxResults": 2,
                    "startAt": 0,
                    "total": 5,
                },
            )
        ],
        {
            "fields": [
                {
                    "fieldId": "summary",
                    "name": "Summary",
                    "required": True,
                    "schema_type": "string",
                    "schema_items": None,
                    "hasDefaultValue": False,
                    "allowedValues": None,
                },
                {
                    "fieldId": "priority",
                    "name": "Priority",
                    "required": False,
                    "schema_type": "priority",
                    "schema_items": None,
                    "hasDefaultValue": True,
                    "allowedValues": ["Highest", "Medium"],
                },
            ],
            "nextStartAt": 2,
        },
    ),
    Case(
        "jira_list_link_types",
        C,
        [
            Call(
                "GET",
                f"{J}/issueLinkType",
                response={
                    "issueLinkTypes": [
                        {
                            "id": "1000",
                            "name": "Blocks",
                            "inward": "is blocked by",
                            "outward": "blocks",
                            "self": "x",
                        }
                    ]
                },
            )
        ],
        {"linkTypes": [{"id": "1000", "name": "Blocks", "inward": "is blocked by", "outward": "blocks"}]},
    ),
    Case(
        "jira_link_issues",
        {
            **C,
            "type": "Blocks",
            "outwardIssue": "ED-1",
            "inwardIssue": "ED-2",
            "comment": "Needs the API first",
        },
        [
            Call(
                "POST",
                f"{J}/issueLink",
                json={
                    "type": {"name": "Blocks"},
                    "outwardIssue": {"key": "ED-1"},
                    "inwardIssue": {"key": "ED-2"},
                    "comment": {
                        "body": {
                            "type": "doc",
                            "version": 1,
                            "content": [
                                {
                                    "type": "paragraph",
                                    "content": [{"type": "text", "text": "Needs the API first"}],
                                }
                            ],
                        }
                    },
                },
                status=201,
            )
        ],
        {"linked": True, "type": "Blocks", "outwardIssue": "ED-1", "inwardIssue": "ED-2"},
    ),
    Case(
        "jira_list_worklogs",
        {**C, "issueKey": "ED-1", "limit": 1},
        [
            Call(
                "GET",
                f"{J}/issue/ED-1/worklog",
                {"startAt": 0, "maxResults": 1},
                response={"startAt": 0, "maxResults": 1, "total": 3, "worklogs": [WORKLOG]},
            )
        ],
        {"worklogs": [WORKLOG_SHAPED], "total": 3, "nextStartAt": 1},
    ),
    Case(
        "jira_add_worklog",
        {
            **C,
            "issueKey": "ED-1",
            "timeSpent": "3h 20m",
            "started": "2021-01-17T12:34:00.000+0000",
            "comment": "I did some work here.",
        },
        [
            Call(
                "POST",
                f"{J}/issue/ED-1/worklog",
                json={
                    "timeSpent": "3h 20m",
                    "started": "2021-01-17T12:34:00.000+0000",
                    "comment": WORKLOG["comment"],
                },
                status=201,
                response=WORKLOG,
            )
        ],
        WORKLOG_SHAPED,
    ),
    Case(
        "jira_list_boards",
        {**C, "projectKey": "ED", "type": "scrum"},
        [
            Call(
                "GET",
                f"{AG}/board",
                {"projectKeyOrId": "ED", "type": "scrum", "startAt": 0, "maxResults": 50},
                response={
                    "maxResults": 50,
                    "startAt": 0,
                    "isLast": True,
                    "values": [
                        {
                            "id": 84,
                            "name": "ED board",
                            "type": "scrum",
                            "location": {"projectKey": "ED", "projectId": 10000},
                        }
                    ],
                },
            )
        ],
        {
            "boards": [{"id": 84, "name": "ED board", "type": "scrum", "location_projectKey": "ED"}],
            "nextStartAt": None,
        },
    ),
    Case(
        "jira_list_sprints",
        {**C, "boardId": 84, "state": ["active", "future"], "limit": 1},
        [
            Call(
                "GET",
                f"{AG}/board/84/sprint",
                {"state": "active,future", "startAt": 0, "maxResults": 1},
                response={
                    "maxResults": 1,
                    "startAt": 0,
                    "isLast": False,
                    "values": [
                        {
                            "id": 37,
                            "name": "Sprint 7",
                            "state": "active",
                            "startDate": "2024-05-01T08:00:00.000Z",
                            "endDate": "2024-05-15T08:00:00.000Z",
                            "goal": "Ship search",
                            "originBoardId": 84,
                        }
                    ],
                },
            )
        ],
        {
            "sprints": [
                {
                    "id": 37,
                    "name": "Sprint 7",
                    "state": "active",
                    "startDate": "2024-05-01T08:00:00.000Z",
                    "endDate": "2024-05-15T08:00:00.000Z",
                    "completeDate": None,
                    "goal": "Ship search",
                }
            ],
            "nextStartAt": 1,
        },
    ),
    Case(
        "jira_list_sprint_issues",
        {**C, "sprintId": 37, "jql": "status != Done"},
        [
            Call(
                "GET",
                f"{AG}/sprint/37/issue",
                {"jql": "status != Done", "fields": FIELDS, "startAt": 0, "maxResults": 50},
                response={"startAt": 0, "maxResults": 50, "total": 1, "issues": [ISSUE]},
            )
        ],
        {"issues": [SHAPED], "total": 1, "nextStartAt": None},
    ),
    Case(
        "jira_move_issues_to_sprint",
        {**C, "sprintId": 37, "issueKeys": ["ED-1", "ED-2"]},
        [Call("POST", f"{AG}/sprint/37/issue", json={"issues": ["ED-1", "ED-2"]}, status=204)],
        {"sprintId": 37, "moved": ["ED-1", "ED-2"]},
    ),
    Case(
        "jira_list_attachments",
        {"cloudId": CLOUD, "issueKey": "ED-1"},
        [
            Call(
                "GET",
                f"{J}/issue/ED-1",
                {"fields": "attachment"},
                response={"id": "10002", "key": "ED-1", "fields": {"attachment": [ATTACHMENT]}},
            )
        ],
        {"key": "ED-1", "attachments": [ATTACHMENT_SHAPED]},
    ),
    Case(
        "jira_add_attachment",
        {"cloudId": CLOUD, "issueKey": "ED-1", "filename": "picture.jpg", "contentBase64": "/9j/4AAQ"},
        [
            Call(
                "POST",
                f"{J}/issue/ED-1/attachments",
                json=ANY,
                response=[ATTACHMENT],
                expect_headers={"x-atlassian-token": "no-check"},
                check=_one_file("picture.jpg", "image/jpeg", b"\xff\xd8\xff\xe0\x00\x10"),
            )
        ],
        {"key": "ED-1", "attachments": [ATTACHMENT_SHAPED]},
    ),
]


def test_every_tool_has_a_case() -> None:
    from workbench_plugins.atlassian_jira.tools import TOOLS

    assert sorted(t.name for t in TOOLS) == sorted(c.tool for c in CASES)


def test_catalog_entries_are_well_formed() -> None:
    check_catalog("atlassian-jira", atlassian_jira_tools)


@pytest.mark.parametrize("case", CASES, ids=str)
async def test_tool_request_and_result(tmp_path: Path, case: Case) -> None:
    await run_case(PLUGIN, tmp_path, case)


async def test_several_sites_without_cloud_id_asks_for_one(tmp_path: Path) -> None:
    other = {
        **SITE,
        "id": "a436116f-02ce-4520-8fbb-7301462a1674",
        "name": "Other",
        "url": "https://other.atlassian.net",
    }
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "jira_get_issue",
        {"issueKey": "ED-1"},
        [Call("GET", f"{GW}/oauth/token/accessible-resources", response=[SITE, other])],
    )
    assert out == {
        "results": [
            {
                "error": (
                    "This connection reaches 2 jira sites; pass cloudId, one of: "
                    f"Site name (https://your-domain.atlassian.net): cloudId={CLOUD}, "
                    "Other (https://other.atlassian.net): cloudId=a436116f-02ce-4520-8fbb-7301462a1674"
                )
            }
        ]
    }


async def test_unknown_transition_lists_the_available_ones(tmp_path: Path) -> None:
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "jira_transition_issue",
        {"cloudId": CLOUD, "issueKey": "ED-1", "transition": "Shipped"},
        [Call("GET", f"{J}/issue/ED-1/transitions", response=TRANSITIONS)],
    )
    assert out == {
        "results": [
            {"error": "No transition 'Shipped' for ED-1; available: Close Issue (id 2), Start work (id 711)"}
        ]
    }


async def test_upstream_404_becomes_tool_error(tmp_path: Path) -> None:
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "jira_get_issue",
        {"cloudId": CLOUD, "issueKey": "ED-404"},
        [
            Call(
                "GET",
                f"{J}/issue/ED-404",
                {"fields": f"{FIELDS},description"},
                status=404,
                response={
                    "errorMessages": ["Issue does not exist or you do not have permission to see it."],
                    "errors": {},
                },
            )
        ],
    )
    assert out == {
        "results": [
            {
                "error": "atlassian-jira API error 404: "
                "Issue does not exist or you do not have permission to see it."
            }
        ]
    }


async def test_field_errors_are_named(tmp_path: Path) -> None:
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "jira_create_issue",
        {"cloudId": CLOUD, "projectKey": "ED", "summary": "x"},
        [
            Call(
                "POST",
                f"{J}/issue",
                json={"fields": {"project": {"key": "ED"}, "summary": "x", "issuetype": {"name": "Task"}}},
                status=400,
                response={"errorMessages": [], "errors": {"issuetype": "Specify a valid issue type"}},
            )
        ],
    )
    assert out == {
        "results": [{"error": "atlassian-jira API error 400: issuetype: Specify a valid issue type"}]
    }


async def test_discovery_keeps_only_sites_granted_for_jira(tmp_path: Path) -> None:
    wiki_only = {**SITE, "id": "c0ffee00-0000-4000-8000-000000000001", "scopes": ["read:page:confluence"]}
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "jira_list_transitions",
        {"issueKey": "ED-1"},
        [
            Call("GET", f"{GW}/oauth/token/accessible-resources", response=[wiki_only, SITE]),
            Call("GET", f"{J}/issue/ED-1/transitions", response={"transitions": []}),
        ],
    )
    assert out == {"results": [{"result": {"transitions": []}}]}


async def test_no_jira_site_is_explained(tmp_path: Path) -> None:
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "jira_list_projects",
        {},
        [Call("GET", f"{GW}/oauth/token/accessible-resources", response=[])],
    )
    assert out == {
        "results": [
            {"error": "This Atlassian connection cannot reach any jira site; reconnect and grant one."}
        ]
    }


async def test_an_attachment_from_text_is_sent_as_utf8(tmp_path: Path) -> None:
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "jira_add_attachment",
        {"cloudId": CLOUD, "issueKey": "ED-1", "filename": "notes.csv", "text": "naïve,1\n"},
        [
            Call(
                "POST",
                f"{J}/issue/ED-1/attachments",
                json=ANY,
                response=[{**ATTACHMENT, "filename": "notes.csv", "mimeType": "text/csv"}],
                expect_headers={"x-atlassian-token": "no-check"},
                check=_one_file("notes.csv", "text/csv", "naïve,1\n".encode()),
            )
        ],
    )
    assert out["results"][0]["result"]["attachments"][0]["filename"] == "notes.csv"


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ({"filename": "a.txt"}, "Give the file's content as text or as contentBase64 (one of them)."),
        (
            {"filename": "a.txt", "text": "x", "contentBase64": "eA=="},
            "Give the file's content as text or as contentBase64 (one of them).",
        ),
        ({"filename": "a.bin", "contentBase64": "not base64!"}, "contentBase64 is not valid base64."),
        ({"filename": "a.bin", "contentBase64": "QUFB" * 3_500_001}, "The file is larger than 10 MB."),
        ({"filename": "a.txt", "text": "x" * (10 * 1024 * 1024 + 1)}, "The file is larger than 10 MB."),
    ],
)
async def test_an_attachment_without_usable_content_is_refused_before_any_request(
    tmp_path: Path, args: dict, error: str
) -> None:
    out = await run_tool(
        PLUGIN, tmp_path, "jira_add_attachment", {"cloudId": CLOUD, "issueKey": "ED-1", **args}, []
    )
    assert out == {"results": [{"error": error}]}


@pytest.mark.parametrize("name", ["../etc/passwd", "a\r\nX-Injected: 1", "dir\\file.txt"])
async def test_an_attachment_name_with_a_path_or_a_line_break_is_refused(tmp_path: Path, name: str) -> None:
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "jira_add_attachment",
        {"cloudId": CLOUD, "issueKey": "ED-1", "filename": name, "text": "x"},
        [],
    )
    assert "filename" in out["results"][0]["error"], out
