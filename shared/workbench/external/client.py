"""A small MCP client over httpx for external tool servers (seed 004), for both protocol eras.

- **Modern** (2026-07-28): no handshake and no session. Every request carries the protocol version,
  client info and capabilities in `params._meta`, mirrored into the `MCP-Protocol-Version`,
  `Mcp-Method` and `Mcp-Name` headers (and `Mcp-Param-*` for `x-mcp-header` tool parameters).
- **Legacy** (2025-11-25 and earlier): initialize → notifications/initialized, then requests with
  the `Mcp-Session-Id` the server returned and the negotiated `MCP-Protocol-Version`.

A server's era is found the way the 2026-07-28 transport page says: `server/discover` first. Only a
2026-07-28 discovery result makes a modern session; any other answer falls back to `initialize`:
a `4xx` (a pre-2026 SDK transport) offers 2025-11-25, a plain JSON-RPC answer (-32601 or any other
error, or a result that is no 2026 discovery: a server written to seed 004) offers 2024-11-05, the
revision seed 004's handshake names; any earlier revision the server picks is accepted. An
`UnsupportedProtocolVersion` error is modern: the client picks from the versions it lists.

A server may answer with plain JSON or an SSE stream; both work. Failures are typed so the service
can apply the seed's table: 401/403 → `AuthRejected` (with the `WWW-Authenticate` challenge), 5xx →
`ServerFailed` (retried once with backoff), no answer within the timeout → `TimedOut`, no
connection → `Unreachable`. Error texts name the server, never its resolved URL (it may embed a
secret).
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from itertools import count
from typing import TYPE_CHECKING, Any, TypeVar

from workbench.errors import WorkbenchError
from workbench.guard.egress import EgressRefused
from workbench.guard.jsontext import JsonRejected, parse

if TYPE_CHECKING:
    import httpx

# httpx is imported by the first exchange with a server (the local imports below), not with this
# module: the custom-app service imports its error classes on every search, most of which reach
# no server (a user with no custom app).

__all__ = [
    "LEGACY_VERSIONS",
    "MODERN_VERSION",
    "PROTOCOL_VERSION",
    "AuthRejected",
    "DestinationRefused",
    "Endpoint",
    "ExternalError",
    "McpClient",
    "McpSession",
    "ProtocolError",
    "RpcError",
    "ServerFailed",
    "SessionExpired",
    "TimedOut",
    "Unreachable",
    "header_params",
]

MODERN_VERSION = "2026-07-28"
# Handshake revisions we speak, newest first: the first is what `initialize` offers.
LEGACY_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
PROTOCOL_VERSION = LEGACY_VERSIONS[0]
# The revision seed 004's handshake offers: what a server written to its four methods expects.
SEED_VERSION = LEGACY_VERSIONS[-1]
CLIENT_INFO = {"name": "workbench", "version": "0.1"}
MAX_PAGES = 20  # tools/list pages followed per discovery
MAX_BODY = 5_000_000  # bytes read from one response

_META_VERSION = "io.modelcontextprotocol/protocolVersion"
_META_CLIENT = "io.modelcontextprotocol/clientInfo"
_META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
_META_SERVER = "io.modelcontextprotocol/serverInfo"
# JSON-RPC error codes only a modern server sends (HeaderMismatch, MissingRequiredClientCapability,
# UnsupportedProtocolVersion): seeing one means "modern server", never "fall back".
_MODERN_ERRORS = frozenset({-32020, -32021, -32022})
_UNSUPPORTED_VERSION = -32022
_SAFE_HEADER_VALUE = re.compile(r"^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$")


class ExternalError(WorkbenchError):
    """Base of every failure talking to an external server."""

    def __init__(self, server: str, message: str) -> None:
        super().__init__(message)
        self.server = server


class Unreachable(ExternalError):
    pass


class TimedOut(ExternalError):
    pass


class DestinationRefused(ExternalError):
    """The egress policy refused where the URL leads (an internal address, a redirect, ...)."""


class AuthRejected(ExternalError):
    def __init__(self, server: str, status: int, challenge: str = "") -> None:
        super().__init__(server, f"External server '{server}' rejected the request (HTTP {status}).")
        self.status = status
        # The WWW-Authenticate header, where an OAuth-protected server names its resource metadata.
        self.challenge = challenge


class ServerFailed(ExternalError):
    def __init__(self, server: str, status: int) -> None:
        super().__init__(server, f"External server '{server}' failed with HTTP {status}.")
        self.status = status


class SessionExpired(ExternalError):
    """404 on a request that carried a session id: the server forgot the session (spec: start anew)."""


class ProtocolError(ExternalError):
    """An answer that is not a JSON-RPC response we can read."""


class HttpRefused(ProtocolError):
    """A 4xx answer (other than 401/403); `code`/`data` hold the JSON-RPC error in its body, if any."""

    def __init__(self, server: str, status: int, code: Any = None, data: Any = None) -> None:
        super().__init__(server, f"External server '{server}' answered HTTP {status}.")
        self.status = status
        self.code = code
        self.data = data

    @property
    def modern(self) -> bool:
        return isinstance(self.code, int) and not isinstance(self.code, bool) and self.code in _MODERN_ERRORS


class RpcError(ExternalError):
    def __init__(self, server: str, code: Any, message: str, data: Any = None) -> None:
        super().__init__(server, f"External server '{server}' answered error {code}: {message}")
        self.code = code
        self.data = data


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where and how to reach one server for one workspace (URL and headers already resolved)."""

    server: str
    url: str
    headers: Mapping[str, str] = field(repr=False)  # its auth among them
    timeout: float  # seconds, a hard cap on each operation
    # Secret values in the URL or headers: scrubbed from any text the server sends back in an error.
    secrets: tuple[str, ...] = field(default=(), repr=False)


