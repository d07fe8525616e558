"""Custom apps and operator servers: external tools merged into a user's catalog (seed 004).

Two kinds of app, from two places:

- **MCP servers** (the seed's external tool servers) and **OpenAPI apps** (each operation of an
  OpenAPI 3.x document is a tool; see openapi.py).
- **User apps** are registered per user (`apps_*` tools, the portal) and kept in the store; the URL
  and auth value are stored encrypted and may reference the owner's vault (`{{vault:NAME}}`).
  **Operator apps** come from configuration (`WORKBENCH_EXTERNAL_SERVERS`; see operator.py); every
  user sees them, scoped per user through `{workspaceCode}`.

`{workspaceCode}` in a URL or auth value is the caller's workspace code: a per-user setting (the
portal), by default the user's id. Discovery is cached for 10 minutes per (server, workspace) on
this instance and dropped on reconnect, on a 401/403 (a user app is then marked
`reconnect_required` and its tools leave the catalog until the user reconnects) and by an admin
clear, which is stored so every instance sees it.

Search never waits long for a server: discovery shares one overall budget per search (2 s), a
discovery still running when it runs out goes on in the background and fills the cache, and a
failure is remembered for a back-off period (30 s, doubling to 5 min) during which the server is
skipped by search and its tools answer the seed's transient error at once. When the back-off has
passed, the next search retries it in the background and answers from what is known.

A custom app never shadows a built-in, plugin or operator tool: overlapping names and prefixes are
refused at registration, and a discovered tool whose merged name exists in the registry is dropped.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import threading
import time
import zlib
from collections.abc import Awaitable, Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar
from urllib.parse import quote

from workbench.annotations import from_declared, from_method
from workbench.engine.blocking import BlockingPool
from workbench.engine.compose import BadRef, VaultMissing, resolve
from workbench.engine.executor import scrub
from workbench.engine.registry import RESERVED_NAMES, Registry
from workbench.errors import ConflictError, CredentialError, CryptoError, InvalidInput, NotConnected, NotFound
from workbench.external.client import (
    MAX_BODY,
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
from workbench.guard.egress import EgressPolicy, EgressRefused
from workbench.guard.jsontext import JsonRejected, parse
from workbench.guard.paths import DOT_SEGMENT_MESSAGE, dot_segment
from workbench.identity.crypto import Cipher
from workbench.identity.vault import Vault
from workbench.manifest import Manifest, NoAuth, OAuth2Auth
from workbench.observability import log_event, log_warning
from workbench.stores import PARTITION_VERSION, ExternalServerStore, Snapshot
from workbench.tools import Tool

if TYPE_CHECKING:
    from workbench.connections.flow import Redeemed
    from workbench.external.document_worker import DocumentWorker
    from workbench.external.oauth import AppOAuth, Plan
    from workbench.external.openapi import Operation
    from workbench.identity.auth import KeyRecheck
    from workbench.stores import Connection, ExternalServer, PendingConnect, User

__all__ = [
    "CACHE_TTL_SECONDS",
    "DEFAULT_TIMEOUT_MS",
    "OPERATOR",
    "RECONNECT_REQUIRED",
    "SEARCH_BUDGET_SECONDS",
    "App",
    "ExternalServers",
    "ExternalTool",
]

CACHE_TTL_SECONDS = 600.0
DEFAULT_TIMEOUT_MS = 30_000
RECONNECT_REQUIRED = "reconnect_required"
# A row whose encrypted config does not decrypt (another key, damage): only registering it again helps.
UNREADABLE = "unreadable"
MAX_SERVERS_PER_USER = 25
WORKSPACE = "{workspaceCode}"
SEARCH_BUDGET_SECONDS = 2.0
BACKOFF_FIRST_SECONDS = 30.0
BACKOFF_MAX_SECONDS = 300.0
OPERATOR = "#operator"  # the owner of apps from configuration
# Rows of the external-servers store that are not apps: their names cannot be app names.
_SETTINGS_ROW = "#settings"  # (user, #settings): the user's workspace code; its stamp is their clear
_EPOCH_ROW = "#epoch"  # (#operator, #epoch): stamped by an admin clear of every user
# (#workspace, <code lowercased>): who holds a workspace code. A code is one user's: it is what an
# operator's server scopes a catalog (and its calls) by, so a second user choosing it would act as
# the first one there. Its `state` is the holder's user id.
_CODE_OWNER = "#workspace"
# (user, #slot#NN): the per-user cap, taken atomically (see `_claim_slot`); `state` names the app.
_SLOT = "#slot#"
_SLOT_GRACE_SECONDS = 60.0
# An app's config blob must fit a DynamoDB item (400 KB) with room for the other attributes.
MAX_CONFIG_BYTES = 350_000

_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,39}$")
_PREFIX = re.compile(r"^[A-Za-z0-9_.-]{1,48}$")
_HEADER = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}$")  # an RFC 9110 token
_CODE = re.compile(r"^[A-Za-z0-9._~-]{1,128}$")
_QUERY_NAME = re.compile(r"^[A-Za-z0-9_.~-]{1,64}$")
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
        "mcp-method",
        "mcp-name",
    }
)
_MAX_RESULT_BYTES = 5_000_000
_UNSAFE_VALUE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")  # never into a header or query value
_PRUNE_AT = 5_000  # cache + back-off entries on this instance before expired ones are dropped
_WRITE_ATTEMPTS = 8  # lost races in a row before a read-modify-write gives up (ConflictError)
# Users' partitions (their apps and settings rows) kept on this instance, each with the version it was
# read at (see `_first_reads`): at most this many bytes of rows, and this many users.
LISTING_CACHE_BYTES = 8_000_000
LISTING_CACHE_USERS = 4_096
# ...and for at most this long: while a deploy shifts traffic (a canary: 5 or 10 minutes), the version
# before this one still serves some requests and writes without storing a version; what it writes
# reaches this version's instances within this time. Between deploys, the version alone decides.
LISTING_MAX_AGE_SECONDS = 300.0
_ROW_OVERHEAD = 300  # bytes a row costs besides its config blob


class NeedsConnect(ExternalError):
    """An OAuth app the user has not connected (or must connect again)."""


@dataclass(frozen=True, slots=True)
class ExternalTool:
    server: str
    name: str  # as merged into the catalog: prefix + original
    original: str
    description: str
    input_schema: dict[str, Any]
    # MCP annotations: as the server declared them (MCP's defaults for what it left out), or from
    # an OpenAPI operation's HTTP method (workbench.annotations).
    annotations: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class App:
    """One app as the service uses it, whoever registered it."""

    owner: str  # the user's id, or OPERATOR
    name: str
    tool_prefix: str
    kind: str  # "mcp" | "openapi"
    url: str  # MCP endpoint, or the OpenAPI app's base URL (a template)
    auth_type: str  # none | bearer | header | query | oauth (per-user tokens from the server's OAuth)
    header_name: str  # the header (header auth) or query parameter (query auth)
    # A template (user apps), or for operator apps the name of the secret that holds the value
    # (seed 004's `envVar`), read when a request needs it.
    auth_value: str = field(repr=False)
    enabled: bool = True
    timeout_ms: int = DEFAULT_TIMEOUT_MS
    status: str = "ok"
    updated_at: float = 0.0
    operations: tuple[Operation, ...] = ()
    title: str = ""
    version: str = ""

    @property
    def operator(self) -> bool:
        return self.owner == OPERATOR


@dataclass(frozen=True, slots=True)
class _Caller:
    user_id: str
    code: str  # the workspace code
    stamp: float  # the newest admin clear that concerns this user


class _Early(NamedTuple):
    """What a request read first: the user's partition (as this instance knew it at the version it
    read, or a Query's), and the keys read by key in the first batch (`found`: the rows among
    `connections` and `servers` that exist)."""

    rows: list[ExternalServer]
    found: Snapshot
    connections: frozenset[tuple[str, str]]
    servers: frozenset[tuple[str, str]]
    apps: dict[str, App]  # the rows' apps decoded so far (app name -> App), kept with the rows


class _Listing(NamedTuple):
    """A user's partition as read by a Query that started after `version` (its version row's token,
    None for none) had been read: while that version is the stored one, these are the rows."""

    version: str | None
    rows: list[ExternalServer]
    size: int
    read_at: float  # time.monotonic() when the Query started
    # Its apps as decoded (decrypted, operations unpacked) by the first request that needed them:
    # the rows never change under a listing, so neither do these.
    apps: dict[str, App]


@dataclass(slots=True)
class _Entry:
    tools: dict[str, ExternalTool]
    session: McpSession
    expires_at: float
    # (registration stamp, newest clear for the user) when discovered: a reconnect or clear on any
    # instance changes it, so every instance's entry goes stale at once (caches are per instance).
    stamp: tuple[float, float] = (0.0, 0.0)
    discovered_at: float = 0.0
    schemas: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass(slots=True)
class _Failure:  # a failed discovery, remembered for a back-off period
    error: ExternalError
    until: float  # back-off end
    stamp: tuple[float, float]
    attempts: int = 1
    failed_at: float = 0.0


Key = tuple[str, str]


class ExternalServers:
    """Registrations, discovery cache, search budget and call routing for external apps."""

    def __init__(
        self,
        store: ExternalServerStore,
        cipher: Cipher,
        vault: Vault,
        registry: Registry,
        *,
        clock: Callable[[], float] = time.time,
        client: McpClient | None = None,
        ttl: float = CACHE_TTL_SECONDS,
        egress: EgressPolicy | None = None,
        operator_apps: Sequence[App] = (),
        operator_secret: Callable[[str], str | None] | None = None,
        search_budget: float = SEARCH_BUDGET_SECONDS,
        io: BlockingPool | None = None,
        read_together: Callable[..., Snapshot] | None = None,
    ) -> None:
        self.store = store
        # Stores.read_together: the rows a search needs besides the user's own partition (the clear
        # stamp, a workspace code's claim, OAuth apps' and the caller's connections) in one round
        # trip. Without it (an ExternalServers built alone), each row is read by its own get.
        self._read_together = read_together or self._one_by_one
        self._batched = read_together is not None  # Stores.read_together: any record, one read
        # (user) -> (workspace code, settings stamp) known to be the user's: a claim is only ever
        # released by its holder changing the code, which restamps the settings row.
        self._held_codes: dict[str, tuple[str, float]] = {}
        # (user) -> their partition at a version (see `_first_reads`); oldest use first.
        self._listings: dict[str, _Listing] = {}
        self._listing_bytes = 0
        self._monotonic = time.monotonic  # their age (LISTING_MAX_AGE_SECONDS)
        self.cipher = cipher
        self.vault = vault
        self.registry = registry
        self.clock = clock
        # Where a URL may lead (never the Lambda runtime API on loopback, nor the gateway's own
        # network): checked at registration, and by the transport on every request. Operator apps
        # are held to the same policy.
        self.egress = egress or EgressPolicy()
        # A connection per request, as when each operation had its own client: MCP servers close
        # idle sessions' connections, and a stale pooled one would read as "dropped".
        self._client = client
        self.ttl = ttl
        self.search_budget = search_budget
        self.operator_apps: dict[str, App] = {a.name: a for a in operator_apps}
        # Reads an operator app's secret by its envVar name: the environment locally, the run-time
        # secret on AWS (cached there), so nothing secret needs to sit in the function configuration.
        self.operator_secret = operator_secret or (lambda name: None)
        self._cache: dict[Key, _Entry] = {}
        self._failures: dict[Key, _Failure] = {}
        # Bumped on every invalidation, so a handshake that started before it cannot repopulate.
        self._generation: dict[Key, int] = {}
        self._inflight: dict[Key, asyncio.Future[_Entry]] = {}
        self._background: set[asyncio.Future[Any]] = set()
        # OAuth-protected servers: their client is made by `make_oauth` (set by the composition
        # root) when first needed, not with this service (a search never needs it); no
        # `make_oauth`: refused at registration.
        self.make_oauth: Callable[[], AppOAuth] | None = None
        self._oauth: AppOAuth | None = None
        self._document_worker: DocumentWorker | None = None
        self._making = threading.RLock()  # each made once, whichever thread (a portal page) asks first
        # The async paths (search, lookup, calls, discovery) read and write the store, the vault and
        # the OAuth plans here, off the event loop; the portal's sync pages call the helpers directly.
        self.io = io or BlockingPool(4, "workbench-store")
        # Documents are parsed here, apart from store I/O: two hostile uploads never hold up a read.
        self.documents = BlockingPool(2, "workbench-documents")

    # The MCP client (httpx, the egress transport), the OAuth client and the document worker are
    # made when a server is first reached or a document first read: a search by a user with no
    # custom app does neither.

    @property
    def client(self) -> McpClient:
        if self._client is None:
            with self._making:
                if self._client is None:
                    from workbench.guard.egress_transport import EgressTransport

                    transport = EgressTransport(self.egress, keepalive=False, max_response_bytes=MAX_BODY)
                    self._client = McpClient(transport=transport)
        return self._client

    @client.setter
    def client(self, value: McpClient) -> None:
        self._client = value

    @property
    def oauth(self) -> AppOAuth | None:
        if self._oauth is None and self.make_oauth is not None:
            with self._making:
                if self._oauth is None:
                    self._oauth = self.make_oauth()
        return self._oauth

    @oauth.setter
    def oauth(self, value: AppOAuth | None) -> None:
        self._oauth = value

    @property
    def document_worker(self) -> DocumentWorker:
        if self._document_worker is None:
            with self._making:
                if self._document_worker is None:
                    from workbench.external.document_worker import DocumentWorker
                    from workbench.external.documents import DOCUMENT_SECONDS

                    self._document_worker = DocumentWorker(document_seconds=DOCUMENT_SECONDS)
        return self._document_worker

    # -- registration --------------------------------------------------------------------------

    async def register(
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
        """Create or replace an MCP server registration (replacing one is a reconnect). Raises
        InvalidInput or ConflictError with a message meant for the user."""
        prefix = self._check_common(user_id, name, tool_prefix, timeout_ms)
        await self._check_url(user_id, url)
        auth_type, header_name, auth_value = self._check_auth(
            user_id, auth, kinds=("bearer", "header", "oauth")
        )
        config = {"kind": "mcp", "url": url, "auth": auth_value}
        return self._save(user_id, name, prefix, config, auth_type, header_name, enabled, timeout_ms)

    async def register_openapi(
        self,
        user_id: str,
        *,
        name: str,
        document: Any,
        base_url: str | None = None,
        auth: dict[str, Any] | None = None,
        enabled: bool = True,
        tool_prefix: str | None = None,
        timeout_ms: int = DEFAULT_TIMEOUT_MS,
        operations: Iterable[str] | None = None,
    ) -> dict[str, Any]:
        """Create or replace an OpenAPI app. `document` is the parsed document or its JSON/YAML text;
        `operations` keeps only those operationIds or tags. Malformed operations are dropped with a
        warning; the answer lists them under `dropped`."""
        prefix = self._check_common(user_id, name, tool_prefix, timeout_ms)
        only = set(operations) if operations is not None else None
        # Parsing and compiling a large (or hostile) document is CPU work: in a child process, which a
        # pool thread waits for without the GIL (external/document_worker.py says why not the thread).
        compiled, schemes = await self.documents.run(self.document_worker.read, document, only)
        for label, why in compiled.dropped:
            log_warning("openapi_operation_dropped", app=name, user=user_id, operation=label, reason=why)
        if not compiled.operations:
            raise InvalidInput("document: no usable operation (each needs an operationId)")
        url = base_url or compiled.base_url
        if not url:
            raise InvalidInput("baseUrl is required: the document names no server URL")
        await self._check_url(user_id, url, what="baseUrl")
        plan = None
        if isinstance(auth, dict) and auth.get("type") == "oauth2":
            plan = self._openapi_plan(schemes, auth, url)
            auth_type, header_name, auth_value = "oauth", "", ""
        else:
            auth_type, header_name, auth_value = self._check_auth(
                user_id, auth, kinds=("bearer", "header", "query")
            )
        config = {
            "kind": "openapi",
            "url": url,
            "auth": auth_value,
            "title": compiled.title,
            "version": compiled.version,
        }

        def store() -> dict[str, Any]:
            # A large document's operations are large too: packing, encrypting, storing and reading
            # them back is CPU work (and the store's I/O), done beside the parse, not on the loop.
            config["ops"] = base64.b64encode(
                zlib.compress(json.dumps([op.as_json() for op in compiled.operations]).encode(), 9)
            ).decode("ascii")
            server = self._store(user_id, name, prefix, config, auth_type, header_name, enabled, timeout_ms)
            return self.view(self._app(server))

        view = await self.documents.run(store)
        self._forget((user_id, name))
        if plan is not None and self.oauth is not None:
            self.oauth.save_plan(user_id, name, plan)
        if compiled.dropped:
            view["dropped"] = [{"operation": label, "reason": why} for label, why in compiled.dropped[:50]]
        return view

    def _openapi_plan(self, schemes: dict[str, Any], auth: dict[str, Any], base_url: str) -> Plan:
        """An OpenAPI app's OAuth2 authorization-code setup: the endpoints and scopes from the
        document's security schemes, the client the user registered with that API."""
        from urllib.parse import urljoin

        from workbench.external.oauth import Plan

        if self.oauth is None:
            raise InvalidInput("OAuth2 apps are not available on this gateway")
        wanted = auth.get("scheme")
        flows = [
            (name, scheme.get("flows", {}).get("authorizationCode"))
            for name, scheme in schemes.items()
            if scheme.get("type") == "oauth2" and (wanted is None or name == wanted)
        ]
        flow = next((f for _, f in flows if isinstance(f, dict)), None)
        if flow is None:
            raise InvalidInput(
                "auth: the document has no oauth2 security scheme with an authorizationCode flow"
                + (f" named '{wanted}'" if wanted else "")
            )
        client_id = auth.get("clientId")
        secret = auth.get("clientSecret", "")
        if not isinstance(client_id, str) or not client_id or len(client_id) > 512:
            raise InvalidInput("auth.clientId is required: the OAuth client you registered with the API")
        if not isinstance(secret, str) or len(secret) > 4096:
            raise InvalidInput("auth.clientSecret must be a string")
        scopes = auth.get("scopes")
        if scopes is None:
            scopes = list(flow.get("scopes") or {})
        if not isinstance(scopes, list) or not all(isinstance(x, str) for x in scopes):
            raise InvalidInput("auth.scopes must be a list of scope names")
        endpoints = []
        for key in ("authorizationUrl", "tokenUrl"):
            value = flow.get(key)
            if not isinstance(value, str) or not value:
                raise InvalidInput(f"auth: the authorizationCode flow has no {key}")
            full = urljoin(base_url, value)  # relative to the API's server, as OpenAPI says
            try:
                self.egress.check_url(full)
            except EgressRefused as exc:
                raise InvalidInput(f"auth: the flow's {key}: {exc}") from None
            endpoints.append(full)
        return Plan(
            issuer="",  # a plain OAuth2 API: no RFC 8414 issuer to check the response against
            authorization_endpoint=endpoints[0],
            token_endpoint=endpoints[1],
            client_id=client_id,
            client_secret=secret,
            token_auth="client_secret_post" if secret else "none",
            resource="",
            scope=" ".join(scopes),
            iss_supported=False,
            registration="pre",
        )

    def _check_common(self, user_id: str, name: str, tool_prefix: str | None, timeout_ms: int) -> str:
        if not isinstance(name, str) or not _NAME.match(name):
            raise InvalidInput(
                "name must start with a lowercase letter and use only a-z, 0-9, '_' or '-' (at most 40)"
            )
        prefix = tool_prefix if tool_prefix is not None else f"{name.replace('-', '_')}_"
        if not _PREFIX.match(prefix):
            raise InvalidInput("toolPrefix must be 1-48 letters, digits, '_', '-' or '.'")
        if not 100 <= timeout_ms <= 120_000:
            raise InvalidInput("timeout must be between 100 and 120000 milliseconds")
        self._check_collisions(user_id, name, prefix)
        return prefix

    def _save(
        self,
        user_id: str,
        name: str,
        prefix: str,
        config: dict[str, Any],
        auth_type: str,
        header_name: str,
        enabled: bool,
        timeout_ms: int,
    ) -> dict[str, Any]:
        server = self._store(user_id, name, prefix, config, auth_type, header_name, enabled, timeout_ms)
        self._forget((user_id, name))  # a user app's cache key (see _key)
        return self.view(self._app(server))

    def _store(
        self,
        user_id: str,
        name: str,
        prefix: str,
        config: dict[str, Any],
        auth_type: str,
        header_name: str,
        enabled: bool,
        timeout_ms: int,
    ) -> ExternalServer:
        """Encrypt and write the app's row (blocking: the store's I/O and the cipher's work)."""
        from workbench.stores import ExternalServer  # a row to write (stores.flow_records)

        store = self.store
        existing = store.get(user_id, name)
        if existing is not None and self.oauth is not None:
            before = self._app(existing)
            if (before.url, before.auth_type) != (config.get("url"), auth_type):
                self._drop_oauth(user_id, name)  # another server: its tokens and client are not ours
        blob = self.cipher.encrypt_json(config, _context(user_id, name))
        if len(blob) > MAX_CONFIG_BYTES:
            raise InvalidInput(
                "the app is too large to store: register fewer operations (pass operations: "
                "[operationId or tag, ...])"
            )
        slot = None
        if existing is None:
            slot = self._claim_slot(user_id, name)
            if slot is None:
                raise ConflictError(f"At most {MAX_SERVERS_PER_USER} custom apps per user; remove one first.")
        now = self.clock()
        server = ExternalServer(
            user_id=user_id,
            name=name,
            tool_prefix=prefix,
            config=blob,
            auth_type=auth_type,
            header_name=header_name,
            enabled=enabled,
            timeout_ms=timeout_ms,
            status="ok",
            created_at=existing.created_at if existing else now,
            updated_at=self._next_stamp(existing.updated_at) if existing else now,
        )
        if slot is None:
            store.put(server)
        elif not store.create(server):  # the same name registered elsewhere at this moment: replace it
            store.delete(user_id, slot)
            store.put(server)
        return server

    def _claim_slot(self, user_id: str, name: str) -> str | None:
        """Take one of the user's MAX_SERVERS_PER_USER slots for a new app, atomically: a slot is a
        row (user, "#slot#NN") created only if absent, so 60 registrations at once on any number of
        instances store exactly as many apps as there were free slots. Apps registered before slots
        existed count against the cap; a slot whose app never appeared (its registration failed
        part way) is freed after a minute. None when every slot is taken."""
        from workbench.stores import ExternalServer  # a row to write (stores.flow_records)

        rows = self.store.list_for(user_id)
        apps = {r.name for r in rows if not r.name.startswith("#")}
        slots = [r for r in rows if r.name.startswith(_SLOT)]
        unslotted = len(apps - {r.state for r in slots} - {name})
        now = self.clock()
        for stale in slots:
            if stale.state not in apps and now - stale.created_at > _SLOT_GRACE_SECONDS:
                self.store.delete(user_id, stale.name)
        for i in range(MAX_SERVERS_PER_USER - unslotted):
            key = f"{_SLOT}{i:02d}"
            if self.store.create(
                ExternalServer(user_id, key, "", b"", created_at=now, updated_at=now, state=name)
            ):
                return key
        return None

    def _release_slot(self, user_id: str, name: str) -> None:
        for row in self.store.list_for(user_id):
            if row.name.startswith(_SLOT) and row.state == name:
                self.store.delete(user_id, row.name)

    async def _check_url(self, user_id: str, url: str, what: str = "url") -> None:
        if not isinstance(url, str) or not url or len(url) > 2048:
            raise InvalidInput(f"{what} is required (at most 2048 characters)")
        probe, secrets = self._template_probe(user_id, url, what)
        try:
            # The egress policy, with DNS: a name that resolves to an internal address is refused
            # now; one that does not resolve yet is checked again on every call.
            await self.egress.check(probe, unresolvable_ok=True)
        except EgressRefused as exc:  # its wording may quote the resolved host: never a vault value
            raise InvalidInput(f"{what}: {scrub(str(exc), secrets)}") from None

    def _template_probe(self, user_id: str, template: str, what: str) -> tuple[str, list[str]]:
        """The template with refs checked (syntax, and that each vault name exists) and filled in, and
        the vault values filled in (to keep out of any message)."""
        try:
            res = resolve(template.replace(WORKSPACE, "ws"), vault=self.vault.reader(user_id))
        except BadRef as exc:
            raise InvalidInput(f"{what}: {exc} (only {{{{vault:NAME}}}} references are allowed)") from exc
        except VaultMissing as exc:
            raise InvalidInput(f"{what}: {exc}; store it first with vault_set") from exc
        value = str(res.value)
        if what.startswith("auth.") and _UNSAFE_VALUE.search(value):
            raise InvalidInput(f"{what} may not contain line breaks or control characters")
        return value, list(res.secrets)

    def _check_auth(
        self, user_id: str, auth: dict[str, Any] | None, *, kinds: tuple[str, ...]
    ) -> tuple[str, str, str]:
        if auth is None:
            return "none", "", ""
        if not isinstance(auth, dict):
            raise InvalidInput("auth must be an object")
        kind = auth.get("type", "none")
        if kind == "none":
            return "none", "", ""
        if kind not in kinds:
            raise InvalidInput(f"auth.type must be none, {', '.join(kinds[:-1])} or {kinds[-1]}")
        if kind == "oauth":
            if self.oauth is None:
                raise InvalidInput("OAuth-protected servers are not available on this gateway")
            return "oauth", "", ""
        if kind == "bearer":
            token = auth.get("token")
            if not isinstance(token, str) or not token:
                raise InvalidInput(
                    "auth.token is required for bearer auth (a {{vault:NAME}} reference is best)"
                )
            self._template_probe(user_id, token, "auth.token")
            return "bearer", "", token
        if kind == "query":
            param = auth.get("name")
            value = auth.get("value")
            if not isinstance(param, str) or not _QUERY_NAME.match(param):
                raise InvalidInput("auth.name must be a query parameter name")
            if not isinstance(value, str) or not value:
                raise InvalidInput(
                    "auth.value is required for query auth (a {{vault:NAME}} reference is best)"
                )
            self._template_probe(user_id, value, "auth.value")
            return "query", param, value
        header = auth.get("headerName")
        value = auth.get("value")
        if not isinstance(header, str) or not _HEADER.match(header):
            raise InvalidInput("auth.headerName must be an HTTP header name")
        if header.lower() in _FORBIDDEN_HEADERS:
            raise InvalidInput(f"auth.headerName '{header}' is set by Workbench itself")
        if not isinstance(value, str) or not value:
            raise InvalidInput("auth.value is required for header auth (a {{vault:NAME}} reference is best)")
        self._template_probe(user_id, value, "auth.value")
        return "header", header, value

    def _check_collisions(self, user_id: str, name: str, prefix: str) -> None:
        manifests = self.registry.manifests()
        taken = {m.name for m in manifests} | RESERVED_NAMES | {"apps"}
        if name in taken or name in self.operator_apps:
            raise ConflictError(
                f"The name '{name}' is taken by a built-in, plugin or operator integration; choose another name."
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
        others = [(a.name, a.tool_prefix, "the operator's app") for a in self.operator_apps.values()]
        others += [(r.name, r.tool_prefix, "your custom app") for r in self._rows(user_id) if r.name != name]
        for other_name, other_prefix, whose in others:
            if prefix.startswith(other_prefix) or other_prefix.startswith(prefix):
                raise ConflictError(
                    f"toolPrefix '{prefix}' overlaps the prefix '{other_prefix}' of {whose} "
                    f"'{other_name}'; choose another prefix."
                )

    def list_for(self, user_id: str) -> list[dict[str, Any]]:
        """The user's own apps, as they see them (never a literal secret)."""
        return [self.view(self._app(r)) for r in self._rows(user_id)]

    def remove(self, user_id: str, name: str) -> None:
        if name.startswith("#") or not self.store.delete(user_id, name):
            raise NotFound(f"No custom app named '{name}'")
        self._release_slot(user_id, name)
        self._forget((user_id, name))
        self._drop_oauth(user_id, name)

    def _drop_oauth(self, user_id: str, name: str) -> None:
        if self.oauth is not None:
            self.oauth.forget(user_id, name)
            self.oauth.credentials.delete(user_id, name)

    async def reconnect(self, user_id: str, name: str) -> dict[str, Any]:
        """Forget the cached discovery, any failure back-off and any reconnect flag, then discover
        again now. Works for the user's own apps and for operator apps (for this user)."""
        caller = self._caller(user_id)
        if name in self.operator_apps:
            app = self.operator_apps[name]
            self._forget(self._key(app, caller))
        else:
            server = None
            if not name.startswith("#"):
                server = self._update_row(
                    user_id, name, lambda row: replace(row, status="ok") if row is not None else None
                )
            if server is None:
                raise NotFound(f"No custom app named '{name}'")
            app = self._app(server)
            self._forget(self._key(app, caller))
        out = self.view(app)
        if not app.enabled:
            return out
        try:
            entry = await self._discover(app, caller)
        except ExternalError as exc:
            fresh = self._find(user_id, name) or app
            view = self.view(fresh)
            if view["status"] == "ok":  # registered, but not usable: never "ok" beside an error
                view["status"] = "unavailable"
            return {**view, "error": explain(exc, app)}
        return {**out, "tools": sorted(entry.tools)}

    def view(self, app: App) -> dict[str, Any]:
        """What a user sees about an app: never a literal secret."""
        auth: dict[str, Any] = {"type": app.auth_type}
        if app.operator:
            if app.auth_type != "none":
                auth["value"] = "(set by the operator)"
        elif app.auth_type == "bearer":
            auth["token"] = _mask(app.auth_value)
        elif app.auth_type == "header":
            auth["headerName"] = app.header_name
            auth["value"] = _mask(app.auth_value)
        elif app.auth_type == "query":
            auth["name"] = app.header_name
            auth["value"] = _mask(app.auth_value)
        out: dict[str, Any] = {
            "name": app.name,
            "kind": app.kind,
            "url": _mask_url(app.url),
            "auth": auth,
            "enabled": app.enabled,
            "toolPrefix": app.tool_prefix,
            "timeout": app.timeout_ms,
            "status": app.status,
        }
        if app.operator:
            out["operator"] = True
        if app.kind == "openapi":
            out["operations"] = len(app.operations)
            if app.title:
                out["title"] = app.title
        if app.status in (RECONNECT_REQUIRED, UNREADABLE):
            out["message"] = status_message(app)
        return out

    # -- per-user settings and state -------------------------------------------------------------

    def workspace_code(self, user_id: str) -> str:
        return self._caller(user_id).code

    def set_workspace_code(self, user_id: str, code: str | None) -> str:
        """Set (or with None/"" reset to the user id) the code `{workspaceCode}` stands for. A code
        belongs to one user at a time: another user's (or a user id other than the caller's) is
        refused, and the code the user leaves is released."""
        from workbench.stores import ExternalServer  # a row to write (stores.flow_records)

        store = self.store
        if code and not _CODE.match(code):
            raise InvalidInput("workspace code must be 1-128 letters, digits, '.', '_', '~' or '-'")
        if code and dot_segment(code):
            raise InvalidInput(f"workspace code: {DOT_SEGMENT_MESSAGE}")
        if code == user_id:
            code = None  # the default, held by its user alone
        previous = self._caller(user_id).code
        if code and code.lower() != previous.lower():
            self._claim_code(store, user_id, code)
        blob = self.cipher.encrypt_json({"workspaceCode": code or ""}, _context(user_id, _SETTINGS_ROW))
        self._update_row(
            user_id,
            _SETTINGS_ROW,
            lambda row: (
                replace(row, config=blob)
                if row is not None
                else ExternalServer(user_id, _SETTINGS_ROW, "", blob)
            ),
        )
        if previous != user_id and previous.lower() != (code or user_id).lower():
            held = store.get(_CODE_OWNER, previous.lower())
            if held is not None and held.state == user_id:
                store.delete(_CODE_OWNER, previous.lower())
        for key in [k for k in self._cache if k[1] in (user_id, previous) or k[0] == user_id]:
            self._forget(key)
        return code or user_id

    def _claim_code(self, store: ExternalServerStore, user_id: str, code: str) -> None:
        """Make `code` this user's, or refuse it (ConflictError) when it is someone else's."""
        from workbench.stores import ExternalServer  # a row to write (stores.flow_records)

        taken = ConflictError("That workspace code is not available; choose another.")
        if code.lower().startswith("usr_"):
            raise taken  # a user id: the default code of the user who has it
        key = code.lower()  # servers may not tell case apart: neither does the claim
        now = self.clock()
        claim = ExternalServer(_CODE_OWNER, key, "", b"", created_at=now, updated_at=now, state=user_id)
        if store.create(claim):
            return
        held = store.get(_CODE_OWNER, key)
        if held is None and store.create(claim):  # released in between
            return
        if held is None or held.state != user_id:
            raise taken

    def overview(self, user_id: str) -> list[dict[str, Any]]:
        """Every app the user sees (theirs, then the operator's), with what the last discovery found
        (tools, when) and the last error: for the portal."""
        caller = self._caller(user_id)
        out = []
        for app in [*(self._app(r) for r in self._rows(user_id)), *self.operator_apps.values()]:
            view = self.view(app)
            state = self._state(app, caller)
            view.update(state)
            view["connected"] = self._connected(app, caller)
            out.append(view)
        return out

    def integrations(self, user_id: str) -> list[dict[str, Any]]:
        """list_integrations entries ({name, version, connected}) for the user's apps and the operator's."""
        caller = self._caller(user_id)
        apps = [*(self._app(r) for r in self._rows(user_id)), *self.operator_apps.values()]
        return [
            {"name": a.name, "version": self._version(a, caller), "connected": self._connected(a, caller)}
            for a in apps
            if a.enabled
        ]

    def _version(self, app: App, caller: _Caller) -> str:
        if app.kind == "openapi":
            return app.version or "openapi"
        entry = self._cache.get(self._key(app, caller))
        return (entry.session.server_version if entry else "") or "mcp"

    def _connected(self, app: App, caller: _Caller) -> bool:
        if app.status in (RECONNECT_REQUIRED, UNREADABLE):
            return False
        if app.auth_type == "oauth":
            return self._has_token(app, caller.user_id)
        failure = self._failures.get(self._key(app, caller))
        return not (failure is not None and isinstance(failure.error, AuthRejected))

    def _state(self, app: App, caller: _Caller) -> dict[str, Any]:
        """The stored discovery state (user apps) or this instance's (operator apps)."""
        key = self._key(app, caller)
        out: dict[str, Any] = {}
        if app.kind == "openapi":  # known from the document itself: "discovered" when registered
            return {
                "lastDiscovery": app.updated_at,
                "tools": [app.tool_prefix + op.name for op in app.operations],
            }
        if not app.operator and self.store is not None:
            row = self.store.get(app.owner, app.name)
            if row is not None and row.state:
                try:
                    out = dict(json.loads(row.state))
                except ValueError:
                    out = {}
        entry = self._cache.get(key)
        if entry is not None and entry.discovered_at >= out.get("lastDiscovery", 0):
            out["lastDiscovery"] = entry.discovered_at
            out["tools"] = sorted(entry.tools)
        failure = self._failures.get(key)
        if failure is not None and "lastError" not in out:
            out["lastError"] = explain(failure.error, app)
        return out

    def _record(self, app: App, state: dict[str, Any]) -> None:
        if app.operator:
            return
        try:
            self.store.set_state(app.owner, app.name, json.dumps(state))
        except Exception as exc:  # the portal's view is best effort; discovery itself succeeded
            log_warning("external_state_not_saved", app=app.name, error=type(exc).__name__)

    # -- cache -----------------------------------------------------------------------------------

    def _forget(self, key: Key) -> None:
        self._cache.pop(key, None)
        self._failures.pop(key, None)
        self._generation[key] = self._generation.get(key, 0) + 1

    def invalidate(self, user_id: str, name: str) -> None:
        self._forget((user_id, name))

    def invalidate_for(self, user_id: str, name: str) -> None:
        """After a (re)connect: this user's cached discovery of that app, whoever registered it."""
        app = self._find(user_id, name)
        if app is not None:
            self._forget(self._key(app, self._caller(user_id)))

    def clear_cache(self, user_id: str | None = None) -> int:
        """Admin clear: drop cached discoveries and failure back-offs, for one user or for everyone,
        and store the clear so every other instance drops its entries too. Returns how many entries
        this instance dropped."""
        keys = [k for k in {*self._cache, *self._failures} if user_id is None or user_id in k]
        for key in keys:
            self._forget(key)
        if self.store is not None:
            from workbench.stores import ExternalServer  # a row to write (stores.flow_records)

            owner, row_name = (user_id, _SETTINGS_ROW) if user_id is not None else (OPERATOR, _EPOCH_ROW)

            def bumped(row: ExternalServer | None) -> ExternalServer:
                if row is not None:
                    return row  # the new stamp is the clear; the settings it holds are kept
                blob = self.cipher.encrypt_json({"workspaceCode": ""}, _context(owner, row_name))
                return ExternalServer(owner, row_name, "", blob)

            self._update_row(owner, row_name, bumped)
        log_event("external_cache_cleared", user=user_id or "*", dropped=len(keys))
        return len(keys)

    def _update_row(
        self, owner: str, name: str, change: Callable[[ExternalServer | None], ExternalServer | None]
    ) -> ExternalServer | None:
        """Read-modify-write of one row that other instances may write at the same moment: `change`
        gets the stored row (None when there is none) and returns what to store (None: nothing to
        do). It is written only if the row is still the one read — a newer `updated_at` stamp is the
        version — and redone on the fresh row otherwise, so no concurrent change is lost and a row
        deleted meanwhile is not brought back (unless `change` creates one for None)."""
        for _ in range(_WRITE_ATTEMPTS):
            row = self.store.get(owner, name)
            new = change(row)
            if new is None:
                return None
            if row is None:
                stamp = self._next_stamp(0.0)
                new = replace(new, created_at=new.created_at or stamp, updated_at=stamp)
                if self.store.create(new):
                    return new
                continue  # created elsewhere meanwhile: change that one
            new = replace(new, updated_at=self._next_stamp(row.updated_at))
            if self.store.put_if(new, expected_updated_at=row.updated_at):
                return new
        raise ConflictError(f"'{name}' is being changed elsewhere at the same moment; try again.")

    def _next_stamp(self, previous: float) -> float:
        # Strictly newer than the stored stamp even when the clock has not moved.
        return max(self.clock(), previous + 0.001)

    # -- catalog ---------------------------------------------------------------------------------

    async def catalog(self, user_id: str, budget: float | None = None) -> list[ExternalTool]:
        """The user's external tools for this search. Discovery shares one overall budget; what is
        not known by then is left out (and goes on in the background)."""
        tools, _ = await self.search_catalog(user_id, budget)
        return tools

    async def search_catalog(
        self,
        user_id: str,
        budget: float | None = None,
        *,
        connections: Collection[str] = (),
        recheck: KeyRecheck | None = None,
    ) -> tuple[list[ExternalTool], dict[str, Connection]]:
        """`catalog`, and the user's connections to `connections` (integration names) found in the
        same reads: the search needs both, and the stored rows behind them cost two round trips
        (the user's partition, then one batch of keys), not one per row.

        `recheck`: the caller's API key, taken on trust until now: its records join the first
        batch and it is settled there (AuthError) before anything else is read or started."""
        keys = [(user_id, i) for i in dict.fromkeys(connections)]
        early = await self._first_reads(user_id, keys, recheck)
        caller, apps, conns = await self.io.run(self._searchable, user_id, connections, early)
        now = self.clock()
        known: list[_Entry] = []
        waiting: list[asyncio.Future[_Entry]] = []
        for app in apps:
            key = self._key(app, caller)
            stamp = _stamp(app, caller)
            entry = self._cache.get(key)
            if entry is not None and entry.expires_at > now and entry.stamp == stamp:
                known.append(entry)
                continue
            failure = self._failures.get(key)
            if failure is not None and failure.stamp == stamp:
                if failure.until <= now:  # back-off over: retry, but never make this search wait
                    self._keep(self._start(app, caller))
                continue
            waiting.append(self._start(app, caller))
        if waiting:
            limit = self.search_budget if budget is None else budget
            done, pending = await asyncio.wait(waiting, timeout=limit)
            for future in pending:
                self._keep(future)
            for future in done:
                if not future.cancelled() and future.exception() is None:
                    known.append(future.result())
        return [t for entry in known for t in entry.tools.values()], conns

    async def _first_reads(
        self, user_id: str, keys: Collection[tuple[str, str]] = (), recheck: KeyRecheck | None = None
    ) -> _Early:
        """The user's partition, and the keys known before it is read: the clear stamp, the
        partition's version, the connections `keys`, the caller's key (`recheck`), and the workspace
        code's claim when the code is known. One BatchGetItem when this instance holds the partition
        at the version it finds; otherwise then a Query of the partition, kept with that version.

        Why a kept partition is never stale: every write to a user's partition stores a new version
        token in the same atomic write (ExternalServerStore), and the partition kept with a version
        was read by a Query that started after that version was read. So if the version read now is
        the kept one, no write to the partition completed between that earlier read and now, and
        the Query, which started after it, saw every write completed before it: the kept rows are
        the stored rows. A version is a fresh random token, never reused. (No version row: nothing
        was written since the version rows came, so the same argument holds with None.) While a
        deploy shifts traffic, the previous version writes without storing a version: a kept
        partition is read again once it is LISTING_MAX_AGE_SECONDS old."""
        known = self._listings.get(user_id)
        first, asked = await self.io.run(self._read_first, user_id, keys, recheck, known)
        found = first.servers.get((user_id, PARTITION_VERSION))
        version = found.state if found is not None else None
        now = self._monotonic()
        if known is not None and known.version == version and now - known.read_at < LISTING_MAX_AGE_SECONDS:
            self._listings[user_id] = self._listings.pop(user_id)  # the newest use
            rows, apps = known.rows, known.apps
        else:
            rows = await self.io.run(self.store.list_for, user_id)  # after the version: see above
            apps = {}
            self._keep_listing(user_id, _Listing(version, rows, _size(rows), now, apps))
        return _Early(rows, first, frozenset(keys), asked, apps)

    def _read_first(
        self,
        user_id: str,
        keys: Collection[tuple[str, str]],
        recheck: KeyRecheck | None,
        known: _Listing | None,
    ) -> tuple[Snapshot, frozenset[tuple[str, str]]]:
        servers = [(OPERATOR, _EPOCH_ROW), (user_id, PARTITION_VERSION)]
        if known is not None:
            _, _, claim = self._code_and_claim(user_id, known.rows)
            if claim is not None:  # right if the version holds; if not, `_read` reads the new one
                servers.append(claim)
        return self._read_beside(keys, servers, recheck), frozenset(servers)

    def _keep_listing(self, user_id: str, listing: _Listing) -> None:
        old = self._listings.pop(user_id, None)
        if old is not None:
            self._listing_bytes -= old.size
        if listing.size > LISTING_CACHE_BYTES // 4:
            return  # one user's very large apps: read each time rather than crowd out the others
        while self._listings and (
            self._listing_bytes + listing.size > LISTING_CACHE_BYTES
            or len(self._listings) >= LISTING_CACHE_USERS
        ):
            oldest = next(iter(self._listings))
            self._listing_bytes -= self._listings.pop(oldest).size
        self._listings[user_id] = listing
        self._listing_bytes += listing.size

    def _code_and_claim(
        self, user_id: str, rows: Sequence[ExternalServer]
    ) -> tuple[str, float, tuple[str, str] | None]:
        """The workspace code in the user's settings row (among `rows`), the row's stamp, and the
        code's claim to read if this instance does not know it is the user's ((#workspace, code);
        None: no code of their own, no app it would apply to, or known to be theirs)."""
        settings = next((r for r in rows if r.name == _SETTINGS_ROW), None)
        code = self._stored_code(user_id, settings)
        stamp = settings.updated_at if settings else 0.0
        has_apps = bool(self.operator_apps) or any(not r.name.startswith("#") for r in rows)
        if has_apps and code and code != user_id and self._held_codes.get(user_id) != (code.lower(), stamp):
            return code, stamp, (_CODE_OWNER, code.lower())
        return code, stamp, None

    def _read_beside(
        self,
        keys: Collection[tuple[str, str]],
        servers: Collection[tuple[str, str]],
        recheck: KeyRecheck | None,
    ) -> Snapshot:
        """The first batch of a search; with `recheck`, the caller's key and user too, settled
        here (AuthError: the key no longer stands, and nothing read is used)."""
        if recheck is None:
            return self._read_together(connections=keys, servers=servers)
        if self._batched:
            found = self._read_together(connections=keys, servers=servers, **recheck.reads)
            recheck.settle(found)
            return found
        recheck.settle()  # no batch read here: the key on its own
        return self._read_together(connections=keys, servers=servers)

    def _searchable(
        self, user_id: str, connections: Collection[str] = (), early: _Early | None = None
    ) -> tuple[_Caller, list[App], dict[str, Connection]]:
        """The caller, their searchable apps (an OAuth app only once connected) and their
        connections to `connections`: the user's partition (settings row and apps) in one read,
        then one batch of every key that needs (clear stamp, code claim, connections), less what
        `early` already read."""
        caller, apps, snap = self._read(user_id, connections, oauth_tokens=True, early=early)
        found = {i: c for (u, i), c in snap.connections.items() if u == user_id}
        apps = [
            a
            for a in apps
            if a.enabled and a.status == "ok" and (a.auth_type != "oauth" or _live(found.get(a.name)))
        ]
        return caller, apps, {i: found[i] for i in connections if i in found}

    def _read(
        self,
        user_id: str,
        connections: Collection[str] = (),
        *,
        oauth_tokens: bool = False,
        early: _Early | None = None,
    ) -> tuple[_Caller, list[App], Snapshot]:
        """The caller (workspace code, newest clear), their apps then the operator's, and a snapshot
        holding the user's connections to `connections` (and, with `oauth_tokens`, to each OAuth
        app). One Query of the user's partition (or `early`'s, with the keys read beside it), then
        at most one batch read of the keys still missing: a user with no app (and no operator app
        configured) needs no clear stamp and no code claim."""
        rows = early.rows if early is not None else self.store.list_for(user_id)
        asked_conns = early.connections if early is not None else frozenset()
        asked_rows = early.servers if early is not None else frozenset()
        settings = next((r for r in rows if r.name == _SETTINGS_ROW), None)
        decoded = early.apps if early is not None else {}
        apps = [
            *(
                decoded.get(r.name) or decoded.setdefault(r.name, self._app(r))
                for r in rows
                if r.name[:1] != "#"
            ),
            *self.operator_apps.values(),
        ]
        code, stamp, claim_key = self._code_and_claim(user_id, rows)
        needed: list[tuple[str, str]] = [(OPERATOR, _EPOCH_ROW)] if apps else []
        if claim_key is not None:
            needed.append(claim_key)
        wanted = list(connections)
        oauth_apps = [a.name for a in apps if a.auth_type == "oauth" and a.enabled and a.status == "ok"]
        if oauth_tokens and oauth_apps and self.oauth is not None:  # (the OAuth client made only then)
            wanted += oauth_apps
        keys = [k for k in dict.fromkeys((user_id, i) for i in wanted) if k not in asked_conns]
        servers = [k for k in needed if k not in asked_rows]
        snap = self._read_together(connections=keys, servers=servers) if keys or servers else Snapshot()
        if early is not None:  # what was read first, and what was read after it
            snap = Snapshot(
                connections={**early.found.connections, **snap.connections},
                servers={**early.found.servers, **snap.servers},
            )
        if not apps:
            return _Caller(user_id, user_id, stamp), apps, snap
        epoch = snap.servers.get((OPERATOR, _EPOCH_ROW))
        stamp = max(stamp, epoch.updated_at if epoch else 0.0)
        if claim_key is not None:  # read with the first batch or just now: the code is checked here
            claim = snap.servers.get(claim_key)
            # No claim yet (a code stored before codes were claimed): claimed now, if still free.
            held = (
                claim.state == user_id if claim is not None else self._holds_code(self.store, user_id, code)
            )
            if held:
                if len(self._held_codes) >= _PRUNE_AT:
                    self._held_codes.clear()
                self._held_codes[user_id] = (code.lower(), settings.updated_at if settings else 0.0)
            else:
                code = ""  # another user's: never act as them
        return _Caller(user_id, code or user_id, stamp), apps, snap

    def _stored_code(self, user_id: str, row: ExternalServer | None) -> str:
        """The workspace code in the user's settings row ("" when none is set or it is unreadable)."""
        if row is None:
            return ""
        try:
            value = self.cipher.decrypt_json(row.config, _context(user_id, _SETTINGS_ROW))
        except (CryptoError, ValueError):
            return ""  # an unreadable settings row: the default workspace code
        return str(value.get("workspaceCode", "")) if isinstance(value, dict) else ""

    def _one_by_one(
        self, *, connections: Collection[tuple[str, str]] = (), servers: Collection[tuple[str, str]] = ()
    ) -> Snapshot:
        """Stores.read_together's answer, one get per key (no batch read was given)."""
        conns: dict[tuple[str, str], Connection] = {}
        if self.oauth is not None:
            store = self.oauth.credentials.store
            conns = {k: c for k in connections if (c := store.get(*k)) is not None}
        rows = {k: r for k in servers if (r := self.store.get(*k)) is not None}
        return Snapshot(connections=conns, servers=rows)

    def _keep(self, future: asyncio.Future[Any]) -> None:
        """Hold a background discovery until it ends (its result lands in the cache or back-off)."""
        self._background.add(future)
        future.add_done_callback(self._background.discard)

    async def lookup(self, principal: Any, name: str) -> tuple[Tool, Manifest] | None:
        """Engine hook: the external tool behind `name` for this principal, if any. A principal
        whose key is due for its check (KeyRecheck, not settled yet) has it settled by the first
        read, before anything else is read or started (AuthError)."""
        recheck = principal.recheck
        early = await self._first_reads(
            principal.user.id, recheck=recheck if recheck is not None and not recheck.settled else None
        )
        caller, apps = await self.io.run(self._caller_and_apps, principal.user.id, early)
        owners = sorted(
            (a for a in apps if a.enabled and name.startswith(a.tool_prefix)),
            key=lambda a: -len(a.tool_prefix),
        )
        if not owners:
            return None
        app = owners[0]
        manifest = await self.io.run(self._manifest, app)
        if app.status in (RECONNECT_REQUIRED, UNREADABLE):
            return _failing_tool(name, app.name, status_message(app)), manifest
        key = self._key(app, caller)
        failure = self._failures.get(key)
        if failure is not None and failure.until > self.clock() and failure.stamp == _stamp(app, caller):
            return _failing_tool(name, app.name, remembered(failure, app, self.clock())), manifest
        try:
            entry = await self._discover(app, caller)
        except ExternalError as exc:
            return _failing_tool(name, app.name, explain(exc, app)), manifest
        found = entry.tools.get(name)
        if found is None:
            return None
        return self._tool(app, caller, found), manifest

    def _caller_and_apps(self, user_id: str, early: _Early | None = None) -> tuple[_Caller, list[App]]:
        caller, apps, _ = self._read(user_id, early=early)
        return caller, apps

    def _tool(self, app: App, caller: _Caller, ext: ExternalTool) -> Tool:
        async def run(args: dict[str, Any], ctx: Any) -> Any:
            return await self._call(app, caller, ext.name, args)

        return Tool(
            name=ext.name,
            description=ext.description,
            fn=run,
            parameters=ext.input_schema,
            integration=app.name,
            annotations=ext.annotations,
        )

    async def call(self, user_id: str, server_name: str, tool_name: str, args: dict[str, Any]) -> Any:
        """Route a call to its app (the user's own or the operator's). Raises RuntimeError with a
        user-facing message on failure."""
        app = await self.io.run(self._find, user_id, server_name)
        if app is None or not app.enabled:
            raise LookupError("Tool not found")
        return await self._call(app, await self.io.run(self._caller, user_id), tool_name, args)

    async def _call(self, app: App, caller: _Caller, tool_name: str, args: dict[str, Any]) -> Any:
        # `app` as this request read it a moment ago (the lookup's Query of the user's partition, or
        # `call`'s read): not read a third time (issue 24: one more sequential round trip per call).
        if app.status in (RECONNECT_REQUIRED, UNREADABLE):
            raise RuntimeError(status_message(app))
        if app.kind == "openapi":
            return await self._call_openapi(app, caller, tool_name, args)
        try:
            entry = await self._discover(app, caller)
            ext = entry.tools.get(tool_name)
            if ext is None:
                raise LookupError("Tool not found")

            async def send(endpoint: Endpoint) -> tuple[dict[str, Any], McpSession]:
                return await self.client.call_tool(
                    endpoint, entry.session, ext.original, args, ext.input_schema
                )

            endpoint, (result, session) = await self._with_token(app, caller, send)
            entry.session = session
        except AuthRejected as exc:
            await self.io.run(self._mark_reconnect, app, caller)
            raise RuntimeError(explain(exc, app)) from None
        except ExternalError as exc:
            raise RuntimeError(explain(exc, app)) from None
        secrets = endpoint.secrets
        if result.get("isError") is True:
            raise RuntimeError(scrub(_first_text(result) or "The external tool reported an error.", secrets))
        text = _first_text(result)
        return scrub(text if text is not None else result, secrets)

    async def _call_openapi(self, app: App, caller: _Caller, tool_name: str, args: dict[str, Any]) -> Any:
        op = next((o for o in app.operations if app.tool_prefix + o.name == tool_name), None)
        if op is None:
            raise LookupError("Tool not found")
        timeout = app.timeout_ms / 1000

        import httpx

        from workbench.external.openapi import build_request

        async def send(endpoint: Endpoint) -> tuple[int, str, bytes]:
            try:
                req = build_request(endpoint.url, op, args)
            except ValueError as exc:
                raise RuntimeError(f"Invalid arguments for {tool_name}: {exc}") from None
            params: list[tuple[str, str | int | float | bool | None]] = list(req.params)
            headers = {**req.headers, "Accept": "application/json", **endpoint.headers}
            if req.cookies:  # cookie parameters, as one header (httpx's per-request cookies are deprecated)
                headers["Cookie"] = "; ".join(f"{k}={quote(v, safe='')}" for k, v in req.cookies.items())
            if app.auth_type == "query" and isinstance(endpoint, _Target):
                params.append((app.header_name, endpoint.query_value))
            try:
                async with (
                    asyncio.timeout(timeout),
                    httpx.AsyncClient(
                        transport=self.client.transport,
                        timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)),
                        follow_redirects=False,
                        headers={"User-Agent": "workbench/0.1"},
                    ) as http,
                    http.stream(
                        req.method,
                        req.url,
                        params=params,
                        headers=headers,
                        json=req.json_body if req.has_json else None,
                        data=req.form_body,
                    ) as response,
                ):
                    if response.status_code == 401 and app.auth_type == "oauth":
                        raise AuthRejected(app.name, 401)  # refreshed once, then sent again
                    body = bytearray()
                    async for chunk in response.aiter_bytes():
                        body.extend(chunk)
                        if len(body) > _MAX_RESULT_BYTES:
                            raise RuntimeError(f"{app.name} answered more than {_MAX_RESULT_BYTES} bytes.")
                    return response.status_code, response.headers.get("content-type", ""), bytes(body)
            except (TimeoutError, httpx.TimeoutException):
                raise RuntimeError(explain(TimedOut(app.name, ""), app)) from None
            except httpx.HTTPError:
                raise RuntimeError(explain(Unreachable(app.name, ""), app)) from None
            except EgressRefused as exc:  # where the URL leads (at connect time), or a body over the cap
                raise RuntimeError(scrub(f"{app.name} is refused: {exc}", endpoint.secrets)) from None

        try:
            endpoint, (status, ctype, body) = await self._with_token(app, caller, send)
        except ExternalError as exc:
            raise RuntimeError(explain(exc, app)) from None
        text = body.decode("utf-8", errors="replace")
        value: Any = text
        if "json" in ctype.lower() and text:
            try:
                value = parse(text)
            except (ValueError, JsonRejected):
                value = text  # not strict JSON: handed back as the text it is
        if status >= 400:
            detail = text[:2000] if text else ""
            raise RuntimeError(
                scrub(f"{app.name} answered HTTP {status}: {detail}".rstrip(": "), endpoint.secrets)
            )
        return scrub(value if text else {"status": status}, endpoint.secrets)

    # -- discovery -------------------------------------------------------------------------------

    def _start(self, app: App, caller: _Caller) -> asyncio.Future[_Entry]:
        key = self._key(app, caller)
        pending = self._inflight.get(key)
        if pending is None or pending.done():
            pending = asyncio.ensure_future(self._handshake(app, caller, self._generation.get(key, 0)))
            self._inflight[key] = pending
            # A background discovery's failure is recorded as a back-off: mark it retrieved.
            pending.add_done_callback(lambda f: f.cancelled() or f.exception())
            pending.add_done_callback(
                lambda f: self._inflight.pop(key, None) if self._inflight.get(key) is f else None
            )
        return pending

    async def _discover(self, app: App, caller: _Caller) -> _Entry:
        key = self._key(app, caller)
        entry = self._cache.get(key)
        stamp = _stamp(app, caller)
        if entry is not None and entry.expires_at > self.clock() and entry.stamp == stamp:
            return entry
        return await asyncio.shield(self._start(app, caller))

    async def _handshake(self, app: App, caller: _Caller, generation: int) -> _Entry:
        key = self._key(app, caller)
        stamp = _stamp(app, caller)
        try:
            raw: list[Any]
            if app.kind == "openapi":
                session = McpSession()
                raw = [
                    {
                        "name": op.name,
                        "description": op.description,
                        "inputSchema": op.input_schema,
                        "annotations": from_method(op.method, f"{app.title or app.name}: {op.name}"),
                    }
                    for op in app.operations
                ]
            else:
                if app.auth_type == "oauth":
                    await self._ensure_plan(app, caller)
                _, (session, raw) = await self._with_token(app, caller, self.client.handshake)
        except ExternalError as exc:
            if isinstance(exc, NeedsConnect):
                raise  # nothing is wrong with the server: the user has to connect it
            if isinstance(exc, AuthRejected):
                await self.io.run(self._mark_reconnect, app, caller)
            elif self._generation.get(key, 0) == generation:
                previous = self._failures.get(key)
                attempts = previous.attempts + 1 if previous and previous.stamp == stamp else 1
                wait = min(BACKOFF_FIRST_SECONDS * 2 ** (attempts - 1), BACKOFF_MAX_SECONDS)
                now = self.clock()
                self._failures[key] = _Failure(exc, now + wait, stamp, attempts, failed_at=now)
            log_event("external_server_skipped", server=app.name, user=caller.user_id, reason=str(exc))
            await self.io.run(
                self._record, app, {"lastError": explain(exc, app), "lastErrorAt": self.clock()}
            )
            raise
        tools: dict[str, ExternalTool] = {}
        for item in raw:
            why = problem(item)
            label = str(item.get("name"))[:80] if isinstance(item, dict) else "?"
            full = app.tool_prefix + label
            if why is None and self.registry.find(full) is not None:
                why = "its name collides with a built-in or plugin tool"
            if why is None and full in tools:
                why = "the server listed it twice"
            if why is not None:
                log_warning(
                    "external_tool_dropped", server=app.name, user=caller.user_id, tool=label, reason=why
                )
                continue
            schema = item.get("inputSchema") or {"type": "object", "properties": {}}
            hints = from_declared(item.get("annotations"), f"{app.title or app.name}: {item['name']}")
            tools[full] = ExternalTool(
                app.name, full, str(item["name"]), str(item.get("description") or ""), dict(schema), hints
            )
        now = self.clock()
        entry = _Entry(tools, session, now + self.ttl, stamp, now)
        if self._generation.get(key, 0) == generation:
            self._prune(now)
            self._cache[key] = entry
            self._failures.pop(key, None)
        if app.kind == "mcp":
            await self.io.run(self._record, app, {"lastDiscovery": now, "tools": sorted(tools)})
        return entry

    def _prune(self, now: float) -> None:
        """A long-lived process (the local gateway) must not keep every expired entry forever."""
        if len(self._cache) + len(self._failures) < _PRUNE_AT:
            return
        for key in [k for k, e in self._cache.items() if e.expires_at <= now]:
            del self._cache[key]
        for key in [k for k, f in self._failures.items() if f.until <= now]:
            del self._failures[key]
        if len(self._generation) > 4 * _PRUNE_AT:
            self._generation = {
                k: v for k, v in self._generation.items() if k in self._cache or k in self._inflight
            }

    def _mark_reconnect(self, app: App, caller: _Caller) -> None:
        self._forget(self._key(app, caller))
        if app.auth_type == "oauth":  # per-user tokens: the connection says what to do, not the app
            log_event("external_server_token_refused", server=app.name, user=caller.user_id)
            return
        if app.operator:  # nothing stored to flag: remembered as a failure (an auth one) instead
            now = self.clock()
            self._failures[self._key(app, caller)] = _Failure(
                AuthRejected(app.name, 401), now + BACKOFF_FIRST_SECONDS, _stamp(app, caller), failed_at=now
            )
        else:
            # Only a row that still exists: an app deleted meanwhile on another instance stays deleted.
            self._update_row(
                app.owner,
                app.name,
                lambda row: (
                    replace(row, status=RECONNECT_REQUIRED)
                    if row is not None and row.status != RECONNECT_REQUIRED
                    else None
                ),
            )
        log_event("external_server_reconnect_required", server=app.name, user=caller.user_id)

    # -- OAuth-protected servers -------------------------------------------------------------------

    def _manifest(self, app: App) -> Manifest:
        """The engine's view of the app. An OAuth app declares OAuth2 so that the engine answers
        NOT_CONNECTED (with connect('<app>')) until the user has connected it."""
        base = _manifest(app)
        if app.auth_type != "oauth" or self.oauth is None:
            return base
        plan = self.oauth.plan(app.owner, app.name)
        auth = OAuth2Auth(
            authorize_url=plan.authorization_endpoint if plan else "",
            token_url=plan.token_endpoint if plan else "",
            scopes=tuple(plan.scope.split()) if plan else (),
        )
        return replace(base, auth=auth)

    def _has_token(self, app: App, user_id: str) -> bool:
        if self.oauth is None:
            return False
        return _live(self.oauth.credentials.store.get(user_id, app.name))

    async def _ensure_plan(self, app: App, caller: _Caller) -> None:
        """The app's OAuth setup, found from the server's own 401 the first time."""
        assert self.oauth is not None
        if await self.io.run(self.oauth.plan, app.owner, app.name) is not None:
            return
        from workbench.external.oauth import OAuthSetupError

        bare = replace(await self.io.run(self._endpoint, app, caller), headers={})
        try:
            await self.client.handshake(bare)
        except AuthRejected as exc:
            try:
                await self.oauth.prepare(app.owner, app.name, bare.url, exc.challenge)
            except OAuthSetupError as why:
                raise ExternalError(
                    app.name, f"Custom app '{app.name}' cannot be connected with OAuth: {why}."
                ) from None
            return
        raise ExternalError(
            app.name,
            f"Custom app '{app.name}' is registered for OAuth, but the server did not ask for a token.",
        )

    async def _with_token(
        self, app: App, caller: _Caller, send: Callable[[Endpoint], Awaitable[_R]]
    ) -> tuple[_Target, _R]:
        """Send with the app's credentials; an OAuth app's refused token is refreshed once (the one
        refresh mechanism, single flight across instances) and the request sent once more."""
        endpoint = await self.io.run(self._endpoint, app, caller)  # vault reads
        if app.auth_type != "oauth" or self.oauth is None:
            return endpoint, await send(endpoint)
        manifest = await self.io.run(self._manifest, app)
        connect = f"'{app.name}' is not connected. Use connect('{app.name}') to connect."
        try:
            token = await self.oauth.bearer(manifest, caller.user_id)
        except (NotConnected, CredentialError):
            raise NeedsConnect(app.name, connect) from None
        target = _with_bearer(endpoint, token)
        try:
            return target, await send(target)
        except AuthRejected:
            try:
                cred = await self.oauth.credentials.after_rejection(manifest, caller.user_id, token)
            except (NotConnected, CredentialError):
                raise NeedsConnect(app.name, connect) from None
            target = _with_bearer(endpoint, str(cred.get("access_token", "")))
            return target, await send(target)

    async def before_connect(self, user_id: str, name: str) -> str | None:
        """Make sure an OAuth app's setup (discovery, client registration) exists before its connect
        link is minted; the error message when it cannot be set up, else None."""
        app = await self.io.run(self._find, user_id, name)
        if app is None or app.auth_type != "oauth" or not app.enabled or self.oauth is None:
            return None
        try:
            await self._ensure_plan(app, await self.io.run(self._caller, user_id))
        except ExternalError as exc:
            return explain(exc, app)
        return None

    def connect_manifest(self, user_id: str, name: str) -> Manifest | None:
        """For ConnectFlow.start: the app's manifest when this user sees an app of that name."""
        app = self._find(user_id, name)
        return self._manifest(app) if app is not None and app.enabled else None

    def redeem(self, user: User, rec: PendingConnect) -> Redeemed | None:
        """For ConnectFlow.redeem: the consent URL of an OAuth app (None: not an app of this user)."""
        app = self._find(user.id, rec.integration)
        if app is None or app.auth_type != "oauth" or self.oauth is None:
            return None
        return self.oauth.redeem(user, rec, app.owner)

    def owner_of(self, user_id: str, name: str) -> str | None:
        """Whose OAuth plan an app's callback uses: the user's own app, or the operator's."""
        app = self._find(user_id, name)
        return app.owner if app is not None and app.auth_type == "oauth" else None

    # -- apps, callers, endpoints ----------------------------------------------------------------

    def _rows(self, user_id: str) -> list[ExternalServer]:
        """The user's app rows (settings rows, whose names start with '#', left out)."""
        return [r for r in self.store.list_for(user_id) if not r.name.startswith("#")]

    def _apps(self, caller: _Caller) -> list[App]:
        return [*(self._app(r) for r in self._rows(caller.user_id)), *self.operator_apps.values()]

    def _find(self, user_id: str, name: str) -> App | None:
        if name in self.operator_apps:
            return self.operator_apps[name]
        if name.startswith("#"):
            return None
        row = self.store.get(user_id, name)
        return self._app(row) if row is not None else None

    def _app(self, row: ExternalServer) -> App:
        try:
            value = self.cipher.decrypt_json(row.config, _context(row.user_id, row.name))
        except (CryptoError, ValueError):  # listed and named, its tools answer how to fix it
            value, row = {}, replace(row, status=UNREADABLE)
        cfg = value if isinstance(value, dict) else {}
        kind = str(cfg.get("kind", "mcp"))
        operations: tuple[Operation, ...] = ()
        if kind == "openapi" and cfg.get("ops"):
            from workbench.external.openapi import Operation

            data = json.loads(zlib.decompress(base64.b64decode(str(cfg["ops"]))))
            operations = tuple(Operation.from_json(op) for op in data)
        return App(
            owner=row.user_id,
            name=row.name,
            tool_prefix=row.tool_prefix,
            kind=kind,
            url=str(cfg.get("url", "")),
            auth_type=row.auth_type,
            header_name=row.header_name,
            auth_value=str(cfg.get("auth", "")),
            enabled=row.enabled,
            timeout_ms=row.timeout_ms,
            status=row.status,
            updated_at=row.updated_at,
            operations=operations,
            title=str(cfg.get("title", "")),
            version=str(cfg.get("version", "")),
        )

    def _caller(self, user_id: str) -> _Caller:
        """The user's workspace code and the newest clear that concerns them (one batch read of
        their settings row and the clear stamp)."""
        settings, clear = (user_id, _SETTINGS_ROW), (OPERATOR, _EPOCH_ROW)
        found = self._read_together(servers=[settings, clear]).servers
        row, epoch = found.get(settings), found.get(clear)
        code = self._stored_code(user_id, row)
        stamp = max(row.updated_at if row else 0.0, epoch.updated_at if epoch else 0.0)
        if code and code != user_id and not self._holds_code(self.store, user_id, code):
            code = ""  # another user's: never act as them (a code stored before codes were claimed)
        return _Caller(user_id, code or user_id, stamp)

    def _holds_code(self, store: ExternalServerStore, user_id: str, code: str) -> bool:
        """Whether `code` is this user's: its claim is theirs, or had no holder and now is."""
        held = store.get(_CODE_OWNER, code.lower())
        if held is None:
            try:
                self._claim_code(store, user_id, code)
            except ConflictError:
                return False
            return True
        return held.state == user_id

    @staticmethod
    def _key(app: App, caller: _Caller | None) -> Key:
        """The seed's cache key, (server, workspace): a user app belongs to one user; an operator
        app is shared by everyone with the same workspace code."""
        if app.operator:
            if app.auth_type == "oauth":  # each user's own token: their own catalog
                return (f"{OPERATOR}:{app.name}", f"user:{caller.user_id}" if caller else "")
            return (f"{OPERATOR}:{app.name}", caller.code if caller else "")
        return (app.owner, app.name)

    def _endpoint(self, app: App, caller: _Caller) -> _Target:
        """URL and headers for this workspace, with the secret values they contain."""
        code = caller.code
        if dot_segment(code):  # a code stored before they were refused: never a path of its own
            raise ExternalError(
                app.name,
                f"Your workspace code cannot be used: {DOT_SEGMENT_MESSAGE}; set another in the portal.",
            )
        reader = self.vault.reader(app.owner) if not app.operator else _no_vault
        secrets: list[str] = []
        try:
            url_res = resolve(app.url.replace(WORKSPACE, quote(code, safe="")), vault=reader)
            headers: dict[str, str] = {}
            query_value = ""
            if app.auth_type in ("bearer", "header", "query"):
                if app.operator:
                    secret = self.operator_secret(app.auth_value)
                    if not secret:
                        raise ExternalError(
                            app.name,
                            f"External server '{app.name}' is misconfigured: the operator has not set "
                            f"{app.auth_value}.",
                        )
                    value = secret.replace(WORKSPACE, code)
                else:
                    auth_res = resolve(app.auth_value.replace(WORKSPACE, code), vault=reader)
                    value = str(auth_res.value)
                    secrets.extend(auth_res.secrets)
                if _UNSAFE_VALUE.search(value):  # a vault secret changed since registration
                    raise ExternalError(
                        app.name,
                        f"Custom app '{app.name}' is misconfigured: its auth value has a line break.",
                    )
                if value != code:
                    secrets.append(value)
                if app.auth_type == "bearer":
                    headers["Authorization"] = f"Bearer {value}"
                elif app.auth_type == "header":
                    headers[app.header_name] = value
                else:
                    query_value = value
        except (BadRef, VaultMissing) as exc:
            raise ExternalError(app.name, f"Custom app '{app.name}' is misconfigured: {exc}.") from None
        secrets.extend(url_res.secrets)
        # Checked again per call, scheme and host alike: a {{vault:...}} in the URL can change after
        # registration. The transport checks again (and the addresses) on every request.
        try:
            self.egress.check_url(str(url_res.value))
        except EgressRefused as exc:
            raise ExternalError(
                app.name, f"Custom app '{app.name}' is misconfigured: {scrub(str(exc), secrets)}."
            ) from None
        kept = tuple(s for s in secrets if s)
        return _Target(app.name, str(url_res.value), headers, app.timeout_ms / 1000, kept, query_value)


