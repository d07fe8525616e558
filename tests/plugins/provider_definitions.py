"""The providers' published API definitions, as operations a recorded request can be checked against.

Where a registry package ships the official definition, it is read from the package (installed by
pyproject.toml's dev group or package.json, never copied into this repository):

| integration | package | what it carries |
|---|---|---|
| Gmail, Drive, Calendar, Sheets | PyPI google-api-python-client | Google's discovery documents |
| GitHub | npm @octokit/openapi | GitHub's OpenAPI description (api.github.com) |
| Notion | npm @notionhq/client 5.x (as notion-client-2025-09-03) | the endpoint table (method, path, query and body params) of the SDK for Notion-Version 2025-09-03 |
| Slack | PyPI slack-sdk | one method per Web API method, its parameters as arguments |
| Stripe | PyPI stripe | one service method per endpoint, its parameters as a TypedDict |

The others come from compact fact tables written from the published definitions
(tests/plugins/provider_facts.py and, for Linear's GraphQL API, tests/plugins/linear_schema.graphql).
"""

from __future__ import annotations

import ast
import functools
import inspect
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
NODE_MODULES = ROOT / "node_modules"


@dataclass(frozen=True)
class Op:
    """One documented operation. `query`/`body` are the parameter names the definition allows
    (patterns are regular expressions, for names like `sort[0][field]`); None: not listed by it."""

    method: str
    url: str  # full URL template: {name} is one path segment, {+name} one or more
    query: frozenset[str] | None
    body: frozenset[str] | None
    source: str
    scopes: frozenset[str] = frozenset()  # any one of these grants the operation (where published)
    # The API family takes granular scopes only (Jira Software): every one of `scopes` is needed.
    needs_all: bool = False

    @functools.cached_property
    def pattern(self) -> re.Pattern[str]:
        return _template(self.url)

    def allows(self, names: Iterable[str], allowed: frozenset[str] | None) -> list[str]:
        """The names the definition does not list (an empty list when all are allowed)."""
        if allowed is None:
            return []
        patterns = [re.compile(a) for a in allowed if a.startswith("^")]
        return [n for n in names if n not in allowed and not any(p.fullmatch(n) for p in patterns)]


def _template(url: str) -> re.Pattern[str]:
    out, pos = [], 0
    for m in re.finditer(r"\{(\+?)[^}]+\}", url):
        out.append(re.escape(url[pos : m.start()]))
        out.append(".+" if m.group(1) else "[^/]+")
        pos = m.end()
    out.append(re.escape(url[pos:]))
    return re.compile("".join(out))


def find(ops: list[Op], method: str, url: str) -> Op | None:
    """The operation a request is for: the most literal template matching it."""
    hits = [op for op in ops if op.method == method and op.pattern.fullmatch(url)]
    return max(hits, key=lambda op: len(re.sub(r"\{[^}]+\}", "", op.url))) if hits else None


# -- Google discovery documents --------------------------------------------------------------------

GOOGLE_DOCS = {
    "google-gmail": "gmail.v1.json",
    "google-drive": "drive.v3.json",
    "google-calendar": "calendar.v3.json",
    "google-sheets": "sheets.v4.json",
}


def google(integration: str) -> list[Op]:
    import googleapiclient

    name = GOOGLE_DOCS[integration]
    path = Path(googleapiclient.__file__).parent / "discovery_cache" / "documents" / name
    doc = json.loads(path.read_text())
    source = (
        f"Google discovery document {doc['id']} (revision {doc.get('revision')}, google-api-python-client)"
    )
    common = {k for k, v in doc.get("parameters", {}).items() if v.get("location") == "query"}
    ops: list[Op] = []

    def body_fields(method: dict[str, Any]) -> frozenset[str] | None:
        ref = (method.get("request") or {}).get("$ref")
        if not ref:
            return frozenset()
        return frozenset(doc["schemas"][ref].get("properties", {}))

    def walk(resources: dict[str, Any]) -> None:
        for res in resources.values():
            for method in (res.get("methods") or {}).values():
                query = frozenset(
                    {k for k, v in method.get("parameters", {}).items() if v.get("location") == "query"}
                    | common
                )
                scopes = frozenset(method.get("scopes", []))
                urls = [doc["rootUrl"] + doc["servicePath"] + method["path"]]
                upload = ((method.get("mediaUpload") or {}).get("protocols") or {}).get("simple")
                if upload:
                    urls.append(doc["rootUrl"] + upload["path"].lstrip("/"))
                for url in urls:
                    ops.append(Op(method["httpMethod"], url, query, body_fields(method), source, scopes))
            walk(res.get("resources") or {})

    walk(doc.get("resources") or {})
    return ops


# -- GitHub OpenAPI --------------------------------------------------------------------------------


