"""Real MCP servers built with the official `mcp` SDK, served over HTTP on loopback for the tests.

One uvicorn server in a background thread hosts several independent MCP servers under their own
paths (each with its own session manager):

- /plain/mcp      MCPServer, plain JSON answers (json_response=True): echo, add, whoami_headers
- /sse/mcp        MCPServer answering with SSE streams: echo, add
- /bearer/mcp     MCPServer behind the SDK's bearer-token auth (401 without the right token)
- /w/{code}/mcp   a per-workspace server: its tool list depends on the code in the URL
- /odd/mcp        low-level Server with scripted tools: a mutable tool list (cache tests), one tool
                  with a malformed schema, a slow tool, an image-only result, an erroring tool
- /modern/mcp     a stateless 2026-07-28-only server: per-request `_meta`, `server/discover`; it
                  refuses `initialize` with UnsupportedProtocolVersion, as a modern-only server does
- /legacy/mcp     a legacy server: answers a 2026-07-28 request the way a pre-2026 SDK does (400 with a
                  plain -32600 body), so a client must fall back to `initialize`
- /picky/mcp      modern-aware but speaks only 2025-06-18: answers modern requests with
                  UnsupportedProtocolVersion listing it
- /hang/mcp       accepts the connection and never answers (until the test session ends)
- /api/...        a plain HTTP API for OpenAPI apps: records each request and answers with what it
                  received as JSON; a path ending in /missing answers 404, one ending in /leak echoes
                  the request headers in an error

The SDK's servers are dual-era (they serve both `initialize` sessions and 2026-07-28 requests); the
wrappers above narrow one down to a single era the way real servers of that era behave.

Every server sits behind a `Recorder`, which logs each request (JSON-RPC method, headers, body)
and can be told to answer the next requests with a given HTTP status (500 once, 401, ...).
"""

from __future__ import annotations

import asyncio
import json
import threading
import warnings
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
import uvicorn
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError
from starlette.applications import Starlette
from starlette.routing import Mount

from tests.support.processes import free_port
from tests.support.server_thread import start_server_thread

BEARER_TOKEN = "upstream-bearer-7f3a9c"  # what the bearer server accepts


@dataclass
class Seen:
    path: str
    method: str | None
    headers: dict[str, str]
    body: Any


@dataclass
class Recorder:
    """ASGI wrapper: records requests; `fail_next` holds statuses to answer with before the app runs."""

    app: Any
    seen: list[Seen] = field(default_factory=list)
    fail_next: list[int] = field(default_factory=list)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        chunks = []
        more = True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        try:
            payload = json.loads(body) if body else None
        except ValueError:
            payload = None
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        method = payload.get("method") if isinstance(payload, dict) else None
        self.seen.append(Seen(scope["path"], method, headers, payload))
        if self.fail_next and scope["method"] == "POST":
            status = self.fail_next.pop(0)
            await send(
                {
                    "type": "http.response.start",
                    "status": status,
                    "headers": [(b"content-type", b"text/plain")],
                }
            )
            await send({"type": "http.response.body", "body": b"injected failure"})
            return
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    def methods(self) -> list[str | None]:
        return [s.method for s in self.seen]

    def reset(self) -> None:
        self.seen.clear()
        self.fail_next.clear()


MODERN = "2026-07-28"


def _json_reply(status: int, payload: Any) -> list[dict[str, Any]]:
    body = json.dumps(payload).encode()
    return [
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json")],
        },
        {"type": "http.response.body", "body": body},
    ]


def _protocol_header(scope: Any) -> str | None:
    return next((v.decode() for k, v in scope["headers"] if k.lower() == b"mcp-protocol-version"), None)


@dataclass
class EraFilter:
    """Narrows a dual-era SDK app to one era (see the module docstring)."""

    app: Any
    era: str  # "modern" | "legacy" | "picky"

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        modern = _protocol_header(scope) == MODERN
        reply: list[dict[str, Any]] = []
        if self.era == "modern" and not modern:
            reply = _json_reply(
                400,
                {
                    "jsonrpc": "2.0",
                    "id": None,
                    "error": {
                        "code": -32022,
                        "message": "Unsupported protocol version",
                        "data": {"supported": [MODERN], "requested": _protocol_header(scope)},
                    },
                },
            )
        elif self.era == "legacy" and modern:
            reply = _json_reply(
                400,
                {
                    "jsonrpc": "2.0",
                    "id": "server-error",
                    "error": {
                        "code": -32600,
                        "message": f"Bad Request: Unsupported protocol version: {MODERN}",
                    },
                },
            )
        elif self.era == "picky" and modern:
            reply = _json_reply(
                400,
                {
                    "jsonrpc": "2.0",
                    "id": None,
                    "error": {
                        "code": -32022,
                        "message": "Unsupported protocol version",
                        "data": {"supported": ["2025-06-18"], "requested": MODERN},
                    },
                },
            )
        if not reply:
            await self.app(scope, receive, send)
            return
        while (await receive()).get("more_body"):
            pass
        for message in reply:
            await send(message)


