"""Integrations and their tools.

An integration is declared by a `Manifest` (cheap: plain dataclasses, no pydantic models) and its
tools live in a separate module imported only when a tool of that integration is first needed, so
a cold start pays for the manifests alone.

Plugins are the subpackages of `workbench_plugins`; each exposes `manifest` in its `__init__`.
Built-in integrations (`jots`, `vault`, `browser`) are registered by the engine itself; a plugin
that takes a reserved name is refused at load.
"""

from __future__ import annotations

import importlib
import pkgutil
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from workbench.engine.annotations import Hint, hints_for
from workbench.errors import RegistryError
from workbench.tools import Tool

__all__ = [
    "RESERVED_NAMES",
    "ApiKeyAuth",
    "ApiKeyField",
    "AuthSpec",
    "CookieAuth",
    "LoginHosts",
    "Manifest",
    "NoAuth",
    "OAuth2Auth",
    "Probe",
    "Registry",
    "TokenRejected",
    "module_loader",
]

RESERVED_NAMES = frozenset({"browser", "jots"})


@dataclass(frozen=True, slots=True)
class NoAuth:
    type: Literal["none"] = "none"


@dataclass(frozen=True, slots=True)
class ApiKeyField:
    name: str
    label: str
    secret: bool = True
    help: str = ""
    # When the value decides where Workbench sends requests: the URL it makes, with `{}` for the
    # value ("{}" for a whole URL, "https://{}.zendesk.com/" for a subdomain). The portal refuses
    # a value whose URL the egress policy refuses, and stores nothing.
    url: str = ""


@dataclass(frozen=True, slots=True)
class ApiKeyAuth:
    """Fields the portal asks for; `header`/`scheme` say how the key is injected upstream."""

    fields: tuple[ApiKeyField, ...]
    header: str = "Authorization"
    scheme: str = "Bearer"  # "" means the raw value; "Basic" means base64(field0:field1)
    type: Literal["api_key"] = "api_key"


@dataclass(frozen=True, slots=True)
class TokenRejected:
    """An upstream answer meaning "this access token is no longer valid": the engine refreshes the
    token once (single-flight across instances) and retries the request once. `body_contains`, when
    set, must also appear in the body (Salesforce: 401 with INVALID_SESSION_ID)."""

    status: int = 401
    body_contains: str = ""


@dataclass(frozen=True, slots=True)
class LoginHosts:
    """A sign-in host the person chooses per connection (Salesforce: production, sandbox, My Domain).

    `authorize_url` and `token_url` carry `{login_host}`; the chosen host is kept with the stored
    credential so refreshes go back to it. A typed host must end with one of `custom_suffixes`,
    because the client secret is sent to it."""

    choices: tuple[tuple[str, str], ...]  # (label, host); the first is the default
    custom_suffixes: tuple[str, ...] = ()
    custom_label: str = ""
    custom_help: str = ""


@dataclass(frozen=True, slots=True)
class OAuth2Auth:
    authorize_url: str
    token_url: str
    scopes: tuple[str, ...] = ()
    scope_separator: str = " "
    extra_authorize_params: tuple[tuple[str, str], ...] = ()
    # Extra token-response fields stored with the credential (e.g. Salesforce's `instance_url`,
    # the org's API host, which tools read back with `ctx.credential()`).
    token_fields: tuple[str, ...] = ()
    # How the token endpoint takes the client secret: in the request body, or as HTTP Basic
    # (RFC 6749 §2.3.1), which some providers (Notion, Airtable) require.
    token_auth: Literal["client_secret_post", "client_secret_basic"] = "client_secret_post"
    # The token request's body: form-encoded (RFC 6749) or JSON (Notion), and extra headers it needs.
    token_body: Literal["form", "json"] = "form"
    token_headers: tuple[tuple[str, str], ...] = ()
    # PKCE (S256) on the authorize URL and the code exchange. Off only for a provider whose token
    # endpoint refuses the verifier it does not know (Notion validates its JSON body).
    pkce: bool = True
    # Answers that mean the access token is no longer valid (refresh once, retry once). A 401 is the
    # RFC 6750 answer; providers with their own shape declare it.
    token_rejected: tuple[TokenRejected, ...] = (TokenRejected(401),)
    # A token for the person themselves next to the app's token, in the same flow (Slack:
    # `user_scope=` on the authorize URL, the user token under `authed_user` in the token response).
    user_scopes: tuple[str, ...] = ()
    user_scope_param: str = "user_scope"
    user_token_field: str = "authed_user"
    # Per-connection sign-in host (Salesforce); None: the URLs above are used as they are.
    login_hosts: LoginHosts | None = None
    # A field of the token response that is the API's base URL for this connection (Salesforce's
    # `instance_url`); it must be https. Empty: the manifest's base_url.
    base_url_field: str = ""
    type: Literal["oauth2"] = "oauth2"


