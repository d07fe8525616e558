"""Adapts a surface's ASGI app to an AWS Lambda handler (API Gateway HTTP API v2 events).

The gateway is built once per instance, on the first event, from the environment.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.applications import Starlette

__all__ = ["lambda_handler_for"]


def lambda_handler_for(
    factory: Callable[[Any], Starlette],
) -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    state: dict[str, Any] = {}

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        adapter = state.get("adapter")
        if adapter is None:
            from mangum import Mangum

            from workbench.composition import build_gateway
            from workbench.settings import Settings

            gateway = build_gateway(Settings.from_env())
            adapter = state["adapter"] = Mangum(factory(gateway), lifespan="off")
        result: dict[str, Any] = adapter(event, context)
        return result

    return handler
