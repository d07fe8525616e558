"""Reading an OpenAPI document: JSON or YAML text (or the parsed object) to compiled operations.

CPU-bound on large text: the gateway runs it in its document worker process
(external/document_worker.py), never on the event loop.
"""

from __future__ import annotations

from typing import Any

from workbench.errors import InvalidInput
from workbench.external.openapi import Compiled, OpenApiError, compile_document
from workbench.guard.gcdefer import deferred_full_collections
from workbench.guard.jsontext import JsonRejected, parse

__all__ = ["DOCUMENT_SECONDS", "MAX_OPENAPI_CHARS", "parse_document", "read_document"]

MAX_OPENAPI_CHARS = 5_000_000
# Reading and compiling one OpenAPI document stops after this long.
DOCUMENT_SECONDS = 5.0

# Schemas nest: deeper than a request body may, and still far from any recursion limit.
_MAX_DOCUMENT_DEPTH = 128


def parse_document(document: Any) -> Any:
    """An OpenAPI document given as an object, or as JSON or YAML text. CPU-bound on large text:
    callers on the event loop use `read_document`, which runs it in a thread."""
    if isinstance(document, dict):
        return document
    if not isinstance(document, str | bytes) or not document:
        raise InvalidInput("document is required: the OpenAPI document as JSON")
    if len(document) > MAX_OPENAPI_CHARS:
        raise InvalidInput(f"document is larger than {MAX_OPENAPI_CHARS} characters")
    text = document.decode("utf-8", errors="replace") if isinstance(document, bytes) else document
    if text.lstrip()[:1] in ("{", "["):  # JSON is tried only on what can be JSON: YAML goes straight on
        try:
            return parse(text, max_depth=_MAX_DOCUMENT_DEPTH)  # strict, depth checked
        except JsonRejected:
            pass
    from workbench.guard import yamltext

    try:  # aliases, expansion, depth and time bounded while composing (guard/yamltext.py)
        return yamltext.load(text, max_depth=_MAX_DOCUMENT_DEPTH, max_seconds=DOCUMENT_SECONDS)
    except yamltext.YamlRejected as exc:
        if "not valid YAML" in str(exc):
            raise InvalidInput("document is neither valid JSON nor valid YAML") from None
        # A fresh exception: the caught one carries the composer's frames, one per nesting level,
        # and whoever formats or walks that traceback on the event loop would pay for every one.
        raise InvalidInput(str(exc)) from None


def read_document(document: Any, only: set[str] | None) -> tuple[Any, Compiled]:
    """`parse_document` then `compile_document`: the blocking part of registering an OpenAPI app.
    Run in a thread; no full garbage collection starts meanwhile (guard/gcdefer.py says why)."""
    with deferred_full_collections():
        parsed = parse_document(document)
        try:
            return parsed, compile_document(parsed, only=only, max_seconds=DOCUMENT_SECONDS)
        except OpenApiError as exc:
            raise InvalidInput(f"document: {exc}") from None
