"""Custom apps from an OpenAPI 3.x document: each operation becomes a tool.

`compile_document` turns a document into `Operation`s: the tool name from `operationId`, the input
schema from the parameters (path, query, header, cookie) plus a `body` property for the request
body, and the description from `summary` and `description`. Local `$ref`s are resolved; a cycle is
cut to a plain object. An operation that cannot become a usable tool (no or a bad operationId, a
duplicate name, an unresolvable `$ref`, a schema over the size limit) is dropped with a reason,
like a malformed MCP tool, and the others still load.

`build_request` turns a tool call back into an HTTP request: path parameters substituted
(percent-encoded, so an argument can never change the path), query/header/cookie parameters, and a
JSON or form body.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlsplit

from workbench.errors import WorkbenchError
from workbench.guard.paths import DOT_SEGMENT_MESSAGE, dot_segment

__all__ = ["METHODS", "OpenApiError", "Operation", "build_request", "compile_document", "security_schemes"]

METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")
MAX_OPERATIONS = 1000
MAX_SCHEMA_CHARS = 100_000
# Nodes one operation's schemas may expand to while `$ref`s are inlined (each is at least 2 characters).
MAX_SCHEMA_NODES = MAX_SCHEMA_CHARS // 2
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
_REF_DEPTH = 24
_PARAM_IN = ("path", "query", "header", "cookie")
# Headers an operation may not set: Workbench sets them, or they would smuggle credentials.
_RESERVED_HEADERS = frozenset(
    {"authorization", "host", "content-type", "content-length", "cookie", "accept", "connection"}
)


class OpenApiError(WorkbenchError, ValueError):
    """The document as a whole cannot be used (not OpenAPI 3.x, no operations, no server URL)."""


@dataclass(frozen=True, slots=True)
class Param:
    name: str
    location: str  # path | query | header | cookie
    required: bool


@dataclass(frozen=True, slots=True)
class Operation:
    name: str  # operationId
    method: str
    path: str
    description: str
    input_schema: dict[str, Any]
    params: tuple[Param, ...] = ()
    body: str = ""  # the request body's media type, "" when the operation takes none
    body_required: bool = False
    body_key: str = "body"  # the input property that holds the body ("requestBody" if "body" is a parameter)

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "method": self.method,
            "path": self.path,
            "description": self.description,
            "schema": self.input_schema,
            "params": [[p.name, p.location, p.required] for p in self.params],
            "body": self.body,
            "bodyRequired": self.body_required,
            "bodyKey": self.body_key,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Operation:
        return cls(
            name=str(data["name"]),
            method=str(data["method"]),
            path=str(data["path"]),
            description=str(data.get("description", "")),
            input_schema=dict(data["schema"]),
            params=tuple(Param(str(n), str(loc), bool(req)) for n, loc, req in data.get("params", [])),
            body=str(data.get("body", "")),
            body_required=bool(data.get("bodyRequired", False)),
            body_key=str(data.get("bodyKey", "body")),
        )


@dataclass(slots=True)
class Compiled:
    title: str
    version: str
    base_url: str  # the first server URL, "" if the document names none
    operations: list[Operation] = field(default_factory=list)
    dropped: list[tuple[str, str]] = field(default_factory=list)  # (label, reason)


class _Unresolvable(WorkbenchError):
    pass


def compile_document(
    document: Any, *, only: set[str] | None = None, max_seconds: float | None = None
) -> Compiled:
    """The document's operations as tools. `only` keeps the operations whose operationId or one of
    whose tags is in it. Inlining `$ref`s is bounded: at most MAX_SCHEMA_NODES nodes per operation
    (refs that fan out can otherwise stand for exponentially many) and `max_seconds` in all."""
    # CPU time of this thread: a busy machine does not make an honest document fail.
    stop_at = time.thread_time() + max_seconds if max_seconds is not None else None
    if not isinstance(document, dict):
        raise OpenApiError("the document is not a JSON/YAML object")
    version = document.get("openapi")
    if not isinstance(version, str) or not re.match(r"^3\.[01]\.\d+", version):
        raise OpenApiError("only OpenAPI 3.0 and 3.1 documents are supported (the 'openapi' field)")
    paths = document.get("paths")
    if not isinstance(paths, dict) or not paths:
        raise OpenApiError("the document has no paths")
    raw_info = document.get("info")
    info: dict[str, Any] = raw_info if isinstance(raw_info, dict) else {}
    compiled = Compiled(
        title=str(info.get("title", ""))[:200],
        version=str(info.get("version", ""))[:40],
        base_url=_server_url(document.get("servers")),
    )
    seen: set[str] = set()
    for path, item in paths.items():
        if not isinstance(item, dict):
            compiled.dropped.append((str(path)[:80], "path item is not an object"))
            continue
        try:
            item = _deref(document, item, 0)
        except _Unresolvable as exc:
            compiled.dropped.append((str(path)[:80], str(exc)))
            continue
        shared_params = item.get("parameters", [])
        for method in METHODS:
            op = item.get(method)
            if op is None:
                continue
            label = f"{method.upper()} {path}"[:120]
            if not isinstance(op, dict):
                compiled.dropped.append((label, "operation is not an object"))
                continue
            op_id = op.get("operationId")
            raw_tags = op.get("tags")
            tags: list[Any] = raw_tags if isinstance(raw_tags, list) else []
            if only is not None and op_id not in only and not any(t in only for t in tags):
                continue
            if stop_at is not None and time.thread_time() > stop_at:
                raise OpenApiError(f"the document took longer than {max_seconds:g} s to compile")
            try:
                operation = _operation(document, str(path), method, op, shared_params)
            except (_Unresolvable, ValueError) as exc:
                compiled.dropped.append((str(op_id or label)[:120], str(exc)))
                continue
            if operation.name in seen:
                compiled.dropped.append((operation.name, "operationId is used twice"))
                continue
            if len(compiled.operations) >= MAX_OPERATIONS:
                compiled.dropped.append((operation.name, f"more than {MAX_OPERATIONS} operations"))
                continue
            seen.add(operation.name)
            compiled.operations.append(operation)
    return compiled


def security_schemes(document: Any) -> dict[str, dict[str, Any]]:
    """`components.securitySchemes`, for the portal's auth form (and OAuth2 endpoints)."""
    comps = document.get("components") if isinstance(document, dict) else None
    schemes = comps.get("securitySchemes") if isinstance(comps, dict) else None
    if not isinstance(schemes, dict):
        return {}
    out = {}
    for name, scheme in schemes.items():
        try:
            resolved = _deref(document, scheme, 0)
        except _Unresolvable:
            continue
        if isinstance(resolved, dict):
            out[str(name)] = resolved
    return out


