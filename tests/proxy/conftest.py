"""A real curl proxy (uvicorn on loopback, in a thread) in front of real upstream HTTP servers that
record every request they receive. DNS answers come from an injectable resolver."""

from __future__ import annotations

import base64
import gzip
import json
import re
import socket
import threading
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from workbench.composition import Gateway, build_registry
from workbench.identity.auth import Principal
from workbench.manifest import ApiKeyAuth, ApiKeyField, Manifest, OAuth2Auth
from workbench.proxy.app import create_proxy_app
from workbench.runtime.uvicorn_server import http_protocol

from tests.support.gateways import make_gateway
from tests.support.processes import free_port
from tests.support.server_thread import start_server_thread

CREDENTIAL = "upstream-secret-CRED-7f3a9c1e5b"
OTHER_CREDENTIAL = "other-secret-CRED-0b1c2d3e4f"
UPSTREAM_HOST = "upstream.test"
EVIL_HOST = "evil.test"
ALLOWED_EXTRA_HOST = "downloads.upstream.test"
STALE_ACCESS_TOKEN = "stale-access-token-0000000000"
FRESH_ACCESS_TOKEN = "fresh-access-token-1111111111"
REFRESH_TOKEN = "refresh-token-2222222222"


@dataclass
class Seen:
    method: str
    target: str
    headers: dict[str, str]
    body: bytes
    peer: tuple[str, int] = ("", 0)  # the proxy's end of the TCP connection the request came on

    def text(self) -> str:
        return json.dumps(self.headers) + self.target + self.body.decode("latin-1")


class Recorder(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int] = ("127.0.0.1", 0)) -> None:
        super().__init__(address, _Handler)
        self.seen: list[Seen] = []
        self.lock = threading.Lock()

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def requests(self) -> list[Seen]:
        with self.lock:
            return list(self.seen)

    def saw_credential(self) -> bool:
        return any(CREDENTIAL in s.text() or OTHER_CREDENTIAL in s.text() for s in self.requests())


class _Handler(BaseHTTPRequestHandler):
    server: Recorder
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out as separate writes

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _handle(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        seen = Seen(
            self.command,
            self.path,
            {k.lower(): v for k, v in self.headers.items()},
            body,
            (str(self.client_address[0]), int(self.client_address[1])),
        )
        with self.server.lock:
            self.server.seen.append(seen)
        status, headers, payload = _route(self.server, seen)
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _handle


def echo_forms(token: bytes) -> dict[str, str]:
    from urllib.parse import quote, quote_plus

    b64 = base64.b64encode(token).decode()
    return {
        "b64": b64,
        "b64_unpadded": b64.rstrip("="),
        "b64_urlsafe": base64.urlsafe_b64encode(token).decode().rstrip("="),
        "basic": base64.b64encode(b"someone:" + token).decode(),  # the secret at an offset
        "basic_offset2": base64.b64encode(b"ab:" + token).decode(),
        "pct": quote(token, safe=""),
        "pct_lower": re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), quote(token, safe="")),
        "pct_plus": quote_plus(token, safe=""),
    }


def _bomb() -> bytes:
    """Compressed zeros, made in pieces so building it never holds the inflated size."""
    z = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = bytes(1024 * 1024)
    parts = [z.compress(block) for _ in range(64)]
    return b"".join(parts) + z.flush()


BOMB = _bomb()


