"""A DynamoDB or KMS outage answered in every surface's documented shape (issue 29, items 2 and 3).

Real parts: moto_server behind a fault-injecting loopback proxy (tests/support/fault_proxy.py) that
answers DynamoDB's or KMS's requests with a throttle, a 500, or a dropped connection; the gateway's
own AWS client, with its retries, in front of it. Every surface must answer in its shape — MCP a
JSON-RPC error (or a per-item error inside execute_tools), REST and the proxy 503 JSON with
Retry-After, /token and /register RFC 6749's temporarily_unavailable, the portal an error page —
never a bare 500, never the AWS message or an exception name; and a KMS outage must keep the stored
credential and say "try again", not "reconnect".
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import httpx
import pytest
from workbench.composition import Gateway, build_gateway
from workbench.runtime.local_app import create_local_app
from workbench.settings import Settings
from workbench.web.sessions import SESSION_COOKIE

from tests.aws.conftest import FunctionSecret
from tests.support.apigw import header, http_api_event, load_entry
from tests.support.aws import AwsEndpoint
from tests.support.fault_proxy import FaultProxy, fault_proxy

pytestmark = pytest.mark.e2e

STORAGE = "Workbench's storage is temporarily unavailable. Try again in a moment."
KEYS = "Workbench's key service is temporarily unavailable. Try again in a moment."
FAULTS = ["throttle", "5xx", "drop"]
LEAKS = (
    "Throttling",
    "InternalServerError",
    "RemoteDisconnected",
    "AwsConnectionError",
    "AwsError",
    "Traceback",
)


@pytest.fixture
def proxied(moto_endpoint: AwsEndpoint) -> Iterator[tuple[FaultProxy, Settings]]:
    settings = moto_endpoint.fresh_tables(public_url="https://gw.example.test")
    with fault_proxy(moto_endpoint.url) as proxy:
        yield proxy, replace(settings, aws_endpoint_url=proxy.url)


def _no_leak(text: str) -> None:
    for word in LEAKS:
        assert word not in text, text


def _rpc(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


class Surfaces:
    """The local gateway app of one instance, with a user, an API key, a session and a curl token."""

    def __init__(self, gw: Gateway) -> None:
        self.gw = gw
        self.user = gw.stores.users.get_or_create("ada@example.com")
        self.key = gw.auth.mint_key(self.user)
        self.session = gw.sessions.issue(self.user.id)
        principal = gw.auth.api_keys.resolve(self.key)
        self.curl = str(gw.curl.mint(principal, ["github"], 900)["token"])
        self.http = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=create_local_app(gw)), base_url="https://gw.example.test"
        )

    async def mcp(self, body: dict[str, Any]) -> httpx.Response:
        headers = {"authorization": f"Bearer {self.key}", "accept": "application/json, text/event-stream"}
        return await self.http.post("/mcp", json=body, headers=headers)

    async def all(self) -> dict[str, httpx.Response]:
        bearer = {"authorization": f"Bearer {self.key}"}
        return {
            "mcp": await self.mcp(_rpc("execute_tools", {"executions": [{"tool": "list_jots", "args": {}}]})),
            "rest": await self.http.post(
                "/rest/jots", json={"tool": "list_jots", "args": {}}, headers=bearer
            ),
            "proxy": await self.http.get("/c/github/user", headers={"authorization": f"Bearer {self.curl}"}),
            "token": await self.http.post(
                "/token",
                data={
                    "grant_type": "authorization_code",
                    "code": "c",
                    "client_id": "x",
                    "code_verifier": "v" * 43,
                },
            ),
            "register": await self.http.post(
                "/register", json={"redirect_uris": ["http://127.0.0.1:9/cb"], "client_name": "t"}
            ),
            "portal": await self.http.get(
                "/portal/integrations", headers={"cookie": f"{SESSION_COOKIE}={self.session}"}
            ),
        }


def _assert_shapes(answers: dict[str, httpx.Response], message: str) -> None:
    for surface, r in answers.items():
        assert r.status_code == 503, (surface, r.status_code, r.text)
        assert r.headers["retry-after"] == "2", surface
        _no_leak(r.text)
    assert answers["mcp"].json() == {
        "jsonrpc": "2.0",
        "id": 7,
        "error": {"code": -32000, "message": message, "data": {"retryAfter": 2}},
    }
    for surface in ("rest", "proxy"):
        assert answers[surface].json() == {"error": "TEMPORARILY_UNAVAILABLE", "message": message}, surface
    for surface in ("token", "register"):
        assert answers[surface].json() == {"error": "temporarily_unavailable", "error_description": message}
    assert answers["portal"].headers["content-type"].startswith("text/html")
    assert message.replace("'", "&#x27;") in answers["portal"].text


@pytest.mark.parametrize("fault", FAULTS)
async def test_a_dynamodb_outage_is_answered_in_every_surfaces_shape(
    proxied: tuple[FaultProxy, Settings], fault: str
) -> None:
    proxy, settings = proxied
    surfaces = Surfaces(build_gateway(settings))
    with proxy.fault("dynamodb", fault):
        answers = await surfaces.all()
    assert proxy.hits["dynamodb"] >= 6
    _assert_shapes(answers, STORAGE)
    # The outage passes: the same requests work again, nothing was damaged.
    ok = await surfaces.mcp(_rpc("execute_tools", {"executions": [{"tool": "list_jots", "args": {}}]}))
    assert ok.status_code == 200 and "result" in ok.json()


async def test_inside_execute_tools_an_outage_is_that_items_error(
    proxied: tuple[FaultProxy, Settings],
) -> None:
    proxy, settings = proxied
    gw = build_gateway(replace(settings, auth_cache_seconds=60))
    surfaces = Surfaces(gw)
    warm = await surfaces.mcp(_rpc("execute_tools", {"executions": [{"tool": "list_jots", "args": {}}]}))
    assert warm.status_code == 200  # the API key is now in this instance's auth cache
    with proxy.fault("dynamodb", "throttle"):
        r = await surfaces.mcp(
            _rpc(
                "execute_tools",
                {"executions": [{"tool": "list_jots", "args": {}}, {"tool": "nope", "args": {}}]},
            )
        )
    assert r.status_code == 200
    results = json.loads(r.json()["result"]["content"][0]["text"])["results"]
    # An unknown name may be a custom app's tool: looking it up needs the store too.
    assert results == [{"error": STORAGE}, {"error": STORAGE}]


@pytest.mark.parametrize("fault", FAULTS)
async def test_a_kms_outage_keeps_the_credential_and_says_try_again(
    proxied: tuple[FaultProxy, Settings], fault: str
) -> None:
    proxy, settings = proxied
    writer = build_gateway(settings)
    user = writer.stores.users.get_or_create("ada@example.com")
    writer.credentials.save(user.id, "github", {"access_token": "gho_kept"})
    writer.vault.set(user.id, "API_TOKEN", "s3cret")
    # Another instance, cold: its data-key cache is empty, so it must ask KMS.
    cold = build_gateway(replace(settings, auth_cache_seconds=60))
    surfaces = Surfaces(cold)
    assert (await surfaces.mcp(_rpc("list_integrations", {}))).status_code == 200  # auth cached
    with proxy.fault("kms", fault):
        r = await surfaces.mcp(
            _rpc(
                "execute_tools",
                {
                    "executions": [
                        {"tool": "github_list_repos", "args": {}},
                        {"tool": "github_get_repo", "args": {"owner": "{{vault:API_TOKEN}}", "repo": "r"}},
                    ]
                },
            )
        )
    results = json.loads(r.json()["result"]["content"][0]["text"])["results"]
    assert proxy.hits.get("kms", 0) >= 1, results
    assert results[0] == {"error": KEYS}
    assert results[1] == {"error": KEYS}
    _no_leak(r.text)
    # Nothing was marked damaged: the credential and the secret are as they were.
    conn = cold.stores.connections.get(user.id, "github")
    assert conn is not None and conn.status == "connected" and conn.last_error == ""
    assert cold.credentials.load(conn) == {"access_token": "gho_kept"}
    assert cold.vault.get(user.id, "API_TOKEN") == "s3cret"


# -- the Lambda handlers ---------------------------------------------------------------------------


@pytest.mark.parametrize("fault", ["throttle", "drop"])
def test_each_lambda_function_answers_an_outage_in_its_shape(
    lambda_env: Settings,
    function_secret: FunctionSecret,
    moto_endpoint: AwsEndpoint,
    monkeypatch: pytest.MonkeyPatch,
    fault: str,
) -> None:
    gw = build_gateway(Settings.from_env())  # the functions' own settings (their public URL)
    user = gw.stores.users.get_or_create("ada@example.com")
    key = gw.auth.mint_key(user)
    session = gw.sessions.issue(user.id)
    curl = str(gw.curl.mint(gw.auth.api_keys.resolve(key), ["github"], 900)["token"])
    with fault_proxy(moto_endpoint.url) as proxy:
        monkeypatch.setenv("WORKBENCH_AWS_ENDPOINT_URL", proxy.url)
        bearer = {"authorization": f"Bearer {key}", "mcp-protocol-version": "2025-06-18"}
        events = {
            "mcp": http_api_event(
                "POST", "/mcp", route_key="ANY /mcp", headers=bearer, body=_rpc("list_integrations", {})
            ),
            "rest": http_api_event(
                "POST",
                "/rest/jots",
                route_key="ANY /rest/{integration}",
                path_parameters={"integration": "jots"},
                headers=bearer,
                body={"tool": "list_jots", "args": {}},
            ),
            "proxy": http_api_event(
                "GET",
                "/c/github/user",
                route_key="ANY /c/{integration}/{proxy+}",
                path_parameters={"integration": "github", "proxy": "user"},
                headers={"authorization": f"Bearer {curl}"},
            ),
            "web": http_api_event(
                "GET",
                "/portal/integrations",
                route_key="ANY /portal/{proxy+}",
                headers={"cookie": f"{SESSION_COOKIE}={session}"},
            ),
        }
        handlers = {name: load_entry(name).handler for name in events}
        # Warm each instance first (a cold start under an outage is the next test's).
        for name, event in events.items():
            warm = handlers[name](event, None)["statusCode"]
            assert warm == (403 if name == "proxy" else 200), name  # the proxy: github is not connected
        with proxy.fault("dynamodb", fault):
            answers = {name: handlers[name](event, None) for name, event in events.items()}
    for name, result in answers.items():
        assert result["statusCode"] == 503, (name, result)
        assert header(result, "retry-after") == "2"
        _no_leak(result["body"])
    assert json.loads(answers["mcp"]["body"])["error"] == {
        "code": -32000,
        "message": STORAGE,
        "data": {"retryAfter": 2},
    }
    assert json.loads(answers["rest"]["body"]) == {"error": "TEMPORARILY_UNAVAILABLE", "message": STORAGE}
    assert json.loads(answers["proxy"]["body"]) == {"error": "TEMPORARILY_UNAVAILABLE", "message": STORAGE}
    assert "text/html" in (header(answers["web"], "content-type") or "")


def test_a_cold_lambda_instance_under_an_outage_answers_in_its_shape(
    lambda_env: Settings,
    function_secret: FunctionSecret,
    moto_endpoint: AwsEndpoint,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from workbench.runtime.lambda_handler import reset_instance

    gw = build_gateway(lambda_env)
    key = gw.auth.mint_key(gw.stores.users.get_or_create("ada@example.com"))
    with fault_proxy(moto_endpoint.url) as proxy:
        monkeypatch.setenv("WORKBENCH_AWS_ENDPOINT_URL", proxy.url)
        reset_instance()
        bearer = {"authorization": f"Bearer {key}", "mcp-protocol-version": "2025-06-18"}
        event = http_api_event(
            "POST", "/mcp", route_key="ANY /mcp", headers=bearer, body=_rpc("list_integrations", {})
        )
        with proxy.fault("dynamodb", "5xx"):
            result = load_entry("mcp").handler(event, None)
    assert result["statusCode"] == 503, result
    assert json.loads(result["body"])["error"]["message"] == STORAGE
