"""Mangum (the design card's API Gateway adapter) as the oracle of workbench.aws.apigw.

A corpus of ASGI responses — text in every charset Python knows, binary, empty, huge, compressed,
odd and repeated headers, cookies, a body sent in chunks — goes through both adapters with the same
HTTP API (payload 2.0) event. What is compared is what the client receives from API Gateway: the
status, each header's bytes (API Gateway sends header text on as UTF-8), the cookies, and the body
bytes (base64-decoded when `isBase64Encoded`, else the text encoded as UTF-8, as API Gateway does).

`DIFFERS` lists where the two disagree on purpose, each with both outcomes pinned.
"""

from __future__ import annotations

import asyncio
import base64
import encodings.aliases
import gzip
from collections.abc import Iterator
from typing import Any

import pytest
from mangum import Mangum
from workbench.aws.apigw import ApiGatewayV2

from tests.support.apigw import http_api_event

Message = dict[str, Any]


def reply(status: int, headers: list[tuple[bytes, bytes]], *bodies: bytes) -> list[Message]:
    out: list[Message] = [{"type": "http.response.start", "status": status, "headers": headers}]
    for i, body in enumerate(bodies or (b"",)):
        out.append({"type": "http.response.body", "body": body, "more_body": i < len(bodies) - 1})
    return out


def app_for(messages: list[Message]) -> Any:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        await receive()
        for message in messages:
            await send(message)

    return app


def received(answer: dict[str, Any]) -> tuple[int, list[tuple[str, bytes]], list[bytes], bytes]:
    """What the client gets from API Gateway for this Lambda answer."""
    body = answer.get("body", "")
    raw = base64.b64decode(body) if answer.get("isBase64Encoded") else body.encode("utf-8")
    headers = sorted((k, v.encode("utf-8")) for k, v in (answer.get("headers") or {}).items())
    cookies = [c.encode("utf-8") for c in answer.get("cookies") or []]
    return answer["statusCode"], headers, cookies, raw


@pytest.fixture(autouse=True)
def _loop() -> Iterator[None]:
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    yield
    loop.close()


def both(messages: list[Message]) -> tuple[Any, Any]:
    event = http_api_event("GET", "/c/acme/report.csv", route_key="ANY /c/{integration}/{proxy+}")
    ours = ApiGatewayV2(app_for(messages))(event, None)
    try:
        theirs: Any = Mangum(app_for(messages), lifespan="off")(event, None)
    except Exception as exc:
        return received(ours), type(exc).__name__
    return received(ours), received(theirs)


def _charsets() -> list[str]:
    """Every text codec Python ships (one name each), the ones that can encode our sample."""
    names = sorted(set(encodings.aliases.aliases.values()))
    out = []
    for name in names:
        try:
            "caf\u00e9 \u201cquoted\u201d \u00a3".encode(name)
        except (LookupError, UnicodeEncodeError):
            try:
                "cafe".encode(name)
            except (LookupError, UnicodeEncodeError):
                continue
        except Exception:  # codecs that are not text codecs (base64, zlib, ...)
            continue
        out.append(name)
    return out


def _sample(charset: str) -> bytes:
    try:
        return "name;price\ncaf\u00e9 \u201cquoted\u201d;\u00a3 5\n".encode(charset)
    except UnicodeEncodeError:
        return "name;price\ncafe;5\n".encode(charset)


CHARSETS = [c for c in _charsets() if isinstance(_sample(c), bytes)]

BIG_TEXT = ("0123456789abcdef\u00e9" * 300_000).encode()  # ~5.4 MB of UTF-8
BIG_BINARY = bytes(range(256)) * 20_000

