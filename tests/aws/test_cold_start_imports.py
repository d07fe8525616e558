"""What the MCP function's first API-key tool call imports (what a cold start pays for).

A fresh interpreter, the MCP entry loaded as Lambda loads it, DynamoDB and KMS on moto: after the
first tools/call none of the modules below may have been imported — they belong to other paths
(the OAuth server, the portal, custom apps, search, the browser, boto3's fallback, web frameworks).
bench/cold_start.py measures the time; this keeps the import set from creeping back.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from workbench.settings import Settings

from tests.support.apigw import http_api_event
from tests.support.aws import AwsEndpoint
from tests.support.processes import REPO

NOT_ON_THE_API_KEY_PATH = (
    "boto3",
    "botocore",
    "aws_xray_sdk",
    "aws_lambda_powertools",
    "mangum",
    "starlette",
    "anyio",
    "jwt",
    "httpx",  # a built-in tool calls no upstream
    "pydantic",  # the jots tools' arguments are declared without it (workbench.arguments)
    "pydantic_core",
    "importlib.metadata",
    "workbench.guard.egress",
    "cryptography.hazmat.primitives.asymmetric",
    # A stored signing key is read without cryptography's PEM reader (workbench.identity.tokens).
    "cryptography.hazmat.primitives.serialization",
    "workbench.oauth",
    "workbench.connections.provider_oauth",
    "workbench.identity.tokens",
    "workbench.connections.flow",
    "workbench.external",
    "workbench.engine.search",
    "workbench.web",
    "workbench.browser",
    "workbench.builtin.apps",
    "workbench.builtin.browser",
    "workbench_plugins.github.tools",
    "workbench.stores.flow_records",  # connect, approvals, custom apps, OAuth server records
    "html",  # only the outage page escapes with it (workbench.guard.outage)
    "uuid",  # ids are secrets.token_hex (uuid imports platform: 1.4 ms)
)

# Building a dataclass costs about 1 ms of a cold start on Python 3.12 (one compile per generated
# method), so the engine's own dataclasses a first tool call builds are these, no more: the records
# it reads (user, key, connection, jot), the manifests, settings and the tool-call values. Internal
# holders are plain classes; the records of other flows live in workbench.stores.flow_records.
DATACLASSES_OF_A_TOOL_CALL = frozenset(
    {
        "workbench.annotations.Hint",
        "workbench.engine.executor.ToolCall",
        "workbench.engine.meta.MetaTool",
        "workbench.identity.auth.Principal",
        "workbench.identity.grants.Grant",
        "workbench.manifest.ApiKeyAuth",
        "workbench.manifest.ApiKeyField",
        "workbench.manifest.CookieAuth",
        "workbench.manifest.LoginHosts",
        "workbench.manifest.Manifest",
        "workbench.manifest.NoAuth",
        "workbench.manifest.OAuth2Auth",
        "workbench.manifest.Probe",
        "workbench.manifest.TokenRejected",
        "workbench.observability.tracing.TraceHeader",
        "workbench.settings.Settings",
        "workbench.stores.ApiKeyRecord",
        "workbench.stores.Connection",
        "workbench.stores.Jot",
        "workbench.stores.Stores",
        "workbench.stores.User",
        "workbench.tools.Tool",
        "workbench.tools.ToolResult",
    }
)

# Records every dataclass the child builds (the class's module and name), then loads the entry.
_COUNT_DATACLASSES = """
import dataclasses
built = []
_process_class = dataclasses._process_class
def _recorded(cls, *args, **kwargs):
    built.append(cls.__module__ + "." + cls.__qualname__)
    return _process_class(cls, *args, **kwargs)
dataclasses._process_class = _recorded
"""

CHILD = (
    _COUNT_DATACLASSES
    + """
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("app", "functions/mcp/app.py")
app = importlib.util.module_from_spec(spec); spec.loader.exec_module(app)
answer = app.handler(json.loads(sys.argv[1]), None)
print(json.dumps({"status": answer["statusCode"], "body": answer["body"], "modules": sorted(sys.modules),
                  "dataclasses": built}))
