"""Provider rate limits, one reading for every plugin: is this answer a rate limit, and how long
does the provider ask us to wait?

Signals (each provider's documented one; a plain 429 covers most):

- any HTTP 429 (Notion, HubSpot, Linear, Jira/Confluence, Stripe, Zendesk, Airtable, Google, Slack);
- Slack's `{"ok": false, "error": "ratelimited"}` body (the Web API's own wording, on a 429 and on
  some methods' 200);
- GitHub's secondary limits: 403 with `Retry-After`, or 403/429 with `x-ratelimit-remaining: 0`
  (the wait is until `x-ratelimit-reset`, epoch seconds);
- Salesforce's `REQUEST_LIMIT_EXCEEDED` error code (403): the org's rolling 24-hour API allowance,
  which names no wait.

The wait is `Retry-After` (seconds or an HTTP date), else GitHub's reset time, else a default.
`workbench.engine.executor` retries once after it when it fits the request's deadline; otherwise
the tool's answer carries `retry_after` (workbench.errors.RateLimited).
"""

from __future__ import annotations

import json
import math
import time
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx

__all__ = ["DAILY_LIMIT_WAIT", "DEFAULT_WAIT", "MAX_RETRY_WAIT", "Limit", "rate_limit"]

DEFAULT_WAIT = 10  # seconds, when a 429 names no wait
DAILY_LIMIT_WAIT = 3600  # Salesforce's rolling 24-hour allowance: no wait is named; an hour is a guess
MAX_RETRY_WAIT = 20.0  # never sleep longer than this inside one request, whatever the deadline


class Limit:
    """A rate-limit answer: `wait` seconds before trying again (from the provider when it said),
    and the provider's own words."""

    __slots__ = ("detail", "named", "wait")

    def __init__(self, wait: float, detail: str, *, named: bool) -> None:
        self.wait = max(0.0, wait)
        self.detail = detail
        self.named = named  # the provider named the wait (else it is our default)

    @property
    def retry_after(self) -> int:
        return max(1, math.ceil(self.wait))


def _retry_after(value: str | None, now: float) -> float | None:
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return when.timestamp() - now


def _body(response: httpx.Response) -> Any:
    content = response.content
    if not content or len(content) > 65_536:
        return None
    if b"ratelimited" not in content and b"REQUEST_LIMIT_EXCEEDED" not in content:
        return None
    try:
        return json.loads(content)
    except ValueError:
        return None


def rate_limit(response: httpx.Response, *, read: bool, now: float | None = None) -> Limit | None:
    """The rate limit this answer stands for, or None when it is not one. `read`: the body has been
    read (a streamed answer is judged by its status and headers alone)."""
    now = time.time() if now is None else now
    status = response.status_code
    headers = response.headers
    body = _body(response) if read and status in (200, 403, 429) else None
    slack = isinstance(body, dict) and body.get("ok") is False and body.get("error") == "ratelimited"
    salesforce = isinstance(body, list) and any(
        isinstance(e, dict) and e.get("errorCode") == "REQUEST_LIMIT_EXCEEDED" for e in body
    )
    exhausted = headers.get("x-ratelimit-remaining") == "0"
    if not (
        status == 429 or slack or salesforce or (status == 403 and (exhausted or "retry-after" in headers))
    ):
        return None
    if salesforce and isinstance(body, list):
        message = next(str(e.get("message") or "") for e in body if isinstance(e, dict))
        return Limit(DAILY_LIMIT_WAIT, message or "REQUEST_LIMIT_EXCEEDED", named=False)
    wait = _retry_after(headers.get("retry-after"), now)
    if wait is None and exhausted and headers.get("x-ratelimit-reset", "").isdigit():
        wait = float(headers["x-ratelimit-reset"]) - now
    detail = "ratelimited" if slack else f"HTTP {status}"
    if wait is None:
        return Limit(DEFAULT_WAIT, detail, named=False)
    return Limit(wait, detail, named=True)
