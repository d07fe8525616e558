"""The egress door's own transport (`_PinnedTransport`: an httpcore pool with our network backend,
written on httpcore's public API) against httpx's `AsyncHTTPTransport` as the oracle.

The same raw answers from one loopback server go through both; what a caller sees — status,
headers in order, body bytes, HTTP version, or the httpx exception class — must be the same. And
every exception class httpcore exports maps to the httpx class httpx itself maps it to, so an
httpcore release that adds one shows up here rather than as a bare httpcore error in a tool result.
"""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

import httpcore
import httpx
import pytest
from workbench.guard.egress import EgressPolicy
from workbench.guard.egress_transport import _PinnedTransport, httpcore_errors


def test_every_httpcore_error_maps_to_the_httpx_class_httpx_maps_it_to() -> None:
    # httpx's own mapping is private: the oracle only, in this test. If it moves, this test says so.
    from httpx._transports.default import map_httpcore_exceptions

    classes = [getattr(httpcore, name) for name in httpcore.__all__]
    errors = [c for c in classes if isinstance(c, type) and issubclass(c, Exception)]
    assert len(errors) >= 14
    for cls in errors:
        with pytest.raises(Exception) as theirs:
            with map_httpcore_exceptions():
                raise cls("boom")
        with pytest.raises(Exception) as ours:
            with httpcore_errors():
                raise cls("boom")
        assert type(ours.value) is type(theirs.value), cls
        assert str(ours.value) == "boom"
        if type(ours.value) is not cls:  # mapped (ConnectionNotAvailable, say, passes as it is)
            assert isinstance(ours.value, httpx.HTTPError) and isinstance(ours.value.__cause__, cls)


CHUNKED = (
    b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\ncontent-type: text/plain\r\n\r\n"
    b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
)
BIG = b"x" * 300_000

ANSWERS: dict[str, bytes] = {
    "plain": b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}",
    "chunked": CHUNKED,
    "big": b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % len(BIG) + BIG,
    "cookies and repeated headers": (
        b"HTTP/1.1 201 Created\r\nSet-Cookie: a=1; Path=/\r\nset-cookie: b=2\r\nX-Odd:  spaced  \r\n"
        b"Vary: accept\r\nVary: cookie\r\ncontent-length: 0\r\n\r\n"
    ),
    "no content": b"HTTP/1.1 204 No Content\r\n\r\n",
    "not utf-8 text": b"HTTP/1.1 200 OK\r\ncontent-type: text/csv; charset=latin-1\r\ncontent-length: 4\r\n\r\n\xe9t\xe9\n",
    "cut short": b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nonly this",
    "close delimited": b"HTTP/1.0 200 OK\r\n\r\nuntil the socket closes",
    "garbage status line": b"HTTP/1.1 two hundred\r\n\r\n",
    "nothing": b"",
}


@contextmanager
def server(raw: bytes) -> Iterator[int]:
    """Answers the request on each connection with `raw`, then ends the connection."""
    listener = socket.create_server(("127.0.0.1", 0))
    conns: list[socket.socket] = []

    def run() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            conns.append(conn)
            with conn, suppress(OSError):
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                head, _, body = data.partition(b"\r\n\r\n")
                length = next(
                    (
                        int(line[15:])
                        for line in head.lower().split(b"\r\n")
                        if line.startswith(b"content-length:")
                    ),
                    0,
                )
                while len(body) < length:
                    body += conn.recv(65536)
                conn.sendall(raw)
                conn.shutdown(socket.SHUT_WR)  # the answer ends here; the whole request was read: no reset
                while conn.recv(65536):
                    pass

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        for sock in [listener, *conns]:
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        thread.join(5)
        listener.close()


async def outcome(transport: httpx.AsyncBaseTransport, port: int, method: str) -> Any:
    async with httpx.AsyncClient(transport=transport) as client:
        try:
            response = await client.request(method, f"http://127.0.0.1:{port}/x?q=1", content=b"body")
        except httpx.HTTPError as exc:
            return type(exc).__name__
        return (
            response.status_code,
            response.headers.multi_items(),
            response.content,
            response.extensions["http_version"],
            response.extensions["reason_phrase"],
        )


@pytest.mark.parametrize("name", list(ANSWERS))
@pytest.mark.parametrize("method", ["GET", "POST", "HEAD"])
async def test_our_transport_answers_as_httpxs_does(name: str, method: str) -> None:
    ctx = ssl.create_default_context()
    with server(ANSWERS[name]) as port:
        theirs = await outcome(httpx.AsyncHTTPTransport(verify=ctx, trust_env=False), port, method)
        ours = await outcome(_PinnedTransport(EgressPolicy(allow="loopback"), ctx, 0), port, method)
    assert ours == theirs
    if name in ("garbage status line", "nothing") or (name == "cut short" and method != "HEAD"):
        assert isinstance(ours, str)  # an httpx error class name, as httpx raises it
