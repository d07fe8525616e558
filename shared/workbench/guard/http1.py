"""The curl proxy's upstream leg and the transport under every plugin's `ctx.http`: HTTP/1.1 on
asyncio's own transports. For the proxy it replaces httpx + httpcore + h11 + anyio, which were about
half of its CPU per request (bench/proxy.py; cProfile in the closing note of issue 24); for plugins
(`Http1Transport`, under httpx's client) httpcore + h11 + anyio, a third of what a plugin's first
upstream call imported on a cold start (bench/cold_start.py). The egress rules are
EgressTransport's, applied the same way; the proxy's are those of `per_address=True`:

- every request resolves its host through the policy and checks EVERY answer
  (`EgressPolicy.resolve`); a kept connection is reused only when it goes to an address of that
  answer (connections are kept per (scheme, host, port, checked address)), so a name that now
  resolves elsewhere is refused or gets a new connection, never an old one;
- a new connection goes to the checked address; TLS keeps the host name (SNI and certificate
  verification against it) with the same SSL context httpx would build (`create_ssl_context`);
- an idle connection the upstream wrote to, or closed, is dropped, never reused; one idle for
  `KEEPALIVE_SECONDS` too; a response is read whole, decoded (gzip/deflate/identity, the egress
  module's bounded decoder) and capped at its DECODED size: past the cap, ResponseTooLarge and the
  connection is closed;
- responses are framed as RFC 9112 says and as h11 reads them (status line, header lines, obsolete
  line folding, Transfer-Encoding: chunked only, one Content-Length, no body for HEAD/204/304/1xx,
  else until the connection closes), strictly: anything ambiguous is a RemoteProtocolError and
  the connection is not reused. Request header names and values are checked as h11 checks them.

Errors are httpx's classes (ConnectError, ConnectTimeout, ReadTimeout, WriteTimeout,
RemoteProtocolError, LocalProtocolError, ReadError, WriteError, DecodingError) carrying a request
whose `timeout` extension names the limits, so callers map them exactly as they mapped httpx's.
tests/proxy/test_upstream_http1.py sends the same requests through this client and through
`EgressTransport` (httpx/httpcore, the oracle) against servers that answer every framing, encoding
and failure, and compares what the upstream received and what came back.
"""

from __future__ import annotations

import asyncio
import re
import ssl
import time
from dataclasses import dataclass
from typing import TypeVar, cast

import httpx

from workbench.guard.egress import (
    _ACCEPT_ENCODING,
    _MAX_ADDRESSES_TRIED,
    _MAX_POOLS,
    DEFAULT_MAX_RESPONSE_BYTES,
    CheckedUrl,
    EgressPolicy,
    ResponseTooLarge,
)
from workbench.guard.egress_transport import _Decoder

__all__ = ["KEEPALIVE_SECONDS", "Http1Client", "Http1Transport", "Reply"]

KEEPALIVE_SECONDS = 5.0  # httpcore's keepalive_expiry in EgressTransport
_MAX_IDLE_PER_ADDRESS = 20  # httpcore's max_keepalive_connections
_MAX_HEAD = 100 * 1024  # httpcore's h11 max_incomplete_event_size
_READ_SIZE = 64 * 1024

# h11's grammar (h11/_abnf.py), as bytes.
_TOKEN = re.compile(rb"[-!#$%&'*+.^_`|~0-9a-zA-Z]+")
_FIELD_VALUE = re.compile(rb"(?:[^\x00\s]+(?:[ \t]+[^\x00\s]+)*)?")
_HEADER_LINE = re.compile(
    rb"(?P<name>[-!#$%&'*+.^_`|~0-9a-zA-Z]+):[ \t]*(?P<value>(?:[^\x00\s]+(?:[ \t]+[^\x00\s]+)*)?)[ \t]*"
)
_STATUS_LINE = re.compile(
    rb"HTTP/(?P<version>[0-9]\.[0-9]) (?P<status>[0-9]{3})(?: (?P<reason>[ \t\x21-\xff]*))?"
)
_CHUNK_HEADER = re.compile(rb"(?P<size>[0-9A-Fa-f]{1,20})(?:;.*)?[ \t]*")
_CONTENT_LENGTH = re.compile(rb"[0-9]+")
_TARGET = re.compile(rb"[\x21-\x7e]+")
_FOLD = re.compile(rb"[ \t]+")
_HEAD_END = re.compile(rb"\n\r?\n")
_NO_BODY_STATUS = (204, 304)
E = TypeVar("E", bound=httpx.RequestError)