@dataclass(frozen=True, slots=True)
class _Target(Endpoint):
    query_value: str = field(default="", repr=False)  # an OpenAPI app's API key sent as a query parameter


_R = TypeVar("_R")


def _with_bearer(endpoint: _Target, token: str) -> _Target:
    headers = {**endpoint.headers, "Authorization": f"Bearer {token}"}
    return replace(endpoint, headers=headers, secrets=(*endpoint.secrets, token))


def _live(conn: Connection | None) -> bool:
    """An OAuth app's connection that holds a token (its tools are searchable)."""
    return conn is not None and conn.status == "connected"


def _size(rows: Sequence[ExternalServer]) -> int:
    return sum(len(r.config) + len(r.state) + _ROW_OVERHEAD for r in rows)


def _stamp(app: App, caller: _Caller) -> tuple[float, float]:
    return (app.updated_at, caller.stamp)


def _no_vault(name: str) -> str | None:
    return None  # operator values are never resolved against anyone's vault


# -- helpers -------------------------------------------------------------------------------------


def _context(user_id: str, name: str) -> dict[str, str]:
    return {"user": user_id, "external_server": name, "field": "config"}


def _manifest(app: App) -> Manifest:
    what = "an OpenAPI app" if app.kind == "openapi" else "an external MCP tool server"
    who = "configured by the operator" if app.operator else "registered by this user"
    return Manifest(
        name=app.name,
        version=app.version or "external",
        display_name=app.title or app.name,
        auth=NoAuth(),
        tool_prefix=app.tool_prefix,
        description=f"Custom app: {what} {who}.",
    )


