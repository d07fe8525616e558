"""Request bodies are capped while they stream in, on every surface (limits before work).

`BodyLimit` wraps each request's ASGI `receive`: a declared Content-Length over the cap fails the
first read, and a body (chunked or not) fails as soon as its running size passes the cap, so no
handler ever holds more than the cap and nothing larger is buffered. The failure is `BodyTooLarge`,
which each surface renders in its own documented shape with status 413: every surface declares a
`BodyRule` (path prefix, cap, renderer) next to its routes, and `guarded_app` puts the rules, the
middleware and the exception handler on one Starlette app.

A handler that reads no body never triggers the cap (its route answers as usual), and one that
checks something first (the REST API key, the proxy token) keeps that order.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from workbench.errors import InvalidInput
from workbench.guard.jsontext import dumps

if TYPE_CHECKING:  # Starlette is imported where an app or a response is made, not with the guard
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import BaseRoute
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["DEFAULT_LIMIT", "BodyLimit", "BodyRule", "BodyTooLarge", "guarded_app", "json_413", "size_text"]

DEFAULT_LIMIT = 64 * 1024  # forms, OAuth endpoints and anything without a rule of its own


def size_text(limit: int) -> str:
    if limit % (1024 * 1024) == 0:
        return f"{limit // (1024 * 1024)} MiB"
    if limit % 1024 == 0:
        return f"{limit // 1024} KiB"
    return f"{limit} bytes"


class BodyTooLarge(InvalidInput):
    def __init__(self, limit: int) -> None:
        super().__init__(f"Request body too large (max {size_text(limit)})")
        self.limit = limit


Render = Callable[["Request", BodyTooLarge], "Response"]


class BodyRule:
    """Requests whose path is `prefix` or lies below it (`/mcp`, `/rest/`) read at most `limit`.
    (A plain class: every cold start builds this module's classes, a dataclass costs about 1 ms.)"""

    __slots__ = ("limit", "prefix", "render")

    def __init__(self, prefix: str, limit: int, render: Render) -> None:
        self.prefix, self.limit, self.render = prefix, limit, render

    def matches(self, path: str) -> bool:
        if self.prefix.endswith("/"):
            return path.startswith(self.prefix)
        return path == self.prefix or path.startswith(self.prefix + "/")


def json_413(body: Callable[[BodyTooLarge], dict[str, Any]], headers: dict[str, str] | None = None) -> Render:
    """A renderer answering 413 with the JSON body `body(exc)`."""

    def render(request: Request, exc: BodyTooLarge) -> Response:
        from starlette.responses import Response

        return Response(dumps(body(exc)), 413, headers=headers, media_type="application/json")

    return render


_DEFAULT = BodyRule("/", DEFAULT_LIMIT, json_413(lambda exc: {"error": str(exc)}))


def _rule_for(rules: Sequence[BodyRule], path: str) -> BodyRule:
    found = [r for r in rules if r.matches(path)]
    return max(found, key=lambda r: len(r.prefix)) if found else _DEFAULT


def _declared_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None  # the server refuses a malformed length itself
    return None


class BodyLimit:
    """ASGI middleware: the body of each HTTP request is counted as it is received."""

    def __init__(self, app: ASGIApp, rules: Sequence[BodyRule]) -> None:
        self.app = app
        self.rules = tuple(rules)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = _rule_for(self.rules, scope["path"]).limit
        declared = _declared_length(scope)
        received = 0
        tripped = False

        async def capped_receive() -> Message:
            nonlocal received, tripped
            if declared is not None and declared > limit:
                tripped = True
                raise BodyTooLarge(limit)  # refused before a byte of it is read
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    tripped = True
                    raise BodyTooLarge(limit)
            return message

        async def closing_send(message: Message) -> None:
            if tripped and message["type"] == "http.response.start":
                # The rest of the body will not be read: close rather than drain it for keep-alive.
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"connection"]
                message = {**message, "headers": [*headers, (b"connection", b"close")]}
            await send(message)

        await self.app(scope, capped_receive, closing_send)


def guarded_app(
    routes: Sequence[BaseRoute], rules: Sequence[BodyRule], *, middleware: Sequence[Middleware] = ()
) -> Starlette:
    """A Starlette app serving `routes` with every request body capped by `rules` (inside any
    `middleware` given, e.g. the request deadline)."""
    from starlette.applications import Starlette
    from starlette.middleware import Middleware

    from workbench.guard.outage import OutageGuard

    async def too_large(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, BodyTooLarge)
        return _rule_for(rules, request.url.path).render(request, exc)

    handlers: dict[Any, Callable[[Request, Exception], Awaitable[Response]]] = {BodyTooLarge: too_large}
    return Starlette(
        routes=list(routes),
        # Outermost: a store or KMS outage in any layer below answers in the surface's shape.
        middleware=[Middleware(OutageGuard), *middleware, Middleware(BodyLimit, rules=rules)],
        exception_handlers=handlers,
    )
