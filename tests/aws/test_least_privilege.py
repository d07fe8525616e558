"""The functions' IAM policies in template.yaml, enforced on the real code paths.

Each handler runs against moto with its boto3 clients wrapped so that every DynamoDB and KMS call
is checked against that function's policies in the template (table, and read vs. write), the way
IAM would answer AccessDenied in AWS. A flow that touches a table its function may not use fails
here instead of in production.
"""

from __future__ import annotations

import fnmatch
import json
import re
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


def _leading_keys(function: str, settings: Settings) -> dict[tuple[str, str], list[str]]:
    """(table name, action) -> the partition-key patterns a `dynamodb:LeadingKeys` condition allows,
    for the actions this function is granted on a table only under such a condition."""
    statements = [s for p in RESOURCES[function]["Properties"]["Policies"] for s in p["Statement"]]
    bound: dict[tuple[str, str], list[str]] = {}
    free: set[tuple[str, str]] = set()
    for statement in statements:
        if "Fn::If" in statement or not str(statement.get("Action", "")).count("dynamodb:"):
            continue
        (logical,) = dynamodb_grants([statement], TABLE_IDS)
        table = settings.table_name(STORE_OF[logical])
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        condition = statement.get("Condition") or {}
        patterns = [v for c in condition.values() for v in c.get("dynamodb:LeadingKeys", [])]
        for action in (a.removeprefix("dynamodb:") for a in actions):
            if patterns:
                bound.setdefault((table, action), []).extend(patterns)
            else:
                free.add((table, action))
    return {k: v for k, v in bound.items() if k not in free}


_TRANSACTION_PARTS = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
    "Get": "GetItem",
}


def _partition_key(action: str, params: dict[str, Any]) -> str | None:
    """The partition key value a GetItem/PutItem/Query names (our tables' key attribute is `pk`)."""
    if action == "Query":
        found = re.search(r"\bpk\s*=\s*(:\w+)", params.get("KeyConditionExpression", ""))
        value = params.get("ExpressionAttributeValues", {}).get(found.group(1)) if found else None
    else:
        value = (params.get("Key") or params.get("Item") or {}).get("pk")
    return value.get("S") if isinstance(value, dict) else None


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
            if service == "dynamodb" and action in ("TransactWriteItems", "TransactGetItems"):
                # IAM authorizes each part as its own action, on its own table and key.
                for item in params["TransactItems"]:
                    ((kind, part),) = item.items()
                    check(_TRANSACTION_PARTS[kind], part)
            elif service == "dynamodb":
                # A batch call names its tables in RequestItems; each must allow the action.
                for table in params.get("RequestItems") or [params.get("TableName", "")]:
                    calls.append(f"{action} {table}")
                    actions, indexes = tables.get(table, (set(), set()))
                    index = params.get("IndexName")
                    if (index not in indexes) if index else (action not in actions):
                        where = f"{table}/index/{index}" if index else table
                        raise AccessDenied(f"{current['function']} may not {action} on {where}")
                    patterns = _leading_keys(current["function"], lambda_env).get((table, action))
                    if not patterns:
                        continue
                    if action == "BatchGetItem":  # every key asked of this table (ForAllValues)
                        keys = [k.get("pk", {}).get("S") for k in params["RequestItems"][table]["Keys"]]
                    else:
                        keys = [_partition_key(action, params)]
                    for key in keys:
                        if not any(fnmatch.fnmatchcase(key or "", p) for p in patterns):
                            raise AccessDenied(f"{current['function']} may not {action} {key!r} on {table}")
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
    # A user's own things: a vault secret used by a call, a custom OpenAPI app found and removed.
    document = {
        "openapi": "3.0.3",
        "info": {"title": "Things", "version": "1"},
        "servers": [{"url": "https://api.things.example"}],
        "paths": {"/things": {"get": {"operationId": "listThings", "summary": "List the acme things"}}},
    }
    own = _tool(
        handler,
        key,
        "execute_tools",
        {
            "executions": [
                {"tool": "vault_set", "args": {"name": "NOTE", "value": "secret-1"}},
                {"tool": "apps_register_openapi", "args": {"name": "things", "document": document}},
            ]
        },
    )
    assert all("error" not in r for r in own["results"]), own
    used = _tool(
        handler,
        key,
        "execute_tools",
        {"executions": [{"tool": "create_jot", "args": {"title": "t", "body": "{{vault:NOTE}}"}}]},
    )
    # The vault was read (and the secret resolved) before the call was refused for keeping it.
    assert "cannot take a {{vault:}} value" in used["results"][0]["error"], used
    found = _tool(handler, key, "search_tools", {"query": "list acme things"})
    assert "things_listThings" in [t["name"] for t in found["tools"]], found
    gone = _tool(
        handler, key, "execute_tools", {"executions": [{"tool": "apps_remove", "args": {"name": "things"}}]}
    )
    assert "error" not in gone["results"][0], gone
    started = _tool(handler, key, "connect", {"integration": "testoauth"})
    waited = _tool(
        handler, key, "wait_for_connection", {"connectionId": started["connectionId"], "timeoutSec": 60}
    )
    assert waited["status"] == "PENDING"
    session = _tool(handler, key, "curl_session", {"integrations": ["notion"]})
    assert "token" in session, session
    assert calls  # the flows above did reach DynamoDB (and nothing was denied)


