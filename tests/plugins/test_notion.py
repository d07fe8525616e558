"""Notion tools against a fake api.notion.com (bodies from Notion's API reference examples)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
import workbench_plugins.notion as notion_pkg
from workbench_plugins.notion import tools as notion_tools

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

PLUGIN = Plugin("notion", {"access_token": "secret_notion_tok"}, "Bearer secret_notion_tok")
V = {"notion-version": "2025-09-03"}
API = "https://api.notion.com/v1"
PAGE_ID = "59833787-2cf9-4fdf-8782-e53db20768a5"
DB_ID = "d9824bdc-8445-4327-be8b-5b47500af6ce"
DS_ID = "248104cd-477e-80af-bc30-000bd28de8f9"  # the database's data source (2025-09-03)

PAGE = {
    "object": "page",
    "id": PAGE_ID,
    "created_time": "2022-03-01T19:05:00.000Z",
    "last_edited_time": "2022-07-06T20:25:00.000Z",
    "created_by": {"object": "user", "id": "ee5f0f84-409a-440f-983a-a5315961c6e4"},
    "cover": None,
    "icon": {"type": "emoji", "emoji": "🐞"},
    "parent": {"type": "data_source_id", "data_source_id": DS_ID, "database_id": DB_ID},
    "archived": False,
    "properties": {
        "Store availability": {
            "id": "%3AUPp",
            "type": "multi_select",
            "multi_select": [
                {"id": "t|O@", "name": "Gus's Community Market", "color": "yellow"},
                {"id": "{Ml\\", "name": "Rainbow Grocery", "color": "gray"},
            ],
        },
        "Price": {"id": "BJXS", "type": "number", "number": 2.5},
        "Status": {
            "id": "s%7Dd",
            "type": "status",
            "status": {"id": "1", "name": "In stock", "color": "green"},
        },
        "Due": {"id": "d", "type": "date", "date": {"start": "2023-02-23", "end": None, "time_zone": None}},
        "Name": {
            "id": "title",
            "type": "title",
            "title": [
                {
                    "type": "text",
                    "text": {"content": "Tuscan kale", "link": None},
                    "annotations": {"bold": False},
                    "plain_text": "Tuscan kale",
                    "href": None,
                }
            ],
        },
    },
    "url": "https://www.notion.so/Tuscan-kale-598337872cf94fdf8782e53db20768a5",
}
PAGE_OUT = {
    "id": PAGE_ID,
    "object": "page",
    "title": "Tuscan kale",
    "url": "https://www.notion.so/Tuscan-kale-598337872cf94fdf8782e53db20768a5",
    "parent": {"type": "data_source_id", "id": DS_ID, "database_id": DB_ID},
    "created_time": "2022-03-01T19:05:00.000Z",
    "last_edited_time": "2022-07-06T20:25:00.000Z",
    "archived": False,
    "properties": {
        "Store availability": ["Gus's Community Market", "Rainbow Grocery"],
        "Price": 2.5,
        "Status": "In stock",
        "Due": "2023-02-23",
        "Name": "Tuscan kale",
    },
}
DATABASE = {
    "object": "database",
    "id": DB_ID,
    "created_time": "2021-07-08T23:50:00.000Z",
    "last_edited_time": "2021-07-08T23:50:00.000Z",
    "title": [
        {"type": "text", "text": {"content": "Grocery List", "link": None}, "plain_text": "Grocery List"}
    ],
    "parent": {"type": "page_id", "page_id": "98ad959b-2b6a-4774-80ee-00246fb0ea9b"},
    "url": "https://www.notion.so/d9824bdc84454327be8b5b47500af6ce",
    "archived": False,
    "data_sources": [{"id": DS_ID, "name": "Grocery List"}],
}
DATA_SOURCE = {
    "object": "data_source",
    "id": DS_ID,
    "parent": {"type": "database_id", "database_id": DB_ID},
    "title": [{"type": "text", "text": {"content": "Grocery List"}, "plain_text": "Grocery List"}],
    "properties": {
        "Name": {"id": "title", "name": "Name", "type": "title", "title": {}},
        "Price": {"id": "evWq", "name": "Price", "type": "number", "number": {"format": "dollar"}},
        "Food group": {
            "id": "TJmr",
            "name": "Food group",
            "type": "select",
            "select": {
                "options": [
                    {"id": "96eb", "name": "🥦Vegetable", "color": "green"},
                    {"id": "bb44", "name": "🍎Fruit", "color": "red"},
                ]
            },
        },
        "Supplier": {
            "id": "rel1",
            "name": "Supplier",
            "type": "relation",
            "relation": {
                "data_source_id": "1c7b35e6-e67f-8096-bf3f-000ba938459e",
                "database_id": "1c7b35e6-e67f-8096-bf3f-ffd2bd1a3e4a",
                "type": "single_property",
                "single_property": {},
            },
        },
    },
}
DATABASE_OUT = {
    "id": DB_ID,
    "object": "database",
    "title": "Grocery List",
    "url": "https://www.notion.so/d9824bdc84454327be8b5b47500af6ce",
    "parent": {"type": "page_id", "id": "98ad959b-2b6a-4774-80ee-00246fb0ea9b"},
    "created_time": "2021-07-08T23:50:00.000Z",
    "last_edited_time": "2021-07-08T23:50:00.000Z",
    "archived": False,
}
PARAGRAPH = {
    "object": "block",
    "id": "c02fc1d3-db8b-45c5-a222-27595b15aea7",
    "parent": {"type": "page_id", "page_id": PAGE_ID},
    "created_time": "2022-03-01T19:05:00.000Z",
    "last_edited_time": "2022-03-01T19:05:00.000Z",
    "has_children": False,
    "archived": False,
    "type": "paragraph",
    "paragraph": {
        "rich_text": [
            {
                "type": "text",
                "text": {"content": "Lacinato kale is a variety of kale.", "link": None},
                "plain_text": "Lacinato kale is a variety of kale.",
            }
        ],
        "color": "default",
    },
}
PARAGRAPH_OUT = {
    "id": "c02fc1d3-db8b-45c5-a222-27595b15aea7",
    "type": "paragraph",
    "text": "Lacinato kale is a variety of kale.",
    "has_children": False,
}
TODO = {
    "object": "block",
    "id": "ac803deb-7b3a-4183-b40d-b8bd1e5d3f0c",
    "has_children": False,
    "type": "to_do",
    "to_do": {"rich_text": [{"type": "text", "plain_text": "Buy kale"}], "checked": True},
}
COMMENT = {
    "object": "comment",
    "id": "b52b8ed6-e029-4707-a671-832549c09de3",
    "parent": {"type": "page_id", "page_id": PAGE_ID},
    "discussion_id": "f1407351-36f5-4c49-a13c-49f8ba11776d",
    "created_time": "2022-07-15T20:53:00.000Z",
    "last_edited_time": "2022-07-15T20:53:00.000Z",
    "created_by": {"object": "user", "id": "067dee40-6ebd-496f-b446-093c715fb5ec"},
    "rich_text": [
        {"type": "text", "text": {"content": "Hello world", "link": None}, "plain_text": "Hello world"}
    ],
}
COMMENT_OUT = {
    "id": "b52b8ed6-e029-4707-a671-832549c09de3",
    "discussion_id": "f1407351-36f5-4c49-a13c-49f8ba11776d",
    "text": "Hello world",
    "created_time": "2022-07-15T20:53:00.000Z",
    "created_by": "067dee40-6ebd-496f-b446-093c715fb5ec",
}


def lst(*items: dict, cursor: str | None = None) -> dict:
    return {
        "object": "list",
        "results": list(items),
        "next_cursor": cursor,
        "has_more": cursor is not None,
        "type": "page_or_database",
    }


def title_only(out: dict) -> dict:
    return {k: v for k, v in out.items() if k != "properties"}


CASES = [
    Case(
        "notion_search",
        {"query": "kale", "type": "page", "perPage": 2, "cursor": "c0"},
        [
            Call(
                "POST",
                f"{API}/search",
                json={
                    "query": "kale",
                    "page_size": 2,
                    "filter": {"property": "object", "value": "page"},
                    "start_cursor": "c0",
                },
                response=lst(PAGE, cursor="fe2cc560-036c-44cd-90e8-294d5a74cebc"),
                expect_headers=V,
            )
        ],
        {
            "results": [title_only(PAGE_OUT)],
            "hasMore": True,
            "nextCursor": "fe2cc560-036c-44cd-90e8-294d5a74cebc",
        },
    ),
    Case(
        "notion_get_page",
        {"page_id": PAGE_ID},
        [Call("GET", f"{API}/pages/{PAGE_ID}", response=PAGE, expect_headers=V)],
        PAGE_OUT,
    ),
    Case(
        "notion_get_page_content",
        {"block_id": PAGE_ID, "perPage": 50},
        [
            Call(
                "GET",
                f"{API}/blocks/{PAGE_ID}/children",
                [("page_size", "50")],
                response=lst(PARAGRAPH, TODO),
                expect_headers=V,
            )
        ],
        {
            "blocks": [
                PARAGRAPH_OUT,
                {
                    "id": "ac803deb-7b3a-4183-b40d-b8bd1e5d3f0c",
                    "type": "to_do",
                    "text": "Buy kale",
                    "checked": True,
                    "has_children": False,
                },
            ],
            "hasMore": False,
            "nextCursor": None,
        },
    ),
    Case(
        "notion_create_page",
        {
            "parent_database_id": DB_ID,
            "title_property": "Name",
            "title": "Tuscan kale",
            "properties": {"Price": {"number": 2.5}},
            "content": "Lacinato kale is a variety of kale.\n\nIt is delicious.",
        },
        [
            Call("GET", f"{API}/databases/{DB_ID}", response=DATABASE, expect_headers=V),
            Call(
                "POST",
                f"{API}/pages",
                json={
                    "parent": {"type": "data_source_id", "data_source_id": DS_ID},
                    "properties": {
                        "Name": {"title": [{"type": "text", "text": {"content": "Tuscan kale"}}]},
                        "Price": {"number": 2.5},
                    },
                    "children": [
                        {
                            "object": "block",
                            "type": "paragraph",
                            "paragraph": {
                                "rich_text": [
                                    {
                                        "type": "text",
                                        "text": {"content": "Lacinato kale is a variety of kale."},
                                    }
                                ]
                            },
                        },
                        {
                            "object": "block",
                            "type": "paragraph",
                            "paragraph": {
                                "rich_text": [{"type": "text", "text": {"content": "It is delicious."}}]
                            },
                        },
                    ],
                },
                response=PAGE,
                expect_headers=V,
            ),
        ],
        PAGE_OUT,
    ),
    Case(
        "notion_update_page",
        {"page_id": PAGE_ID, "properties": {"Status": {"status": {"name": "In stock"}}}},
        [
            Call(
                "PATCH",
                f"{API}/pages/{PAGE_ID}",
                json={"properties": {"Status": {"status": {"name": "In stock"}}}},
                response=PAGE,
                expect_headers=V,
            )
        ],
        PAGE_OUT,
    ),
    Case(
        "notion_archive_page",
        {"page_id": PAGE_ID},
        [
            Call(
                "PATCH",
                f"{API}/pages/{PAGE_ID}",
                json={"archived": True},
                response={**PAGE, "archived": True},
                expect_headers=V,
            )
        ],
        {**title_only(PAGE_OUT), "archived": True},
    ),
    Case(
        "notion_move_page",
        {"page_id": PAGE_ID, "parent_database_id": DB_ID},
        [
            Call("GET", f"{API}/databases/{DB_ID}", response=DATABASE, expect_headers=V),
            Call(
                "POST",
                f"{API}/pages/{PAGE_ID}/move",
                json={"parent": {"type": "data_source_id", "data_source_id": DS_ID}},
                response=PAGE,
                expect_headers=V,
            ),
        ],
        PAGE_OUT,
    ),
    Case(
        "notion_append_text",
        {"block_id": PAGE_ID, "text": "Lacinato kale is a variety of kale."},
        [
            Call(
                "PATCH",
                f"{API}/blocks/{PAGE_ID}/children",
                json={
                    "children": [
                        {
                            "object": "block",
                            "type": "paragraph",
                            "paragraph": {
                                "rich_text": [
                                    {
                                        "type": "text",
                                        "text": {"content": "Lacinato kale is a variety of kale."},
                                    }
                                ]
                            },
                        }
                    ]
                },
                response={"object": "list", "results": [PARAGRAPH], "next_cursor": None, "has_more": False},
                expect_headers=V,
            )
        ],
        {"blocks": [PARAGRAPH_OUT]},
    ),
    Case(
        "notion_get_database",
        {"database_id": DB_ID},
        [
            Call("GET", f"{API}/databases/{DB_ID}", response=DATABASE, expect_headers=V),
            Call("GET", f"{API}/data_sources/{DS_ID}", response=DATA_SOURCE, expect_headers=V),
        ],
        {
            **DATABASE_OUT,
            "data_sources": [{"id": DS_ID, "name": "Grocery List"}],
            "data_source_id": DS_ID,
            "columns": {
                "Name": {"type": "title"},
                "Price": {"type": "number"},
                "Food group": {"type": "select", "options": ["🥦Vegetable", "🍎Fruit"]},
                "Supplier": {"type": "relation", "data_source_id": "1c7b35e6-e67f-8096-bf3f-000ba938459e"},
            },
        },
    ),
    Case(
        "notion_query_database",
        {
            "database_id": DB_ID,
            "filter": {"property": "Status", "status": {"equals": "In stock"}},
            "sorts": [{"property": "Price", "direction": "ascending"}],
            "perPage": 10,
        },
        [
            Call("GET", f"{API}/databases/{DB_ID}", response=DATABASE, expect_headers=V),
            Call(
                "POST",
                f"{API}/data_sources/{DS_ID}/query",
                json={
                    "page_size": 10,
                    "filter": {"property": "Status", "status": {"equals": "In stock"}},
                    "sorts": [{"property": "Price", "direction": "ascending"}],
                },
                response=lst(PAGE),
                expect_headers=V,
            ),
        ],
        {"rows": [PAGE_OUT], "hasMore": False, "nextCursor": None},
    ),
    Case(
        "notion_list_users",
        {"perPage": 2},
        [
            Call(
                "GET",
                f"{API}/users",
                [("page_size", "2")],
                response=lst(
                    {
                        "object": "user",
                        "id": "6794760a-1f15-45cd-9c65-0dfe42f5135a",
                        "name": "Aman Gupta",
                        "avatar_url": None,
                        "type": "person",
                        "person": {"email": "XXXXXXXXXXX@gmail.com"},
                    },
                    {
                        "object": "user",
                        "id": "92a680bb-6970-4726-952b-4f4c03bff617",
                        "name": "Doug Engelbot",
                        "avatar_url": None,
                        "type": "bot",
                        "bot": {},
                    },
                ),
                expect_headers=V,
            )
        ],
        {
            "users": [
                {
                    "id": "6794760a-1f15-45cd-9c65-0dfe42f5135a",
                    "type": "person",
                    "name": "Aman Gupta",
                    "avatar_url": None,
                    "email": "XXXXXXXXXXX@gmail.com",
                },
                {
                    "id": "92a680bb-6970-4726-952b-4f4c03bff617",
                    "type": "bot",
                    "name": "Doug Engelbot",
                    "avatar_url": None,
                    "email": None,
                },
            ],
            "hasMore": False,
            "nextCursor": None,
        },
    ),
    Case(
        "notion_add_comment",
        {"page_id": PAGE_ID, "text": "Hello world"},
        [
            Call(
                "POST",
                f"{API}/comments",
                json={
                    "parent": {"page_id": PAGE_ID},
                    "rich_text": [{"type": "text", "text": {"content": "Hello world"}}],
                },
                response=COMMENT,
                expect_headers=V,
            )
        ],
        COMMENT_OUT,
    ),
    Case(
        "notion_list_comments",
        {"block_id": PAGE_ID},
        [
            Call(
                "GET",
                f"{API}/comments",
                [("block_id", PAGE_ID), ("page_size", "25")],
                response={"object": "list", "results": [COMMENT], "next_cursor": None, "has_more": False},
                expect_headers=V,
            )
        ],
        {"comments": [COMMENT_OUT], "hasMore": False, "nextCursor": None},
    ),
]


TODO_OUT = {
    "id": "ac803deb-7b3a-4183-b40d-b8bd1e5d3f0c",
    "type": "to_do",
    "text": "Buy kale",
    "checked": True,
    "has_children": False,
}
HEADING = {"type": "heading_2", "heading_2": {"rich_text": [{"type": "text", "text": {"content": "Plan"}}]}}


def para(n: int) -> dict:
    return {
        "object": "block",
        "type": "paragraph",
        "paragraph": {"rich_text": [{"type": "text", "text": {"content": f"p{n}"}}]},
    }


def made(n: int) -> dict:
    return {
        "object": "block",
        "id": f"b{n}",
        "type": "paragraph",
        "has_children": False,
        "paragraph": {"rich_text": [{"plain_text": f"p{n}"}]},
    }


def _text(content: str) -> list[dict]:
    return [{"type": "text", "text": {"content": content, "link": None}, "plain_text": content, "href": None}]


def _blk(block_id: str, kind: str, body: dict, children: bool = False) -> dict:
    return {"object": "block", "id": block_id, "has_children": children, "type": kind, kind: body}


NEW_ID = "7a3b1c2d-0000-4000-8000-00000000c0b1"
TOGGLE = _blk("b1", "toggle", {"rich_text": _text("Details"), "color": "default"}, children=True)
HIDDEN = _blk("b2", "paragraph", {"rich_text": _text("Hidden"), "color": "default"})
UPLOADED = _blk(
    "b3",
    "image",
    {
        "type": "file",
        "file": {
            "url": "https://prod-files-secure.s3.us-west-2.amazonaws.com/x.png",
            "expiry_time": "2025-01-01T00:00:00Z",
        },
        "caption": [],
    },
)
SUBPAGE = _blk("b4", "child_page", {"title": "Notes"})
TABLE = _blk(
    "b5", "table", {"table_width": 2, "has_column_header": True, "has_row_header": False}, children=True
)
ROWS = [
    _blk("b6", "table_row", {"cells": [_text("Store"), _text("Price")]}),
    _blk("b7", "table_row", {"cells": [_text("Rainbow"), _text("2.50")]}),
]
COLUMNS = _blk("b8", "column_list", {}, children=True)
COLUMN_1 = _blk("b9", "column", {}, children=True)
COLUMN_2 = _blk("b10", "column", {"width_ratio": 0.5}, children=True)
LEFT = _blk("b11", "paragraph", {"rich_text": _text("Left"), "color": "default"})
RIGHT = _blk("b12", "paragraph", {"rich_text": _text("Right"), "color": "default"})


def _req(block: dict, **children: list[dict]) -> dict:
    kind = block["type"]
    return {"object": "block", "type": kind, kind: {**block[kind], **children}}


def _kids(block_id: str, *items: dict) -> Call:
    return Call(
        "GET",
        f"{API}/blocks/{block_id}/children",
        [("page_size", "100")],
        response=lst(*items),
        expect_headers=V,
    )


DUPLICATE_CALLS = [
    Call("GET", f"{API}/pages/{PAGE_ID}", response=PAGE, expect_headers=V),
    _kids(PAGE_ID, PARAGRAPH, TOGGLE, UPLOADED, SUBPAGE, TABLE, COLUMNS),
    _kids("b1", HIDDEN),
    _kids("b5", *ROWS),
    _kids("b8", COLUMN_1, COLUMN_2),
    _kids("b9", LEFT),
    _kids("b10", RIGHT),
    Call(
        "POST",
        f"{API}/pages",
        json={
            "parent": {"type": "data_source_id", "data_source_id": DS_ID},
            "properties": {
                name: {prop["type"]: prop[prop["type"]]} for name, prop in PAGE["properties"].items()
            },
            "icon": {"type": "emoji", "emoji": "🐞"},
        },
        response={**PAGE, "id": NEW_ID, "url": "https://www.notion.so/Tuscan-kale-7a3b1c2d"},
        expect_headers=V,
    ),
    Call(
        "PATCH",
        f"{API}/blocks/{NEW_ID}/children",
        json={
            "children": [
                _req(PARAGRAPH),
                _req(TOGGLE),
                _req(TABLE, children=[_req(r) for r in ROWS]),
                _req(
                    COLUMNS,
                    children=[_req(COLUMN_1, children=[_req(LEFT)]), _req(COLUMN_2, children=[_req(RIGHT)])],
                ),
            ]
        },
        response=lst(*({"object": "block", "id": f"n{i}"} for i in range(4))),
        expect_headers=V,
    ),
    Call(
        "PATCH",
        f"{API}/blocks/n1/children",
        json={"children": [_req(HIDDEN)]},
        response=lst({"object": "block", "id": "n4"}),
        expect_headers=V,
    ),
]


CASES += [
    Case(
        "notion_append_blocks",
        {"block_id": PAGE_ID, "children": [HEADING]},
        [
            Call(
                "PATCH",
                f"{API}/blocks/{PAGE_ID}/children",
                json={"children": [HEADING]},
                response={
                    "object": "list",
                    "results": [
                        {
                            **PARAGRAPH,
                            "id": "h1",
                            "type": "heading_2",
                            "heading_2": {"rich_text": [{"plain_text": "Plan"}]},
                        }
                    ],
                },
                expect_headers=V,
            )
        ],
        {"appended": 1, "blocks": [{"id": "h1", "type": "heading_2", "text": "Plan", "has_children": False}]},
    ),
    Case(
        "notion_update_block",
        {"block_id": TODO["id"], "text": "Buy kale and chard", "checked": False},
        [
            Call("GET", f"{API}/blocks/{TODO['id']}", response=TODO, expect_headers=V),
            Call(
                "PATCH",
                f"{API}/blocks/{TODO['id']}",
                json={
                    "to_do": {
                        "rich_text": [{"type": "text", "text": {"content": "Buy kale and chard"}}],
                        "checked": False,
                    }
                },
                response={
                    **TODO,
                    "to_do": {"rich_text": [{"plain_text": "Buy kale and chard"}], "checked": False},
                },
                expect_headers=V,
            ),
        ],
        {**TODO_OUT, "text": "Buy kale and chard", "checked": False},
    ),
    Case(
        "notion_delete_block",
        {"block_id": PARAGRAPH["id"]},
        [
            Call(
                "DELETE",
                f"{API}/blocks/{PARAGRAPH['id']}",
                response={**PARAGRAPH, "archived": True},
                expect_headers=V,
            )
        ],
        {"id": PARAGRAPH["id"], "archived": True},
    ),
    Case(
        "notion_create_database",
        {
            "parent_page_id": PAGE_ID,
            "title": "Grocery List",
            "properties": {"Price": {"number": {"format": "dollar"}}},
        },
        [
            Call(
                "POST",
                f"{API}/databases",
                json={
                    "parent": {"type": "page_id", "page_id": PAGE_ID},
                    "title": [{"type": "text", "text": {"content": "Grocery List"}}],
                    "is_inline": False,
                    "initial_data_source": {
                        "properties": {"Name": {"title": {}}, "Price": {"number": {"format": "dollar"}}}
                    },
                },
                response={
                    "object": "database",
                    "id": DB_ID,
                    "title": [{"type": "text", "plain_text": "Grocery List"}],
                    "url": f"https://www.notion.so/{DB_ID.replace('-', '')}",
                    "data_sources": [{"id": DS_ID, "name": "Grocery List"}],
                },
                expect_headers=V,
            )
        ],
        {
            "id": DB_ID,
            "title": "Grocery List",
            "url": f"https://www.notion.so/{DB_ID.replace('-', '')}",
            "data_source_id": DS_ID,
            "properties": {"Name": "title", "Price": "number"},
        },
    ),
    Case(
        "notion_duplicate_page",
        {"page_id": PAGE_ID},
        DUPLICATE_CALLS,
        {
            **title_only(PAGE_OUT),
            "id": NEW_ID,
            "url": "https://www.notion.so/Tuscan-kale-7a3b1c2d",
            "copied_blocks": 11,
            "not_copied": {"image (uploaded to Notion)": 1, "child_page": 1},
        },
    ),
]


def test_every_tool_has_a_case() -> None:
    assert tool_names(notion_tools) == {c.tool for c in CASES}


def test_catalog_entries() -> None:
    check_catalog("notion", notion_tools)


@pytest.mark.parametrize("case", CASES, ids=str)
async def test_tool(case: Case, tmp_path: Path) -> None:
    await run_case(PLUGIN, tmp_path, case)


async def test_create_page_needs_exactly_one_parent(tmp_path: Path) -> None:
    await run_error(
        PLUGIN,
        tmp_path,
        "notion_create_page",
        {"title": "Orphan"},
        [],
        "Give exactly one of parent_page_id or parent_database_id / parent_data_source_id",
    )


async def test_upstream_error_becomes_tool_error(tmp_path: Path) -> None:
    await run_error(
        PLUGIN,
        tmp_path,
        "notion_get_page",
        {"page_id": PAGE_ID},
        [
            Call(
                "GET",
                f"{API}/pages/{PAGE_ID}",
                status=404,
                response={
                    "object": "error",
                    "status": 404,
                    "code": "object_not_found",
                    "message": f"Could not find page with ID: {PAGE_ID}. Make sure the relevant pages and "
                    "databases are shared with your integration.",
                },
            )
        ],
        f"notion API error 404: Could not find page with ID: {PAGE_ID}. Make sure the relevant pages and "
        "databases are shared with your integration.",
    )


async def test_connecting_sends_client_credentials_as_http_basic(tmp_path: Path) -> None:
    """Notion's token endpoint takes the client id and secret as HTTP Basic, a JSON body and Notion-Version."""
    request, tokens = await exchange_code(
        tmp_path,
        notion_pkg.manifest,
        {
            "access_token": "secret_notion_tok",
            "token_type": "bearer",
            "bot_id": "b3414d659-1224-5ty7-6ffr-cc9d8773drt6",
            "workspace_name": "Ada's workspace",
            "workspace_id": "j565j4d7x3-2882-61bs-564a-jj9d9ui-c36hxfr7x",
            "owner": {"type": "user"},
        },
    )
    assert str(request.url) == "https://api.notion.com/v1/oauth/token"
    assert (
        request.headers["authorization"]
        == "Basic " + base64.b64encode(b"client-id-1:s3cr3t%2F%2B%3D").decode()
    )
    # A JSON body of the documented fields only (no client secret, no PKCE verifier) and the version header.
    assert request.headers["content-type"] == "application/json"
    assert request.headers["notion-version"] == "2025-09-03"
    assert json.loads(request.content) == {
        "grant_type": "authorization_code",
        "code": "code-123",
        "redirect_uri": "http://127.0.0.1:8787/api/auth/plugin/notion/callback",
    }
    assert tokens.credential == {"access_token": "secret_notion_tok", "token_type": "bearer"}