@dataclass(slots=True)
class McpSession:
    """What was negotiated with one server: its era, protocol version and (legacy) session id."""

    session_id: str | None = None
    protocol_version: str | None = None
    modern: bool = False
    server_version: str = ""  # what the server says its software version is (display only)

    @property
    def opened(self) -> bool:
        return self.protocol_version is not None


Sleep = Callable[[float], Awaitable[None]]
_T = TypeVar("_T")


@dataclass(slots=True)
class McpClient:
    transport: httpx.AsyncBaseTransport | None = None
    sleep: Sleep = asyncio.sleep
    backoff: float = 0.5  # seconds before the one retry of a 5xx
    _ids: Any = field(default_factory=lambda: count(1))
    # Building a verifying SSL context costs ~75 ms (it loads the CA bundle): once per client, not per call.
    _ssl: ssl.SSLContext | None = None

    def __post_init__(self) -> None:
        # Every operation's client closes when it is done; the transport under it is shared by all
        # of them, so their close must leave it open (see shared_http).
        from workbench.guard.shared_http import SharedTransport

        if self.transport is not None and not isinstance(self.transport, SharedTransport):
            self.transport = SharedTransport(self.transport)

    # -- operations ------------------------------------------------------------------------------

    async def handshake(self, ep: Endpoint) -> tuple[McpSession, list[Any]]:
        """Open (discover or initialize), then tools/list (all pages). Returns raw tool entries."""

        async def run(client: httpx.AsyncClient) -> tuple[McpSession, list[Any]]:
            session = await self._open(client, ep)
            tools: list[Any] = []
            cursor: str | None = None
            for _ in range(MAX_PAGES):
                result = await self._request(
                    client, ep, session, "tools/list", {"cursor": cursor} if cursor else {}
                )
                page = result.get("tools")
                if not isinstance(page, list):
                    raise ProtocolError(ep.server, f"External server '{ep.server}' sent no tools list.")
                tools.extend(page)
                nxt = result.get("nextCursor")
                if not isinstance(nxt, str) or not nxt:
                    break
                cursor = nxt
            return session, tools

        return await self._bounded(ep, run)

    async def call_tool(
        self,
        ep: Endpoint,
        session: McpSession,
        name: str,
        arguments: dict[str, Any],
        schema: Mapping[str, Any] | None = None,
    ) -> tuple[dict[str, Any], McpSession]:
        """tools/call with the original tool name; opens anew once if the session expired (legacy) or
        the server no longer speaks the version in use (modern). `schema` is the tool's input schema,
        for its `x-mcp-header` parameters."""
        extra = header_params(schema, arguments) if schema is not None else {}

        async def run(client: httpx.AsyncClient) -> tuple[dict[str, Any], McpSession]:
            current = session if session.opened else await self._open(client, ep)
            params = {"name": name, "arguments": arguments}
            try:
                return await self._request(client, ep, current, "tools/call", params, extra), current
            except SessionExpired:
                # Same era, same version: only the session is gone.
                current = await self._initialize(client, ep, current.protocol_version or PROTOCOL_VERSION)
            except HttpRefused as exc:
                if not (current.modern and exc.code == _UNSUPPORTED_VERSION):
                    raise
                current = await self._open(client, ep)  # the server changed: find its era again
            return await self._request(client, ep, current, "tools/call", params, extra), current

        return await self._bounded(ep, run)

    # -- plumbing --------------------------------------------------------------------------------

    async def _bounded(self, ep: Endpoint, run: Callable[[httpx.AsyncClient], Awaitable[_T]]) -> _T:
        import httpx

        try:
            async with asyncio.timeout(ep.timeout), self._client(ep) as client:
                return await run(client)
        except TimeoutError as exc:
            raise TimedOut(
                ep.server, f"External server '{ep.server}' did not answer within {ep.timeout:g} s."
            ) from exc
        except httpx.TimeoutException as exc:
            raise TimedOut(
                ep.server, f"External server '{ep.server}' did not answer within {ep.timeout:g} s."
            ) from exc

    def _client(self, ep: Endpoint) -> httpx.AsyncClient:
        import httpx

        if self._ssl is None:
            self._ssl = httpx.create_ssl_context()
        return httpx.AsyncClient(
            transport=self.transport,
            verify=self._ssl,
            timeout=httpx.Timeout(ep.timeout, connect=min(ep.timeout, 10.0)),
            headers={"User-Agent": "workbench/0.1", **ep.headers},
            follow_redirects=False,
        )

    async def _open(self, client: httpx.AsyncClient, ep: Endpoint) -> McpSession:
        """Find the server's era: a modern `server/discover` first, `initialize` as the fallback.

        Only an answer that is a 2026-07-28 discovery (a result listing that version) makes a modern
        session. Anything else falls back to the handshake, offering what that kind of server
        expects: an HTTP 4xx the way a pre-2026 SDK transport refuses a modern request → the newest
        legacy revision; a plain JSON-RPC answer (-32601 Method not found, any other error, or a
        result that is no 2026 discovery: a server written to seed 004's four methods) → 2024-11-05,
        the revision seed 004's handshake names. Transport failures (5xx, timeouts, 401/403) are not
        answers and are raised."""
        modern = McpSession(protocol_version=MODERN_VERSION, modern=True)
        try:
            result = await self._request(client, ep, modern, "server/discover", {})
        except HttpRefused as exc:
            if exc.code == _UNSUPPORTED_VERSION:
                supported = exc.data.get("supported") if isinstance(exc.data, dict) else None
                return await self._initialize(client, ep, _pick_legacy(ep.server, supported))
            return await self._initialize(client, ep, PROTOCOL_VERSION)  # an SDK-era legacy server
        except RpcError as exc:
            if exc.code == _UNSUPPORTED_VERSION:
                supported = exc.data.get("supported") if isinstance(exc.data, dict) else None
                return await self._initialize(client, ep, _pick_legacy(ep.server, supported))
            return await self._initialize(client, ep, SEED_VERSION)  # a plain JSON-RPC server
        except ProtocolError:  # no answer, or an unreadable or malformed one: not a modern server
            return await self._initialize(client, ep, SEED_VERSION)
        supported = result.get("supportedVersions")
        if not isinstance(supported, list) or MODERN_VERSION not in supported:
            if isinstance(supported, list) and any(v in LEGACY_VERSIONS for v in supported):
                return await self._initialize(client, ep, _pick_legacy(ep.server, supported))
            return await self._initialize(client, ep, SEED_VERSION)
        meta = result.get("_meta")
        modern.server_version = _version_of(meta.get(_META_SERVER) if isinstance(meta, dict) else None)
        return modern

    async def _initialize(self, client: httpx.AsyncClient, ep: Endpoint, offer: str) -> McpSession:
        session = McpSession()
        params = {"protocolVersion": offer, "capabilities": {}, "clientInfo": CLIENT_INFO}
        try:
            result = await self._request(client, ep, session, "initialize", params)
        except RpcError:
            if offer == SEED_VERSION:
                raise
            # A server that refuses the revision offered: seed 004's is the one every server knows.
            session = McpSession()
            params = {**params, "protocolVersion": SEED_VERSION}
            result = await self._request(client, ep, session, "initialize", params)
        version = result.get("protocolVersion")
        if version not in LEGACY_VERSIONS:
            raise ProtocolError(
                ep.server,
                f"External server '{ep.server}' speaks MCP protocol version {str(version)[:40]!r}, "
                f"which Workbench does not support (it speaks {MODERN_VERSION} and "
                f"{', '.join(LEGACY_VERSIONS)}).",
            )
        session.protocol_version = str(version)
        session.server_version = _version_of(result.get("serverInfo"))
        await self._request(client, ep, session, "notifications/initialized", None, notify=True)
        return session

    async def _request(
        self,
        client: httpx.AsyncClient,
        ep: Endpoint,
        session: McpSession,
        method: str,
        params: dict[str, Any] | None,
        extra_headers: Mapping[str, str] | None = None,
        *,
        notify: bool = False,
    ) -> dict[str, Any]:
        """One JSON-RPC exchange; a 5xx is retried once after `backoff` seconds."""
        for attempt in (1, 2):
            try:
                return await self._exchange(client, ep, session, method, params, extra_headers, notify)
            except ServerFailed:
                if attempt == 2:
                    raise
                await self.sleep(self.backoff)
        raise AssertionError("unreachable")  # pragma: no cover

    def _message(
        self, session: McpSession, method: str, params: dict[str, Any] | None, notify: bool
    ) -> tuple[dict[str, Any], dict[str, str], Any]:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        request_id = None
        if not notify:
            request_id = next(self._ids)
            message["id"] = request_id
        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        if session.modern:
            meta = {_META_VERSION: MODERN_VERSION, _META_CLIENT: CLIENT_INFO, _META_CAPABILITIES: {}}
            params = {**(params or {}), "_meta": meta}
            headers["MCP-Protocol-Version"] = MODERN_VERSION
            headers["Mcp-Method"] = method
            if method == "tools/call" and params is not None:
                headers["Mcp-Name"] = encode_header_value(str(params.get("name", "")))
        else:
            if session.session_id:
                headers["Mcp-Session-Id"] = session.session_id
            if session.protocol_version:
                headers["MCP-Protocol-Version"] = session.protocol_version
        if params is not None:
            message["params"] = params
        return message, headers, request_id

    async def _exchange(
        self,
        client: httpx.AsyncClient,
        ep: Endpoint,
        session: McpSession,
        method: str,
        params: dict[str, Any] | None,
        extra_headers: Mapping[str, str] | None,
        notify: bool,
    ) -> dict[str, Any]:
        import httpx

        message, headers, request_id = self._message(session, method, params, notify)
        if extra_headers and session.modern:
            headers.update(extra_headers)
        try:
            async with client.stream("POST", ep.url, json=message, headers=headers) as response:
                status = response.status_code
                if status in (401, 403):
                    raise AuthRejected(ep.server, status, response.headers.get("www-authenticate", ""))
                if status >= 500:
                    raise ServerFailed(ep.server, status)
                if status == 404 and session.session_id:
                    raise SessionExpired(ep.server, f"External server '{ep.server}' forgot the session.")
                if status >= 400:
                    raise _refusal(ep.server, status, await _read_capped(response, 64_000))
                sid = response.headers.get("mcp-session-id")
                if method == "initialize" and sid:
                    session.session_id = sid
                if notify:
                    return {}
                ctype = response.headers.get("content-type", "").split(";")[0].strip().lower()
                if ctype == "text/event-stream":
                    reply = await _first_response(_sse_messages(response.aiter_lines()), request_id)
                else:
                    reply = _match(parse(await _read_capped(response)), request_id)
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            raise Unreachable(ep.server, f"External server '{ep.server}' is unreachable.") from exc
        except httpx.TimeoutException:
            raise
        except httpx.InvalidURL as exc:
            raise ProtocolError(ep.server, f"External server '{ep.server}' has an invalid URL.") from exc
        except (httpx.TransportError, httpx.DecodingError) as exc:
            raise Unreachable(ep.server, f"External server '{ep.server}' dropped the connection.") from exc
        except EgressRefused as exc:
            text = str(exc)
            for secret in ep.secrets:
                text = text.replace(secret, "[REDACTED]")
            raise DestinationRefused(ep.server, f"External server '{ep.server}' is refused: {text}") from exc
        except (ValueError, UnicodeDecodeError, JsonRejected) as exc:
            # Strict JSON (depth, NaN, lone surrogates): what a server sends ends up in results.
            raise ProtocolError(
                ep.server, f"External server '{ep.server}' sent an unreadable answer."
            ) from exc
        if reply is None:
            raise ProtocolError(ep.server, f"External server '{ep.server}' sent no answer to {method}.")
        if "error" in reply:
            err = reply["error"] if isinstance(reply["error"], dict) else {}
            text = str(err.get("message", "unknown error"))
            for secret in ep.secrets:
                text = text.replace(secret, "[REDACTED]")
            raise RpcError(ep.server, err.get("code"), text, err.get("data"))
        result = reply.get("result")
        if not isinstance(result, dict):
            raise ProtocolError(ep.server, f"External server '{ep.server}' sent a malformed {method} result.")
        kind = result.get("resultType", "complete")  # absent: a legacy result, complete by definition
        if kind == "input_required":
            raise ProtocolError(
                ep.server,
                f"External server '{ep.server}' asked for user input during {method}, which Workbench "
                "cannot provide to an external server.",
            )
        if kind != "complete":
            raise ProtocolError(ep.server, f"External server '{ep.server}' sent an unknown result type.")
        return result


