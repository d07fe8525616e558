"""The curl proxy's own request and answer (workbench.proxy.app.Request / Response) against Starlette's,
which they replace on the proxy's direct path (Starlette stays the oracle): the same headers read, the
same body read, the same ASGI messages sent."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from starlette.requests import ClientDisconnect
from starlette.requests import Request as StarletteRequest
from starlette.responses import Response as StarletteResponse
from workbench.proxy.app import Request, Response

HEADERS = [
    (b"host", b"gw.example.test"),
    (b"authorization", b"Bearer abc"),
    (b"x-thing", b"one"),
    (b"x-thing", b"two"),
    (b"content-type", b"application/json"),
    (b"x-latin", "caf\u00e9 \u00ff".encode("latin-1")),
    (b"x-utf8", "\u00e9\u2603".encode()),
    (b"empty", b""),
]


def _scope(headers: list[tuple[bytes, bytes]] = HEADERS, method: str = "POST") -> dict[str, Any]:
    return {"type": "http", "method": method, "path": "/c/demo/x", "headers": headers, "query_string": b""}


def _receiver(messages: list[dict[str, Any]]) -> Any:
    queue = list(messages)

    async def receive() -> dict[str, Any]:
        return queue.pop(0)

    return receive


@pytest.mark.parametrize("method", ["GET", "POST", "DELETE"])
def test_headers_and_method_read_as_starlette_reads_them(method: str) -> None:
    ours, theirs = Request(_scope(method=method), _receiver([])), StarletteRequest(_scope(method=method))
    assert ours.method == theirs.method == method
    assert ours.headers.items() == list(theirs.headers.items())
    for name in ("Authorization", "authorization", "X-THING", "x-latin", "x-utf8", "empty", "missing"):
        assert ours.headers.get(name) == theirs.headers.get(name)
        assert ours.headers.get(name, "") == theirs.headers.get(name, "")


@pytest.mark.parametrize(
    "messages",
    [
        [{"type": "http.request", "body": b"", "more_body": False}],
        [{"type": "http.request"}],
        [{"type": "http.request", "body": b"whole", "more_body": False}],
        [
            {"type": "http.request", "body": b"a", "more_body": True},
            {"type": "http.request", "body": b"", "more_body": True},
            {"type": "http.request", "body": b"bc", "more_body": False},
        ],
    ],
)
def test_the_body_reads_as_starlettes_does(messages: list[dict[str, Any]]) -> None:
    async def both() -> tuple[bytes, bytes, bytes]:
        ours = Request(_scope(), _receiver(messages))
        theirs = StarletteRequest(_scope(), _receiver(messages))
        first = await ours.body()
        return first, await ours.body(), await theirs.body()  # read twice: the same bytes

    first, again, theirs = asyncio.run(both())
    assert first == again == theirs


def test_a_disconnect_while_reading_is_starlettes_client_disconnect() -> None:
    messages = [{"type": "http.request", "body": b"a", "more_body": True}, {"type": "http.disconnect"}]

    async def read(request: Any) -> None:
        await request.body()

    with pytest.raises(ClientDisconnect):
        asyncio.run(read(Request(_scope(), _receiver(messages))))
    with pytest.raises(ClientDisconnect):
        asyncio.run(read(StarletteRequest(_scope(), _receiver(messages))))


CASES: list[tuple[Any, int, dict[str, str] | None, str | None]] = [
    ('{"error": "x"}', 401, {"WWW-Authenticate": 'Bearer realm="r"'}, "application/json"),
    ('{"a": "\u00e9\u2603"}', 200, None, "application/json"),
    (b"raw bytes", 200, {"Content-Type": "text/plain", "X-Upstream": "caf\u00e9"}, None),
    (b"", 204, {"etag": '"1"'}, None),
    (b"", 304, {"etag": '"1"'}, None),
    (b"", 101, None, None),
    (b"body", 200, {"content-length": "4"}, None),
    (b"body", 302, {"location": "https://gw.example.test/c/x", "link": "<a>; rel=next"}, None),
    ("text", 200, None, "text/html"),
    ("text", 200, None, "text/plain; charset=latin-1"),
    ("text", 200, {"content-type": "text/csv"}, "text/html"),
    (b"x" * 70_000, 200, None, None),
    (b"", 200, {}, None),
]


@pytest.mark.parametrize(("content", "status", "headers", "media_type"), CASES)
def test_an_answer_sends_what_starlettes_response_sends(
    content: Any, status: int, headers: dict[str, str] | None, media_type: str | None
) -> None:
    async def sent(response: Any) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = []

        async def send(message: dict[str, Any]) -> None:
            messages.append(message)

        await response(_scope(), _receiver([]), send)
        return messages

    ours = Response(content, status, headers=headers, media_type=media_type)
    theirs = StarletteResponse(content, status, headers=headers, media_type=media_type)
    assert ours.raw_headers == theirs.raw_headers
    assert asyncio.run(sent(ours)) == asyncio.run(sent(theirs))
