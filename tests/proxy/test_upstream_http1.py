"""The curl proxy's own HTTP/1.1 client (workbench.guard.http1) against its oracle, the httpx/httpcore
EgressTransport it replaced on the proxy's upstream leg: the same requests to a loopback server that
answers every framing, encoding and failure byte for byte; what the server received, what came back
(status, headers, decoded body) or which error was raised must be the same for both."""

from __future__ import annotations

import asyncio
import gzip
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

import httpx
import pytest
from workbench.guard.egress import EgressPolicy, EgressRefused
from workbench.guard.egress_transport import EgressTransport
from workbench.guard.http1 import KEEPALIVE_SECONDS, Http1Client

CAP = 64 * 1024
LIMITS = httpx.Timeout(2.0, connect=1.0)


def _answer(status: str, headers: list[str], body: bytes = b"") -> bytes:
    return (f"HTTP/1.1 {status}\r\n" + "".join(f"{h}\r\n" for h in headers) + "\r\n").encode() + body


def _chunked(*parts: bytes, ext: bytes = b"", trailer: bytes = b"") -> bytes:
    out = b"".join(b"%x%s\r\n%s\r\n" % (len(p), ext, p) for p in parts)
    return out + b"0\r\n" + trailer + b"\r\n"


GZ = gzip.compress(b'{"zipped": true}' * 50)
DEFLATE = zlib.compress(b"deflated " * 40)
RAW_DEFLATE = zlib.compressobj(wbits=-zlib.MAX_WBITS)
RAW_DEFLATE_BODY = RAW_DEFLATE.compress(b"raw deflate " * 30) + RAW_DEFLATE.flush()
BOMB = gzip.compress(b"\0" * (CAP * 4))
JSON = b'{"ok": true}'

