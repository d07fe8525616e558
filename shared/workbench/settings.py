"""Settings: the only module that reads the environment.

Everything else receives a `Settings` instance; tests construct one directly.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

__all__ = ["DEFAULT_PORT", "Settings"]

# The local gateway's port (`workbench serve`), and so the default public URL's.
DEFAULT_PORT = 8787

StoreBackend = Literal["memory", "sqlite", "dynamodb"]
KeyBackend = Literal["local", "kms"]
EgressAllow = Literal["public", "loopback", "private"]


def _env_int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise ValueError(f"{name} must be an integer, got {raw!r}") from exc


def _env_float(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError as exc:
        raise ValueError(f"{name} must be a number of seconds, got {raw!r}") from exc
    if not value >= 0 or value == float("inf"):
        raise ValueError(f"{name} must be a number of seconds, got {raw!r}")
    return value


def _egress_allow(env: Mapping[str, str]) -> EgressAllow:
    raw = env.get("WORKBENCH_EGRESS_ALLOW", "")
    if raw == "":
        # The two older, narrower switches still mean "loopback".
        legacy = ("WORKBENCH_PROXY_ALLOW_LOOPBACK", "WORKBENCH_OAUTH_CIMD_ALLOW_LOOPBACK_HTTP")
        return "loopback" if any(env.get(name) == "1" for name in legacy) else "public"
    if raw not in ("public", "loopback", "private"):
        raise ValueError(f"WORKBENCH_EGRESS_ALLOW must be public, loopback or private, got {raw!r}")
    return raw  # type: ignore[return-value]


@dataclass(frozen=True, slots=True)
class Settings:
    """Typed configuration, parsed once per process. Its repr leaves out the secrets it holds (the
    local key, the session and SSO client secrets, the plugins' client secrets, the external servers'
    configs and environment), so a log line or a traceback that shows it shows none of them."""

    public_url: str = f"http://127.0.0.1:{DEFAULT_PORT}"
    store: StoreBackend = "sqlite"
    key_backend: KeyBackend = "local"
    data_dir: Path = field(default_factory=lambda: Path.home() / ".workbench")
    # Local key material (base64, 32 bytes). When unset in local mode, a key file is created in data_dir.
    local_key: str | None = field(default=None, repr=False)
    kms_key_id: str | None = None
    aws_endpoint_url: str | None = None
    aws_region: str = "us-east-1"
    table_prefix: str = "workbench"
    connect_ttl_seconds: int = 600
    # How long one wait_for_connection call may block (API Gateway allows 30 s in all).
    wait_block_seconds: int = 20
    result_cap_chars: int = 60_000
    execute_concurrency: int = 8
    audit_retention_days: int = 90
    # How long one audit write may keep a request waiting (DynamoDB throttling): rows not written by
    # then go to the audit queue (AWS: the stack's AuditRetryQueue) and are written from there.
    audit_write_seconds: float = 0.5
    audit_queue_url: str | None = None
    # Secret for portal session cookies and CSRF tokens (required with the kms key backend).
    session_secret: str | None = field(default=None, repr=False)
    # Development sign-in on the local gateway only; never set in production.
    dev_login: bool = False
    # Which addresses server-side requests to user-set URLs may reach (workbench.guard.egress):
    # "public" (default; always on Lambda), "loopback" (tests, local development: 127/8, ::1 and
    # plain http), "private" (local only: also RFC 1918, ULA and CGNAT). Metadata never.
    egress_allow: EgressAllow = "public"
    # Extra plugin packages to register (tests and private plugins): module paths exposing `manifest`.
    extra_plugins: tuple[str, ...] = ()
    # Environment snapshot for per-plugin client credentials (<PLUGIN>_CLIENT_ID/_SECRET).
    plugin_env: Mapping[str, str] = field(default_factory=dict, repr=False)
    # Built-in browser: a remote CDP endpoint (ws://… or http://host:9222) instead of a local chromium.
    cdp_url: str | None = None
    browser_executable: str = "/usr/bin/chromium"
    browser_idle_seconds: int = 600
    # Portal sign-in through a generic OIDC provider (Google, Keycloak, ...): issuer + client.
    oidc_issuer: str | None = None
    oidc_client_id: str | None = None
    oidc_client_secret: str | None = field(default=None, repr=False)
    # DynamoDB table names by store (WORKBENCH_TABLE_<STORE>, set by template.yaml); else <prefix>-<store>.
    tables: Mapping[str, str] = field(default_factory=dict)
    # How long a warm instance keeps decrypted data keys (KMS calls at most once per key per window).
    data_key_cache_seconds: int = 300
    # OAuth authorization server for MCP clients: access-token and refresh-token lifetimes (seconds).
    oauth_access_token_ttl: int = 900
    oauth_refresh_token_ttl: int = 30 * 86400
    # Operator external servers / OpenAPI apps for every user (seed 004's config objects), from
    # WORKBENCH_EXTERNAL_SERVERS (JSON) or the file WORKBENCH_EXTERNAL_SERVERS_FILE.
    external_servers: tuple[Mapping[str, object], ...] = field(default=(), repr=False)
    # The values of the environment variables those configs name in `auth.envVar`.
    external_env: Mapping[str, str] = field(default_factory=dict, repr=False)
    # Portal admins (lowercased emails): they may clear every user's discovery cache.
    admin_emails: frozenset[str] = frozenset()
    # AWS: the Secrets Manager secret (name or ARN; a JSON object) holding the session secret, the SSO
    # client secret and the plugins' OAuth clients, read at run time and cached this many seconds.
    # Unset: those come from the environment (session_secret, oidc_client_secret, plugin_env).
    secret_id: str | None = None
    secret_cache_seconds: int = 300
    # Dynamic client registration (POST /register) under abuse: at most this many registrations per
    # client address (IPv6: per /64) and in all, per window of this many seconds (0: no such limit);
    # at most this many registered clients; a client that completes no grant is removed after this.
    oauth_register_per_ip: int = 20
    oauth_register_global: int = 300
    oauth_register_window_seconds: int = 600
    oauth_max_clients: int = 10_000
    oauth_unused_client_seconds: int = 86_400
    # Each request's time budget (API Gateway's HTTP API gives up after 29 s; the same locally), and
    # the part of it kept for writing the answer. See workbench/guard/deadline.py.
    request_deadline_seconds: float = 29.0
    deadline_margin_seconds: float = 2.0
    # Largest response a surface may answer (Lambda: 6,291,456 bytes per synchronous response);
    # None: no limit (the local gateway).
    max_response_bytes: int | None = None
    # How long a warm instance keeps a resolved API key / OAuth access token (0 turns it off; at most
    # 30). A revocation through the same instance takes effect at once, elsewhere within this time.
    auth_cache_seconds: int = 15
    # The local server (`workbench serve`): proxies in front of it whose X-Forwarded-For /
    # X-Forwarded-Proto it believes (addresses or CIDR ranges, WORKBENCH_TRUSTED_PROXIES, comma
    # separated). Empty (the default): none. The client address is then the connection's peer, so
    # per-address limits (POST /register) cannot be reset by a forged header.
    trusted_proxies: tuple[str, ...] = ()

    @property
    def mcp_url(self) -> str:
        return self.public_url.rstrip("/") + "/mcp"

    @property
    def sqlite_path(self) -> Path:
        return self.data_dir / "workbench.sqlite3"

    @property
    def key_path(self) -> Path:
        return self.data_dir / "local.key"

    def table_name(self, store: str) -> str:
        """The DynamoDB table that holds `store` (e.g. "connections")."""
        return self.tables.get(store) or f"{self.table_prefix}-{store.replace('_', '-')}"

    def is_admin(self, email: str) -> bool:
        return email.strip().lower() in self.admin_emails

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env
        external = _external_servers(env)
        store = env.get("WORKBENCH_STORE", "sqlite")
        if store not in ("memory", "sqlite", "dynamodb"):
            raise ValueError(f"WORKBENCH_STORE must be memory, sqlite or dynamodb, got {store!r}")
        key_backend = env.get("WORKBENCH_KEY_BACKEND", "kms" if store == "dynamodb" else "local")
        if key_backend not in ("local", "kms"):
            raise ValueError(f"WORKBENCH_KEY_BACKEND must be local or kms, got {key_backend!r}")
        data_dir = Path(env.get("WORKBENCH_DATA_DIR") or Path.home() / ".workbench")
        plugin_env = {k: v for k, v in env.items() if k.endswith(("_CLIENT_ID", "_CLIENT_SECRET"))}
        return cls(
            public_url=env.get("WORKBENCH_PUBLIC_URL", f"http://127.0.0.1:{DEFAULT_PORT}"),
            store=store,  # type: ignore[arg-type]
            key_backend=key_backend,  # type: ignore[arg-type]
            data_dir=data_dir,
            local_key=env.get("WORKBENCH_LOCAL_KEY") or None,
            kms_key_id=env.get("WORKBENCH_KMS_KEY_ID") or None,
            aws_endpoint_url=env.get("WORKBENCH_AWS_ENDPOINT_URL") or None,
            aws_region=env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1",
            table_prefix=env.get("WORKBENCH_TABLE_PREFIX", "workbench"),
            connect_ttl_seconds=_env_int(env, "CONNECT_TTL_SECONDS", 600),
            wait_block_seconds=_env_int(env, "WORKBENCH_WAIT_BLOCK_SECONDS", 20),
            dev_login=env.get("WORKBENCH_DEV_LOGIN", "") == "1",
            egress_allow=_egress_allow(env),
            session_secret=env.get("WORKBENCH_SESSION_SECRET") or None,
            extra_plugins=tuple(
                p.strip() for p in env.get("WORKBENCH_EXTRA_PLUGINS", "").split(",") if p.strip()
            ),
            plugin_env=plugin_env,
            cdp_url=env.get("WORKBENCH_CDP_URL") or None,
            browser_executable=env.get("WORKBENCH_BROWSER_EXECUTABLE") or "/usr/bin/chromium",
            browser_idle_seconds=_env_int(env, "WORKBENCH_BROWSER_IDLE_SECONDS", 600),
            oidc_issuer=env.get("WORKBENCH_OIDC_ISSUER") or None,
            oidc_client_id=env.get("WORKBENCH_OIDC_CLIENT_ID") or None,
            oidc_client_secret=env.get("WORKBENCH_OIDC_CLIENT_SECRET") or None,
            tables={
                k.removeprefix("WORKBENCH_TABLE_").lower(): v
                for k, v in env.items()
                if k.startswith("WORKBENCH_TABLE_") and k != "WORKBENCH_TABLE_PREFIX" and v
            },
            data_key_cache_seconds=_env_int(env, "WORKBENCH_DATA_KEY_CACHE_SECONDS", 300),
            oauth_access_token_ttl=_env_int(env, "WORKBENCH_OAUTH_ACCESS_TOKEN_TTL", 900),
            oauth_refresh_token_ttl=_env_int(env, "WORKBENCH_OAUTH_REFRESH_TOKEN_TTL", 30 * 86400),
            audit_retention_days=_env_int(env, "WORKBENCH_AUDIT_RETENTION_DAYS", 90),
            audit_write_seconds=_env_float(env, "WORKBENCH_AUDIT_WRITE_SECONDS", 0.5),
            audit_queue_url=env.get("WORKBENCH_AUDIT_QUEUE_URL") or None,
            external_servers=external,
            external_env={
                name: env[name]
                for name in (_env_var_of(c) for c in external)
                if name is not None and name in env
            },
            admin_emails=frozenset(
                e.strip().lower() for e in env.get("WORKBENCH_ADMIN_EMAILS", "").split(",") if e.strip()
            ),
            secret_id=env.get("WORKBENCH_SECRET_ID") or None,
            secret_cache_seconds=_env_int(env, "WORKBENCH_SECRET_CACHE_SECONDS", 300),
            oauth_register_per_ip=_env_int(env, "WORKBENCH_OAUTH_REGISTER_PER_IP", 20),
            oauth_register_global=_env_int(env, "WORKBENCH_OAUTH_REGISTER_GLOBAL", 300),
            oauth_register_window_seconds=_env_int(env, "WORKBENCH_OAUTH_REGISTER_WINDOW_SECONDS", 600),
            oauth_max_clients=_env_int(env, "WORKBENCH_OAUTH_MAX_CLIENTS", 10_000),
            oauth_unused_client_seconds=_env_int(env, "WORKBENCH_OAUTH_UNUSED_CLIENT_SECONDS", 86_400),
            request_deadline_seconds=_env_float(env, "WORKBENCH_REQUEST_DEADLINE_SECONDS", 29.0),
            deadline_margin_seconds=_env_float(env, "WORKBENCH_DEADLINE_MARGIN_SECONDS", 2.0),
            max_response_bytes=_env_int(env, "WORKBENCH_MAX_RESPONSE_BYTES", 0) or None,
            auth_cache_seconds=min(max(_env_int(env, "WORKBENCH_AUTH_CACHE_SECONDS", 15), 0), 30),
            trusted_proxies=_trusted_proxies(env),
        )


def _trusted_proxies(env: Mapping[str, str]) -> tuple[str, ...]:
    import ipaddress

    values = tuple(p.strip() for p in env.get("WORKBENCH_TRUSTED_PROXIES", "").split(",") if p.strip())
    for value in values:
        try:
            ipaddress.ip_network(value, strict=False)
        except ValueError:
            raise ValueError(
                f"WORKBENCH_TRUSTED_PROXIES must list IP addresses or CIDR ranges, got {value!r}"
            ) from None
    return values


def _external_servers(env: Mapping[str, str]) -> tuple[Mapping[str, object], ...]:
    raw = env.get("WORKBENCH_EXTERNAL_SERVERS", "")
    source = "WORKBENCH_EXTERNAL_SERVERS"
    path = env.get("WORKBENCH_EXTERNAL_SERVERS_FILE", "")
    if not raw.strip() and path:
        source = f"WORKBENCH_EXTERNAL_SERVERS_FILE ({path})"
        try:
            raw = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ValueError(f"{source} cannot be read: {exc.strerror}") from None
    if not raw.strip():
        return ()
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise ValueError(f"{source} is not valid JSON: {exc}") from None
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise ValueError(f"{source} must be a JSON array of server objects")
    return tuple(value)


def _env_var_of(config: Mapping[str, object]) -> str | None:
    auth = config.get("auth")
    var = auth.get("envVar") if isinstance(auth, dict) else None
    return var if isinstance(var, str) else None