@functools.cache
def github() -> list[Op]:
    path = NODE_MODULES / "@octokit" / "openapi" / "generated" / "api.github.com.json"
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: run `make setup-test` (npm ci) first")
    spec = json.loads(path.read_text())
    source = f"GitHub OpenAPI description api.github.com {spec['info'].get('version')} (@octokit/openapi)"
    components = spec.get("components", {})

    def resolve(node: Any) -> Any:
        while isinstance(node, dict) and "$ref" in node:
            kind, name = node["$ref"].split("/")[-2:]
            node = components[kind][name]
        return node

    def properties(schema: Any) -> set[str]:
        schema = resolve(schema) or {}
        names = set((schema.get("properties") or {}).keys())
        for key in ("allOf", "oneOf", "anyOf"):
            for sub in schema.get(key) or []:
                names |= properties(sub)
        return names

    ops = []
    for url, item in spec["paths"].items():
        shared = item.get("parameters", [])
        for method, op in item.items():
            if method not in {"get", "post", "put", "patch", "delete"}:
                continue
            params = [resolve(p) for p in [*shared, *op.get("parameters", [])]]
            query = frozenset(p["name"] for p in params if p.get("in") == "query")
            content = (resolve(op.get("requestBody")) or {}).get("content", {})
            schema = (content.get("application/json") or {}).get("schema")
            body = frozenset(properties(schema)) if schema else frozenset()
            # GitHub documents that a file path and a git ref may hold slashes (`docs/a.md`, `heads/main`).
            url = re.sub(r"\{(path|ref)\}$", r"{+\1}", url)
            ops.append(Op(method.upper(), "https://api.github.com" + url, query, body, source))
    return ops


# -- Notion SDK endpoint table ---------------------------------------------------------------------

_NOTION_ENTRY = re.compile(
    r"exports\.(\w+) = \{\s*method: \"(\w+)\",\s*pathParams: \[([^\]]*)\],\s*queryParams: \[([^\]]*)\],"
    r"\s*bodyParams: \[([^\]]*)\],\s*path: \([^)]*\) => `([^`]*)`",
    re.S,
)


@functools.cache
def notion() -> list[Op]:
    pkg = NODE_MODULES / "notion-client-2025-09-03"
    version = json.loads((pkg / "package.json").read_text())["version"]
    src = pkg / "build" / "src"
    # 5.x splits the table into one module per resource (api-endpoints/*.js).
    text = "\n".join(p.read_text() for p in sorted((src / "api-endpoints").glob("*.js")))
    source = f"@notionhq/client {version} endpoint table (Notion-Version 2025-09-03)"
    names = lambda raw: frozenset(re.findall(r'"([^"]+)"', raw))  # noqa: E731
    ops = []
    for _, method, _, query, body, path in _NOTION_ENTRY.findall(text):
        url = "https://api.notion.com/v1/" + re.sub(r"\$\{p\.(\w+)\}", r"{\1}", path)
        ops.append(Op(method.upper(), url, names(query), names(body), source))
    if not ops:
        raise AssertionError("no endpoints found in @notionhq/client: its build layout changed")
    return ops


# -- Slack SDK methods -----------------------------------------------------------------------------


@functools.cache
def slack() -> list[Op]:
    import slack_sdk
    from slack_sdk import WebClient

    source = f"slack-sdk {slack_sdk.version.__version__} WebClient"
    ops = []
    for name, fn in inspect.getmembers(WebClient, inspect.isfunction):
        src = inspect.getsource(fn)
        called = re.search(r'self\.api_call\(\s*"([\w.]+)"', src)
        if not called:
            continue
        params = frozenset(
            p.name
            for p in inspect.signature(fn).parameters.values()
            if p.name != "self" and p.kind is not p.VAR_KEYWORD
        )
        url = "https://slack.com/api/" + called.group(1)
        # The Web API takes every method by GET (query) or POST (form or JSON body).
        for method in ("GET", "POST"):
            ops.append(Op(method, url, params, params, f"{source}.{name}"))
    return ops


# -- Stripe SDK services ---------------------------------------------------------------------------

_STRIPE_OPTIONS = {
    "api_key",
    "stripe_version",
    "stripe_account",
    "stripe_context",
    "max_network_retries",
    "idempotency_key",
    "content_type",
    "headers",
}


@functools.cache
def stripe() -> list[Op]:
    import stripe as stripe_sdk
    import stripe.params as stripe_params

    source = f"stripe-python {stripe_sdk.VERSION} services"
    ops = []
    for path in sorted(Path(stripe_sdk.__file__).parent.glob("_*_service.py")):
        tree = ast.parse(path.read_text())
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef) or fn.name.endswith("_async"):
                continue
            call = next(
                (
                    n
                    for n in ast.walk(fn)
                    if isinstance(n, ast.Call)
                    and isinstance(n.func, ast.Attribute)
                    and n.func.attr == "_request"
                    and len(n.args) >= 2
                ),
                None,
            )
            if call is None:
                continue
            method = ast.literal_eval(call.args[0]).upper()
            target = call.args[1]
            if isinstance(target, ast.Call) and isinstance(target.func, ast.Attribute):
                target = target.func.value  # "/v1/customers/{customer}".format(...)
            url_path = ast.literal_eval(target)
            names: frozenset[str] | None = None
            for arg in fn.args.args:
                if arg.arg == "params" and arg.annotation is not None:
                    hint = re.search(r"[\"'](\w+Params)[\"']", ast.unparse(arg.annotation))
                    if hint and hasattr(stripe_params, hint.group(1)):
                        typed = getattr(stripe_params, hint.group(1))
                        names = frozenset(typed.__annotations__) - _STRIPE_OPTIONS
            allowed = names if names is not None else frozenset()
            ops.append(
                Op(
                    method,
                    "https://api.stripe.com" + url_path,
                    allowed,
                    allowed,
                    f"{source} {path.stem}.{fn.name}",
                )
            )
    return ops


def stripe_top(name: str) -> str:
    """A Stripe form key's top-level parameter: `line_items[0][price]` -> `line_items`."""
    return name.split("[", 1)[0]