def _route(server: Recorder, seen: Seen) -> tuple[int, list[tuple[str, str]], bytes]:
    path = seen.target.split("?", 1)[0]
    own = f"http://{UPSTREAM_HOST}:{server.port}"
    evil = getattr(server, "evil_port", 0)
    redirects = {
        "/api/redirect/inside": f"{own}/api/echo?from=redirect",
        "/api/redirect/relative": "echo?from=relative",
        "/api/redirect/evil": f"http://{EVIL_HOST}:{evil}/steal",
        "/api/redirect/evil-https": f"https://{EVIL_HOST}/steal",
        "/api/redirect/scheme-relative": f"//{EVIL_HOST}:{evil}/steal",
        "/api/redirect/outside-base": "/elsewhere/secret",
        "/api/redirect/userinfo": f"http://{UPSTREAM_HOST}:{server.port}@{EVIL_HOST}:{evil}/steal",
        "/api/redirect/allowed": f"https://{ALLOWED_EXTRA_HOST}/archive.tar.gz",
        # The base URL's own host, https, outside the base path (only other allowed hosts pass).
        "/api/redirect/same-host-outside": f"https://{UPSTREAM_HOST}/elsewhere/secret",
        # Read as evil.test by browsers (backslash), as the base host by Python's urlsplit.
        "/api/redirect/backslash-userinfo": f"https://{EVIL_HOST}\\@{UPSTREAM_HOST}/api/x",
        "/api/redirect/backslash-path": f"/\\{EVIL_HOST}/steal",
        "/api/redirect/allowed-with-userinfo": f"https://user@{ALLOWED_EXTRA_HOST}/archive.tar.gz",
        "/api/redirect/unparsable": "http://[::1",
        "/api/redirect/bad-port": f"https://{UPSTREAM_HOST}:99999/api/x",
        # A raw non-ASCII byte (0xE9 on the wire): Latin-1 to the proxy, UTF-8 to a browser.
        "/api/redirect/non-ascii": f"{own}/api/caf\u00e9",
    }
    if path in redirects:
        return 302, [("Location", redirects[path])], b""
    if path == "/api/non-ascii-header":  # raw bytes 0xC3 0xA9 (UTF-8) and 0xE9 (Latin-1) on the wire
        return (
            200,
            [("X-Utf8", "caf\u00c3\u00a9"), ("X-Latin1", "caf\u00e9"), ("Content-Type", "text/plain")],
            b"ok",
        )
    if path == "/api/leak":
        auth = seen.headers.get("authorization", "")
        body = json.dumps({"you_sent": auth}).encode()
        return 200, [("Content-Type", "application/json"), ("X-Echo-Auth", auth)], body
    if path == "/api/echo-forms":  # the injected token echoed back encoded every way we redact
        token = seen.headers.get("authorization", "").partition(" ")[2].encode()
        forms = echo_forms(token)
        return (
            200,
            [("Content-Type", "application/json"), ("X-Echo-B64", forms["b64"])],
            json.dumps(forms).encode(),
        )
    if path == "/api/bomb":  # 1 MiB of gzip that inflates past the 10 MiB decoded cap
        return 200, [("Content-Type", "application/json"), ("Content-Encoding", "gzip")], BOMB
    if path == "/api/brotli":
        return 200, [("Content-Type", "text/plain"), ("Content-Encoding", "br")], b"\x0b\x00\x80hello\x03"
    if path == "/api/gzip":
        return (
            200,
            [("Content-Type", "application/json"), ("Content-Encoding", "gzip")],
            gzip.compress(b'{"compressed": true}'),
        )
    if path == "/api/headers":
        return (
            200,
            [
                ("Content-Type", "application/json"),
                ("Set-Cookie", "session=upstream-session-cookie; Path=/"),
                ("X-RateLimit-Remaining", "4999"),
                ("Link", f'<{own}/api/items?page=2>; rel="next"'),
                ("Server", "recorder"),
            ],
            b"{}",
        )
    if path == "/token":  # the OAuth provider's token endpoint (refresh_token grant)
        fresh = {"access_token": FRESH_ACCESS_TOKEN, "expires_in": 3600, "token_type": "bearer"}
        return 200, [("Content-Type", "application/json")], json.dumps(fresh).encode()
    if path == "/api/only-fresh":  # a provider that has ended every session but the newest one
        auth = seen.headers.get("authorization", "")
        if auth != f"Bearer {FRESH_ACCESS_TOKEN}":
            return 401, [("Content-Type", "application/json")], b'{"error": "invalid_token"}'
        return 200, [("Content-Type", "application/json")], json.dumps({"you_sent": auth}).encode()
    if path == "/api/limited":  # a provider's rate limit, with the headers that say when to retry
        headers = [
            ("Content-Type", "application/json"),
            ("Retry-After", "30"),
            ("X-RateLimit-Remaining", "0"),
            ("X-RateLimit-Reset", "1900000000"),
            ("RateLimit-Policy", '"default";q=100;w=60'),
        ]
        return 429, headers, b'{"message": "API rate limit exceeded"}'
    if path == "/api/status/418":
        return 418, [("Content-Type", "text/plain")], b"teapot"
    body = json.dumps({"method": seen.method, "target": seen.target, "body": seen.body.decode("latin-1")})
    return 200, [("Content-Type", "application/json"), ("X-Upstream", "yes")], body.encode()


