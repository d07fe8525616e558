"""Adapts a surface's ASGI app to an AWS Lambda handler (API Gateway HTTP API v2 events).

Cold start is a feature: importing this module (and a functions/*/app.py entry) imports neither
boto3 nor anything heavy. The gateway (the composition root) is built once per instance, on
the first event, and shared by every surface the instance serves; boto3 clients are created when
the first store/KMS call needs them.

Observability:
- Logs: one JSON object per line on stdout (`_JsonLines`); the API Gateway request id is the
  correlation id, and the engine's own `workbench` logger writes through the same formatter. The
  environment names are powertools' (POWERTOOLS_SERVICE_NAME, POWERTOOLS_LOG_LEVEL,
  POWERTOOLS_METRICS_NAMESPACE), the convention Lambda tooling knows.
- Metrics: CloudWatch EMF, written once per request (not once per execution):
  `workbench_tool_executions_total` (Count) and `workbench_tool_execution_duration_seconds`
  (Seconds) per (integration, success). Dimensions stay bounded: the tool names are a property of
  the record, never a dimension, and every custom app counts under the one integration "custom-app".
- Traces: one X-Ray subsegment per request, with DynamoDB/KMS calls as children (workbench.observability.tracing:
  straight to the X-Ray daemon, no X-Ray SDK).
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import logging
import os
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from workbench.observability.tracing import request_span

if TYPE_CHECKING:
    from workbench.composition import Gateway

__all__ = ["Handler", "instance_gateway", "lambda_handler_for", "reset_instance"]

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]
AppFactory = Callable[["Gateway"], Any]

_EMF_UNITS = {
    "workbench_tool_executions_total": "Count",
    "workbench_tool_execution_duration_seconds": "Seconds",
    "workbench_token_refresh_failures_total": "Count",
    "workbench_audit_rows_deferred_total": "Count",
    "workbench_audit_rows_dropped_total": "Count",
}
_DIMENSIONS = ("integration", "success")
# Counters the stack's alarms watch: also published without dimensions (one series per stack; the
# namespace is the stack's), since an alarm names exact dimension values.
_ALARMED = frozenset(
    {
        "workbench_token_refresh_failures_total",
        "workbench_audit_rows_deferred_total",
        "workbench_audit_rows_dropped_total",
    }
)

# The one cached root of a Lambda instance: gateway + logging/metrics objects, built on first use.
_instance: dict[str, Any] = {}
_instance_lock = threading.Lock()


class _CurrentStdout(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever sys.stdout is now (Lambda: the log stream; tests: their capture)."""

    @property
    def stream(self) -> Any:
        return sys.stdout

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


# The LogRecord's own attributes: anything else on a record came in through `extra=` and is a field.
_RECORD_FIELDS = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime"}


class _JsonLines(logging.Formatter):
    """One JSON object per line, with the fields CloudWatch Logs Insights queries lean on (level,
    location, message, timestamp, service, correlation_id, the function's request id) and every
    `extra=` field of the record. A few lines of our own instead of powertools' Logger, whose
    import was a measurable share of each cold start."""

    def __init__(self, service: str) -> None:
        super().__init__()
        self.service = service
        self.correlation_id: str | None = None

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "level": record.levelname,
            "location": f"{record.funcName}:{record.lineno}",
            "message": record.getMessage(),
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "service": self.service,
        }
        if self.correlation_id:
            line["correlation_id"] = self.correlation_id
        for key, value in vars(record).items():
            if key not in _RECORD_FIELDS and not key.startswith("_"):
                line[key] = value
        if record.exc_info and record.exc_info[0] is not None:
            line["exception_name"] = record.exc_info[0].__name__
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str, ensure_ascii=False)