"""
)


# An OAuth access token is checked with the token service alone (a signature: cryptography's EC is
# needed, PyJWT is not: workbench.identity.es256), never by building the authorization server.
NOT_ON_THE_ACCESS_TOKEN_PATH = tuple(
    m
    for m in NOT_ON_THE_API_KEY_PATH
    if m not in ("cryptography.hazmat.primitives.asymmetric", "workbench.identity.tokens")
)

# The curl proxy's first request: the token's signature (cryptography's EC, without PyJWT), the
# user's credential, the upstream call through the egress guard (httpx). Nothing of the MCP or
# REST surfaces, the OAuth server, the portal, custom apps, search, plugins' argument models, nor
# Starlette (the proxy's requests are served on its direct path).
NOT_ON_THE_CURL_PROXY_PATH = (
    "boto3",
    "botocore",
    "aws_xray_sdk",
    "aws_lambda_powertools",
    "mangum",
    "jwt",
    "pydantic",
    "pydantic_core",
    "importlib.metadata",
    "workbench.oauth",
    "workbench.mcp",
    "workbench.rest",
    "workbench.web",
    "workbench.external",
    "workbench.engine.search",
    "workbench.engine.meta",
    "workbench.browser",
    "workbench.connections.flow",
    "workbench.connections.provider_oauth",
    "workbench_plugins.github.tools",
    "tests.support.slowapi.tools",
    "workbench.stores.flow_records",
    "starlette",  # the proxy's own request and answer on its direct path (workbench.proxy.app)
    "anyio",
    "cryptography.hazmat.primitives.serialization",
)

# A plugin tool's first upstream call: its argument model (the plugin's own pydantic), its
# credential decrypted (cryptography's AES-GCM, a KMS data key), the call through httpx's client on
# Workbench's own HTTP/1.1 transport: no httpcore, h11 or anyio, no SSL context (certifi's CA
# bundle) for a plain-http upstream; nothing of the OAuth server, the portal, custom apps or search.
NOT_ON_THE_PLUGIN_CALL_PATH = (
    "boto3",
    "botocore",
    "aws_xray_sdk",
    "aws_lambda_powertools",
    "mangum",
    "starlette",
    "anyio",
    "sniffio",
    "httpcore",
    "h11",
    "certifi",
    "jwt",
    "cryptography.hazmat.primitives.asymmetric",
    "workbench.oauth",
    "workbench.identity.tokens",
    "workbench.connections.flow",
    "workbench.connections.provider_oauth",
    "workbench.external",
    "workbench.engine.search",
    "workbench.web",
    "workbench.rest",
    "workbench.browser",
    "workbench.builtin.apps",
    "workbench.builtin.browser",
    "workbench_plugins.github.tools",
)

PROXY_CHILD = (
    _COUNT_DATACLASSES
    + """
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("app", "functions/proxy/app.py")
app = importlib.util.module_from_spec(spec); spec.loader.exec_module(app)
answer = app.handler(json.loads(sys.argv[1]), None)
print(json.dumps({"status": answer["statusCode"], "body": answer["body"], "modules": sorted(sys.modules),
                  "dataclasses": built}))
"""
)

# The curl proxy's own: the egress policy and the checked URL, the client's reply, the match of
# the request to a connection, the signing key the token is checked against.
DATACLASSES_OF_A_CURL_PROXY_REQUEST = DATACLASSES_OF_A_TOOL_CALL | {
    "workbench.guard.egress.CheckedUrl",
    "workbench.guard.egress.EgressPolicy",
    "workbench.guard.http1.Reply",
    "workbench.proxy.app._Found",
    "workbench.identity.tokens.SigningKey",
}


def _first_list_jots(endpoint: AwsEndpoint, settings: Settings, token: str) -> dict[str, Any]:
    """What a fresh MCP function has imported ("modules") and the dataclasses it built
    ("dataclasses") after answering one list_jots with `token`."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "execute_tools", "arguments": {"executions": [{"tool": "list_jots", "args": {}}]}},
    }
    event = http_api_event(
        "POST",
        "/mcp",
        route_key="ANY /mcp",
        body=body,
        headers={"authorization": f"Bearer {token}", "mcp-protocol-version": "2025-06-18"},
    )
    env = {
        "PATH": "/usr/bin:/bin",
        **endpoint.env(settings),
        "WORKBENCH_PUBLIC_URL": "https://gw.example.test",
    }
    done = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(event)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["status"] == 200, out["body"]
    result = json.loads(json.loads(out["body"])["result"]["content"][0]["text"])
    assert result == {"results": [{"result": {"jots": []}}]}
    return out