@dataclass
class Hang:
    """Reads the request, then answers nothing until `release` is set (at the end of the session)."""

    release: threading.Event = field(default_factory=threading.Event)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        # A threading.Event: it is set from the test thread, not this server's loop.
        while not self.release.is_set():  # noqa: ASYNC110
            await asyncio.sleep(0.05)
        for message in _json_reply(503, {"error": "released"}):
            await send(message)


@dataclass
class Received:
    method: str
    raw_path: str
    query: list[tuple[str, str]]
    headers: dict[str, str]
    body: bytes


@dataclass
class EchoApi:
    """A REST upstream for OpenAPI apps (see the module docstring)."""

    seen: list[Received] = field(default_factory=list)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        chunks = []
        more = True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        from urllib.parse import parse_qsl

        got = Received(
            scope["method"],
            scope.get("raw_path", scope["path"].encode()).decode(),
            parse_qsl(scope["query_string"].decode(), keep_blank_values=True),
            {k.decode().lower(): v.decode() for k, v in scope["headers"]},
            b"".join(chunks),
        )
        self.seen.append(got)
        if got.raw_path.endswith("/missing"):
            reply = _json_reply(404, {"message": "Pet not found"})
        elif got.raw_path.endswith("/leak"):
            reply = _json_reply(500, {"headers": got.headers})
        else:
            try:
                body: Any = json.loads(got.body) if got.body else None
            except ValueError:
                body = got.body.decode()
            reply = _json_reply(
                200, {"method": got.method, "path": got.raw_path, "query": got.query, "body": body}
            )
        for message in reply:
            await send(message)


class _Verifier:
    async def verify_token(self, token: str) -> AccessToken | None:
        return AccessToken(token=token, client_id="workbench", scopes=[]) if token == BEARER_TOKEN else None


SERVER_VERSION = "3.1.4"  # what the plain servers report as their software version


def _plain(name: str) -> MCPServer:
    server = MCPServer(name, version=SERVER_VERSION)

    @server.tool()
    def echo(text: str) -> str:
        """Echo the text back unchanged."""
        return text

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    async def chatty(steps: int, ctx: Context) -> str:
        """Log a few notifications on the response stream before answering."""
        with warnings.catch_warnings():  # logging is deprecated in 2026-07-28; still what servers send today
            warnings.simplefilter("ignore")
            for i in range(steps):
                await ctx.info(f"step {i}")
        return f"done after {steps}"

    return server


def _bearer() -> MCPServer:
    server = MCPServer(
        "bearer",
        token_verifier=_Verifier(),
        auth=AuthSettings(issuer_url="http://127.0.0.1/issuer", resource_server_url=None),
    )

    @server.tool()
    def secret_report(topic: str) -> str:
        """Report on a topic (needs the bearer token)."""
        return f"report on {topic}"

    return server


@dataclass
class Scripted:
    """Tools of the low-level servers, editable while the server runs."""

    tools: dict[str, dict[str, Any]] = field(default_factory=dict)
    by_code: dict[str, list[str]] = field(default_factory=dict)
    slow_seconds: float = 2.0


def _odd(script: Scripted) -> Server[Any]:
    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(name=name, description=t.get("description", ""), input_schema=t["schema"])
                for name, t in script.tools.items()
            ]
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        args = params.arguments or {}
        if params.name == "slow":
            await asyncio.sleep(script.slow_seconds)
            return types.CallToolResult(content=[types.TextContent(type="text", text="finally")])
        if params.name == "picture":
            return types.CallToolResult(
                content=[types.ImageContent(type="image", data="aGk=", mime_type="image/png")]
            )
        if params.name == "headers":  # reports what reached the server, auth included
            headers = dict(ctx.request.headers) if ctx.request is not None else {}
            return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(headers))])
        if params.name == "rpc_fail":  # a JSON-RPC error that quotes the caller's credential
            key = ctx.request.headers.get("x-api-key", "") if ctx.request is not None else ""
            raise MCPError(-32000, f"key {key} is not allowed here")
        if params.name == "fail_echo":
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=f"rejected input: {json.dumps(args)}")],
                is_error=True,
            )
        if params.name == "title":  # tool output that happens to contain ref-like text
            return types.CallToolResult(
                content=[types.TextContent(type="text", text="PR mentions {{vault:x}}")]
            )
        if params.name == "explode":
            return types.CallToolResult(
                content=[types.TextContent(type="text", text="it broke")], is_error=True
            )
        return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps({"got": args}))])

    return Server("odd", on_list_tools=list_tools, on_call_tool=call_tool)


def _workspace(script: Scripted) -> Server[Any]:
    def code_of(ctx: Any) -> str:
        return str(ctx.request.path_params.get("code", "")) if ctx.request is not None else ""

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        names = script.by_code.get(code_of(ctx), [])
        schema = {"type": "object", "properties": {}}
        return types.ListToolsResult(
            tools=[types.Tool(name=n, description=f"workspace tool {n}", input_schema=schema) for n in names]
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=f"{params.name} for {code_of(ctx)}")]
        )

    return Server("workspace", on_list_tools=list_tools, on_call_tool=call_tool)