class _Observability:
    def __init__(self) -> None:
        service = os.environ.get("POWERTOOLS_SERVICE_NAME", "workbench")
        self.service = service
        self.namespace = os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "Workbench")
        level_name = os.environ.get("POWERTOOLS_LOG_LEVEL") or os.environ.get("LOG_LEVEL") or "INFO"
        self.level = logging.getLevelName(level_name.upper())
        if not isinstance(self.level, int):
            self.level = logging.INFO
        self.formatter = _JsonLines(service)
        self.handler = _CurrentStdout()
        self.handler.setFormatter(self.formatter)
        # The engine's own logger: its tool-execution lines and ours share one JSON format.
        self.logger = logging.getLogger("workbench")
        # Where Lambda's X-Ray daemon listens (set only when the function's tracing is Active).
        self.xray_daemon = os.environ.get("AWS_XRAY_DAEMON_ADDRESS")
        # This request's metric records, written as EMF when it ends.
        self._pending: list[tuple[str, dict[str, str], float]] = []
        self._known: frozenset[str] = frozenset()

    def set_correlation_id(self, value: str | None) -> None:
        """The API Gateway request id (or the invocation's) on every line until the next request."""
        self.formatter.correlation_id = value

    def install_logging(self) -> None:
        """Route the engine's `workbench` logger through the JSON handler. Idempotent; re-applied
        whenever a gateway is built. Lambda's runtime puts a plain-text handler on the root logger:
        no propagation, one line."""
        target = self.logger
        if self.handler not in target.handlers:
            target.addHandler(self.handler)
        target.propagate = False
        target.setLevel(self.level)

    def known_integrations(self, names: frozenset[str]) -> None:
        self._known = names

    def record_metric(self, name: str, labels: dict[str, str], value: float) -> None:
        if name in _EMF_UNITS:
            self._pending.append((name, labels, value))

    def flush_metrics(self) -> None:
        """This request's metrics as EMF: one record per (integration, success), and one without
        dimensions for the instance-wide counters (audit rows deferred or dropped)."""
        if not self._pending:
            return
        pending, self._pending = self._pending, []
        records: dict[tuple[str, str] | None, dict[str, Any]] = {}
        for name, labels, value in pending:
            if "integration" not in labels:  # an instance-wide counter (audit rows): no dimensions
                records.setdefault(None, {"tools": [], "values": {}})["values"].setdefault(name, []).append(
                    value
                )
                continue
            integration = labels.get("integration") or "none"
            if integration not in self._known:
                integration = "custom-app"  # user-named: never a dimension value
            record = records.setdefault(
                (integration, labels.get("success") or "none"), {"tools": [], "values": {}}
            )
            record["values"].setdefault(name, []).append(value)
            tool = labels.get("tool")
            if name == "workbench_tool_executions_total" and tool:
                record["tools"].append(tool)
        stamp = int(time.time() * 1000)
        for grouped, record in records.items():
            values = record["values"]
            dimensions: list[list[str]] = [] if grouped is None else [list(_DIMENSIONS)]
            if grouped is None or _ALARMED & set(values):
                dimensions.append([])
            doc: dict[str, Any] = {
                "_aws": {
                    "Timestamp": stamp,
                    "CloudWatchMetrics": [
                        {
                            "Namespace": self.namespace,
                            "Dimensions": dimensions,
                            "Metrics": [{"Name": n, "Unit": _EMF_UNITS[n]} for n in values],
                        }
                    ],
                },
                "service": self.service,
            }
            if grouped is not None:
                doc.update(integration=grouped[0], success=grouped[1], tools=record["tools"])
            for metric, seen in values.items():
                # A counter is one sum; durations keep each value (EMF takes up to 100 per record).
                doc[metric] = sum(seen) if _EMF_UNITS[metric] == "Count" else seen[:100]
            sys.stdout.write(json.dumps(doc, separators=(",", ":")) + "\n")


def _observability() -> _Observability:
    obs = _instance.get("observability")
    if obs is None:
        with _instance_lock:
            obs = _instance.get("observability")
            if obs is None:
                obs = _instance["observability"] = _Observability()
    return obs


def instance_gateway(event: dict[str, Any] | None = None) -> Gateway:
    """The gateway of this instance, built once from the environment (on the first event).

    Without WORKBENCH_PUBLIC_URL, the public URL is the API Gateway domain the first request came
    in on (requestContext.domainName is set by API Gateway, not by the client).
    """
    gateway = _instance.get("gateway")
    if gateway is not None:
        return gateway  # type: ignore[no-any-return]
    with _instance_lock:
        gateway = _instance.get("gateway")
        if gateway is None:
            from workbench.composition import build_gateway
            from workbench.settings import Settings

            settings = Settings.from_env()
            domain = ((event or {}).get("requestContext") or {}).get("domainName")
            if not os.environ.get("WORKBENCH_PUBLIC_URL") and domain:
                settings = replace(settings, public_url=f"https://{domain}")
            gateway = build_gateway(settings)
            _instance["gateway"] = gateway
    obs = _observability()
    obs.install_logging()
    obs.known_integrations(frozenset(m.name for m in gateway.registry.manifests()))
    if obs.record_metric not in gateway.metrics.listeners:
        gateway.metrics.listeners.append(obs.record_metric)
    return gateway


def reset_instance() -> None:
    """Forget the cached gateway (tests: a fresh 'cold start' in the same process). The logging
    objects stay: like the process's logging configuration, they are made once per process."""
    with _instance_lock:
        _instance.pop("gateway", None)


def _event_loop() -> asyncio.AbstractEventLoop:
    """The instance's one event loop, made once and run for every event, HTTP or direct (the
    pattern Lambda's own async runtimes follow). Everything the engine keeps across events is bound
    to it: the plugins' pooled connections, per-connection refresh locks, the audit group writer. A
    loop per event (asyncio.run) would close the loop those belong to, and the next event would meet
    "Event loop is closed" or "bound to a different event loop". Code that ran asyncio.run() on this
    thread in between leaves no current loop; the instance's loop is made current again."""
    loop: asyncio.AbstractEventLoop | None = _instance.get("loop")
    if loop is None or loop.is_closed():
        loop = _instance["loop"] = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    return loop


