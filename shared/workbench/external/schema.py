"""Which tool entries from an external server's tools/list are usable.

A malformed entry is dropped (with a logged warning by the caller) while the server's other tools
still load, as seed 004 says. "Malformed" here: a name that is not a short identifier, a
description that is not text, or an input schema that is not a JSON Schema object description
(root `type` other than "object", `properties` not an object of schemas or a property with an
unknown `type`, `additionalProperties` neither a boolean nor a schema, `required` not a list of
names).
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["TOOL_NAME", "problem"]

TOOL_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
_MAX_SCHEMA_CHARS = 100_000
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
    return None
