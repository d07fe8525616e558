"""Operator servers: external MCP servers and OpenAPI apps from configuration, for every user.

The configuration is a JSON array, in the environment (`WORKBENCH_EXTERNAL_SERVERS`, or a file named
by `WORKBENCH_EXTERNAL_SERVERS_FILE`; on AWS both can come from the run-time secret). Each entry
keeps seed 004's `ExternalServerConfig` fields:

    {"name": "linear", "url": "https://mcp.example.com/{workspaceCode}/mcp",
     "auth": {"type": "bearer", "envVar": "LINEAR_MCP_TOKEN"},
     "enabled": true, "toolPrefix": "lin_", "timeout": 30000}

`auth` is `{"type": "bearer", "envVar"}`, `{"type": "header", "headerName", "envVar"}`,
`{"type": "oauth"}` (an OAuth-protected server: each user connects with their own account), or absent.
The value is read, when a request needs it, from the secret of that name: the environment variable
locally, or the run-time secret's key on AWS (so it need not be in the function configuration). An OpenAPI app adds `"type": "openapi"` and
its document, as `"spec": "<path to a JSON/YAML file>"` or inline as `"document": {...}`; `url` is
then the API's base URL (default: the document's first server), and `auth` may also be
`{"type": "query", "name", "envVar"}`. Every mistake is reported at start-up, naming the entry.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from workbench.engine.registry import RESERVED_NAMES, Registry
from workbench.errors import WorkbenchError
from workbench.external.service import DEFAULT_TIMEOUT_MS, OPERATOR, App

__all__ = ["OperatorConfigError", "operator_apps"]

_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,39}$")
_PREFIX = re.compile(r"^[A-Za-z0-9_.-]{1,48}$")
_HEADER = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}$")  # an RFC 9110 token
_FIELDS = {"name", "url", "auth", "enabled", "toolPrefix", "timeout", "type", "spec", "document"}


class OperatorConfigError(WorkbenchError, ValueError):
    """The operator's external server configuration cannot be used; the message names the entry."""


def operator_apps(
    configs: Sequence[Mapping[str, Any]], registry: Registry, env: Mapping[str, str] | None = None
) -> list[App]:
    """The configured apps. With `env` (the secrets are environment variables), a secret that is not
    set is reported now; otherwise it is reported by the first request that needs it."""
    if not configs:
        return []  # (and the OpenAPI reader stays unloaded: most deployments configure none)
    from workbench.external.openapi import OpenApiError

    apps: list[App] = []
    for index, raw in enumerate(configs):
        label = f"external server #{index + 1}"
        if not isinstance(raw, Mapping):
            raise OperatorConfigError(f"{label}: must be an object")
        name = raw.get("name")
        if isinstance(name, str):
            label = f"external server '{name}'"
        try:
            apps.append(_one(raw, env))
        except (OperatorConfigError, OpenApiError, ValueError) as exc:
            raise OperatorConfigError(f"{label}: {exc}") from None
    _check_collisions(apps, registry)
    return apps


