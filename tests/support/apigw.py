"""API Gateway HTTP API (payload format 2.0) events, shaped as `sam local generate-event apigateway
http-api-proxy` prints them, and loading a functions/*/app.py entry the way Lambda does."""

from __future__ import annotations

import base64
import importlib.util
import json
import time
import uuid
from types import ModuleType
from typing import Any
from urllib.parse import parse_qsl

from tests.support.processes import REPO


def http_api_event(
    method: str,
    path: str,
    *,
    route_key: str | None = None,
    headers: dict[str, str] | None = None,
    query: str = "",
    body: Any = None,
    path_parameters: dict[str, str] | None = None,
    cookies: list[str] | None = None,
    domain: str = "abc123.execute-api.us-east-1.amazonaws.com",
) -> dict[str, Any]:
    raw: str | None
    encoded = False
    if body is None:
        raw = None
    elif isinstance(body, bytes):
        raw, encoded = base64.b64encode(body).decode(), True
    elif isinstance(body, str):
        raw = body
    else:
        raw = json.dumps(body)
    hdrs = {"accept": "*/*", "host": domain, "user-agent": "tests", "x-forwarded-proto": "https"}
    if raw is not None and not isinstance(body, (str, bytes)):
        hdrs["content-type"] = "application/json"
    hdrs.update({k.lower(): v for k, v in (headers or {}).items()})
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": route_key or f"{method} {path}",
        "rawPath": path,
        "rawQueryString": query,
        "headers": hdrs,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": domain.split(".")[0],
            "domainName": domain,
            "domainPrefix": domain.split(".")[0],
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": "192.0.2.10",
                "userAgent": "tests",
            },
            "requestId": "req-" + uuid.uuid4().hex[:12],
            "routeKey": route_key or f"{method} {path}",
            "stage": "$default",
            "time": "02/Dec/2026:14:00:00 +0000",
            "timeEpoch": int(time.time() * 1000),  # when API Gateway received it: now
        },
        "isBase64Encoded": encoded,
    }
    if query:
        event["queryStringParameters"] = dict(parse_qsl(query))
    if raw is not None:
        event["body"] = raw
    if path_parameters:
        event["pathParameters"] = path_parameters
    if cookies:
        event["cookies"] = cookies
    return event


def load_entry(surface: str) -> ModuleType:
    """Import functions/<surface>/app.py as Lambda does (a top-level `app` module), fresh each call."""
    path = REPO / "functions" / surface / "app.py"
    spec = importlib.util.spec_from_file_location(f"lambda_entry_{surface}_{uuid.uuid4().hex[:6]}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def response_json(result: dict[str, Any]) -> Any:
    body = result.get("body") or ""
    if result.get("isBase64Encoded"):
        body = base64.b64decode(body).decode()
    return json.loads(body)


def header(result: dict[str, Any], name: str) -> str | None:
    for key, value in (result.get("headers") or {}).items():
        if key.lower() == name.lower():
            return str(value)
    return None
