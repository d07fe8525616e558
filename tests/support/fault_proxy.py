"""A fault-injecting HTTP proxy on loopback in front of an AWS endpoint (moto, dynalite).

Every request is forwarded unchanged (the SigV4 signature covers the host moto sees as ours, which
moto does not check) unless a fault is set for its service — chosen by the `X-Amz-Target` prefix,
`DynamoDB_20120810.` or `TrentService.` (KMS):

  "throttle"   400 ThrottlingException (retryable: the client retries, then gives up)
  "5xx"        500 InternalServerError
  "drop"       the connection is closed without an answer (RemoteDisconnected)
  "conflict"   DynamoDB TransactWriteItems only: 400 TransactionCanceledException, its first item in
               TransactionConflict (another transaction on it at that moment); other calls pass

`faults` maps "dynamodb" / "kms" to one of those (or nothing). `hits` counts faulted requests.
"""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

__all__ = ["FaultProxy", "fault_proxy"]

_SERVICES = {"DynamoDB_20120810.": "dynamodb", "TrentService.": "kms"}


@dataclass
class FaultProxy:
    upstream: str
    url: str = ""
    faults: dict[str, str] = field(default_factory=dict)
    hits: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @contextmanager
    def fault(self, service: str, kind: str) -> Iterator[None]:
        self.faults[service] = kind
        try:
            yield
        finally:
            self.faults.pop(service, None)


class _Server(ThreadingHTTPServer):
    request_queue_size = 128
    daemon_threads = True


def _handler(proxy: FaultProxy) -> type[BaseHTTPRequestHandler]:
    target = urlsplit(proxy.upstream)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            amz = self.headers.get("X-Amz-Target", "")
            service = next((name for prefix, name in _SERVICES.items() if amz.startswith(prefix)), "")
            kind = proxy.faults.get(service)
            if kind == "conflict" and not amz.endswith(".TransactWriteItems"):
                kind = None
            if kind:
                with proxy._lock:
                    proxy.hits[service] = proxy.hits.get(service, 0) + 1
                if kind == "drop":
                    self.close_connection = True
                    self.connection.close()
                    return
                if kind == "throttle":
                    return self._answer(400, {"__type": "ThrottlingException", "message": "Rate exceeded"})
                if kind == "conflict":
                    items = json.loads(body).get("TransactItems", [])
                    reasons = [{"Code": "TransactionConflict"}] + [{"Code": "None"}] * (len(items) - 1)
                    return self._answer(
                        400,
                        {
                            "__type": "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
                            "message": "Transaction cancelled, please refer cancellation reasons for specific "
                            "reasons [TransactionConflict, None]",
                            "CancellationReasons": reasons,
                        },
                    )
                return self._answer(
                    500, {"__type": "InternalServerError", "message": "Internal server error"}
                )
            conn = http.client.HTTPConnection(target.hostname, target.port, timeout=30)
            try:
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("connection",)}
                conn.request("POST", self.path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                self.send_response(resp.status)
                for k, v in resp.getheaders():
                    if k.lower() not in (
                        "connection",
                        "transfer-encoding",
                        "content-length",
                        "server",
                        "date",
                    ):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            finally:
                conn.close()

        def _answer(self, status: int, body: dict[str, Any]) -> None:
            raw = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/x-amz-json-1.0")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

    return Handler


@contextmanager
def fault_proxy(upstream: str) -> Iterator[FaultProxy]:
    proxy = FaultProxy(upstream)
    server = _Server(("127.0.0.1", 0), _handler(proxy))
    proxy.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield proxy
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
