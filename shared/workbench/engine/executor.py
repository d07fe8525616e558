"""The execute_tools engine (seed 000): a per-item pipeline and a bounded batch pool.

Per item, in order: registry lookup → connection check → argument validation (applies defaults)
→ context (refreshing the credential if stale) → handler. The engine never raises: every failure
becomes a returned error object, and every path writes an EXECUTE audit event.
"""

from __future__ import annotations

import asyncio
import functools
import json
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from secrets import token_hex
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

from workbench.annotations import is_read_only
from workbench.connections.credentials import Credentials, token_of
from workbench.engine.blocking import BlockingPool, GroupWrite
from workbench.engine.registry import Registry
from workbench.errors import AuditNotWritten, CredentialError, ReconnectRequired, as_unavailable
from workbench.guard import deadline
from workbench.guard.jsontext import nesting_exceeds, nesting_exceeds_within
from workbench.identity.auth import Principal
from workbench.manifest import CookieAuth, Manifest, NoAuth, OAuth2Auth
from workbench.observability import Metrics, log_error, log_event
from workbench.stores import AuditStore, Connection, Snapshot, User
from workbench.tools import CancelSignal, EmitFn, TokenKind, Tool, ToolContext

if TYPE_CHECKING:
    import httpx
    from pydantic import ValidationError

__all__ = [
    "MAX_ARGS_DEPTH",
    "MAX_RESULT_DEPTH",
    "BatchScope",
    "Engine",
    "ToolCall",
    "scrub",
    "validation_message",
]

TOOL_NOT_FOUND = "Tool not found"
# Marks an outcome the caller's grant decided ("refused" / "approval"); recorded in the audit row as
# `grant`, never sent to the caller.
GRANT_MARK = "__grant__"
# Arguments nested deeper than this are refused before validation (pydantic, the handler and every
# later walk recurse); results deeper than this become an error, so no walk over them can overflow.
MAX_ARGS_DEPTH = 32
MAX_RESULT_DEPTH = 128
# Walks over a call's arguments or result look at this many values on the event loop (a few ms);
# past it the walk is redone on a thread, so a 4 MB body of small values never holds the loop.
LOOP_VALUES = 20_000


@dataclass(frozen=True, slots=True)
class ToolCall:
    tool: str
    args: dict[str, Any] = field(repr=False)  # {{vault:}} values substituted: see `written`
    ref_id: str | None = None
    # Secret values substituted into args, scrubbed from anything the call returns or records.
    secrets: tuple[str, ...] = field(default=(), repr=False)
    # An outcome decided before the pipeline (a bad {{step:}} / {{vault:}} ref): the call is
    # audited like any other, but never reaches validation or the handler.
    refused: dict[str, Any] | None = None
    # Whether this call's own arguments held a {{vault:}} ref (compose passes every earlier step's
    # secrets in `secrets` too, for scrubbing).
    uses_vault: bool = False
    # The arguments as the agent wrote them, {{step:}} refs resolved and {{vault:}} refs not: what an
    # approval binds to and shows (None: `args`, which hold no secret).
    written: Any = None


def validation_message(exc: ValidationError) -> str:
    """Pydantic errors as one line that names each failing path and what was expected."""
    parts = []
    for err in exc.errors(include_url=False):
        path = ".".join(str(p) for p in err["loc"]) or "(root)"
        parts.append(f"{path}: {err['msg']}")
    return "; ".join(parts)


