"""The composition root: builds stores, keys, registry and services from Settings, once.

Every surface (MCP, REST, web, OAuth, proxy; local or Lambda) receives the same `Gateway`, and
calls the application services it carries (workbench.services: `auth`, `runs`, `catalog`,
`connections`, `curl`, `jots`; `external` for custom apps). The stores stay below the services:
`Gateway.stores` is for this module and the tests, and no surface reads it. What an API-key
tool call does not need — the OAuth server and its signing keys (jwt, cryptography's EC), portal
sessions, the connect flow, provider OAuth, custom apps, the search index — is built, and its
modules imported, the first time something asks for it: a cold start pays only for its request.
"""

from __future__ import annotations

import functools
import hashlib
import time
from collections.abc import Callable, Mapping
from functools import cached_property
from typing import TYPE_CHECKING, Any

from workbench.connections.credentials import Credentials
from workbench.engine.blocking import BlockingPool
from workbench.engine.executor import Engine
from workbench.engine.registry import Registry
from workbench.errors import ConfigError
from workbench.identity.auth import AccessTokenVerifier, AuthCache, KeysThatForget, Principal
from workbench.identity.crypto import Cipher, KeyProvider, LocalKeyProvider, load_or_create_local_key
from workbench.identity.secrets import SESSION_SECRET, EnvSecrets, SecretSource
from workbench.identity.vault import Vault
from workbench.manifest import Manifest
from workbench.observability import Metrics
from workbench.settings import Settings
from workbench.stores import Stores

if TYPE_CHECKING:
    import httpx

    from workbench.browser.pool import BrowserPool
    from workbench.connections.flow import ConnectFlow
    from workbench.connections.provider_oauth import ProviderOAuth, TokenSet
    from workbench.engine.approvals import Approvals
    from workbench.external import ExternalServers
    from workbench.external.oauth import AppOAuth
    from workbench.guard.egress import EgressPolicy, Resolver, Route
    from workbench.identity.tokens import SigningKeySource, TokenService
    from workbench.oauth.service import OAuthServer
    from workbench.services.auth import AuthService
    from workbench.services.catalog import CatalogService
    from workbench.services.connections import ConnectionService
    from workbench.services.curl import CurlSessions
    from workbench.services.jots import JotService
    from workbench.services.runs import RunService
    from workbench.services.schema import SchemaService
    from workbench.web.sessions import SessionCodec

__all__ = ["LAZY_MODULES", "Gateway", "build_gateway", "build_registry"]


def build_registry(*, plugins: bool = True, extra: tuple[str, ...] = ()) -> Registry:
    from workbench.builtin import register_builtins

    registry = Registry()
    register_builtins(registry)
    if plugins:
        registry.add_plugin_package("workbench_plugins")
    for module_name in extra:
        registry.add_plugin_module(module_name)
    return registry


def build_stores(settings: Settings) -> Stores:
    if settings.store == "memory":
        from workbench.stores.memory import memory_stores

        return memory_stores()
    if settings.store == "sqlite":
        from workbench.stores.sqlite import private_dir, sqlite_stores

        private_dir(settings.data_dir)
        return sqlite_stores(settings.sqlite_path)
    from workbench.stores.dynamodb import dynamodb_stores

    return dynamodb_stores(settings)


def build_audit_fallback(settings: Settings) -> Callable[[list[dict[str, Any]]], None] | None:
    """AWS: the audit queue that takes rows DynamoDB throttled past the request's audit time."""
    if not settings.audit_queue_url:
        return None
    from workbench.aws.audit_queue import SqsAuditQueue

    return SqsAuditQueue(settings).defer


def build_secret_source(settings: Settings) -> SecretSource:
    """AWS: the stack's Secrets Manager secret, read at run time. Local: the environment."""
    if settings.secret_id:
        from workbench.aws.secrets import SecretsManagerSecrets

        return SecretsManagerSecrets.from_settings(settings)
    return EnvSecrets.from_settings(settings)


def build_key_provider(settings: Settings) -> KeyProvider:
    if settings.key_backend == "kms":
        from workbench.aws.kms import KmsKeyProvider

        return KmsKeyProvider.from_settings(settings)
    return LocalKeyProvider.from_secret(load_or_create_local_key(settings.key_path, settings.local_key))