@dataclass(frozen=True, slots=True)
class CookieAuth:
    login_url: str
    cookie_domain: str
    # Cookie names whose presence (unexpired) means the session is live.
    session_cookies: tuple[str, ...] = ()
    type: Literal["cookie"] = "cookie"


AuthSpec = NoAuth | ApiKeyAuth | OAuth2Auth | CookieAuth


@dataclass(frozen=True, slots=True)
class Probe:
    """How connecting checks a credential before storing it: one cheap authenticated request.

    `path` is sent with the credential injected, relative to the API base (an absolute https URL
    also works), with `headers` and, when given, the raw JSON body `json`; a 2xx answer passes
    (and, with `ok_field`, only if that JSON field is true: Slack answers errors with 200). A
    provider that checks a token given as a query parameter names it in `token_param`.

    A plugin whose requests need code of its own (a host per account, a login step) names an
    `async def probe(ctx: ToolContext) -> None` as "package.module:function" in `function`
    instead; raising fails the check.
    """

    method: str = "GET"
    path: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    json: str = ""
    ok_field: str = ""
    token_param: str = ""
    function: str = ""


@dataclass(frozen=True, slots=True)
class Manifest:
    name: str
    version: str
    display_name: str
    auth: AuthSpec
    base_url: str = ""
    tool_prefix: str = ""
    curl_proxy: bool = False
    # Hosts the curl proxy may reach for this integration (base_url's host is always allowed).
    allowed_hosts: tuple[str, ...] = ()
    tools_module: str = ""
    description: str = ""
    # Search keywords: what users call the whole integration besides its name ("crm", "helpdesk");
    # search_tools indexes them with every tool's own keywords.
    keywords: tuple[str, ...] = ()
    builtin: bool = False
    # A cheap request that proves a credential works, made before anything is stored.
    probe: Probe | None = None
    # The tool names, when the integration declares them up front (the built-ins, which have no
    # prefix): a lookup then imports the tools module only for one of these names.
    tool_names: frozenset[str] | None = None
    # Where a tool's name says less than the truth about what it does (workbench.engine.annotations):
    # (tool name, Hint) pairs; every other tool's annotations come from its name's verb.
    tool_hints: tuple[tuple[str, Hint], ...] = ()

    def annotations(self, tool_name: str) -> dict[str, Any]:
        """The tool's MCP annotations (title and the four hints); needs no tools module."""
        declared = next((h for n, h in self.tool_hints if n == tool_name), None)
        return hints_for(
            tool_name,
            prefix=self.prefix,
            integration=self.name,
            display_name=self.display_name,
            declared=declared,
        )

    @property
    def prefix(self) -> str:
        return self.tool_prefix or self.name.replace("-", "_") + "_"


ToolLoader = Callable[[], Sequence[Tool]]


@dataclass(slots=True)
class _Entry:
    manifest: Manifest
    loader: ToolLoader
    tools: dict[str, Tool] | None = None


