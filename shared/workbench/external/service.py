"""Custom apps: each user's own external MCP tool servers, merged into that user's catalog (seed 004).

A registration (name, URL template, auth, enabled, tool prefix, timeout) is kept per workspace — a
Workbench user — in the store; the URL and auth value are stored encrypted and may reference the
user's vault (`{{vault:NAME}}`), and `{workspaceCode}` in either is replaced by the user's id at
call time. Discovery is cached for 10 minutes per (server, workspace) on this instance and dropped
on reconnect, on a 401/403 (the server is then marked `reconnect_required` and its tools leave the
catalog until the user reconnects) and by an admin clear. Tools are merged as `<prefix><name>` and
routed back by prefix with the original name.

A custom app never shadows a built-in or plugin tool: overlapping names and prefixes are refused at
registration, and a discovered tool whose merged name exists in the registry is dropped.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import quote, urlsplit

from workbench.compose import BadRef, VaultMissing, resolve
from workbench.crypto import Cipher
from workbench.errors import ConflictError, InvalidInput, NotFound
from workbench.executor import scrub
from workbench.external.client import (
    AuthRejected,
    Endpoint,
    ExternalError,
    McpClient,
    McpSession,
    ServerFailed,
    TimedOut,
    Unreachable,
)
from workbench.external.schema import problem
from workbench.observability import log_event, logger
from workbench.registry import RESERVED_NAMES, Manifest, NoAuth, Registry
from workbench.stores import ExternalServer, ExternalServerStore
from workbench.tools import Tool
from workbench.vault import Vault

__all__ = [
    "CACHE_TTL_SECONDS",
    "DEFAULT_TIMEOUT_MS",
    "RECONNECT_REQUIRED",
    "ExternalServers",
    "ExternalTool",
]

CACHE_TTL_SECONDS = 600.0
DEFAULT_TIMEOUT_MS = 30_000
RECONNECT_REQUIRED = "reconnect_required"
MAX_SERVERS_PER_USER = 25
WORKSPACE = "{workspaceCode}"

_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,39}$")
_PREFIX = re.compile(r"^[A-Za-z0-9_.-]{1,48}$")
_HEADER = re.compile(r"^[A-Za-z0-9-]{1,64}$")
_FORBIDDEN_HEADERS = frozenset(
    {
        "host",
        "content-type",
        "content-length",
        "accept",
        "connection",
        "transfer-encoding",
        "mcp-session-id",
        "mcp-protocol-version",
    }
)
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})


@dataclass(frozen=True, slots=True)
class ExternalTool:
    server: str
    name: str  # as merged into the catalog: prefix + original
    original: str
    description: str
    input_schema: dict[str, Any]


@dataclass(slots=True)
class _Entry:
    tools: dict[str, ExternalTool]
    session: McpSession
    expires_at: float
    # The registration's updated_at when discovered: a reconnect on any instance changes it, so
    # every instance's cache entry goes stale at once (caches themselves are per instance).
    stamp: float = 0.0


class ExternalServers:
    """Registrations, discovery cache and call routing for custom apps."""

    def __init__(
        self,
        store: ExternalServerStore | None,
        cipher: Cipher,
        vault: Vault,
        registry: Registry,
        *,
        clock: Callable[[], float] = time.time,
        client: McpClient | None = None,
        ttl: float = CACHE_TTL_SECONDS,
        allow_private_hosts: bool = True,
    ) -> None:
        self.store = store
        self.cipher = cipher
        self.vault = vault
        self.registry = registry
        self.clock = clock
        self.client = client or McpClient()
        self.ttl = ttl
        # False in production: a user's URL must not reach loopback (the Lambda runtime API listens
        # there), link-local or private addresses of the gateway's own network.
        self.allow_private_hosts = allow_private_hosts
        self._cache: dict[tuple[str, str], _Entry] = {}
        # Bumped on every invalidation, so a handshake that started before it cannot repopulate.
        self._generation: dict[tuple[str, str], int] = {}
        self._inflight: dict[tuple[str, str], asyncio.Future[_Entry]] = {}

    # -- registration --------------------------------------------------------------------------

    def _require_store(self) -> ExternalServerStore:
        if self.store is None:
            raise InvalidInput("Custom apps are not available on this gateway's store backend yet.")
        return self.store

    def register(
        self,
        user_id: str,
        *,
        name: str,
        url: str,
        auth: dict[str, Any] | None = None,
        enabled: bool = True,
        tool_prefix: str | None = None,
        timeout_ms: int = DEFAULT_TIMEOUT_MS,
    ) -> dict[str, Any]:
        """Create or replace a registration (replacing one is a reconnect). Raises InvalidInput or
        ConflictError with a message meant for the user."""
        store = self._require_store()
        if not _NAME.match(name):
            raise InvalidInput(
                "name must start with a lowercase letter and use only a-z, 0-9, '_' or '-' (at most 40)"
            )
        prefix = tool_prefix if tool_prefix is not None else f"{name.replace('-', '_')}_"
        if not _PREFIX.match(prefix):
            raise InvalidInput("toolPrefix must be 1-48 letters, digits, '_', '-' or '.'")
        if not 100 <= timeout_ms <= 120_000:
            raise InvalidInput("timeout must be between 100 and 120000 milliseconds")
        self._check_url(user_id, url)
        auth_type, header_name, auth_value = self._check_auth(user_id, auth)
        self._check_collisions(user_id, name, prefix)
        existing = store.get(user_id, name)
        if existing is None and len(store.list_for(user_id)) >= MAX_SERVERS_PER_USER:
            raise ConflictError(f"At most {MAX_SERVERS_PER_USER} custom apps per user; remove one first.")
        now = self.clock()
        server = ExternalServer(
            user_id=user_id,
            name=name,
            tool_prefix=prefix,
            config=self.cipher.encrypt_json({"url": url, "auth": auth_value}, _context(user_id, name)),
            auth_type=auth_type,
            header_name=header_name,
            enabled=enabled,
            timeout_ms=timeout_ms,
            status="ok",
            created_at=existing.created_at if existing else now,
            updated_at=self._next_stamp(existing) if existing else now,
        )
        store.put(server)
        self.invalidate(user_id, name)
        return self.view(server)

    def _check_url(self, user_id: str, url: str) -> None:
        if not isinstance(url, str) or not url or len(url) > 2048:
            raise InvalidInput("url is required (at most 2048 characters)")
        probe = self._template_probe(user_id, url, "url")
        try:
            parts = urlsplit(probe)
            parts.port  # noqa: B018  (parses the port: raises on a bad one)
        except ValueError as exc:
            raise InvalidInput(f"url is not a valid URL ({exc})") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InvalidInput("url must be an absolute http(s) URL")
        if parts.scheme == "http" and parts.hostname not in _LOOPBACK:
            raise InvalidInput("url must use https (plain http is allowed only for localhost)")
        if parts.username or parts.password:
            raise InvalidInput("url must not carry user:password; use auth or a {{vault:NAME}} in the query")
        refused = self._refused_host(parts.hostname)
        if refused:
            raise InvalidInput(refused)

    def _refused_host(self, host: str) -> str | None:
        """Why this host may not be called from this gateway, or None."""
        if self.allow_private_hosts:
            return None
        name = host.strip("[]").lower().rstrip(".")
        if name == "localhost" or name.endswith(".localhost"):
            return "url must not point at this gateway's own host"
        try:
            ip = ipaddress.ip_address(name)
        except ValueError:
            return None  # a DNS name (see docs: resolution is not pinned)
        if ip.is_loopback or ip.is_private or ip.is_link_local or ip.is_reserved or ip.is_unspecified:
            return "url must not point at a loopback, private or link-local address"
        if ip.is_multicast:
            return "url must not point at a multicast address"
        return None

    def _template_probe(self, user_id: str, template: str, what: str) -> str:
        """The template with refs checked (syntax, and that each vault name exists) and filled in."""
        try:
            res = resolve(template.replace(WORKSPACE, "ws"), vault=self.vault.reader(user_id))
        except BadRef as exc:
            raise InvalidInput(f"{what}: {exc} (only {{{{vault:NAME}}}} references are allowed)") from exc
        except VaultMissing as exc:
            raise InvalidInput(f"{what}: {exc}; store it first with vault_set") from exc
        return str(res.value)

    def _check_auth(self, user_id: str, auth: dict[str, Any] | None) -> tuple[str, str, str]:
        if auth is None:
            return "none", "", ""
        if not isinstance(auth, dict):
            raise InvalidInput("auth must be an object")
        kind = auth.get("type", "none")
        if kind == "none":
            return "none", "", ""
        if kind == "bearer":
            token = auth.get("token")
            if not isinstance(token, str) or not token:
                raise InvalidInput(
                    "auth.token is required for bearer auth (a {{vault:NAME}} reference is best)"
                )
            self._template_probe(user_id, token, "auth.token")
            return "bearer", "", token
        if kind == "header":
            header = auth.get("headerName")
            value = auth.get("value")
            if not isinstance(header, str) or not _HEADER.match(header):
                raise InvalidInput("auth.headerName must be an HTTP header name")
            if header.lower() in _FORBIDDEN_HEADERS:
                raise InvalidInput(f"auth.headerName '{header}' is set by Workbench itself")
            if not isinstance(value, str) or not value:
                raise InvalidInput(
                    "auth.value is required for header auth (a {{vault:NAME}} reference is best)"
                )
            self._template_probe(user_id, value, "auth.value")
            return "header", header, value
        raise InvalidInput("auth.type must be none, bearer or header")

    def _check_collisions(self, user_id: str, name: str, prefix: str) -> None:
        manifests = self.registry.manifests()
        taken = {m.name for m in manifests} | RESERVED_NAMES | {"apps"}
        if name in taken:
            raise ConflictError(
                f"The name '{name}' is taken by a built-in or plugin integration; choose another name."
            )
        for m in manifests:
            if m.builtin:
                clash = next((t for t in self.registry.tools_of(m.name) if t.startswith(prefix)), None)
                if clash is not None:
                    raise ConflictError(
                        f"toolPrefix '{prefix}' would collide with the built-in tool '{clash}'; "
                        "choose another prefix."
                    )
            elif prefix.startswith(m.prefix) or m.prefix.startswith(prefix):
                raise ConflictError(
                    f"toolPrefix '{prefix}' would collide with the tools of the '{m.name}' integration "
                    f"(prefix '{m.prefix}'); choose another prefix."
                )
        for other in self._require_store().list_for(user_id):
            if other.name != name and (
                prefix.startswith(other.tool_prefix) or other.tool_prefix.startswith(prefix)
            ):
                raise ConflictError(
                    f"toolPrefix '{prefix}' overlaps the prefix '{other.tool_prefix}' of your custom app "
                    f"'{other.name}'; choose another prefix."
                )

    def list_for(self, user_id: str) -> list[dict[str, Any]]:
        if self.store is None:
            return []
        return [self.view(s) for s in self.store.list_for(user_id)]

    def remove(self, user_id: str, name: str) -> None:
        if not self._require_store().delete(user_id, name):
            raise NotFound(f"No custom app named '{name}'")
        self.invalidate(user_id, name)

    async def reconnect(self, user_id: str, name: str) -> dict[str, Any]:
        """Forget the cached discovery and any reconnect flag, then run the handshake again now."""
        store = self._require_store()
        server = store.get(user_id, name)
        if server is None:
            raise NotFound(f"No custom app named '{name}'")
        server = replace(server, status="ok", updated_at=self._next_stamp(server))
        store.put(server)
        self.invalidate(user_id, name)
        out = self.view(server)
        if not server.enabled:
            return out
        try:
            entry = await self._discover(server)
        except ExternalError as exc:
            fresh = store.get(user_id, name) or server
            return {**self.view(fresh), "error": explain(exc, server)}
        return {**out, "tools": sorted(entry.tools)}

    def view(self, server: ExternalServer) -> dict[str, Any]:
        """What the owner sees about a registration: never a literal secret."""
        cfg = self._config(server)
        auth: dict[str, Any] = {"type": server.auth_type}
        if server.auth_type == "bearer":
            auth["token"] = _mask(cfg["auth"])
        elif server.auth_type == "header":
            auth["headerName"] = server.header_name
            auth["value"] = _mask(cfg["auth"])
        out: dict[str, Any] = {
            "name": server.name,
            "url": _mask_url(cfg["url"]),
            "auth": auth,
            "enabled": server.enabled,
            "toolPrefix": server.tool_prefix,
            "timeout": server.timeout_ms,
            "status": server.status,
        }
        if server.status == RECONNECT_REQUIRED:
            out["message"] = reconnect_message(server.name)
        return out

    # -- cache -----------------------------------------------------------------------------------

    def invalidate(self, user_id: str, name: str) -> None:
        key = (user_id, name)
        self._cache.pop(key, None)
        self._generation[key] = self._generation.get(key, 0) + 1

    def clear_cache(self, user_id: str | None = None) -> int:
        """Admin clear: drop every cached discovery on this instance (or one user's) and return how
        many were dropped. With a user, their registrations are also re-stamped so every other
        instance drops its entries too."""
        keys = [k for k in self._cache if user_id is None or k[0] == user_id]
        for key in keys:
            self.invalidate(*key)
        if user_id is not None and self.store is not None:
            for server in self.store.list_for(user_id):
                self.store.put(replace(server, updated_at=self._next_stamp(server)))
        return len(keys)

    def _next_stamp(self, server: ExternalServer) -> float:
        # Strictly newer than the stored stamp even when the clock has not moved.
        return max(self.clock(), server.updated_at + 0.001)

    # -- catalog ---------------------------------------------------------------------------------

    async def catalog(self, user_id: str) -> list[ExternalTool]:
        """The user's custom-app tools for this turn; a server that fails is skipped (and logged)."""
        if self.store is None:
            return []
        servers = [s for s in self.store.list_for(user_id) if s.enabled and s.status == "ok"]
        found = await asyncio.gather(*(self._tools_or_nothing(s) for s in servers))
        return [t for tools in found for t in tools]

    async def _tools_or_nothing(self, server: ExternalServer) -> list[ExternalTool]:
        try:
            return list((await self._discover(server)).tools.values())
        except ExternalError as exc:
            log_event("external_server_skipped", server=server.name, user=server.user_id, reason=str(exc))
            return []
        except Exception as exc:  # one user's broken server must never break their search
            _warn("external_server_failed", server=server.name, user=server.user_id, error=type(exc).__name__)
            return []

    async def lookup(self, principal: Any, name: str) -> tuple[Tool, Manifest] | None:
        """Engine hook: the custom-app tool behind `name` for this principal, if any."""
        if self.store is None:
            return None
        user_id = principal.user.id
        owners = sorted(
            (s for s in self.store.list_for(user_id) if s.enabled and name.startswith(s.tool_prefix)),
            key=lambda s: -len(s.tool_prefix),
        )
        if not owners:
            return None
        server = owners[0]
        manifest = _manifest(server)
        if server.status == RECONNECT_REQUIRED:
            return _failing_tool(name, server.name, reconnect_message(server.name)), manifest
        try:
            entry = await self._discover(server)
        except ExternalError as exc:
            return _failing_tool(name, server.name, explain(exc, server)), manifest
        found = entry.tools.get(name)
        if found is None:
            return None
        return self._tool(server, found), manifest

    def _tool(self, server: ExternalServer, ext: ExternalTool) -> Tool:
        user_id, server_name = server.user_id, server.name

        async def run(args: dict[str, Any], ctx: Any) -> Any:
            return await self.call(user_id, server_name, ext.name, args)

        return Tool(
            name=ext.name,
            description=ext.description,
            fn=run,
            parameters=ext.input_schema,
            integration=server.name,
        )

    async def call(self, user_id: str, server_name: str, tool_name: str, args: dict[str, Any]) -> Any:
        """Route a call to its server with the original name; returns the first text block, else the
        whole result. Raises RuntimeError with a user-facing message on failure."""
        store = self._require_store()
        server = store.get(user_id, server_name)
        if server is None or not server.enabled:
            raise LookupError("Tool not found")
        if server.status == RECONNECT_REQUIRED:
            raise RuntimeError(reconnect_message(server.name))
        try:
            entry = await self._discover(server)
            ext = entry.tools.get(tool_name)
            if ext is None:
                raise LookupError("Tool not found")
            endpoint, secrets = self._endpoint(server)
            result, session = await self.client.call_tool(endpoint, entry.session, ext.original, args)
            entry.session = session
        except AuthRejected as exc:
            self._mark_reconnect(server)
            raise RuntimeError(explain(exc, server)) from None
        except ExternalError as exc:
            raise RuntimeError(explain(exc, server)) from None
        if result.get("isError") is True:
            raise RuntimeError(scrub(_first_text(result) or "The external tool reported an error.", secrets))
        text = _first_text(result)
        return scrub(text if text is not None else result, secrets)

    # -- discovery -------------------------------------------------------------------------------

    async def _discover(self, server: ExternalServer) -> _Entry:
        key = (server.user_id, server.name)
        entry = self._cache.get(key)
        if entry is not None and entry.expires_at > self.clock() and entry.stamp == server.updated_at:
            return entry
        pending = self._inflight.get(key)
        if pending is None or pending.done():
            pending = asyncio.ensure_future(self._handshake(server, self._generation.get(key, 0)))
            self._inflight[key] = pending
            pending.add_done_callback(
                lambda f: self._inflight.pop(key, None) if self._inflight.get(key) is f else None
            )
        return await asyncio.shield(pending)

    async def _handshake(self, server: ExternalServer, generation: int) -> _Entry:
        endpoint, _ = self._endpoint(server)
        try:
            session, raw = await self.client.handshake(endpoint)
        except AuthRejected:
            self._mark_reconnect(server)
            raise
        tools: dict[str, ExternalTool] = {}
        for item in raw:
            why = problem(item)
            label = str(item.get("name"))[:80] if isinstance(item, dict) else "?"
            full = server.tool_prefix + label
            if why is None and self.registry.find(full) is not None:
                why = "its name collides with a built-in or plugin tool"
            if why is None and full in tools:
                why = "the server listed it twice"
            if why is not None:
                _warn(
                    "external_tool_dropped", server=server.name, user=server.user_id, tool=label, reason=why
                )
                continue
            schema = item.get("inputSchema") or {"type": "object", "properties": {}}
            tools[full] = ExternalTool(server.name, full, item["name"], item.get("description") or "", schema)
        entry = _Entry(tools, session, self.clock() + self.ttl, server.updated_at)
        key = (server.user_id, server.name)
        if self._generation.get(key, 0) == generation:
            self._cache[key] = entry
        return entry

    def _mark_reconnect(self, server: ExternalServer) -> None:
        store = self._require_store()
        current = store.get(server.user_id, server.name)
        if current is not None and current.status != RECONNECT_REQUIRED:
            store.put(replace(current, status=RECONNECT_REQUIRED, updated_at=self._next_stamp(current)))
        self.invalidate(server.user_id, server.name)
        log_event("external_server_reconnect_required", server=server.name, user=server.user_id)

    def _config(self, server: ExternalServer) -> dict[str, str]:
        value = self.cipher.decrypt_json(server.config, _context(server.user_id, server.name))
        assert isinstance(value, dict)
        return {"url": str(value.get("url", "")), "auth": str(value.get("auth", ""))}

    def _endpoint(self, server: ExternalServer) -> tuple[Endpoint, list[str]]:
        """URL and headers for this workspace, with the secret values they contain."""
        cfg = self._config(server)
        code = server.user_id
        reader = self.vault.reader(server.user_id)
        secrets: list[str] = []
        try:
            url_res = resolve(cfg["url"].replace(WORKSPACE, quote(code, safe="")), vault=reader)
            headers: dict[str, str] = {}
            if server.auth_type in ("bearer", "header"):
                auth_res = resolve(cfg["auth"].replace(WORKSPACE, code), vault=reader)
                value = str(auth_res.value)
                secrets.extend(auth_res.secrets)
                if value != code:
                    secrets.append(value)
                if server.auth_type == "bearer":
                    headers["Authorization"] = f"Bearer {value}"
                else:
                    headers[server.header_name] = value
        except (BadRef, VaultMissing) as exc:
            raise ExternalError(server.name, f"Custom app '{server.name}' is misconfigured: {exc}.") from None
        secrets.extend(url_res.secrets)
        # Checked again per call: a {{vault:...}} in the host can change after registration.
        try:
            host = urlsplit(str(url_res.value)).hostname or ""
        except ValueError:
            raise ExternalError(server.name, f"Custom app '{server.name}' has an invalid URL.") from None
        refused = self._refused_host(host)
        if refused:
            raise ExternalError(server.name, f"Custom app '{server.name}' is misconfigured: {refused}.")
        kept = [s for s in secrets if s]
        endpoint = Endpoint(server.name, str(url_res.value), headers, server.timeout_ms / 1000, tuple(kept))
        return endpoint, kept


# -- helpers -------------------------------------------------------------------------------------


def _warn(event: str, **fields: Any) -> None:
    logger.warning(json.dumps({"ts": round(time.time(), 3), "event": event, "level": "warning", **fields}))


def _context(user_id: str, name: str) -> dict[str, str]:
    return {"user": user_id, "external_server": name, "field": "config"}


def _manifest(server: ExternalServer) -> Manifest:
    return Manifest(
        name=server.name,
        version="external",
        display_name=server.name,
        auth=NoAuth(),
        tool_prefix=server.tool_prefix,
        description="Custom app: an external MCP tool server registered by this user.",
    )


def _failing_tool(name: str, server: str, message: str) -> Tool:
    def fail(args: dict[str, Any], ctx: Any) -> Any:
        raise RuntimeError(message)

    return Tool(name=name, description=message, fn=fail, parameters=None, integration=server)


def reconnect_message(server: str) -> str:
    return (
        f"External server '{server}' rejected Workbench's credentials, so its tools are unavailable until "
        f"you reconnect it: fix its token (vault_set, or apps_register_server again), then call "
        f"apps_refresh with name '{server}'."
    )


def explain(exc: ExternalError, server: ExternalServer) -> str:
    """The seed's failure table as messages for the agent."""
    if isinstance(exc, AuthRejected):
        return f"{exc} {reconnect_message(server.name)}"
    if isinstance(exc, TimedOut):
        return (
            f"Transient error: external server '{server.name}' did not answer within "
            f"{server.timeout_ms / 1000:g} s. Try again later."
        )
    if isinstance(exc, ServerFailed):
        return f"External server '{server.name}' failed with HTTP {exc.status} (retried once)."
    if isinstance(exc, Unreachable):
        return (
            f"External server '{server.name}' is unreachable; its tools are skipped for now. Try again later."
        )
    return str(exc)


def _first_text(result: dict[str, Any]) -> str | None:
    content = result.get("content")
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
                return str(block["text"])
    return None


def _mask(template: str) -> str:
    """A pure `{{vault:NAME}}` template is shown as is; anything else is a literal secret."""
    if template.startswith("{{vault:") and template.endswith("}}") and template.count("{{") == 1:
        return template
    return "(set)"


def _mask_url(url: str) -> str:
    """Query values may be secrets: show them only when they are placeholders."""
    base, sep, query = url.partition("?")
    if not sep:
        return url
    shown = []
    for pair in query.split("&"):
        key, eq, value = pair.partition("=")
        keep = value.startswith("{{vault:") or value == WORKSPACE or not eq
        shown.append(f"{key}{eq}{value if keep else '***'}")
    return f"{base}?{'&'.join(shown)}"
