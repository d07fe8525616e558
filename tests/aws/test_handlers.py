"""Each Lambda entry file invoked with API Gateway HTTP API v2 events, over moto DynamoDB + KMS."""

from __future__ import annotations

import asyncio
import base64
import json
import re
import time
from typing import Any

import pytest
from workbench.composition import build_gateway
from workbench.errors import JobFailed
from workbench.settings import Settings

from tests.aws.conftest import FunctionSecret
from tests.support.apigw import header, http_api_event, load_entry, response_json

pytestmark = pytest.mark.e2e

RESOURCE_METADATA = (
    'Bearer resource_metadata="https://gw.example.test/.well-known/oauth-protected-resource/mcp"'
)


def _rpc(method: str, params: dict[str, Any] | None = None, req_id: int = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": req_id, "method": method, "params": params or {}}


def _mcp_event(body: Any, token: str | None = None, **kw: Any) -> dict[str, Any]:
    headers = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-06-18"}
    if token:
        headers["authorization"] = f"Bearer {token}"
    return http_api_event("POST", "/mcp", route_key="ANY /mcp", headers=headers, body=body, **kw)


def _mint_key(settings: Settings, email: str = "ada@example.com") -> str:
    gw = build_gateway(settings)
    return gw.auth.mint_key(gw.stores.users.get_or_create(email), label="handler test")


def test_mcp_without_token_is_401_with_www_authenticate(lambda_env: Settings) -> None:
    handler = load_entry("mcp").handler
    result = handler(_mcp_event(_rpc("initialize")), None)
    assert result["statusCode"] == 401
    assert header(result, "www-authenticate") == RESOURCE_METADATA
    body = response_json(result)
    assert body["id"] == 1
    assert body["error"]["code"] == -32001


def test_mcp_with_unknown_api_key_is_401(lambda_env: Settings) -> None:
    handler = load_entry("mcp").handler
    fake = "wb_AAAAAAAAAAAA_" + "x" * 43
    result = handler(_mcp_event(_rpc("tools/list"), token=fake), None)
    assert result["statusCode"] == 401
    assert header(result, "www-authenticate") == RESOURCE_METADATA
    assert response_json(result)["error"]["code"] == -32001


def test_mcp_session_over_dynamodb_and_kms(lambda_env: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    key = _mint_key(lambda_env)
    handler = load_entry("mcp").handler

    init = handler(
        _mcp_event(
            _rpc(
                "initialize",
                {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "handler-test", "version": "1"},
                },
            ),
            token=key,
        ),
        None,
    )
    assert init["statusCode"] == 200, init
    assert response_json(init)["result"]["serverInfo"]["name"]

    listed = handler(_mcp_event(_rpc("tools/list", req_id=2), token=key), None)
    names = {t["name"] for t in response_json(listed)["result"]["tools"]}
    assert {"search_tools", "execute_tools", "connect", "wait_for_connection"} <= names

    call = handler(
        _mcp_event(
            _rpc(
                "tools/call",
                {
                    "name": "execute_tools",
                    "arguments": {
                        "executions": [
                            {
                                "tool": "create_jot",
                                "args": {"title": "From Lambda", "body": "stored in DynamoDB"},
                            }
                        ]
                    },
                },
                req_id=3,
            ),
            token=key,
        ),
        None,
    )
    assert call["statusCode"] == 200, call
    payload = json.loads(response_json(call)["result"]["content"][0]["text"])
    assert "error" not in payload["results"][0], payload

    # The jot is in the DynamoDB table named by the environment, and the audit record too.
    gw = build_gateway(lambda_env)
    user = gw.stores.users.by_email("ada@example.com")
    assert user is not None
    assert [j.title for j in gw.stores.jots.list_for(user.id)] == ["From Lambda"]
    audit = gw.stores.audit.list_for(user.id)
    assert audit[0]["tool"] == "create_jot" and audit[0]["success"] is True

    # Powertools: JSON log lines with the request id as correlation id, and EMF metrics per request.
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    emf = [line for line in lines if "_aws" in line]
    counters = [m for m in emf if "workbench_tool_executions_total" in m]
    assert counters, lines
    metric = counters[0]
    assert metric["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "Workbench"
    assert metric["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["integration", "success"]]
    assert (
        metric["tools"] == ["create_jot"] and metric["success"] == "true" and metric["integration"] == "jots"
    )
    assert metric["workbench_tool_executions_total"] == 1.0
    assert any("workbench_tool_execution_duration_seconds" in m for m in emf)
    requests = [line for line in lines if line.get("message") == "request"]
    assert [r["status"] for r in requests] == [200, 200, 200]
    assert all(r.get("correlation_id", "").startswith("req-") for r in requests)
    assert requests[0]["cold_start"] is True and requests[1]["cold_start"] is False


def test_mcp_get_is_405(lambda_env: Settings) -> None:
    handler = load_entry("mcp").handler
    result = handler(http_api_event("GET", "/mcp", route_key="ANY /mcp"), None)
    assert result["statusCode"] == 405
    assert header(result, "allow") == "POST"


def test_public_url_defaults_to_the_api_domain(lambda_env: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WORKBENCH_PUBLIC_URL")
    handler = load_entry("mcp").handler
    result = handler(
        _mcp_event(_rpc("initialize"), domain="xyz789.execute-api.eu-west-1.amazonaws.com"), None
    )
    assert result["statusCode"] == 401
    assert header(result, "www-authenticate") == (
        'Bearer resource_metadata="https://xyz789.execute-api.eu-west-1.amazonaws.com'
        '/.well-known/oauth-protected-resource/mcp"'
    )


def test_rest_without_key_is_401(lambda_env: Settings) -> None:
    handler = load_entry("rest").handler
    event = http_api_event(
        "POST",
        "/rest/github",
        route_key="ANY /rest/{integration}",
        path_parameters={"integration": "github"},
        body={"tool": "github_get_user", "args": {}},
    )
    result = handler(event, None)
    assert result["statusCode"] == 401


def test_proxy_without_token_is_401(lambda_env: Settings) -> None:
    handler = load_entry("proxy").handler
    event = http_api_event(
        "GET",
        "/c/github/user",
        route_key="ANY /c/{integration}/{proxy+}",
        path_parameters={"integration": "github", "proxy": "user"},
    )
    result = handler(event, None)
    assert result["statusCode"] == 401


def test_web_portal_without_session_goes_to_sign_in(lambda_env: Settings) -> None:
    handler = load_entry("web").handler
    result = handler(http_api_event("GET", "/portal/integrations", route_key="ANY /portal/{proxy+}"), None)
    assert result["statusCode"] in (302, 303, 307)
    assert "/portal/signin" in (header(result, "location") or "")
    signin = handler(http_api_event("GET", "/portal/signin", route_key="ANY /portal/{proxy+}"), None)
    assert signin["statusCode"] == 200
    assert "text/html" in (header(signin, "content-type") or "")


def _tool_call(handler: Any, key: str, name: str, arguments: dict[str, Any]) -> Any:
    result = handler(_mcp_event(_rpc("tools/call", {"name": name, "arguments": arguments}), token=key), None)
    assert result["statusCode"] == 200, result
    return json.loads(response_json(result)["result"]["content"][0]["text"])


def test_wait_for_connection_on_lambda_blocks_briefly_then_times_out_only_at_the_agents_deadline(
    lambda_env: Settings, function_secret: FunctionSecret, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORKBENCH_EXTRA_PLUGINS", "tests.connections.plugins.testoauth")
    monkeypatch.setenv("WB_TEST_PROVIDER_URL", "http://127.0.0.1:9")  # never contacted here
    function_secret.put({"TESTOAUTH_CLIENT_ID": "client", "TESTOAUTH_CLIENT_SECRET": "secret"})
    monkeypatch.setenv("WORKBENCH_WAIT_BLOCK_SECONDS", "1")
    key = _mint_key(lambda_env)
    handler = load_entry("mcp").handler
    started = _tool_call(handler, key, "connect", {"integration": "testoauth"})
    connection_id = started["connectionId"]
    pending = build_gateway(lambda_env).stores.pending

    # The agent allows 60 s; one Lambda invocation blocks ~1 s and says "call again", keeping the record.
    answer = _tool_call(
        handler, key, "wait_for_connection", {"connectionId": connection_id, "timeoutSec": 60}
    )
    assert answer["status"] == "PENDING" and "again" in answer["message"]
    assert pending.get(connection_id, now=time.time()) is not None

    # Once the agent's own timeout has passed: TIMEOUT, and the record is reaped.
    answer = _tool_call(handler, key, "wait_for_connection", {"connectionId": connection_id, "timeoutSec": 1})
    assert answer == {"status": "TIMEOUT"}
    assert pending.get(connection_id, now=time.time()) is None


def test_web_serves_oauth_metadata_and_the_shared_signing_key(
    lambda_env: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    import workbench.aws.clients

    made: list[str] = []
    real = workbench.aws.clients.make_client

    def counting(service: str, settings: Settings) -> Any:
        made.append(service)
        return real(service, settings)

    monkeypatch.setattr(workbench.aws.clients, "make_client", counting)
    handler = load_entry("web").handler
    meta = handler(
        http_api_event(
            "GET", "/.well-known/oauth-authorization-server", route_key="ANY /.well-known/{proxy+}"
        ),
        None,
    )
    assert meta["statusCode"] == 200
    assert response_json(meta)["issuer"] == "https://gw.example.test"
    jwks = handler(
        http_api_event("GET", "/.well-known/jwks.json", route_key="ANY /.well-known/{proxy+}"), None
    )
    assert jwks["statusCode"] == 200
    (key,) = response_json(jwks)["keys"]
    assert key["kty"] == "EC" and key["alg"] == "ES256" and "d" not in key  # public part only
    for _ in range(3):
        handler(http_api_event("GET", "/.well-known/jwks.json", route_key="ANY /.well-known/{proxy+}"), None)
    assert sorted(made) == ["dynamodb", "kms"]  # one client per service per instance, made on first use
    # The key was created once, encrypted, in the signing keys table: a second instance serves the same.
    from workbench.runtime.lambda_handler import reset_instance

    reset_instance()
    again = load_entry("web").handler(
        http_api_event("GET", "/.well-known/jwks.json", route_key="ANY /.well-known/{proxy+}"), None
    )
    assert response_json(again)["keys"] == [key]


def test_the_templates_nightly_schedule_event_runs_through_the_rest_handler(lambda_env: Settings) -> None:
    from tests.support.aws import load_template

    target = load_template()["Resources"]["NightlyExportSchedule"]["Properties"]["Target"]
    event = json.loads(target["Input"]["Fn::Sub"].replace("${ScheduleUser}", "svc@example.com"))
    gw = build_gateway(lambda_env)
    svc = gw.stores.users.get_or_create("svc@example.com")

    with pytest.raises(JobFailed) as failed:  # a direct invocation (no requestContext) that fails
        load_entry("rest").handler(event, None)

    # The service user has not connected Superset: the job runs and reports exactly that, and is audited.
    (result,) = failed.value.result["results"]
    assert result["error"] == "NOT_CONNECTED", failed.value.result
    audit = gw.stores.audit.list_for(svc.id)
    assert audit[0]["action"] == "SCHEDULE" and audit[0]["integration"] == "superset"
    assert audit[0]["success"] is False

    # Connected (credential KMS-encrypted in DynamoDB), the example's arguments validate and the job
    # goes for the user's Superset, which the Lambda configuration's egress policy refuses when it
    # is a loopback address (the runtime API listens there).
    gw.credentials.save(
        svc.id, "superset", {"username": "svc", "password": "pw", "base_url": "https://127.0.0.1:9001"}
    )
    refused = "Refused: 127.0.0.1 is a loopback address, not a public internet address"
    with pytest.raises(JobFailed, match=re.escape(f"first error: {refused}")) as failed:
        load_entry("rest").handler(event, None)
    assert failed.value.result == {"results": [{"error": refused}]}


def test_dynamodb_unreachable_fails_fast_with_a_json_rpc_error_and_a_logged_request(
    lambda_env: Settings, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 29 replaced the bare text/plain 500 this test used to expect: an MCP client gets a
    JSON-RPC error saying to try again, with Retry-After, and no internals."""
    from tests.support.processes import free_port

    key = _mint_key(lambda_env)
    monkeypatch.setenv("WORKBENCH_AWS_ENDPOINT_URL", f"http://127.0.0.1:{free_port()}")  # nothing listens
    handler = load_entry("mcp").handler
    started = time.monotonic()
    result = handler(_mcp_event(_rpc("tools/list"), token=key), None)
    assert time.monotonic() - started < 10  # retries are bounded, far inside API Gateway's 30 s
    assert result["statusCode"] == 503 and header(result, "retry-after") == "2"
    assert response_json(result) == {
        "jsonrpc": "2.0",
        "id": 1,
        "error": {
            "code": -32000,
            "message": "Workbench's storage is temporarily unavailable. Try again in a moment.",
            "data": {"retryAfter": 2},
        },
    }
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    requests = [line for line in lines if line.get("message") == "request"]
    assert requests[-1]["status"] == 503 and requests[-1]["path"] == "/mcp"


def test_an_http_event_after_a_scheduled_job_on_the_same_instance(lambda_env: Settings) -> None:
    """A scheduled job runs its own asyncio loop; the next API Gateway event must still be served."""
    handler = load_entry("rest").handler
    with pytest.raises(JobFailed) as failed:
        handler({"source": "workbench.schedule", "user": "nobody@example.com", "integration": "github"}, None)
    assert failed.value.result == {"error": "Unknown user: nobody@example.com"}
    event = http_api_event(
        "POST",
        "/rest/github",
        route_key="ANY /rest/{integration}",
        path_parameters={"integration": "github"},
        body={"tool": "github_get_user", "args": {}},
    )
    assert handler(event, None)["statusCode"] == 401
    loop = asyncio.get_event_loop()
    with pytest.raises(JobFailed):
        handler({"source": "workbench.schedule", "user": "x@example.com", "integration": "github"}, None)
    assert handler(event, None)["statusCode"] == 401
    assert asyncio.get_event_loop() is loop  # HTTP events keep meeting the instance's one loop


class _LambdaContext:
    """What Lambda hands the handler: here, a function with `seconds` left when invoked."""

    aws_request_id = "lambda-req-1"

    def __init__(self, seconds: float) -> None:
        self._ends = time.monotonic() + seconds

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._ends - time.monotonic()) * 1000))


def test_a_slow_upstream_inside_a_compose_answers_an_mcp_result_before_the_lambda_times_out(
    lambda_env: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The deadline comes from the invocation: the function has 4.5 s left (its timeout is near), API
    Gateway's 29 s are far; less the 2 s margin, the compose must answer within about 2.5 s."""
    from tests.support.slowapi import connect_slowapi, slow_upstream

    with slow_upstream() as url:
        monkeypatch.setenv("WORKBENCH_EXTRA_PLUGINS", "tests.support.slowapi")
        monkeypatch.setenv("WB_SLOW_API_URL", url)
        monkeypatch.setenv("WORKBENCH_EGRESS_ALLOW", "loopback")  # the slow upstream is on loopback
        gw = build_gateway(Settings.from_env())
        ada = gw.stores.users.get_or_create("ada@example.com")
        connect_slowapi(gw, ada.id)
        key = gw.auth.mint_key(ada)
        arguments = {
            "compose": True,
            "executions": [
                {"tool": "slowapi_fast", "args": {}, "ref_id": "first"},
                {"tool": "slowapi_slow", "args": {}, "ref_id": "second"},
                {"tool": "slowapi_fast", "args": {}, "ref_id": "third"},
            ],
        }
        event = _mcp_event(_rpc("tools/call", {"name": "execute_tools", "arguments": arguments}), token=key)
        started = time.monotonic()
        result = load_entry("mcp").handler(event, _LambdaContext(4.5))
        elapsed = time.monotonic() - started
    assert elapsed < 3.5, elapsed  # well before the function's 4.5 s ran out
    assert result["statusCode"] == 200, result
    message = response_json(result)
    assert "error" not in message  # a JSON-RPC result, not an API Gateway 503 or a Lambda failure
    payload = json.loads(message["result"]["content"][0]["text"])
    assert (payload["index"], payload["ref_id"]) == (1, "second"), payload
    assert re.fullmatch(r"Upstream timed out after \d+(\.\d)? s", payload["error"]), payload
    audit = [e for e in build_gateway(lambda_env).stores.audit.list_for(ada.id) if e["action"] == "EXECUTE"]
    assert sorted(e["tool"] for e in audit) == ["slowapi_fast", "slowapi_slow"]  # the third never ran


def test_responses_over_lambdas_6_mb_are_the_documented_error_on_rest_and_the_proxy(
    lambda_env: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.support.slowapi import connect_slowapi, slow_upstream

    assert Settings.from_env().max_response_bytes == 6_291_456  # the template's value
    with slow_upstream() as url:
        monkeypatch.setenv("WORKBENCH_EXTRA_PLUGINS", "tests.support.slowapi")
        monkeypatch.setenv("WB_SLOW_API_URL", url)
        monkeypatch.setenv("WORKBENCH_EGRESS_ALLOW", "loopback")
        gw = build_gateway(Settings.from_env())
        ada = gw.stores.users.get_or_create("ada@example.com")
        connect_slowapi(gw, ada.id)
        key = gw.auth.mint_key(ada)
        rest = load_entry("rest").handler

        def rest_call(size: int) -> dict[str, Any]:
            event = http_api_event(
                "POST",
                "/rest/slowapi",
                route_key="ANY /rest/{integration}",
                path_parameters={"integration": "slowapi"},
                headers={"authorization": f"Bearer {key}"},
                body={"tool": "slowapi_big", "args": {"bytes": size}},
            )
            answer: dict[str, Any] = rest(event, None)
            return answer

        fits = rest_call(5_000_000)
        assert fits["statusCode"] == 200 and len(response_json(fits)["result"]["data"]) > 4_900_000
        too_big = rest_call(7_000_000)
        assert too_big["statusCode"] == 502
        body = response_json(too_big)
        assert body["error"] == "RESPONSE_TOO_LARGE"
        assert re.fullmatch(
            r"The response is [\d,]+ bytes; AWS Lambda answers at most 6,291,456 bytes\. The tools ran .*",
            body["message"],
        ), body

        token = gw.curl.mint(gw.auth.api_keys.resolve(key), ["slowapi"], 900)["token"]
        proxy = load_entry("proxy").handler
        event = http_api_event(
            "GET",
            "/c/slowapi/big",
            route_key="ANY /c/{integration}/{proxy+}",
            path_parameters={"integration": "slowapi", "proxy": "big"},
            headers={"authorization": f"Bearer {token}"},
            query="bytes=7000000",
        )
        relayed = proxy(event, None)
    assert relayed["statusCode"] == 502, relayed.get("body", "")[:300]
    body = response_json(relayed)
    assert body["error"] == "RESPONSE_TOO_LARGE" and "The upstream answered" in body["message"]


def test_a_windows_1252_text_body_passes_the_proxys_lambda_handler_byte_for_byte(
    lambda_env: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the curl proxy on Lambda a text body in another charset than UTF-8 reaches the client
    as the upstream sent it (once it came back with U+FFFD in place of each non-UTF-8 byte)."""
    from tests.support.slowapi import CP1252_CSV, connect_slowapi, slow_upstream

    with slow_upstream() as url:
        monkeypatch.setenv("WORKBENCH_EXTRA_PLUGINS", "tests.support.slowapi")
        monkeypatch.setenv("WB_SLOW_API_URL", url)
        monkeypatch.setenv("WORKBENCH_EGRESS_ALLOW", "loopback")
        gw = build_gateway(Settings.from_env())
        ada = gw.stores.users.get_or_create("ada@example.com")
        connect_slowapi(gw, ada.id)
        token = gw.curl.mint(gw.auth.api_keys.resolve(gw.auth.mint_key(ada)), ["slowapi"], 900)["token"]
        event = http_api_event(
            "GET",
            "/c/slowapi/cp1252",
            route_key="ANY /c/{integration}/{proxy+}",
            path_parameters={"integration": "slowapi", "proxy": "cp1252"},
            headers={"authorization": f"Bearer {token}"},
        )
        relayed = load_entry("proxy").handler(event, None)
    assert relayed["statusCode"] == 200, relayed
    assert relayed["headers"]["content-type"] == "text/csv; charset=windows-1252"
    # What API Gateway hands the client: base64 decoded, or text re-encoded as UTF-8.
    body = relayed["body"]
    received = base64.b64decode(body) if relayed["isBase64Encoded"] else body.encode("utf-8")
    assert received == CP1252_CSV
    assert len(received) == len(CP1252_CSV) == 42  # one byte a character