def _ours(dataclasses: list[str]) -> set[str]:
    return {name for name in dataclasses if name.startswith("workbench.")}


def _among(modules: list[str], banned: tuple[str, ...]) -> list[str]:
    return [m for m in modules if any(m == x or m.startswith(x + ".") for x in banned)]


def test_an_api_key_tool_call_imports_only_what_it_needs(
    moto_endpoint: AwsEndpoint, aws_settings: Settings
) -> None:
    from workbench.composition import build_gateway

    gw = build_gateway(aws_settings)
    key = gw.auth.mint_key(gw.stores.users.get_or_create("ada@example.com"), label="cold")
    first = _first_list_jots(moto_endpoint, aws_settings, key)
    assert _among(first["modules"], NOT_ON_THE_API_KEY_PATH) == []
    assert _ours(first["dataclasses"]) - DATACLASSES_OF_A_TOOL_CALL == set()


def test_an_oauth_token_tool_call_never_builds_the_authorization_server(
    moto_endpoint: AwsEndpoint, aws_settings: Settings
) -> None:
    from dataclasses import replace

    from workbench.composition import build_gateway

    gw = build_gateway(replace(aws_settings, public_url="https://gw.example.test"))
    user = gw.stores.users.get_or_create("ada@example.com")
    claims = {"sub": user.id, "email": user.email, "client_id": "cold-client", "scope": ""}
    access = gw.tokens.mint(claims, audience=gw.oauth.audience, ttl_seconds=600)  # as the server issues it
    first = _first_list_jots(moto_endpoint, aws_settings, access)
    assert "workbench.identity.tokens" in first["modules"]  # the token was checked...
    assert _among(first["modules"], NOT_ON_THE_ACCESS_TOKEN_PATH) == []  # ...without the server
    assert (
        _ours(first["dataclasses"]) - DATACLASSES_OF_A_TOOL_CALL - {"workbench.identity.tokens.SigningKey"}
        == set()
    )


