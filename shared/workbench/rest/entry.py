"""The REST Lambda handler: API Gateway events go to the REST app; direct invocations (EventBridge
Scheduler: no requestContext, which only API Gateway adds) run a scheduled job on the same
per-instance gateway."""

from __future__ import annotations

from typing import Any

from workbench.lambda_runtime import Handler, lambda_handler_for

__all__ = ["rest_lambda_handler"]


def rest_lambda_handler() -> Handler:
    http = lambda_handler_for("workbench.rest.app:create_rest_app", surface="rest")

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        if "requestContext" in event:
            return http(event, context)
        from workbench.lambda_runtime import instance_gateway
        from workbench.rest.service import handle_schedule_event

        return handle_schedule_event(instance_gateway(event), event)

    return handler
