"""The nine MCP meta-tools, each declared once as a `MetaTool` record (seed 001's descriptions).

A record holds everything about one tool: its name, description, input schema, title and behaviour
hints (annotations), output schema (where the payload's shape is fixed and small), its handler, and
where that handler runs (`runs`: "loop" for a coroutine that only awaits, "pool" for a plain function
that is store reads and writes from start to end, run on the store pool). The MCP SDK's tool
manager keeps the same shape (`mcp.server.fastmcp.tools.Tool`). `tools/list` (`listed_tools`),
dispatch (`MetaTools.call`) and docs/meta-tools.md (`meta_tools_markdown`) all derive from
`META_TOOLS`; adding a meta-tool is one record here (docs/contributing.md).

Handlers return the JSON payload; each surface decides how to wrap it. Meta-tool arguments that
fail the meta-tool's own schema raise `InvalidInput` (-32602 over MCP).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from workbench.engine.runs import parse_executions
from workbench.errors import InvalidInput

if TYPE_CHECKING:
    from workbench.composition import Gateway
    from workbench.identity.auth import Principal

__all__ = [
    "META_TOOLS",
    "MetaTool",
    "MetaTools",
    "listed_tools",
    "meta_tool",
    "meta_tool_names",
    "meta_tools_markdown",
]

Handler = Callable[["Gateway", "Principal", dict[str, Any]], Any]


@dataclass(frozen=True, slots=True)
class MetaTool:
    name: str
    title: str
    description: str
    input_schema: Mapping[str, Any]
    # MCP ToolAnnotations without the title (readOnlyHint, destructiveHint, idempotentHint, openWorldHint).
    hints: Mapping[str, Any]
    handler: Handler
    # "loop": a coroutine function awaited on the event loop (it must not block);
    # "pool": a plain function, run on the gateway's store pool (blocking store calls).
    runs: Literal["loop", "pool"]
    output_schema: Mapping[str, Any] | None = None
    # `annotations` as clients of 2025-03-26+ read them: the title, then the hints.
    annotations: Mapping[str, Any] = field(init=False)

    def __post_init__(self) -> None:
        is_coroutine = inspect.iscoroutinefunction(self.handler)
        if (self.runs == "loop") != is_coroutine:
            raise TypeError(
                f"meta-tool {self.name}: runs={self.runs!r} needs a "
                f"{'coroutine' if self.runs == 'loop' else 'plain'} function as its handler"
            )
        object.__setattr__(self, "annotations", MappingProxyType({"title": self.title, **self.hints}))

    def listing(self, *, annotations: bool, structured: bool) -> dict[str, Any]:
        """This tool as tools/list answers it for a protocol revision: `annotations` from
        2025-03-26, `title` + `outputSchema` from 2025-06-18 (`structured`)."""
        entry: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "inputSchema": _plain(self.input_schema),
        }
        if structured:
            entry["title"] = self.title
            if self.output_schema is not None:
                entry["outputSchema"] = _plain(self.output_schema)
        if annotations:
            entry["annotations"] = dict(self.annotations)
        return entry


def _plain(value: Any) -> Any:
    """A fresh JSON-ready copy (callers may mutate what they are handed)."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


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


# -- the handlers -------------------------------------------------------------------------------


async def _search_tools(gw: Gateway, principal: Principal, args: dict[str, Any]) -> Any:
    query = _require_str(args, "query")
    limit = _opt_int(args, "limit", 10, 1, 50) or 10
    return {"tools": await gw.catalog.search_tools(principal, query, limit)}


async def _get_tool_schema(gw: Gateway, principal: Principal, args: dict[str, Any]) -> Any:
    name = _require_str(args, "tool")
    hit = await gw.catalog.lookup(principal, name)
    if hit is None or not gw.catalog.offers(principal, hit[0], hit[1]):  # what the grant hides: not found
        return {"error": "Tool not found"}
    tool, manifest = hit
    annotations = tool.annotations or manifest.annotations(tool.name)
    return {"schema": tool.json_schema(), "annotations": dict(annotations)}


