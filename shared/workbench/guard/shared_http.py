"""Shared HTTP clients: one long-lived client per purpose per instance, never closed by its users.

A connection pool is shared by every request of its purpose (provider token requests, SSO sign-in,
an MCP server's OAuth, client metadata documents). Closing it ends every request still in flight on
it: `async with httpx.AsyncClient(transport=<the shared pool>)` closes the pool when its block is
left, and a concurrent token request then fails with `ReadError` after the provider has already
rotated its refresh token. So:

- `SharedClient` is the one client of a purpose: made on first use on the running event loop
  (a warm instance has one loop; a test that runs another loop gets a client of its own), used
  without `async with`, and closed only by `aclose()` at shutdown.
- `SharedTransport` wraps a pool that many clients use: a client's close (its `async with` block
  ending) leaves it open; only its owner's `shutdown()` closes it.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

__all__ = ["SharedClient", "SharedTransport"]


class SharedTransport(httpx.AsyncBaseTransport):
    """A transport whose `aclose()` (what a client's close calls) leaves the pool open."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        """Nothing: other requests are still using the pool. The owner calls `shutdown()`."""

    async def shutdown(self) -> None:
        await self.inner.aclose()


class SharedClient:
    """The one `httpx.AsyncClient` of a purpose on this instance: `client()` returns it (made on
    first use), `aclose()` closes it and its pool at shutdown. Per-request settings (timeout,
    headers) go on each request."""

    def __init__(self, transport: httpx.AsyncBaseTransport | None = None, **options: Any) -> None:
        self.transport = SharedTransport(transport or httpx.AsyncHTTPTransport())
        self._options = options
        self._client: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def client(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            # Connections belong to the loop that opened them: another loop gets a client of its own.
            self._client = httpx.AsyncClient(transport=self.transport, **self._options)
            self._loop = loop
        return self._client

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()
        await self.transport.shutdown()