def _refusal(server: str, status: int, body: bytes) -> HttpRefused:
    """A 4xx, with the JSON-RPC error its body carries (how a modern server is told from a legacy one)."""
    try:
        payload = json.loads(body) if body else None
    except ValueError:
        payload = None
    err = payload.get("error") if isinstance(payload, dict) else None
    if isinstance(err, dict):
        return HttpRefused(server, status, err.get("code"), err.get("data"))
    return HttpRefused(server, status)


def _version_of(info: Any) -> str:
    version = info.get("version") if isinstance(info, dict) else None
    return version[:40] if isinstance(version, str) else ""


def _pick_legacy(server: str, supported: Any) -> str:
    """The newest handshake revision both sides speak, from a server's list of versions."""
    offered = [v for v in supported if isinstance(v, str)] if isinstance(supported, list) else []
    for version in LEGACY_VERSIONS:
        if version in offered:
            return version
    raise ProtocolError(
        server,
        f"External server '{server}' speaks none of the MCP protocol versions Workbench supports "
        f"(it offers {', '.join(offered)[:120] or 'none'}).",
    )


def encode_header_value(value: str) -> str:
    """A value as an HTTP header value: as is when plain visible ASCII, else the `=?base64?…?=` form
    (also for a value that itself looks like that form)."""
    if _SAFE_HEADER_VALUE.match(value) and not (value.startswith("=?base64?") and value.endswith("?=")):
        return value
    return "=?base64?" + base64.b64encode(value.encode("utf-8")).decode("ascii") + "?="


