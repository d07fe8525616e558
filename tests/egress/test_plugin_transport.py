"""What a plugin's `ctx.http` sends through (workbench.guard.http1.Http1Transport, on Workbench's own
HTTP/1.1 client) against its oracle, the httpx/httpcore `EgressTransport(retries=1)` plugins sent
through before: both under an httpx.AsyncClient, as a plugin uses it, the same requests (query
parameters, JSON, forms, multipart files, raw and streamed bodies, auth, redirects followed) to a
loopback server that answers every framing, encoding and failure of tests/proxy/test_upstream_http1.
What the server received (byte for byte), what the plugin read (status, reason phrase, HTTP
version, headers in order, body) or which error it got must be the same for both; so must the
connection reuse, the DNS questions and the connect retry."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest
from workbench.guard.egress import EgressPolicy, EgressRefused
from workbench.guard.egress_transport import EgressTransport
from workbench.guard.http1 import Http1Transport

from tests.proxy.test_upstream_http1 import ANSWERS, CAP, CLOSES, JSON, Upstream, upstream

__all__ = ["upstream"]  # the fixture, shared with the proxy's oracle test

POLICY = EgressPolicy(allow="loopback")
TIMEOUT = httpx.Timeout(2.0, connect=1.0)
Transport = Callable[[EgressPolicy], httpx.AsyncBaseTransport]


def _oracle(policy: EgressPolicy) -> httpx.AsyncBaseTransport:
    return EgressTransport(policy, retries=1, max_response_bytes=CAP)


def _ours(policy: EgressPolicy) -> httpx.AsyncBaseTransport:
    return Http1Transport(policy, retries=1, max_response_bytes=CAP)


async def _streamed() -> AsyncIterator[bytes]:
    yield b'{"streamed": true}'


# (name, client.request keyword arguments), as plugins call ctx.http.request / sdk.api.
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("GET", {"params": {"q": "a b", "page": 2}}),
    ("HEAD", {}),
    ("POST", {"json": {"title": "é", "n": [1, 2]}}),
    ("POST", {}),
    ("PUT", {"content": b"x" * 70_000, "headers": {"If-Match": '"v1"'}}),
    ("PATCH", {"data": {"field": "value", "other": "1"}}),
    (
        "POST",
        {
            "files": {"file": ("a.txt", b"file body", "text/plain")},
            "data": {"note": "n"},
            "headers": {"Content-Type": "multipart/form-data; boundary=fixed-boundary"},
        },
    ),
    ("POST", {"content": "streamed", "headers": {"Accept-Encoding": "br", "X-After": "1"}}),
    ("DELETE", {"auth": httpx.BasicAuth("user", "pass")}),
]


async def _outcome(
    transport: Transport, up: Upstream, method: str, options: dict[str, Any], *, stream: bool = False
) -> tuple[object, list[bytes]]:
    up.received.clear()
    if options.get("content") == "streamed":
        options = {**options, "content": _streamed()}
    async with httpx.AsyncClient(
        transport=transport(POLICY),
        base_url=f"http://127.0.0.1:{up.port}/api",
        headers={"User-Agent": "workbench/0.1", "Accept": "application/json"},
        timeout=TIMEOUT,
    ) as client:
        try:
            if stream:
                async with client.stream(method, "/items", **options) as response:
                    body = b"".join([part async for part in response.aiter_bytes()])
            else:
                response = await client.request(method, "/items", **options)
                body = response.content
        except (httpx.HTTPError, EgressRefused) as exc:
            return type(exc).__name__, list(up.received)
    seen = (
        response.status_code,
        response.reason_phrase,
        response.http_version,
        response.headers.raw,
        body,
    )
    return seen, list(up.received)


@pytest.mark.parametrize("name", list(ANSWERS))
async def test_every_answer_reads_as_the_oracle_reads_it(upstream: Upstream, name: str) -> None:
    upstream.answer = ANSWERS[name]
    upstream.close_after = name in CLOSES
    calls = CALLS if name in ("content-length", "chunked", "gzip", "until close") else CALLS[:3]
    for method, options in calls:
        theirs, their_wire = await _outcome(_oracle, upstream, method, options)
        ours, our_wire = await _outcome(_ours, upstream, method, options)
        assert ours == theirs, (name, method, options)
        assert our_wire == their_wire, (name, method, options)  # byte for byte what the upstream got
    theirs, _ = await _outcome(_oracle, upstream, "GET", {}, stream=True)
    ours, _ = await _outcome(_ours, upstream, "GET", {}, stream=True)
    assert ours == theirs, name


async def test_a_redirect_is_followed_as_the_oracle_follows_it(upstream: Upstream) -> None:
    upstream.answer = ANSWERS["redirect"]  # always answers 302 to /elsewhere
    theirs, their_wire = await _outcome(_oracle, upstream, "GET", {"follow_redirects": True})
    ours, our_wire = await _outcome(_ours, upstream, "GET", {"follow_redirects": True})
    assert ours == theirs == "TooManyRedirects"
    assert our_wire == their_wire and len(our_wire) == 21


async def test_connections_are_kept_per_host_and_the_name_is_resolved_once(upstream: Upstream) -> None:
    upstream.answer = ANSWERS["content-length"]
    for transport in (_oracle, _ours):
        asked: list[str] = []

        async def resolver(host: str, port: int, asked: list[str] = asked) -> list[str]:
            asked.append(host)
            return ["127.0.0.1"]

        policy = EgressPolicy(allow="loopback", resolver=resolver)
        upstream.peers.clear()
        async with httpx.AsyncClient(transport=transport(policy), timeout=TIMEOUT) as client:
            for _ in range(3):
                answer = await client.get(f"http://api.example.test:{upstream.port}/x")
                assert answer.content == JSON
        assert asked == ["api.example.test"], transport  # a kept connection asks no new question
        assert len(set(upstream.peers)) == 1, transport


async def test_a_refused_connection_is_tried_once_more_and_then_is_the_oracles_error() -> None:
    for transport in (_oracle, _ours):
        asked: list[str] = []

        async def resolver(host: str, port: int, asked: list[str] = asked) -> list[str]:
            asked.append(host)
            return ["127.0.0.1"]

        policy = EgressPolicy(allow="loopback", resolver=resolver)
        async with httpx.AsyncClient(transport=transport(policy), timeout=TIMEOUT) as client:
            with pytest.raises(httpx.ConnectError):
                await client.get("http://closed.example.test:9/")  # nothing listens on the discard port
        assert asked == ["closed.example.test"] * 2, transport  # resolved and checked for each attempt


async def test_a_read_timeout_names_the_same_limit(upstream: Upstream) -> None:
    from workbench.errors import upstream_timeout

    upstream.answer = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nonly"  # then silence
    texts = []
    for transport in (_oracle, _ours):
        async with httpx.AsyncClient(transport=transport(POLICY), timeout=httpx.Timeout(0.3)) as client:
            with pytest.raises(httpx.ReadTimeout) as caught:
                await client.get(f"http://127.0.0.1:{upstream.port}/slow")
        texts.append(str(upstream_timeout(caught.value)))
    assert texts == ["Upstream timed out after 0.3 s"] * 2


async def test_the_policy_refuses_what_the_oracle_refuses_before_any_connection(upstream: Upstream) -> None:
    async def moved(host: str, port: int) -> list[str]:
        return ["127.0.0.1"]

    for policy, url in (
        (EgressPolicy(allow="public"), f"https://127.0.0.1:{upstream.port}/"),
        (EgressPolicy(allow="public", resolver=moved), f"https://api.example.com:{upstream.port}/"),
        (EgressPolicy(allow="public"), "http://api.example.com/"),
    ):
        errors = []
        for transport in (_oracle, _ours):
            async with httpx.AsyncClient(transport=transport(policy), timeout=TIMEOUT) as client:
                with pytest.raises(EgressRefused) as caught:
                    await client.get(url)
            errors.append(str(caught.value))
        assert errors[0] == errors[1], url
    assert upstream.received == []


async def test_a_cancelled_call_leaves_no_connection_behind(upstream: Upstream) -> None:
    upstream.answer = b""  # never answers
    transport = Http1Transport(POLICY)
    async with httpx.AsyncClient(transport=transport, timeout=5.0) as client:
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.2):
                await client.get(f"http://127.0.0.1:{upstream.port}/hang")
        assert upstream.received
        assert transport._client._idle == {}


def test_no_http_library_but_httpx_is_imported_by_a_plugin_call(tmp_path: Any) -> None:
    """The point of the transport: a plugin's call loads neither httpcore, h11 nor anyio, and builds
    no SSL context for a plain-http upstream (a fresh interpreter, a loopback server)."""
    import subprocess
    import textwrap

    code = textwrap.dedent(
        """
        import asyncio, ssl, sys, threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.send_header("content-length", "2")
                self.end_headers()
                self.wfile.write(b"ok")
            def log_message(self, *a):
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        contexts = []
        real = ssl.SSLContext.load_verify_locations
        ssl.SSLContext.load_verify_locations = lambda self, *a, **k: contexts.append(1) or real(self, *a, **k)

        import httpx
        from workbench.guard.egress import EgressPolicy
        from workbench.guard.http1 import Http1Transport

        async def main():
            async with httpx.AsyncClient(transport=Http1Transport(EgressPolicy(allow="loopback"))) as c:
                return (await c.get(f"http://127.0.0.1:{server.server_address[1]}/")).text

        assert asyncio.run(main()) == "ok"
        print(sorted(m for m in ("httpcore", "h11", "anyio", "sniffio", "certifi") if m in sys.modules), contexts)
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[] []"