def test_a_curl_proxy_request_imports_only_what_it_needs(
    moto_endpoint: AwsEndpoint, aws_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dataclasses import replace

    from workbench.composition import build_gateway

    from tests.support.slowapi import connect_slowapi, slow_upstream

    with slow_upstream() as url:
        monkeypatch.setenv("WB_SLOW_API_URL", url)
        settings = replace(
            aws_settings,
            public_url="https://gw.example.test",
            extra_plugins=("tests.support.slowapi",),
            egress_allow="loopback",
        )
        gw = build_gateway(settings)
        ada = gw.stores.users.get_or_create("ada@example.com")
        connect_slowapi(gw, ada.id)
        key = gw.auth.mint_key(ada)
        curl = gw.curl.mint(gw.auth.api_keys.resolve(key), ["slowapi"], 900)["token"]
        event = http_api_event(
            "GET",
            "/c/slowapi/fast",
            route_key="ANY /c/{integration}/{proxy+}",
            path_parameters={"integration": "slowapi", "proxy": "fast"},
            headers={"authorization": f"Bearer {curl}"},
            domain="gw.example.test",
        )
        env = {
            "PATH": "/usr/bin:/bin",
            **moto_endpoint.env(aws_settings),
            "WORKBENCH_PUBLIC_URL": "https://gw.example.test",
            "WORKBENCH_EXTRA_PLUGINS": "tests.support.slowapi",
            "WORKBENCH_EGRESS_ALLOW": "loopback",
            "WB_SLOW_API_URL": url,
        }
        done = subprocess.run(
            [sys.executable, "-c", PROXY_CHILD, json.dumps(event)],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["status"] == 200, out["body"]
    assert "workbench.identity.es256" in out["modules"]  # the token's signature was checked...
    assert _among(out["modules"], NOT_ON_THE_CURL_PROXY_PATH) == []  # ...without PyJWT
    assert _ours(out["dataclasses"]) - DATACLASSES_OF_A_CURL_PROXY_REQUEST == set()


@pytest.mark.parametrize(
    ("plugin", "tool", "banned"),
    [
        # Its tools module imports pydantic for its argument models (as the shipped plugins do).
        ("slowapi", "slowapi_fast", NOT_ON_THE_PLUGIN_CALL_PATH),
        # Its tool declares its arguments with workbench.tools.Arguments: no pydantic at all.
        (
            "leanapi",
            "leanapi_get",
            (*NOT_ON_THE_PLUGIN_CALL_PATH, "pydantic", "pydantic_core", "importlib.metadata"),
        ),
    ],
)
def test_a_plugin_tools_first_upstream_call_imports_only_what_it_needs(
    moto_endpoint: AwsEndpoint,
    aws_settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
    plugin: str,
    tool: str,
    banned: tuple[str, ...],
) -> None:
    from dataclasses import replace

    from workbench.composition import build_gateway

    from tests.support.slowapi import slow_upstream

    with slow_upstream(keep_alive=True) as url:
        monkeypatch.setenv("WB_SLOW_API_URL", url)
        package = f"tests.support.{plugin}"
        settings = replace(aws_settings, extra_plugins=(package,), egress_allow="loopback")
        gw = build_gateway(settings)
        ada = gw.stores.users.get_or_create("ada@example.com")
        # Stored encrypted under a KMS data key: the call decrypts it.
        gw.credentials.save(ada.id, plugin, {"key": "plugin-key"})
        key = gw.auth.mint_key(ada)
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {
                "name": "execute_tools",
                "arguments": {"executions": [{"tool": tool, "args": {}}]},
            },
        }
        event = http_api_event(
            "POST",
            "/mcp",
            route_key="ANY /mcp",
            body=body,
            headers={"authorization": f"Bearer {key}", "mcp-protocol-version": "2025-06-18"},
        )
        env = {
            "PATH": "/usr/bin:/bin",
            **moto_endpoint.env(aws_settings),
            "WORKBENCH_PUBLIC_URL": "https://gw.example.test",
            "WORKBENCH_EXTRA_PLUGINS": package,
            "WORKBENCH_EGRESS_ALLOW": "loopback",
            "WB_SLOW_API_URL": url,
        }
        done = subprocess.run(
            [sys.executable, "-c", CHILD, json.dumps(event)],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["status"] == 200, out["body"]
    result = json.loads(json.loads(out["body"])["result"]["content"][0]["text"])
    assert result == {"results": [{"result": {"fast": True}}]}  # it went upstream...
    assert "workbench.guard.http1" in out["modules"] and "httpx" in out["modules"]
    assert _among(out["modules"], banned) == []  # ...with no more than that


# The web function's first page (where /portal sends a signed-in user): Starlette and the portal's
# pages, the OAuth server's routes among them, but not the server behind them (its client registry,
# the egress guard, httpx), nor the plugins' OAuth client, nor the jots host's markdown parser.
NOT_ON_THE_PORTAL_PAGE_PATH = (
    "boto3",
    "botocore",
    "aws_xray_sdk",
    "aws_lambda_powertools",
    "mangum",
    "jwt",
    "httpx",
    "httpcore",
    "pydantic",
    "markdown_it",
    "workbench.oauth.service",
    "workbench.oauth.clients",
    "workbench.guard.egress",
    "workbench.connections.provider_oauth",
    "workbench.external.service",
    "workbench.external.client",
    "workbench.web.jots_markdown",
    "workbench.mcp",
    "workbench.rest",
    "workbench.engine.search",
    "workbench.browser",
)

WEB_CHILD = """
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("app", "functions/web/app.py")
app = importlib.util.module_from_spec(spec); spec.loader.exec_module(app)
answer = app.handler(json.loads(sys.argv[1]), None)
print(json.dumps({"status": answer["statusCode"], "body": answer["body"], "modules": sorted(sys.modules)}))
"""


def test_a_portal_page_imports_only_what_it_needs(moto_endpoint: AwsEndpoint, aws_settings: Settings) -> None:
    from dataclasses import replace

    from workbench.composition import build_gateway
    from workbench.web.sessions import SESSION_COOKIE

    settings = replace(aws_settings, public_url="https://gw.example.test")
    gw = build_gateway(settings)
    ada = gw.stores.users.get_or_create("ada@example.com")
    event = http_api_event(
        "GET",
        "/portal/integrations",
        route_key="ANY /portal/{proxy+}",
        cookies=[f"{SESSION_COOKIE}={gw.sessions.issue(ada.id)}"],
        domain="gw.example.test",
    )
    env = {
        "PATH": "/usr/bin:/bin",
        **moto_endpoint.env(aws_settings),
        "WORKBENCH_PUBLIC_URL": "https://gw.example.test",
    }
    done = subprocess.run(
        [sys.executable, "-c", WEB_CHILD, json.dumps(event)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["status"] == 200, out["body"][:500]
    assert "ada@example.com" in out["body"] and "Integrations" in out["body"]  # the signed-in page...
    assert "workbench.oauth.routes" in out["modules"]  # ...served beside the OAuth routes...
    assert _among(out["modules"], NOT_ON_THE_PORTAL_PAGE_PATH) == []  # ...without the server behind them


# A first search_tools by a user with no custom app: the shared catalog's prebuilt index and one read
# of the user's custom-app partition, beside the connections of the hits. The custom-app service
# is built for that read, but not what reaching a server or reading a document takes: no HTTP client,
# MCP transport, OAuth client, OpenAPI or document reader.
NOT_ON_THE_SEARCH_PATH = (
    "boto3",
    "botocore",
    "mangum",
    "starlette",
    "anyio",
    "httpx",
    "httpcore",
    "pydantic",
    "workbench.guard.egress_transport",
    "workbench.guard.shared_http",
    "workbench.guard.http1",
    "workbench.external.oauth",
    "workbench.external.openapi",
    "workbench.external.documents",
    "workbench.external.document_worker",
    "workbench.connections.provider_oauth",
    "workbench.connections.flow",
    "workbench.stores.flow_records",  # the partition's version is read without the flows' records
    "workbench.oauth",
    "workbench.web",
    "workbench_plugins.github.tools",
)


def test_a_search_by_a_user_without_custom_apps_imports_only_what_it_needs(
    moto_endpoint: AwsEndpoint, aws_settings: Settings, tmp_path: Path
) -> None:
    from workbench.composition import build_gateway, build_registry
    from workbench.engine import catalog_index

    gw = build_gateway(aws_settings)
    key = gw.auth.mint_key(gw.stores.users.get_or_create("ada@example.com"), label="cold")
    # The index the layer ships beside workbench/engine/catalog_index.py (a checkout has none).
    index = tmp_path / "catalog_index.bin"
    index.write_bytes(catalog_index.build(build_registry()))
    shipped = (
        f"import workbench.engine.catalog_index as c, pathlib; c.INDEX_PATH = pathlib.Path({str(index)!r})\n"
    )
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "search_tools", "arguments": {"query": "create a jot"}},
    }
    event = http_api_event(
        "POST",
        "/mcp",
        route_key="ANY /mcp",
        body=body,
        headers={"authorization": f"Bearer {key}", "mcp-protocol-version": "2025-06-18"},
    )
    env = {
        "PATH": "/usr/bin:/bin",
        **moto_endpoint.env(aws_settings),
        "WORKBENCH_PUBLIC_URL": "https://gw.example.test",
    }
    done = subprocess.run(
        [sys.executable, "-c", shipped + CHILD, json.dumps(event)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["status"] == 200, out["body"]
    assert "create_jot" in out["body"]
    assert "workbench.external.service" in out["modules"]  # the user's partition was read...
    assert _among(out["modules"], NOT_ON_THE_SEARCH_PATH) == []  # ...without what reaching an app takes


def test_the_mcp_app_and_the_portal_name_the_same_session_cookie() -> None:
    from workbench.mcp import app
    from workbench.web import sessions

    assert app._SESSION_COOKIE == sessions.SESSION_COOKIE
