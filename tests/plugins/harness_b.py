"""Table-driven harness for the notion/linear/superset/hubspot/salesforce/stripe/airtable/zendesk
plugin tests.

A case names a tool, its arguments, the exact upstream requests it must make, in order (method,
URL, query, body, auth header), each answered with a body taken from the provider's documented
examples, and the shaped result the agent must get back. The fake upstream is an
`httpx.MockTransport` behind a real in-process gateway, so a case runs the whole engine path:
registry lookup, connection check, argument validation, credential decryption and injection, the
handler and error mapping.
"""

from __future__ import annotations

import json as jsonlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import httpx

from tests.support.gateways import make_gateway, principal_for

__all__ = ["Call", "Case", "Plugin", "check_catalog", "exchange_code", "run_case", "run_error", "tool_names"]


@dataclass
class Call:
    """One expected upstream request and the canned answer."""

    method: str
    url: str  # scheme://host/path, no query
    query: list[tuple[str, str]] = field(default_factory=list)  # exact, in order
    json: Any = None  # exact JSON body (None: no JSON body)
    form: list[tuple[str, str]] | None = None  # exact form body, in order
    response: Any = None  # JSON body (str: sent as text; None: empty)
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)  # response headers
    expect_headers: dict[str, str] = field(default_factory=dict)  # request headers that must be sent
    auth: str | None = "default"  # expected Authorization header; "default": the plugin's


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
    integration: str
    credential: dict[str, Any]
    auth_header: str  # the Authorization header the stored credential must produce


def _describe(request: httpx.Request) -> dict[str, Any]:
    out: dict[str, Any] = {
        "method": request.method,
        "url": f"{request.url.scheme}://{request.url.host}{request.url.path}",
        "query": list(request.url.params.multi_items()),
    }
    ctype = request.headers.get("content-type", "")
    if request.content and "json" in ctype:
        out["json"] = jsonlib.loads(request.content)
    elif request.content and "x-www-form-urlencoded" in ctype:
        out["form"] = parse_qsl(request.content.decode(), keep_blank_values=True)
    elif request.content:
        out["body"] = request.content.decode()
    return out


async def _run(plugin: Plugin, tmp_path: Path, tool: str, args: dict[str, Any], calls: list[Call]) -> Any:
    pending = list(calls)
    failures: list[AssertionError] = []

    def handler(request: httpx.Request) -> httpx.Response:
        try:
            return _answer(request)
        except AssertionError as exc:  # the engine would turn it into a tool error; keep it
            failures.append(exc)
            return httpx.Response(599, json={"message": "harness assertion failed"})

    def _answer(request: httpx.Request) -> httpx.Response:
        got = _describe(request)
        assert pending, f"unexpected extra request {got}"
        call = pending.pop(0)
        want: dict[str, Any] = {
            "method": call.method,
            "url": call.url,
            "query": [(k, str(v)) for k, v in call.query],
        }
        if call.json is not None:
            want["json"] = call.json
        if call.form is not None:
            want["form"] = [(k, str(v)) for k, v in call.form]
        assert got == want, f"\n got: {got}\nwant: {want}"
        auth = plugin.auth_header if call.auth == "default" else call.auth
        assert request.headers.get("authorization") == auth, request.headers.get("authorization")
        for name, value in call.expect_headers.items():
            assert request.headers.get(name) == value, name
        if isinstance(call.response, str):
            return httpx.Response(call.status, text=call.response, headers=call.headers)
        if call.response is None:
            return httpx.Response(call.status, headers=call.headers)
        return httpx.Response(call.status, json=call.response, headers=call.headers)

    gw = make_gateway(tmp_path, transport=httpx.MockTransport(handler))
    principal = principal_for(gw)
    gw.credentials.save(principal.user.id, plugin.integration, plugin.credential)
    out = await gw.execute(principal, [{"tool": tool, "args": args, "ref_id": None}])
    if failures:
        raise failures[0]
    assert not pending, f"requests not made: {pending}"
    return out


async def run_case(plugin: Plugin, tmp_path: Path, case: Case) -> None:
    out = await _run(plugin, tmp_path, case.tool, case.args, case.calls)
    assert out == {"results": [{"result": case.result}]}


async def run_error(
    plugin: Plugin, tmp_path: Path, tool: str, args: dict[str, Any], calls: list[Call], error: str
) -> None:
    out = await _run(plugin, tmp_path, tool, args, calls)
    assert out == {"results": [{"error": error}]}


def tool_names(module: Any) -> set[str]:
    return {t.name for t in module.TOOLS}


def check_catalog(integration: str, module: Any) -> None:
    """Every tool of the integration: prefixed name under 64 characters, a sentence saying what it
    does, a valid JSON Schema whose every argument is described."""
    from jsonschema import Draft202012Validator
    from workbench.composition import build_registry

    registry = build_registry()
    manifest = registry.manifest(integration)
    assert manifest is not None
    tools = registry.tools_of(integration)
    assert set(tools) == tool_names(module)
    for t in tools.values():
        assert t.name.startswith(manifest.prefix) and len(t.name) < 64, t.name
        assert len(t.description) >= 20 and t.description.endswith((".", ")")), t.name
        schema = t.json_schema()
        Draft202012Validator.check_schema(schema)
        assert schema["type"] == "object", t.name
        for prop, spec in schema.get("properties", {}).items():
            assert spec.get("description"), f"{t.name}.{prop} has no description"


async def exchange_code(tmp_path: Path, manifest: Any, response: dict[str, Any]) -> tuple[httpx.Request, Any]:
    """Run the provider OAuth code exchange for `manifest` against a fake token endpoint answering
    `response`; returns the token request it sent and the resulting TokenSet."""
    from workbench.oauth_client import ProviderOAuth
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
