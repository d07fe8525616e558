"""Issue 12: property-based fuzzing of /mcp, /token, /register, /api/connect/redeem and
/rest/<integration> on the whole local app (every surface's routes, the body guard, the SQLite
store): whatever arrives, no answer is a 5xx.

Bodies are built from JSON-RPC / REST / OAuth shapes whose values may be replaced, at the text
level, by hostile fragments: NaN and Infinity, numbers that overflow, lone surrogates in keys and
values, deep nesting, malformed JSON, odd step/vault refs. Bounded (a fixed number of examples,
derandomized) so the module runs in seconds; the counts are printed with -s.
"""

from __future__ import annotations

import base64
import json
import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient
from workbench.composition import Gateway, build_gateway
from workbench.identity.crypto import LocalKeyProvider
from workbench.runtime.local_app import create_local_app
from workbench.settings import Settings
from workbench.web.sessions import SESSION_COOKIE

from tests.oauth.conftest import TOKEN_KEYS

BASE = "http://127.0.0.1:8787"
FUZZ = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@dataclass(frozen=True)
class Raw:
    """A fragment written into the JSON text as is (it may make the text invalid or non-strict)."""

    text: str


HOSTILE = [
    "NaN",
    "Infinity",
    "-Infinity",
    "1e400",
    "-1e99999",
    "9" * 5000,
    '"\\ud800"',
    '"x\\udfffy"',
    '"\\udc00\\ud800"',
    '"\\u0000\\u2028"',
    '"\\x"',
    "[" * 80 + "]" * 80,
    '{"a":' * 70 + "0" + "}" * 70,
    "[" * 3000,
    '"{{step:a.b.²}}"',
    '"{{step:a.01}}"',
    '"{{step:a.٣}}"',
    '"{{step:"',
    '"{{vault:x}}"',
    '"{{vault:}} and {{step:a}}"',
    "tru",
    "[1,]",
    '"' + "é" * 300 + '"',
]
HOSTILE_KEYS = ['"\\ud800"', '"\\udfffk"', '"__proto__"', '"constructor"', '""']

text = st.text(max_size=24)
clean_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    text,
)
hostile_leaf = clean_leaf | st.sampled_from(HOSTILE).map(Raw)


