"""Portable JSON Schema from pydantic models: inline `$defs`, drop pydantic-only noise."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

__all__ = ["portable_schema"]


def portable_schema(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema(mode="validation")
    defs = schema.pop("$defs", {})
    inlined = _inline(schema, defs, depth=0)
    assert isinstance(inlined, dict)
    inlined.pop("title", None)
    inlined.setdefault("type", "object")
    inlined.setdefault("properties", {})
    return inlined


def _inline(node: Any, defs: dict[str, Any], depth: int) -> Any:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/") and depth < 16:
            target = defs.get(ref.removeprefix("#/$defs/"), {})
            merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
            return _inline(merged, defs, depth + 1)
        return {k: _inline(v, defs, depth) for k, v in node.items() if k != "title" or not isinstance(v, str)}
    if isinstance(node, list):
        return [_inline(v, defs, depth) for v in node]
    return node
