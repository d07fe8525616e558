"""The one gate for every server-side HTTP request to a URL a user or tenant can influence.

Custom apps (external MCP servers), OAuth client metadata documents and provider token endpoints
send through `EgressTransport(policy)` (workbench.guard.egress_transport: this module, the policy,
imports no HTTP client); plugins (a user's Superset address, Zendesk subdomain,
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
    async with httpx.AsyncClient(transport=EgressTransport(policy)) as http:   # egress_transport
        await http.get(user_url)                 # call time: checked again, pinned, capped
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from workbench.errors import WorkbenchError

if TYPE_CHECKING:
    import httpx

    from workbench.settings import Settings

__all__ = [
    "DEFAULT_MAX_RESPONSE_BYTES",
    "METADATA_ADDRESSES",
    "AllowLevel",
    "CheckedUrl",
    "EgressPolicy",
    "EgressRefused",
    "Resolver",
    "ResponseTooLarge",
    "Route",
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
            import httpx  # the URL parser: loaded by the first URL checked, not with the policy

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