async def test_append_more_than_100_blocks_in_order_batches(tmp_path: Path) -> None:
    """250 blocks after an anchor: three requests of 100, 100, 50, each after the last block added."""
    blocks = [para(n) for n in range(250)]
    calls = []
    after = "anchor"
    for start in (0, 100, 200):
        end = min(start + 100, 250)
        calls.append(
            Call(
                "PATCH",
                f"{API}/blocks/{PAGE_ID}/children",
                json={"children": blocks[start:end], "after": after},
                response={"object": "list", "results": [made(n) for n in range(start, end)]},
                expect_headers=V,
            )
        )
        after = f"b{end - 1}"
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "notion_append_blocks",
        {"block_id": PAGE_ID, "children": blocks, "after": "anchor"},
        calls,
    )
    result = out["results"][0]["result"]
    assert result["appended"] == 250 and [b["id"] for b in result["blocks"]] == [f"b{n}" for n in range(250)]


async def test_append_text_and_create_page_batch_long_text(tmp_path: Path) -> None:
    text = "\n\n".join(f"p{n}" for n in range(150))
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "notion_append_text",
        {"block_id": PAGE_ID, "text": text},
        [
            Call(
                "PATCH",
                f"{API}/blocks/{PAGE_ID}/children",
                json={"children": [para(n) for n in range(100)]},
                response={"results": [made(n) for n in range(100)]},
            ),
            Call(
                "PATCH",
                f"{API}/blocks/{PAGE_ID}/children",
                json={"children": [para(n) for n in range(100, 150)]},
                response={"results": [made(n) for n in range(100, 150)]},
            ),
        ],
    )
    assert len(out["results"][0]["result"]["blocks"]) == 150
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "notion_create_page",
        {"title": "Notes", "parent_page_id": PAGE_ID, "content": text},
        [
            Call(
                "POST",
                f"{API}/pages",
                json={
                    "parent": {"page_id": PAGE_ID},
                    "properties": {"title": {"title": [{"type": "text", "text": {"content": "Notes"}}]}},
                    "children": [para(n) for n in range(100)],
                },
                response=PAGE,
            ),
            Call(
                "PATCH",
                f"{API}/blocks/{PAGE['id']}/children",
                json={"children": [para(n) for n in range(100, 150)]},
                response={"results": []},
            ),
        ],
    )
    assert "error" not in out["results"][0]