@dataclass(slots=True)
class Reply:
    """A whole upstream response: status, header pairs as received (bytes), the decoded body."""

    status: int
    fields: list[tuple[bytes, bytes]]
    content: bytes
    version: bytes = b"1.1"  # of the status line: HTTP/1.1 or HTTP/1.0
    reason: bytes = b""  # the status line's reason phrase, as sent

    def headers(self) -> list[tuple[str, str]]:
        """The header pairs as text, byte for byte (Latin-1). (httpx decodes ASCII, else UTF-8, else
        Latin-1, and then could not build a response from a non-ASCII value: the proxy answered 502
        to any such header. Read as Latin-1, the bytes go back to the caller as they came.)"""
        return [(n.decode("latin-1"), v.decode("latin-1")) for n, v in self.fields]

    def header(self, name: str) -> str | None:
        """One header's value (several joined with ", ", as httpx's Headers.get does), or None."""
        lname = name.lower()
        values = [v for n, v in self.headers() if n.lower() == lname]
        return ", ".join(values) if values else None

    def response(self) -> httpx.Response:
        """As an httpx.Response read whole, with the headers as received (no Content-Length added)."""
        response = httpx.Response(self.status, headers=self.fields, stream=httpx.ByteStream(self.content))
        response.read()
        return response


