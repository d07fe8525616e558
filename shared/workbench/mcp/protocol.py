"""JSON-RPC dispatch for /mcp, independent of the web framework.

Dual-era and stateless: a request carrying `_meta["io.modelcontextprotocol/protocolVersion"]`
(2026-07-28) is served per request; `initialize` selects a legacy revision, and since nothing is
kept between requests no session id is ever minted.

Wire errors, all mapped here: -32700 Parse error (HTTP 400: not strict JSON, see jsontext.parse),
-32600 Invalid Request (HTTP 400), -32001 Unauthorized (HTTP 401 + WWW-Authenticate), -32601 Method
not found, -32602 Invalid params (unknown meta-tool, meta-tool arguments that fail its schema,
malformed per-request _meta), and the 2026-07-28 transport errors -32020 HeaderMismatch and -32022
UnsupportedProtocolVersion. Tool failures are never JSON-RPC errors. Every JSON-RPC error answered
to an authenticated caller writes an `MCP_ERROR` audit event.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from workbench import __version__
from workbench.engine.meta import MetaTools, listed_tools, meta_tool
from workbench.errors import AuthError, InvalidInput, WorkbenchError, as_unavailable
from workbench.guard.jsontext import JsonRejected, escape_lone_surrogates, finite, parse_body
from workbench.identity.auth import Principal

if TYPE_CHECKING:
    from workbench.composition import Gateway

__all__ = ["HANDSHAKE_VERSIONS", "MODERN_VERSIONS", "HttpReply", "McpServer", "render_tool_payload"]

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
MODERN_VERSIONS = ("2026-07-28",)
SUPPORTED_VERSIONS = (*MODERN_VERSIONS, *reversed(HANDSHAKE_VERSIONS))
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPS = "io.modelcontextprotocol/clientCapabilities"
META_SERVER = "io.modelcontextprotocol/serverInfo"
SERVER_INFO = {"name": "workbench", "version": __version__}
INSTRUCTIONS = (
    "Workbench reaches every tool of every integration the user connected through nine meta-tools: "
    "search_tools to find a tool, get_tool_schema to read its arguments, execute_tools to run it. "
    "A NOT_CONNECTED result means: call connect, give the user the link, then wait_for_connection."
)
TRUNCATION_NOTICE = (
    "\n\n[truncated: the response is longer than the cap of {cap} characters. Pass limit/perPage "
    "arguments, use return to project what you need, or split the batch.]"
)

UNAUTHORIZED = -32001
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INVALID_REQUEST = -32600
PARSE_ERROR = -32700
HEADER_MISMATCH = -32020
UNSUPPORTED_VERSION = -32022


class HttpReply:
    # A plain class: every cold start builds this module's classes (a dataclass costs about 1 ms).
    __slots__ = ("body", "headers", "status")

    def __init__(self, status: int, body: Any = None, headers: dict[str, str] | None = None) -> None:
        self.status = status
        self.body = body  # JSON-serialisable, or None for an empty body
        self.headers = {} if headers is None else headers


class _RpcError(WorkbenchError):
    def __init__(self, code: int, message: str, status: int = 200, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.message, self.status, self.data = code, message, status, data


def _decode_header_value(value: str) -> str:
    if value.startswith("=?base64?") and value.endswith("?="):
        try:
            return base64.b64decode(value[9:-2], validate=True).decode()
        except ValueError as exc:
            raise _RpcError(HEADER_MISMATCH, "Header mismatch: invalid base64 header value", 400) from exc
    return value


def _find_images(value: Any, found: list[dict[str, str]]) -> None:
    if isinstance(value, dict):
        image = value.get("_mcpImage")
        if isinstance(image, dict) and isinstance(image.get("data"), str):
            found.append(
                {"type": "image", "data": image["data"], "mimeType": image.get("mimeType", "image/png")}
            )
            return
        for v in value.values():
            _find_images(v, found)
    elif isinstance(value, list):
        for v in value:
            _find_images(v, found)


def render_tool_payload(payload: Any, cap: int) -> list[dict[str, Any]]:
    """Content blocks for a meta-tool payload: image blocks if any `_mcpImage` sentinel, else one
    text block capped at `cap` characters with a truncation notice."""
    return _render(payload, cap)[0]


def _render(payload: Any, cap: int) -> tuple[list[dict[str, Any]], bool]:
    """(content blocks, whether the blocks carry the whole payload as JSON text)."""
    images: list[dict[str, str]] = []
    _find_images(payload, images)
    if images:
        return list(images), False
    text, whole = _capped_json(payload, cap)
    if not whole:
        return [{"type": "text", "text": text + TRUNCATION_NOTICE.format(cap=cap)}], False
    return [{"type": "text", "text": text}], True


_ENCODER = json.JSONEncoder(ensure_ascii=False, default=str, allow_nan=False)


def _capped_json(payload: Any, cap: int) -> tuple[str, bool]:
    """(the payload's JSON text, at most `cap` characters; whether that is all of it).

    Always valid JSON whatever an upstream sent: NaN/Infinity become null and lone surrogates are
    escaped (as JSON.stringify writes them), so the text block can be encoded as UTF-8."""
    try:
        text, whole = _capped_json_text(payload, cap)
    except ValueError:  # a non-finite number somewhere in a result
        text, whole = _capped_json_text(finite(payload), cap)
    return escape_lone_surrogates(text), whole


def _capped_json_text(payload: Any, cap: int) -> tuple[str, bool]:
    """A payload that is certainly over the cap is encoded incrementally and only up to the cap, so
    a multi-megabyte result costs what 60,000 characters cost, not its whole size."""
    if not _longer_than(payload, cap):
        text = _ENCODER.encode(payload)
        return (text, True) if len(text) <= cap else (text[:cap], False)
    parts: list[str] = []
    size = 0
    for chunk in _ENCODER.iterencode(payload):
        parts.append(chunk)
        size += len(chunk)
        if size > cap:
            return "".join(parts)[:cap], False
    return "".join(parts), True


def _longer_than(payload: Any, budget: int) -> bool:
    """Whether `payload`'s JSON text is certainly longer than `budget` characters: counts a lower
    bound (string lengths plus punctuation) and stops as soon as it is over."""
    stack = [payload]
    seen = 0
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            seen += len(value) + 2  # its quotes
        elif isinstance(value, dict):
            seen += 2 + len(value)  # the braces, and a colon per member
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, list | tuple):
            seen += 2  # the brackets
            stack.extend(value)
        else:
            seen += 1  # a number, true/false/null: at least one character
        if seen > budget:
            return True
    return False


def _revision_features(version: str) -> tuple[bool, bool]:
    """(tool annotations, structured output) for a protocol revision; an absent header on a legacy
    request means 2025-03-26 (the transport spec's assumption)."""
    return version >= "2025-03-26", version >= "2025-06-18"


class McpServer:
    def __init__(self, gateway: Gateway) -> None:
        self.gw = gateway
        self.meta = MetaTools(gateway)
        base = gateway.settings.public_url.rstrip("/")
        self.resource_metadata_url = f"{base}/.well-known/oauth-protected-resource/mcp"
        self._tool_lists = {
            (a, st): listed_tools(annotations=a, structured=st) for a in (False, True) for st in (False, True)
        }

    def _unauthorized(self, req_id: Any, detail: str) -> HttpReply:
        return HttpReply(
            401,
            {
                "jsonrpc": "2.0",
                "id": req_id,
                "error": {"code": UNAUTHORIZED, "message": f"Unauthorized: {detail}"},
            },
            {"WWW-Authenticate": f'Bearer resource_metadata="{self.resource_metadata_url}"'},
        )

    async def authenticate(self, headers: Mapping[str, str], *, defer: bool = False) -> Principal:
        raw = headers.get("authorization", "")
        scheme, _, token = raw.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise AuthError("missing bearer token")
        return await self.gw.auth.authenticate(token.strip(), defer=defer)

    async def handle(
        self, body: bytes, headers: Mapping[str, str], principal: Principal | None = None
    ) -> HttpReply:
        """`headers` must be lower-cased names. `principal`: already authenticated by the surface
        (the portal session path, seed 003); otherwise the bearer token decides."""
        try:
            message = await parse_body(body)  # a large body on a thread (jsontext)
        except JsonRejected as exc:
            return await self._refused(
                headers, principal, HttpReply(400, _error(None, PARSE_ERROR, f"Parse error: {exc}"))
            )
        if (
            not isinstance(message, dict)
            or message.get("jsonrpc") != "2.0"
            or not isinstance(message.get("method"), str)
            or not _valid_id(message.get("id"))
        ):
            req_id = message.get("id") if isinstance(message, dict) and _valid_id(message.get("id")) else None
            reply = HttpReply(
                400, _error(req_id, INVALID_REQUEST, "Invalid Request: one JSON-RPC 2.0 message per POST")
            )
            return await self._refused(headers, principal, reply)
        req_id = message.get("id")
        is_notification = "id" not in message
        try:
            if principal is None:
                try:
                    # A call that reads a batch first thing: a lapsed key's check rides along.
                    principal = await self.authenticate(headers, defer=_batch_first(message))
                except AuthError as exc:
                    return self._unauthorized(req_id, str(exc))
            if is_notification:
                return HttpReply(202)
            try:
                result = await self._dispatch(message, headers, principal)
            except _RpcError as exc:
                if (refused := await self._unconfirmed(req_id, principal)) is not None:
                    return refused
                await self._audit_error(principal, message["method"], exc.code, exc.message)
                return HttpReply(exc.status, _error(req_id, exc.code, exc.message, exc.data))
            except AuthError:
                if (
                    principal.recheck is None
                    or (refused := await self._unconfirmed(req_id, principal)) is None
                ):
                    raise
                return refused
            # Never an answer on a key taken on trust: checked with the call's batch, or now.
            if (refused := await self._unconfirmed(req_id, principal)) is not None:
                return refused
        except Exception as exc:
            outage = as_unavailable(exc)
            if outage is None:
                raise
            # The store or KMS did not answer: a JSON-RPC error for this request, "try again".
            from workbench.guard.outage import RPC_UNAVAILABLE, log_outage

            log_outage("/mcp", outage)
            rpc = _error(req_id, RPC_UNAVAILABLE, str(outage), {"retryAfter": outage.retry_after})
            return HttpReply(503, rpc, {"Retry-After": str(outage.retry_after)})
        return HttpReply(200, {"jsonrpc": "2.0", "id": req_id, "result": result})

    async def _unconfirmed(self, req_id: Any, principal: Principal) -> HttpReply | None:
        """The 401 for a principal whose deferred key check (KeyRecheck) failed; None when it stands."""
        try:
            await self.gw.auth.confirm(principal)
        except AuthError as exc:
            return self._unauthorized(req_id, str(exc))
        return None

    async def _refused(
        self, headers: Mapping[str, str], principal: Principal | None, reply: HttpReply
    ) -> HttpReply:
        """A message refused before dispatch: audited when a credential names its user."""
        if principal is None:
            try:
                principal = await self.authenticate(headers)
            except AuthError:
                return reply  # nobody to attribute it to; the answer is the same
        error = reply.body["error"]
        await self._audit_error(principal, None, error["code"], error["message"])
        return reply

    async def _audit_error(self, principal: Principal, method: str | None, code: int, message: str) -> None:
        await self.gw.runs.audit(
            {
                "action": "MCP_ERROR",
                "user": principal.user.id,
                "method": method,
                "code": code,
                "success": False,
                "error": message,
                "ts": self.gw.clock(),
                "via": principal.via,
            }
        )

    async def _dispatch(
        self, message: dict[str, Any], headers: Mapping[str, str], principal: Principal
    ) -> Any:
        method: str = message["method"]
        params = message.get("params") or {}
        if not isinstance(params, dict):
            raise _RpcError(INVALID_PARAMS, "params must be an object")
        raw_meta = params.get("_meta")
        meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
        header_version = headers.get("mcp-protocol-version")
        modern = (
            any(k.startswith("io.modelcontextprotocol/") for k in meta)
            or header_version in MODERN_VERSIONS
            or method == "server/discover"
        )

        version = header_version if header_version in HANDSHAKE_VERSIONS else "2025-03-26"
        if modern:
            self._validate_modern(method, params, meta, headers)
            version = str(meta.get(META_VERSION))
            if method in ("initialize", "ping"):  # removed in the stateless revision
                raise _RpcError(METHOD_NOT_FOUND, f"Method not found: {method}", 404)
        elif method == "initialize":
            return self._initialize(params)
        elif header_version is not None and header_version not in HANDSHAKE_VERSIONS:
            raise _RpcError(
                UNSUPPORTED_VERSION,
                "Unsupported protocol version",
                400,
                {"supported": list(SUPPORTED_VERSIONS), "requested": header_version},
            )

        if method == "ping":
            result: dict[str, Any] = {}
        elif method == "server/discover":
            result = {
                "supportedVersions": list(SUPPORTED_VERSIONS),
                "capabilities": {"tools": {"listChanged": False}},
                "instructions": INSTRUCTIONS,
            }
            modern = True
        elif method == "tools/list":
            result = {"tools": self._tool_lists[_revision_features(version)]}
        elif method == "tools/call":
            result = await self._tools_call(params, principal, structured=_revision_features(version)[1])
        else:
            raise _RpcError(METHOD_NOT_FOUND, f"Method not found: {method}", 404 if modern else 200)
        if modern:
            result = {"resultType": "complete", **result, "_meta": {META_SERVER: SERVER_INFO}}
            if method in ("tools/list", "server/discover"):
                # The nine meta-tools never change while a deployment runs; callers are authenticated,
                # so shared caches must not serve one user's response to another.
                result.update({"ttlMs": 300_000, "cacheScope": "private"})
        return result

    def _initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        requested = params.get("protocolVersion")
        version = requested if requested in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1]
        return {
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": SERVER_INFO,
            "instructions": INSTRUCTIONS,
        }

    def _validate_modern(
        self, method: str, params: dict[str, Any], meta: dict[str, Any], headers: Mapping[str, str]
    ) -> None:
        version = meta.get(META_VERSION)
        header_version = headers.get("mcp-protocol-version")
        if not isinstance(version, str) or not version:
            raise _RpcError(INVALID_PARAMS, f"_meta['{META_VERSION}'] is required", 400)
        if header_version is None:
            raise _RpcError(HEADER_MISMATCH, "Header mismatch: MCP-Protocol-Version header is required", 400)
        if header_version != version:
            raise _RpcError(
                HEADER_MISMATCH,
                f"Header mismatch: MCP-Protocol-Version header value '{header_version}' does not match "
                f"body value '{version}'",
                400,
            )
        if version not in MODERN_VERSIONS:
            raise _RpcError(
                UNSUPPORTED_VERSION,
                "Unsupported protocol version",
                400,
                {"supported": list(SUPPORTED_VERSIONS), "requested": version},
            )
        header_method = headers.get("mcp-method")
        if header_method is None:
            raise _RpcError(HEADER_MISMATCH, "Header mismatch: Mcp-Method header is required", 400)
        if header_method != method:
            raise _RpcError(
                HEADER_MISMATCH,
                f"Header mismatch: Mcp-Method header value '{header_method}' does not match body value '{method}'",
                400,
            )
        if method == "tools/call":
            header_name = headers.get("mcp-name")
            if header_name is None:
                raise _RpcError(HEADER_MISMATCH, "Header mismatch: Mcp-Name header is required", 400)
            decoded = _decode_header_value(header_name)
            if decoded != params.get("name"):
                raise _RpcError(
                    HEADER_MISMATCH,
                    f"Header mismatch: Mcp-Name header value '{decoded}' does not match body value "
                    f"'{params.get('name')}'",
                    400,
                )
        if not isinstance(meta.get(META_CAPS), dict):
            raise _RpcError(INVALID_PARAMS, f"_meta['{META_CAPS}'] is required", 400)

    async def _tools_call(
        self, params: dict[str, Any], principal: Principal, *, structured: bool
    ) -> dict[str, Any]:
        name = params.get("name")
        arguments = params.get("arguments") or {}
        if not isinstance(name, str):
            raise _RpcError(INVALID_PARAMS, "params.name must be a string")
        if not isinstance(arguments, dict):
            raise _RpcError(INVALID_PARAMS, "params.arguments must be an object")
        try:
            payload = await self.meta.call(name, principal, arguments)
        except InvalidInput as exc:
            raise _RpcError(INVALID_PARAMS, str(exc)) from exc
        content, whole = _render(payload, self.gw.settings.result_cap_chars)
        result: dict[str, Any] = {"content": content, "isError": whole_answer_failed(payload)}
        # structuredContent (2025-06-18+) repeats the payload beside the unchanged text block, only
        # when that block holds all of it: a capped or image result must not slip the cap through it.
        # A tool with an outputSchema must always send it; those payloads are small by design.
        tool = meta_tool(name)
        declared = tool is not None and tool.output_schema is not None
        if structured and (whole or declared) and isinstance(payload, dict):
            result["structuredContent"] = payload
        return result


def whole_answer_failed(payload: Any) -> bool:
    """MCP's `isError`: true when the call's whole answer is an error, so clients show it as one.

    A meta-tool's failure is a payload with a top-level "error" (`connect` to an unknown integration,
    `get_tool_schema` of a missing tool); `execute_tools` stays a success while any item succeeded
    (its failed items carry their own "error") and is an error only when every item failed."""
    if not isinstance(payload, dict):
        return False
    results = payload.get("results")
    if isinstance(results, list):
        return bool(results) and all(isinstance(item, dict) and "error" in item for item in results)
    return "error" in payload


# The calls whose first store read is a batch a lapsed API key's check can join (KeyRecheck): each
# settles it there before it ranks with the grant, runs, starts or answers anything.
_DEFERS_KEY_CHECK = frozenset({"search_tools", "execute_tools"})


def _batch_first(message: dict[str, Any]) -> bool:
    params = message.get("params")
    return (
        message.get("method") == "tools/call"
        and isinstance(params, dict)
        and params.get("name") in _DEFERS_KEY_CHECK
    )


def _valid_id(value: Any) -> bool:
    """JSON-RPC 2.0 ids are strings, numbers or null (absent for a notification)."""
    return value is None or (isinstance(value, str | int | float) and not isinstance(value, bool))


def _error(req_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    err: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    return {"jsonrpc": "2.0", "id": req_id, "error": err}
