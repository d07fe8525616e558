"""The REST Lambda handler: API Gateway events go to the REST app; direct invocations (EventBridge
Scheduler: no requestContext) run a scheduled job."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from workbench.lambda_runtime import lambda_handler_for

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from workbench.composition import Gateway

__all__ = ["rest_lambda_handler"]


def rest_lambda_handler() -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    state: dict[str, Gateway] = {}

    def factory(gateway: Gateway) -> Starlette:
        from workbench.rest.app import create_rest_app

        state.setdefault("gateway", gateway)
        return create_rest_app(gateway)

    http = lambda_handler_for(factory)

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        if "requestContext" in event:
            return http(event, context)
        from workbench.rest.service import handle_schedule_event

        gateway = state.get("gateway")
        if gateway is None:
            from workbench.composition import build_gateway
            from workbench.settings import Settings

            gateway = state["gateway"] = build_gateway(Settings.from_env())
        return handle_schedule_event(gateway, event)

    return handler
