"""An httpx transport that resolves the upstream host once, vets every address it resolved to, and
connects to the vetted address — so a DNS answer that changes between the check and the connect
(DNS rebinding) cannot steer the credential to an internal address. Host header and TLS SNI (and
so certificate verification) keep the real hostname.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import Awaitable, Callable

import httpx

from workbench.proxy.guard import Refused, check_address

__all__ = ["PinnedTransport", "Resolver", "system_resolver"]

Resolver = Callable[[str, int], Awaitable[list[str]]]


async def system_resolver(host: str, port: int) -> list[str]:
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


class PinnedTransport(httpx.AsyncBaseTransport):
    def __init__(
        self,
        resolver: Resolver,
        *,
        allow_loopback: bool = False,
        max_response_bytes: int = 10 * 1024 * 1024,
        inner: Callable[[], httpx.AsyncBaseTransport] | None = None,
    ) -> None:
        self.resolver = resolver
        self.allow_loopback = allow_loopback
        self.max_response_bytes = max_response_bytes
        # A fresh connection pool per request: a pooled connection is keyed by IP, and must never
        # carry one hostname's credential over a TLS session negotiated for another. The TLS
        # context (CA bundle) is built once: loading it costs tens of milliseconds.
        self._inner = inner or self._default_inner
        self._ssl: ssl.SSLContext | None = None

    def _default_inner(self) -> httpx.AsyncBaseTransport:
        if self._ssl is None:
            self._ssl = httpx.create_ssl_context()
        return httpx.AsyncHTTPTransport(verify=self._ssl, retries=0, trust_env=False)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        host = request.url.host
        port = request.url.port or (443 if request.url.scheme == "https" else 80)
        try:
            addresses = await self.resolver(host, port)
        except OSError as exc:
            raise Refused(f"upstream host {host} does not resolve", 502) from exc
        if not addresses:
            raise Refused(f"upstream host {host} does not resolve", 502)
        for address in addresses:  # one bad answer taints the whole set (rebinding, split answers)
            check_address(address, allow_loopback=self.allow_loopback)
        request.url = request.url.copy_with(host=addresses[0].split("%", 1)[0])
        request.extensions = {**request.extensions, "sni_hostname": host}
        inner = self._inner()
        try:
            response = await inner.handle_async_request(request)
            chunks: list[bytes] = []
            size = 0
            try:
                async for chunk in response.aiter_raw():
                    size += len(chunk)
                    if size > self.max_response_bytes:
                        raise Refused("upstream response is too large for the proxy", 502)
                    chunks.append(chunk)
            finally:
                await response.aclose()
        finally:
            await inner.aclose()
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=httpx.ByteStream(b"".join(chunks)),
            extensions={k: v for k, v in response.extensions.items() if k != "network_stream"},
        )
