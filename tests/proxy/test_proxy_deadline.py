"""The curl proxy answers within its request's one deadline, however the upstream misbehaves
(issue 23): an upstream that trickles its body (one byte every 0.5 s, so no single read ever times
out), one that stalls after its headers, and one that streams gzip data decoding to nothing forever
are all cut when the request's upstream time is up, with the documented 504; the request is audited;
and when the handler returns, the upstream connection is already closed and nothing of the request
is left running on the instance's loop.

Driven through functions/proxy/app.py as Lambda runs it, with a short invocation (2.5 s left, a
0.5 s margin): the request's deadline is 2 s away, its upstream budget 1.5 s."""

from __future__ import annotations

import asyncio
import re
import select
import socket
import threading
import time
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
from workbench.composition import Gateway, build_gateway
from workbench.runtime import lambda_handler
from workbench.runtime.lambda_handler import reset_instance
from workbench.settings import Settings

from tests.support.apigw import http_api_event, load_entry, response_json
from tests.support.slowapi import connect_slowapi

SECONDS_LEFT = 2.5  # the invocation's remaining time
MARGIN = 0.5  # WORKBENCH_DEADLINE_MARGIN_SECONDS
UPSTREAM_BUDGET = 1.5  # what is left of the deadline, less the proxy's 0.5 s of slack
CAP = 20.0  # no upstream response outlives this, cut or not


class Upstream:
    """A misbehaving API on loopback. Each response records when its client went away."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.closed: list[float] = []
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                try:
                    getattr(self, "_" + self.path.strip("/").replace("-", "_"))()
                except OSError:
                    upstream.closed.append(time.monotonic())

            def _send_until_stopped(self, pieces: Iterator[bytes], every: float) -> None:
                ends = time.monotonic() + CAP
                for piece in pieces:
                    if upstream.stop.wait(every) or time.monotonic() > ends:
                        return
                    self.wfile.write(piece)
                    self.wfile.flush()

            def _trickle(self) -> None:  # 1 byte / 0.5 s of a body that claims 1 MB
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(1_000_000))
                self.end_headers()
                self._send_until_stopped(iter(lambda: b" ", None), 0.5)

            def _stall(self) -> None:  # headers and a first byte, then nothing
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", "100")
                self.end_headers()
                self.wfile.write(b"{")
                self.wfile.flush()
                ends = time.monotonic() + CAP
                while not upstream.stop.wait(0.05) and time.monotonic() < ends:
                    if self._client_gone():
                        upstream.closed.append(time.monotonic())
                        return

            def _client_gone(self) -> bool:
                ready, _, _ = select.select([self.connection], [], [], 0)
                return bool(ready) and self.connection.recv(1, socket.MSG_PEEK) == b""

            def _gzip_nothing(self) -> None:  # a gzip stream of empty flushes: endless, decodes to b""
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-encoding", "gzip")
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                z = zlib.compressobj(wbits=16 + zlib.MAX_WBITS)
                # After a sync flush the stream is byte-aligned: an empty stored block (not the
                # last) is 00, then LEN 0000 and NLEN ffff. Valid gzip, endless, decodes to b"".
                empty_block = b"\x00\x00\x00\xff\xff" * 20

                def chunks() -> Iterator[bytes]:
                    first = z.compress(b"") + z.flush(zlib.Z_SYNC_FLUSH)
                    yield b"%x\r\n%s\r\n" % (len(first), first)
                    while True:
                        yield b"%x\r\n%s\r\n" % (len(empty_block), empty_block)

                self._send_until_stopped(chunks(), 0.05)

            def log_message(self, format: str, *args: object) -> None:
                pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Upstream:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


class Context:
    """What Lambda hands the handler: an invocation with `seconds` left."""

    aws_request_id = "proxy-deadline"

    def __init__(self, seconds: float) -> None:
        self.ends = time.monotonic() + seconds

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self.ends - time.monotonic()) * 1000))


@pytest.fixture
def upstream(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Upstream, Gateway, str]]:
    with Upstream() as api:
        monkeypatch.setenv("WORKBENCH_STORE", "sqlite")
        monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path))
        monkeypatch.setenv("WORKBENCH_PUBLIC_URL", "https://wb.example.com")
        monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "1")
        monkeypatch.setenv("WORKBENCH_EXTRA_PLUGINS", "tests.support.slowapi")
        monkeypatch.setenv("WB_SLOW_API_URL", api.url)
        monkeypatch.setenv("WORKBENCH_EGRESS_ALLOW", "loopback")
        monkeypatch.setenv("WORKBENCH_DEADLINE_MARGIN_SECONDS", str(MARGIN))
        reset_instance()
        gw = build_gateway(Settings.from_env())
        ada = gw.stores.users.get_or_create("ada@example.com")
        connect_slowapi(gw, ada.id)
        token = str(gw.curl.mint(gw.auth.api_keys.resolve(gw.auth.mint_key(ada)), ["slowapi"], 300)["token"])
        yield api, gw, token
        reset_instance()


@pytest.mark.parametrize("path", ["/trickle", "/stall", "/gzip-nothing"])
def test_a_misbehaving_upstream_is_cut_at_the_requests_deadline(
    upstream: tuple[Upstream, Gateway, str], path: str
) -> None:
    api, gw, token = upstream
    event = http_api_event("GET", f"/c/slowapi{path}", headers={"authorization": f"Bearer {token}"})
    event["requestContext"]["http"]["path"] = unquote(event["rawPath"])
    started = time.monotonic()
    result = load_entry("proxy").handler(event, Context(SECONDS_LEFT))
    answered = time.monotonic()
    elapsed = answered - started

    assert result["statusCode"] == 504, result
    # The limit named is what the request had left for the upstream when it went out (whole tenths).
    error = response_json(result)["error"]
    named = re.fullmatch(r"Upstream timed out after (\d+(?:\.\d)?) s", error)
    assert named is not None, error
    budget = float(named.group(1))
    assert 0.5 <= budget <= UPSTREAM_BUDGET  # less when the steps before the upstream took long
    assert budget - 0.1 <= elapsed < SECONDS_LEFT - MARGIN, elapsed  # cut at the deadline, not after

    # Nothing of the request runs after the answer: no task left on the instance's loop, and the
    # upstream connection is already closed (the server's next write fails).
    loop = lambda_handler._instance["loop"]
    assert [t for t in asyncio.all_tasks(loop) if not t.done()] == []
    while not api.closed and time.monotonic() - answered < 2.0:
        time.sleep(0.05)
    assert api.closed, "the upstream connection was left open after the answer"
    assert api.closed[0] - answered < 1.0

    # Audited, with the status the caller got.
    ada = gw.stores.users.get_or_create("ada@example.com")
    [row] = [e for e in gw.stores.audit.list_for(ada.id) if e["action"] == "PROXY"]
    assert (row["path"], row["status"], row["success"]) == (path, 504, False)
    assert row["error"] == error
