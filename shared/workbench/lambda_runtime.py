"""Adapts a surface's ASGI app to an AWS Lambda handler (API Gateway HTTP API v2 events).

Cold start is a feature: importing this module (and a functions/*/app.py entry) imports neither
boto3, mangum nor powertools. The gateway (the composition root) is built once per instance, on
the first event, and shared by every surface the instance serves; boto3 clients are created when
the first store/KMS call needs them.

Observability (aws-lambda-powertools, imported on the first event):
- Logger: structured JSON on stdout; the API Gateway request id is the correlation id, and the
  engine's own `workbench` logger is routed through the same JSON formatter.
- Metrics: every tool execution is flushed as CloudWatch EMF — `workbench_tool_executions_total`
  (Count) and `workbench_tool_execution_duration_seconds` (Seconds), dimensions integration, tool,
  success — via the engine's Metrics listener hook.
- Tracer: X-Ray, with botocore/httpx calls patched and one subsegment per request.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from workbench.composition import Gateway

__all__ = ["Handler", "instance_gateway", "lambda_handler_for", "reset_instance"]

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]
AppFactory = Callable[["Gateway"], Any]

_EMF_UNITS = {
    "workbench_tool_executions_total": "Count",
    "workbench_tool_execution_duration_seconds": "Seconds",
}
_DIMENSIONS = ("integration", "tool", "success")

# The one cached root of a Lambda instance: gateway + powertools objects, built on first use.
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


class _Observability:
    def __init__(self) -> None:
        from aws_lambda_powertools import Logger, Tracer

        service = os.environ.get("POWERTOOLS_SERVICE_NAME", "workbench")
        self.namespace = os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "Workbench")
        self.logger = Logger(service=service, logger_handler=_CurrentStdout())
        self.level = self.logger.log_level or logging.INFO  # POWERTOOLS_LOG_LEVEL, as powertools set it
        self.tracer = Tracer(service=service)

    def install_logging(self) -> None:
        """Route the engine's `workbench` logger (and ours) through the powertools JSON handler, so
        every line carries the correlation id. Idempotent; re-applied whenever a gateway is built.
        Lambda's runtime puts a plain-text handler on the root logger: no propagation, one line."""
        handler = self.logger.registered_handler
        for name in dict.fromkeys((self.logger.name, "workbench")):
            target = logging.getLogger(name)
            if handler not in target.handlers:
                target.addHandler(handler)
            target.propagate = False
            target.setLevel(self.level)

    def emit_metric(self, name: str, labels: dict[str, str], value: float) -> None:
        unit = _EMF_UNITS.get(name)
        if unit is None:
            return
        from aws_lambda_powertools.metrics import MetricUnit, single_metric

        with single_metric(name=name, unit=MetricUnit(unit), value=value, namespace=self.namespace) as metric:
            for dim in _DIMENSIONS:
                metric.add_dimension(name=dim, value=labels.get(dim) or "none")


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
    if obs.emit_metric not in gateway.metrics.listeners:
        gateway.metrics.listeners.append(obs.emit_metric)
    return gateway


def reset_instance() -> None:
    """Forget the cached gateway (tests: a fresh 'cold start' in the same process). The powertools
    objects stay: like the process's logging configuration, they are made once per process."""
    with _instance_lock:
        _instance.pop("gateway", None)


def _event_loop() -> asyncio.AbstractEventLoop:
    """The instance's one event loop, made current before each HTTP event. Anything that used
    asyncio.run() in this thread (a scheduled job's `direct` handler) leaves no current loop, and
    Mangum would then start a new one; asyncio objects the engine keeps across events (per-connection
    refresh locks) must keep meeting the same loop."""
    loop: asyncio.AbstractEventLoop | None = _instance.get("loop")
    if loop is None or loop.is_closed():
        loop = _instance["loop"] = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    return loop


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
    Gateway (no requestContext), e.g. EventBridge Scheduler: `direct(gateway, event)`.
    """
    state: dict[str, Any] = {}
    name = surface or (factory if isinstance(factory, str) else getattr(factory, "__module__", "app"))

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        if direct is not None and "requestContext" not in event:
            gateway = instance_gateway(event)
            obs = _observability()
            obs.logger.set_correlation_id(getattr(context, "aws_request_id", None))
            obs.logger.info("direct invocation", extra={"surface": name, "source": event.get("source")})
            answer: dict[str, Any] = _resolve(direct)(gateway, event)
            return answer
        adapter = state.get("adapter")
        cold = adapter is None
        if adapter is None:
            from mangum import Mangum

            gateway = instance_gateway(event)
            adapter = state["adapter"] = Mangum(_resolve(factory)(gateway), lifespan="off")
        obs = _observability()
        _event_loop()
        ctx = event.get("requestContext") or {}
        obs.logger.set_correlation_id(ctx.get("requestId"))
        http = ctx.get("http") or {}
        started = time.perf_counter()
        line = {
            "surface": name,
            "method": http.get("method"),
            "path": event.get("rawPath"),
            "cold_start": cold,
        }
        try:
            with obs.tracer.provider.in_subsegment(f"## {name}") as subsegment:
                subsegment.put_annotation("ColdStart", cold)
                subsegment.put_annotation("surface", str(name))
                result: dict[str, Any] = adapter(event, context)
        except Exception:
            # API Gateway answers 500 for a failed invocation; the log says which request it was.
            obs.logger.exception("request failed", extra={**line, "status": 500, "duration_ms": _ms(started)})
            raise
        obs.logger.info(
            "request", extra={**line, "status": result.get("statusCode"), "duration_ms": _ms(started)}
        )
        return result

    return handler