async def test_too_many_blocks_are_refused_before_any_request(tmp_path: Path) -> None:
    text = "\n\n".join(f"p{n}" for n in range(1001))
    out = await run_tool(PLUGIN, tmp_path, "notion_append_text", {"block_id": PAGE_ID, "text": text}, [])
    assert out == {"results": [{"error": "1001 blocks; one call appends at most 1000."}]}


@pytest.mark.parametrize(
    ("block", "args", "error"),
    [
        (
            {"id": "i1", "type": "image", "image": {}},
            {"text": "x"},
            "Block i1 is a image block; only text blocks can be edited here.",
        ),
        (
            {"id": "i1", "type": "paragraph", "paragraph": {}},
            {"checked": True},
            "Block i1 is a paragraph block; only to-do blocks can be checked.",
        ),
    ],
)
async def test_update_block_refuses_what_it_cannot_edit(
    tmp_path: Path, block: dict, args: dict, error: str
) -> None:
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "notion_update_block",
        {"block_id": "i1", **args},
        [Call("GET", f"{API}/blocks/i1", response=block)],
    )
    assert out == {"results": [{"error": error}]}


MULTI = {**DATABASE, "data_sources": [{"id": DS_ID, "name": "Groceries"}, {"id": "ds-2", "name": "Archive"}]}