class _Conn(asyncio.Protocol):
    """One upstream connection: bytes in a buffer, a waiter for more, write flow control."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buf = bytearray()
        self.eof = False
        self.closed = False
        self.idle = False
        self.idle_since = 0.0
        self._waiter: asyncio.Future[None] | None = None
        self._drain: asyncio.Future[None] | None = None
        self._paused = False

    # -- asyncio.Protocol --------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's are not asyncio.Transport subclasses

    def data_received(self, data: bytes) -> None:
        if self.idle:  # the upstream wrote while nothing was asked: never reuse this connection
            self.close()
            return
        self.buf += data
        self._wake()

    def eof_received(self) -> bool:
        self.eof = True
        self._wake()
        return False  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.eof = True
        self._wake()
        drain, self._drain = self._drain, None
        if drain is not None and not drain.done():
            drain.set_result(None)

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        drain, self._drain = self._drain, None
        if drain is not None and not drain.done():
            drain.set_result(None)

    # -- use ------------------------------------------------------------------------------------------

    def _wake(self) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def reusable(self, now: float) -> bool:
        return not (self.closed or self.eof or self.buf) and now - self.idle_since < KEEPALIVE_SECONDS

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    def abort(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.abort()

    async def write(self, data: bytes, seconds: float | None, request: _Call) -> None:
        if self.closed or self.transport is None:
            raise request.error(httpx.WriteError, "the upstream closed the connection")
        self.transport.write(data)
        if self._paused:
            loop = asyncio.get_running_loop()
            self._drain = loop.create_future()
            try:
                async with asyncio.timeout(seconds):
                    await self._drain
            except TimeoutError:
                raise request.error(httpx.WriteTimeout, "timed out writing the request") from None
            if self.closed:
                raise request.error(httpx.WriteError, "the upstream closed the connection")

    async def more(self, seconds: float | None, request: _Call) -> bool:
        """Wait for more bytes; False once the upstream closed (or half-closed) its side."""
        if self.eof:
            return False
        loop = asyncio.get_running_loop()
        waiter = self._waiter = loop.create_future()
        # One timer per wait (lighter than asyncio.timeout's per-task bookkeeping on this hot path).
        timer = loop.call_later(seconds, _expire, waiter) if seconds is not None else None
        try:
            await waiter
        except TimeoutError:
            raise request.error(httpx.ReadTimeout, "timed out reading the upstream's answer") from None
        finally:
            if timer is not None:
                timer.cancel()
            if self._waiter is waiter:
                self._waiter = None
        return True


def _expire(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_exception(TimeoutError())


class Http1Client:
    """Sends one request at a time per connection and reads its answer whole (see the module
    docstring). One per proxy; its connections belong to the event loop that opened them."""

    def __init__(
        self,
        policy: EgressPolicy,
        *,
        max_response_bytes: int,
        verify: ssl.SSLContext | None = None,
        per_address: bool = True,
    ) -> None:
        self.policy = policy
        self.max_response_bytes = max_response_bytes
        self.per_address = per_address
        # Which connect failures move on to the host's next checked address: EgressTransport's,
        # whose per-address pools try one address each, and whose per-host backend tries each in turn.
        self._failover: tuple[type[httpx.RequestError], ...] = (
            (httpx.ConnectError,) if per_address else (httpx.ConnectError, httpx.ConnectTimeout)
        )
        self._verify = verify
        self._ssl: ssl.SSLContext | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        # (scheme, host, port, checked address or "" when kept per host) -> idle connections, most
        # recently used last; the least recently used key goes past _MAX_POOLS.
        self._idle: dict[tuple[str, str, int, str], list[_Conn]] = {}

    async def send(
        self,
        method: str,
        origin: CheckedUrl,
        target: bytes,
        headers: list[tuple[bytes, bytes]],
        body: bytes,
        limits: httpx.Timeout,
    ) -> Reply:
        """`target` (path and query, as httpx would send them) on `origin`, a URL that passed the
        policy's URL checks (`check_url`: its scheme, host and port are where the request goes).
        The host is resolved and every answer checked here, on every call (`per_address`), or when
        a new connection is made (connections kept per host name). `headers` are sent as
        given, after Host and before Content-Length and Accept-Encoding (the order httpx gives them)."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self._loop, self._idle = loop, {}
        checked = origin
        request = _Call(method, origin.url, target, limits)
        head = _request_head(method, origin.url.netloc, target, headers, body, request)
        key = (checked.scheme, checked.host, checked.port, "")
        conn: _Conn | None = None
        if not self.per_address:  # a kept connection to this host goes on without a new answer
            conn = self._kept(key)
            if conn is not None:
                return await self._exchange(conn, key, method, head, body, request)
        addresses = await self.policy.resolve(checked.host, checked.port)
        failure: httpx.RequestError | None = None
        for address in addresses[:_MAX_ADDRESSES_TRIED]:  # every one was checked above
            if self.per_address:
                key = (checked.scheme, checked.host, checked.port, address)
                conn = self._kept(key)
            if conn is None:
                try:
                    conn = await self._connect(checked.scheme, checked.host, address, checked.port, request)
                except self._failover as exc:  # nothing was sent: the next checked address may answer
                    failure = exc
                    continue
            return await self._exchange(conn, key, method, head, body, request)
        assert failure is not None
        raise failure

    def _kept(self, key: tuple[str, str, int, str]) -> _Conn | None:
        idle = self._idle.pop(key, None)
        if idle is None:
            return None
        now = time.monotonic()
        conn = None
        while idle:
            candidate = idle.pop()
            if candidate.reusable(now):
                conn = candidate
                break
            candidate.close()
        if idle:
            self._idle[key] = idle  # most recently used last
        if conn is not None:
            conn.idle = False
        return conn

    def _keep(self, key: tuple[str, str, int, str], conn: _Conn) -> None:
        conn.idle, conn.idle_since = True, time.monotonic()
        idle = self._idle.pop(key, None) or []
        idle.append(conn)
        if len(idle) > _MAX_IDLE_PER_ADDRESS:
            idle.pop(0).close()
        self._idle[key] = idle
        if len(self._idle) > _MAX_POOLS:
            for old in self._idle.pop(next(iter(self._idle))):
                old.close()

    async def _connect(self, scheme: str, host: str, address: str, port: int, request: _Call) -> _Conn:
        loop = asyncio.get_running_loop()
        target, target_port = self.policy.route(address, port) if self.policy.route else (address, port)
        tls: ssl.SSLContext | None = None
        if scheme == "https":
            if self._ssl is None:  # built on first use: loading the CA bundle costs tens of milliseconds
                self._ssl = self._verify or httpx.create_ssl_context()
            tls = self._ssl
        limit = request.connect
        try:
            async with asyncio.timeout(limit):
                _, conn = await loop.create_connection(
                    _Conn,
                    target,
                    target_port,
                    ssl=tls,
                    server_hostname=host if tls is not None else None,
                    ssl_handshake_timeout=limit if tls is not None and limit else None,
                )
        except TimeoutError:
            raise request.error(httpx.ConnectTimeout, "timed out connecting to the upstream") from None
        except (OSError, ssl.SSLError) as exc:
            raise request.error(httpx.ConnectError, str(exc) or type(exc).__name__) from exc
        return conn

    async def _exchange(
        self,
        conn: _Conn,
        key: tuple[str, str, int, str],
        method: str,
        head: bytes,
        body: bytes,
        request: _Call,
    ) -> Reply:
        try:
            await conn.write(head + body if len(body) < _READ_SIZE else head, request.write, request)
            if len(body) >= _READ_SIZE:
                await conn.write(body, request.write, request)
            reply, reusable = await self._read(conn, method, request)
        except BaseException:
            conn.abort()  # cancelled, timed out or broken: nothing of it runs on or is reused
            raise
        if reusable and not (conn.closed or conn.eof or conn.buf):  # nothing unasked-for arrived
            self._keep(key, conn)
        else:
            conn.close()
        return reply

    async def _read(self, conn: _Conn, method: str, request: _Call) -> tuple[Reply, bool]:
        read = request.read
        while True:
            version, status, reason, fields = await _read_head(conn, read, request)
            if status >= 200:
                break
            if status == 101:
                raise request.error(httpx.RemoteProtocolError, "the upstream switched protocols")
            # 1xx informational: skipped, as httpcore does
        names = [(name.lower(), value) for name, value in fields]
        connection = {t.strip().lower() for n, v in names if n == b"connection" for t in v.split(b",")}
        reusable = version == b"1.1" and b"close" not in connection
        decoder = _decoder(fields, request)
        # The framing headers are checked on every response (h11 does, even where no body follows).
        encodings = [v for n, v in names if n == b"transfer-encoding"]
        if encodings and (len(encodings) > 1 or encodings[0].lower() != b"chunked"):
            raise request.error(
                httpx.RemoteProtocolError, "the upstream used a transfer coding other than chunked"
            )
        lengths = [v for n, v in names if n == b"content-length"]
        length = _content_length(lengths, request) if lengths else None
        if method == "HEAD" or status in _NO_BODY_STATUS:
            content = b""
        elif encodings:
            if length is not None:  # both framings: read as chunked (RFC 9112 6.3), never reuse
                reusable = False
            content = await self._chunked(conn, decoder, read, request)
        elif length is not None:
            content = await self._sized(conn, decoder, length, read, request)
        else:
            reusable = False
            content = await self._until_close(conn, decoder, read, request)
        if lengths or encodings:
            fields = _normalized(fields, length)
        if not decoder.identity:  # what was decoded no longer has its coding or length
            fields = [f for f in fields if f[0].lower() not in (b"content-encoding", b"content-length")]
        return Reply(status, fields, content, version, reason), reusable

    async def _sized(
        self, conn: _Conn, decoder: _Decoder, length: int, read: float | None, request: _Call
    ) -> bytes:
        out = _Body(decoder, self.max_response_bytes)
        while length:
            if not conn.buf and not await conn.more(read, request):
                raise request.error(
                    httpx.RemoteProtocolError,
                    "the upstream closed the connection before the whole body arrived",
                )
            take = min(length, len(conn.buf))
            out.add(bytes(conn.buf[:take]))
            del conn.buf[:take]
            length -= take
        return out.done()

    async def _until_close(self, conn: _Conn, decoder: _Decoder, read: float | None, request: _Call) -> bytes:
        out = _Body(decoder, self.max_response_bytes)
        while True:
            if conn.buf:
                out.add(bytes(conn.buf))
                conn.buf.clear()
            if not await conn.more(read, request):
                if conn.buf:
                    out.add(bytes(conn.buf))
                    conn.buf.clear()
                return out.done()

    async def _chunked(self, conn: _Conn, decoder: _Decoder, read: float | None, request: _Call) -> bytes:
        out = _Body(decoder, self.max_response_bytes)
        while True:
            line = await _read_line(conn, read, request)
            match = _CHUNK_HEADER.fullmatch(line)
            if match is None:
                raise request.error(httpx.RemoteProtocolError, "the upstream sent a bad chunk header")
            size = int(match["size"], 16)
            if size == 0:
                while await _read_line(conn, read, request):  # trailers, until the empty line
                    pass
                return out.done()
            while size:
                if not conn.buf and not await conn.more(read, request):
                    raise request.error(
                        httpx.RemoteProtocolError, "the upstream closed the connection inside a chunk"
                    )
                take = min(size, len(conn.buf))
                out.add(bytes(conn.buf[:take]))
                del conn.buf[:take]
                size -= take
            if await _read_line(conn, read, request):
                raise request.error(
                    httpx.RemoteProtocolError, "the upstream sent a chunk longer than it said"
                )

    async def aclose(self) -> None:
        idle, self._idle = self._idle, {}
        for conns in idle.values():
            for conn in conns:
                conn.close()