# What the services built on first use import then (the `from` lines inside Gateway's and
# _BuiltinServices' properties; tests/unit/test_composition.py keeps this list complete).
LAZY_MODULES = (
    "workbench.connections.flow",
    "workbench.connections.provider_oauth",
    "workbench.connections.verify",
    "workbench.engine.approvals",
    "workbench.external",
    "workbench.external.oauth",
    "workbench.external.operator",
    "workbench.guard.egress",
    "workbench.guard.egress_transport",
    "workbench.guard.http1",
    "workbench.identity.tokens",
    "workbench.oauth.service",
    "workbench.services.auth",
    "workbench.services.catalog",
    "workbench.services.connections",
    "workbench.services.curl",
    "workbench.services.jots",
    "workbench.services.runs",
    "workbench.services.schema",
    "workbench.web.sessions",
)


class Gateway:
    """Everything a surface needs, wired once. The services below the constructor are built on
    first use (see the module docstring); their attribute names are the same either way."""

    def __init__(
        self,
        *,
        settings: Settings,
        stores: Stores,
        registry: Registry,
        cipher: Cipher,
        credentials: Credentials,
        engine: Engine,
        vault: Vault,
        metrics: Metrics,
        # The session secret, the SSO client secret and the plugins' OAuth clients (read at run time).
        secrets: SecretSource,
        # What every server-side request to a user-influenced URL must pass (workbench.guard.egress);
        # built from the settings (and these test doubles) on first use when not given.
        egress: EgressPolicy | None = None,
        resolver: Resolver | None = None,
        route: Route | None = None,
        clock: Callable[[], float] = time.time,
        transport: httpx.AsyncBaseTransport | None = None,
        signing_keys: SigningKeySource | None = None,
        store_io: BlockingPool | None = None,
        auth_cache: AuthCache | None = None,
    ) -> None:
        self.settings = settings
        self.stores = stores
        self.registry = registry
        self.cipher = cipher
        self.credentials = credentials
        self.engine = engine
        self.vault = vault
        self.metrics = metrics
        self.secrets = secrets
        if egress is not None:
            self.egress = egress
        self._resolver, self._route = resolver, route
        self.clock = clock
        # A test double for upstream HTTP; every service wraps it in the egress transport.
        self._transport = transport
        self._signing_keys = signing_keys
        # Blocking store calls on the request path run here (the engine's store pool), never on the loop.
        self.store_io = store_io or engine.store_io
        # Bearer token -> principal for a few seconds per warm instance (workbench.identity.auth).
        self.auth_cache = auth_cache or AuthCache(0)

    def preload(self) -> None:
        """Import now, on the calling thread, what this gateway otherwise imports on first use: every
        integration's tool modules and the modules its services are built from. A long-running
        server calls it on a thread at start, so no first request imports them on the event loop
        (a Lambda does not: one request at a time per instance, and a lean cold start)."""
        import importlib

        self.registry.load_all()
        for module in LAZY_MODULES:
            importlib.import_module(module)

    @cached_property
    def egress(self) -> EgressPolicy:
        from workbench.guard.egress import EgressPolicy

        return EgressPolicy.from_settings(self.settings, resolver=self._resolver, route=self._route)

    def EgressTransport(self, **options: Any) -> httpx.AsyncBaseTransport:
        """An httpx transport behind the egress checks (around the test double, if any)."""
        from workbench.guard.egress_transport import EgressTransport

        return EgressTransport(self.egress, inner=self._transport, **options)

    def PluginTransport(self) -> httpx.AsyncBaseTransport:
        """What plugins' `ctx.http` sends through: the egress rules on Workbench's own HTTP/1.1
        client (workbench.guard.http1), or around the test double when there is one."""
        if self._transport is not None:
            return self.EgressTransport(retries=1)
        from workbench.guard.http1 import Http1Transport

        return Http1Transport(self.egress, retries=1)

    @cached_property
    def provider_oauth(self) -> ProviderOAuth:
        """Workbench as an OAuth client of plugin providers (connect callback, lazy refresh)."""
        from workbench.connections.provider_oauth import ProviderOAuth

        return ProviderOAuth(self.settings, self.secrets, transport=self.EgressTransport())

    @cached_property
    def _connect_flow(self) -> ConnectFlow:
        from workbench.connections.flow import ConnectFlow
        from workbench.connections.verify import verify_credential

        flow = ConnectFlow(
            self.settings,
            self.registry,
            self.stores.pending,
            clock=self.clock,
            oauth=self.provider_oauth,
            credentials=self.credentials,
            verify=functools.partial(verify_credential, self.engine),
            io=self.store_io,
            egress=self.egress,
        )
        flow.external = self.external  # custom apps behind OAuth connect through the same flow
        return flow

    @cached_property
    def external(self) -> ExternalServers:
        """Each user's custom apps (external MCP and OpenAPI servers) and the operator's."""
        from workbench.external import ExternalServers
        from workbench.external.operator import operator_apps

        settings = self.settings
        external = ExternalServers(
            self.stores.external_servers,
            self.cipher,
            self.vault,
            self.registry,
            clock=self.clock,
            egress=self.egress,
            # A missing envVar is reported at start-up when the environment is where secrets live;
            # with the run-time secret (AWS) it is reported by the first request that needs it.
            operator_apps=operator_apps(
                settings.external_servers,
                self.registry,
                None if settings.secret_id else settings.external_env,
            ),
            operator_secret=_operator_secret(self.secrets, settings),
            io=self.store_io,
            read_together=self.stores.read_together,
        )

        def app_oauth() -> AppOAuth:  # made when an app's OAuth is first needed (never by a search)
            from workbench.external.oauth import AppOAuth

            return AppOAuth(
                public_url=settings.public_url,
                store=self.stores.external_servers,
                cipher=self.cipher,
                pending=self.stores.pending,
                credentials=self.credentials,
                clock=self.clock,
                transport=self.EgressTransport(),
                allow_http_client_metadata=self.egress.allows_local,
                connect_ttl=settings.connect_ttl_seconds,
                refuse_host=self.egress.host_refusal,
            )

        external.make_oauth = app_oauth
        return external

    @cached_property
    def tokens(self) -> TokenService:
        """ES256 JWTs: OAuth access tokens and curl proxy tokens."""
        from workbench.identity.tokens import TokenService

        keys = self._signing_keys or _signing_keys(self.settings, self.cipher, self.stores)
        return TokenService(keys, self.settings.public_url, clock=self.clock)

    @cached_property
    def sessions(self) -> SessionCodec:
        from workbench.web.sessions import SessionCodec

        return SessionCodec(
            _session_secret(self.settings, self.secrets),
            clock=self.clock,
            secure=self.settings.public_url.startswith("https://"),
            revocations=self.stores.session_revocations,
        )

    @cached_property
    def oauth(self) -> OAuthServer:
        """The OAuth 2.1 authorization server for MCP clients."""
        from workbench.oauth.service import OAuthServer

        stores = self.stores
        return OAuthServer(
            self.settings,
            clients=stores.oauth_clients,
            codes=stores.oauth_codes,
            refresh=stores.oauth_refresh,
            users=stores.users,
            tokens=self.tokens,
            clock=self.clock,
            rates=stores.oauth_rates,
            egress=self.egress,
        )

    # -- the application services (workbench.services) -----------------------------------------

    @cached_property
    def auth(self) -> AuthService:
        from workbench.services.auth import AuthService

        return AuthService(
            users=self.stores.users,
            keys=self.stores.api_keys,
            read_together=self.stores.read_together,
            pending=self.stores.pending,
            cache=self.auth_cache,
            io=self.store_io,
            access_tokens=AccessTokenVerifier(lambda: self.tokens, self.settings.public_url),
            clock=self.clock,
            grant_live=self.stores.oauth_refresh.family_exists,
        )

    @cached_property
    def schema(self) -> SchemaService:
        from workbench.services.schema import SchemaService

        return SchemaService(self.stores)

    @cached_property
    def approvals(self) -> Approvals | None:
        """Writes of `approve` grants held for their user (None: the store backend has no approvals)."""
        if self.stores.approvals is None:
            return None
        from workbench.engine.approvals import Approvals

        return Approvals(
            self.stores.approvals,
            public_url=self.settings.public_url,
            clock=self.clock,
            io=self.store_io,
            audit=self.runs.audit,
            ttl=self.settings.connect_ttl_seconds,
            wait_block=self.settings.wait_block_seconds,
        )

    @cached_property
    def runs(self) -> RunService:
        from workbench.services.runs import RunService

        return RunService(engine=self.engine, vault=self.vault, audit=self.stores.audit)

    @cached_property
    def connections(self) -> ConnectionService:
        from workbench.services.connections import ConnectionService

        return ConnectionService(
            registry=self.registry,
            credentials=self.credentials,
            pending=self.stores.pending,
            engine=self.engine,
            flow=lambda: self._connect_flow,
            io=self.store_io,
            clock=self.clock,
            read_together=self.stores.read_together,
        )

    @cached_property
    def catalog(self) -> CatalogService:
        from workbench.services.catalog import CatalogService

        return CatalogService(
            registry=self.registry,
            engine=self.engine,
            connections=self.connections,
            external=lambda: self.external,
        )

    @cached_property
    def curl(self) -> CurlSessions:
        from workbench.services.curl import CurlSessions

        return CurlSessions(
            public_url=self.settings.public_url,
            registry=self.registry,
            auth=self.auth,
            runs=self.runs,
            tokens=lambda: self.tokens,
            oauth=lambda: self.oauth,
            read_together=self.stores.read_together,
            clock=self.clock,
        )

    @cached_property
    def jots(self) -> JotService:
        from workbench.services.jots import JotService

        return JotService(self.stores.jots)