def _server_url(servers: Any) -> str:
    if not isinstance(servers, list) or not servers or not isinstance(servers[0], dict):
        return ""
    url = servers[0].get("url")
    if not isinstance(url, str):
        return ""
    variables = servers[0].get("variables")
    if isinstance(variables, dict):  # server variables take their defaults
        for key, var in variables.items():
            if isinstance(var, dict) and isinstance(var.get("default"), str):
                url = url.replace("{" + str(key) + "}", var["default"])
    return url


def _operation(
    document: dict[str, Any], path: str, method: str, op: dict[str, Any], shared: Any
) -> Operation:
    name = op.get("operationId")
    if not isinstance(name, str) or not name:
        raise ValueError("it has no operationId")
    if not _NAME.match(name):
        raise ValueError("its operationId is not 1-128 letters, digits, '_', '-' or '.'")
    merged: dict[tuple[str, str], dict[str, Any]] = {}
    for raw in [*(shared if isinstance(shared, list) else []), *(op.get("parameters") or [])]:
        param = _deref(document, raw, 0)
        if not isinstance(param, dict) or not isinstance(param.get("name"), str):
            raise ValueError("a parameter has no name")
        where = param.get("in")
        if where not in _PARAM_IN:
            raise ValueError(f"parameter '{param['name']}' has an unknown location")
        if where == "header" and param["name"].lower() in _RESERVED_HEADERS:
            continue  # set by Workbench (auth, content type): never from an argument
        merged[(param["name"], where)] = param  # the operation's own wins over the path item's
    properties: dict[str, Any] = {}
    required: list[str] = []
    params: list[Param] = []
    budget = [MAX_SCHEMA_NODES]
    for (pname, where), param in merged.items():
        if pname in properties:
            raise ValueError(f"parameter '{pname}' appears in two locations")
        prop = _resolve_schema(document, param.get("schema", {}), budget)
        if "content" in param and "schema" not in param:
            content = param["content"]
            first: Any = next(iter(content.values()), {}) if isinstance(content, dict) and content else {}
            prop = _resolve_schema(
                document, first.get("schema", {}) if isinstance(first, dict) else {}, budget
            )
        prop = dict(prop) if isinstance(prop, dict) else {}
        if isinstance(param.get("description"), str) and "description" not in prop:
            prop["description"] = param["description"]
        is_required = where == "path" or param.get("required") is True
        properties[pname] = prop
        params.append(Param(pname, where, is_required))
        if is_required:
            required.append(pname)
        if where == "path" and "{" + pname + "}" not in path:
            raise ValueError(f"path parameter '{pname}' is not in the path")
    for placeholder in re.findall(r"\{([^}]+)\}", path):
        if (placeholder, "path") not in merged:
            raise ValueError(f"the path names '{{{placeholder}}}' but no parameter defines it")
    body_type = ""
    body_required = False
    key = "body"
    raw_body = op.get("requestBody")
    if raw_body is not None:
        body = _deref(document, raw_body, 0)
        content = body.get("content") if isinstance(body, dict) else None
        if not isinstance(content, dict) or not content:
            raise ValueError("its requestBody has no content")
        body_type = _pick_media_type(content)
        if not body_type:
            raise ValueError("its requestBody has no JSON or form media type")
        media = content[body_type] if isinstance(content[body_type], dict) else {}
        key = "body" if "body" not in properties else "requestBody"
        if key in properties:
            raise ValueError("parameters named 'body' and 'requestBody' leave no name for the body")
        body_schema = _resolve_schema(document, media.get("schema", {}), budget)
        properties[key] = body_schema if isinstance(body_schema, dict) else {}
        body_required = isinstance(body, dict) and body.get("required") is True
        if body_required:
            required.append(key)
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    if len(json.dumps(schema)) > MAX_SCHEMA_CHARS:
        raise ValueError("its input schema is too large")
    summary = op.get("summary") if isinstance(op.get("summary"), str) else ""
    details = op.get("description") if isinstance(op.get("description"), str) else ""
    description = "\n\n".join(part.strip() for part in (summary, details) if part and part.strip())
    return Operation(
        name=name,
        method=method,
        path=path,
        description=description[:4000] or f"{method.upper()} {path}",
        input_schema=schema,
        params=tuple(params),
        body=body_type,
        body_required=body_required,
        body_key=key,
    )


