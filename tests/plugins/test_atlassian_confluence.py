"""Confluence tools against a fake api.atlassian.com answering with Atlassian's documented examples."""

from __future__ import annotations

from pathlib import Path

import pytest
from workbench_plugins.atlassian_confluence import tools as atlassian_confluence_tools

from tests.plugins.catalog_support import Call, Case, Plugin, check_catalog, run_case, run_tool

PLUGIN = Plugin("atlassian-confluence")

GW = "https://api.atlassian.com"
CLOUD = "1324a887-45db-1bf4-1e99-ef0ff456d421"
SITE = f"{GW}/ex/confluence/{CLOUD}/wiki"
V2 = f"{SITE}/api/v2"
BASE = "https://your-domain.atlassian.net/wiki"
RESOURCES = Call(
    "GET",
    f"{GW}/oauth/token/accessible-resources",
    response=[
        {
            "id": CLOUD,
            "name": "Site name",
            "url": "https://your-domain.atlassian.net",
            "scopes": ["read:page:confluence", "write:page:confluence"],
        },
    ],
)
PAGE = {
    "id": "65868",
    "status": "current",
    "title": "Onboarding",
    "spaceId": "98306",
    "parentId": "65537",
    "parentType": "page",
    "authorId": "557058:5b6a5f1b-1f3d-4f6b-9a58-4f2a1c3d2e1f",
    "createdAt": "2024-03-01T10:00:00.000Z",
    "version": {"createdAt": "2024-03-02T10:00:00.000Z", "message": "", "number": 3, "minorEdit": False},
    "body": {"storage": {"representation": "storage", "value": "<p>Welcome aboard</p>"}},
    "_links": {
        "webui": "/spaces/ENG/pages/65868/Onboarding",
        "editui": "/pages/resumedraft.action?draftId=65868",
        "tinyui": "/x/TAE",
    },
}
PAGE_SHAPED = {
    "id": "65868",
    "title": "Onboarding",
    "status": "current",
    "spaceId": "98306",
    "parentId": "65537",
    "version_number": 3,
    "createdAt": "2024-03-01T10:00:00.000Z",
    "url": "/spaces/ENG/pages/65868/Onboarding",
}

# A page body whose text has "We ship" twice, across tags and an entity.
INLINE_PAGE = {
    **PAGE,
    "body": {
        "storage": {
            "representation": "storage",
            "value": "<p>We ship on the <strong>second</strong> Tuesday &amp; review on Friday.</p>"
            "<p>We <em>ship</em> often.</p>",
        }
    },
}