def header_params(schema: Mapping[str, Any] | None, arguments: Mapping[str, Any]) -> dict[str, str]:
    """`Mcp-Param-<name>` headers for the tool's `x-mcp-header` properties present in the arguments
    (the annotations were validated at discovery; see schema.py)."""
    out: dict[str, str] = {}

    def walk(node: Any, value: Any) -> None:
        props = node.get("properties") if isinstance(node, Mapping) else None
        if not isinstance(props, Mapping) or not isinstance(value, Mapping):
            return
        for key, sub in props.items():
            if key not in value or value[key] is None or not isinstance(sub, Mapping):
                continue
            header = sub.get("x-mcp-header")
            if isinstance(header, str):
                raw = value[key]
                text = ("true" if raw else "false") if isinstance(raw, bool) else str(raw)
                out[f"Mcp-Param-{header}"] = encode_header_value(text)
            else:
                walk(sub, value[key])

    walk(schema, arguments)
    return out


async def _read_capped(response: httpx.Response, cap: int = MAX_BODY) -> bytes:
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body.extend(chunk)
        if len(body) > cap:
            raise ValueError("response too large")
    return bytes(body)


def _match(payload: Any, request_id: Any) -> dict[str, Any] | None:
    """The JSON-RPC response for `request_id` in a single message or a batch."""
    items = payload if isinstance(payload, list) else [payload]
    for item in items:
        if isinstance(item, dict) and item.get("id") == request_id and ("result" in item or "error" in item):
            return item
    return None


async def _sse_messages(lines: AsyncIterator[str]) -> AsyncIterator[Any]:
    """JSON payloads of the `message` events of an SSE stream (other events are skipped)."""
    data: list[str] = []
    event = "message"
    size = 0
    async for raw in lines:
        line = raw.rstrip("\r")
        if line == "":
            if data and event == "message":
                yield parse("\n".join(data))
            data, event = [], "message"
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            size += len(value)
            if size > MAX_BODY:
                raise ValueError("response too large")
            data.append(value)
        elif name == "event":
            event = value or "message"
    if data and event == "message":
        yield parse("\n".join(data))


async def _first_response(messages: AsyncIterator[Any], request_id: Any) -> dict[str, Any] | None:
    # Servers may interleave notifications (progress, logs) before the response.
    async for message in messages:
        found = _match(message, request_id)
        if found is not None:
            return found
    return None
