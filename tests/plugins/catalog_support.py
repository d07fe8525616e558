"""Table-driven plugin tests, one harness for every plugin package.

A case names a tool, its arguments, the exact upstream requests it must make, in order (method,
URL, query, body, Authorization header, extra headers), each answered with a body taken from the
provider's documented examples, and the shaped result the agent must get back. The fake upstream
is an `httpx.MockTransport` behind a real in-process gateway, so a case runs the whole engine
path: registry lookup, connection check, argument validation, credential decryption and
injection, the handler and error mapping. A request that was not expected, came out of order,
or differs in any checked part fails the test, and so does an expected request never made.
"""

from __future__ import annotations

import json as jsonlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import httpx

from tests.support.gateways import make_gateway, principal_for

__all__ = [
    "ANY",
    "TOKEN",
    "Call",
    "Case",
    "Plugin",
    "check_catalog",
    "exchange_code",
    "run_case",
    "run_error",
    "run_tool",
    "tool_names",
]

TOKEN = "tok-7f3a"


class _Any:
    def __repr__(self) -> str:
        return "ANY"


# Body marker: the harness does not compare the body; the call's `check` must (multipart, raw).
ANY: Any = _Any()

Query = dict[str, Any] | list[tuple[str, Any]]


@dataclass
class Call:
    """One expected upstream request and the canned answer.

    `query` is exact either way: a dict ignores the order of distinct keys (a repeated key is a
    list of its values, in order); a list of pairs is compared in order. Values compare as
    strings, booleans as "true"/"false". With neither `json` nor `form` (nor ANY) the request
    must have no body."""

    method: str
    url: str  # scheme://host/path, no query
    query: Query = field(default_factory=dict)
    json: Any = None  # exact JSON body (content-type must say json); None: no JSON body; ANY: see above
    form: list[tuple[str, Any]] | None = None  # exact form-urlencoded body, in order
    response: Any = None  # JSON body of the answer (str: sent as text; None: empty)
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)  # response headers
    expect_headers: dict[str, str] = field(default_factory=dict)  # request headers that must be sent
    auth: str | None = "default"  # expected Authorization header; "default": the plugin's
    check: Callable[[httpx.Request], None] | None = None  # extra assertions on the raw request
    # A signed URL the provider handed out (a redirect's Location on another host), not an operation
    # of its API: the definitions check skips it, and it must carry no Authorization header.
    presigned: bool = False


@dataclass
class Case:
    tool: str
    args: dict[str, Any]
    calls: list[Call]
    result: Any

    def __str__(self) -> str:
        return self.tool


@dataclass(frozen=True)
class Plugin:
    """The integration under test, the credential stored for the user and the Authorization
    header that credential must produce upstream."""

    integration: str
    credential: dict[str, Any] = field(default_factory=lambda: {"access_token": TOKEN})
    auth_header: str = f"Bearer {TOKEN}"