GOOD_SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}


def default_odd_tools() -> dict[str, dict[str, Any]]:
    return {
        "lookup": {"description": "Look something up in the odd server", "schema": GOOD_SCHEMA},
        # Malformed in ways the SDK still sends (its own models check only the root shape):
        "broken_props": {
            "description": "Malformed: a property type that does not exist",
            "schema": {"type": "object", "properties": {"q": {"type": 42}}},
        },
        "broken_extra": {
            "description": "Malformed: additionalProperties is neither a boolean nor a schema",
            "schema": {"type": "object", "properties": {}, "additionalProperties": "nope"},
        },
        "bad name!": {
            "description": "Malformed: not a tool name",
            "schema": {"type": "object", "properties": {}},
        },
        "slow": {"description": "Takes its time", "schema": {"type": "object", "properties": {}}},
        "picture": {"description": "Returns an image only", "schema": {"type": "object", "properties": {}}},
        "explode": {"description": "Reports a tool error", "schema": {"type": "object", "properties": {}}},
        "headers": {
            "description": "Echo the request headers",
            "schema": {"type": "object", "properties": {}},
        },
        "fail_echo": {
            "description": "Fail, quoting the input",
            "schema": {"type": "object", "properties": {}},
        },
        "title": {"description": "A PR title", "schema": {"type": "object", "properties": {}}},
        "rpc_fail": {
            "description": "Answer with a JSON-RPC error",
            "schema": {"type": "object", "properties": {}},
        },
        # 2026-07-28 x-mcp-header: mirrored into Mcp-Param-Region by a conforming client.
        "regional": {
            "description": "Run in a region",
            "schema": {
                "type": "object",
                "properties": {
                    "region": {"type": "string", "x-mcp-header": "Region"},
                    "n": {"type": "integer"},
                },
            },
        },
        # Malformed: x-mcp-header on a number (the spec allows string, integer, boolean only).
        "bad_header": {
            "description": "Malformed: x-mcp-header on a number",
            "schema": {"type": "object", "properties": {"x": {"type": "number", "x-mcp-header": "X"}}},
        },
    }


@dataclass
class Upstreams:
    base: str
    recorders: dict[str, Recorder]
    script: Scripted
    hang: Hang
    api: EchoApi

    def url(self, name: str) -> str:
        return f"{self.base}/{name}/mcp"

    def reset(self) -> None:
        for r in self.recorders.values():
            r.reset()
        self.script.tools = default_odd_tools()
        self.script.by_code.clear()
        self.api.seen.clear()


@asynccontextmanager
async def _lifespan(managers: list[Any]) -> AsyncIterator[None]:
    async with AsyncExitStack() as stack:
        for manager in managers:
            await stack.enter_async_context(manager.run())
        yield


def start_upstreams() -> tuple[Upstreams, uvicorn.Server, threading.Thread]:
    script = Scripted(tools=default_odd_tools())
    plain, sse, bearer = _plain("plain"), _plain("sse"), _bearer()
    odd, workspace = _odd(script), _workspace(script)
    modern, legacy, picky = _plain("modern"), _plain("legacy"), _plain("picky")
    hang = Hang()
    apps: dict[str, Any] = {
        "plain": plain.streamable_http_app(json_response=True),
        "sse": sse.streamable_http_app(json_response=False),
        "bearer": bearer.streamable_http_app(json_response=True),
        "odd": odd.streamable_http_app(json_response=True),
        "w": workspace.streamable_http_app(json_response=True),
        "modern": EraFilter(modern.streamable_http_app(json_response=False, stateless_http=True), "modern"),
        "legacy": EraFilter(legacy.streamable_http_app(json_response=True), "legacy"),
        "picky": EraFilter(picky.streamable_http_app(json_response=True), "picky"),
        "hang": hang,
        "api": EchoApi(),
    }
    managers = [plain.session_manager, sse.session_manager, bearer.session_manager]
    managers += [odd.session_manager, workspace.session_manager]
    managers += [modern.session_manager, legacy.session_manager, picky.session_manager]
    recorders = {name: Recorder(app) for name, app in apps.items()}
    routes = [Mount(f"/{n}", app=r) for n, r in recorders.items() if n not in ("w", "api")]
    routes.append(Mount("/api", app=apps["api"]))
    routes.append(Mount("/w/{code}", app=recorders["w"]))
    root = Starlette(routes=routes, lifespan=lambda app: _lifespan(managers))
    port = free_port()
    server, thread = start_server_thread(
        root, port, name="the test MCP servers", lifespan="on", timeout_graceful_shutdown=2
    )
    return Upstreams(f"http://127.0.0.1:{port}", recorders, script, hang, apps["api"]), server, thread
