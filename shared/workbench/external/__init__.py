"""External MCP tool servers (seed 004) as per-user custom apps: an httpx MCP client, the
registration service with its discovery cache, and the routing hook the engine calls."""

from __future__ import annotations

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