CASES = [
    Case(
        "confluence_list_spaces",
        {"cloudId": CLOUD, "keys": ["ENG", "OPS"], "limit": 2},
        [
            Call(
                "GET",
                f"{V2}/spaces",
                {"limit": 2, "keys": "ENG,OPS"},
                json=None,
                response={
                    "results": [
                        {
                            "id": "98306",
                            "key": "ENG",
                            "name": "Engineering",
                            "type": "global",
                            "status": "current",
                            "homepageId": "65537",
                        }
                    ],
                    "_links": {
                        "next": "/wiki/api/v2/spaces?keys=ENG,OPS&limit=2&cursor=eyJpZCI6Ijk4MzA2In0",
                        "base": BASE,
                    },
                },
            )
        ],
        {
            "spaces": [
                {"id": "98306", "key": "ENG", "name": "Engineering", "type": "global", "status": "current"}
            ],
            "nextCursor": "eyJpZCI6Ijk4MzA2In0",
        },
    ),
    Case(
        "confluence_list_pages",
        {"spaceKey": "ENG"},  # site discovered, space key resolved to its id
        [
            RESOURCES,
            Call(
                "GET",
                f"{V2}/spaces",
                {"keys": "ENG"},
                response={"results": [{"id": "98306", "key": "ENG"}], "_links": {}},
            ),
            Call(
                "GET",
                f"{V2}/spaces/98306/pages",
                {"limit": 25},
                response={"results": [PAGE], "_links": {"base": BASE}},
            ),
        ],
        {"pages": [{**PAGE_SHAPED, "url": f"{BASE}/spaces/ENG/pages/65868/Onboarding"}], "nextCursor": None},
    ),
    Case(
        "confluence_get_page",
        {"cloudId": CLOUD, "pageId": "65868"},
        [Call("GET", f"{V2}/pages/65868", {"body-format": "storage"}, response=PAGE)],
        {**PAGE_SHAPED, "body": "<p>Welcome aboard</p>"},
    ),
    Case(
        "confluence_create_page",
        {
            "cloudId": CLOUD,
            "spaceId": "98306",
            "title": "Onboarding",
            "body": "<p>Welcome aboard</p>",
            "parentId": "65537",
        },
        [
            Call(
                "POST",
                f"{V2}/pages",
                json={
                    "spaceId": "98306",
                    "status": "current",
                    "title": "Onboarding",
                    "parentId": "65537",
                    "body": {"representation": "storage", "value": "<p>Welcome aboard</p>"},
                },
                response={**PAGE, "version": {**PAGE["version"], "number": 1}},
            )
        ],
        {**PAGE_SHAPED, "version_number": 1},
    ),
    Case(
        "confluence_update_page",
        {"cloudId": CLOUD, "pageId": "65868", "body": "<p>Welcome, again</p>", "versionMessage": "typo"},
        [
            Call("GET", f"{V2}/pages/65868", response=PAGE),
            Call(
                "PUT",
                f"{V2}/pages/65868",
                json={
                    "id": "65868",
                    "status": "current",
                    "title": "Onboarding",
                    "body": {"representation": "storage", "value": "<p>Welcome, again</p>"},
                    "version": {"number": 4, "message": "typo"},
                },
                response={**PAGE, "version": {**PAGE["version"], "number": 4}},
            ),
        ],
        {**PAGE_SHAPED, "version_number": 4},
    ),
    Case(
        "confluence_delete_page",
        {"cloudId": CLOUD, "pageId": "65868"},
        [Call("DELETE", f"{V2}/pages/65868", json=None, status=204)],
        {"id": "65868", "deleted": True},
    ),
    Case(
        "confluence_list_child_pages",
        {"cloudId": CLOUD, "pageId": "65537", "limit": 1},
        [
            Call(
                "GET",
                f"{V2}/pages/65537/children",
                {"limit": 1},
                response={
                    "results": [
                        {
                            "id": "65868",
                            "status": "current",
                            "title": "Onboarding",
                            "spaceId": "98306",
                            "childPosition": 0,
                        }
                    ],
                    "_links": {"next": "/wiki/api/v2/pages/65537/children?limit=1&cursor=abc123"},
                },
            )
        ],
        {
            "pages": [
                {
                    "id": "65868",
                    "title": "Onboarding",
                    "status": "current",
                    "spaceId": "98306",
                    "childPosition": 0,
                }
            ],
            "nextCursor": "abc123",
        },
    ),
    Case(
        "confluence_search",
        {"cloudId": CLOUD, "cql": 'type = page AND text ~ "onboarding"', "limit": 10},
        [
            Call(
                "GET",
                f"{SITE}/rest/api/search",
                {"cql": 'type = page AND text ~ "onboarding"', "limit": 10},
                response={
                    "results": [
                        {
                            "content": {
                                "id": "65868",
                                "type": "page",
                                "status": "current",
                                "title": "Onboarding",
                            },
                            "title": "Onboarding",
                            "excerpt": "Welcome aboard, @@@hl@@@onboarding@@@endhl@@@",
                            "url": "/spaces/ENG/pages/65868/Onboarding",
                            "entityType": "content",
                            "lastModified": "2024-03-02T10:00:00.000Z",
                        }
                    ],
                    "start": 0,
                    "limit": 10,
                    "size": 1,
                    "totalSize": 1,
                    "cqlQuery": "type = page",
                    "_links": {
                        "base": BASE,
                        "context": "/wiki",
                        "next": "/rest/api/search?cql=type+%3D+page&limit=10&cursor=raNDoMsTRiNg",
                    },
                },
            )
        ],
        {
            "results": [
                {
                    "id": "65868",
                    "type": "page",
                    "title": "Onboarding",
                    "excerpt": "Welcome aboard, @@@hl@@@onboarding@@@endhl@@@",
                    "url": f"{BASE}/spaces/ENG/pages/65868/Onboarding",
                    "lastModified": "2024-03-02T10:00:00.000Z",
                }
            ],
            "totalSize": 1,
            "nextCursor": "raNDoMsTRiNg",
        },
    ),
    Case(
        "confluence_list_page_labels",
        {"cloudId": CLOUD, "pageId": "65868", "prefix": "global"},
        [
            Call(
                "GET",
                f"{V2}/pages/65868/labels",
                {"prefix": "global", "limit": 25},
                response={
                    "results": [{"id": "2752513", "name": "onboarding", "prefix": "global"}],
                    "_links": {},
                },
            )
        ],
        {"labels": [{"id": "2752513", "name": "onboarding", "prefix": "global"}], "nextCursor": None},
    ),
    Case(
        "confluence_list_comments",
        {"cloudId": CLOUD, "pageId": "65868"},
        [
            Call(
                "GET",
                f"{V2}/pages/65868/footer-comments",
                {"body-format": "storage", "limit": 25},
                response={
                    "results": [
                        {
                            "id": "131073",
                            "status": "current",
                            "title": "Re: Onboarding",
                            "pageId": "65868",
                            "version": {
                                "createdAt": "2024-03-03T09:00:00.000Z",
                                "number": 1,
                                "authorId": "557058:5b6a5f1b",
                            },
                            "body": {"storage": {"representation": "storage", "value": "<p>Nice</p>"}},
                        }
                    ],
                    "_links": {},
                },
            )
        ],
        {
            "comments": [
                {
                    "id": "131073",
                    "version_authorId": "557058:5b6a5f1b",
                    "version_createdAt": "2024-03-03T09:00:00.000Z",
                    "body": "<p>Nice</p>",
                }
            ],
            "nextCursor": None,
        },
    ),
    Case(
        "confluence_add_comment",
        {"cloudId": CLOUD, "pageId": "65868", "body": "<p>Nice</p>"},
        [
            Call(
                "POST",
                f"{V2}/footer-comments",
                json={"pageId": "65868", "body": {"representation": "storage", "value": "<p>Nice</p>"}},
                response={
                    "id": "131073",
                    "status": "current",
                    "pageId": "65868",
                    "version": {"createdAt": "2024-03-03T09:00:00.000Z", "number": 1},
                },
            )
        ],
        {
            "id": "131073",
            "pageId": "65868",
            "version_number": 1,
            "version_createdAt": "2024-03-03T09:00:00.000Z",
        },
    ),
    Case(
        "confluence_list_page_attachments",
        {"cloudId": CLOUD, "pageId": "65868", "mediaType": "application/pdf"},
        [
            Call(
                "GET",
                f"{V2}/pages/65868/attachments",
                {"mediaType": "application/pdf", "limit": 25},
                response={
                    "results": [
                        {
                            "id": "att98312",
                            "status": "current",
                            "title": "handbook.pdf",
                            "createdAt": "2024-03-02T10:00:00.000Z",
                            "pageId": "65868",
                            "mediaType": "application/pdf",
                            "mediaTypeDescription": "PDF Document",
                            "comment": "v2 of the handbook",
                            "fileId": "5e0e3c52-7e0a-4f5b-8c3b-0b6d2f9a4c11",
                            "fileSize": 48213,
                            "webuiLink": "/spaces/ENG/pages/65868/Onboarding?preview=/65868/98312/handbook.pdf",
                            "downloadLink": "/download/attachments/65868/handbook.pdf?version=2&api=v2",
                            "version": {"number": 2, "createdAt": "2024-03-02T10:00:00.000Z"},
                        }
                    ],
                    "_links": {
                        "next": "/wiki/api/v2/pages/65868/attachments?cursor=eyJpZCI6Ijk4MzEyIn0",
                        "base": BASE,
                    },
                },
            )
        ],
        {
            "attachments": [
                {
                    "id": "att98312",
                    "title": "handbook.pdf",
                    "mediaType": "application/pdf",
                    "fileSize": 48213,
                    "comment": "v2 of the handbook",
                    "createdAt": "2024-03-02T10:00:00.000Z",
                    "version_number": 2,
                    "downloadUrl": f"{BASE}/download/attachments/65868/handbook.pdf?version=2&api=v2",
                }
            ],
            "nextCursor": "eyJpZCI6Ijk4MzEyIn0",
        },
    ),
    Case(
        "confluence_list_inline_comments",
        {"cloudId": CLOUD, "pageId": "65868", "resolution": "open"},
        [
            Call(
                "GET",
                f"{V2}/pages/65868/inline-comments",
                {"body-format": "storage", "resolution-status": "open", "limit": 25},
                response={
                    "results": [
                        {
                            "id": "163841",
                            "status": "current",
                            "title": "Re: Onboarding",
                            "pageId": "65868",
                            "resolutionStatus": "open",
                            "properties": {
                                "inlineMarkerRef": "7b0c6f1e-3a55-4a8b-9d0e-2a1f4c3b5d6e",
                                "inlineOriginalSelection": "second Tuesday",
                            },
                            "version": {
                                "createdAt": "2024-03-04T09:00:00.000Z",
                                "number": 1,
                                "authorId": "557058:5b6a5f1b",
                            },
                            "body": {"storage": {"representation": "storage", "value": "<p>Still true?</p>"}},
                        }
                    ],
                    "_links": {},
                },
            )
        ],
        {
            "comments": [
                {
                    "id": "163841",
                    "resolutionStatus": "open",
                    "version_authorId": "557058:5b6a5f1b",
                    "version_createdAt": "2024-03-04T09:00:00.000Z",
                    "selection": "second Tuesday",
                    "body": "<p>Still true?</p>",
                }
            ],
            "nextCursor": None,
        },
    ),
    Case(
        "confluence_add_inline_comment",
        {
            "cloudId": CLOUD,
            "pageId": "65868",
            "body": "<p>Still true?</p>",
            "selection": "We ship",
            "occurrence": 2,
        },
        [
            Call("GET", f"{V2}/pages/65868", {"body-format": "storage"}, response=INLINE_PAGE),
            Call(
                "POST",
                f"{V2}/inline-comments",
                json={
                    "pageId": "65868",
                    "body": {"representation": "storage", "value": "<p>Still true?</p>"},
                    "inlineCommentProperties": {
                        "textSelection": "We ship",
                        "textSelectionMatchCount": 2,
                        "textSelectionMatchIndex": 1,
                    },
                },
                response={
                    "id": "163842",
                    "status": "current",
                    "pageId": "65868",
                    "resolutionStatus": "open",
                    "version": {"createdAt": "2024-03-04T09:00:00.000Z", "number": 1},
                },
            ),
        ],
        {
            "id": "163842",
            "pageId": "65868",
            "resolutionStatus": "open",
            "version_number": 1,
            "selection": "We ship",
        },
    ),
]