@pytest.fixture
def upstream() -> Iterator[Recorder]:
    with serving(Recorder()) as server:
        yield server


@pytest.fixture
def evil(upstream: Recorder) -> Iterator[Recorder]:
    with serving(Recorder()) as server:
        upstream.evil_port = server.port  # type: ignore[attr-defined]
        yield server


class serving:
    def __init__(self, server: Recorder) -> None:
        self.server = server

    def __enter__(self) -> Recorder:
        threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()
        return self.server

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@dataclass
class FakeDns:
    """Answers per host name; records every question. Unknown names do not resolve."""

    answers: dict[str, list[str]] = field(default_factory=dict)
    asked: list[str] = field(default_factory=list)
    # When set, successive questions get these answers in turn (a rebinding name server).
    sequence: list[list[str]] = field(default_factory=list)

    async def __call__(self, host: str, port: int) -> list[str]:
        self.asked.append(host)
        if self.sequence:
            return self.sequence.pop(0)
        if host not in self.answers:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return list(self.answers[host])


def manifests(upstream_port: int, scheme: str = "http") -> list[Manifest]:
    auth = ApiKeyAuth(fields=(ApiKeyField("token", "Token"),), header="Authorization", scheme="Bearer")
    base = f"{scheme}://{UPSTREAM_HOST}:{upstream_port}/api"
    return [
        Manifest(
            name="acme",
            version="1.0.0",
            display_name="Acme",
            auth=auth,
            base_url=base,
            tool_prefix="acme_",
            curl_proxy=True,
            allowed_hosts=(ALLOWED_EXTRA_HOST,),
        ),
        Manifest(
            name="other",
            version="1.0.0",
            display_name="Other",
            auth=auth,
            base_url=base,
            tool_prefix="other_",
            curl_proxy=True,
        ),
        Manifest(
            name="oauthy",
            version="1.0.0",
            display_name="OAuth upstream",
            auth=OAuth2Auth(
                authorize_url=f"http://127.0.0.1:{upstream_port}/authorize",
                token_url=f"http://127.0.0.1:{upstream_port}/token",
            ),
            base_url=base,
            tool_prefix="oauthy_",
            curl_proxy=True,
        ),
        Manifest(
            name="noproxy",
            version="1.0.0",
            display_name="No proxy",
            auth=auth,
            base_url=base,
            tool_prefix="noproxy_",
        ),
    ]


def proxy_gateway(tmp_path: Path, upstream_port: int, scheme: str = "http", **settings: Any) -> Gateway:
    registry = build_registry(plugins=False)
    for manifest in manifests(upstream_port, scheme):
        registry.add(manifest, lambda: [])
    return make_gateway(tmp_path, registry=registry, **settings)


@dataclass
class Proxy:
    gateway: Gateway
    principal: Principal
    dns: FakeDns
    port: int
    base: str

    def token(self, *integrations: str, expires: int = 900) -> str:
        minted = self.gateway.curl.mint(self.principal, list(integrations or ("acme",)), expires)
        assert "token" in minted, minted
        return str(minted["token"])

    def audit(self, action: str) -> list[dict[str, Any]]:
        return [
            e
            for e in self.gateway.stores.audit.list_for(self.principal.user.id, limit=1000)
            if e["action"] == action
        ]