class _Context:
    """The ToolContext a handler receives (see workbench.tools.ToolContext).

    `preset` is a credential not (yet) stored: connecting probes it before anything is written, so
    nothing is refreshed for it either.
    """

    def __init__(
        self,
        engine: Engine,
        user: User,
        manifest: Manifest,
        conn: Connection | None,
        *,
        preset: dict[str, Any] | None = None,
        vault_values: tuple[str, ...] = (),
    ) -> None:
        self.user_id = user.id
        # The {{vault:}} values resolved into this call's arguments: a built-in tool that keeps state
        # a later call can read (the browser page) remembers them to redact them there too.
        self.vault_values = vault_values
        self._user = user
        self.integration = manifest.name
        self.manifest = manifest
        self.signal: CancelSignal | None = None
        self.emit: EmitFn | None = None
        self._engine = engine
        self._conn = conn
        self._preset = preset is not None
        self._cred: dict[str, Any] | None = preset
        self._clients: dict[TokenKind, httpx.AsyncClient] = {}
        self.reconnect: ReconnectRequired | None = None

    @property
    def user(self) -> User:
        return self._user

    async def credential(self) -> dict[str, Any]:
        if self._cred is None:
            self._cred = await self._noting_reconnect(
                self._engine.credentials.access(self.manifest, self.user_id, self._conn)
            )
        return self._cred

    async def _credential_for(self, kind: TokenKind) -> dict[str, Any]:
        if kind == "access" or self._preset:
            return await self.credential()
        # The user token has its own expiry: checked (and refreshed) on its own.
        self._cred = await self._noting_reconnect(
            self._engine.credentials.access(self.manifest, self.user_id, self._conn, kind=kind)
        )
        return self._cred

    async def _noting_reconnect(self, pending: Awaitable[dict[str, Any]]) -> dict[str, Any]:
        """A refusal for good is the execution's answer (NOT_CONNECTED with its reason), however
        the tool handled the exception."""
        try:
            return await pending
        except ReconnectRequired as exc:
            self.reconnect = exc
            raise

    async def get_token(self, kind: TokenKind = "access") -> str:
        cred = await self._credential_for(kind)
        if not isinstance(self.manifest.auth, OAuth2Auth):
            return str(next(iter(cred.values()), ""))  # an API key's first field
        token = token_of(cred, kind)
        if token is None:
            raise CredentialError(
                self.integration,
                f"{self.integration} has no {kind} token for this connection. "
                f"Use connect('{self.integration}') to reconnect.",
            )
        return token

    def http_as(self, kind: TokenKind) -> httpx.AsyncClient:
        client = self._clients.get(kind)
        if client is None:
            engine, manifest = self._engine, self.manifest

            async def headers() -> tuple[dict[str, str], str | None]:
                cred = await self._credential_for(kind)
                return engine.credentials.headers_for(manifest, cred, kind), token_of(cred, kind)

            async def retry(response: httpx.Response, sent: str) -> dict[str, str] | None:
                if self._preset or not await engine.credentials.rejects(manifest, response):
                    return None
                fresh = await self._noting_reconnect(
                    engine.credentials.after_rejection(manifest, self.user_id, sent, kind=kind)
                )
                self._cred = fresh
                if token_of(fresh, kind) in (None, sent):
                    return None
                return engine.credentials.headers_for(manifest, fresh, kind)

            base = None
            if isinstance(manifest.auth, OAuth2Auth) and manifest.auth.base_url_field:
                field_name = manifest.auth.base_url_field

                async def base() -> str:
                    url = str((await self.credential()).get(field_name) or "")
                    parts = urlsplit(url)
                    if parts.scheme != "https" or not parts.hostname:
                        raise CredentialError(
                            manifest.name,
                            f"The {manifest.display_name} connection has no {field_name}; "
                            f"reconnect {manifest.display_name}.",
                        )
                    return url

            from workbench.connections.upstream_auth import InjectedAuth

            auth = InjectedAuth(
                headers, retry=retry if isinstance(manifest.auth, OAuth2Auth) else None, base=base
            )
            client = self._clients[kind] = engine.http_client(manifest, auth)
        return client

    @property
    def http(self) -> httpx.AsyncClient:
        return self.http_as("access")

    @property
    def services(self) -> Any:
        """Engine-side services for built-in tools only (jots, vault, browser)."""
        if not self.manifest.builtin:
            # A plugin must never reach the user's stores or logged-in browser.
            raise AttributeError("services are only available to built-in tools")
        return self._engine.builtin_services


class BatchScope:
    """Per-batch memo and audit buffer: one connection read per integration, however many
    executions use it, and every execution's audit row kept for the batch's one audit write.
    (A plain class: every cold start builds this module's classes, a dataclass costs about 1 ms.)"""

    __slots__ = ("_conns", "_locks", "events", "looked_up", "principal")

    def __init__(
        self,
        principal: Principal,
        connections: dict[str, Connection | None] | None = None,
        looked_up: dict[str, tuple[Tool, Manifest]] | None = None,
    ) -> None:
        self.principal = principal
        self._conns = {} if connections is None else connections  # integration -> row, read already
        # tool name -> its lookup, made already (the key's check rode with it): served once.
        self.looked_up = {} if looked_up is None else looked_up
        self._locks: dict[str, asyncio.Lock] = {}
        self.events: list[dict[str, Any]] = []

    async def connection(
        self, integration: str, read: Callable[[], Awaitable[Connection | None]]
    ) -> Connection | None:
        async with self._locks.setdefault(integration, asyncio.Lock()):
            if integration not in self._conns:
                self._conns[integration] = await read()
            return self._conns[integration]