def test_every_tool_has_a_case() -> None:
    from workbench_plugins.atlassian_confluence.tools import TOOLS

    assert sorted(t.name for t in TOOLS) == sorted(c.tool for c in CASES)


def test_catalog_entries_are_well_formed() -> None:
    check_catalog("atlassian-confluence", atlassian_confluence_tools)


@pytest.mark.parametrize("case", CASES, ids=str)
async def test_tool_request_and_result(tmp_path: Path, case: Case) -> None:
    await run_case(PLUGIN, tmp_path, case)


async def test_upstream_404_becomes_tool_error(tmp_path: Path) -> None:
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "confluence_get_page",
        {"cloudId": CLOUD, "pageId": "1"},
        [
            Call(
                "GET",
                f"{V2}/pages/1",
                {"body-format": "storage"},
                status=404,
                response={
                    "errors": [{"status": 404, "code": "NOT_FOUND", "title": "Not Found", "detail": None}]
                },
            )
        ],
    )
    assert out == {"results": [{"error": "atlassian-confluence API error 404: Not Found"}]}


async def test_list_pages_needs_a_space(tmp_path: Path) -> None:
    out = await run_tool(PLUGIN, tmp_path, "confluence_list_pages", {"cloudId": CLOUD}, [])
    assert out == {"results": [{"error": "Give spaceId or spaceKey."}]}


