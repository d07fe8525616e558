"""A small MCP client over httpx for external tool servers (seed 004).

Only what the gateway needs: the handshake (initialize → notifications/initialized → tools/list,
following `nextCursor`), and tools/call. The `Mcp-Session-Id` the server returns on initialize is
sent on every later request of that session, and so is `MCP-Protocol-Version` once negotiated.
A server may answer a request with plain JSON or with an SSE stream (Streamable HTTP); both work.

Failures are typed so the service can apply the seed's table: 401/403 → `AuthRejected`, 5xx →
`ServerFailed` (retried once with backoff), no answer within the timeout → `TimedOut`, no
connection → `Unreachable`. Error texts name the server, never its resolved URL (it may embed a
secret).
"""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from itertools import count
from typing import Any, TypeVar

import httpx

__all__ = [
    "PROTOCOL_VERSION",
    "AuthRejected",
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
]

PROTOCOL_VERSION = "2025-06-18"
CLIENT_INFO = {"name": "workbench", "version": "0.1"}
MAX_PAGES = 20  # tools/list pages followed per discovery
MAX_BODY = 5_000_000  # bytes read from one response


class ExternalError(Exception):
    """Base of every failure talking to an external server."""

    def __init__(self, server: str, message: str) -> None:
        super().__init__(message)
        self.server = server


class Unreachable(ExternalError):
    pass


class TimedOut(ExternalError):
    pass


class AuthRejected(ExternalError):
    def __init__(self, server: str, status: int) -> None:
        super().__init__(server, f"External server '{server}' rejected the request (HTTP {status}).")
        self.status = status


class ServerFailed(ExternalError):
    def __init__(self, server: str, status: int) -> None:
        super().__init__(server, f"External server '{server}' failed with HTTP {status}.")
        self.status = status


class SessionExpired(ExternalError):
    """404 on a request that carried a session id: the server forgot the session (spec: start anew)."""


class ProtocolError(ExternalError):
    """An answer that is not a JSON-RPC response we can read."""