def _whoami(gw: Gateway, principal: Principal, args: dict[str, Any]) -> Any:
    user = gw.auth.user(principal.user.id)
    if user is None:
        return {"error": "User not found"}
    return {"id": user.id, "email": user.email, "grant": principal.grant.as_json()}


def _list_integrations(gw: Gateway, principal: Principal, args: dict[str, Any]) -> Any:
    grant = principal.grant  # what the caller's grant excludes is not offered
    listed = gw.catalog.integrations(principal.user.id)
    return {"integrations": [i for i in listed if grant.allows_integration(str(i["name"]))]}


async def _execute_tools(gw: Gateway, principal: Principal, args: dict[str, Any]) -> Any:
    executions, compose, template, has_return = parse_executions(args)
    return await gw.runs.execute(
        principal, executions, compose=compose, template=template, has_return=has_return
    )


async def _connect(gw: Gateway, principal: Principal, args: dict[str, Any]) -> Any:
    integration = _require_str(args, "integration")
    if not principal.grant.allows_integration(integration):
        return {
            "error": f"{principal.grant_holder} may not use {integration} (its grant); the user can add it "
            f"on {principal.grant_change}"
        }
    if gw.external is not None:  # an OAuth-protected custom app is set up on first connect
        problem = await gw.external.before_connect(principal.user.id, integration)
        if problem is not None:
            return {"error": problem}
    return await gw.store_io.run(gw.connections.start, principal.user, integration)


async def _wait_for_connection(gw: Gateway, principal: Principal, args: dict[str, Any]) -> Any:
    connection_id = _require_str(args, "connectionId")
    timeout = _opt_int(args, "timeoutSec", 600, 1, 3600) or 600
    if connection_id.startswith("apr_") and gw.approvals is not None:  # an approval's decision
        return await gw.approvals.wait(principal.user, connection_id, timeout)
    return await gw.connections.wait(principal.user, connection_id, timeout)


def _curl_session(gw: Gateway, principal: Principal, args: dict[str, Any]) -> Any:
    names = args.get("integrations")
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise InvalidInput("'integrations' must be a non-empty array of strings")
    expires = _opt_int(args, "expiresInSeconds", 900, 60, 3600) or 900
    return gw.curl.mint(principal, names, expires)


# -- the records ---------------------------------------------------------------------------------

