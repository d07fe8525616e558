"""Lambda answers at most 6 MB (6,291,456 bytes) per synchronous invocation: a bigger response is
not delivered at all — the invocation fails and API Gateway answers a bare 500/502 that says
nothing. So the Lambda runtime measures every response as Lambda will (the JSON envelope API
Gateway receives: status, headers, the body as a JSON string, base64 for binary bodies) and
replaces one that does not fit with a clear error in the surface's own shape:

- REST and the curl proxy: HTTP 502, `{"error": "RESPONSE_TOO_LARGE", "message": "..."}`;
- MCP: the JSON-RPC response to the same id, a tool result whose text is that error object (tool
  failures are data), or for any other method a JSON-RPC error;
- web pages: HTTP 502 with the same JSON.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["LAMBDA_RESPONSE_LIMIT", "RESPONSE_TOO_LARGE", "fit_response", "response_size"]

LAMBDA_RESPONSE_LIMIT = 6 * 1024 * 1024
RESPONSE_TOO_LARGE = "RESPONSE_TOO_LARGE"
# JSON string escaping grows a character to at most 6 bytes (\u001f); below this no measuring is needed.
_WORST_ESCAPE = 6
_ENVELOPE_ALLOWANCE = 64 * 1024  # status, headers, keys

_ADVICE = {
    "rest": "The tools ran (see the audit log); ask for less: limit/perPage arguments, fewer "
    "executions per request, or split the batch.",
    "proxy": "The upstream answered; ask it for less: a smaller page, a Range header, or fields "
    "and filters the API offers.",
    "mcp": "Ask for less: limit/perPage arguments, fewer images, or a return projection.",
}


def response_size(result: dict[str, Any]) -> int:
    """The bytes Lambda counts for this handler result (Python 3.12+ runtimes: UTF-8, ensure_ascii off)."""
    return len(json.dumps(result, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def fit_response(
    result: dict[str, Any], *, surface: str, limit: int, event: dict[str, Any]
) -> dict[str, Any]:
    """`result` when it fits in `limit` bytes; otherwise the surface's RESPONSE_TOO_LARGE answer."""
    body = result.get("body")
    if not isinstance(body, str) or len(body) * _WORST_ESCAPE + _ENVELOPE_ALLOWANCE <= limit:
        return result
    size = response_size(result)
    if size <= limit:
        return result
    message = f"The response is {size:,} bytes; AWS Lambda answers at most {limit:,} bytes. " + _ADVICE.get(
        surface, "Ask for less."
    )
    error = {"error": RESPONSE_TOO_LARGE, "message": message}
    if surface == "mcp":
        return _json(200, _mcp_answer(event, error))
    return _json(502, error)


def _mcp_answer(event: dict[str, Any], error: dict[str, str]) -> dict[str, Any]:
    try:
        raw = event.get("body") or ""
        if event.get("isBase64Encoded"):
            import base64

            raw = base64.b64decode(raw).decode("utf-8")
        request = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        request = None
    request = request if isinstance(request, dict) else {}
    req_id = request.get("id")
    if request.get("method") == "tools/call":
        text = json.dumps(error, ensure_ascii=False)
        return {
            "jsonrpc": "2.0",
            "id": req_id,
            "result": {"content": [{"type": "text", "text": text}], "isError": False},
        }
    return {"jsonrpc": "2.0", "id": req_id, "error": {"code": -32603, "message": error["message"]}}


def _json(status: int, body: dict[str, Any]) -> dict[str, Any]:
    return {
        "statusCode": status,
        "headers": {"content-type": "application/json"},
        "body": json.dumps(body, ensure_ascii=False),
        "isBase64Encoded": False,
    }
