"""`workbench serve`'s HTTP protocol (workbench.runtime.uvicorn_server): httptools, with the request-target rules
h11 had. A fragment or an absolute-form target is refused with 400 before the app sees anything."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest
from workbench.runtime.uvicorn_server import http_protocol

from tests.support.processes import free_port
from tests.support.server_thread import start_server_thread

SEEN: list[tuple[str, bytes]] = []


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    SEEN.append((scope["method"], scope["raw_path"]))
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"ok"})


@pytest.fixture(scope="module")
def port() -> Iterator[int]:
    number = free_port()
    server, thread = start_server_thread(
        app, number, name="the local server", log_level="critical", http=http_protocol()
    )
    yield number
    server.should_exit = True
    thread.join(5)


def _status(port: int, request_line: str) -> int:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(f"{request_line}\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n".encode())
        return int(sock.recv(4096).split(b" ", 2)[1])


def test_the_local_server_uses_httptools() -> None:
    assert http_protocol() != "h11"


@pytest.mark.parametrize(
    "request_line",
    [
        "GET /c/acme/items#/../../admin HTTP/1.1",
        "GET /c/acme/items?q=1#frag HTTP/1.1",
        "GET http://evil.test/c/acme/items HTTP/1.1",
        "GET https://127.0.0.1/mcp HTTP/1.1",
        "CONNECT evil.test:443 HTTP/1.1",
        "GET c/acme/items HTTP/1.1",
    ],
)
def test_a_target_that_is_not_origin_form_is_refused_before_the_app(port: int, request_line: str) -> None:
    SEEN.clear()
    assert _status(port, request_line) == 400
    assert SEEN == []


def test_origin_form_and_options_star_reach_the_app(port: int) -> None:
    SEEN.clear()
    assert _status(port, "GET /c/acme/items?q=%20x HTTP/1.1") == 200
    assert _status(port, "OPTIONS * HTTP/1.1") == 200
    assert SEEN == [("GET", b"/c/acme/items"), ("OPTIONS", b"*")]
