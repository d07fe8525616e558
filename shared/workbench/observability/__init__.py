"""The only logger and metrics. JSON log lines; counters/histograms kept in-process and, on Lambda,
written as CloudWatch EMF once per request by the Lambda runtime (lambda_runtime.py)."""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

__all__ = ["Metrics", "configure_logging", "log_error", "log_event", "logger"]

logger = logging.getLogger("workbench")

# Values registered here are replaced by "[REDACTED]" in every log line (vault secrets).
_Scrubber = Callable[[str], str]


def log_event(event: str, scrub: _Scrubber | None = None, **fields: Any) -> None:
    """One structured JSON log line."""
    line = json.dumps({"ts": round(time.time(), 3), "event": event, **fields}, default=str)
    if scrub is not None:
        line = scrub(line)
    logger.info(line)


def log_error(event: str, **fields: Any) -> None:
    """One structured JSON line at ERROR level: something an operator must see (and alarm on)."""
    logger.error(
        json.dumps({"ts": round(time.time(), 3), "event": event, "level": "error", **fields}, default=str)
    )


_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class Metrics:
    """Prometheus-style counter and histogram, labelled; exported as text or EMF records."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.counters: dict[tuple[str, tuple[tuple[str, str], ...]], float] = defaultdict(float)
        self.histograms: dict[tuple[str, tuple[tuple[str, str], ...]], list[float]] = {}
        self.listeners: list[Callable[[str, dict[str, str], float], None]] = []

    def inc(self, name: str, labels: dict[str, str], value: float = 1.0) -> None:
        key = (name, tuple(sorted(labels.items())))
        with self._lock:
            self.counters[key] += value
        for listener in self.listeners:
            listener(name, labels, value)

    def observe(self, name: str, labels: dict[str, str], value: float) -> None:
        key = (name, tuple(sorted(labels.items())))
        with self._lock:
            buckets = self.histograms.setdefault(key, [0.0] * (len(_BUCKETS) + 2))
            for i, bound in enumerate(_BUCKETS):
                if value <= bound:
                    buckets[i] += 1
            buckets[-2] += 1  # count
            buckets[-1] += value  # sum
        for listener in self.listeners:
            listener(name, labels, value)

    def counter_value(self, name: str, **labels: str) -> float:
        return self.counters.get((name, tuple(sorted(labels.items()))), 0.0)

    def prometheus(self) -> str:
        out: list[str] = []
        with self._lock:
            for (name, labels), value in sorted(self.counters.items()):
                out.append(f"{name}{_fmt(labels)} {value}")
            for (name, labels), b in sorted(self.histograms.items()):
                for i, bound in enumerate(_BUCKETS):
                    out.append(f"{name}_bucket{_fmt((*labels, ('le', str(bound))))} {b[i]}")
                out.append(f"{name}_bucket{_fmt((*labels, ('le', '+Inf')))} {b[-2]}")
                out.append(f"{name}_count{_fmt(labels)} {b[-2]}")
                out.append(f"{name}_sum{_fmt(labels)} {b[-1]}")
        return "\n".join(out) + "\n"


def _fmt(labels: tuple[tuple[str, str], ...]) -> str:
    if not labels:
        return ""
    return "{" + ",".join(f'{k}="{v}"' for k, v in labels) + "}"


def configure_logging(level: int = logging.INFO) -> None:
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False