async def test_a_database_with_several_data_sources_asks_which(tmp_path: Path) -> None:
    """Notion's upgrade guide: once a database has a second data source, a request that names only
    the database cannot say which table it means. The tools answer with the choice instead."""
    calls = [Call("GET", f"{API}/databases/{DB_ID}", response=MULTI, expect_headers=V)]
    await run_error(
        PLUGIN,
        tmp_path,
        "notion_query_database",
        {"database_id": DB_ID},
        calls,
        f"This database has 2 data sources: Groceries (id {DS_ID}), Archive (id ds-2). Pass data_source_id.",
    )
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "notion_query_database",
        {"data_source_id": "ds-2", "perPage": 5},
        [
            Call(
                "POST",
                f"{API}/data_sources/ds-2/query",
                json={"page_size": 5},
                response=lst(PAGE),
                expect_headers=V,
            )
        ],
    )
    assert out["results"][0]["result"]["rows"] == [PAGE_OUT]
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "notion_create_page",
        {"parent_data_source_id": "ds-2", "title": "Old kale", "title_property": "Name"},
        [
            Call(
                "POST",
                f"{API}/pages",
                json={
                    "parent": {"type": "data_source_id", "data_source_id": "ds-2"},
                    "properties": {"Name": {"title": [{"type": "text", "text": {"content": "Old kale"}}]}},
                },
                response=PAGE,
                expect_headers=V,
            )
        ],
    )
    assert out["results"][0]["result"]["id"] == PAGE_ID
    got = await run_tool(
        PLUGIN,
        tmp_path,
        "notion_get_database",
        {"database_id": DB_ID},
        [Call("GET", f"{API}/databases/{DB_ID}", response=MULTI, expect_headers=V)],
    )
    result = got["results"][0]["result"]
    assert result["columns"] is None and [d["name"] for d in result["data_sources"]] == [
        "Groceries",
        "Archive",
    ]