@dataclass(slots=True)
class Registry:
    """Integrations by name; tools loaded per integration on first use (thread-safe)."""

    _entries: dict[str, _Entry] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _lookup_order: list[_Entry] | None = field(default=None, repr=False)
    # Names found before (every execution looks its tool up): one dict read instead of the scan.
    _found: dict[str, Tool] = field(default_factory=dict, repr=False)

    def add(self, manifest: Manifest, loader: ToolLoader, *, allow_reserved: bool = False) -> None:
        if manifest.name in RESERVED_NAMES and not allow_reserved:
            raise RegistryError(
                f"Plugin name '{manifest.name}' is reserved for a built-in integration; rename the plugin."
            )
        if manifest.name in self._entries:
            raise RegistryError(f"Integration '{manifest.name}' is registered twice.")
        self._entries[manifest.name] = _Entry(manifest, loader)
        self._lookup_order = None
        self._found = {}

    def add_plugin_package(self, package: str = "workbench_plugins") -> None:
        """Register every subpackage of `package` that exposes a `manifest` (tools stay unimported)."""
        pkg = importlib.import_module(package)
        for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda i: i.name):
            if not info.ispkg or info.name.startswith("_"):
                continue
            dir_name = info.name.replace("_", "-")
            if dir_name in RESERVED_NAMES:
                raise RegistryError(
                    f"Plugin directory '{info.name}' uses a reserved name ({', '.join(sorted(RESERVED_NAMES))}); "
                    "it is refused at load."
                )
            module = importlib.import_module(f"{package}.{info.name}")
            manifest = getattr(module, "manifest", None)
            if not isinstance(manifest, Manifest):
                raise RegistryError(f"Plugin '{info.name}' has no `manifest` of type Manifest.")
            tools_module = manifest.tools_module or f"{package}.{info.name}.tools"
            self.add(manifest, _module_loader(tools_module))

    def add_plugin_module(self, module_name: str) -> None:
        """Register one plugin package by module path (its `manifest`; tools from `<module>.tools`)."""
        module = importlib.import_module(module_name)
        manifest = getattr(module, "manifest", None)
        if not isinstance(manifest, Manifest):
            raise RegistryError(f"Plugin '{module_name}' has no `manifest` of type Manifest.")
        self.add(manifest, _module_loader(manifest.tools_module or f"{module_name}.tools"))

    # -- lookups -----------------------------------------------------------------------------

    def manifests(self) -> list[Manifest]:
        return [e.manifest for e in self._entries.values()]

    def manifest(self, name: str) -> Manifest | None:
        entry = self._entries.get(name)
        return entry.manifest if entry else None

    def tools_of(self, integration: str) -> dict[str, Tool]:
        entry = self._entries[integration]
        if entry.tools is None:
            with self._lock:
                if entry.tools is None:
                    entry.tools = self._load(entry)
        return entry.tools

    def find(self, tool_name: str) -> Tool | None:
        """The tool with this name, loading only the integration(s) whose prefix matches."""
        known = self._found.get(tool_name)
        if known is not None:
            return known
        if self._lookup_order is None:  # built-ins first, then the longest prefix wins
            self._lookup_order = sorted(
                self._entries.values(), key=lambda e: (not e.manifest.builtin, -len(e.manifest.prefix))
            )
        for entry in self._lookup_order:
            declared = entry.manifest.tool_names
            if declared is not None:
                if tool_name not in declared:
                    continue
            elif not (entry.manifest.builtin or tool_name.startswith(entry.manifest.prefix)):
                continue
            found = self.tools_of(entry.manifest.name).get(tool_name)
            if found is not None:
                self._found[tool_name] = found
                return found
        return None

    def all_tools(self) -> Iterable[Tool]:
        for name in list(self._entries):
            yield from self.tools_of(name).values()

    @staticmethod
    def _load(entry: _Entry) -> dict[str, Tool]:
        manifest = entry.manifest
        loaded: dict[str, Tool] = {}
        for t in entry.loader():
            if not manifest.builtin and not t.name.startswith(manifest.prefix):
                raise RegistryError(
                    f"Tool '{t.name}' of integration '{manifest.name}' must start with '{manifest.prefix}'."
                )
            if t.name in loaded:
                raise RegistryError(f"Tool '{t.name}' is defined twice in '{manifest.name}'.")
            t.integration = manifest.name
            t.annotations = manifest.annotations(t.name)
            loaded[t.name] = t
        if manifest.tool_names is not None and set(loaded) != manifest.tool_names:
            raise RegistryError(
                f"Integration '{manifest.name}' declares tools {sorted(manifest.tool_names)} "
                f"but its module defines {sorted(loaded)}."
            )
        return loaded


def module_loader(module_name: str) -> ToolLoader:
    """Loads `module_name`'s TOOLS list when the integration's tools are first needed."""
    return _module_loader(module_name)


def _module_loader(module_name: str) -> ToolLoader:
    def load() -> Sequence[Tool]:
        module = importlib.import_module(module_name)
        tools = getattr(module, "TOOLS", None)
        if tools is None:
            raise RegistryError(f"Module '{module_name}' defines no TOOLS list.")
        return list(tools)

    return load
