"""Lambda's 6 MB response limit, measured as Lambda counts it, answered in each surface's shape."""

from __future__ import annotations

import base64
import json
from typing import Any

from workbench.guard.response_limit import (
    LAMBDA_RESPONSE_LIMIT,
    RESPONSE_TOO_LARGE,
    fit_response,
    response_size,
)

LIMIT = LAMBDA_RESPONSE_LIMIT


def _result(body: str, *, binary: bool = False) -> dict[str, Any]:
    return {
        "statusCode": 200,
        "headers": {"content-type": "application/json"},
        "body": body,
        "isBase64Encoded": binary,
    }


def test_a_response_that_fits_is_returned_as_it_is() -> None:
    small = _result(json.dumps({"result": {"rows": ["x" * 100] * 100}}))
    assert fit_response(small, surface="rest", limit=LIMIT, event={}) is small
    near = _result(json.dumps({"result": "x" * (LIMIT - 200)}))
    assert response_size(near) <= LIMIT
    assert fit_response(near, surface="rest", limit=LIMIT, event={}) is near


def test_rest_over_the_limit_is_a_502_naming_the_size_and_the_limit() -> None:
    big = _result(json.dumps({"results": [{"result": "x" * (LIMIT + 10)}]}))
    out = fit_response(big, surface="rest", limit=LIMIT, event={})
    assert out["statusCode"] == 502 and out["headers"] == {"content-type": "application/json"}
    body = json.loads(out["body"])
    assert body["error"] == RESPONSE_TOO_LARGE
    assert body["message"].startswith(
        f"The response is {response_size(big):,} bytes; AWS Lambda answers at most 6,291,456 bytes. The tools ran"
    )
    assert response_size(out) < 1000


def test_escaping_and_base64_count_as_lambda_counts_them() -> None:
    # 5 MB of empty strings in the body: 7.5 MB once the body is a JSON string inside Lambda's answer.
    quotes = _result(json.dumps({"result": [""] * (LIMIT // 5)}))
    assert len(quotes["body"]) < LIMIT < response_size(quotes)
    assert fit_response(quotes, surface="rest", limit=LIMIT, event={})["statusCode"] == 502
    # 4.8 MB of bytes from an upstream: 6.4 MB as base64.
    raw = b"\x00\xff" * (2_400_000)
    binary = _result(base64.b64encode(raw).decode(), binary=True)
    out = fit_response(binary, surface="proxy", limit=LIMIT, event={})
    assert out["statusCode"] == 502
    assert "The upstream answered; ask it for less" in json.loads(out["body"])["message"]


def test_mcp_answers_the_same_request_id_with_the_error_as_tool_data() -> None:
    big = _result(
        json.dumps(
            {"jsonrpc": "2.0", "id": 41, "result": {"content": [{"type": "image", "data": "A" * LIMIT}]}}
        )
    )
    call = {
        "body": json.dumps(
            {"jsonrpc": "2.0", "id": 41, "method": "tools/call", "params": {"name": "execute_tools"}}
        )
    }
    out = fit_response(big, surface="mcp", limit=LIMIT, event=call)
    assert out["statusCode"] == 200
    message = json.loads(out["body"])
    assert message["id"] == 41 and message["result"]["isError"] is False
    assert json.loads(message["result"]["content"][0]["text"])["error"] == RESPONSE_TOO_LARGE
    other = {
        "body": base64.b64encode(
            json.dumps({"jsonrpc": "2.0", "id": "x", "method": "tools/list"}).encode()
        ).decode(),
        "isBase64Encoded": True,
    }
    message = json.loads(fit_response(big, surface="mcp", limit=LIMIT, event=other)["body"])
    assert message["id"] == "x" and message["error"]["code"] == -32603
    assert message["error"]["message"].startswith("The response is ")