async def test_search_for_databases_finds_data_sources(tmp_path: Path) -> None:
    source = {**DATA_SOURCE, "url": "https://www.notion.so/x", "created_time": "t", "last_edited_time": "t"}
    out = await run_tool(
        PLUGIN,
        tmp_path,
        "notion_search",
        {"query": "grocery", "type": "database"},
        [
            Call(
                "POST",
                f"{API}/search",
                json={
                    "query": "grocery",
                    "page_size": 25,
                    "filter": {"property": "object", "value": "data_source"},
                },
                response=lst(source),
                expect_headers=V,
            )
        ],
    )
    (hit,) = out["results"][0]["result"]["results"]
    assert hit["object"] == "data_source" and hit["title"] == "Grocery List" and hit["id"] == DS_ID


async def test_duplicate_refuses_a_page_too_large_before_creating_anything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(notion_tools, "MAX_COPY_BLOCKS", 2)
    await run_error(
        PLUGIN,
        tmp_path,
        "notion_duplicate_page",
        {"page_id": PAGE_ID},
        DUPLICATE_CALLS[:2],
        "The page has more than 2 blocks; duplicate copies at most 2. Nothing was created.",
    )


async def test_duplicate_of_a_workspace_page_needs_a_parent(tmp_path: Path) -> None:
    top = {**PAGE, "parent": {"type": "workspace", "workspace": True}}
    await run_error(
        PLUGIN,
        tmp_path,
        "notion_duplicate_page",
        {"page_id": PAGE_ID},
        [Call("GET", f"{API}/pages/{PAGE_ID}", response=top, expect_headers=V)],
        "The page's parent is a workspace, where the API cannot create a page: give parent_page_id.",
    )


