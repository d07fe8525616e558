"""A fake internet on loopback for egress tests: public-looking names answered by an injected
resolver, connections to their (public) addresses routed to local TLS servers whose certificates
a test CA signs, and a canary listener standing in for an internal service that records every
connection it receives."""

from __future__ import annotations

import datetime
import json
import socket
import ssl
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

PUBLIC_IP = "93.184.216.34"  # what every public test name resolves to (routed to the TLS server)


class Canary:
    """A listener on 127.0.0.1 that counts connections: the internal service nobody may reach."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.sock.settimeout(0.05)
        self.port = int(self.sock.getsockname()[1])
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self.sock.close()


@dataclass
class Answer:
    status: int = 200
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b"{}"


class _Handler(BaseHTTPRequestHandler):
    server: Internet._Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _handle(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        if length:
            self.rfile.read(length)
        host = (self.headers.get("host") or "").split(":")[0]
        self.server.internet.seen.append((self.command, host, self.path))
        answer = self.server.internet.answer(self.command, host, self.path)
        self.send_response(answer.status)
        for name, value in answer.headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(answer.body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(answer.body)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle


class Internet:
    """TLS servers for public-looking names; a resolver and a route to wire into a gateway."""

    class _Server(ThreadingHTTPServer):
        daemon_threads = True
        internet: Internet

    def __init__(self, tmp: Path, names: list[str]) -> None:
        self.names = names
        self.seen: list[tuple[str, str, str]] = []
        self.asked: list[str] = []
        # Names answered specially: {name: [answer for the 1st question, 2nd, ...]} (the last repeats).
        self.dns: dict[str, list[list[str]]] = {}
        self.answer: Callable[[str, str, str], Answer] = lambda method, host, path: Answer()
        self.ca_file = tmp / "ca.pem"
        ca_key, ca = issue_certificate("Egress Test CA", [], None, None)
        leaf_key, leaf = issue_certificate(names[0], names, ca_key, ca.subject)
        self.ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
        cert, key = tmp / "leaf.pem", tmp / "leaf.key"
        cert.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
        key.write_bytes(
            leaf_key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        self.server = Internet._Server(("127.0.0.1", 0), _Handler)
        self.server.internet = self
        self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
        self.port = int(self.server.server_address[1])
        self._thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    async def resolver(self, host: str, port: int) -> list[str]:
        self.asked.append(host)
        if host in self.dns:
            answers = self.dns[host]
            return answers.pop(0) if len(answers) > 1 else list(answers[0])
        if host in self.names or host.endswith(".zendesk.com"):
            return [PUBLIC_IP]
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    def route(self, address: str, port: int) -> tuple[str, int]:
        # A checked public address "is" the fake internet; anything else goes where it says, so a
        # policy gap would reach the canary for real.
        return ("127.0.0.1", self.port) if address == PUBLIC_IP else (address, port)

    def ssl_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca_file))

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def json_answer(value: Any, status: int = 200) -> Answer:
    return Answer(status, [("Content-Type", "application/json")], json.dumps(value).encode())


@contextmanager
def canary() -> Iterator[Canary]:
    c = Canary()
    try:
        yield c
    finally:
        c.close()


def issue_certificate(
    cn: str, dns: list[str], issuer_key: ec.EllipticCurvePrivateKey | None, issuer: x509.Name | None
) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    """A P-256 key and its certificate for `cn`: a CA's (no issuer) or a leaf for `dns`, one hour."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer or subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
    )
    if issuer is None:
        builder = builder.add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
    else:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.DNSName(n) for n in dns]), critical=False
        )
    return key, builder.sign(issuer_key or key, hashes.SHA256())
