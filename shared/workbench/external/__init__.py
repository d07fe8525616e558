"""External MCP tool servers (seed 004) as per-user custom apps: an httpx MCP client, the
registration service with its discovery cache, and the routing hook the engine calls.

The names below are loaded on first use (PEP 562): importing a leaf module of this package
(`workbench.external.paths`) does not import the client and httpx with it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from workbench.external.client import Endpoint, ExternalError, McpClient, McpSession
    from workbench.external.service import (
        CACHE_TTL_SECONDS,
        DEFAULT_TIMEOUT_MS,
        RECONNECT_REQUIRED,
        ExternalServers,
        ExternalTool,
    )

__all__ = [
    "CACHE_TTL_SECONDS",
    "DEFAULT_TIMEOUT_MS",
    "RECONNECT_REQUIRED",
    "Endpoint",
    "ExternalError",
    "ExternalServers",
    "ExternalTool",
    "McpClient",
    "McpSession",
]

_CLIENT = ("Endpoint", "ExternalError", "McpClient", "McpSession")


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(f"{__name__}.{'client' if name in _CLIENT else 'service'}")
    return getattr(module, name)