_STR = {"type": "string"}
_CONNECT_INPUT = {
    "type": "object",
    "properties": {"integration": {"type": "string"}},
    "required": ["integration"],
}
_CONNECT_OUTPUT = {
    "type": "object",
    "properties": {
        "connectionId": _STR,
        "type": {"type": "string", "enum": ["oauth2", "cookie"]},
        "url": _STR,
        "error": _STR,
    },
}
# Behaviour hints. execute_tools and curl_session reach arbitrary third-party APIs with the user's
# credentials, so they are destructive and open-world; the discovery and identity tools only read.
# `connect` writes a pending record but never contacts the provider.
_READS = {"readOnlyHint": True, "openWorldHint": False}
_CONNECTS = {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": False, "openWorldHint": False}
_REACHES_OUT = {
    "readOnlyHint": False,
    "destructiveHint": True,
    "idempotentHint": False,
    "openWorldHint": True,
}

# outputSchema only where the payload's shape is fixed AND small enough never to meet the result
# cap: an SDK client refuses a result without structuredContent when the tool declares one, and a
# capped text block cannot carry it. search_tools, get_tool_schema and execute_tools carry
# third-party text of any size, so they declare none (they still get structuredContent when whole).
META_TOOLS: tuple[MetaTool, ...] = (
    MetaTool(
        name="search_tools",
        title="Search tools",
        description=(
            'Search available tools by what you want to do, e.g. "create jira issue" or "send email". Matches '
            "words in any order, tolerates typos and common synonyms, and returns the best matches first with a "
            "relevance score. Returns the top 10 by default; pass limit (max 50) for more."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What you want to do"},
                "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10},
            },
            "required": ["query"],
        },
        hints=_READS,
        handler=_search_tools,
        runs="loop",
    ),
    MetaTool(
        name="get_tool_schema",
        title="Get a tool's input schema",
        description="Get input schema for a specific tool",
        input_schema={
            "type": "object",
            "properties": {"tool": {"type": "string", "description": "Tool name"}},
            "required": ["tool"],
        },
        hints=_READS,
        handler=_get_tool_schema,
        runs="loop",
    ),
    MetaTool(
        name="execute_tools",
        title="Execute tools",
        description=EXECUTE_DESCRIPTION,
        input_schema={
            "type": "object",
            "properties": {
                "executions": {"type": "array", "minItems": 1, "items": _EXECUTION_SCHEMA},
                "compose": {"type": "boolean", "default": False},
                "return": {"description": "Projection template over results by ref_id"},
            },
            "required": ["executions"],
        },
        hints=_REACHES_OUT,
        handler=_execute_tools,
        runs="loop",
    ),
    MetaTool(
        name="whoami",
        title="Who am I",
        description=(
            "Return the current authenticated workbench user (id + email). Like /me — identity only, not "
            "connected integrations."
        ),
        input_schema={"type": "object", "properties": {}},
        hints=_READS,
        handler=_whoami,
        runs="pool",
        output_schema={
            "type": "object",
            "properties": {
                "id": _STR,
                "email": _STR,
                "error": _STR,
                "grant": {
                    "type": "object",
                    "properties": {
                        "access": {"type": "string", "enum": ["full", "read-only", "approve"]},
                        "integrations": {
                            "anyOf": [{"type": "string", "enum": ["all"]}, {"type": "array", "items": _STR}]
                        },
                        "deniedTools": {"type": "array", "items": _STR},
                    },
                },
            },
        },
    ),
    MetaTool(
        name="list_integrations",
        title="List integrations",
        description="List all available integrations and connection status",
        input_schema={"type": "object", "properties": {}},
        hints=_READS,
        handler=_list_integrations,
        runs="pool",
        output_schema={
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
    ),
    MetaTool(
        name="connect",
        title="Connect an integration",
        description=(
            "Begin connecting an integration. Returns a connectionId and a workbench URL for the user to open. "
            "The user must be signed in to workbench as the same account this agent is connected to; the link "
            "will not work for anyone else. Call wait_for_connection afterward."
        ),
        input_schema=_CONNECT_INPUT,
        hints=_CONNECTS,
        handler=_connect,
        runs="loop",
        output_schema=_CONNECT_OUTPUT,
    ),
    MetaTool(
        name="wait_for_connection",
        title="Wait for a connection",
        description=(
            "Block until a connection started by connect() completes. Returns status CONNECTED, TIMEOUT, or "
            "EXPIRED. One call blocks for at most about 20 seconds (the hosting platform's request limit); if "
            "timeoutSec (counted from when connect() minted the link) has not yet passed, it returns status "
            "PENDING and you should call it again with the same connectionId. It also waits for a person's "
            "decision on an approval: pass the approval id (apr_…) an execute_tools item gave you; it returns "
            "APPROVED or DENIED."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "connectionId": {"type": "string"},
                "timeoutSec": {"type": "integer", "minimum": 1, "maximum": 3600, "default": 600},
            },
            "required": ["connectionId"],
        },
        hints=_READS,
        handler=_wait_for_connection,
        runs="loop",
        output_schema={
            "type": "object",
            "properties": {
                "status": {
                    "type": "string",
                    "enum": ["CONNECTED", "PENDING", "TIMEOUT", "EXPIRED", "APPROVED", "DENIED"],
                },
                "message": _STR,
                "error": _STR,
            },
        },
    ),
    MetaTool(
        name="get_auth_url",
        title="Connect an integration (deprecated alias)",
        description="Deprecated alias of connect(). Get a URL to connect an integration.",
        input_schema=_CONNECT_INPUT,
        hints=_CONNECTS,
        handler=_connect,
        runs="loop",
        output_schema=_CONNECT_OUTPUT,
    ),
    MetaTool(
        name="curl_session",
        title="Mint a curl proxy session (high risk)",
        description=CURL_SESSION_DESCRIPTION,
        input_schema={
            "type": "object",
            "properties": {
                "integrations": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                "expiresInSeconds": {"type": "integer", "minimum": 60, "maximum": 3600},
            },
            "required": ["integrations"],
        },
        hints=_REACHES_OUT,
        handler=_curl_session,
        runs="pool",
        output_schema={
            "type": "object",
            "properties": {
                "token": _STR,
                "expiresIn": {"type": "integer"},
                "proxyBaseUrl": _STR,
                "usage": _STR,
                "error": _STR,
            },
        },
    ),
)