# name -> the bytes the upstream answers with (then it keeps the connection open unless it says close)
ANSWERS: dict[str, bytes] = {
    "content-length": _answer(
        "200 OK", ["Content-Type: application/json", f"Content-Length: {len(JSON)}"], JSON
    ),
    "no reason phrase": b"HTTP/1.1 200\r\nContent-Length: 2\r\n\r\nok",
    "empty reason phrase": b"HTTP/1.1 404 \r\nContent-Length: 2\r\n\r\nno",
    "repeated headers": _answer(
        "200 OK", ["Set-Cookie: a=1", "Set-Cookie: b=2", "X-Thing: one", "x-thing: two", "Content-Length: 0"]
    ),
    "header whitespace": _answer("200 OK", ["X-Spaced:    padded value \t ", "Content-Length: 1"], b"x"),
    "obsolete line folding": b"HTTP/1.1 200 OK\r\nX-Folded: first\r\n  second\r\n\tthird\r\nContent-Length: 0\r\n\r\n",
    "bare LF lines": b"HTTP/1.1 200 OK\nContent-Length: 3\nX-A: b\n\nabc",
    "chunked": _answer("200 OK", ["Transfer-Encoding: chunked"], _chunked(b"hello ", b"world", b"!" * 3000)),
    "chunked, extensions and trailers": _answer(
        "200 OK", ["Transfer-Encoding: Chunked"], _chunked(b"abc", b"def", ext=b";x=1", trailer=b"X-T: 1\r\n")
    ),
    "chunked and content-length": _answer(
        "200 OK", ["Content-Length: 999", "Transfer-Encoding: chunked"], _chunked(b"framed by chunks")
    ),
    "until close": b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nread until the upstream closes",
    "http/1.0": b"HTTP/1.0 200 OK\r\nContent-Length: 4\r\n\r\nold!",
    "connection close": _answer("200 OK", ["Connection: close", "Content-Length: 2"], b"by"),
    "gzip": _answer("200 OK", ["Content-Encoding: gzip", f"Content-Length: {len(GZ)}"], GZ),
    "gzip chunked": _answer(
        "200 OK", ["Content-Encoding: gzip", "Transfer-Encoding: chunked"], _chunked(GZ[:10], GZ[10:])
    ),
    "two gzip members": _answer(
        "200 OK", ["Content-Encoding: gzip", f"Content-Length: {len(GZ) * 2}"], GZ + GZ
    ),
    "deflate": _answer("200 OK", ["Content-Encoding: deflate", f"Content-Length: {len(DEFLATE)}"], DEFLATE),
    "raw deflate": _answer(
        "200 OK", ["Content-Encoding: deflate", f"Content-Length: {len(RAW_DEFLATE_BODY)}"], RAW_DEFLATE_BODY
    ),
    "identity": _answer("200 OK", ["Content-Encoding: identity", "Content-Length: 2"], b"id"),
    "no content": _answer("204 No Content", ["Content-Length: 5"]),
    "not modified": _answer("304 Not Modified", ["ETag: x"]),
    "continue first": b"HTTP/1.1 100 Continue\r\n\r\n" + _answer("201 Created", ["Content-Length: 1"], b"!"),
    "redirect": _answer("302 Found", ["Location: /elsewhere", "Content-Length: 0"]),
    # failures
    "gzip bomb": _answer("200 OK", ["Content-Encoding: gzip", f"Content-Length: {len(BOMB)}"], BOMB),
    "too large": _answer("200 OK", [f"Content-Length: {CAP + 1}"], b"x" * (CAP + 1)),
    "corrupt gzip": _answer("200 OK", ["Content-Encoding: gzip", "Content-Length: 9"], b"not gzip!"),
    "unsupported encoding": _answer("200 OK", ["Content-Encoding: br", "Content-Length: 2"], b"br"),
    "conflicting content-length": _answer("200 OK", ["Content-Length: 2", "Content-Length: 3"], b"abc"),
    "content-length list": _answer("200 OK", ["Content-Length: 2, 2"], b"ab"),
    "bad content-length": _answer("200 OK", ["Content-Length: 2x"], b"ab"),
    "negative content-length": _answer("200 OK", ["Content-Length: -1"], b"ab"),
    "transfer-encoding gzip": _answer("200 OK", ["Transfer-Encoding: gzip"], b"ab"),
    "two transfer-encodings": _answer(
        "200 OK", ["Transfer-Encoding: chunked", "Transfer-Encoding: chunked"], _chunked(b"x")
    ),
    "bad chunk size": _answer("200 OK", ["Transfer-Encoding: chunked"], b"zz\r\nab\r\n0\r\n\r\n"),
    "chunk longer than said": _answer("200 OK", ["Transfer-Encoding: chunked"], b"2\r\nabc\r\n0\r\n\r\n"),
    "truncated body": _answer("200 OK", ["Content-Length: 10"], b"short"),
    "truncated chunks": _answer("200 OK", ["Transfer-Encoding: chunked"], b"5\r\nab"),
    "bad status line": b"HTTP/1.1 OK\r\nContent-Length: 0\r\n\r\n",
    "not http": b"SSH-2.0-OpenSSH_9.0\r\n\r\n",
    "bad header line": b"HTTP/1.1 200 OK\r\nNo colon here\r\nContent-Length: 0\r\n\r\n",
    "space before colon": b"HTTP/1.1 200 OK\r\nX-A : b\r\nContent-Length: 0\r\n\r\n",
    "fold at start": b"HTTP/1.1 200 OK\r\n folded\r\nContent-Length: 0\r\n\r\n",
    "leading empty line": b"\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
    "closed without answer": b"",
    "switching protocols": b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n",
}
# A response with "Connection: close" (or none at all, for "closed without answer") ends with the
# server closing its side; so does every answer framed by the connection's end.
CLOSES = {
    "until close",
    "http/1.0",
    "connection close",
    "closed without answer",
    "truncated body",
    "truncated chunks",
}


@dataclass
class Upstream:
    """A loopback server that records each connection's raw bytes and answers `answer` to every
    request head it sees (a request body is read by its Content-Length, or up to its last chunk)."""

    answer: bytes = b""
    close_after: bool = False
    received: list[bytes] = field(default_factory=list)  # one entry per request
    peers: list[int] = field(default_factory=list)  # the client's port, per request
    server: asyncio.Server | None = None

    @property
    def port(self) -> int:
        assert self.server is not None
        return int(self.server.sockets[0].getsockname()[1])

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")[1]
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                if b"\r\ntransfer-encoding: chunked\r\n" in head.lower():
                    body = await reader.readuntil(b"\r\n0\r\n\r\n")  # one chunk (or none), then the last
                else:
                    body = await reader.readexactly(length) if length else b""
                self.received.append(head + body)
                self.peers.append(peer)
                writer.write(self.answer)
                await writer.drain()
                if self.close_after:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        writer.close()


@pytest.fixture
async def upstream() -> AsyncIterator[Upstream]:
    up = Upstream()
    up.server = await asyncio.start_server(up._client, "127.0.0.1", 0)
    yield up
    up.server.close()