CORPUS: dict[str, list[Message]] = {
    "json": reply(
        200, [(b"content-type", b"application/json")], b'{"ok": true, "emoji": "\xf0\x9f\x8e\x89"}'
    ),
    "json in chunks": reply(200, [(b"content-type", b"application/json")], b'{"a":', b' "b"', b"}"),
    "json with invalid utf-8": reply(200, [(b"content-type", b"application/json")], b'{"a": "\xed\xa0\x80"}'),
    "latin-1 csv": reply(
        200, [(b"content-type", b"text/csv; charset=latin-1")], "caf\u00e9;\u00a3".encode("latin-1")
    ),
    "windows-1252 page": reply(
        200,
        [(b"content-type", b"text/html; charset=windows-1252")],
        "<p>\u201cQuoted\u201d \u20ac 5 \u2013 caf\u00e9</p>".encode("cp1252"),
    ),
    "utf-16 text": reply(
        200, [(b"content-type", b"text/plain; charset=utf-16")], "hi \u00e9".encode("utf-16")
    ),
    "xml": reply(200, [(b"content-type", b"application/xml")], b"<a>\xc3\xa9</a>"),
    "javascript": reply(200, [(b"content-type", b"application/javascript")], b"let a = '\xe9';"),
    "openapi yaml": reply(200, [(b"content-type", b"application/vnd.oai.openapi")], b"openapi: 3.1.0\n"),
    "svg": reply(200, [(b"content-type", b"image/svg+xml")], b"<svg/>"),
    "problem json": reply(400, [(b"content-type", b"application/problem+json")], b'{"title": "bad"}'),
    "png": reply(200, [(b"content-type", b"image/png")], b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"),
    "octet-stream that is utf-8": reply(200, [(b"content-type", b"application/octet-stream")], b"plain"),
    "gzipped text": reply(
        200,
        [(b"content-type", b"text/plain"), (b"content-encoding", b"gzip")],
        gzip.compress(b"hello " * 100),
    ),
    "empty text": reply(200, [(b"content-type", b"text/plain; charset=utf-8")]),
    "empty binary": reply(200, [(b"content-type", b"application/octet-stream")]),
    "huge text": reply(200, [(b"content-type", b"text/plain; charset=utf-8")], BIG_TEXT),
    "huge binary": reply(200, [(b"content-type", b"application/zip")], BIG_BINARY),
    "cookies": reply(
        302,
        [
            (b"location", b"/portal"),
            (b"content-type", b"text/plain"),
            (b"set-cookie", b"wb_session=abc; Path=/; HttpOnly; Secure; SameSite=Lax"),
            (b"Set-Cookie", b"wb_csrf=x; Expires=Wed, 21 Oct 2026 07:28:00 GMT; Path=/"),
            (b"set-cookie", b"empty="),
        ],
    ),
    "repeated headers": reply(
        200,
        [
            (b"content-type", b"text/plain"),
            (b"Vary", b"Origin"),
            (b"vary", b"Cookie"),
            (b"cache-control", b"no-store"),
            (b"Cache-Control", b"private"),
            (b"link", b'<https://a.test/>; rel="next", <https://a.test/1>; rel="prev"'),
        ],
        b"ok",
    ),
    "odd header names and values": reply(
        200,
        [
            (b"content-type", b"text/plain"),
            (b"X-UPPER-Case", b"Value With  Spaces "),
            (b"x-empty", b""),
            (b"content-disposition", "attachment; filename=\u00e9t\u00e9.csv".encode()),
            (b"x-quote", b'"a, b"'),
        ],
        b"ok",
    ),
    "no content": reply(204, [(b"content-type", b"text/plain")]),
    "a 500 page": reply(500, [(b"content-type", b"text/html; charset=utf-8")], b"<h1>Internal</h1>"),
}
for _charset in CHARSETS:
    CORPUS[f"text in {_charset}"] = reply(
        200, [(b"content-type", f"text/csv; charset={_charset}".encode())], _sample(_charset)
    )


@pytest.mark.parametrize("name", list(CORPUS))
def test_the_client_receives_the_same_bytes_through_both_adapters(name: str) -> None:
    ours, theirs = both(CORPUS[name])
    assert ours == theirs
    assert ours[3] == b"".join(m.get("body", b"") for m in CORPUS[name][1:])  # the app's bytes, exactly


def test_the_corpus_covers_many_charsets() -> None:
    assert len(CHARSETS) > 80
    assert {"latin_1", "cp1252", "utf_16", "shift_jis", "koi8_r", "iso8859_15", "gb18030"} <= set(CHARSETS)


DIFFERS = {
    # Mangum labels a body without a content type application/json; we add nothing the app did not say.
    "a body without a content type": (
        reply(200, [], b"\x00\x01"),
        lambda ours, theirs: (
            ours[1] == [] and theirs[1] == [("content-type", b"application/json")] and ours[3] == theirs[3]
        ),
    ),
    # A header value that is not UTF-8 (Latin-1, as Starlette encodes headers): Mangum's strict
    # decode raises, so the invocation fails; we pass it on as the Latin-1 text it is.
    "a Latin-1 header value": (
        reply(200, [(b"content-type", b"text/plain"), (b"x-name", "caf\u00e9".encode("latin-1"))], b"ok"),
        lambda ours, theirs: theirs == "UnicodeDecodeError" and ("x-name", "caf\u00e9".encode()) in ours[1],
    ),
}


@pytest.mark.parametrize("name", list(DIFFERS))
def test_where_we_differ_from_mangum_on_purpose(name: str) -> None:
    messages, check = DIFFERS[name]
    ours, theirs = both(messages)
    assert check(ours, theirs), (ours, theirs)


def test_a_crash_before_the_answer_is_the_same_500() -> None:
    async def crash(scope: dict[str, Any], receive: Any, send: Any) -> None:
        raise RuntimeError("boom")

    event = http_api_event("GET", "/x")
    ours = received(ApiGatewayV2(crash)(event, None))
    theirs = received(Mangum(crash, lifespan="off")(event, None))
    assert (
        ours
        == theirs
        == (
            500,
            [("content-type", b"text/plain; charset=utf-8")],
            [],
            b"Internal Server Error",
        )
    )