_BY_NAME: dict[str, MetaTool] = {t.name: t for t in META_TOOLS}


def meta_tool(name: str) -> MetaTool | None:
    return _BY_NAME.get(name)


def meta_tool_names() -> list[str]:
    return [t.name for t in META_TOOLS]


def listed_tools(*, annotations: bool, structured: bool) -> list[dict[str, Any]]:
    """The nine tools as tools/list answers them for a protocol revision: `annotations` from
    2025-03-26, `title` + `outputSchema` from 2025-06-18 (`structured`)."""
    return [t.listing(annotations=annotations, structured=structured) for t in META_TOOLS]


class MetaTools:
    """Dispatch of the nine meta-tools for one gateway."""

    def __init__(self, gateway: Gateway) -> None:
        self.gw = gateway

    async def call(self, name: str, principal: Principal, args: dict[str, Any]) -> Any:
        tool = _BY_NAME.get(name)
        if tool is None:
            raise InvalidInput(f"Unknown tool: {name}")
        if tool.runs == "loop":
            result: Awaitable[Any] = tool.handler(self.gw, principal, args)
            return await result
        return await self.gw.store_io.run(tool.handler, self.gw, principal, args)


def meta_tools_markdown() -> str:
    """docs/meta-tools.md, written from the records (tests/mcp/test_meta_tool_records.py keeps the
    file equal to this). Regenerate with: uv run python -c "from workbench.engine.meta import
    meta_tools_markdown as m; print(m(), end='')" > docs/meta-tools.md"""
    lines = [
        "# The meta-tools",
        "",
        "Generated from `shared/workbench/engine/meta.py` (`META_TOOLS`); do not edit by hand.",
        "`tools/list` returns exactly these nine tools; plugin tools are found with `search_tools`",
        "and run with `execute_tools`.",
        "",
        "| tool | title | read-only | destructive | open world | runs on | output schema |",
        "|---|---|---|---|---|---|---|",
    ]
    for t in META_TOOLS:
        hints = t.hints
        lines.append(
            f"| `{t.name}` | {t.title} | {_yes(hints.get('readOnlyHint'))} | {_yes(hints.get('destructiveHint'))} "
            f"| {_yes(hints.get('openWorldHint'))} | {'event loop' if t.runs == 'loop' else 'store pool'} "
            f"| {'yes' if t.output_schema is not None else 'no'} |"
        )
    for t in META_TOOLS:
        props = t.input_schema.get("properties", {})
        required = set(t.input_schema.get("required", ()))
        args = ", ".join(f"`{k}`{'' if k in required else ' (optional)'}" for k in props) or "none"
        lines += ["", f"## `{t.name}`", "", t.description, "", f"Arguments: {args}."]
    return "\n".join(lines) + "\n"


def _yes(flag: Any) -> str:
    return "yes" if flag else "no"