POLICY = EgressPolicy(allow="loopback")


def _answers(*addresses: str) -> Callable[[str, int], Awaitable[list[str]]]:
    async def resolve(host: str, port: int) -> list[str]:
        return list(addresses)

    return resolve


async def _oracle(
    method: str,
    url: httpx.URL,
    headers: list[tuple[bytes, bytes]],
    body: bytes,
    limits: httpx.Timeout = LIMITS,
) -> httpx.Response:
    """What the proxy did before (its `_send` on EgressTransport(per_address=True))."""
    transport = EgressTransport(POLICY, max_response_bytes=CAP, per_address=True)
    request = httpx.Request(
        method, url, headers=headers, content=body, extensions={"timeout": limits.as_dict()}
    )
    try:
        response = await transport.handle_async_request(request)
        try:
            await response.aread()
        finally:
            await response.aclose()
        return response
    except httpx.TimeoutException as exc:
        exc.request = request  # as the proxy's _send attached it
        raise
    finally:
        await transport.aclose()


async def _ours(
    method: str, url: httpx.URL, headers: list[tuple[bytes, bytes]], body: bytes
) -> httpx.Response:
    client = Http1Client(POLICY, max_response_bytes=CAP)
    try:
        reply = await client.send(method, POLICY.check_url(url), url.raw_path, headers, body, LIMITS)
        response = reply.response()
        # The text the proxy reads (headers(), header()) is what httpx reads from the same bytes.
        assert [(n.lower(), v) for n, v in reply.headers()] == response.headers.multi_items()
        assert reply.header("Location") == response.headers.get("location")
        assert reply.header("x-thing") == response.headers.get("x-thing")
        return response
    finally:
        await client.aclose()


async def _outcome(
    send: Callable[..., object],
    upstream: Upstream,
    method: str,
    headers: list[tuple[bytes, bytes]],
    body: bytes,
) -> tuple[object, list[bytes]]:
    upstream.received.clear()
    url = httpx.URL(f"http://127.0.0.1:{upstream.port}/api/items?q=1&b=%20x")
    try:
        response = await send(method, url, headers, body)  # type: ignore[misc]
    except (httpx.HTTPError, EgressRefused) as exc:
        return type(exc).__name__, list(upstream.received)
    assert isinstance(response, httpx.Response)
    return (response.status_code, response.headers.multi_items(), response.content), list(upstream.received)


REQUESTS = [
    ("GET", [(b"User-Agent", b"workbench/0.1"), (b"Accept", b"application/json")], b""),
    ("HEAD", [(b"User-Agent", b"workbench/0.1")], b""),
    (
        "POST",
        [(b"User-Agent", b"curl/8"), (b"Content-Type", b"application/json"), (b"X-Api-Key", b"k")],
        JSON,
    ),
    ("POST", [(b"User-Agent", b"workbench/0.1")], b""),
    ("PUT", [(b"User-Agent", b"workbench/0.1"), (b"If-Match", b'"v1"')], b"x" * 70_000),
    ("PATCH", [(b"User-Agent", b"workbench/0.1")], b""),
    ("DELETE", [(b"User-Agent", b"workbench/0.1"), (b"Authorization", b"Bearer s3cret")], b""),
    ("OPTIONS", [(b"User-Agent", b"workbench/0.1"), (b"Accept-Encoding", b"br")], b""),
]


@pytest.mark.parametrize("name", list(ANSWERS))
async def test_every_answer_reads_as_the_oracle_reads_it(upstream: Upstream, name: str) -> None:
    upstream.answer = ANSWERS[name]
    upstream.close_after = name in CLOSES
    for method, headers, body in REQUESTS if name in ("content-length", "chunked", "gzip") else REQUESTS[:3]:
        theirs, their_wire = await _outcome(_oracle, upstream, method, headers, body)
        ours, our_wire = await _outcome(_ours, upstream, method, headers, body)
        assert ours == theirs, (name, method)
        assert our_wire == their_wire, (name, method)  # byte for byte what the upstream received