def _pick_media_type(content: dict[str, Any]) -> str:
    for media in content:
        base = str(media).split(";")[0].strip().lower()
        if base == "application/json" or base.endswith("+json"):
            return str(media)
    for media in content:
        base = str(media).split(";")[0].strip().lower()
        if base in ("application/x-www-form-urlencoded", "*/*"):
            return str(media)
    return ""


def _pointer(document: dict[str, Any], ref: str) -> Any:
    if not ref.startswith("#/"):
        raise _Unresolvable(f"external $ref '{ref[:80]}' is not supported")
    node: Any = document
    for raw in ref[2:].split("/"):
        key = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            raise _Unresolvable(f"$ref '{ref[:80]}' points nowhere")
    return node


def _deref(document: dict[str, Any], node: Any, depth: int) -> Any:
    """`node` itself when it is a `$ref` (followed, bounded), else unchanged (one level)."""
    while isinstance(node, dict) and isinstance(node.get("$ref"), str):
        if depth > _REF_DEPTH:
            raise _Unresolvable("a $ref chain is too long")
        node = _pointer(document, node["$ref"])
        depth += 1
    return node


def _resolve_schema(
    document: dict[str, Any], schema: Any, budget: list[int], stack: tuple[str, ...] = ()
) -> Any:
    """The schema with every local `$ref` inlined; a ref that is already being expanded (a cycle)
    becomes `{"type": "object"}` so the result is finite. Each node spends one of `budget[0]`; an
    operation whose schemas expand past it is too large (refused before it is built)."""
    budget[0] -= 1
    if budget[0] < 0:
        raise ValueError("its input schema is too large")
    if isinstance(schema, list):
        return [_resolve_schema(document, s, budget, stack) for s in schema]
    if not isinstance(schema, dict):
        return schema
    ref = schema.get("$ref")
    if isinstance(ref, str):
        if ref in stack or len(stack) > _REF_DEPTH:
            return {"type": "object", "description": "(recursive structure)"}
        target = _pointer(document, ref)
        siblings = {k: v for k, v in schema.items() if k != "$ref"}
        resolved = _resolve_schema(document, target, budget, (*stack, ref))
        return {**resolved, **siblings} if isinstance(resolved, dict) else resolved
    return {
        key: (
            value
            if key in ("example", "examples", "default", "enum", "const")
            else _resolve_schema(document, value, budget, stack)
        )
        for key, value in schema.items()
        if key not in ("xml", "externalDocs")
    }


