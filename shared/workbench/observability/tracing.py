"""X-Ray subsegments, sent straight to the X-Ray daemon: no X-Ray SDK.

Why not aws_xray_sdk (or powertools' Tracer over it): importing it pulls botocore's client
machinery for its sampling poller, about 280 ms of every cold start, to do what this module does in
a few lines. Lambda (with tracing Active) already records the invocation's segment, samples the
request and passes the decision in the trace header; all a function adds are subsegments, sent to
the daemon as UDP datagrams (`{"format": "json", "version": 1}` + newline + the document).

Use: the Lambda runtime opens one request span per invocation (`request_span`); the AWS client and
the engine's upstream HTTP transport open child spans with `span(...)`. Without a sampled request
span (locally, in tests, or when X-Ray did not sample the request) `span` costs one ContextVar read.
Ids are drawn when a span starts, never at import (SnapStart snapshots must hold no random state).
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

__all__ = ["Span", "TraceHeader", "current_span", "request_span", "span"]

_HEADER = b'{"format": "json", "version": 1}\n'
# A UDP datagram to the daemon must stay under 64 KiB; bigger documents are sent child by child.
_MAX_DATAGRAM = 60_000


@dataclass(frozen=True, slots=True)
class TraceHeader:
    root: str
    parent: str

    @classmethod
    def parse(cls, header: str | None) -> TraceHeader | None:
        """Root/Parent of a sampled request's `X-Amzn-Trace-Id` (None when not sampled)."""
        if not header:
            return None
        fields = dict(part.strip().partition("=")[::2] for part in header.split(";") if "=" in part)
        if fields.get("Sampled") != "1" or not fields.get("Root") or not fields.get("Parent"):
            return None
        return cls(fields["Root"], fields["Parent"])


class Span:
    # A plain class: every cold start builds this module's classes (a dataclass costs about 1 ms).
    __slots__ = (
        "annotations",
        "aws",
        "children",
        "end_time",
        "error",
        "fault",
        "http",
        "id",
        "name",
        "namespace",
        "start_time",
        "throttle",
    )

    def __init__(
        self,
        name: str,
        namespace: str | None = None,
        *,
        aws: dict[str, Any] | None = None,
        http: dict[str, Any] | None = None,
    ) -> None:
        self.name = name
        self.namespace = namespace
        self.id = os.urandom(8).hex()
        self.start_time = time.time()
        self.end_time: float | None = None
        self.annotations: dict[str, str | int | float | bool] = {}
        # X-Ray's typed sections: "aws" (operation, table_name, ...) and "http" (request/response).
        self.aws = aws
        self.http = http
        self.error = False
        self.fault = False
        self.throttle = False
        self.children: list[Span] = []

    def document(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "name": self.name,
            "id": self.id,
            "start_time": self.start_time,
            "end_time": self.end_time or time.time(),
        }
        if self.namespace:
            doc["namespace"] = self.namespace
        for key in ("annotations", "aws", "http"):
            value = getattr(self, key)
            if value:
                doc[key] = value
        for flag in ("error", "fault", "throttle"):
            if getattr(self, flag):
                doc[flag] = True
        if self.children:
            doc["subsegments"] = [child.document() for child in self.children]
        return doc


_current: ContextVar[Span | None] = ContextVar("workbench_span", default=None)


def current_span() -> Span | None:
    return _current.get()


@contextmanager
def span(name: str, namespace: str | None = None) -> Iterator[Span | None]:
    """A child of the current span (None, and nothing recorded, outside a sampled request)."""
    parent = _current.get()
    if parent is None:
        yield None
        return
    child = Span(name, namespace)
    parent.children.append(child)
    token = _current.set(child)
    try:
        yield child
    except BaseException:
        child.fault = True
        raise
    finally:
        child.end_time = time.time()
        _current.reset(token)


@contextmanager
def request_span(name: str, header: str | None, daemon_address: str | None) -> Iterator[Span | None]:
    """The request's subsegment under Lambda's segment; sent to the daemon when it ends."""
    trace = TraceHeader.parse(header)
    if trace is None or not daemon_address:
        yield None
        return
    root = Span(name)
    token = _current.set(root)
    try:
        yield root
    except BaseException:
        root.fault = True
        raise
    finally:
        root.end_time = time.time()
        _current.reset(token)
        _send(root, trace, daemon_address)


def _send(root: Span, trace: TraceHeader, daemon_address: str) -> None:
    host, _, port = daemon_address.rpartition(":")
    doc = {**root.document(), "trace_id": trace.root, "parent_id": trace.parent, "type": "subsegment"}
    packets = [json.dumps(doc, separators=(",", ":"), default=str).encode()]
    if len(packets[0]) > _MAX_DATAGRAM:  # too big for one datagram: the children go on their own
        children = doc.pop("subsegments", [])
        packets = [json.dumps(doc, separators=(",", ":"), default=str).encode()]
        for child in children:
            child.update(trace_id=trace.root, parent_id=root.id, type="subsegment")
            packet = json.dumps(child, separators=(",", ":"), default=str).encode()
            if len(packet) > _MAX_DATAGRAM:  # keep the child, lose its own detail
                child.pop("subsegments", None)
                packet = json.dumps(child, separators=(",", ":"), default=str).encode()
            packets.append(packet)
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            for packet in packets:
                sock.sendto(_HEADER + packet, (host or "127.0.0.1", int(port)))
    except (OSError, ValueError):
        pass  # tracing must never fail a request