@pytest.mark.parametrize(
    "headers",
    [
        [(b"X-Bad", b"line\r\nInjected: yes")],
        [(b"X-Bad", b"nul\x00")],
        [(b"Bad Name", b"v")],
        [(b"", b"v")],
        [(b"X-Trailing-Space", b"v ")],
    ],
)
async def test_a_header_h11_refuses_is_refused_and_nothing_is_sent(
    upstream: Upstream, headers: list[tuple[bytes, bytes]]
) -> None:
    upstream.answer = ANSWERS["content-length"]
    theirs, their_wire = await _outcome(_oracle, upstream, "GET", headers, b"")
    ours, our_wire = await _outcome(_ours, upstream, "GET", headers, b"")
    assert ours == theirs == "LocalProtocolError"
    assert our_wire == their_wire == []


async def test_a_kept_connection_is_reused_and_one_the_upstream_wrote_to_while_idle_is_not(
    upstream: Upstream,
) -> None:
    upstream.answer = ANSWERS["content-length"]
    client = Http1Client(POLICY, max_response_bytes=CAP)
    url = httpx.URL(f"http://127.0.0.1:{upstream.port}/x")
    try:
        for _ in range(3):
            assert (
                await client.send("GET", POLICY.check_url(url), url.raw_path, [], b"", LIMITS)
            ).status == 200
        assert len(set(upstream.peers)) == 1  # one connection for the three
        # An answer nobody asked for arrives while the connection is idle: it is dropped.
        upstream.answer = ANSWERS["content-length"] * 2
        assert (await client.send("GET", POLICY.check_url(url), url.raw_path, [], b"", LIMITS)).status == 200
        await asyncio.sleep(0.05)
        upstream.answer = ANSWERS["content-length"]
        assert (
            await client.send("GET", POLICY.check_url(url), url.raw_path, [], b"", LIMITS)
        ).content == JSON
        assert len(set(upstream.peers)) == 2  # the extra answer was never read as this one's
        # A connection answered with "Connection: close" is not kept.
        upstream.answer, upstream.close_after = ANSWERS["connection close"], True
        await client.send("GET", POLICY.check_url(url), url.raw_path, [], b"", LIMITS)
        upstream.answer, upstream.close_after = ANSWERS["content-length"], False
        await client.send("GET", POLICY.check_url(url), url.raw_path, [], b"", LIMITS)
        a, b, c = dict.fromkeys(upstream.peers)
        assert upstream.peers == [a, a, a, a, b, b, c]
    finally:
        await client.aclose()


async def test_a_connection_idle_past_the_keepalive_time_is_not_reused(
    upstream: Upstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    import workbench.guard.http1 as http1

    upstream.answer = ANSWERS["content-length"]
    client = Http1Client(POLICY, max_response_bytes=CAP)
    url = httpx.URL(f"http://127.0.0.1:{upstream.port}/x")
    now = [1000.0]
    monkeypatch.setattr(http1.time, "monotonic", lambda: now[0])
    try:
        await client.send("GET", POLICY.check_url(url), url.raw_path, [], b"", LIMITS)
        now[0] += KEEPALIVE_SECONDS - 0.1
        await client.send("GET", POLICY.check_url(url), url.raw_path, [], b"", LIMITS)
        now[0] += KEEPALIVE_SECONDS + 0.1
        await client.send("GET", POLICY.check_url(url), url.raw_path, [], b"", LIMITS)
        assert len(set(upstream.peers[:2])) == 1 and upstream.peers[2] != upstream.peers[1]
    finally:
        await client.aclose()


async def test_timeouts_and_refusals_are_the_oracles_errors_with_its_limits(upstream: Upstream) -> None:
    from workbench.errors import upstream_timeout

    upstream.answer = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nonly"  # then silence
    limits = httpx.Timeout(0.3, connect=1.0)
    url = httpx.URL(f"http://127.0.0.1:{upstream.port}/slow")
    client = Http1Client(POLICY, max_response_bytes=CAP)
    try:
        with pytest.raises(httpx.ReadTimeout) as ours:
            await client.send("GET", POLICY.check_url(url), url.raw_path, [], b"", limits)
        with pytest.raises(httpx.ReadTimeout) as theirs:
            await _oracle("GET", url, [], b"", limits)
        assert (
            str(upstream_timeout(ours.value))
            == str(upstream_timeout(theirs.value))
            == "Upstream timed out after 0.3 s"
        )

        closed = httpx.URL("http://127.0.0.1:9/")  # nothing listens on the discard port
        with pytest.raises(httpx.ConnectError):
            await client.send("GET", POLICY.check_url(closed), b"/", [], b"", limits)
        # The policy refuses what the oracle refuses, before any connection.
        public = EgressPolicy(allow="public")
        public_only = Http1Client(public, max_response_bytes=CAP)
        on_loopback = POLICY.check_url(f"https://127.0.0.1:{upstream.port}/")
        with pytest.raises(EgressRefused, match="loopback"):  # its answer is checked on every call
            await public_only.send("GET", on_loopback, b"/", [], b"", limits)
        resolver_moved = EgressPolicy(allow="public", resolver=_answers("127.0.0.1"))
        with pytest.raises(EgressRefused, match="loopback"):
            await Http1Client(resolver_moved, max_response_bytes=CAP).send(
                "GET", resolver_moved.check_url("https://api.example.com/"), b"/", [], b"", limits
            )
    finally:
        await client.aclose()


async def test_a_cancelled_request_leaves_no_connection_behind(upstream: Upstream) -> None:
    upstream.answer = b""  # never answers
    client = Http1Client(POLICY, max_response_bytes=CAP)
    url = httpx.URL(f"http://127.0.0.1:{upstream.port}/hang")
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.2):
            await client.send("GET", POLICY.check_url(url), url.raw_path, [], b"", httpx.Timeout(5.0))
    assert upstream.received  # it was sent, and then cut
    assert client._idle == {}
    await client.aclose()


