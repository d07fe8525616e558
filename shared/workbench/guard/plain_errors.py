"""Plain words for network failures.

When an upstream cannot be reached, httpx raises transport errors whose text is the operating
system's ("[Errno -2] Name or service not known", "All connection attempts failed"). That text
reaches people: a tool's error, the portal when a credential is checked. Every engine HTTP client
therefore wraps its transport in `PlainErrors`, which re-raises the same exception type with a
sentence that names the host and says what to check. The original stays as the cause.
"""

from __future__ import annotations

import socket
import ssl

import httpx

__all__ = ["PlainErrors", "describe_transport_error", "plain_text"]


def _causes(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen and len(seen) < 10:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def plain_text(exc: httpx.TransportError) -> str:
    """The plain sentence for `exc`: its own text when PlainErrors already wrote it."""
    if getattr(exc, "already_plain", False):
        return str(exc)
    try:
        url = exc.request.url
        host = f"{url.host}:{url.port}" if url.port else url.host
    except RuntimeError:  # not tied to a request
        host = ""
    return describe_transport_error(exc, host)


def describe_transport_error(exc: httpx.TransportError, host: str) -> str:
    """One sentence for a person: what failed, at which host, and what to check."""
    chain = _causes(exc)
    text = " ".join(str(e) for e in chain).lower()
    where = host or "the server"
    if isinstance(exc, httpx.UnsupportedProtocol | httpx.InvalidURL):
        return "That is not a web address Workbench can use: it must start with https://."
    if isinstance(exc, httpx.TimeoutException):
        return f"{where} did not answer in time. Check the address, or try again in a moment."
    if any(isinstance(e, socket.gaierror) for e in chain) or any(
        marker in text
        for marker in (
            "name or service not known",
            "nodename nor servname",
            "temporary failure in name resolution",
            "no address associated",
            "getaddrinfo failed",
        )
    ):
        return f"Could not find the server {where}. Check the address for typos."
    if any(isinstance(e, ssl.SSLError) for e in chain) or "certificate" in text or "ssl" in text:
        return f"Could not make a secure connection to {where}: its certificate was not accepted."
    if any(isinstance(e, ConnectionRefusedError) for e in chain) or "refused" in text:
        return f"{where} refused the connection. Check the address and port."
    if isinstance(exc, httpx.ConnectError):
        return f"Could not connect to {where}. Check the address, or try again in a moment."
    if isinstance(exc, httpx.RemoteProtocolError):
        return f"{where} closed the connection without a valid answer. Try again in a moment."
    return f"The connection to {where} failed. Try again in a moment."


class PlainErrors(httpx.AsyncBaseTransport):
    """A transport that turns the OS's wording of a network failure into a plain sentence."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        try:
            return await self.inner.handle_async_request(request)
        except httpx.TransportError as exc:
            host = request.url.host
            if request.url.port:
                host = f"{host}:{request.url.port}"
            plain = type(exc)(describe_transport_error(exc, host), request=request)
            plain.already_plain = True  # type: ignore[attr-defined]
            raise plain from exc

    async def aclose(self) -> None:
        await self.inner.aclose()