class Http1Transport(httpx.AsyncBaseTransport):
    """An httpx transport on `Http1Client`: what a plugin's `ctx.http` (an httpx.AsyncClient, the
    plugin API) sends through. A plugin's first upstream call then imports neither httpcore, h11 nor
    anyio, and builds the SSL context (the CA bundle) only when an https URL first needs it.

    The egress rules are EgressTransport's, applied by the client: the URL checked on every request
    (so on every redirect hop a client follows); when a new connection is made, the host resolved
    once, every answer checked, and a checked address connected to (each in turn), with TLS
    verified for the host name; connections kept per host name (`per_address=True`: the host
    resolved on every request, a kept connection reused only to an address of that answer); the
    decoded body capped. `retries` more connection attempts follow a failed one (nothing was
    sent), as httpcore's `retries` did. The answer is read whole before the client sees it (a
    streamed response reads from memory, capped as before); a request body is sent whole (a streamed
    one is read first, and sent as one chunk when the request says Transfer-Encoding: chunked).
    tests/egress/test_plugin_transport.py holds it to EgressTransport (httpx/httpcore, the oracle)
    through an httpx client, as plugins use it."""

    def __init__(
        self,
        policy: EgressPolicy,
        *,
        retries: int = 0,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        verify: ssl.SSLContext | None = None,
        per_address: bool = False,
    ) -> None:
        self.policy = policy
        self.retries = retries
        self._client = Http1Client(
            policy, max_response_bytes=max_response_bytes, verify=verify, per_address=per_address
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        checked = self.policy.check_url(url)
        body = await request.aread()
        headers = request.headers.raw
        if any(name.lower() == b"transfer-encoding" for name, _ in headers):
            body = (b"%x\r\n%s\r\n" % (len(body), body) if body else b"") + b"0\r\n\r\n"
        timeout = request.extensions.get("timeout")
        limits = httpx.Timeout(**timeout) if timeout else _NO_LIMITS
        attempts = self.retries
        while True:
            try:
                reply = await self._client.send(request.method, checked, url.raw_path, headers, body, limits)
                break
            except (httpx.ConnectError, httpx.ConnectTimeout):
                if attempts <= 0:
                    raise
                attempts -= 1
        return httpx.Response(
            reply.status,
            # Names in lower case, as EgressTransport passed them on (values byte for byte: a
            # non-ASCII one, which EgressTransport failed on, reaches the plugin as sent).
            headers=[(name.lower(), value) for name, value in reply.fields],
            stream=httpx.ByteStream(reply.content),
            extensions={"http_version": b"HTTP/" + reply.version, "reason_phrase": reply.reason},
        )

    async def aclose(self) -> None:
        await self._client.aclose()


_NO_LIMITS = httpx.Timeout(None)


class _Body:
    """Decoded pieces, counted against the cap as they arrive."""

    def __init__(self, decoder: _Decoder, cap: int) -> None:
        self.decoder = decoder
        self.cap = cap
        self.size = 0
        self.parts: list[bytes] = []

    def add(self, raw: bytes) -> None:
        for piece in self.decoder.decode(raw):
            self._take(piece)

    def _take(self, piece: bytes) -> None:
        self.size += len(piece)
        if self.size > self.cap:
            raise ResponseTooLarge(self.cap)
        self.parts.append(piece)

    def done(self) -> bytes:
        for piece in self.decoder.flush():
            self._take(piece)
        return self.parts[0] if len(self.parts) == 1 else b"".join(self.parts)


class _Call:
    """One request's limits, and the httpx.Request its errors carry (built only for an error: the
    limits in its `timeout` extension, as a client would attach them)."""

    __slots__ = ("connect", "method", "origin", "read", "target", "timeout", "write")

    def __init__(self, method: str, origin: httpx.URL, target: bytes, timeout: httpx.Timeout) -> None:
        self.method, self.origin, self.target, self.timeout = method, origin, target, timeout
        self.connect, self.read, self.write = timeout.connect, timeout.read, timeout.write

    def error(self, kind: type[E], message: str) -> E:
        try:
            url = self.origin.copy_with(raw_path=self.target)
        except (httpx.InvalidURL, UnicodeError):
            url = self.origin
        request = httpx.Request(self.method, url, extensions={"timeout": self.timeout.as_dict()})
        return kind(message, request=request)


def _request_head(
    method: str,
    netloc: bytes,
    target: bytes,
    headers: list[tuple[bytes, bytes]],
    body: bytes,
    request: _Call,
) -> bytes:
    """The request line and header block, in the order and form httpx + h11 send them."""
    if _TOKEN.fullmatch(method.encode("ascii", "replace")) is None or _TARGET.fullmatch(target) is None:
        raise request.error(httpx.LocalProtocolError, "illegal request line")
    lines = [b"%s %s HTTP/1.1" % (method.encode("ascii"), target)]
    names = {name.lower() for name, _ in headers}
    if b"host" not in names:
        lines.append(b"Host: " + netloc)
    framed = names & {b"content-length", b"transfer-encoding"}  # a body already chunked is the caller's
    if body:
        framing = [(b"Content-Length", str(len(body)).encode())] if not framed else []
    else:
        framing = []
        if method in ("POST", "PUT", "PATCH") and not framed:
            lines.append(b"Content-Length: 0")
    encoding = b"Accept-Encoding: " + _ACCEPT_ENCODING.encode()  # only what the decoder bounds
    for name, value in (*headers, *framing):
        if name.lower() == b"accept-encoding":
            # In the place of the first one asked for, the others dropped (httpx's headers[...] = ...).
            if encoding:
                lines.append(encoding)
                encoding = b""
            continue
        if _TOKEN.fullmatch(name) is None or _FIELD_VALUE.fullmatch(value) is None:
            raise request.error(httpx.LocalProtocolError, f"Illegal header name or value {name!r}")
        lines.append(name + b": " + value)
    if encoding:
        lines.append(encoding)
    lines.append(b"\r\n")
    return b"\r\n".join(lines)


async def _read_head(
    conn: _Conn, read: float | None, request: _Call
) -> tuple[bytes, int, bytes, list[tuple[bytes, bytes]]]:
    while True:
        end = _HEAD_END.search(conn.buf)
        if end is not None:
            break
        if len(conn.buf) > _MAX_HEAD:
            raise request.error(httpx.RemoteProtocolError, "the upstream's response head is too long")
        if not await conn.more(read, request):
            raise request.error(httpx.RemoteProtocolError, "Server disconnected without sending a response.")
    head = bytes(conn.buf[: end.start()])
    del conn.buf[: end.end()]
    if len(head) > _MAX_HEAD:
        raise request.error(httpx.RemoteProtocolError, "the upstream's response head is too long")
    lines = [line[:-1] if line.endswith(b"\r") else line for line in head.split(b"\n")]
    status_line = _STATUS_LINE.fullmatch(lines[0])
    if status_line is None:
        raise request.error(httpx.RemoteProtocolError, f"illegal status line: {lines[0][:100]!r}")
    fields: list[tuple[bytes, bytes]] = []
    for line in _unfold(lines[1:], request):
        match = _HEADER_LINE.fullmatch(line)
        if match is None:
            raise request.error(httpx.RemoteProtocolError, f"illegal header line: {line[:100]!r}")
        fields.append((match["name"], match["value"]))
    return status_line["version"], int(status_line["status"]), status_line["reason"] or b"", fields


def _unfold(lines: list[bytes], request: _Call) -> list[bytes]:
    """Obsolete line folding joined with one space, as h11 reads it."""
    out: list[bytes] = []
    for line in lines:
        fold = _FOLD.match(line)
        if fold is None:
            out.append(line)
        elif not out:
            raise request.error(httpx.RemoteProtocolError, "continuation line at start of headers")
        else:
            out[-1] = out[-1] + b" " + line[fold.end() :]
    return out


async def _read_line(conn: _Conn, read: float | None, request: _Call) -> bytes:
    while True:
        end = conn.buf.find(b"\n")
        if end >= 0:
            line = bytes(conn.buf[:end])
            del conn.buf[: end + 1]
            return line[:-1] if line.endswith(b"\r") else line
        if len(conn.buf) > _MAX_HEAD:
            raise request.error(httpx.RemoteProtocolError, "the upstream sent an overlong chunk line")
        if not await conn.more(read, request):
            raise request.error(
                httpx.RemoteProtocolError, "the upstream closed the connection in a chunked body"
            )


def _content_length(values: list[bytes], request: _Call) -> int:
    lengths = {part.strip() for value in values for part in value.split(b",")}
    if len(lengths) != 1:
        raise request.error(httpx.RemoteProtocolError, "conflicting Content-Length headers")
    value = lengths.pop()
    if _CONTENT_LENGTH.fullmatch(value) is None or len(value) > 20:
        raise request.error(httpx.RemoteProtocolError, "bad Content-Length")
    return int(value)


def _normalized(fields: list[tuple[bytes, bytes]], length: int | None) -> list[tuple[bytes, bytes]]:
    """The framing headers as h11 passes them on: one Content-Length with its one value (`2, 2` is
    `2`), Transfer-Encoding in lower case."""
    out: list[tuple[bytes, bytes]] = []
    seen = False
    for name, value in fields:
        lname = name.lower()
        if lname == b"content-length":
            if seen:
                continue
            seen, value = True, str(length).encode()
        elif lname == b"transfer-encoding":
            value = value.lower()
        out.append((name, value))
    return out


def _decoder(fields: list[tuple[bytes, bytes]], request: _Call) -> _Decoder:
    encodings = [v.decode("latin-1") for n, v in fields if n.lower() == b"content-encoding"]
    return _Decoder.for_encoding(", ".join(encodings))
