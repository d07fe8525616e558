"""A test plugin (an API key, `connect_slowapi` stores one) whose API is `slow_upstream()` on loopback: GET /fast answers at once,
GET /slow only when the test lets it (or after 15 s), GET /big?bytes=N answers N bytes of JSON,
GET /cp1252 answers `CP1252_CSV`, a text body that is not UTF-8.

Registered with WORKBENCH_EXTRA_PLUGINS=tests.support.slowapi; the API's URL comes from
WB_SLOW_API_URL in the gateway process (in-process tests build the manifest directly).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from workbench.manifest import ApiKeyAuth, ApiKeyField, Manifest

__all__ = ["CP1252_CSV", "connect_slowapi", "make_manifest", "manifest", "slow_upstream"]

# A windows-1252 CSV: curly quotes, a euro sign, an en dash and Latin-1 letters, none of it UTF-8.
CP1252_CSV = "name;price;note\n\u201cCaf\u00e9\u201d;5 \u20ac;cr\u00e8me \u2013 br\u00fbl\u00e9e\n".encode(
    "cp1252"
)

SLOW_CAP_SECONDS = 15.0  # a /slow request never outlives this, released or not


def make_manifest(base_url: str) -> Manifest:
    return Manifest(
        name="slowapi",
        version="1.0.0",
        display_name="Slow API",
        description="A loopback API that answers slowly on purpose (deadline tests).",
        auth=ApiKeyAuth((ApiKeyField("key", "API key"),)),
        base_url=base_url.rstrip("/"),
        tool_prefix="slowapi_",
        curl_proxy=True,
        tools_module="tests.support.slowapi.tools",
    )


def __getattr__(name: str) -> Any:
    """`manifest`, read when the registry asks: WB_SLOW_API_URL is set after this module is imported."""
    if name == "manifest":
        return make_manifest(os.environ.get("WB_SLOW_API_URL", "http://127.0.0.1:9"))
    raise AttributeError(name)


def connect_slowapi(gateway: Any, user_id: str) -> None:
    gateway.credentials.save(user_id, "slowapi", {"key": "slow-key"})


@contextmanager
def slow_upstream(*, keep_alive: bool = False) -> Iterator[str]:
    """The API on a free loopback port; stops (releasing any /slow request) when the block ends.
    With `keep_alive`, connections stay open between requests (HTTP/1.1), so a client's pool reuses them."""
    release = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1" if keep_alive else "HTTP/1.0"

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            if url.path == "/slow":
                release.wait(SLOW_CAP_SECONDS)
                body = json.dumps({"slow": True}).encode()
            elif url.path == "/big":
                size = int(parse_qs(url.query).get("bytes", ["0"])[0])
                body = json.dumps({"data": "x" * max(0, size - 12)}).encode()
            else:
                body = json.dumps({"fast": True}).encode()
            kind = "application/json"
            if url.path == "/cp1252":
                body, kind = CP1252_CSV, "text/csv; charset=windows-1252"
            try:
                self.send_response(200)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except OSError:
                pass  # the client gave up (that is the point of /slow)

        def log_message(self, format: str, *args: object) -> None:
            pass

    class Server(ThreadingHTTPServer):
        def handle_error(self, request: Any, client_address: Any) -> None:
            pass  # a client that closed its kept-alive connection: nothing to report

    server = Server(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        release.set()
        server.shutdown()
        server.server_close()
        thread.join(5)
