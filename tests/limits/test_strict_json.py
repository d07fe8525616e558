"""Issue 12: one strict JSON parser for every untrusted body, and response bodies that are always
valid JSON. Nesting is capped before parsing (no RecursionError anywhere), NaN/Infinity and lone
surrogates are refused, and every refusal over MCP is a JSON-RPC error with an audit row."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import BaseModel
from workbench.composition import Gateway
from workbench.guard.jsontext import MAX_DEPTH, JsonRejected, dumps, js_stringify, nesting_exceeds, parse
from workbench.manifest import Manifest, NoAuth
from workbench.runtime.local_app import create_local_app
from workbench.tools import tool

from tests.support.demo_plugins import demo_registry, demo_upstream
from tests.support.gateways import make_gateway, principal_for

ODD = Manifest(name="odd", version="1.0.0", display_name="Odd", auth=NoAuth(), tool_prefix="odd_")


class Nothing(BaseModel):
    pass


@tool("odd_values", "Returns what an upstream may send: non-finite numbers, lone surrogates.", Nothing)
def odd_values(args: Nothing, ctx: Any) -> Any:
    return {"nan": math.nan, "inf": [math.inf, -math.inf], "s": "a\ud800b", "\udfff": 1, "ok": "é😀"}


@pytest.fixture
def gw(tmp_path: Path) -> Gateway:
    registry = demo_registry()
    registry.add(ODD, lambda: [odd_values])
    return make_gateway(tmp_path, registry=registry, transport=demo_upstream([]))


def nested(levels: int, leaf: str = "1", opener: str = "[", closer: str = "]") -> str:
    return opener * levels + leaf + closer * levels


# -- the parser ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        (nested(MAX_DEPTH + 1), "nested deeper than 64"),
        (nested(200_000), "nested deeper than 64"),
        ('{"a":' * 65 + "1" + "}" * 65, "nested deeper than 64"),
        ('[{"k": ' * 40 + "0" + "}]" * 40, "nested deeper than 64"),
        ("[" * 100_000, "nested deeper than 64"),  # malformed and deep: refused before parsing
        ("NaN", "NaN is not a JSON value"),
        ('{"a": [1, Infinity]}', "Infinity is not a JSON value"),
        ('{"id": -Infinity}', "-Infinity is not a JSON value"),
        ("[1e309]", "out of range"),
        ("-1.5e99999", "out of range"),
        ('"\\ud800"', "lone surrogate \\ud800"),
        ('{"\\udc01x": 1}', "lone surrogate \\udc01"),
        ('["ok", {"deep": ["\\uDBFF"]}]', "lone surrogate \\udbff"),
        ('"\\udc00\\ud800"', "lone surrogate"),  # low before high is no pair
        ("1" * 5000, "invalid JSON"),  # over the int digit limit
        ("[1,]", "invalid JSON"),
        ("", "invalid JSON"),
    ],
)
def test_strict_parse_refuses(raw: str, why: str) -> None:
    with pytest.raises(JsonRejected, match=why.replace("\\", "\\\\").replace("[", "\\[")):
        parse(raw)
    with pytest.raises(JsonRejected):
        parse(raw.encode())


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        (nested(MAX_DEPTH), json.loads(nested(MAX_DEPTH))),
        ('["' + "[" * 500 + '"]', ["[" * 500]),  # brackets inside strings do not nest
        ('{"k": "\\\\ud800"}', {"k": "\\ud800"}),  # an escaped backslash, not an escape
        ('"\\ud83d\\ude00"', "😀"),  # a pair is one character
        (
            '{"n": 1e308, "m": -0.0, "i": 12345678901234567890}',
            {"n": 1e308, "m": -0.0, "i": 12345678901234567890},
        ),
        (" \t\n[ ]\n", []),
    ],
)
def test_strict_parse_accepts(raw: str, value: Any) -> None:
    assert parse(raw) == value


def test_bytes_must_be_utf8() -> None:
    with pytest.raises(JsonRejected, match="not UTF-8"):
        parse(b'"\xed\xa0\x80"')  # a surrogate encoded as UTF-8 bytes
    with pytest.raises(JsonRejected, match="not UTF-8"):
        parse('"é"'.encode("latin-1"))
    assert parse('"é"'.encode()) == "é"


def test_no_recursion_error_even_with_a_low_recursion_limit() -> None:
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(120)
    try:
        with pytest.raises(JsonRejected):
            parse(nested(100_000))
        assert nesting_exceeds(json.loads(nested(50)), 10)
    finally:
        sys.setrecursionlimit(old)


def test_dumps_is_always_valid_encodable_json() -> None:
    text = dumps({"nan": math.nan, "inf": [math.inf], "s": "a\ud800", "\udfff": "é"})
    assert json.loads(text.encode("utf-8")) == {"nan": None, "inf": [None], "s": "a\ud800", "\udfff": "é"}
    assert "é" in text  # non-ASCII kept as is


def test_js_stringify_writes_numbers_as_javascript_does() -> None:
    cases = {
        1.0: "1",
        -2.5: "-2.5",
        1e21: "1e+21",
        1e20: "100000000000000000000",
        1.5e-7: "1.5e-7",
        0.000001: "0.000001",
        123e-20: "1.23e-18",
        5e-324: "5e-324",
        1.7976931348623157e308: "1.7976931348623157e+308",
        math.nan: "null",
        -math.inf: "null",
        10**21: "1e+21",
        2**53 + 1: "9007199254740993",
    }
    for value, text in cases.items():
        assert js_stringify(value) == text, value
    assert (
        js_stringify({"b": "\u2028", "1": [None, False], "a\ud800": "\x7f"})
        == '{"1":[null,false],"b":"\u2028","a\\ud800":"\x7f"}'
    )


# -- over MCP ------------------------------------------------------------------------------------


async def post(gw: Gateway, raw: bytes | str, key: str | None = None) -> httpx.Response:
    headers = {"Content-Type": "application/json"}
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    transport = httpx.ASGITransport(app=create_local_app(gw))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8787") as http:
        return await http.post("/mcp", content=raw, headers=headers)


def call(arguments: Any, name: str = "execute_tools", id_: Any = 7) -> str:
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": id_,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }
    )


@pytest.mark.parametrize(
    "raw",
    [
        '{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": ' + nested(600, "{}") + "}",
        call({"executions": [{"tool": "free_item", "args": {"value": json.loads(nested(500))}}]}),
        '{"jsonrpc": "2.0", "id": NaN, "method": "ping"}',
        '{"jsonrpc": "2.0", "id": Infinity, "method": "ping"}',
        '{"jsonrpc": "2.0", "id": 1, "method": "tools/\\ud800list"}',
        call({"executions": [{"tool": "free_\\udc00item"}]}).replace("\\\\udc00", "\\udc00"),
        '{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"\\udbff": 1}}',
    ],
)
async def test_mcp_refuses_what_is_not_strict_json_with_a_parse_error_and_audits_it(
    gw: Gateway, raw: str
) -> None:
    me = principal_for(gw)
    key = gw.auth.mint_key(me.user)
    r = await post(gw, raw, key)
    assert r.status_code == 400
    body = r.json()
    assert body["id"] is None and body["error"]["code"] == -32700
    assert body["error"]["message"].startswith("Parse error: ")
    (event,) = gw.stores.audit.list_for(me.user.id)
    assert (event["action"], event["code"], event["success"]) == ("MCP_ERROR", -32700, False)
    # without a credential: the same answer, and nothing to attribute it to
    anonymous = await post(gw, raw)
    assert (anonymous.status_code, anonymous.json()) == (400, body)


@pytest.mark.parametrize("bad_id", ["{}", "[1]", "true", "false"])
async def test_an_id_that_is_no_string_or_number_is_an_invalid_request(gw: Gateway, bad_id: str) -> None:
    key = gw.auth.mint_key(principal_for(gw).user)
    r = await post(gw, '{"jsonrpc": "2.0", "id": ' + bad_id + ', "method": "ping"}', key)
    assert r.status_code == 400
    assert r.json()["id"] is None and r.json()["error"]["code"] == -32600


async def test_a_deep_tool_argument_is_an_invalid_arguments_result_audited(gw: Gateway) -> None:
    me = principal_for(gw)
    key = gw.auth.mint_key(me.user)
    deep = json.loads(nested(40))  # inside the document cap, over the arguments cap
    r = await post(gw, call({"executions": [{"tool": "free_item", "args": {"value": deep}}]}), key)
    assert r.status_code == 200
    (text,) = [c["text"] for c in r.json()["result"]["content"]]
    assert json.loads(text) == {
        "results": [{"error": "Invalid arguments for free_item: (root): nested deeper than 32 levels"}]
    }
    (event,) = gw.stores.audit.list_for(me.user.id)
    assert (event["action"], event["tool"], event["integration"]) == ("EXECUTE", "free_item", "free")


async def test_odd_upstream_values_leave_as_valid_json(gw: Gateway) -> None:
    me = principal_for(gw)
    key = gw.auth.mint_key(me.user)
    r = await post(gw, call({"executions": [{"tool": "odd_values"}]}), key)
    assert r.status_code == 200
    body = json.loads(r.content.decode("utf-8"))  # strict UTF-8, valid JSON
    (text,) = [c["text"] for c in body["result"]["content"]]
    assert json.loads(text) == {
        "results": [{"result": {"nan": None, "inf": [None, None], "s": "a\ud800b", "\udfff": 1, "ok": "é😀"}}]
    }
    transport = httpx.ASGITransport(app=create_local_app(gw))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8787") as http:
        rest = await http.post(
            "/rest/odd", json={"tool": "odd_values"}, headers={"Authorization": f"Bearer {key}"}
        )
    assert rest.status_code == 200
    assert json.loads(rest.content.decode("utf-8"))["result"]["nan"] is None


async def test_other_protocol_errors_are_audited_for_the_caller(gw: Gateway) -> None:
    me = principal_for(gw)
    key = gw.auth.mint_key(me.user)
    r = await post(gw, json.dumps({"jsonrpc": "2.0", "id": 1, "method": "no/such"}), key)
    assert r.json()["error"]["code"] == -32601
    r = await post(gw, call({"executions": []}), key)
    assert r.json()["error"]["code"] == -32602
    r = await post(gw, call({}, name="not_a_meta_tool"), key)
    assert r.json()["error"]["code"] == -32602
    events = list(reversed(gw.stores.audit.list_for(me.user.id)))
    assert [(e["action"], e["method"], e["code"]) for e in events] == [
        ("MCP_ERROR", "no/such", -32601),
        ("MCP_ERROR", "tools/call", -32602),
        ("MCP_ERROR", "tools/call", -32602),
    ]


# -- the other surfaces that parse JSON ----------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        '{"redirect_uris": ["http://127.0.0.1/cb"], "client_name": NaN}',
        '{"redirect_uris": ["http://127.0.0.1/cb"], "client_name": "\\ud800"}',
        '{"redirect_uris": ' + nested(100, '"http://127.0.0.1/cb"') + "}",
    ],
)
async def test_register_refuses_non_strict_json(gw: Gateway, raw: str) -> None:
    transport = httpx.ASGITransport(app=create_local_app(gw))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8787") as http:
        r = await http.post("/register", content=raw, headers={"Content-Type": "application/json"})
    assert (r.status_code, r.json()) == (
        400,
        {"error": "invalid_client_metadata", "error_description": "the body must be a JSON object"},
    )


@pytest.mark.parametrize("raw", ['{"token": NaN}', '{"token": "\\udfff"}', nested(3000)])
async def test_connect_redeem_refuses_non_strict_json(gw: Gateway, raw: str) -> None:
    transport = httpx.ASGITransport(app=create_local_app(gw))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8787") as http:
        r = await http.post("/api/connect/redeem", content=raw, headers={"Content-Type": "application/json"})
    assert r.status_code == 400 and r.json()["error"].startswith(
        'Body must be JSON: {"token": "<connectionId>"'
    )


@pytest.mark.parametrize(
    "document",
    [
        "[" * 5000 + "]" * 5000,  # JSON, far too deep: refused before parsing, and as YAML too
        "[" * 200 + "]" * 200,  # YAML flow style composes, then is refused by depth
        "a:\n" + "".join("  " * i + "b:\n" for i in range(1, 600)),  # YAML block nesting
        '{"openapi": "3.0.0", "info": {"x": ' + "[" * 129 + "]" * 129 + "}}",
    ],
    ids=["json-5000", "flow-200", "block-600", "json-129"],
)
def test_an_openapi_document_nested_too_deep_is_invalid_input(document: str) -> None:
    """The OpenAPI document of a custom app (portal form up to 6 MiB, apps_register_openapi) is
    untrusted text too: deep nesting is a clear error, never a RecursionError (a 500 in the portal)."""
    from workbench.errors import InvalidInput
    from workbench.external.documents import parse_document

    with pytest.raises(
        InvalidInput, match=r"nested deeper than 128 levels|neither valid JSON nor valid YAML"
    ):
        parse_document(document)


def test_html_pages_never_fail_to_encode_odd_upstream_text(tmp_path: Path) -> None:
    """Portal pages show upstream text (a custom app's document title, tool names): a lone
    surrogate there becomes U+FFFD instead of a UnicodeEncodeError (a 500)."""
    from starlette.testclient import TestClient
    from workbench.stores import Jot
    from workbench.web.html import html_page

    page = html_page("Title \ud800", "<p>body \udfff ok é</p>")
    assert page.body.decode("utf-8").count("\ufffd") == 3 and "ok é" in page.body.decode(
        "utf-8"
    )  # title twice

    gw = make_gateway(tmp_path)  # the memory store keeps any string a tool stored
    user = gw.stores.users.get_or_create("ada@example.com")
    gw.stores.jots.put(Jot("jot_1", user.id, "t\ud800", "# h \udfff", 1.0, 1.0, share_token="s" * 32))
    with TestClient(create_local_app(gw), base_url="http://127.0.0.1:8787") as http:
        r = http.get("/jots/s/" + "s" * 32)
    assert r.status_code == 200 and "\ufffd" in r.text