ExtraToolLookup = Callable[[Principal, str], Awaitable[tuple[Tool, Manifest] | None]]


class ApprovalGate(Protocol):
    async def gate(
        self,
        principal: Principal,
        tool: Tool,
        manifest: Manifest,
        annotations: Mapping[str, Any],
        call: ToolCall,
    ) -> dict[str, Any] | None:
        """None when this exact call was approved (the approval is used up); else the item's answer."""
        ...


class Engine:
    def __init__(
        self,
        registry: Registry,
        credentials: Credentials,
        audit: AuditStore,
        metrics: Metrics,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        transport_factory: Callable[[], httpx.AsyncBaseTransport] | None = None,
        concurrency: int = 8,
        clock: Callable[[], float] = time.time,
        builtin_services: Any = None,
        store_io: BlockingPool | None = None,
        audit_fallback: Callable[[list[dict[str, Any]]], None] | None = None,
        read_together: Callable[..., Snapshot] | None = None,
    ) -> None:
        self.registry = registry
        # Stores.read_together: a batch's connections, and a lapsed API key's check, in one read.
        self.read_together = read_together
        self._secret_names: dict[str, frozenset[str]] = {}  # tool name -> its secret arguments
        self.credentials = credentials
        self.audit = audit
        self.metrics = metrics
        self.concurrency = concurrency
        self.clock = clock
        self.builtin_services = builtin_services
        self.extra_lookups: list[ExtraToolLookup] = []  # custom apps / external servers
        # Holds writes of `approve` grants until their user approves them (set by the composition root).
        self.approvals: ApprovalGate | None = None
        self._transport = transport
        self._transport_factory = transport_factory
        self._shared_transport: httpx.AsyncBaseTransport | None = None
        # Sync tools run here, off the event loop: one thread per concurrent execution of a batch.
        self.tool_pool = BlockingPool(concurrency, "workbench-tool")
        # Blocking store calls run in their own pool, so eight blocking tools never starve them.
        self.store_io = store_io or BlockingPool(concurrency, "workbench-store")
        # Where audit rows the store did not take in time go (AWS: the audit queue, re-driven).
        self.audit_fallback = audit_fallback
        # Audit rows of requests that finish together share one store write (group commit).
        self.audit_writes = GroupWrite(self.write_audit, self.store_io)

    def http_client(self, manifest: Manifest, auth: httpx.Auth) -> httpx.AsyncClient:
        import httpx

        from workbench.guard.plain_errors import PlainErrors
        from workbench.guard.shared_http import SharedTransport

        if self._shared_transport is None:
            # Plain words for network failures: their OS wording would reach the agent and the portal.
            inner = self._transport or (self._transport_factory() if self._transport_factory else None)
            # Shared by every execution's client: a tool that closes its client leaves it open.
            self._shared_transport = SharedTransport(
                PlainErrors(inner or httpx.AsyncHTTPTransport(retries=1))
            )
        return _plugin_client()(
            manifest.name,
            base_url=manifest.base_url,
            auth=auth,
            transport=self._shared_transport,
            # 25 s per upstream call, shrunk to what is left of the request's deadline.
            timeout=deadline.upstream_timeout(25.0, connect=5.0),
            headers={"User-Agent": "workbench/0.1", "Accept": "application/json"},
        )

    # -- batch -----------------------------------------------------------------------------------

    @asynccontextmanager
    async def batch(self, principal: Principal, tools: Sequence[str] = ()) -> AsyncIterator[BatchScope]:
        """A scope for one request's executions; their audit rows are written in one go when it
        closes, also when the request is cut short (a deadline, a client gone).

        Nothing runs on a key taken on trust: a principal with a KeyRecheck is settled here first
        (AuthError), in one read with the stored connections the calls of `tools` will need."""
        scope = BatchScope(principal) if principal.recheck is None else await self._checked(principal, tools)
        try:
            yield scope
        finally:
            if scope.events:
                await self.audit_writes.write(scope.events)

    async def _checked(self, principal: Principal, tools: Sequence[str]) -> BatchScope:
        """The scope of a batch whose caller's key is due for its check (KeyRecheck): the key, its
        user and the stored connections of the calls' integrations read together, off the loop;
        with no such connection to read, the first custom-app tool's lookup carries the check
        (its first batch read). Settled before the scope exists, so before anything runs."""
        recheck = principal.recheck
        assert recheck is not None
        user_id = principal.user.id
        wanted: list[tuple[str, str]] = []
        elsewhere: list[str] = []  # not a plugin's: a custom app's (or no tool at all)
        for name in tools:
            tool = self.registry.find(name)
            manifest = self.registry.manifest(tool.integration) if tool is not None else None
            if manifest is not None and not isinstance(manifest.auth, NoAuth):
                wanted.append((user_id, manifest.name))
            elif tool is None:
                elsewhere.append(name)
        wanted = list(dict.fromkeys(wanted))
        read = self.read_together
        if not wanted and elsewhere and self.extra_lookups:
            name = elsewhere[0]
            hit = await self.lookup(principal, name)  # settles the check with its first read
            checked = await self.store_io.run(recheck.settle)  # no-op unless no read carried it
            return BatchScope(checked, looked_up={name: hit} if hit and checked.user.id == user_id else None)
        if read is None:
            return BatchScope(await self.store_io.run(recheck.settle))

        def check() -> tuple[Principal, Snapshot]:
            found = read(connections=wanted, **recheck.reads)
            return recheck.settle(found), found

        checked, found = await self.store_io.run(check)
        # Read for the key's holder: used only when the key is still theirs (it always is; a key
        # never changes owner, but nothing read for one user may serve another).
        if checked.user.id != user_id:
            return BatchScope(checked)
        return BatchScope(checked, {key[1]: found.connections.get(key) for key in wanted})

    def write_audit(self, events: list[dict[str, Any]]) -> None:
        """One write for a batch's rows, bounded in time by the store (`audit_write_seconds`). Rows
        the store did not take go to the audit fallback (the audit queue, written from there later;
        counted as deferred); rows nothing took are logged whole, as one error line, and counted as
        dropped, so no audit row vanishes unseen. The batch's answer is unaffected either way."""
        try:
            self.audit.append_many(events)
            return
        except AuditNotWritten as exc:
            left, cause = exc.events, exc.cause
        except Exception as exc:  # a failing audit store must not turn a finished batch into a crash
            left, cause = events, f"{type(exc).__name__}: {exc}"
        if self.audit_fallback is not None:
            try:
                self.audit_fallback(left)
            except Exception as exc:
                cause = f"{cause}; the audit queue refused them too ({type(exc).__name__}: {exc})"
            else:
                self.metrics.inc("workbench_audit_rows_deferred_total", {}, len(left))
                log_event("audit_write_deferred", error=cause, count=len(left))
                return
        self.metrics.inc("workbench_audit_rows_dropped_total", {}, len(left))
        log_error("audit_write_failed", error=cause, count=len(left), events=left)

    async def run_batch(self, principal: Principal, calls: Sequence[ToolCall]) -> list[dict[str, Any]]:
        """Run calls through a pool of `concurrency` workers; results index-aligned with calls."""
        results: list[dict[str, Any]] = [{} for _ in calls]
        next_index = iter(range(len(calls)))
        async with self.batch(principal, [c.tool for c in calls if c.refused is None]) as scope:

            async def worker() -> None:
                for i in next_index:  # each worker claims the next index and writes only there
                    results[i] = await self.run_one(scope, calls[i])

            workers = min(self.concurrency, len(calls))
            if workers == 1:
                await worker()  # one execution: no tasks to make
            else:
                await asyncio.gather(*(worker() for _ in range(workers)))
        return results

    async def run_one(
        self,
        scope: BatchScope,
        call: ToolCall,
        *,
        signal: CancelSignal | None = None,
        emit: EmitFn | None = None,
    ) -> dict[str, Any]:
        started = time.perf_counter()
        try:
            outcome, integration, audit_error, ran = await self._within_deadline(scope, call, signal, emit)
            outcome = dict(scrub(outcome, call.secrets))
            held_by = outcome.pop(GRANT_MARK, None)
        except Exception as exc:  # the engine never throws
            outage = as_unavailable(exc)  # a store or KMS outage says "try again", in plain words
            outcome, integration, audit_error, ran = (
                {"error": str(outage) if outage else f"Internal error: {type(exc).__name__}"},
                None,
                None,
                False,
            )
            held_by = None
        duration = time.perf_counter() - started
        success = "error" not in outcome
        error = audit_error if audit_error is not None else outcome.get("error")
        principal = scope.principal
        event: dict[str, Any] = {
            "action": "EXECUTE",
            "id": token_hex(8),  # the activity page opens one execution by it
            "user": principal.user.id,
            "tool": call.tool,
            "success": success,
            "error": scrub(error, call.secrets) if error is not None else None,
            "duration_ms": round(duration * 1000, 3),
            "ts": self.clock(),
            "via": principal.via,
            "args": audit_arguments(call.args, call.secrets, self._secret_argument_names(call.tool)),
        }
        # Which agent did it: the API key or OAuth client (ids; the page shows their names).
        if principal.via == "api_key" and principal.credential_id:
            event["key_id"] = principal.credential_id
        if principal.client_id:
            event["client_id"] = principal.client_id
        if integration is not None:
            event["integration"] = integration
        if held_by is not None:  # the caller's grant refused the call, or holds it for approval
            event["grant"] = held_by
        scope.events.append(event)  # written with the batch's other rows (see `batch`)
        if ran:
            labels = {"integration": integration or "", "tool": call.tool, "success": str(success).lower()}
            self.metrics.inc("workbench_tool_executions_total", labels)
            self.metrics.observe("workbench_tool_execution_duration_seconds", labels, duration)
            log_event(
                "tool_execution",
                # Only a call that carries secrets has anything to scrub (the walk is per string).
                scrub=(lambda line: _scrub_text(line, call.secrets)) if call.secrets else None,
                user=scope.principal.user.id,
                integration=integration,
                tool=call.tool,
                success=success,
                duration_ms=event["duration_ms"],
                error=event["error"],
            )
        return outcome

    def _secret_argument_names(self, tool_name: str) -> frozenset[str]:
        """The arguments of this tool that carry secrets (none known for a custom app's tool)."""
        known = self._secret_names.get(tool_name)
        if known is not None:
            return known
        try:
            tool = self.registry.find(tool_name)
            names = tool.secret_argument_names() if tool is not None else None
        except Exception:  # a module or schema that fails to load is reported by the pipeline itself
            return frozenset()
        if names is None:
            return frozenset()
        # Bounded by the registry's tools: unknown and custom-app names are never kept here.
        self._secret_names[tool_name] = names
        return names

    async def _within_deadline(
        self, scope: BatchScope, call: ToolCall, signal: CancelSignal | None, emit: EmitFn | None
    ) -> tuple[dict[str, Any], str | None, str | None, bool]:
        """The pipeline, stopped at the request's deadline: an execution that cannot start, or is cut
        short, is an error item like any other (the batch or compose still answers)."""
        pending = self.registry.unloaded(call.tool)
        if pending is not None and pending.auth.type != "none":
            # The tool's module is imported next, on the loop (a cold start's first call of a plugin:
            # the plugin and pydantic, 100 ms or more). The user's connection, which the pipeline
            # reads anyway, and the data key of its credential are read meanwhile in the store pool,
            # so their round trips overlap the import.
            ahead = asyncio.ensure_future(self._read_ahead(scope, pending))
            ahead.add_done_callback(_retrieved)
            await asyncio.sleep(0)  # the read is queued before the import holds the loop
        left = deadline.remaining()
        if left is None:
            return await self._pipeline(scope, call, signal, emit)
        known = self.registry.find(call.tool)  # for the audit record; custom apps are not looked up again
        integration = known.integration if known else None
        if left <= 0:
            return {"error": deadline.NOT_STARTED}, integration, None, False
        try:
            async with asyncio.timeout(left):
                return await self._pipeline(scope, call, signal, emit)
        except TimeoutError:
            return {"error": deadline.CUT_SHORT}, integration, None, True

    async def _connection(self, scope: BatchScope, manifest: Manifest) -> tuple[Connection | None, bool]:
        """The user's connection to `manifest` and whether it is usable: read once per batch, in the
        store pool (a cookie connection's check decrypts it)."""
        store, user_id = self.credentials.store, scope.principal.user.id
        conn = await scope.connection(
            manifest.name, lambda: self.store_io.run(store.get, user_id, manifest.name)
        )
        if conn is None or not isinstance(manifest.auth, CookieAuth):
            return conn, self.credentials.is_connected(manifest, conn)
        return conn, await self.store_io.run(self.credentials.is_connected, manifest, conn)

    async def _read_ahead(self, scope: BatchScope, manifest: Manifest) -> None:
        """The batch's read of the user's connection to `manifest` (kept for the pipeline), then the
        master-key call its credential's decryption makes (the data key waits in the cipher's
        cache), both in one store-pool job: the loop is busy importing. Nothing is refreshed, and
        nothing of the credential is decrypted here."""
        store, credentials, user_id = self.credentials.store, self.credentials, scope.principal.user.id
        unwrap = not isinstance(manifest.auth, NoAuth | CookieAuth)  # a cookie's check decrypts it anyway

        def read() -> Connection | None:
            conn = store.get(user_id, manifest.name)
            if unwrap and conn is not None and conn.status == "connected":
                with suppress(Exception):  # the credential's own decryption reports it
                    credentials.unwrap_ahead(conn)
            return conn

        await scope.connection(manifest.name, lambda: self.store_io.run(read))

    async def lookup(self, principal: Principal, name: str) -> tuple[Tool, Manifest] | None:
        found = self.registry.find(name)
        if found is not None:
            manifest = self.registry.manifest(found.integration)
            assert manifest is not None
            return found, manifest
        for extra in self.extra_lookups:
            hit = await extra(principal, name)
            if hit is not None:
                return hit
        return None

    async def _grant_gate(
        self, principal: Principal, tool: Tool, manifest: Manifest, call: ToolCall
    ) -> dict[str, Any] | None:
        """What the principal's grant answers instead of running the call (None: run it): a refusal
        sentence naming the grant, or, for an approve grant and a call that writes, the approval's
        answer until the user approved these exact arguments (workbench.engine.approvals)."""
        grant = principal.grant
        annotations = tool.annotations if tool.annotations is not None else manifest.annotations(tool.name)
        read_only = is_read_only(annotations)
        why = grant.refusal(
            tool.name, manifest.name, read_only, principal.grant_holder, principal.grant_change
        )
        if why is not None:
            return {"error": why, GRANT_MARK: "refused"}
        if not grant.writes_need_approval or read_only:
            return None
        if self.approvals is None:
            return {
                "error": f"{tool.name} needs its user's approval, and approvals are not available here.",
                GRANT_MARK: "refused",
            }
        held = await self.approvals.gate(principal, tool, manifest, annotations, call)
        return None if held is None else {**held, GRANT_MARK: "approval"}

    async def _pipeline(
        self, scope: BatchScope, call: ToolCall, signal: CancelSignal | None, emit: EmitFn | None
    ) -> tuple[dict[str, Any], str | None, str | None, bool]:
        """(outcome, integration, audit error override, whether the handler ran)."""
        hit = scope.looked_up.pop(call.tool, None) or await self.lookup(scope.principal, call.tool)
        if call.refused is not None:
            return dict(call.refused), (hit[1].name if hit else None), None, False
        if hit is None:
            return {"error": TOOL_NOT_FOUND}, None, None, False
        tool, manifest = hit
        if not scope.principal.grant.is_full:
            held = await self._grant_gate(scope.principal, tool, manifest, call)
            if held is not None:
                return held, manifest.name, None, False

        conn = None
        if manifest.auth.type != "none":
            conn, connected = await self._connection(scope, manifest)
            if not connected:
                if conn is not None and conn.status == "reconnect_required":
                    # The refused refresh's words, as its own call and every waiter on it got them.
                    message = str(ReconnectRequired(manifest.name, conn.last_error))
                else:
                    message = f"{manifest.name} not connected. Use connect('{manifest.name}') to connect."
                return _not_connected(manifest.name, message), manifest.name, None, False

        if tool.keeps_arguments and call.uses_vault:
            return (
                {
                    "error": f"{tool.name} cannot take a {{{{vault:}}}} value: it stores what it is given "
                    "where it can be read again (or shared), and a vault secret never leaves the vault "
                    "that way. Pass the text without the reference."
                },
                manifest.name,
                None,
                False,
            )
        args: Any = call.args
        audit_error: str | None = None
        too_deep = nesting_exceeds_within(call.args, MAX_ARGS_DEPTH, LOOP_VALUES)
        if too_deep is None:  # large arguments: the walk runs on a thread, the loop goes on
            too_deep = await self.tool_pool.run(nesting_exceeds, call.args, MAX_ARGS_DEPTH)
        if too_deep:
            return (
                {
                    "error": f"Invalid arguments for {tool.name}: (root): nested deeper than {MAX_ARGS_DEPTH} levels"
                },
                manifest.name,
                None,
                False,
            )
        if tool.input_model is not None:
            try:
                args = tool.input_model.model_validate(call.args)
            except Exception as exc:
                # pydantic is imported by now whenever this can be its error (a built-in tool's
                # arguments that passed without the model never import it).
                from pydantic import ValidationError

                if isinstance(exc, ValidationError):
                    return (
                        {"error": f"Invalid arguments for {tool.name}: {validation_message(exc)}"},
                        manifest.name,
                        None,
                        False,
                    )
                audit_error = (
                    f"SAFEPARSE_ERROR: {exc}"  # the schema itself is broken: run with the raw arguments
                )
                args = SimpleNamespace(**call.args)

        ctx: ToolContext = _Context(self, scope.principal.user, manifest, conn, vault_values=call.secrets)
        result = await tool.execute(
            args, signal, emit, ctx, pool=self.tool_pool
        )  # never raises: failures come back as text
        if not result.success:
            if isinstance(ctx, _Context) and ctx.reconnect is not None:
                return _not_connected(manifest.name, str(ctx.reconnect)), manifest.name, audit_error, True
            failed: dict[str, Any] = {"error": result.text}
            if result.retry_after is not None:  # a provider's rate limit: when to try again
                failed["retry_after"] = result.retry_after
            return failed, manifest.name, audit_error, True
        too_deep = nesting_exceeds_within(result.json, MAX_RESULT_DEPTH, LOOP_VALUES)
        if too_deep is None:
            too_deep = await self.tool_pool.run(nesting_exceeds, result.json, MAX_RESULT_DEPTH)
        if too_deep:
            return (
                {"error": f"The result of {tool.name} is nested deeper than {MAX_RESULT_DEPTH} levels"},
                manifest.name,
                audit_error,
                True,
            )
        return {"result": result.json}, manifest.name, audit_error, True


