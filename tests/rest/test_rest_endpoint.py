"""POST /rest/:integration in process (httpx over ASGI): shapes, status codes, auth, audit."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx
import pytest
from workbench.composition import Gateway
from workbench.rest import create_rest_app

NOT_CONNECTED = {
    "error": "NOT_CONNECTED",
    "integration": "github",
    "message": "github not connected. Use connect('github') to connect.",
}


@dataclass
class Client:
    http: httpx.AsyncClient
    gateway: Gateway
    key: str
    user_id: str

    async def post(self, path: str, body: object, key: str | None = None) -> httpx.Response:
        headers = {"Authorization": f"Bearer {key or self.key}"}
        return await self.http.post(path, content=json.dumps(body), headers=headers)


@pytest.fixture
async def client(gateway: Gateway) -> AsyncIterator[Client]:
    user = gateway.stores.users.get_or_create("ada@example.com")
    key = gateway.auth.mint_key(user)
    transport = httpx.ASGITransport(create_rest_app(gateway))
    async with httpx.AsyncClient(transport=transport, base_url="http://gw") as http:
        yield Client(http, gateway, key, user.id)


async def test_single_tool_answers_with_its_own_result_object(client: Client) -> None:
    r = await client.post("/rest/jots", {"tool": "create_jot", "args": {"title": "Standup", "body": "notes"}})
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/json"
    result = r.json()["result"]
    assert set(r.json()) == {"result"}
    assert (result["title"], result["body"]) == ("Standup", "notes")
    stored = client.gateway.stores.jots.list_for(client.user_id)
    assert [j.title for j in stored] == ["Standup"]


async def test_single_tool_args_default_to_empty(client: Client) -> None:
    r = await client.post("/rest/jots", {"tool": "list_jots"})
    assert r.status_code == 200
    assert "result" in r.json()


async def test_single_tool_errors_keep_the_engine_shapes(client: Client) -> None:
    bad_args = await client.post("/rest/jots", {"tool": "create_jot", "args": {}})
    assert bad_args.status_code == 200
    assert bad_args.json()["error"].startswith("Invalid arguments for create_jot: title")
    missing = await client.post("/rest/jots", {"tool": "jots_nope"})
    assert (missing.status_code, missing.json()) == (200, {"error": "Tool not found"})
    not_connected = await client.post(
        "/rest/github", {"tool": "github_list_prs", "args": {"owner": "o", "repo": "r"}}
    )
    assert (not_connected.status_code, not_connected.json()) == (200, NOT_CONNECTED)


async def test_batch_results_are_index_aligned_and_failures_do_not_abort(client: Client) -> None:
    r = await client.post(
        "/rest/jots",
        {
            "executions": [
                {"tool": "create_jot", "args": {"title": "one"}},
                {"tool": "nope"},
                {"tool": "create_jot", "args": {"title": ""}},
                {"tool": "create_jot", "args": {"title": "two"}},
            ]
        },
    )
    assert r.status_code == 200
    results = r.json()["results"]
    assert set(r.json()) == {"results"}
    assert results[0]["result"]["title"] == "one"
    assert results[1] == {"error": "Tool not found"}
    assert results[2]["error"].startswith("Invalid arguments for create_jot:")
    assert results[3]["result"]["title"] == "two"


async def test_no_result_cap(client: Client) -> None:
    body = "x" * 99_000
    created = await client.post("/rest/jots", {"tool": "create_jot", "args": {"title": "big", "body": body}})
    jot_id = created.json()["result"]["id"]
    r = await client.post("/rest/jots", {"executions": [{"tool": "get_jot", "args": {"id": jot_id}}] * 2})
    assert r.status_code == 200
    assert len(r.text) > 190_000
    assert [x["result"]["body"] for x in r.json()["results"]] == [body, body]
    assert "truncated" not in r.text


@pytest.mark.parametrize(
    "body",
    [
        {"executions": [{"tool": "list_jots", "ref_id": "a"}], "compose": True},
        {"executions": [{"tool": "list_jots", "ref_id": "a"}], "return": "{{step:a}}"},
        {"executions": [{"tool": "list_jots"}], "compose": False},
        {"tool": "list_jots", "compose": True},
    ],
)
async def test_compose_and_return_are_refused_with_400(client: Client, body: object) -> None:
    r = await client.post("/rest/jots", body)
    assert r.status_code == 400
    assert r.json() == {
        "error": "compose and return are MCP-only; the REST batch form does not accept them. "
        "Send plain executions, or use execute_tools over MCP."
    }
    assert client.gateway.stores.audit.list_for(client.user_id) == []  # nothing ran


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ([1, 2], 'The body must be a JSON object: {"tool": "...", "args": {...}} or {"executions": [...]}'),
        ({}, 'Send either "tool" (one tool, with optional "args") or "executions" (a batch)'),
        (
            {"tool": "list_jots", "executions": []},
            'Send either "tool" (one tool, with optional "args") or "executions" (a batch)',
        ),
        ({"tool": "list_jots", "extra": 1}, "Unknown field(s): extra"),
        ({"tool": ""}, "'tool' must be a non-empty string"),
        ({"tool": "list_jots", "args": [1]}, "'args' must be an object"),
        ({"executions": []}, "'executions' must be a non-empty array"),
        ({"executions": [{"args": {}}]}, "executions[0].tool must be a non-empty string"),
        ({"executions": [{"tool": "list_jots", "args": "x"}]}, "executions[0].args must be an object"),
    ],
)
async def test_malformed_bodies_are_400(client: Client, body: object, message: str) -> None:
    r = await client.post("/rest/jots", body)
    assert (r.status_code, r.json()) == (400, {"error": message})


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        (b"{", "invalid JSON (Expecting property name enclosed in double quotes)"),
        (b"", "invalid JSON (Expecting value)"),
        (b"\xff\xfe", "the body is not UTF-8"),
        (b"{'tool': 1}", "invalid JSON (Expecting property name enclosed in double quotes)"),
        (b'{"tool": "list_jots", "args": {"n": NaN}}', "NaN is not a JSON value"),
        (b'{"tool": "list_jots", "args": {"n": -Infinity}}', "-Infinity is not a JSON value"),
        (b'{"tool": "list_jots", "args": {"n": 1e400}}', "the number 1e400 is out of range"),
        (b'{"tool": "list_\\ud83d", "args": {}}', "a string contains the lone surrogate \\ud83d"),
        (b'{"tool": "list_jots", "args": {"\\udc00": 1}}', "a string contains the lone surrogate \\udc00"),
        (
            b'{"tool": "list_jots", "args": ' + b"[" * 70 + b"]" * 70 + b"}",
            "JSON nested deeper than 64 levels",
        ),
    ],
)
async def test_malformed_json_is_400(client: Client, raw: bytes, why: str) -> None:
    r = await client.http.post("/rest/jots", content=raw, headers={"Authorization": f"Bearer {client.key}"})
    assert (r.status_code, r.json()) == (400, {"error": f"Malformed JSON body: {why}"})
    assert client.gateway.stores.audit.list_for(client.user_id) == []  # nothing ran


async def test_unknown_integration_is_404_and_foreign_tools_are_400(client: Client) -> None:
    unknown = await client.post("/rest/nope", {"tool": "list_jots"})
    assert (unknown.status_code, unknown.json()) == (404, {"error": "Unknown integration: nope"})
    foreign = await client.post(
        "/rest/jots", {"executions": [{"tool": "list_jots"}, {"tool": "github_list_prs", "args": {}}]}
    )
    assert (foreign.status_code, foreign.json()) == (
        400,
        {"error": "Tool 'github_list_prs' belongs to integration 'github', not 'jots'"},
    )
    assert client.gateway.stores.audit.list_for(client.user_id) == []  # refused as a whole: nothing ran


@pytest.mark.parametrize(
    "authorization",
    [None, "", "Bearer", "Bearer wb_nope", "Basic d2JfeDp5", "Bearer eyJhbGciOiJFUzI1NiJ9.e30.x"],
)
async def test_missing_or_bad_credentials_are_401_with_a_challenge(
    client: Client, authorization: str | None
) -> None:
    headers = {"Authorization": authorization} if authorization is not None else {}
    r = await client.http.post("/rest/jots", json={"tool": "list_jots"}, headers=headers)
    assert (r.status_code, r.json()) == (401, {"error": "Unauthorized"})
    assert r.headers["www-authenticate"] == 'Bearer realm="workbench"'


async def test_a_revoked_key_is_401(client: Client) -> None:
    user = client.gateway.stores.users.get(client.user_id)
    assert user is not None
    key = client.gateway.auth.mint_key(user)
    assert (await client.post("/rest/jots", {"tool": "list_jots"}, key=key)).status_code == 200
    client.gateway.stores.api_keys.revoke(user.id, key.split("_")[1])
    assert (await client.post("/rest/jots", {"tool": "list_jots"}, key=key)).status_code == 401


async def test_auth_is_checked_before_the_body(client: Client) -> None:
    r = await client.http.post("/rest/jots", content=b"{")
    assert r.status_code == 401


async def test_users_only_see_their_own_data(client: Client) -> None:
    await client.post("/rest/jots", {"tool": "create_jot", "args": {"title": "mine"}})
    other = client.gateway.stores.users.get_or_create("eve@example.com")
    eve_key = client.gateway.auth.mint_key(other)
    r = await client.post("/rest/jots", {"tool": "list_jots"}, key=eve_key)
    assert "mine" not in r.text


async def test_body_over_4_mib_is_413(client: Client) -> None:
    big = json.dumps({"tool": "create_jot", "args": {"title": "x", "body": "y" * (4 * 1024 * 1024)}})
    r = await client.http.post("/rest/jots", content=big, headers={"Authorization": f"Bearer {client.key}"})
    assert r.status_code == 413
    assert r.json()["error"].startswith("Request body too large")


async def test_other_methods_are_405(client: Client) -> None:
    r = await client.http.get("/rest/jots", headers={"Authorization": f"Bearer {client.key}"})
    assert (r.status_code, r.headers["allow"]) == (405, "POST")


async def test_every_execution_is_audited_via_api_key(client: Client) -> None:
    await client.post("/rest/jots", {"executions": [{"tool": "list_jots"}, {"tool": "nope"}]})
    events = client.gateway.stores.audit.list_for(client.user_id)
    assert sorted((e["action"], e["tool"], e["success"], e["via"]) for e in events) == [
        ("EXECUTE", "list_jots", True, "api_key"),
        ("EXECUTE", "nope", False, "api_key"),
    ]


async def test_openapi_document(client: Client) -> None:
    r = await client.http.get("/rest/openapi.json")
    assert r.status_code == 200
    doc = r.json()
    assert doc["openapi"] == "3.1.0"
    op = doc["paths"]["/rest/{integration}"]["post"]
    assert {"jots", "github"} <= set(op["parameters"][0]["schema"]["enum"])
    assert set(op["responses"]) == {"200", "400", "401", "404", "413"}
    assert doc["components"]["securitySchemes"]["apiKey"] == {
        "type": "http",
        "scheme": "bearer",
        "description": "A Workbench API key (wb_...)",
    }
    assert doc["servers"] == [{"url": client.gateway.settings.public_url}]