class _BuiltinServices:
    """What built-in tools reach through `ctx.services`; never handed to plugins."""

    def __init__(self, stores: Stores, vault: Vault, settings: Settings) -> None:
        self._stores = stores
        self.vault = vault
        self.settings = settings
        # The public URL jot links are built from.
        self.public_url = settings.public_url
        # Set once the gateway exists: custom apps are built when an apps tool first asks.
        self.gateway: Gateway | None = None

    @cached_property
    def browser(self) -> BrowserPool:
        """The engine's browser (built-in browser tools, cookie capture)."""
        return build_browser_pool(self.settings)

    @property
    def external(self) -> ExternalServers | None:
        return self.gateway.external if self.gateway is not None else None

    @cached_property
    def jots(self) -> JotService:
        from workbench.services.jots import JotService

        return JotService(self._stores.jots)


def build_browser_pool(settings: Settings) -> BrowserPool:
    """Lazy: no browser starts (or is dialled) until a browser tool or the capture bridge runs."""
    from workbench.browser.pool import BrowserPool

    return BrowserPool(
        executable=settings.browser_executable,
        cdp_url=settings.cdp_url,
        idle_seconds=settings.browser_idle_seconds,
    )


def build_gateway(
    settings: Settings,
    *,
    stores: Stores | None = None,
    registry: Registry | None = None,
    key_provider: KeyProvider | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    signing_keys: SigningKeySource | None = None,
    secrets: SecretSource | None = None,
    clock: Callable[[], float] = time.time,
    resolver: Resolver | None = None,
    route: Route | None = None,
) -> Gateway:
    """`transport` is a test double for upstream HTTP (it still sits behind the egress URL checks);
    `resolver` answers the egress module's DNS questions and `route` maps checked addresses to
    loopback test servers (a fake internet), both for tests."""
    stores = stores or build_stores(settings)
    auth_cache = AuthCache(settings.auth_cache_seconds, clock=clock)
    if not isinstance(stores.api_keys, KeysThatForget):
        # Every revocation through this instance (portal, CLI) drops the key from its cache at once.
        stores.api_keys = KeysThatForget(stores.api_keys, auth_cache)
    # One pool for every blocking store call of a request, sized to the batch concurrency and apart
    # from the engine's sync-tool pool: eight blocking tools never starve the store calls they wait on.
    store_io = BlockingPool(settings.execute_concurrency, "workbench-store")
    secrets = secrets or build_secret_source(settings)
    registry = registry or build_registry(extra=settings.extra_plugins)
    provider = key_provider or build_key_provider(settings)
    cipher = Cipher(provider, cache_seconds=settings.data_key_cache_seconds)
    metrics = Metrics()
    late: list[Gateway] = []  # the refresher and the custom-app lookup reach the gateway built below

    async def refresh(manifest: Manifest, refresh_token: str, stored: Mapping[str, Any]) -> TokenSet:
        """The one refresher: a custom app's OAuth credential names its own token endpoint and client."""
        gateway = late[0]
        app_oauth = gateway.external.oauth if "app_oauth" in stored else None
        try:
            if app_oauth is not None:
                return await app_oauth.refresh(refresh_token, stored)
            return await gateway.provider_oauth.refresh(manifest, refresh_token, stored)
        except Exception:
            # The stack alarms on these (template.yaml): a provider or a client secret gone bad.
            metrics.inc(
                "workbench_token_refresh_failures_total", {"integration": manifest.name, "success": "false"}
            )
            raise

    credentials = Credentials(stores.connections, cipher, clock=clock, refresh=refresh, io=store_io)
    vault = Vault(stores.vault, cipher)
    services = _BuiltinServices(stores, vault, settings)
    engine = Engine(
        registry,
        credentials,
        stores.audit,
        metrics,
        # Every plugin request (a user's own Superset/Zendesk/Salesforce host included) passes the
        # egress checks; the transport is made when the first upstream call needs it.
        transport_factory=lambda: late[0].PluginTransport(),
        concurrency=settings.execute_concurrency,
        clock=clock,
        builtin_services=services,
        store_io=store_io,
        audit_fallback=build_audit_fallback(settings),
        read_together=stores.read_together,
    )
    gateway = Gateway(
        settings=settings,
        stores=stores,
        registry=registry,
        cipher=cipher,
        credentials=credentials,
        engine=engine,
        vault=vault,
        metrics=metrics,
        secrets=secrets,
        resolver=resolver,
        route=route,
        clock=clock,
        transport=transport,
        signing_keys=signing_keys,
        store_io=store_io,
        auth_cache=auth_cache,
    )
    late.append(gateway)
    services.gateway = gateway

    async def custom_app_lookup(principal: Principal, name: str) -> Any:
        return await gateway.external.lookup(principal, name)

    engine.extra_lookups.append(custom_app_lookup)

    class _LateApprovals:  # built on the first write of an approve grant, not at start-up
        async def gate(self, *args: Any) -> dict[str, Any] | None:
            approvals = gateway.approvals
            if approvals is None:
                return {"error": "This call needs its user's approval, and approvals are not available here."}
            return await approvals.gate(*args)

    if stores.approvals is not None:
        engine.approvals = _LateApprovals()
    if settings.external_servers:
        gateway.external  # noqa: B018 - operator servers: a mistake in their config fails the start
    return gateway


