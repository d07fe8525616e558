"""The functions' IAM policies in template.yaml, enforced on the real code paths.

Each handler runs against moto with its boto3 clients wrapped so that every DynamoDB and KMS call
is checked against that function's policies in the template (table, and read vs. write), the way
IAM would answer AccessDenied in AWS. A flow that touches a table its function may not use fails
here instead of in production.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from workbench.composition import build_gateway
from workbench.settings import Settings
from workbench.stores.dynamodb import TABLES

from tests.aws.conftest import FunctionSecret
from tests.support.apigw import http_api_event, load_entry, response_json
from tests.support.aws import dynamodb_grants, load_template, on_call

pytestmark = pytest.mark.e2e

RESOURCES = load_template()["Resources"]
STORE_OF = {logical: store for store, logical in TABLES.items()}
TABLE_IDS = set(STORE_OF)


class AccessDenied(Exception):
    pass


def _grants(function: str, settings: Settings) -> tuple[dict[str, tuple[set[str], set[str]]], set[str]]:
    """(table name -> (allowed DynamoDB actions, queryable indexes), other allowed "service:Action"s)
    for one function, from its statements in the template."""
    statements = [s for p in RESOURCES[function]["Properties"]["Policies"] for s in p["Statement"]]
    tables = {
        settings.table_name(STORE_OF[logical]): grant
        for logical, grant in dynamodb_grants(statements, TABLE_IDS).items()
    }
    other: set[str] = set()
    for statement in statements:
        if "Fn::If" in statement:
            continue
        actions = statement["Action"]
        other |= {
            a for a in ([actions] if isinstance(actions, str) else actions) if not a.startswith("dynamodb:")
        }
    return tables, other


@pytest.fixture
def as_function(
    lambda_env: Settings, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[[str], list[str]]]:
    """as_function("ProxyFunction"): from now on, AWS calls are checked against that function's
    policies; returns the log of calls made."""
    import workbench.aws.clients
    from workbench.runtime.lambda_handler import reset_instance

    real = workbench.aws.clients.make_client
    current: dict[str, str] = {}
    calls: list[str] = []

    def enforce(service: str) -> Callable[..., None]:
        def check(action: str, params: dict[str, Any]) -> None:
            if "function" not in current:
                return  # set-up before any function's policy is in force
            tables, other = _grants(current["function"], lambda_env)
            if service == "dynamodb":
                # A batch call names its tables in RequestItems; each must allow the action.
                for table in params.get("RequestItems") or [params.get("TableName", "")]:
                    calls.append(f"{action} {table}")
                    actions, indexes = tables.get(table, (set(), set()))
                    index = params.get("IndexName")
                    if (index not in indexes) if index else (action not in actions):
                        where = f"{table}/index/{index}" if index else table
                        raise AccessDenied(f"{current['function']} may not {action} on {where}")
            elif f"{service}:{action}" not in other:
                raise AccessDenied(f"{current['function']} may not {service}:{action}")

        return check

    def make(service: str, settings: Settings) -> Any:
        return on_call(real(service, settings), enforce(service))

    monkeypatch.setattr(workbench.aws.clients, "make_client", make)

    def switch(function: str) -> list[str]:
        reset_instance()  # a fresh instance (and fresh clients) for that function
        current["function"] = function
        calls.clear()
        return calls

    yield switch


def _setup(settings: Settings) -> tuple[str, str]:
    """A user with an API key (made with no policy in force, as the portal would)."""
    gw = build_gateway(settings)
    user = gw.stores.users.get_or_create("ada@example.com")
    return gw.auth.mint_key(user, label="iam"), user.id


def _mcp(handler: Any, key: str, method: str, params: dict[str, Any] | None = None) -> Any:
    headers = {"authorization": f"Bearer {key}", "accept": "application/json, text/event-stream"}
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
    result = handler(http_api_event("POST", "/mcp", route_key="ANY /mcp", headers=headers, body=body), None)
    assert result["statusCode"] == 200, result
    return response_json(result)["result"]


def _tool(handler: Any, key: str, name: str, arguments: dict[str, Any]) -> Any:
    result = _mcp(handler, key, "tools/call", {"name": name, "arguments": arguments})
    return json.loads(result["content"][0]["text"])


def test_mcp_function_flows_stay_within_its_policy(
    as_function: Callable[[str], list[str]],
    lambda_env: Settings,
    function_secret: FunctionSecret,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("WORKBENCH_EXTRA_PLUGINS", "tests.connections.plugins.testoauth")
    monkeypatch.setenv("WB_TEST_PROVIDER_URL", "http://127.0.0.1:9")
    function_secret.put({"TESTOAUTH_CLIENT_ID": "client"})
    monkeypatch.setenv("WORKBENCH_WAIT_BLOCK_SECONDS", "1")
    key, _ = _setup(lambda_env)
    calls = as_function("McpFunction")
    handler = load_entry("mcp").handler
    _mcp(
        handler,
        key,
        "initialize",
        {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    )
    _mcp(handler, key, "tools/list")
    assert _tool(handler, key, "search_tools", {"query": "jot"})
    assert _tool(handler, key, "list_integrations", {})
    made = _tool(
        handler,
        key,
        "execute_tools",
        {
            "executions": [
                {"tool": "create_jot", "args": {"title": "t", "body": "b"}},
                {"tool": "list_jots", "args": {}},
                {"tool": "vault_list", "args": {}},
                {"tool": "apps_list", "args": {}},
            ]
        },
    )
    assert all("error" not in r for r in made["results"]), made
    started = _tool(handler, key, "connect", {"integration": "testoauth"})
    waited = _tool(
        handler, key, "wait_for_connection", {"connectionId": started["connectionId"], "timeoutSec": 60}
    )
    assert waited["status"] == "PENDING"
    session = _tool(handler, key, "curl_session", {"integrations": ["notion"]})
    assert "token" in session, session
    assert calls  # the flows above did reach DynamoDB (and nothing was denied)


def test_rest_function_flows_stay_within_its_policy(
    as_function: Callable[[str], list[str]], lambda_env: Settings
) -> None:
    key, _ = _setup(lambda_env)
    as_function("RestFunction")
    handler = load_entry("rest").handler
    event = http_api_event(
        "POST",
        "/rest/jots",
        route_key="ANY /rest/{integration}",
        path_parameters={"integration": "jots"},
        headers={"authorization": f"Bearer {key}"},
        body={"tool": "create_jot", "args": {"title": "from REST", "body": "b"}},
    )
    result = handler(event, None)
    assert result["statusCode"] == 200, result
    job = handler(
        {
            "source": "workbench.schedule",
            "user": "ada@example.com",
            "integration": "jots",
            "executions": [{"tool": "list_jots", "args": {}}],
        },
        None,
    )
    assert "error" not in json.dumps(job), job


def test_web_function_flows_stay_within_its_policy(
    as_function: Callable[[str], list[str]], lambda_env: Settings
) -> None:
    as_function("WebFunction")
    handler = load_entry("web").handler
    jwks = handler(
        http_api_event("GET", "/.well-known/jwks.json", route_key="ANY /.well-known/{proxy+}"), None
    )
    assert jwks["statusCode"] == 200
    registered = handler(
        http_api_event(
            "POST",
            "/register",
            route_key="ANY /register",
            body={
                "client_name": "IAM test",
                "redirect_uris": ["http://127.0.0.1:33418/callback"],
                "token_endpoint_auth_method": "none",
            },
        ),
        None,
    )
    assert registered["statusCode"] == 201, registered
    signin = handler(http_api_event("GET", "/portal/signin", route_key="ANY /portal/{proxy+}"), None)
    assert signin["statusCode"] == 200


def test_proxy_function_flows_stay_within_its_policy(
    as_function: Callable[[str], list[str]], lambda_env: Settings
) -> None:
    key, _ = _setup(lambda_env)
    as_function("McpFunction")
    session = _tool(load_entry("mcp").handler, key, "curl_session", {"integrations": ["notion"]})
    token = session.get("token")
    assert token, session
    calls = as_function("ProxyFunction")
    handler = load_entry("proxy").handler
    event = http_api_event(
        "GET",
        "/c/notion/v1/users/me",
        route_key="ANY /c/{integration}/{proxy+}",
        path_parameters={"integration": "notion", "proxy": "v1/users/me"},
        headers={"authorization": f"Bearer {token}"},
    )
    result = handler(event, None)
    assert result["statusCode"] == 403, result  # verified the token, looked up the connection: none
    assert response_json(result)["error"] == "NOT_CONNECTED"
    # The user, the minting key and the connection: one BatchGetItem (Stores.read_together).
    assert any(c.startswith("BatchGetItem") and c.endswith("-connections") for c in calls), calls


def test_the_enforcement_itself_denies_what_a_policy_lacks(
    as_function: Callable[[str], list[str]], lambda_env: Settings
) -> None:
    """Control: the MCP flow run under the proxy's policy (no jots table) is refused."""
    key, _ = _setup(lambda_env)
    as_function("ProxyFunction")
    handler = load_entry("mcp").handler
    headers = {"authorization": f"Bearer {key}", "accept": "application/json"}
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "execute_tools",
            "arguments": {"executions": [{"tool": "create_jot", "args": {"title": "t", "body": "b"}}]},
        },
    }
    result = handler(http_api_event("POST", "/mcp", route_key="ANY /mcp", headers=headers, body=body), None)
    # The proxy may read API keys (its tokens die with the key that minted them) but not write jots.
    assert result["statusCode"] == 200, result
    (outcome,) = json.loads(response_json(result)["result"]["content"][0]["text"])["results"]
    assert outcome["error"].startswith("ProxyFunction may not PutItem on "), outcome