class ServerThread:
    def __init__(self, app: Any, port: int) -> None:
        self.app, self.port = app, port

    def __enter__(self) -> ServerThread:
        # The HTTP protocol `workbench serve` uses (httptools with h11's request-target rules).
        self.server, self.thread = start_server_thread(
            self.app, self.port, name="the proxy", http=http_protocol()
        )
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(10)


def start_proxy(
    tmp_path: Path, upstream_port: int, *, allow_loopback: bool = True, scheme: str = "http"
) -> tuple[Proxy, ServerThread]:
    port = free_port()
    gw = proxy_gateway(
        tmp_path,
        upstream_port,
        scheme,
        egress_allow="loopback" if allow_loopback else "public",
        plugin_env={"OAUTHY_CLIENT_ID": "workbench-test-client"},
        public_url=f"http://127.0.0.1:{port}",
    )
    user = gw.stores.users.get_or_create("ada@example.com")
    gw.credentials.save(user.id, "acme", {"token": CREDENTIAL})
    gw.credentials.save(user.id, "other", {"token": OTHER_CREDENTIAL})
    gw.credentials.save(user.id, "noproxy", {"token": OTHER_CREDENTIAL})
    gw.credentials.save(
        user.id,
        "oauthy",
        {"access_token": STALE_ACCESS_TOKEN, "refresh_token": REFRESH_TOKEN, "token_type": "bearer"},
        expires_at=time.time() - 60,
    )
    dns = FakeDns({UPSTREAM_HOST: ["127.0.0.1"], EVIL_HOST: ["127.0.0.1"], ALLOWED_EXTRA_HOST: ["127.0.0.1"]})
    app = create_proxy_app(gw, resolver=dns)
    principal = gw.auth.api_keys.resolve(gw.auth.mint_key(user))  # curl_session tokens are bound to a key
    proxy = Proxy(gw, principal, dns, port, f"http://127.0.0.1:{port}")
    return proxy, ServerThread(app, port)


@pytest.fixture
def proxy(tmp_path: Path, upstream: Recorder, evil: Recorder) -> Iterator[Proxy]:
    p, server = start_proxy(tmp_path, upstream.port)
    with server:
        yield p


@dataclass
class Stack:
    proxy: Proxy
    upstream: Recorder
    evil: Recorder

    def reset(self) -> None:
        for server in (self.upstream, self.evil):
            with server.lock:
                server.seen.clear()
        self.proxy.dns.asked.clear()
        self.proxy.dns.sequence.clear()
        self.proxy.dns.answers.clear()
        self.proxy.dns.answers.update(
            {UPSTREAM_HOST: ["127.0.0.1"], EVIL_HOST: ["127.0.0.1"], ALLOWED_EXTRA_HOST: ["127.0.0.1"]}
        )


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """One proxy and its upstreams for a whole table of cases (reset between cases)."""
    with serving(Recorder()) as up, serving(Recorder()) as bad:
        up.evil_port = bad.port  # type: ignore[attr-defined]
        p, server = start_proxy(tmp_path_factory.mktemp("proxy"), up.port)
        with server:
            yield Stack(p, up, bad)


@dataclass
class RawResponse:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def raw_request(
    port: int, method: str, target: str, headers: dict[str, str] | None = None, body: bytes = b""
) -> RawResponse:
    """Send the request line byte for byte (no client-side normalisation) and read the answer."""
    lines = [f"{method} {target} HTTP/1.1", f"Host: 127.0.0.1:{port}", "Connection: close"]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    if body:
        lines.append(f"Content-Length: {len(body)}")
    data = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(data)
        chunks = []
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    raw = b"".join(chunks)
    head, _, rest = raw.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    parsed = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        parsed[name.strip().lower()] = value.strip()
    if parsed.get("transfer-encoding") == "chunked":
        rest = _dechunk(rest)
    return RawResponse(int(status_line.split()[1]), parsed, rest)


def _dechunk(data: bytes) -> bytes:
    out = b""
    while data:
        size_line, _, data = data.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        out += data[:size]
        data = data[size + 2 :]
    return out