async def test_a_duplicate_that_fails_half_way_goes_to_the_trash(tmp_path: Path) -> None:
    """Under another page (only the title is kept), with a new title; the content write fails: the
    partial copy is archived and the provider's error is the answer."""
    other = "0f1e2d3c-4b5a-4968-8776-5a4b3c2d1e0f"
    await run_error(
        PLUGIN,
        tmp_path,
        "notion_duplicate_page",
        {"page_id": PAGE_ID, "parent_page_id": other, "title": "Kale (copy)"},
        [
            Call("GET", f"{API}/pages/{PAGE_ID}", response={**PAGE, "icon": None}, expect_headers=V),
            _kids(PAGE_ID, PARAGRAPH),
            Call(
                "POST",
                f"{API}/pages",
                json={
                    "parent": {"type": "page_id", "page_id": other},
                    "properties": {"Name": {"title": [{"type": "text", "text": {"content": "Kale (copy)"}}]}},
                },
                response={**PAGE, "id": NEW_ID},
            ),
            Call(
                "PATCH",
                f"{API}/blocks/{NEW_ID}/children",
                json={"children": [_req(PARAGRAPH)]},
                status=400,
                response={
                    "object": "error",
                    "status": 400,
                    "code": "validation_error",
                    "message": "body failed validation",
                },
            ),
            Call(
                "PATCH",
                f"{API}/pages/{NEW_ID}",
                json={"archived": True},
                response={**PAGE, "id": NEW_ID, "archived": True},
            ),
        ],
        "notion API error 400: body failed validation",
    )


def test_the_block_types_a_duplicate_writes_are_ones_the_api_creates() -> None:
    """notion_duplicate_page's COPYABLE_BLOCKS against the block request types of @notionhq/client
    for Notion-Version 2025-09-03 (BlockObjectRequest in its common.d.ts)."""
    import re

    from tests.plugins.provider_definitions import NODE_MODULES

    text = (NODE_MODULES / "notion-client-2025-09-03/build/src/api-endpoints/common.d.ts").read_text()
    start = text.index("export type BlockObjectRequest = ")
    end = text.index("export type ", start + 10)
    creatable = set(re.findall(r'type\?: "([a-z_0-9]+)"', text[start:end]))
    assert not notion_tools.COPYABLE_BLOCKS - creatable, notion_tools.COPYABLE_BLOCKS - creatable
    for kind in ("child_page", "child_database", "link_preview", "unsupported"):
        assert kind not in creatable and kind not in notion_tools.COPYABLE_BLOCKS