async def test_a_response_head_over_100_kib_is_refused(upstream: Upstream) -> None:
    """Deliberately stricter than the oracle: h11 reads a complete head of any size that arrives in
    one piece (and only bounds one still incomplete at 100 KiB); this client bounds both."""
    upstream.answer = b"HTTP/1.1 200 OK\r\nX-Long: " + b"a" * (101 * 1024) + b"\r\nContent-Length: 0\r\n\r\n"
    ours, _ = await _outcome(_ours, upstream, "GET", [], b"")
    assert ours == "RemoteProtocolError"


def test_a_plain_target_is_sent_as_httpx_would_send_it() -> None:
    """The proxy builds a plain request target itself (no httpx.URL parse per request); over every
    character a caller can send, in paths and queries, it equals httpx's (the oracle)."""
    import random

    from workbench.proxy.app import _target

    base = httpx.URL("https://api.example.com/v1/")
    pieces = [chr(c) for c in range(0x21, 0x7F)] + [
        "%2e",
        "%2E",
        "%2f",
        "..",
        "/.",
        "%",
        "%zz",
        "%00",
        "//",
        "??",
    ]
    pieces += ["\x7f", "é", " ", "#"]
    rnd = random.Random(24)
    for _ in range(20_000):
        path = "/" + "".join(rnd.choice(pieces) for _ in range(rnd.randint(0, 10)))
        # What check_path lets through: printable ASCII; what follows a raw `?` is the query.
        path = path.split("?", 1)[0].encode("ascii", "ignore").decode().replace(" ", "")
        query = "".join(rnd.choice(pieces) for _ in range(rnd.randint(0, 8))) if rnd.random() < 0.5 else ""
        whole = (
            base.raw_path.rstrip(b"/")
            + path.encode("latin-1")
            + (b"?" + query.encode("latin-1") if query else b"")
        )
        try:
            expected: object = base.copy_with(raw_path=whole).raw_path
        except Exception as exc:
            expected = type(exc)
        try:
            ours: object = _target(base, path, query)
        except Exception as exc:
            ours = type(exc)
        assert ours == expected, (path, query)


@pytest.mark.parametrize("value", ["café".encode(), b"caf\xe9"])
async def test_a_non_ascii_response_header_comes_back_byte_for_byte(upstream: Upstream, value: bytes) -> None:
    """A deliberate difference: the oracle fails on a non-ASCII header value (EgressTransport rebuilds
    the response from text and httpx encodes header text as ASCII; the proxy answered 502); this
    client keeps the bytes, read as Latin-1 so that they go back unchanged."""
    upstream.answer = b"HTTP/1.1 200 OK\r\nX-Name: " + value + b"\r\nContent-Length: 0\r\n\r\n"
    url = httpx.URL(f"http://127.0.0.1:{upstream.port}/x")
    with pytest.raises(UnicodeEncodeError):
        await _oracle("GET", url, [], b"")
    client = Http1Client(POLICY, max_response_bytes=CAP)
    try:
        reply = await client.send("GET", POLICY.check_url(url), b"/x", [], b"", LIMITS)
    finally:
        await client.aclose()
    assert reply.fields[0] == (b"X-Name", value)
    assert reply.header("x-name") == value.decode("latin-1")
