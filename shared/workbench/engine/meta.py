"""The nine MCP meta-tools: their schemas, descriptions (as seed 001 gives them) and handlers.

Handlers return the JSON payload; each surface decides how to wrap it. Meta-tool arguments that
fail the meta-tool's own schema raise `InvalidInput` (-32602 over MCP).
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from workbench.engine.runs import parse_executions
from workbench.errors import InvalidInput

if TYPE_CHECKING:
    from workbench.composition import Gateway
    from workbench.identity.auth import Principal

__all__ = [
    "META_TOOLS",
    "OUTPUT_SCHEMAS",
    "TOOL_ANNOTATIONS",
    "MetaTools",
    "listed_tools",
    "meta_tool_names",
]


CURL_SESSION_DESCRIPTION = (
    "HIGH RISK — do not call without explicit user approval. Mints a short-lived proxy token (15 min by "
    "default; set expiresInSeconds for 60s–1h, and ask for no longer than the task needs) granting "
    "ARBITRARY API calls (GET/POST/PUT/PATCH/DELETE), including destructive writes, against the listed "
    "integration(s) — the proxy injects the user's real credential transparently at "
    "/c/<integration>/<path>, so anything reachable via that credential is reachable through this token. "
    "Before invoking, tell the user exactly which integration(s) and what action you intend to perform, and "
    "wait for their explicit go-ahead; do not mint speculatively or as a default first step. Only "
    "integrations that have curl proxy enabled are accepted."
)

EXECUTE_DESCRIPTION = (
    "Execute one or more tools in a single call. Runs them concurrently (bounded) and returns a results "
    "array in the same order as executions. A single tool failing does not abort the others — its entry "
    "carries an error instead of a result. For a single tool, pass a one-element executions array.\n\n"
    "ref_id names an execution so later parts of the call can read its result. With compose: true, "
    "executions run in order (at most 8, each with a ref_id) and a step's args may embed earlier results "
    "as {{step:<ref_id>.<path>}} (path segments are keys or array indexes); a whole-string ref keeps the "
    "value's type, an embedded one is interpolated. A failed step ends the run. {{vault:NAME}} inserts a "
    "secret from the user's vault. return is a template over results by ref_id ({{step:...}} refs only); "
    "its shape is the response shape and it is the only thing sent back — use it to keep large "
    "intermediate payloads out of the response. Without compose, failed executions are listed under "
    "errors next to the projection."
)

_EXECUTION_SCHEMA = {
    "type": "object",
    "properties": {
        "tool": {"type": "string", "description": "Tool name, as search_tools returns it"},
        "args": {"type": "object", "description": "Arguments matching the tool's schema", "default": {}},
        "ref_id": {
            "type": "string",
            "description": "Name for this execution's result (required with compose)",
        },
    },
    "required": ["tool"],
}

META_TOOLS: list[dict[str, Any]] = [
    {
        "name": "search_tools",
        "description": (
            'Search available tools by what you want to do, e.g. "create jira issue" or "send email". Matches '
            "words in any order, tolerates typos and common synonyms, and returns the best matches first with a "
            "relevance score. Returns the top 10 by default; pass limit (max 50) for more."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What you want to do"},
                "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10},
            },
            "required": ["query"],
        },
    },
    {
        "name": "get_tool_schema",
        "description": "Get input schema for a specific tool",
        "inputSchema": {
            "type": "object",
            "properties": {"tool": {"type": "string", "description": "Tool name"}},
            "required": ["tool"],
        },
    },
    {
        "name": "execute_tools",
        "description": EXECUTE_DESCRIPTION,
        "inputSchema": {
            "type": "object",
            "properties": {
                "executions": {"type": "array", "minItems": 1, "items": _EXECUTION_SCHEMA},
                "compose": {"type": "boolean", "default": False},
                "return": {"description": "Projection template over results by ref_id"},
            },
            "required": ["executions"],
        },
    },
    {
        "name": "whoami",
        "description": (
            "Return the current authenticated workbench user (id + email). Like /me — identity only, not "
            "connected integrations."
        ),
        "inputSchema": {"type": "object", "properties": {}},
    },
    {
        "name": "list_integrations",
        "description": "List all available integrations and connection status",
        "inputSchema": {"type": "object", "properties": {}},
    },
    {
        "name": "connect",
        "description": (
            "Begin connecting an integration. Returns a connectionId and a workbench URL for the user to open. "
            "The user must be signed in to workbench as the same account this agent is connected to; the link "
            "will not work for anyone else. Call wait_for_connection afterward."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {"integration": {"type": "string"}},
            "required": ["integration"],
        },
    },
    {
        "name": "wait_for_connection",
        "description": (
            "Block until a connection started by connect() completes. Returns status CONNECTED, TIMEOUT, or "
            "EXPIRED. One call blocks for at most about 20 seconds (the hosting platform's request limit); if "
            "timeoutSec (counted from when connect() minted the link) has not yet passed, it returns status "
            "PENDING and you should call it again with the same connectionId."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "connectionId": {"type": "string"},
                "timeoutSec": {"type": "integer", "minimum": 1, "maximum": 3600, "default": 600},
            },
            "required": ["connectionId"],
        },
    },
    {
        "name": "get_auth_url",
        "description": "Deprecated alias of connect(). Get a URL to connect an integration.",
        "inputSchema": {
            "type": "object",
            "properties": {"integration": {"type": "string"}},
            "required": ["integration"],
        },
    },
    {
        "name": "curl_session",
        "description": CURL_SESSION_DESCRIPTION,
        "inputSchema": {
            "type": "object",
            "properties": {
                "integrations": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                "expiresInSeconds": {"type": "integer", "minimum": 60, "maximum": 3600},
            },
            "required": ["integrations"],
        },
    },
]


_STR = {"type": "string"}
_CONNECT_OUTPUT = {
    "type": "object",
    "properties": {
        "connectionId": _STR,
        "type": {"type": "string", "enum": ["oauth2", "cookie"]},
        "url": _STR,
        "error": _STR,
    },
}

# What clients of 2025-03-26+ read next to each tool: a title and behaviour hints. execute_tools and
# curl_session reach arbitrary third-party APIs with the user's credentials, so they are destructive
# and open-world; the discovery and identity tools only read. `connect` writes a pending record
# but never contacts the provider.
TOOL_ANNOTATIONS: dict[str, dict[str, Any]] = {
    "search_tools": {"title": "Search tools", "readOnlyHint": True, "openWorldHint": False},
    "get_tool_schema": {"title": "Get a tool's input schema", "readOnlyHint": True, "openWorldHint": False},
    "execute_tools": {
        "title": "Execute tools",
        "readOnlyHint": False,
        "destructiveHint": True,
        "idempotentHint": False,
        "openWorldHint": True,
    },
    "whoami": {"title": "Who am I", "readOnlyHint": True, "openWorldHint": False},
    "list_integrations": {"title": "List integrations", "readOnlyHint": True, "openWorldHint": False},
    "connect": {
        "title": "Connect an integration",
        "readOnlyHint": False,
        "destructiveHint": False,
        "idempotentHint": False,
        "openWorldHint": False,
    },
    "wait_for_connection": {"title": "Wait for a connection", "readOnlyHint": True, "openWorldHint": False},
    "get_auth_url": {
        "title": "Connect an integration (deprecated alias)",
        "readOnlyHint": False,
        "destructiveHint": False,
        "idempotentHint": False,
        "openWorldHint": False,
    },
    "curl_session": {
        "title": "Mint a curl proxy session (high risk)",
        "readOnlyHint": False,
        "destructiveHint": True,
        "idempotentHint": False,
        "openWorldHint": True,
    },
}

# outputSchema only where the payload's shape is fixed AND small enough never to meet the result
# cap: an SDK client refuses a result without structuredContent when the tool declares one, and a
# capped text block cannot carry it. search_tools, get_tool_schema and execute_tools carry
# third-party text of any size, so they declare none (they still get structuredContent when whole).
OUTPUT_SCHEMAS: dict[str, dict[str, Any]] = {
    "whoami": {"type": "object", "properties": {"id": _STR, "email": _STR, "error": _STR}},
    "list_integrations": {
        "type": "object",
        "properties": {
            "integrations": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"name": _STR, "version": _STR, "connected": {"type": "boolean"}},
                    "required": ["name", "version", "connected"],
                },
            }
        },
        "required": ["integrations"],
    },
    "connect": _CONNECT_OUTPUT,
    "get_auth_url": _CONNECT_OUTPUT,
    "wait_for_connection": {
        "type": "object",
        "properties": {
            "status": {"type": "string", "enum": ["CONNECTED", "PENDING", "TIMEOUT", "EXPIRED"]},
            "message": _STR,
            "error": _STR,
        },
    },
    "curl_session": {
        "type": "object",
        "properties": {
            "token": _STR,
            "expiresIn": {"type": "integer"},
            "proxyBaseUrl": _STR,
            "usage": _STR,
            "error": _STR,
        },
    },
}


def listed_tools(*, annotations: bool, structured: bool) -> list[dict[str, Any]]:
    """The nine tools as tools/list answers them for a protocol revision: `annotations` from
    2025-03-26, `title` + `outputSchema` from 2025-06-18 (`structured`)."""
    tools = []
    for tool in META_TOOLS:
        entry = dict(tool)
        hints = TOOL_ANNOTATIONS[tool["name"]]
        if structured:
            entry["title"] = hints["title"]
            if tool["name"] in OUTPUT_SCHEMAS:
                entry["outputSchema"] = OUTPUT_SCHEMAS[tool["name"]]
        if annotations:
            entry["annotations"] = dict(hints)
        tools.append(entry)
    return tools


def meta_tool_names() -> list[str]:
    return [t["name"] for t in META_TOOLS]


def _require_str(args: dict[str, Any], key: str) -> str:
    value = args.get(key)
    if not isinstance(value, str) or not value:
        raise InvalidInput(f"'{key}' is required and must be a non-empty string")
    return value


def _opt_int(args: dict[str, Any], key: str, default: int | None, lo: int, hi: int) -> int | None:
    value = args.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"'{key}' must be an integer")
    if not lo <= value <= hi:
        raise InvalidInput(f"'{key}' must be between {lo} and {hi}")
    return value


class MetaTools:
    """Handlers for the nine meta-tools, bound to one gateway."""

    def __init__(self, gateway: Gateway) -> None:
        self.gw = gateway

    async def call(self, name: str, principal: Principal, args: dict[str, Any]) -> Any:
        handler = getattr(self, f"_{name}", None)
        if name not in meta_tool_names() or handler is None:
            raise InvalidInput(f"Unknown tool: {name}")
        if inspect.iscoroutinefunction(handler):
            return await handler(principal, args)
        # The plain handlers are store reads and writes from start to end: run in the store pool.
        return await self.gw.store_io.run(handler, principal, args)

    # -- discovery ------------------------------------------------------------------------------

    async def _search_tools(self, principal: Principal, args: dict[str, Any]) -> Any:
        query = _require_str(args, "query")
        limit = _opt_int(args, "limit", 10, 1, 50) or 10
        return {"tools": await self.gw.catalog.search_tools(principal, query, limit)}

    async def _get_tool_schema(self, principal: Principal, args: dict[str, Any]) -> Any:
        name = _require_str(args, "tool")
        hit = await self.gw.catalog.lookup(principal, name)
        if hit is None:
            return {"error": "Tool not found"}
        tool, manifest = hit
        annotations = tool.annotations or manifest.annotations(tool.name)
        return {"schema": tool.json_schema(), "annotations": dict(annotations)}

    def _whoami(self, principal: Principal, args: dict[str, Any]) -> Any:
        user = self.gw.auth.user(principal.user.id)
        if user is None:
            return {"error": "User not found"}
        return {"id": user.id, "email": user.email}

    def _list_integrations(self, principal: Principal, args: dict[str, Any]) -> Any:
        return {"integrations": self.gw.catalog.integrations(principal.user.id)}

    # -- execution -------------------------------------------------------------------------------

    async def _execute_tools(self, principal: Principal, args: dict[str, Any]) -> Any:
        executions, compose, template, has_return = parse_executions(args)
        return await self.gw.runs.execute(
            principal, executions, compose=compose, template=template, has_return=has_return
        )

    # -- connections -----------------------------------------------------------------------------

    async def _connect(self, principal: Principal, args: dict[str, Any]) -> Any:
        integration = _require_str(args, "integration")
        if self.gw.external is not None:  # an OAuth-protected custom app is set up on first connect
            problem = await self.gw.external.before_connect(principal.user.id, integration)
            if problem is not None:
                return {"error": problem}
        return await self.gw.store_io.run(self.gw.connections.start, principal.user, integration)

    _get_auth_url = _connect

    async def _wait_for_connection(self, principal: Principal, args: dict[str, Any]) -> Any:
        connection_id = _require_str(args, "connectionId")
        timeout = _opt_int(args, "timeoutSec", 600, 1, 3600) or 600
        return await self.gw.connections.wait(principal.user, connection_id, timeout)

    def _curl_session(self, principal: Principal, args: dict[str, Any]) -> Any:
        names = args.get("integrations")
        if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
            raise InvalidInput("'integrations' must be a non-empty array of strings")
        expires = _opt_int(args, "expiresInSeconds", 900, 60, 3600) or 900
        return self.gw.curl.mint(principal, names, expires)
