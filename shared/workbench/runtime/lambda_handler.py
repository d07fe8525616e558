"""Adapts a surface's ASGI app to an AWS Lambda handler (API Gateway HTTP API v2 events).

Cold start is a feature: importing this module (and a functions/*/app.py entry) imports neither
boto3 nor anything heavy. The gateway (the composition root) is built once per instance, on
the first event, and shared by every surface the instance serves; boto3 clients are created when
the first store/KMS call needs them.

Observability (workbench.observability, wired here per request):
- Logs: JSON lines on stdout, the engine's `workbench` logger included, through the one formatter
  (`observability.logs.JsonLines`); the API Gateway request id is the correlation id.
- Metrics: CloudWatch EMF written once per request (`observability.metrics.EmfWriter`).
- Traces: one X-Ray subsegment per request, with DynamoDB/KMS calls as children
  (`observability.tracing`: straight to the X-Ray daemon, no X-Ray SDK).
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import logging
import os
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from workbench.observability.logs import CurrentStdout, JsonLines
from workbench.observability.metrics import EmfWriter
from workbench.observability.tracing import request_span
from workbench.runtime import coldgc

if TYPE_CHECKING:
    from workbench.composition import Gateway

__all__ = ["Handler", "instance_gateway", "lambda_handler_for", "reset_instance"]

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]
AppFactory = Callable[["Gateway"], Any]

# The one cached root of a Lambda instance: gateway + logging/metrics objects, built on first use.
_instance: dict[str, Any] = {}
_instance_lock = threading.Lock()


class _Observability:
    """This instance's log handler, EMF writer and X-Ray daemon address, read from the environment
    once (the names are Powertools', the convention Lambda tooling knows)."""

    def __init__(self) -> None:
        service = os.environ.get("POWERTOOLS_SERVICE_NAME", "workbench")
        self.service = service
        level_name = os.environ.get("POWERTOOLS_LOG_LEVEL") or os.environ.get("LOG_LEVEL") or "INFO"
        self.level = logging.getLevelName(level_name.upper())
        if not isinstance(self.level, int):
            self.level = logging.INFO
        self.formatter = JsonLines(service)
        self.handler = CurrentStdout()
        self.handler.setFormatter(self.formatter)
        # The engine's own logger: its event lines and ours share one JSON format.
        self.logger = logging.getLogger("workbench")
        # Where Lambda's X-Ray daemon listens (set only when the function's tracing is Active).
        self.xray_daemon = os.environ.get("AWS_XRAY_DAEMON_ADDRESS")
        self.emf = EmfWriter(os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "Workbench"), service)

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
        self.emf.known = names

    def record_metric(self, name: str, labels: dict[str, str], value: float) -> None:
        self.emf.record(name, labels, value)

    def flush_metrics(self) -> None:
        """This request's metrics as EMF (workbench.observability.metrics.EmfWriter)."""
        self.emf.flush()


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

    def entry(event: dict[str, Any], context: Any) -> dict[str, Any]:
        try:
            return handler(event, context)
        finally:
            coldgc.resume()  # the cold start is over once its first event is answered

    if os.environ.get("AWS_LAMBDA_INITIALIZATION_TYPE") == "snap-start":
        _prewarm(state, factory)
    return entry


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