def _failing_tool(name: str, server: str, message: str) -> Tool:
    def fail(args: dict[str, Any], ctx: Any) -> Any:
        raise RuntimeError(message)

    return Tool(name=name, description=message, fn=fail, parameters=None, integration=server)


def status_message(app: App) -> str:
    """Why an app's tools are unavailable, and what fixes it."""
    if app.status == UNREADABLE:
        return (
            f"Custom app '{app.name}' cannot be decrypted (it was stored under another key or is "
            f"damaged), so its tools are unavailable: register it again (apps_register_server or "
            f"apps_register_openapi with name '{app.name}')."
        )
    return reconnect_message(app.name)


def reconnect_message(server: str) -> str:
    return (
        f"External server '{server}' rejected Workbench's credentials, so its tools are unavailable until "
        f"you reconnect it: fix its token (vault_set, or apps_register_server again), then call "
        f"apps_refresh with name '{server}'."
    )


def remembered(failure: _Failure, app: App, now: float) -> str:
    """A failure answered again from the back-off, saying so: the server was not asked this time
    (a remembered timeout answers at once; it did not wait another timeout)."""
    text = explain(failure.error, app).removesuffix(" Try again later.").rstrip().rstrip(".")
    ago = max(0, round(now - failure.failed_at))
    left = max(1, round(failure.until - now))
    return (
        f"{text} (last tried {ago} s ago, not asked again this time; retried in {left} s). Try again later."
    )


def explain(exc: ExternalError, app: App) -> str:
    """The seed's failure table as messages for the agent."""
    if isinstance(exc, NeedsConnect):
        return str(exc)
    if isinstance(exc, AuthRejected):
        if app.operator:
            return f"{exc} The gateway's operator has to fix its credentials; try again later."
        return f"{exc} {reconnect_message(app.name)}"
    if isinstance(exc, TimedOut):
        return (
            f"Transient error: external server '{app.name}' did not answer within "
            f"{app.timeout_ms / 1000:g} s. Try again later."
        )
    if isinstance(exc, ServerFailed):
        return f"External server '{app.name}' failed with HTTP {exc.status} (retried once)."
    if isinstance(exc, Unreachable):
        return f"External server '{app.name}' is unreachable; its tools are skipped for now. Try again later."
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