def values(leaf: st.SearchStrategy[Any], keys: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.recursive(
        leaf,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
        max_leaves=16,
    )


def render(node: Any) -> str:
    """JSON text for `node`, with Raw fragments inserted verbatim."""
    if isinstance(node, Raw):
        return node.text
    if isinstance(node, dict):
        items = (f"{k.text if isinstance(k, Raw) else json.dumps(k)}:{render(v)}" for k, v in node.items())
        return "{" + ",".join(items) + "}"
    if isinstance(node, list):
        return "[" + ",".join(render(v) for v in node) + "]"
    return json.dumps(node)


# The tools an execution may name: local ones, ones that need a connection (NOT_CONNECTED), unknown
# names and odd ones. apps_* (which reach out to URLs) and browser_* (which start chromium) are
# left out: they would make this test slow and depend on the network, not on its inputs.
TOOLS = [
    "create_jot",
    "list_jots",
    "get_jot",
    "search_jots",
    "update_jot",
    "vault_set",
    "vault_list",
    "vault_delete",
    "github_list_prs",
    "slack_send_message",
    "nope",
    "",
    "free_\ud800",
]
META = [
    "execute_tools",
    "search_tools",
    "get_tool_schema",
    "whoami",
    "list_integrations",
    "connect",
    "get_auth_url",
    "wait_for_connection",
    "curl_session",
    "nope",
]
REFS = [
    "{{step:a}}",
    "{{step:a.id}}",
    "{{step:a.jots.0.id}}",
    "{{step:b.x.01}}",
    "{{vault:k}}",
    "{{step:}}",
    "x {{step:a.title}}",
]


@dataclass(frozen=True)
class Shapes:
    """The request bodies of each surface, with leaves from one leaf strategy."""

    rpc: st.SearchStrategy[Any]
    rest: st.SearchStrategy[Any]
    register: st.SearchStrategy[Any]
    redeem: st.SearchStrategy[Any]
    any_value: st.SearchStrategy[Any]


def mostly(good: st.SearchStrategy[Any], odd: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """`good` four times in five, `odd` otherwise (`|` would weigh each alternative of `odd` alike)."""
    return st.integers(0, 4).flatmap(lambda i: odd if i == 0 else good)


def shapes(leaf: st.SearchStrategy[Any], keys: st.SearchStrategy[Any]) -> Shapes:
    value = values(leaf, keys)
    ref = st.sampled_from(REFS)
    jot_args = st.fixed_dictionaries(
        {},
        optional={
            "title": mostly(text | ref, leaf),
            "body": mostly(text, leaf),
            "id": mostly(ref, leaf),
            "query": text,
            "name": mostly(st.sampled_from(["k", "other", "{{vault:k}}"]), leaf),
            "value": mostly(text | ref, leaf),
        },
    )
    execution = st.fixed_dictionaries(
        {"tool": mostly(st.sampled_from(TOOLS), leaf)},
        optional={
            "args": mostly(jot_args, st.dictionaries(text, value | ref, max_size=3) | value),
            "ref_id": mostly(st.sampled_from(["a", "b", "c"]), leaf),
        },
    )
    execute = st.fixed_dictionaries(
        {"executions": mostly(st.lists(execution, min_size=1, max_size=4), value)},
        optional={
            "compose": mostly(st.booleans(), leaf),
            "return": mostly(ref | st.dictionaries(text, ref, max_size=3), value),
        },
    )
    other_args = st.fixed_dictionaries(
        {},
        optional={
            "query": mostly(text, leaf),
            "limit": mostly(st.integers(-5, 80), leaf),
            "tool": mostly(st.sampled_from(TOOLS), leaf),
            "integration": mostly(st.sampled_from(["github", "jots", "vault", ""]), leaf),
            "connectionId": mostly(text, leaf),
            "timeoutSec": mostly(st.just(1), leaf),
            "integrations": mostly(st.lists(st.sampled_from(["github", "demo", "jots"]), max_size=3), leaf),
            "expiresInSeconds": mostly(st.integers(0, 5000), leaf),
        },
    )
    params = st.fixed_dictionaries(
        {
            "name": mostly(st.sampled_from(META), leaf),
            "arguments": mostly(execute | other_args, value),
        },
        optional={"_meta": value},
    )
    methods = st.sampled_from(["tools/call", "tools/call", "tools/call", "tools/list", "ping", "initialize"])
    rpc = st.fixed_dictionaries(
        {
            "jsonrpc": mostly(st.just("2.0"), leaf),
            "method": mostly(methods, leaf),
            "id": mostly(st.integers(), leaf),
        },
        optional={"params": mostly(params, value)},
    )
    rest = mostly(
        st.fixed_dictionaries(
            {"tool": mostly(st.sampled_from(TOOLS), leaf)}, optional={"args": mostly(jot_args, value)}
        )
        | st.fixed_dictionaries({"executions": mostly(st.lists(execution, max_size=4), value)}),
        value,
    )
    uris = st.sampled_from(["http://127.0.0.1/cb", "https://a.example/cb", "javascript:x", "cursor://cb"])
    register = st.fixed_dictionaries(
        {"redirect_uris": mostly(st.lists(mostly(uris, leaf), min_size=1, max_size=3), value)},
        optional={
            "client_name": mostly(text, leaf),
            "token_endpoint_auth_method": mostly(st.sampled_from(["none", "client_secret_post", "x"]), leaf),
            "grant_types": mostly(
                st.lists(st.sampled_from(["authorization_code", "refresh_token"]), max_size=2), value
            ),
            "response_types": mostly(st.just(["code"]), value),
            "scope": mostly(text, leaf),
            "client_uri": mostly(st.just("https://a.example"), leaf),
            "contacts": value,
        },
    )
    redeem = mostly(
        st.fixed_dictionaries({}, optional={"token": mostly(text, leaf), "login_host": mostly(text, leaf)}),
        value,
    )
    return Shapes(rpc, rest, register, redeem, value)


CLEAN = shapes(clean_leaf, text)
HOSTILE_SHAPES = shapes(hostile_leaf, text | st.sampled_from(HOSTILE_KEYS).map(Raw))
garbage = st.binary(max_size=200)


def bodies(pick: Any) -> st.SearchStrategy[Any]:
    """Mostly well-formed bodies (so the engine and the stores are reached), some hostile, some bytes."""
    return st.one_of(
        pick(CLEAN), pick(CLEAN), pick(CLEAN), pick(HOSTILE_SHAPES), pick(HOSTILE_SHAPES), garbage
    )


@dataclass
class Target:
    gw: Gateway
    http: TestClient
    key: str
    cookie: str
    csrf: str
    statuses: dict[str, Counter[int]] = field(default_factory=dict)

    def post(self, surface: str, path: str, content: bytes | str, headers: dict[str, str]) -> None:
        r = self.http.post(path, content=content, headers=headers)
        self.statuses.setdefault(surface, Counter())[r.status_code] += 1
        assert r.status_code < 500, (surface, path, r.status_code, r.text[:500], content[:300])


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    data = Path(tmp_path_factory.mktemp("fuzz"))
    settings_ = Settings(
        store="sqlite",  # the store where odd strings would fail to encode
        data_dir=data,
        public_url=BASE,
        dev_login=True,
        browser_executable="/nonexistent/chromium",
        oauth_register_per_ip=60,  # most registrations are judged, the rest meet the limit
    )
    gw = build_gateway(settings_, key_provider=LocalKeyProvider.from_secret(os.urandom(32)))
    user = gw.stores.users.get_or_create("ada@example.com")
    key = gw.auth.mint_key(user)
    gw.vault.set(user.id, "k", "fuzz-secret-value")
    with TestClient(create_local_app(gw), base_url=BASE, raise_server_exceptions=False) as http:
        cookie = f"{SESSION_COOKIE}={gw.sessions.issue(user.id)}"
        page = http.get("/portal/integrations", headers={"Cookie": cookie})
        csrf = page.text.split('name="csrf" value="', 1)[1].split('"', 1)[0]
        t = Target(gw, http, key, cookie, csrf)
        yield t
        print("\nfuzz answers by surface:", {k: dict(sorted(v.items())) for k, v in t.statuses.items()})
        assert all(code < 500 for counts in t.statuses.values() for code in counts)


@FUZZ
@given(
    body=bodies(lambda sh: sh.rpc),
    auth=st.sampled_from(["key", "key", "key", "none", "junk"]),
    modern=st.integers(0, 4).map(lambda i: i == 0),
)
def test_mcp_never_answers_5xx(target: Target, body: Any, auth: str, modern: bool) -> None:
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if auth == "key":
        headers["Authorization"] = f"Bearer {target.key}"
    elif auth == "junk":
        headers["Authorization"] = "Bearer wb_" + "x" * 40
    if modern:
        headers.update(
            {
                "MCP-Protocol-Version": "2026-07-28",
                "Mcp-Method": "tools/call",
                "Mcp-Name": "=?base64?" + base64.b64encode(b"execute_tools").decode() + "?=",
            }
        )
    target.post("mcp", "/mcp", body if isinstance(body, bytes) else render(body), headers)


@FUZZ
@given(
    body=bodies(lambda sh: sh.rest),
    integration=st.sampled_from(["jots", "vault", "github", "nope"])
    | st.text(min_size=1, max_size=12, alphabet="abcxyz-_%."),
)
def test_rest_never_answers_5xx(target: Target, body: Any, integration: str) -> None:
    headers = {"Authorization": f"Bearer {target.key}", "Content-Type": "application/json"}
    target.post("rest", f"/rest/{integration}", body if isinstance(body, bytes) else render(body), headers)


@FUZZ
@given(body=bodies(lambda sh: sh.register))
def test_register_never_answers_5xx(target: Target, body: Any) -> None:
    target.post(
        "register",
        "/register",
        body if isinstance(body, bytes) else render(body),
        {"Content-Type": "application/json"},
    )


@FUZZ
@given(
    form=st.lists(
        st.tuples(
            st.sampled_from(TOKEN_KEYS) | text,
            st.sampled_from(["authorization_code", "refresh_token", "", "%ED%A0%80", "%FF"]) | text,
        ),
        max_size=8,
    ),
    raw=garbage,
    basic=st.none()
    | st.text(max_size=30)
    | st.binary(max_size=30).map(lambda b: base64.b64encode(b).decode()),
    use_raw=st.booleans(),
)
def test_token_never_answers_5xx(
    target: Target, form: list[tuple[str, str]], raw: bytes, basic: str | None, use_raw: bool
) -> None:
    from urllib.parse import urlencode

    body: bytes | str = raw if use_raw else urlencode(form, safe="%")
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    if basic is not None and basic.isascii() and basic.isprintable():
        headers["Authorization"] = f"Basic {basic}"
    target.post("token", "/token", body, headers)


@FUZZ
@given(
    body=bodies(lambda sh: sh.redeem),
    as_json=st.booleans(),
    signed_in=st.booleans(),
)
def test_connect_redeem_never_answers_5xx(target: Target, body: Any, as_json: bool, signed_in: bool) -> None:
    headers = {"Origin": BASE}
    if signed_in:
        headers["Cookie"] = target.cookie
    if as_json:
        headers["Content-Type"] = "application/json"
        content: bytes | str = body if isinstance(body, bytes) else render(body)
    else:
        from urllib.parse import urlencode

        headers["Content-Type"] = "application/x-www-form-urlencoded"
        pairs = [("csrf", target.csrf)]
        if isinstance(body, dict):
            pairs += [(k if isinstance(k, str) else "k", render(v)) for k, v in body.items()]
        content = urlencode(pairs)
    target.post("redeem", "/api/connect/redeem", content, headers)