def _retrieved(task: asyncio.Future[None]) -> None:
    """A read ahead that failed: the pipeline's own read (made again) reports it."""
    if not task.cancelled():
        task.exception()


def _not_connected(integration: str, message: str) -> dict[str, Any]:
    """The one error shape with extra fields: the agent's cue to call connect."""
    return {"error": "NOT_CONNECTED", "integration": integration, "message": message}


@functools.cache
def _plugin_client() -> Callable[..., httpx.AsyncClient]:
    """The client class a plugin's tools send through (made on first use: httpx loads lazily). A
    path a tool built from its arguments (`f"/repos/{args.owner}/{args.repo}"`) is refused when an
    argument put a dot segment in it: normalised away, `..` would reach another endpoint of the
    provider's API. One check for every plugin, whatever its tools interpolate."""
    import httpx

    from workbench.errors import RateLimited
    from workbench.guard.paths import DOT_SEGMENT_MESSAGE, path_has_dot_segment
    from workbench.guard.rate_limits import MAX_RETRY_WAIT, rate_limit

    class PluginClient(httpx.AsyncClient):
        def __init__(self, integration: str, **options: Any) -> None:
            super().__init__(**options)
            self.integration = integration

        def build_request(self, method: str, url: httpx.URL | str, **kwargs: Any) -> httpx.Request:
            if path_has_dot_segment(str(url)):
                raise ValueError(f"Invalid arguments: {DOT_SEGMENT_MESSAGE}")
            return super().build_request(method, url, **kwargs)

        async def send(self, request: httpx.Request, **kwargs: Any) -> httpx.Response:
            """Every provider's rate limit, one way: retried once after the wait it names when that
            fits the request's deadline; otherwise RateLimited, whose `retry_after` the answer carries."""
            read = not kwargs.get("stream", False)
            response = await super().send(request, **kwargs)
            limit = rate_limit(response, read=read)
            if limit is None:
                return response
            await response.aclose()
            left = deadline.remaining()
            budget = min(MAX_RETRY_WAIT, left - 2.0 if left is not None else MAX_RETRY_WAIT)
            if not limit.named or limit.wait > budget:
                raise RateLimited(self.integration, limit.retry_after, limit.detail)
            await asyncio.sleep(limit.wait)
            response = await super().send(request, **kwargs)
            again = rate_limit(response, read=read)
            if again is None:
                return response
            await response.aclose()
            raise RateLimited(self.integration, again.retry_after, again.detail)

    return PluginClient


