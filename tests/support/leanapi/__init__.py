"""A test plugin whose tool declares its arguments without pydantic (workbench.tools.Arguments),
calling the same loopback API as slowapi (`tests.support.slowapi.slow_upstream`, GET /fast).

Registered with WORKBENCH_EXTRA_PLUGINS=tests.support.leanapi; the API's URL comes from
WB_SLOW_API_URL in the gateway process (in-process tests build the manifest directly).
"""

from __future__ import annotations

import os
from typing import Any

from workbench.tools import ApiKeyAuth, ApiKeyField, Manifest

__all__ = ["connect_leanapi", "make_manifest", "manifest"]


def make_manifest(base_url: str) -> Manifest:
    return Manifest(
        name="leanapi",
        version="1.0.0",
        display_name="Lean API",
        description="A loopback API whose tool's arguments are declared without pydantic.",
        auth=ApiKeyAuth((ApiKeyField("key", "API key"),)),
        base_url=base_url.rstrip("/"),
        tool_prefix="leanapi_",
        tools_module="tests.support.leanapi.tools",
    )


def connect_leanapi(gateway: Any, user_id: str) -> None:
    gateway.credentials.save(user_id, "leanapi", {"key": "lean-key"})


def __getattr__(name: str) -> Any:
    """`manifest`, read when the registry asks: WB_SLOW_API_URL is set after this module is imported."""
    if name == "manifest":
        return make_manifest(os.environ.get("WB_SLOW_API_URL", "http://127.0.0.1:9"))
    raise AttributeError(name)