def _one(raw: Mapping[str, Any], env: Mapping[str, str] | None) -> App:
    unknown = set(raw) - _FIELDS
    if unknown:
        raise OperatorConfigError(f"unknown field(s) {', '.join(sorted(unknown))}")
    name = raw.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise OperatorConfigError("name must be lowercase a-z, 0-9, '_' or '-' (at most 40)")
    kind = raw.get("type", "mcp")
    if kind not in ("mcp", "openapi"):
        raise OperatorConfigError("type must be 'mcp' (the default) or 'openapi'")
    prefix = raw.get("toolPrefix", f"{name.replace('-', '_')}_")
    if not isinstance(prefix, str) or not _PREFIX.match(prefix):
        raise OperatorConfigError("toolPrefix must be 1-48 letters, digits, '_', '-' or '.'")
    timeout = raw.get("timeout", DEFAULT_TIMEOUT_MS)
    if isinstance(timeout, bool) or not isinstance(timeout, int) or not 100 <= timeout <= 120_000:
        raise OperatorConfigError("timeout must be an integer between 100 and 120000 (milliseconds)")
    enabled = raw.get("enabled", True)
    if not isinstance(enabled, bool):
        raise OperatorConfigError("enabled must be true or false")
    auth_type, header, value = _auth(raw.get("auth"), env, kind)
    operations: tuple[Any, ...] = ()
    title = version = ""
    url = raw.get("url", "")
    if kind == "openapi":
        document = raw.get("document")
        spec = raw.get("spec")
        if document is None and isinstance(spec, str) and spec:
            try:
                document = Path(spec).read_text(encoding="utf-8")
            except OSError as exc:
                raise OperatorConfigError(f"spec '{spec}' cannot be read ({exc.strerror})") from None
        if document is None:
            raise OperatorConfigError("an openapi entry needs 'spec' (a file) or 'document'")
        from workbench.external.documents import parse_document
        from workbench.external.openapi import compile_document

        compiled = compile_document(parse_document(document))
        if not compiled.operations:
            raise OperatorConfigError("the document has no usable operation")
        operations, title, version = tuple(compiled.operations), compiled.title, compiled.version
        url = url or compiled.base_url
    if not isinstance(url, str) or not re.match(r"^https?://[^/\s]+", url):
        raise OperatorConfigError("url must be an absolute http(s) URL")
    return App(
        owner=OPERATOR,
        name=name,
        tool_prefix=prefix,
        kind=kind,
        url=url,
        auth_type=auth_type,
        header_name=header,
        auth_value=value,
        enabled=enabled,
        timeout_ms=timeout,
        updated_at=time.time(),  # when configured: constant for this process (cache stamps compare it)
        operations=operations,
        title=title,
        version=version,
    )


def _auth(auth: Any, env: Mapping[str, str] | None, kind: str) -> tuple[str, str, str]:
    if auth is None:
        return "none", "", ""
    if not isinstance(auth, Mapping):
        raise OperatorConfigError("auth must be an object")
    kind_of = auth.get("type")
    if kind_of == "none":
        return "none", "", ""
    if kind_of == "oauth" and kind == "mcp":  # each user signs in to the server: nothing to configure
        return "oauth", "", ""
    allowed = ("bearer", "header", "query") if kind == "openapi" else ("bearer", "header")
    if kind_of not in allowed:
        raise OperatorConfigError(f"auth.type must be {' or '.join(allowed)}")
    var = auth.get("envVar")
    if not isinstance(var, str) or not var:
        raise OperatorConfigError("auth.envVar must name the environment variable that holds the secret")
    if env is not None and not env.get(var):
        raise OperatorConfigError(f"auth.envVar {var} is not set")
    if kind_of == "bearer":
        return "bearer", "", var
    if kind_of == "query":
        param = auth.get("name")
        if not isinstance(param, str) or not param:
            raise OperatorConfigError("auth.name must be the query parameter's name")
        return "query", param, var
    header = auth.get("headerName")
    if not isinstance(header, str) or not _HEADER.match(header):
        raise OperatorConfigError("auth.headerName must be an HTTP header name")
    return "header", header, var


def _check_collisions(apps: list[App], registry: Registry) -> None:
    taken = {m.name for m in registry.manifests()} | RESERVED_NAMES | {"apps"}
    seen: dict[str, App] = {}
    for app in apps:
        if app.name in taken or app.name in seen:
            raise OperatorConfigError(f"external server '{app.name}': the name is already taken")
        for m in registry.manifests():
            if m.builtin:
                if any(t.startswith(app.tool_prefix) for t in registry.tools_of(m.name)):
                    raise OperatorConfigError(
                        f"external server '{app.name}': toolPrefix '{app.tool_prefix}' covers built-in tools"
                    )
            elif app.tool_prefix.startswith(m.prefix) or m.prefix.startswith(app.tool_prefix):
                raise OperatorConfigError(
                    f"external server '{app.name}': toolPrefix '{app.tool_prefix}' overlaps the "
                    f"'{m.name}' integration's prefix '{m.prefix}'"
                )
        for other in seen.values():
            if app.tool_prefix.startswith(other.tool_prefix) or other.tool_prefix.startswith(app.tool_prefix):
                raise OperatorConfigError(
                    f"external server '{app.name}': toolPrefix '{app.tool_prefix}' overlaps "
                    f"'{other.name}' ('{other.tool_prefix}')"
                )
        seen[app.name] = app