# Argument names whose values are credentials an agent typed in: never kept in the audit.
_SECRET_NAME = re.compile(
    r"pass(word|phrase)?|secret|token|api[_-]?key|authorization|credential|cookie", re.I
)
AUDIT_ARGS_CHARS = 2000  # what one audit row keeps of a call's arguments


# Built-in tools that take secrets literally in their arguments (vault_set's value, an app's auth
# value): what they were given is masked wherever arguments are recorded or shown.
LITERAL_SECRET_TOOLS = ("vault_", "apps_")
_SECRET_KEY = re.compile(r"value|secret|token|password|auth|key|credential|header", re.I)
_VAULT_REF = re.compile(r"^\{\{vault:[A-Za-z0-9_.-]+\}\}$")
MASK = "••••••"


def mask_literal_secrets(value: Any, *, under_secret: bool = False) -> Any:
    """Arguments of a tool that takes secrets literally, every string under a secret-like key masked
    (a {{vault:NAME}} reference stays: it names the secret, it is not one)."""
    if isinstance(value, dict):
        return {
            k: mask_literal_secrets(v, under_secret=under_secret or bool(_SECRET_KEY.search(str(k))))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [mask_literal_secrets(v, under_secret=under_secret) for v in value]
    if under_secret and isinstance(value, str) and not _VAULT_REF.match(value):
        return MASK
    return value


def audit_arguments(args: Any, secrets: Sequence[str], secret_names: Collection[str] = ()) -> str:
    """A call's arguments as the audit keeps them: vault values, the tool's secret arguments (its
    schema's writeOnly / password fields, `secret_names`) and secret-looking names redacted, compact
    JSON, at most AUDIT_ARGS_CHARS characters (cut with "…")."""

    # Only the first AUDIT_ARGS_CHARS characters are kept, so only that much is copied: the walk
    # stops once what it kept is sure to print longer (`size` never counts more than json.dumps
    # prints: a string is at least its length and quotes, a number or literal at least one character
    # and a separator), and a long string is cut after its secrets are replaced. Large arguments
    # (a 4 MB body of small values) cost the event loop nothing more than small ones.
    enough = AUDIT_ARGS_CHARS + 16
    size = 0

    def keep(value: Any) -> Any:
        nonlocal size
        if isinstance(value, str):
            text = _scrub_text(value, secrets) if secrets else value
            text = text[: max(enough - size, 0)]
            size += len(text) + 2
            return text
        if isinstance(value, dict):
            out: dict[str, Any] = {}
            size += 1
            for k, v in value.items():
                if size >= enough:
                    break
                key = _scrub_text(str(k), secrets) if secrets else str(k)
                size += len(key) + 3
                secret = k in secret_names or _SECRET_NAME.search(str(k))
                out[key] = "[REDACTED]" if secret else keep(v)
                size += 12 if secret else 0
            return out
        if isinstance(value, list):
            items: list[Any] = []
            size += 1
            for v in value:
                if size >= enough:
                    break
                items.append(keep(v))
            return items
        size += 2
        return value

    text = json.dumps(keep(args), ensure_ascii=False, default=str, separators=(",", ":"))
    return text if len(text) <= AUDIT_ARGS_CHARS else text[: AUDIT_ARGS_CHARS - 1] + "…"


def _scrub_text(text: str, secrets: Sequence[str]) -> str:
    for secret in secrets:
        if secret:
            text = text.replace(secret, "[REDACTED]")
    return text


def scrub(value: Any, secrets: Sequence[str]) -> Any:
    """`value` with every (non-empty) secret replaced by [REDACTED], keys included, at any depth."""
    if not secrets:
        return value
    if isinstance(value, str):
        return _scrub_text(value, secrets)
    if isinstance(value, dict):
        return {scrub(k, secrets): scrub(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub(v, secrets) for v in value]
    return value
