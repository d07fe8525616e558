"""Metrics: counters and histograms kept in-process (`Metrics`, Prometheus text for `workbench
serve`), and on Lambda the same records written as CloudWatch EMF once per request (`EmfWriter`).

The EMF document, one per (integration, success) of a request::

    {"_aws": {"Timestamp": 1796316169893,
              "CloudWatchMetrics": [{"Namespace": "Workbench",
                                     "Dimensions": [["integration", "success"]],
                                     "Metrics": [{"Name": "workbench_tool_executions_total", "Unit": "Count"},
                                                 {"Name": "workbench_tool_execution_duration_seconds",
                                                  "Unit": "Seconds"}]}]},
     "service": "workbench", "integration": "jots", "success": "true",
     "tools": ["create_jot", "list_jots"],
     "workbench_tool_executions_total": 2, "workbench_tool_execution_duration_seconds": [0.004, 0.002]}

Dimensions stay bounded: the tool names are a property of the record, never a dimension, and every
user-named integration (a custom app) counts under the one value "custom-app". A counter is one sum;
durations keep each value (EMF takes up to 100 per record). Instance-wide counters (audit rows
deferred or dropped) go in one document without dimensions, and the counters the stack's alarms
watch are published without dimensions too (an alarm names exact dimension values). Written by us
rather than Powertools Metrics for the cold start: 39 ms of CPU against 10 (bench/library_cost.py;
docs/deploy.md);
tests/aws/test_observability.py pins the document.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

__all__ = ["ALARMED", "EMF_UNITS", "EmfWriter", "Metrics"]

_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

# The metrics written as EMF, with their CloudWatch units.
EMF_UNITS = {
    "workbench_tool_executions_total": "Count",
    "workbench_tool_execution_duration_seconds": "Seconds",
    "workbench_token_refresh_failures_total": "Count",
    "workbench_audit_rows_deferred_total": "Count",
    "workbench_audit_rows_dropped_total": "Count",
}
_DIMENSIONS = ("integration", "success")
# Counters the stack's alarms watch: also published without dimensions (one series per stack; the
# namespace is the stack's), since an alarm names exact dimension values.
ALARMED = frozenset(
    {
        "workbench_token_refresh_failures_total",
        "workbench_audit_rows_deferred_total",
        "workbench_audit_rows_dropped_total",
    }
)


class Metrics:
    """Prometheus-style counter and histogram, labelled. `listeners` see every value (the Lambda
    runtime hands them to an `EmfWriter`)."""

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


class EmfWriter:
    """Collects one request's metric records (`record`, a `Metrics` listener) and writes them as EMF
    documents on stdout when it ends (`flush`). `known` are the integrations that may be dimension
    values (the registry's plugins); any other is "custom-app"."""

    def __init__(self, namespace: str, service: str) -> None:
        self.namespace = namespace
        self.service = service
        self.known: frozenset[str] = frozenset()
        self._pending: list[tuple[str, dict[str, str], float]] = []

    def record(self, name: str, labels: dict[str, str], value: float) -> None:
        if name in EMF_UNITS:
            self._pending.append((name, labels, value))

    def documents(self) -> list[dict[str, Any]]:
        """This request's records as EMF documents (and forgets them): one per (integration,
        success), and one without dimensions for the instance-wide counters (audit rows deferred or
        dropped)."""
        pending, self._pending = self._pending, []
        records: dict[tuple[str, str] | None, dict[str, Any]] = {}
        for name, labels, value in pending:
            if "integration" not in labels:  # an instance-wide counter (audit rows): no dimensions
                records.setdefault(None, {"tools": [], "values": {}})["values"].setdefault(name, []).append(
                    value
                )
                continue
            integration = labels.get("integration") or "none"
            if integration not in self.known:
                integration = "custom-app"  # user-named: never a dimension value
            record = records.setdefault(
                (integration, labels.get("success") or "none"), {"tools": [], "values": {}}
            )
            record["values"].setdefault(name, []).append(value)
            tool = labels.get("tool")
            if name == "workbench_tool_executions_total" and tool:
                record["tools"].append(tool)
        stamp = int(time.time() * 1000)
        docs = []
        for grouped, record in records.items():
            values = record["values"]
            dimensions: list[list[str]] = [] if grouped is None else [list(_DIMENSIONS)]
            if grouped is None or ALARMED & set(values):
                dimensions.append([])
            doc: dict[str, Any] = {
                "_aws": {
                    "Timestamp": stamp,
                    "CloudWatchMetrics": [
                        {
                            "Namespace": self.namespace,
                            "Dimensions": dimensions,
                            "Metrics": [{"Name": n, "Unit": EMF_UNITS[n]} for n in values],
                        }
                    ],
                },
                "service": self.service,
            }
            if grouped is not None:
                doc.update(integration=grouped[0], success=grouped[1], tools=record["tools"])
            for metric, seen in values.items():
                # A counter is one sum; durations keep each value (EMF takes up to 100 per record).
                doc[metric] = sum(seen) if EMF_UNITS[metric] == "Count" else seen[:100]
            docs.append(doc)
        return docs

    def flush(self) -> None:
        for doc in self.documents():
            sys.stdout.write(json.dumps(doc, separators=(",", ":")) + "\n")
