"""The egress policy's httpx transport: `EgressTransport(policy)` and what it is built from.

Apart from workbench.guard.egress (the policy: URL and address checks, which import no HTTP
client), so a path that holds a policy but sends nothing through httpx (a search, a custom app
registry read) does not import httpx with it. The rules it applies are the module docstring of
workbench.guard.egress.
"""

from __future__ import annotations

import asyncio
import ssl
import zlib
from collections.abc import AsyncIterable, AsyncIterator, Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

import httpx

from workbench.guard.egress import (
    _ACCEPT_ENCODING,
    _CHUNK,
    _MAX_ADDRESSES_TRIED,
    _MAX_POOLS,
    DEFAULT_MAX_RESPONSE_BYTES,
    CheckedUrl,
    EgressPolicy,
    EgressRefused,
    ResponseTooLarge,
)

__all__ = ["EgressTransport", "httpcore_errors", "read_bounded"]


class _PinnedBackend:
    """An httpcore network backend that resolves through the policy and connects to a checked
    address. The connection pool passes the URL's host name here and uses it for SNI itself.
    With `address`, it connects to that one address (already checked) without resolving."""

    def __init__(self, policy: EgressPolicy, address: str | None = None) -> None:
        import httpcore

        self.policy = policy
        self.address = address
        self._net = httpcore.AnyIOBackend()
        self._connect_errors = (httpcore.ConnectError, httpcore.ConnectTimeout)

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109  (httpcore's backend interface)
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> Any:
        addresses = [self.address] if self.address is not None else await self.policy.resolve(host, port)
        failure: Exception | None = None
        for address in addresses[:_MAX_ADDRESSES_TRIED]:  # every one was checked above
            target, target_port = self.policy.route(address, port) if self.policy.route else (address, port)
            try:
                return await self._net.connect_tcp(
                    target, target_port, timeout, local_address, socket_options
                )
            except self._connect_errors as exc:
                failure = exc
        assert failure is not None
        raise failure

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109  (httpcore's backend interface)
        socket_options: Any = None,
    ) -> Any:
        raise EgressRefused("Refused: unix sockets are not an egress destination")

    async def sleep(self, seconds: float) -> None:
        await self._net.sleep(seconds)


class _PinnedTransport(httpx.AsyncBaseTransport):
    """An httpx transport over an httpcore connection pool whose network backend is `_PinnedBackend`.

    httpx builds its own pool with no way to pass a network backend, so this is the few lines of
    `httpx.AsyncHTTPTransport` an HTTP/1.1 pool needs, written against httpcore's public API only
    (`AsyncConnectionPool(network_backend=...)`, `Request`, its exception classes): an httpx release
    that moves its internals cannot unpin the door. tests/egress/test_pinned_transport.py holds the
    exception mapping to httpx's own and the pool to httpx's transport on the same requests.
    """

    def __init__(
        self, policy: EgressPolicy, ssl_context: ssl.SSLContext, retries: int, address: str | None = None
    ) -> None:
        import httpcore

        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context,
            max_connections=100,
            max_keepalive_connections=20,
            keepalive_expiry=5.0,
            retries=retries,
            network_backend=_PinnedBackend(policy, address),  # type: ignore[arg-type]
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        import httpcore

        assert isinstance(request.stream, httpx.AsyncByteStream)
        url = request.url
        core_request = httpcore.Request(
            method=request.method,
            url=httpcore.URL(scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        with httpcore_errors():
            answer = await self._pool.handle_async_request(core_request)
        assert isinstance(answer.stream, AsyncIterable)
        return httpx.Response(
            answer.status,
            headers=answer.headers,
            stream=_CoreStream(answer.stream),
            extensions=answer.extensions,
        )

    async def aclose(self) -> None:
        await self._pool.aclose()


class _CoreStream(httpx.AsyncByteStream):
    def __init__(self, stream: AsyncIterable[bytes]) -> None:
        self._stream = stream

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with httpcore_errors():
            async for part in self._stream:
                yield part

    async def aclose(self) -> None:
        close = getattr(self._stream, "aclose", None)
        if close is not None:
            await close()


@contextmanager
def httpcore_errors() -> Iterator[None]:
    """httpcore's exceptions as the httpx ones of the same name (the most specific that applies)."""
    try:
        yield
    except Exception as exc:
        mapped = next((theirs for ours, theirs in _error_map() if isinstance(exc, ours)), None)
        if mapped is None:
            raise
        raise mapped(str(exc)) from exc


@cache
def _error_map() -> tuple[tuple[type[Exception], type[httpx.HTTPError]], ...]:
    import httpcore

    # Subclasses before their bases: the first match is the most specific.
    return (
        (httpcore.ConnectTimeout, httpx.ConnectTimeout),
        (httpcore.ReadTimeout, httpx.ReadTimeout),
        (httpcore.WriteTimeout, httpx.WriteTimeout),
        (httpcore.PoolTimeout, httpx.PoolTimeout),
        (httpcore.TimeoutException, httpx.TimeoutException),
        (httpcore.ConnectError, httpx.ConnectError),
        (httpcore.ReadError, httpx.ReadError),
        (httpcore.WriteError, httpx.WriteError),
        (httpcore.NetworkError, httpx.NetworkError),
        (httpcore.ProxyError, httpx.ProxyError),
        (httpcore.UnsupportedProtocol, httpx.UnsupportedProtocol),
        (httpcore.LocalProtocolError, httpx.LocalProtocolError),
        (httpcore.RemoteProtocolError, httpx.RemoteProtocolError),
        (httpcore.ProtocolError, httpx.ProtocolError),
    )


class EgressTransport(httpx.AsyncBaseTransport):
    """An httpx transport that applies `policy` to every request (see the module docstring).

    `keepalive=False` gives every request its own connection. Pooled connections are keyed by host
    name, so they are never shared between two names that resolve to the same address;
    `per_address=True` also resolves and checks the host on every request and reuses only a
    connection to an address of that answer (the curl proxy). `inner` is a test double (e.g.
    httpx.MockTransport): it receives each request after the URL checks, unchanged, and makes no
    connection, so no DNS happens."""

    def __init__(
        self,
        policy: EgressPolicy,
        *,
        inner: httpx.AsyncBaseTransport | None = None,
        verify: ssl.SSLContext | None = None,
        retries: int = 0,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        keepalive: bool = True,
        per_address: bool = False,
    ) -> None:
        self.policy = policy
        self.max_response_bytes = max_response_bytes
        self.keepalive = keepalive
        self.per_address = per_address
        self._inner = inner
        self._verify = verify
        self._retries = retries
        self._ssl: ssl.SSLContext | None = None
        self._network: _PinnedTransport | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        # per_address: one pool per (scheme, host, port, checked address), the oldest closed past a bound.
        self._pools: dict[tuple[str, str, int, str], _PinnedTransport] = {}

    def _on_this_loop(self) -> None:
        """Kept connections belong to the event loop that opened them (a warm instance has one; a
        test may run several): on another loop, start new pools and leave the old ones to it."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self._loop, self._network, self._pools = loop, None, {}

    def _connect(self) -> tuple[httpx.AsyncBaseTransport, httpx.AsyncBaseTransport | None]:
        """The transport for one request, and what to close with its response (if anything)."""
        if self._inner is not None:
            return self._inner, None
        self._on_this_loop()
        if self._ssl is None:  # built on first use: loading the CA bundle costs tens of milliseconds
            self._ssl = self._verify or httpx.create_ssl_context()
        if not self.keepalive:
            fresh = _PinnedTransport(self.policy, self._ssl, self._retries)
            return fresh, fresh
        if self._network is None:
            self._network = _PinnedTransport(self.policy, self._ssl, self._retries)
        return self._network, None

    async def _per_address(self, checked: CheckedUrl, request: httpx.Request) -> httpx.Response:
        """Resolve and check now; send on the kept connections to an address of this answer."""
        if self._ssl is None:
            self._ssl = self._verify or httpx.create_ssl_context()
        self._on_this_loop()
        addresses = await self.policy.resolve(checked.host, checked.port)
        failure: httpx.ConnectError | None = None
        for address in addresses[:_MAX_ADDRESSES_TRIED]:
            key = (checked.scheme, checked.host, checked.port, address)
            pool = self._pools.pop(key, None)
            if pool is None:
                pool = _PinnedTransport(self.policy, self._ssl, self._retries, address)
                if len(self._pools) >= _MAX_POOLS:  # the least recently used goes
                    await self._pools.pop(next(iter(self._pools))).aclose()
            self._pools[key] = pool  # most recently used last
            try:
                return await pool.handle_async_request(request)
            except httpx.ConnectError as exc:  # nothing was sent: the next checked address may answer
                failure = exc
        assert failure is not None
        raise failure

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        checked = self.policy.check_url(request.url)
        request.headers["Accept-Encoding"] = _ACCEPT_ENCODING  # only what is decoded with a bound
        if self.per_address and self._inner is None and self.keepalive:
            transport: httpx.AsyncBaseTransport | None = None
            owned = None
        else:
            transport, owned = self._connect()
        try:
            if transport is None:
                response = await self._per_address(checked, request)
            else:
                response = await transport.handle_async_request(request)
        except BaseException:
            if owned is not None:
                await owned.aclose()
            raise
        try:
            decoder = _Decoder.for_encoding(response.headers.get("content-encoding", ""))
        except EgressRefused:
            await response.aclose()
            if owned is not None:
                await owned.aclose()
            raise
        headers = [
            (k, v)
            for k, v in response.headers.multi_items()
            if decoder.identity or k.lower() not in ("content-encoding", "content-length")
        ]
        return httpx.Response(
            response.status_code,
            headers=headers,
            stream=_CappedStream(response, decoder, self.max_response_bytes, owned),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        if self._network is not None:
            await self._network.aclose()
        pools, self._pools = list(self._pools.values()), {}
        for pool in pools:
            await pool.aclose()
        if self._inner is not None:
            await self._inner.aclose()


async def read_bounded(response: httpx.Response, cap: int) -> bytes:
    """A streamed response's body, read only up to `cap` bytes: past it, ResponseTooLarge (whose
    message says so plainly) and nothing more is read. For documents from servers Workbench does not
    run (metadata, registration and token answers) that are small when honest."""
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body.extend(chunk)
        if len(body) > cap:
            raise ResponseTooLarge(cap)
    return bytes(body)


# -- bounded decoding --------------------------------------------------------------------------------


class _Decoder:
    """Content-Encoding decoding that never produces more than _CHUNK bytes per step."""

    def __init__(self, encoding: str) -> None:
        self.encoding = encoding
        self.identity = encoding == ""
        self._z: Any = None
        self._started = False

    @classmethod
    def for_encoding(cls, header: str) -> _Decoder:
        codings = [
            c.strip().lower() for c in header.split(",") if c.strip() and c.strip().lower() != "identity"
        ]
        if not codings:
            return cls("")
        if len(codings) == 1 and codings[0] in ("gzip", "x-gzip", "deflate"):
            return cls("deflate" if codings[0] == "deflate" else "gzip")
        raise EgressRefused(f"the upstream answered with an unsupported content encoding ({header})", 502)

    def _new(self, wbits: int) -> Any:
        return zlib.decompressobj(wbits)

    def decode(self, data: bytes) -> Iterator[bytes]:
        if self.identity:
            if data:
                yield data
            return
        if self._z is None:
            self._z = self._new(16 + zlib.MAX_WBITS if self.encoding == "gzip" else zlib.MAX_WBITS)
        try:
            yield from self._inflate(data)
        except zlib.error as exc:
            if self.encoding == "deflate" and not self._started:
                # Some servers send raw deflate without the zlib header.
                self._z = self._new(-zlib.MAX_WBITS)
                self._started = True
                yield from self._checked(data)
                return
            raise httpx.DecodingError(f"the upstream's {self.encoding} body is corrupt") from exc

    def _checked(self, data: bytes) -> Iterator[bytes]:
        try:
            yield from self._inflate(data)
        except zlib.error as exc:
            raise httpx.DecodingError(f"the upstream's {self.encoding} body is corrupt") from exc

    def _inflate(self, data: bytes) -> Iterator[bytes]:
        while True:
            out = self._z.decompress(data, _CHUNK)
            if out:
                self._started = True
                yield out
            data = self._z.unconsumed_tail
            if self._z.eof:
                rest = self._z.unused_data
                if not (rest and self.encoding == "gzip"):
                    return  # trailing bytes after the stream are ignored, as browsers do
                self._z = self._new(16 + zlib.MAX_WBITS)  # the next gzip member
                data = rest
                continue
            if not data and len(out) < _CHUNK:
                return

    def flush(self) -> Iterator[bytes]:
        if self._z is not None and not self.identity:
            tail = self._z.flush(_CHUNK)
            if tail:
                yield tail


class _CappedStream(httpx.AsyncByteStream):
    def __init__(
        self,
        response: httpx.Response,
        decoder: _Decoder,
        cap: int,
        owned: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._response = response
        self._decoder = decoder
        self._cap = cap
        self._owned = owned

    async def __aiter__(self) -> AsyncIterator[bytes]:
        size = 0
        stream = self._response.stream  # raw bytes, as the connection (or a test double) gives them
        assert isinstance(stream, httpx.AsyncByteStream)
        async for raw in stream:
            for piece in self._decoder.decode(raw):
                size += len(piece)
                if size > self._cap:
                    raise ResponseTooLarge(self._cap)
                yield piece
        for piece in self._decoder.flush():
            size += len(piece)
            if size > self._cap:
                raise ResponseTooLarge(self._cap)
            yield piece

    async def aclose(self) -> None:
        try:
            await self._response.aclose()
        finally:
            if self._owned is not None:
                await self._owned.aclose()
