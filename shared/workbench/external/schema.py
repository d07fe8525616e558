"""Which tool entries from an external server's tools/list are usable.

A malformed entry is dropped (with a logged warning by the caller) while the server's other tools
still load, as seed 004 says. "Malformed" here: a name that is not a short identifier, a
description that is not text, or an input schema that is not a JSON Schema object description
(root `type` other than "object", `properties` not an object of schemas or a property with an
unknown `type`, `additionalProperties` neither a boolean nor a schema, `required` not a list of
names), or an `x-mcp-header` annotation the 2026-07-28 transport forbids (the spec says such a
tool MUST be excluded).
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["TOOL_NAME", "header_problem", "problem"]

TOOL_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
_MAX_SCHEMA_CHARS = 100_000
_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")  # RFC 9110 tchar
_HEADER_TYPES = frozenset({"string", "integer", "boolean"})
# Keywords whose values are data, not schemas: an "x-mcp-header" key inside them is not an annotation.
_DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples", "required", "type", "description"})
_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})
_JSON_TYPES = frozenset({"object", "array", "string", "number", "integer", "boolean", "null"})


def _bad_type(value: Any) -> bool:
    if isinstance(value, str):
        return value not in _JSON_TYPES
    if isinstance(value, list):
        return not value or not all(isinstance(v, str) and v in _JSON_TYPES for v in value)
    return True


def problem(entry: Any) -> str | None:
    """Why this tools/list entry cannot be merged, or None when it is fine."""
    if not isinstance(entry, dict):
        return "entry is not an object"
    name = entry.get("name")
    if not isinstance(name, str) or not TOOL_NAME.match(name):
        return "name must be 1-128 letters, digits, '_', '-' or '.'"
    description = entry.get("description")
    if description is not None and not isinstance(description, str):
        return "description is not a string"
    schema = entry.get("inputSchema")
    if schema is None:
        return None  # the seed's default: an object without properties
    if not isinstance(schema, dict):
        return "inputSchema is not an object"
    if schema.get("type", "object") != "object":
        return "inputSchema type must be 'object'"
    props = schema.get("properties", {})
    if not isinstance(props, dict) or not all(isinstance(v, dict | bool) for v in props.values()):
        return "inputSchema properties must be an object of schemas"
    for key, prop in props.items():
        if isinstance(prop, dict) and "type" in prop and _bad_type(prop["type"]):
            return f"inputSchema property '{key}' has an invalid type"
    extra = schema.get("additionalProperties", True)
    if not isinstance(extra, bool | dict):
        return "inputSchema additionalProperties must be a boolean or a schema"
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        return "inputSchema required must be a list of property names"
    if len(repr(schema)) > _MAX_SCHEMA_CHARS:
        return "inputSchema is too large"
    return header_problem(schema)


def header_problem(schema: dict[str, Any]) -> str | None:
    """Why the schema's `x-mcp-header` annotations are invalid, or None: each must sit on a
    string/integer/boolean property reached from the root through `properties` only, be an RFC 9110
    token, and be unique (case-insensitively)."""
    seen: set[str] = set()

    def walk(node: Any, path: tuple[str, ...] | None) -> str | None:
        if not isinstance(node, dict):
            return None
        if "x-mcp-header" in node:
            header = node["x-mcp-header"]
            if not path:
                return "x-mcp-header is only allowed on properties reached through 'properties'"
            if not isinstance(header, str) or not _TOKEN.match(header):
                return f"x-mcp-header of '{'.'.join(path)}' is not a header name"
            if node.get("type") not in _HEADER_TYPES:
                return f"x-mcp-header of '{'.'.join(path)}' is not on a string, integer or boolean"
            if header.lower() in seen:
                return f"x-mcp-header '{header}' is used twice"
            seen.add(header.lower())
        for key, value in node.items():
            if key in _DATA_KEYWORDS or key == "x-mcp-header":
                continue
            if key in _SCHEMA_MAPS and isinstance(value, dict):
                for name, sub in value.items():
                    why = walk(sub, (*path, str(name)) if key == "properties" and path is not None else None)
                    if why:
                        return why
            elif isinstance(value, dict):
                why = walk(value, None)
                if why:
                    return why
            elif isinstance(value, list):
                for item in value:
                    why = walk(item, None)
                    if why:
                        return why
        return None

    return walk(schema, ())
