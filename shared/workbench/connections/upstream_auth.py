"""The upstream request's credential, as an httpx auth flow (kept apart from credentials.py so that
storing and refreshing credentials does not import httpx: a request that calls no upstream, such as
a built-in tool's, does not pay for it on a cold start)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable

import httpx

__all__ = ["BaseFn", "HeadersFn", "InjectedAuth", "RetryFn"]


# What InjectedAuth asks for: the headers to send and the token they carry (None: not a token that
# can be refreshed), the connection's API base for relative URLs, and, after an answer, fresh
# headers to retry with (None: do not retry).
HeadersFn = Callable[[], Awaitable[tuple[dict[str, str], str | None]]]
RetryFn = Callable[[httpx.Response, str], Awaitable[dict[str, str] | None]]
BaseFn = Callable[[], Awaitable[str]]


class InjectedAuth(httpx.Auth):
    """httpx auth flow that asks for the credential per request (so a refresh lands mid-batch),
    joins a relative URL to the connection's own API base when the manifest has one (Salesforce's
    instance_url is only known once the credential is read), and sends the request a second time,
    with fresh headers, when `retry` says the answer means the token was rejected."""

    def __init__(
        self, headers: HeadersFn, *, retry: RetryFn | None = None, base: BaseFn | None = None
    ) -> None:
        self._headers = headers
        self._retry = retry
        self._base = base

    async def async_auth_flow(self, request: httpx.Request) -> AsyncGenerator[httpx.Request, httpx.Response]:
        if self._base is not None and not request.url.host:
            request.url = httpx.URL(await self._base()).join(request.url)
            request.headers["Host"] = request.url.netloc.decode("ascii")
        headers, token = await self._headers()
        request.headers.update(headers)
        response = yield request
        if self._retry is None or token is None:
            return
        fresh = await self._retry(response, token)
        if fresh is None:
            return
        request.headers.update(fresh)
        yield request  # once: a second refusal is the tool's answer