def _s(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _want_query(query: Query) -> Any:
    if isinstance(query, dict):
        return {k: [_s(x) for x in v] if isinstance(v, list) else _s(v) for k, v in query.items()}
    return [(k, _s(v)) for k, v in query]


def _got_query(request: httpx.Request, ordered: bool) -> Any:
    items = list(request.url.params.multi_items())
    if ordered:
        return items
    out: dict[str, Any] = {}
    for key, value in items:
        if key in out:
            prev = out[key]
            out[key] = [*prev, value] if isinstance(prev, list) else [prev, value]
        else:
            out[key] = value
    return out


def _describe(request: httpx.Request, call: Call) -> dict[str, Any]:
    """The checked parts of `request`, shaped like `_expected(call)`."""
    out: dict[str, Any] = {
        "method": request.method,
        "url": f"{request.url.scheme}://{request.url.host}{request.url.path}",
        "query": _got_query(request, ordered=not isinstance(call.query, dict)),
    }
    if call.json is ANY:
        return out
    ctype = request.headers.get("content-type", "")
    if request.content and "json" in ctype:
        out["json"] = jsonlib.loads(request.content)
    elif request.content and "x-www-form-urlencoded" in ctype:
        out["form"] = parse_qsl(request.content.decode(), keep_blank_values=True)
    elif request.content:
        out["body"] = request.content.decode(errors="replace")
    return out


def _expected(call: Call) -> dict[str, Any]:
    want: dict[str, Any] = {"method": call.method, "url": call.url, "query": _want_query(call.query)}
    if call.json is not None and call.json is not ANY:
        want["json"] = call.json
    if call.form is not None:
        want["form"] = [(k, _s(v)) for k, v in call.form]
    return want


def _respond(call: Call) -> httpx.Response:
    if isinstance(call.response, str):
        return httpx.Response(call.status, text=call.response, headers=call.headers)
    if call.response is None:
        return httpx.Response(call.status, headers=call.headers)
    return httpx.Response(call.status, json=call.response, headers=call.headers)


async def run_tool(plugin: Plugin, tmp_path: Path, tool: str, args: dict[str, Any], calls: list[Call]) -> Any:
    """Run one tool through a gateway whose upstream answers exactly `calls`, in order; returns
    the gateway's output."""
    pending = list(calls)
    seen: list[dict[str, Any]] = []
    failures: list[AssertionError] = []

    def handler(request: httpx.Request) -> httpx.Response:
        try:
            return _answer(request)
        except AssertionError as exc:  # the engine would turn it into a tool error; keep it
            failures.append(exc)
            return httpx.Response(599, json={"message": "harness assertion failed"})

    def _answer(request: httpx.Request) -> httpx.Response:
        assert pending, f"unexpected extra request {request.method} {request.url}; made: {seen}"
        call = pending.pop(0)
        got = _describe(request, call)
        seen.append(got)
        want = _expected(call)
        assert got == want, f"\n got: {got}\nwant: {want}"
        auth = plugin.auth_header if call.auth == "default" else call.auth
        if call.presigned:
            assert call.auth is None, "a presigned URL is called without the credential"
        assert request.headers.get("authorization") == auth, request.headers.get("authorization")
        for name, value in call.expect_headers.items():
            assert request.headers.get(name) == value, name
        if call.check is not None:
            call.check(request)
        return _respond(call)

    gw = make_gateway(tmp_path, transport=httpx.MockTransport(handler))
    principal = principal_for(gw)
    gw.credentials.save(principal.user.id, plugin.integration, plugin.credential)
    out = await gw.runs.execute(principal, [{"tool": tool, "args": args, "ref_id": None}])
    if failures:
        raise failures[0]
    assert not pending, f"requests not made: {pending}; made: {seen}"
    return out


async def run_case(plugin: Plugin, tmp_path: Path, case: Case) -> None:
    out = await run_tool(plugin, tmp_path, case.tool, case.args, case.calls)
    assert out == {"results": [{"result": case.result}]}


async def run_error(
    plugin: Plugin, tmp_path: Path, tool: str, args: dict[str, Any], calls: list[Call], error: str
) -> None:
    out = await run_tool(plugin, tmp_path, tool, args, calls)
    assert out == {"results": [{"error": error}]}


def tool_names(module: Any) -> set[str]:
    return {t.name for t in module.TOOLS}


def check_catalog(integration: str, module: Any) -> None:
    """Every tool of the integration: registered exactly as its `tools` module lists it, unique,
    prefixed by the manifest's tool_prefix, name under 64 characters, a sentence (20+ characters,
    4+ words, ending with a full stop) saying what it does, a valid JSON Schema object whose
    every argument is described, and OAuth scopes that the manifest requests (an API-key
    integration has none to declare)."""
    from jsonschema import Draft202012Validator
    from workbench.composition import build_registry
    from workbench.manifest import OAuth2Auth

    registry = build_registry()
    manifest = registry.manifest(integration)
    assert manifest is not None
    names = [t.name for t in module.TOOLS]
    assert len(names) == len(set(names)), names
    tools = registry.tools_of(integration)
    assert set(tools) == set(names)
    auth = manifest.auth
    granted = {*auth.scopes, *auth.user_scopes} if isinstance(auth, OAuth2Auth) else set()
    for t in tools.values():
        missing = set(t.scopes) - granted
        assert not missing, f"{t.name} needs scopes the {integration} manifest does not request: {missing}"
        assert t.name.startswith(manifest.prefix) and len(t.name) < 64, t.name
        assert len(t.description) >= 20 and len(t.description.split()) >= 4, t.name
        assert t.description.endswith("."), t.name
        schema = t.json_schema()
        Draft202012Validator.check_schema(schema)
        assert schema["type"] == "object", t.name
        for prop, spec in schema.get("properties", {}).items():
            assert spec.get("description"), f"{t.name}.{prop} has no description"


async def exchange_code(tmp_path: Path, manifest: Any, response: dict[str, Any]) -> tuple[httpx.Request, Any]:
    """Run the provider OAuth code exchange for `manifest` against a fake token endpoint answering
    `response`; returns the token request it sent and the resulting TokenSet."""
    from workbench.connections.provider_oauth import ProviderOAuth
    from workbench.settings import Settings

    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, json=response)

    stem = manifest.name.upper()
    settings = Settings(store="memory", data_dir=tmp_path, public_url="http://127.0.0.1:8787")
    object.__setattr__(
        settings, "plugin_env", {f"{stem}_CLIENT_ID": "client-id-1", f"{stem}_CLIENT_SECRET": "s3cr3t/+="}
    )
    oauth = ProviderOAuth(settings, transport=httpx.MockTransport(handler))
    tokens = await oauth.exchange_code(manifest, code="code-123", verifier="v" * 43)
    assert len(sent) == 1
    return sent[0], tokens


def plugin_packages() -> list[str]:
    """Every plugin the registry loads from workbench_plugins, by package name (manifest
    `atlassian-jira` is package `atlassian_jira`); each has its tests in tests/plugins/test_<name>.py."""
    from workbench.composition import build_registry

    return sorted(m.name.replace("-", "_") for m in build_registry().manifests() if not m.builtin)
