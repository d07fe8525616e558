"""The API Gateway HTTP API (payload 2.0) adapter: what reaches the ASGI app, what API Gateway gets back."""

from __future__ import annotations

import asyncio
import base64
from typing import Any

import pytest
from workbench.aws.apigw import ApiGatewayV2

from tests.support.apigw import http_api_event


class Recorder:
    """An ASGI app that records its scope and body, then answers with `reply`."""

    def __init__(self, reply: list[dict[str, Any]], *, fail: bool = False) -> None:
        self.reply = reply
        self.fail = fail
        self.scope: dict[str, Any] = {}
        self.body = b""

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        self.scope = scope
        message = await receive()
        self.body = message["body"]
        for m in self.reply:
            await send(m)
        if self.fail:
            raise RuntimeError("boom")


def _start(status: int, *headers: tuple[bytes, bytes]) -> dict[str, Any]:
    return {"type": "http.response.start", "status": status, "headers": list(headers)}


def _body(data: bytes) -> dict[str, Any]:
    return {"type": "http.response.body", "body": data}


@pytest.fixture(autouse=True)
def _loop() -> Any:
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    yield
    loop.close()


def test_the_scope_is_the_request_as_sent() -> None:
    app = Recorder([_start(204), _body(b"")])
    event = http_api_event(
        "POST",
        "/c/github/repos/a%2Fb/issues",
        query="state=open&q=x%20y",
        headers={"X-Thing": "1", "Content-Type": "application/json"},
        body=b"\x00\x01binary",
        cookies=["a=1", "b=2"],
    )
    context = object()
    ApiGatewayV2(app)(event, context)
    scope = app.scope
    assert scope["type"] == "http" and scope["method"] == "POST" and scope["scheme"] == "https"
    assert scope["raw_path"] == b"/c/github/repos/a%2Fb/issues"  # still encoded, as sent
    assert scope["path"] == "/c/github/repos/a/b/issues"
    assert scope["query_string"] == b"state=open&q=x%20y"
    headers = dict(scope["headers"])
    assert headers[b"x-thing"] == b"1" and headers[b"cookie"] == b"a=1; b=2"
    assert scope["client"] == ("192.0.2.10", 0)
    assert scope["aws.event"] is event and scope["aws.context"] is context
    assert app.body == b"\x00\x01binary"  # base64 in the event, bytes for the app


def test_text_answers_are_text_binary_answers_base64_and_cookies_a_list() -> None:
    text = Recorder(
        [
            _start(
                200,
                (b"content-type", b"application/json"),
                (b"set-cookie", b"s=1; Path=/"),
                (b"set-cookie", b"t=2; Path=/"),
                (b"vary", b"Origin"),
                (b"vary", b"Cookie"),
            ),
            {"type": "http.response.body", "body": b'{"ok"', "more_body": True},
            _body(b": true}"),
        ]
    )
    out = ApiGatewayV2(text)(http_api_event("GET", "/x"), None)
    assert out == {
        "statusCode": 200,
        "headers": {"content-type": "application/json", "vary": "Origin,Cookie"},
        "cookies": ["s=1; Path=/", "t=2; Path=/"],
        "body": '{"ok": true}',
        "isBase64Encoded": False,
    }
    png = b"\x89PNG\r\n\x1a\n\x00"
    image = Recorder([_start(200, (b"content-type", b"image/png")), _body(png)])
    out = ApiGatewayV2(image)(http_api_event("GET", "/x"), None)
    assert out["isBase64Encoded"] is True and base64.b64decode(out["body"]) == png
    gz = Recorder(
        [_start(200, (b"content-type", b"text/plain"), (b"content-encoding", b"gzip")), _body(b"\x1f\x8b")]
    )
    assert ApiGatewayV2(gz)(http_api_event("GET", "/x"), None)["isBase64Encoded"] is True


def test_a_crash_before_answering_is_a_plain_500_and_after_answering_keeps_the_answer() -> None:
    crashed = ApiGatewayV2(Recorder([], fail=True))(http_api_event("GET", "/x"), None)
    assert crashed["statusCode"] == 500 and crashed["body"] == "Internal Server Error"
    answered = Recorder(
        [_start(500, (b"content-type", b"text/plain")), _body(b"Internal Server Error")], fail=True
    )
    out = ApiGatewayV2(answered)(http_api_event("GET", "/x"), None)
    assert out["statusCode"] == 500 and out["body"] == "Internal Server Error"
    half = Recorder(
        [_start(200), {"type": "http.response.body", "body": b"part", "more_body": True}], fail=True
    )
    assert ApiGatewayV2(half)(http_api_event("GET", "/x"), None)["statusCode"] == 500


def test_what_a_client_may_send_never_crashes_the_adapter() -> None:
    """API Gateway passes on whatever a client sends: UTF-8 in a header (an emoji in a User-Agent), a
    list or garbage in X-Forwarded-Port, lone surrogates in the path. The app sees the bytes a server
    would have read; a body flagged base64 that is not answers 400 without reaching the app."""
    app = Recorder([_start(200), _body(b"ok")])
    event = http_api_event(
        "GET",
        "/portal/\udcff",
        query="q=\u00e9",
        headers={"User-Agent": "agent \U0001f600", "Referer": "caf\u00e9", "X-Forwarded-Port": "8443, 443"},
    )
    out = ApiGatewayV2(app)(event, object())
    assert out["statusCode"] == 200
    headers = dict(app.scope["headers"])
    assert headers[b"user-agent"] == "agent \U0001f600".encode()
    assert headers[b"referer"] == "caf\u00e9".encode("latin-1")  # latin-1 text stays one byte a char
    assert app.scope["server"][1] == 443  # the last hop's port
    assert app.scope["raw_path"] == "/portal/\udcff".encode("utf-8", "surrogatepass")
    assert app.scope["query_string"] == "q=\u00e9".encode()

    for port in ("x", "\u0661\u0662", "", "-1"):
        ApiGatewayV2(app)(http_api_event("GET", "/", headers={"X-Forwarded-Port": port}), object())
        assert app.scope["server"][1] == 443

    never = Recorder([_start(200), _body(b"reached")])
    garbage = http_api_event("POST", "/mcp", body=b"x")
    garbage["body"] = "not base64 at all!"
    out = ApiGatewayV2(never)(garbage, object())
    assert out == {
        "statusCode": 400,
        "headers": {"content-type": "text/plain; charset=utf-8"},
        "body": "Bad Request",
        "isBase64Encoded": False,
    }
    assert never.scope == {}