async def _inline_error(tmp_path: Path, args: dict, error: str) -> None:
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "confluence_add_inline_comment",
        {"cloudId": CLOUD, "pageId": "65868", "body": "<p>?</p>", **args},
        [Call("GET", f"{V2}/pages/65868", {"body-format": "storage"}, response=INLINE_PAGE)],
    )
    assert out == {"results": [{"error": error}]}


async def test_an_inline_comment_is_anchored_to_text_the_reader_sees(tmp_path: Path) -> None:
    """Nothing is posted when the text is missing, ambiguous or the occurrence is past it; the
    text is matched as shown (tags dropped, entities decoded)."""
    await _inline_error(tmp_path, {"selection": "Monday"}, "The text 'Monday' does not appear on page 65868.")
    await _inline_error(
        tmp_path,
        {"selection": "We ship"},
        "The text appears 2 times on page 65868: give occurrence (1 to 2).",
    )
    await _inline_error(
        tmp_path,
        {"selection": "We ship", "occurrence": 3},
        "The text appears 2 times on page 65868; occurrence 3 is past it.",
    )
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "confluence_add_inline_comment",
        {"cloudId": CLOUD, "pageId": "65868", "body": "<p>?</p>", "selection": "second Tuesday & review"},
        [
            Call("GET", f"{V2}/pages/65868", {"body-format": "storage"}, response=INLINE_PAGE),
            Call(
                "POST",
                f"{V2}/inline-comments",
                json={
                    "pageId": "65868",
                    "body": {"representation": "storage", "value": "<p>?</p>"},
                    "inlineCommentProperties": {
                        "textSelection": "second Tuesday & review",
                        "textSelectionMatchCount": 1,
                        "textSelectionMatchIndex": 0,
                    },
                },
                response={"id": "163843", "pageId": "65868", "resolutionStatus": "open"},
            ),
        ],
    )
    assert out["results"][0]["result"]["id"] == "163843"