def _signing_keys(settings: Settings, cipher: Cipher, stores: Stores) -> SigningKeySource:
    if settings.store == "dynamodb":
        # Every Lambda instance must sign with the same key: it lives, encrypted, in DynamoDB.
        from workbench.aws.signing import DynamoSigningKeys

        return DynamoSigningKeys.from_settings(settings, cipher, stores=stores)
    from workbench.identity.tokens import FileSigningKeys

    return FileSigningKeys(settings.data_dir / "keys")


def _operator_secret(secrets: SecretSource, settings: Settings) -> Callable[[str], str | None]:
    """An operator server's `auth.envVar` value, read on use: the run-time secret's key of that name
    (AWS), else the environment variable (local)."""

    def lookup(name: str) -> str | None:
        try:
            value = secrets.get(name)
        except ConfigError:
            value = None  # unreadable just now: the environment's value, if any, still serves
        return value or settings.external_env.get(name)

    return lookup


def _session_secret(settings: Settings, secrets: SecretSource) -> Callable[[], bytes]:
    """The portal's signing secret, asked for on use (never during init: SnapStart, cold start)."""
    derived: list[bytes] = []

    def current() -> bytes:
        value = secrets.get(SESSION_SECRET)
        if value:
            return value.encode()
        if settings.key_backend == "local":
            # Derived from the local master key, so the embedded default needs no extra configuration.
            if not derived:
                master = load_or_create_local_key(settings.key_path, settings.local_key)
                derived.append(hashlib.sha256(b"workbench-session-secret\x00" + master).digest())
            return derived[0]
        raise ConfigError(
            f"portal sign-in needs a session secret: set {secrets.setting_name(SESSION_SECRET)} in "
            f"{secrets.where()}"
        )

    return current
