"""A throttling DynamoDB in front of a moto server (tests and bench/audit_throttling.py): each item of
a BatchWriteItem is refused with probability `rate` (left out of what moto gets, and handed back as
UnprocessedItems, as DynamoDB does when a partition is throttled); a call whose every item is refused
is answered ProvisionedThroughputExceededException. Every other request (other DynamoDB calls, KMS,
SQS) passes through untouched. Loopback only; stops when its block ends."""

from __future__ import annotations

import http.client
import json
import random
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

__all__ = ["ThrottleStats", "throttling_proxy"]


class ThrottleStats:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.items = 0
        self.throttled = 0


@contextmanager
def throttling_proxy(upstream: str, rate: float, seed: int = 7) -> Iterator[tuple[str, ThrottleStats]]:
    target = urlsplit(upstream)
    stats = ThrottleStats()
    rng = random.Random(seed)
    local = threading.local()

    def forward(method: str, path: str, headers: dict[str, str], body: bytes) -> tuple[int, list[Any], bytes]:
        conn = getattr(local, "conn", None)
        if conn is None:
            conn = local.conn = http.client.HTTPConnection(
                target.hostname or "127.0.0.1", target.port, timeout=30
            )
        headers = {k: v for k, v in headers.items() if k.lower() not in ("content-length", "connection")}
        conn.request(method, path, body=body, headers=headers)
        answer = conn.getresponse()
        return answer.status, answer.getheaders(), answer.read()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            headers = dict(self.headers.items())
            dropped: dict[str, list[Any]] = {}
            if headers.get("X-Amz-Target", headers.get("x-amz-target", "")).endswith(".BatchWriteItem"):
                request = json.loads(body)
                kept_any = False
                with stats.lock:
                    for table, items in request["RequestItems"].items():
                        keep = []
                        for item in items:
                            stats.items += 1
                            if rng.random() < rate:
                                stats.throttled += 1
                                dropped.setdefault(table, []).append(item)
                            else:
                                keep.append(item)
                        request["RequestItems"][table] = keep
                        kept_any = kept_any or bool(keep)
                if not kept_any:
                    error = {
                        "__type": "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
                        "message": "The level of configured provisioned throughput for the table was exceeded",
                    }
                    self._reply(
                        400, [("Content-Type", "application/x-amz-json-1.0")], json.dumps(error).encode()
                    )
                    return
                request["RequestItems"] = {t: i for t, i in request["RequestItems"].items() if i}
                body = json.dumps(request).encode()
            status, answer_headers, answer = forward("POST", self.path, headers, body)
            if dropped and status == 200:
                data = json.loads(answer)
                unprocessed = data.setdefault("UnprocessedItems", {})
                for table, items in dropped.items():
                    unprocessed.setdefault(table, []).extend(items)
                answer = json.dumps(data).encode()
            self._reply(status, answer_headers, answer)

        def _reply(self, status: int, headers: list[Any], body: bytes) -> None:
            self.send_response(status)
            for name, value in headers:
                if name.lower() not in (
                    "content-length",
                    "transfer-encoding",
                    "connection",
                    "server",
                    "date",
                ):
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    class Server(ThreadingHTTPServer):
        daemon_threads = True

        def handle_error(self, request: Any, client_address: Any) -> None:
            pass

    server = Server(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", stats
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
