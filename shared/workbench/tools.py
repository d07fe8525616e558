"""The tool definition API for plugin authors (the Python counterpart of seed 002).

A tool is a name, a description, an input model (its JSON Schema is derived from the model) and an
execute function, sync or async. The model is an `ArgsModel` (workbench.models: declared as a
pydantic model is, pydantic imported only for an input its fast check cannot take), or a pydantic
`BaseModel`:

    class ListPrs(ArgsModel):
        owner: str
        repo: str
        state: Literal["open", "closed", "all"] = "open"

    @tool("github_list_prs", "List pull requests of a repository.", ListPrs)
    async def list_prs(args: ListPrs, ctx: ToolContext) -> Any:
        return (await ctx.http.get(f"/repos/{args.owner}/{args.repo}/pulls")).json()

A tool whose arguments are plain strings, integers and booleans can declare them without pydantic,
`Arguments("ListPrs", Arg("owner", str), Arg("limit", int, default=30, ge=1, le=100))`
(workbench.arguments): its first call on a cold start then never imports pydantic, and every
input the fast check cannot accept as it is goes through the equivalent pydantic model, so what is
accepted, refused and said is the model's.

A sync execute function runs in a thread (the engine's pool for sync tools), never on the event
loop, so a slow one holds up neither the rest of its batch nor other requests.

An integration is declared by a `Manifest` in its package's `__init__` (with its auth: `NoAuth`,
`ApiKeyAuth` + `ApiKeyField`, `OAuth2Auth` + `LoginHosts`/`TokenRejected`, `CookieAuth`; a `Probe`;
`Hint`s for tools whose name says less than what they do); those are importable from here too, so
`workbench.tools` and `workbench.sdk` are the whole plugin API (docs/plugins.md).

`Tool.execute(input, signal, emit)` always returns a `ToolResult` and never raises: a pre-aborted
signal skips the function, an abort mid-flight wins the race even if the function ignores it, an
abort that lands after the function resolved still wins, and an exception becomes
`{success: False, json: None, text: <error text>}`.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from workbench.annotations import Hint
from workbench.arguments import Arg, Arguments
from workbench.errors import WorkbenchError
from workbench.manifest import (
    ApiKeyAuth,
    ApiKeyField,
    CookieAuth,
    LoginHosts,
    Manifest,
    NoAuth,
    OAuth2Auth,
    Probe,
    TokenRejected,
)
from workbench.models import ArgsModel, Field, secret_names

if TYPE_CHECKING:
    import httpx
    from pydantic import BaseModel
    from typing_extensions import TypeIs

    from workbench.engine.blocking import BlockingPool
    from workbench.stores import User

__all__ = [
    "ApiKeyAuth",
    "ApiKeyField",
    "Arg",
    "ArgsModel",
    "Arguments",
    "CancelSignal",
    "CookieAuth",
    "EmitFn",
    "Field",
    "Hint",
    "LoginHosts",
    "Manifest",
    "NoAuth",
    "OAuth2Auth",
    "Probe",
    "TokenKind",
    "TokenRejected",
    "Tool",
    "ToolContext",
    "ToolResult",
    "argument_text",
    "error_text",
    "tool",
]

EmitFn = Callable[[Any], None]


@dataclass(frozen=True, slots=True)
class ToolResult:
    """`success` is true when the execute function returned; `json` is its value (None on failure)."""

    success: bool
    json: Any
    text: str
    # A failure from a provider's rate limit: seconds until a retry may succeed (the answer's field).
    retry_after: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"success": self.success, "json": self.json, "text": self.text}


class CancelSignal:
    """An AbortSignal: `abort(reason)` once; observers read `aborted`/`reason` or await `wait()`."""

    __slots__ = ("_event", "_reason", "aborted")

    def __init__(self) -> None:
        self.aborted = False
        self._reason: Any = None
        self._event: asyncio.Event | None = None

    @property
    def reason(self) -> Any:
        return self._reason

    def abort(self, reason: Any = None) -> None:
        if self.aborted:
            return
        self.aborted = True
        self._reason = reason
        if self._event is not None:
            self._event.set()

    async def wait(self) -> None:
        if self._event is None:
            self._event = asyncio.Event()
            if self.aborted:
                self._event.set()
        await self._event.wait()

    def reason_text(self) -> str:
        return "Aborted" if self._reason is None else str(self._reason)


def error_text(exc: BaseException) -> str:
    """Seed 002's error-to-text table, in Python terms.

    An exception with a message gives the message; one with an empty message (or none) gives '';
    a non-string value carried by the exception (Python's closest thing to `throw 42`) gives
    `str(value)`.
    """
    if not exc.args:
        return ""
    if len(exc.args) == 1:
        value = exc.args[0]
        return value if isinstance(value, str) else str(value)
    return str(exc)


# Which of a connection's tokens a request uses: the integration's usual one, or the token a
# provider issues for the person themselves next to it (Slack's user token, `authed_user`).
TokenKind = Literal["access", "user"]


class ToolContext(Protocol):
    """What an execute function receives besides its arguments (plugins type `ctx` with it).

    The credential never appears in a tool's arguments or results: `http` injects it per request,
    refreshes it first when it is about to expire, and, when the provider answers that the token is
    no longer valid (the manifest's `token_rejected`), refreshes it once and retries the request once.
    """

    user_id: str
    integration: str
    signal: CancelSignal | None
    emit: EmitFn | None

    @property
    def user(self) -> User:
        """The Workbench user the tool runs for."""
        ...

    @property
    def http(self) -> httpx.AsyncClient:
        """An HTTP client for the integration's API (its base URL) with the user's credential injected."""
        ...

    def http_as(self, kind: TokenKind) -> httpx.AsyncClient:
        """Like `http`, with the connection's `kind` token injected (`"user"`: the person's own token)."""
        ...

    async def get_token(self, kind: TokenKind = "access") -> str:
        """The current token of that kind (refreshed first if it expires soon)."""
        ...

    async def credential(self) -> Mapping[str, Any]:
        """The whole stored credential: API-key fields, or the token response's kept fields
        (e.g. Salesforce's `instance_url`). Read-only."""
        ...


ExecuteFn = Callable[..., Any]


def _declared(model: Any) -> TypeIs[Arguments | type[ArgsModel]]:
    """An input model that answers for itself, importing pydantic only when it must: `Arguments`,
    or an `ArgsModel` class."""
    return isinstance(model, Arguments) or (isinstance(model, type) and issubclass(model, ArgsModel))


@dataclass(slots=True)
class Tool:
    """A tool: name, description, input model (or a raw JSON Schema) and an execute function.

    `execute` is called as `fn(args, ctx)`; `ctx` may be None when a tool is run on its own.
    A raw `parameters` schema (no pydantic model) passes through `json_schema()` unchanged and the
    function then receives the arguments as a dict.
    """

    name: str
    description: str
    fn: ExecuteFn
    # A pydantic model, an `ArgsModel` class (workbench.models: the shipped plugins) or `Arguments`
    # (workbench.arguments: the built-in tools); the last two import pydantic only when needed.
    input_model: type[BaseModel] | type[ArgsModel] | Arguments | None = None
    parameters: dict[str, Any] | None = None
    integration: str = ""
    # OAuth scopes the tool needs for every argument value its schema offers; the catalog test
    # checks they are all requested by the integration's manifest.
    scopes: tuple[str, ...] = ()
    # Search keywords: the everyday words users say for this action and object that the name and
    # description do not already use ("money back" for a refund); search_tools indexes them.
    keywords: tuple[str, ...] = ()
    # MCP annotations (title, readOnlyHint, destructiveHint, idempotentHint, openWorldHint): set by
    # the registry from the manifest (workbench.annotations), or by a custom app's server.
    annotations: dict[str, Any] | None = None
    # The tool stores what it is given where it can be read again later (a jot, and its share link):
    # the engine refuses a call whose arguments hold a resolved {{vault:}} value, so a secret never
    # leaves the vault through it (scrubbing covers only the answer of the call that resolved it).
    keeps_arguments: bool = False
    _schema: dict[str, Any] | None = field(default=None, repr=False)
    _arity: int | None = field(default=None, repr=False)  # positional parameters fn takes
    _is_async: bool = field(default=False, repr=False)

    def json_schema(self) -> dict[str, Any]:
        if self._schema is None:
            if _declared(self.input_model):
                self._schema = self.input_model.json_schema()
            elif self.input_model is not None:
                from workbench.engine.schema import portable_schema

                self._schema = portable_schema(self.input_model)
            else:
                self._schema = self.parameters or {"type": "object", "properties": {}}
        return self._schema

    def secret_argument_names(self) -> frozenset[str]:
        """Names of the arguments that carry a secret: schema properties marked `writeOnly` (pydantic:
        `Field(json_schema_extra={"writeOnly": True})`) or `format: password`, at any depth. The audit
        keeps every argument of that name redacted."""
        if _declared(self.input_model):
            return self.input_model.secret_names()  # told by the declaration where it can be
        return secret_names(self.json_schema())

    def argument_text(self) -> str:
        """Each argument's name and description, for search (cheap: no JSON Schema is built)."""
        if _declared(self.input_model):
            return self.input_model.argument_text()
        if self.input_model is not None:
            fields = self.input_model.model_fields.items()
            return " ".join(f"{name} {f.description or ''}" for name, f in fields)
        return argument_text(self.parameters or {})

    async def execute(
        self,
        input: Any,
        signal: CancelSignal | None = None,
        emit: EmitFn | None = None,
        ctx: ToolContext | None = None,
        *,
        pool: BlockingPool | None = None,
    ) -> ToolResult:
        """Run the function; always returns a ToolResult (see the module docstring). A sync
        function runs in `pool` (the engine's), or in asyncio's default thread pool."""
        if signal is not None and signal.aborted:
            return _aborted(signal)
        if ctx is not None:
            ctx.signal, ctx.emit = signal, emit
        try:
            if signal is None:
                value = await self._call(input, ctx, emit, pool)
            else:
                value = await _race(self._call(input, ctx, emit, pool), signal)
        except _Aborted:
            return _aborted(signal)
        except Exception as exc:
            if signal is not None and signal.aborted:
                return _aborted(signal)
            return ToolResult(False, None, _failure_text(exc), _retry_after(exc))
        if signal is not None and signal.aborted:
            return _aborted(signal)  # aborted after the function resolved
        if isinstance(value, ToolResult):
            return value
        return ToolResult(True, value, _summary(value))

    async def _call(
        self, input: Any, ctx: ToolContext | None, emit: EmitFn | None, pool: BlockingPool | None
    ) -> Any:
        fn = self.fn
        if self._arity is None:  # inspect.signature is slow: once per tool, not once per call
            self._arity = max(_positional_count(fn), 1)
            self._is_async = inspect.iscoroutinefunction(fn)
        call_args: tuple[Any, ...] = (input, ctx, emit)[: self._arity]
        if self._is_async:
            return await fn(*call_args)
        if pool is not None:
            value = await pool.run(fn, *call_args)
        else:
            value = await asyncio.to_thread(fn, *call_args)
        if inspect.isawaitable(value):  # a sync function that returned a coroutine
            return await value
        return value


def argument_text(schema: Mapping[str, Any]) -> str:
    """Each top-level argument of a JSON Schema, its name and description, for search."""
    props = schema.get("properties")
    if not isinstance(props, Mapping):
        return ""
    return " ".join(
        f"{name} {spec.get('description', '') if isinstance(spec, Mapping) else ''}"
        for name, spec in props.items()
    )


def _failure_text(exc: Exception) -> str:
    """error_text, except that a timeout says so and names the limit (httpx's own text is empty)."""
    from workbench.errors import UpstreamTimeout, as_unavailable, upstream_timeout

    outage = as_unavailable(exc)
    if outage is not None:  # the store or KMS: "try again", never the AWS message
        return str(outage)
    text = error_text(exc)
    timed_out = upstream_timeout(exc)
    if timed_out is None:
        return text
    # The tool's own wording wins when it wrapped the timeout in a message of its own.
    own = text and not isinstance(exc, UpstreamTimeout) and type(exc).__module__.split(".")[0] != "httpx"
    return text if own else str(timed_out)


def _retry_after(exc: Exception) -> int | None:
    from workbench.errors import RateLimited

    return exc.retry_after if isinstance(exc, RateLimited) else None


class _Aborted(WorkbenchError):
    pass


def _aborted(signal: CancelSignal | None) -> ToolResult:
    text = signal.reason_text() if signal is not None else "Aborted"
    return ToolResult(False, None, text)


async def _race(work: Awaitable[Any], signal: CancelSignal) -> Any:
    task = asyncio.ensure_future(work)
    waiter = asyncio.ensure_future(signal.wait())
    try:
        done, _ = await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
    if task in done:
        return task.result()
    task.cancel()  # the function may ignore the signal; its eventual value is discarded
    raise _Aborted


def _positional_count(fn: Callable[..., Any]) -> int:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 2
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return 3
    return sum(1 for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))


def _summary(value: Any) -> str:
    if isinstance(value, str):
        return value
    return "ok"


def tool(
    name: str,
    description: str,
    input_model: type[BaseModel] | type[ArgsModel] | Arguments | None = None,
    *,
    parameters: dict[str, Any] | None = None,
    scopes: tuple[str, ...] = (),
    keywords: tuple[str, ...] = (),
    keeps_arguments: bool = False,
) -> Callable[[ExecuteFn], Tool]:
    """Decorator: turn an execute function into a `Tool`."""

    def wrap(fn: ExecuteFn) -> Tool:
        return Tool(
            name=name,
            description=description,
            fn=fn,
            input_model=input_model,
            parameters=parameters,
            scopes=scopes,
            keywords=keywords,
            keeps_arguments=keeps_arguments,
        )

    return wrap