# -- requests ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Request:
    method: str
    url: str
    params: list[tuple[str, str]]
    # Header and cookie parameters, as the arguments give them ({{vault:}} values substituted).
    headers: dict[str, str] = field(repr=False)
    cookies: dict[str, str] = field(repr=False)
    json_body: Any = None
    form_body: dict[str, str] | None = None
    has_json: bool = False


def build_request(base_url: str, operation: Operation, args: Mapping[str, Any]) -> Request:
    """The HTTP request for one call. Raises ValueError with a message for the agent when a required
    argument is missing or a value cannot go where the operation puts it."""
    path = operation.path
    query: list[tuple[str, str]] = []
    headers: dict[str, str] = {}
    cookies: dict[str, str] = {}
    for param in operation.params:
        if param.name not in args or args[param.name] is None:
            if param.required:
                raise ValueError(f"'{param.name}' is required")
            continue
        value = args[param.name]
        if param.location == "path":
            text = _text(value)
            if dot_segment(text):  # normalised away, it would call the parent path
                raise ValueError(f"'{param.name}': {DOT_SEGMENT_MESSAGE}")
            # safe="" so a "/" or "?" in an argument stays inside its segment.
            path = path.replace("{" + param.name + "}", quote(text, safe=""))
        elif param.location == "query":
            values = value if isinstance(value, list) else [value]
            query.extend((param.name, _text(v)) for v in values)
        elif param.location == "header":
            text = _text(value)
            if any(c in text for c in "\r\n\x00"):
                raise ValueError(f"'{param.name}' may not contain line breaks")
            headers[param.name] = text
        else:
            cookies[param.name] = _text(value)
    url = _join(base_url, path)
    body_key = operation.body_key
    if not operation.body:
        return Request(operation.method.upper(), url, query, headers, cookies)
    if body_key not in args:
        if operation.body_required:
            raise ValueError(f"'{body_key}' is required")
        return Request(operation.method.upper(), url, query, headers, cookies)
    body = args[body_key]
    media = operation.body.split(";")[0].strip().lower()
    if media == "application/x-www-form-urlencoded":
        if not isinstance(body, dict):
            raise ValueError(f"'{body_key}' must be an object for a form body")
        return Request(
            operation.method.upper(),
            url,
            query,
            headers,
            cookies,
            form_body={str(k): _text(v) for k, v in body.items()},
        )
    return Request(operation.method.upper(), url, query, headers, cookies, json_body=body, has_json=True)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, separators=(",", ":"))


def _join(base_url: str, path: str) -> str:
    """base URL + the operation's path; the path never replaces the base's host."""
    base = base_url.rstrip("/")
    joined = base + "/" + path.lstrip("/")
    if urlsplit(joined).netloc != urlsplit(base).netloc:  # pragma: no cover - defensive
        raise ValueError("the operation path leaves the app's server")
    return joined