def _run(loop: asyncio.AbstractEventLoop, outcome: Any) -> Any:
    """A direct handler's answer: awaited on the instance's loop when it is a coroutine."""
    if inspect.isawaitable(outcome):
        return loop.run_until_complete(_awaited(outcome))
    return outcome


async def _awaited(outcome: Awaitable[Any]) -> Any:
    return await outcome


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)


def _resolve(factory: Callable[..., Any] | str) -> Callable[..., Any]:
    if callable(factory):
        return factory
    module, _, name = factory.partition(":")
    resolved: Callable[..., Any] = getattr(importlib.import_module(module), name)
    return resolved


def lambda_handler_for(
    factory: AppFactory | str,
    *,
    surface: str | None = None,
    direct: Callable[[Gateway, dict[str, Any]], dict[str, Any]] | str | None = None,
) -> Handler:
    """A Lambda handler serving the ASGI app `factory(gateway)` builds.

    `factory` may be a "module:function" string, so the entry file imports nothing heavy.
    `direct` (also callable or "module:function") handles events that did not come through API
    Gateway (no requestContext), e.g. EventBridge Scheduler: `direct(gateway, event)`, a coroutine
    function (run on the instance's one loop, like every HTTP event) or a plain one.
    """
    state: dict[str, Any] = {}
    name = surface or (factory if isinstance(factory, str) else getattr(factory, "__module__", "app"))

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        if direct is not None and "requestContext" not in event:
            gateway = instance_gateway(event)
            obs = _observability()
            obs.set_correlation_id(getattr(context, "aws_request_id", None))
            obs.logger.info("direct invocation", extra={"surface": name, "source": event.get("source")})
            from workbench.guard import deadline

            limit = deadline.for_invocation(context, margin=gateway.settings.deadline_margin_seconds)
            loop = _event_loop()
            try:
                with deadline.scope(limit):  # no API Gateway here: the function's remaining time
                    answer: dict[str, Any] = _run(loop, _resolve(direct)(gateway, event))
            except Exception as exc:
                # Raised on purpose: a failed invocation is what makes Lambda retry an asynchronous
                # event and then hand it to the dead-letter queue.
                obs.logger.error("direct invocation failed", extra={"surface": name, "error": str(exc)})
                raise
            finally:
                obs.flush_metrics()
            return answer
        adapter = state.get("adapter")
        cold = adapter is None or state.pop("restored", False)
        if adapter is None:
            from workbench.aws.apigw import ApiGatewayV2

            gateway = instance_gateway(event)
            adapter = state["adapter"] = ApiGatewayV2(_resolve(factory)(gateway))
        obs = _observability()
        loop = _event_loop()
        ctx = event.get("requestContext") or {}
        obs.set_correlation_id(ctx.get("requestId"))
        http = ctx.get("http") or {}
        started = time.perf_counter()
        line = {
            "surface": name,
            "method": http.get("method"),
            "path": event.get("rawPath"),
            "cold_start": cold,
        }
        # The runtime sets the trace header per invocation, in the environment.
        trace_header = os.environ.get("_X_AMZN_TRACE_ID")
        try:
            with request_span(f"## {name}", trace_header, obs.xray_daemon) as traced:
                if traced is not None:
                    traced.annotations.update(ColdStart=cold, surface=str(name))
                result: dict[str, Any] = loop.run_until_complete(adapter.run(event, context))
        except Exception:
            # API Gateway answers 500 for a failed invocation; the log says which request it was.
            obs.logger.exception("request failed", extra={**line, "status": 500, "duration_ms": _ms(started)})
            raise
        finally:
            obs.flush_metrics()
        max_bytes = instance_gateway(event).settings.max_response_bytes
        if max_bytes:
            from workbench.guard.response_limit import fit_response

            fitted = fit_response(result, surface=str(name), limit=max_bytes, event=event)
            if fitted is not result:
                obs.logger.warning("response too large for Lambda", extra={**line, "limit": max_bytes})
                result = fitted
        obs.logger.info(
            "request", extra={**line, "status": result.get("statusCode"), "duration_ms": _ms(started)}
        )
        return result

    if os.environ.get("AWS_LAMBDA_INITIALIZATION_TYPE") == "snap-start":
        _prewarm(state, factory)
    return handler


def _prewarm(state: dict[str, Any], factory: AppFactory | str) -> None:
    """SnapStart init (before Lambda takes the snapshot every restored instance resumes from): do the
    one-time work now — imports, and the gateway and app when the public URL is fixed (a custom
    domain; otherwise it comes from the first request). Nothing here may draw randomness, make a key,
    nonce or id, or open a connection: the snapshot is shared (tests/aws/test_snapstart.py)."""
    from workbench.aws.apigw import ApiGatewayV2

    _observability()
    app_factory = _resolve(factory)
    if os.environ.get("WORKBENCH_PUBLIC_URL"):
        state["adapter"] = ApiGatewayV2(app_factory(instance_gateway(None)))
        state["restored"] = True  # the first request after a restore still counts as a cold start
