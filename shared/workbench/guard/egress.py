"""The one gate for every server-side HTTP request to a URL a user or tenant can influence.

Custom apps (external MCP servers), OAuth client metadata documents and provider token endpoints
send through `EgressTransport(policy)`; plugins (a user's Superset address, Zendesk subdomain,
Salesforce instance URL, any other) and the curl proxy through workbench.guard.http1, which applies
the same rules with the same policy (and holds itself to this transport in its tests). Per
request, and so per redirect hop that a client follows, it:

1. parses the URL strictly (`EgressPolicy.check_url`): http(s) only (plain http only when the
   policy allows local addresses), no user:password@, no control characters or backslash, an
   ASCII host; a host that is an IPv4 address in any form but canonical dotted decimal
   (2130706433, 0x7f.1, 0177.0.0.1, 127.1) is refused, an IP literal is checked like an answer;
2. when a new connection is made, resolves the host ONCE and checks EVERY answer
   (`EgressPolicy.resolve`), then connects to a checked address. TLS keeps the original server
   name (SNI and certificate verification), and the pool is keyed by host name, so a connection
   verified for one name never carries another name's request. With `per_address=True` (the curl
   proxy) EVERY request resolves and checks its host, and reuses a kept connection only to one of
   the addresses in that answer (pools keyed by host name AND checked address): a name that now
   resolves elsewhere is refused or gets a new connection, never an old one;
3. decodes the body (gzip/deflate/identity only) with a cap on the DECODED size, reading no
   further than the cap, so a compression bomb cannot inflate in memory.

The address policy refuses every address that is not global unicast: loopback, private,
link-local, CGNAT, 192.0.0.0/24, benchmarking, documentation, multicast, reserved, unspecified,
site-local, cloud metadata, and any IPv6 that embeds an IPv4 address (mapped, compatible,
translated, 6to4, Teredo, NAT64). `allow="loopback"` (tests, local development) admits 127/8 and
::1; `allow="private"` also admits RFC 1918, ULA and CGNAT. Metadata, link-local and embedded
forms are refused at every level. Settings: WORKBENCH_EGRESS_ALLOW (never set on Lambda).

Typical use::

    policy = gateway.egress                      # or EgressPolicy.from_settings(settings)
    checked = policy.check_url(user_url)         # entry time, no DNS: raises EgressRefused
    await policy.check(user_url)                 # entry time, with DNS
    async with httpx.AsyncClient(transport=EgressTransport(policy)) as http:
        await http.get(user_url)                 # call time: checked again, pinned, capped
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
import ssl
import zlib
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any, Literal

import httpx

from workbench.errors import WorkbenchError

if TYPE_CHECKING:
    from workbench.settings import Settings

__all__ = [
    "DEFAULT_MAX_RESPONSE_BYTES",
    "METADATA_ADDRESSES",
    "AllowLevel",
    "CheckedUrl",
    "EgressPolicy",
    "EgressRefused",
    "EgressTransport",
    "Resolver",
    "ResponseTooLarge",
    "Route",
    "read_bounded",
    "system_resolver",
]

AllowLevel = Literal["public", "loopback", "private"]
ALLOW_LEVELS: tuple[AllowLevel, ...] = ("public", "loopback", "private")
Resolver = Callable[[str, int], Awaitable[list[str]]]
# Tests only: where a connection to a checked (address, port) really goes: a fake internet on loopback.
Route = Callable[[str, int], tuple[str, int]]
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024
MAX_URL_CHARS = 4096
RESOLVE_TIMEOUT_SECONDS = 10.0
_MAX_ADDRESSES_TRIED = 4
_MAX_POOLS = 64  # per_address: (host, address) pairs kept at once
_CHUNK = 64 * 1024  # the largest piece one compressed read may inflate to
_ACCEPT_ENCODING = "gzip, deflate"

# Cloud metadata endpoints: refused at every allow level (fd00:ec2::/32 sits inside ULA, and
# 100.100.100.200 inside CGNAT, both of which `allow="private"` admits).
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",
        "169.254.170.2",
        "169.254.170.23",
        "100.100.100.200",
        "192.0.0.192",
        "fd00:ec2::254",
        "fd00:ec2::23",
    )
)


def _nets(*pairs: tuple[str, str]) -> tuple[tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, str], ...]:
    return tuple((ipaddress.ip_network(n), kind) for n, kind in pairs)


# (network, kind); "loopback" and "private" kinds can be admitted by the allow level.
_V4 = _nets(
    ("0.0.0.0/8", "unspecified"),
    ("10.0.0.0/8", "private"),
    ("100.64.0.0/10", "private"),  # CGNAT (shared address space)
    ("127.0.0.0/8", "loopback"),
    ("169.254.0.0/16", "link-local"),
    ("172.16.0.0/12", "private"),
    ("192.0.0.0/24", "reserved"),  # IETF protocol assignments
    ("192.0.2.0/24", "documentation"),
    ("192.88.99.0/24", "reserved"),  # 6to4 relay anycast
    ("192.168.0.0/16", "private"),
    ("198.18.0.0/15", "benchmarking"),
    ("198.51.100.0/24", "documentation"),
    ("203.0.113.0/24", "documentation"),
    ("224.0.0.0/4", "multicast"),
    ("240.0.0.0/4", "reserved"),  # and 255.255.255.255
)
_V6 = _nets(
    ("::1/128", "loopback"),
    ("::/128", "unspecified"),
    ("::ffff:0:0/96", "IPv4-mapped"),
    ("::ffff:0:0:0/96", "IPv4-translated"),
    ("::/96", "IPv4-compatible"),
    ("64:ff9b::/96", "NAT64"),
    ("64:ff9b:1::/48", "NAT64"),
    ("100::/64", "reserved"),  # discard-only
    ("2001::/32", "Teredo"),
    ("2001::/23", "reserved"),  # IETF protocol assignments (benchmarking, ORCHID, ...)
    ("2001:db8::/32", "documentation"),
    ("2002::/16", "6to4"),
    ("3fff::/20", "documentation"),
    ("5f00::/16", "reserved"),  # SRv6 SIDs
    ("fc00::/7", "private"),  # unique local
    ("fe80::/10", "link-local"),
    ("fec0::/10", "site-local"),
    ("ff00::/8", "multicast"),
)
_GLOBAL_UNICAST_V6 = ipaddress.IPv6Network("2000::/3")
_ADMITTED: dict[AllowLevel, frozenset[str]] = {
    "public": frozenset(),
    "loopback": frozenset({"loopback"}),
    "private": frozenset({"loopback", "private"}),
}

_HOST_NAME = re.compile(r"^[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?)*\.?$")
_NUMERIC_LABEL = re.compile(r"^(?:[0-9]+|0[xX][0-9a-fA-F]*)$")
_CANONICAL_V4 = re.compile(
    r"^(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(?:\.(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}$"
)


class EgressRefused(WorkbenchError):
    """Workbench will not make (or finish) this request. The message is meant for the user;
    `status` is the HTTP status a surface that answers with one (the curl proxy) uses."""

    def __init__(self, message: str, status: int = 403) -> None:
        super().__init__(message)
        self.status = status


class ResponseTooLarge(EgressRefused):
    """The decoded response passed the cap; nothing past the cap was read."""

    def __init__(self, cap: int) -> None:
        size = f"{cap // (1024 * 1024)} MiB" if cap % (1024 * 1024) == 0 else f"{cap} bytes"
        super().__init__(
            f"the upstream response is larger than {size} once decoded; reading stopped there", 502
        )
        self.cap = cap


async def system_resolver(host: str, port: int) -> list[str]:
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


@dataclass(frozen=True, slots=True)
class CheckedUrl:
    """A URL that passed the policy's syntax checks. `address` is set when the host is an IP literal."""

    url: httpx.URL
    scheme: str
    host: str  # lower-case ASCII, IPv6 without brackets
    port: int
    address: IPAddress | None = None


