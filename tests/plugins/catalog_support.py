"""Table-driven plugin tests: each case names a tool, its arguments, the exact upstream requests
it must make (answered with the provider's documented example bodies) and the shaped result.

The fake upstream is an `httpx.MockTransport` behind a real in-process gateway, so a case runs
the whole engine path: registry lookup, connection check, argument validation, credential
decryption and injection, the handler, and error mapping.
"""

from __future__ import annotations

import json as jsonlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tests.support.gateways import make_gateway, principal_for

__all__ = ["ANY", "Call", "Case", "run_case", "run_tool"]

TOKEN = "tok-7f3a"


class _Any:
    def __repr__(self) -> str:
        return "ANY"


ANY: Any = _Any()  # "don't check this" marker for a JSON body


@dataclass
class Call:
    """One expected upstream request and the canned answer."""

    method: str
    url: str  # scheme://host/path, no query
    query: dict[str, Any] = field(default_factory=dict)  # exact query; values compared as strings
    json: Any = ANY  # exact JSON body (ANY: not checked; None: no body)
    response: Any = None  # JSON body of the answer (a str is sent as text)
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    check: Callable[[httpx.Request], None] | None = None  # extra assertions on the raw request


@dataclass
class Case:
    tool: str
    args: dict[str, Any]
    calls: list[Call]
    result: Any

    def __str__(self) -> str:
        return self.tool


def _query(request: httpx.Request) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in request.url.params.multi_items():
        if key in out:
            prev = out[key]
            out[key] = [*prev, value] if isinstance(prev, list) else [prev, value]
        else:
            out[key] = value
    return out


def _norm(query: dict[str, Any]) -> dict[str, Any]:
    def s(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        return str(v)

    return {k: [s(x) for x in v] if isinstance(v, list) else s(v) for k, v in query.items()}


async def run_tool(
    tmp_path: Path, integration: str, tool: str, args: dict[str, Any], calls: list[Call]
) -> dict[str, Any]:
    """Run one tool through a gateway whose upstream answers only `calls`; all must be made."""
    pending = list(calls)
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        url = f"{request.url.scheme}://{request.url.host}{request.url.path}"
        query = _query(request)
        seen.append(f"{request.method} {url} {query}")
        for call in pending:
            if call.method == request.method and call.url == url and _norm(call.query) == query:
                pending.remove(call)
                break
        else:
            raise AssertionError(f"unexpected request {request.method} {url} {query}; expected {pending}")
        assert request.headers["authorization"] == f"Bearer {TOKEN}"
        if call.json is None:
            assert request.content == b"", request.content
        elif call.json is not ANY:
            assert jsonlib.loads(request.content) == call.json
        if call.check is not None:
            call.check(request)
        if isinstance(call.response, str):
            return httpx.Response(call.status, text=call.response, headers=call.headers)
        if call.response is None:
            return httpx.Response(call.status, headers=call.headers)
        return httpx.Response(call.status, json=call.response, headers=call.headers)

    gw = make_gateway(tmp_path, transport=httpx.MockTransport(handler))
    principal = principal_for(gw)
    gw.credentials.save(principal.user.id, integration, {"access_token": TOKEN})
    out = await gw.execute(principal, [{"tool": tool, "args": args, "ref_id": None}])
    assert not pending, f"requests not made: {pending}; made: {seen}"
    return out


async def run_case(tmp_path: Path, integration: str, case: Case) -> None:
    out = await run_tool(tmp_path, integration, case.tool, case.args, case.calls)
    assert out == {"results": [{"result": case.result}]}


def check_catalog(package: str) -> None:
    """Every tool of a plugin package: prefixed by its manifest's tool_prefix, name under 64
    characters, a description that says what it does, and a JSON Schema (from the pydantic model)
    in which every argument is described."""
    import importlib

    from jsonschema import Draft202012Validator

    manifest = importlib.import_module(package).manifest
    tools = importlib.import_module(f"{package}.tools").TOOLS
    names = [t.name for t in tools]
    assert len(names) == len(set(names))
    for t in tools:
        assert t.name.startswith(manifest.prefix) and len(t.name) < 64, t.name
        assert t.description.endswith(".") and len(t.description.split()) >= 4, t.name
        schema = t.json_schema()
        Draft202012Validator.check_schema(schema)
        assert schema["type"] == "object", t.name
        for prop, spec in schema.get("properties", {}).items():
            assert spec.get("description"), f"{t.name}.{prop} has no description"
