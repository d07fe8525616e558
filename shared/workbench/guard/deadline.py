"""One deadline per request, so that every answer arrives while someone still waits for it.

API Gateway's HTTP API gives up 29 s (`request_deadline_seconds`) after a request arrived, and the
Lambda function is stopped when its own remaining time runs out; whichever comes first, minus a
margin to write the answer (`deadline_margin_seconds`), is the request's deadline. Locally the same
budget applies from when the request reached the gateway, so what works on a laptop fits on AWS.

The deadline travels in a context variable, set by `DeadlineMiddleware` around each HTTP request
(and by the Lambda runtime around a scheduled job), so everything a request runs sees it:
- upstream HTTP clients take `upstream_timeout()`: their usual limit, shrunk to what is left;
- the engine runs each execution under `asyncio.timeout(remaining())`: an execution cut short, or
  one never started, becomes an ordinary `{"error": ...}` item, audited like any other, and the
  batch or compose still answers a proper result;
- `wait_for_connection` blocks no longer than what is left.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx
    from starlette.middleware import Middleware

    from workbench.settings import Settings

__all__ = [
    "CUT_SHORT",
    "NOT_STARTED",
    "Deadline",
    "DeadlineMiddleware",
    "current",
    "for_invocation",
    "for_request",
    "middleware",
    "remaining",
    "scope",
    "upstream_timeout",
]

# The engine's wording for executions the deadline stopped (error objects in the seed's shape).
CUT_SHORT = (
    "Timed out: the request's time limit was reached before this execution finished. "
    "Run it on its own, or ask for less."
)
NOT_STARTED = "Not run: the request's time limit was reached before this execution could start. Run it again."
# Upstream HTTP gives up this much before the deadline, so that its own timeout (which names the
# limit) is what a slow upstream reports, and the engine's guard is left for everything else.
_UPSTREAM_SLACK = 0.5
_MIN_UPSTREAM = 0.1


class Deadline:
    # A plain class: every cold start builds this module's classes (a dataclass costs about 1 ms).
    __slots__ = ("at",)

    def __init__(self, at: float) -> None:
        self.at = at  # time.monotonic() (the event loop's clock) when the request must be answering

    def remaining(self) -> float:
        return max(0.0, self.at - time.monotonic())

    def expired(self) -> bool:
        return time.monotonic() >= self.at


_current: ContextVar[Deadline | None] = ContextVar("workbench_deadline", default=None)


def current() -> Deadline | None:
    return _current.get()


def remaining() -> float | None:
    """Seconds left for this request; None outside a request (no deadline)."""
    deadline = _current.get()
    return None if deadline is None else deadline.remaining()


@contextmanager
def scope(deadline: Deadline | None) -> Iterator[Deadline | None]:
    token = _current.set(deadline)
    try:
        yield deadline
    finally:
        _current.reset(token)


def for_request(
    *,
    budget: float,
    margin: float,
    arrived_at: float | None = None,
    lambda_remaining_ms: int | None = None,
    now: float | None = None,
) -> Deadline:
    """The deadline of a request that arrived at `arrived_at` (epoch seconds; API Gateway's
    requestContext.timeEpoch), in a Lambda invocation with `lambda_remaining_ms` left."""
    wall = time.time() if now is None else now
    limits = [budget - max(0.0, wall - arrived_at) if arrived_at is not None else budget]
    if lambda_remaining_ms is not None:
        limits.append(lambda_remaining_ms / 1000)
    return Deadline(time.monotonic() + max(0.0, min(limits) - margin))


def for_invocation(context: Any, *, margin: float) -> Deadline | None:
    """A direct (non-HTTP) Lambda invocation's deadline: the function's remaining time, less the margin."""
    left = _lambda_remaining_ms(context)
    return None if left is None else Deadline(time.monotonic() + max(0.0, left / 1000 - margin))


def upstream_timeout(default: float = 25.0, connect: float = 5.0) -> httpx.Timeout:
    """An upstream call's timeout: `default` (read/write/pool) and `connect`, shrunk to the deadline."""
    import httpx

    left = remaining()
    if left is None:
        return httpx.Timeout(default, connect=connect)
    # Whole tenths, so the "Upstream timed out after N s" an agent reads is a plain number.
    fit = max(_MIN_UPSTREAM, math.floor((left - _UPSTREAM_SLACK) * 10) / 10)
    total = min(default, fit)
    return httpx.Timeout(total, connect=min(connect, total))


def _lambda_remaining_ms(context: Any) -> int | None:
    getter = getattr(context, "get_remaining_time_in_millis", None)
    if getter is None:
        return None
    try:
        return int(getter())
    except (TypeError, ValueError):
        return None


class DeadlineMiddleware:
    """Sets the request's deadline (from API Gateway's arrival time and the Lambda's remaining time
    when the API Gateway adapter passes them, else from now) around every HTTP request of an ASGI app."""

    def __init__(self, app: Any, *, budget: float, margin: float) -> None:
        self.app = app
        self.budget = budget
        self.margin = margin

    async def __call__(self, scope_: dict[str, Any], receive: Any, send: Any) -> None:
        if scope_.get("type") != "http":
            await self.app(scope_, receive, send)
            return
        event = scope_.get("aws.event") or {}
        epoch_ms = ((event.get("requestContext") or {}) if isinstance(event, dict) else {}).get("timeEpoch")
        deadline = for_request(
            budget=self.budget,
            margin=self.margin,
            arrived_at=epoch_ms / 1000 if isinstance(epoch_ms, int | float) else None,
            lambda_remaining_ms=_lambda_remaining_ms(scope_.get("aws.context")),
        )
        with scope(deadline):
            await self.app(scope_, receive, send)


def middleware(settings: Settings) -> list[Middleware]:
    """What every surface's app (and the local app) puts around its routes."""
    from starlette.middleware import Middleware

    return [
        Middleware(
            DeadlineMiddleware,
            budget=settings.request_deadline_seconds,
            margin=settings.deadline_margin_seconds,
        )
    ]