@dataclass(frozen=True, slots=True)
class EgressPolicy:
    """Which destinations server-side requests may reach. Immutable; share one per process."""

    allow: AllowLevel = "public"
    resolver: Resolver = field(default=system_resolver, compare=False)
    route: Route | None = field(default=None, compare=False)

    @classmethod
    def from_settings(
        cls, settings: Settings, *, resolver: Resolver | None = None, route: Route | None = None
    ) -> EgressPolicy:
        return cls(allow=settings.egress_allow, resolver=resolver or system_resolver, route=route)

    @property
    def allows_local(self) -> bool:
        return self.allow != "public"

    # -- addresses ---------------------------------------------------------------------------------

    def refusal(self, address: str | IPAddress) -> str | None:
        """Why `address` may not be reached (a short phrase), or None when it may."""
        try:
            ip = address if not isinstance(address, str) else ipaddress.ip_address(address)
        except ValueError:
            return "not an IP address"
        if ip in METADATA_ADDRESSES:
            return "a cloud metadata address"
        table = _V4 if ip.version == 4 else _V6
        for net, kind in table:
            if ip in net:
                return None if kind in _ADMITTED[self.allow] else f"{_article(kind)} {kind} address"
        if ip.version == 6 and ip not in _GLOBAL_UNICAST_V6:
            return "a reserved address"
        if not ip.is_global:  # whatever a newer registry adds
            return "a non-global address"
        return None

    def check_address(self, address: str | IPAddress, *, host: str = "") -> None:
        why = self.refusal(address)
        if why is not None:
            name = f"{host} resolves to {address}, " if host and host != str(address) else f"{address} is "
            raise EgressRefused(f"Refused: {name}{why}, not a public internet address")

    async def resolve(self, host: str, port: int) -> list[str]:
        """Every address `host` resolves to, each checked; refuses the whole answer if ANY fails
        (a rebinding or split answer must not be tried address by address)."""
        literal = _ip_literal(host)
        if literal is not None:
            self.check_address(literal, host=host)
            return [str(literal)]
        try:
            answers = await asyncio.wait_for(self.resolver(host, port), RESOLVE_TIMEOUT_SECONDS)
        except (OSError, TimeoutError) as exc:
            raise EgressRefused(f"{host} does not resolve", 502) from exc
        if not answers:
            raise EgressRefused(f"{host} does not resolve", 502)
        for answer in answers:
            if "%" in answer:  # a scoped (zone) address is link-local by construction
                raise EgressRefused(f"Refused: {host} resolves to a scoped address ({answer})")
            self.check_address(answer, host=host)
        return answers

    # -- URLs ----------------------------------------------------------------------------------------

    def check_url(self, url: str | httpx.URL) -> CheckedUrl:
        """Syntax and literal checks, no DNS. Raises EgressRefused with a message for the user."""
        if isinstance(url, str):
            if len(url) > MAX_URL_CHARS:
                raise EgressRefused(f"Refused: the URL is longer than {MAX_URL_CHARS} characters", 400)
            if any(ord(c) <= 0x20 or ord(c) == 0x7F or c == "\\" for c in url):
                raise EgressRefused(
                    "Refused: the URL contains whitespace, control characters or a backslash", 400
                )
            if not re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", url):
                raise EgressRefused("Refused: the URL must be absolute (https://host/...)", 400)
            try:
                parsed = httpx.URL(url)
            except (httpx.InvalidURL, ValueError, UnicodeError) as exc:
                raise EgressRefused(f"Refused: not a valid URL ({exc})", 400) from None
        else:
            parsed = url
        scheme = parsed.scheme.lower()
        if scheme != "https" and not (scheme == "http" and self.allows_local):
            raise EgressRefused("Refused: the URL must use https", 400)
        if parsed.userinfo:
            raise EgressRefused("Refused: the URL must not contain user:password@", 400)
        try:
            host = parsed.raw_host.decode("ascii").lower()
        except UnicodeDecodeError:
            raise EgressRefused("Refused: the URL's host is not ASCII", 400) from None
        if not host:
            raise EgressRefused("Refused: the URL has no host", 400)
        port = parsed.port if parsed.port is not None else (443 if scheme == "https" else 80)
        if not 0 < port < 65536:
            raise EgressRefused(f"Refused: not a valid URL (port {port})", 400)
        address = _ip_literal(host)
        if address is None and ":" in host:
            raise EgressRefused(f"Refused: {host} is not a valid IPv6 address", 400)
        if address is None:
            if not _HOST_NAME.match(host) or len(host) > 253:
                raise EgressRefused(f"Refused: {host!r} is not a valid host name", 400)
            labels = host.rstrip(".").split(".")
            if _NUMERIC_LABEL.match(labels[-1]):
                # What WHATWG URL parsers and inet_aton read as an IPv4 address: only the
                # canonical dotted-decimal form is accepted (and then checked as an address).
                raise EgressRefused(
                    f"Refused: {host} is an IPv4 address in a non-standard form; write it as a.b.c.d", 400
                )
        else:
            self.check_address(address)
        return CheckedUrl(parsed, scheme, host, port, address)

    def host_refusal(self, host: str) -> str | None:
        """Why a URL on `host` is refused before any DNS (a non-standard IPv4 form, a refused IP
        literal, a malformed name), as a phrase; None when it passes."""
        literal = host if ":" not in host or host.startswith("[") else f"[{host}]"
        try:
            self.check_url(f"https://{literal}/")
        except EgressRefused as exc:
            return str(exc).removeprefix("Refused: ")
        return None

    async def check(self, url: str | httpx.URL, *, unresolvable_ok: bool = False) -> CheckedUrl:
        """`check_url`, then resolve the host and check every answer (the entry-time check).
        With `unresolvable_ok`, a name that does not resolve right now passes (it is checked
        again on every call); an answer that the policy refuses never does."""
        checked = self.check_url(url)
        try:
            await self.resolve(checked.host, checked.port)
        except EgressRefused as exc:
            if not (unresolvable_ok and exc.status == 502):
                raise
        return checked


def _article(word: str) -> str:
    return "an" if word[0].lower() in "aeiou" or word.startswith("IPv4") else "a"


def _ip_literal(host: str) -> IPAddress | None:
    name = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if ":" in name:
        if "%" in name:  # a zone id: link-local by construction, and read differently by stacks
            return None
        try:
            return ipaddress.IPv6Address(name)
        except ValueError:
            return None
    return ipaddress.IPv4Address(name) if _CANONICAL_V4.match(name) else None


# -- the transport ---------------------------------------------------------------------------------


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
