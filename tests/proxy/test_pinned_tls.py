"""The pinned transport over real TLS on loopback: the connection goes to the vetted IP, while SNI,
the Host header and certificate verification keep the hostname."""

from __future__ import annotations

import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from workbench.guard.egress import EgressPolicy, EgressRefused
from workbench.guard.egress_transport import EgressTransport

from tests.egress.internet import issue_certificate


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.server.hosts.append(self.headers["host"])  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")


@pytest.fixture
def tls_server(
    tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[tuple[int, ssl.SSLContext, list[str], list[str]]]:
    """A TLS server whose certificate names `request.param`; yields (port, client context, SNIs, Hosts)."""
    ca_key, ca = issue_certificate("Test CA", [], None, None)
    leaf_key, leaf = issue_certificate(request.param, [request.param], ca_key, ca.subject)
    cert_file, key_file = tmp_path / "leaf.pem", tmp_path / "leaf.key"
    cert_file.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        leaf_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    sni: list[str] = []
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(cert_file, key_file)
    server_ctx.sni_callback = lambda sock, name, ctx: sni.append(name) or None  # type: ignore[func-returns-value]
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.hosts = []  # type: ignore[attr-defined]
    server.socket = server_ctx.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    client_ctx = ssl.create_default_context(cadata=ca.public_bytes(serialization.Encoding.PEM).decode())
    try:
        yield int(server.server_address[1]), client_ctx, sni, server.hosts  # type: ignore[attr-defined]
    finally:
        server.shutdown()
        server.server_close()


def _client(ctx: ssl.SSLContext, answers: list[str]) -> httpx.AsyncClient:
    async def resolver(host: str, port: int) -> list[str]:
        return answers

    transport = EgressTransport(EgressPolicy(allow="loopback", resolver=resolver), verify=ctx)
    return httpx.AsyncClient(transport=transport)


@pytest.mark.parametrize("tls_server", ["upstream.test"], indirect=True)
async def test_pinned_connection_keeps_sni_host_and_verification(
    tls_server: tuple[int, ssl.SSLContext, list[str], list[str]],
) -> None:
    port, ctx, sni, hosts = tls_server
    async with _client(ctx, ["127.0.0.1"]) as client:
        r = await client.get(f"https://upstream.test:{port}/x")
    assert (r.status_code, r.text) == (200, "ok")
    assert sni == ["upstream.test"]  # the certificate (for upstream.test, not 127.0.0.1) verified
    assert hosts == [f"upstream.test:{port}"]


@pytest.mark.parametrize("tls_server", ["someone-else.test"], indirect=True)
async def test_a_certificate_for_another_name_fails_verification(
    tls_server: tuple[int, ssl.SSLContext, list[str], list[str]],
) -> None:
    port, ctx, _, hosts = tls_server
    async with _client(ctx, ["127.0.0.1"]) as client:
        with pytest.raises(httpx.ConnectError):
            await client.get(f"https://upstream.test:{port}/x")
    assert hosts == []


@pytest.mark.parametrize("tls_server", ["upstream.test"], indirect=True)
async def test_refused_addresses_never_connect(
    tls_server: tuple[int, ssl.SSLContext, list[str], list[str]],
) -> None:
    port, ctx, sni, hosts = tls_server
    async with _client(ctx, ["169.254.169.254"]) as client:
        with pytest.raises(EgressRefused):
            await client.get(f"https://upstream.test:{port}/x")
    assert sni == [] and hosts == []