class RpcError(ExternalError):
    def __init__(self, server: str, code: Any, message: str) -> None:
        super().__init__(server, f"External server '{server}' answered error {code}: {message}")
        self.code = code


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where and how to reach one server for one workspace (URL and headers already resolved)."""

    server: str
    url: str
    headers: Mapping[str, str]
    timeout: float  # seconds, a hard cap on each operation
    # Secret values in the URL or headers: scrubbed from any text the server sends back in an error.
    secrets: tuple[str, ...] = ()


@dataclass(slots=True)
class McpSession:
    session_id: str | None = None
    protocol_version: str | None = None


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

    # -- operations ------------------------------------------------------------------------------

    async def handshake(self, ep: Endpoint) -> tuple[McpSession, list[Any]]:
        """initialize → notifications/initialized → tools/list (all pages). Returns raw tool entries."""

        async def run(client: httpx.AsyncClient) -> tuple[McpSession, list[Any]]:
            session = await self._initialize(client, ep)
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
        self, ep: Endpoint, session: McpSession, name: str, arguments: dict[str, Any]
    ) -> tuple[dict[str, Any], McpSession]:
        """tools/call with the original tool name; re-initializes once if the session expired."""

        async def run(client: httpx.AsyncClient) -> tuple[dict[str, Any], McpSession]:
            current = session
            if current.protocol_version is None:
                current = await self._initialize(client, ep)
            params = {"name": name, "arguments": arguments}
            try:
                return await self._request(client, ep, current, "tools/call", params), current
            except SessionExpired:
                current = await self._initialize(client, ep)
                return await self._request(client, ep, current, "tools/call", params), current

        return await self._bounded(ep, run)

    # -- plumbing --------------------------------------------------------------------------------

    async def _bounded(self, ep: Endpoint, run: Callable[[httpx.AsyncClient], Awaitable[_T]]) -> _T:
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
        if self._ssl is None:
            self._ssl = httpx.create_ssl_context()
        return httpx.AsyncClient(
            transport=self.transport,
            verify=self._ssl,
            timeout=httpx.Timeout(ep.timeout, connect=min(ep.timeout, 10.0)),
            headers={"User-Agent": "workbench/0.1", **ep.headers},
            follow_redirects=False,
        )

    async def _initialize(self, client: httpx.AsyncClient, ep: Endpoint) -> McpSession:
        session = McpSession()
        params = {"protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": CLIENT_INFO}
        result = await self._request(client, ep, session, "initialize", params)
        version = result.get("protocolVersion")
        session.protocol_version = version if isinstance(version, str) else PROTOCOL_VERSION
        await self._request(client, ep, session, "notifications/initialized", None, notify=True)
        return session

    async def _request(
        self,
        client: httpx.AsyncClient,
        ep: Endpoint,
        session: McpSession,
        method: str,
        params: dict[str, Any] | None,
        *,
        notify: bool = False,
    ) -> dict[str, Any]:
        """One JSON-RPC exchange; a 5xx is retried once after `backoff` seconds."""
        for attempt in (1, 2):
            try:
                return await self._exchange(client, ep, session, method, params, notify)
            except ServerFailed:
                if attempt == 2:
                    raise
                await self.sleep(self.backoff)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _exchange(
        self,
        client: httpx.AsyncClient,
        ep: Endpoint,
        session: McpSession,
        method: str,
        params: dict[str, Any] | None,
        notify: bool,
    ) -> dict[str, Any]:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        request_id = None
        if not notify:
            request_id = next(self._ids)
            message["id"] = request_id
        if params is not None:
            message["params"] = params
        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        if session.session_id:
            headers["Mcp-Session-Id"] = session.session_id
        if session.protocol_version:
            headers["MCP-Protocol-Version"] = session.protocol_version
        try:
            async with client.stream("POST", ep.url, json=message, headers=headers) as response:
                status = response.status_code
                if status in (401, 403):
                    raise AuthRejected(ep.server, status)
                if status >= 500:
                    raise ServerFailed(ep.server, status)
                if status == 404 and session.session_id:
                    raise SessionExpired(ep.server, f"External server '{ep.server}' forgot the session.")
                if status >= 400:
                    raise ProtocolError(ep.server, f"External server '{ep.server}' answered HTTP {status}.")
                sid = response.headers.get("mcp-session-id")
                if method == "initialize" and sid:
                    session.session_id = sid
                if notify:
                    return {}
                ctype = response.headers.get("content-type", "").split(";")[0].strip().lower()
                if ctype == "text/event-stream":
                    reply = await _first_response(_sse_messages(response.aiter_lines()), request_id)
                else:
                    reply = _match(json.loads(await _read_capped(response)), request_id)
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            raise Unreachable(ep.server, f"External server '{ep.server}' is unreachable.") from exc
        except httpx.TimeoutException:
            raise
        except httpx.InvalidURL as exc:
            raise ProtocolError(ep.server, f"External server '{ep.server}' has an invalid URL.") from exc
        except (httpx.TransportError, httpx.DecodingError) as exc:
            raise Unreachable(ep.server, f"External server '{ep.server}' dropped the connection.") from exc
        except (ValueError, UnicodeDecodeError) as exc:
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
            raise RpcError(ep.server, err.get("code"), text)
        result = reply.get("result")
        if not isinstance(result, dict):
            raise ProtocolError(ep.server, f"External server '{ep.server}' sent a malformed {method} result.")
        return result


async def _read_capped(response: httpx.Response) -> bytes:
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body.extend(chunk)
        if len(body) > MAX_BODY:
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
                yield json.loads("\n".join(data))
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
        yield json.loads("\n".join(data))


async def _first_response(messages: AsyncIterator[Any], request_id: Any) -> dict[str, Any] | None:
    # Servers may interleave notifications (progress, logs) before the response.
    async for message in messages:
        found = _match(message, request_id)
        if found is not None:
            return found
    return None