def test_mcp_function_takes_an_oauth_clients_token_within_its_policy(
    as_function: Callable[[str], list[str]], lambda_env: Settings
) -> None:
    """What MCP clients send: an access token of a grant with a refresh token (its `grant` claim is
    the refresh-token family, checked on each new token and after the auth cache's time)."""
    import time

    from workbench.runtime.lambda_handler import instance_gateway
    from workbench.stores.flow_records import RefreshToken

    gw = build_gateway(lambda_env)  # set-up, as the OAuth function's token endpoint would
    user = gw.stores.users.get_or_create("ada@example.com")
    now = time.time()
    audience = "https://gw.example.test/mcp"  # the public URL the functions serve (the events' host)
    gw.stores.oauth_refresh.put(
        RefreshToken("h" * 64, "fam1", user.id, "cl_1", "Client", audience, "", now, now, now + 3600)
    )
    calls = as_function("McpFunction")
    handler = load_entry("mcp").handler
    # Signed as the OAuth function signs it: the deployment's key, issuer and audience.
    token = instance_gateway().tokens.mint(
        {"sub": user.id, "email": user.email, "client_id": "cl_1", "scope": "", "grant": "fam1"},
        audience=audience,
        ttl_seconds=900,
    )
    assert "tools" in _mcp(handler, token, "tools/list")
    out = _tool(handler, token, "execute_tools", {"executions": [{"tool": "list_jots"}]})
    assert "error" not in out["results"][0], out
    assert any(c.startswith("Query") and c.endswith("-oauth") for c in calls), calls  # the family
    # A token as the OAuth function now issues it names the refresh token issued with it: its
    # record is read by key (BatchGetItem, token# partitions only), on its own or in a batch.
    named = instance_gateway().tokens.mint(
        {"sub": user.id, "client_id": "cl_1", "scope": "", "grant": "fam1", "grant_token": "h" * 64},
        audience=audience,
        ttl_seconds=900,
    )
    calls.clear()
    assert "tools" in _mcp(handler, named, "tools/list")
    assert any(c.startswith("BatchGetItem") and c.endswith("-oauth") for c in calls), calls
    assert not any(c.startswith("Query") and c.endswith("-oauth") for c in calls), calls
    instance_gateway().auth_cache._entries.clear()  # the cache's time ran out: checked in the batch
    calls.clear()
    out = _tool(handler, named, "execute_tools", {"executions": [{"tool": "list_jots"}]})
    assert "error" not in out["results"][0], out
    assert any(c.startswith("BatchGetItem") and c.endswith("-oauth") for c in calls), calls
    session = _tool(handler, token, "curl_session", {"integrations": ["notion"]})
    named_session = _tool(handler, named, "curl_session", {"integrations": ["notion"]})
    calls = as_function("ProxyFunction")  # that curl token's grant is checked by the proxy too

    def proxy_get(curl: str) -> Any:
        return load_entry("proxy").handler(
            http_api_event(
                "GET",
                "/c/notion/v1/users/me",
                route_key="ANY /c/{integration}/{proxy+}",
                path_parameters={"integration": "notion", "proxy": "v1/users/me"},
                headers={"authorization": f"Bearer {curl}"},
            ),
            None,
        )

    proxied = proxy_get(session["token"])
    assert proxied["statusCode"] == 403 and response_json(proxied)["error"] == "NOT_CONNECTED", proxied
    assert any(c.startswith("Query") and c.endswith("-oauth") for c in calls), calls
    calls.clear()  # minted with a token naming its refresh token: checked in the proxy's one batch
    proxied = proxy_get(named_session["token"])
    assert proxied["statusCode"] == 403 and response_json(proxied)["error"] == "NOT_CONNECTED", proxied
    assert any(c.startswith("BatchGetItem") and c.endswith("-oauth") for c in calls), calls
    assert not any(c.startswith("Query") for c in calls), calls
    as_function("RestFunction")  # REST takes API keys only (docs/oauth.md): refused before any read
    event = http_api_event(
        "POST",
        "/rest/jots",
        route_key="ANY /rest/{integration}",
        path_parameters={"integration": "jots"},
        headers={"authorization": f"Bearer {token}"},
        body={"tool": "list_jots", "args": {}},
    )
    result = load_entry("rest").handler(event, None)
    assert result["statusCode"] == 401, result


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


@pytest.mark.parametrize("function", ["McpFunction", "ProxyFunction"])
def test_an_oauth_grant_check_reads_only_refresh_token_families(function: str) -> None:
    """The functions that check an OAuth client's grant may Query the OAuth table's `family#`
    partitions and nothing else of it (no codes, no token records, no clients), and batch-read
    (the MCP function: the refresh token an access token names) `token#` records alone."""
    statements = [s for p in RESOURCES[function]["Properties"]["Policies"] for s in p["Statement"]]
    on_oauth = [
        s
        for s in statements
        if "Fn::If" not in s and dynamodb_grants([s], TABLE_IDS).keys() == {"OAuthTable"}
    ]
    queries = [s for s in on_oauth if "dynamodb:Query" in s["Action"]]
    assert queries and all(
        s["Condition"] == {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["family#*"]}} for s in queries
    ), queries
    batches = [s for s in on_oauth if "dynamodb:BatchGetItem" in s["Action"]]
    assert all(
        s["Action"] == ["dynamodb:BatchGetItem"]
        and s["Condition"] == {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["token#*"]}}
        for s in batches
    ), batches
