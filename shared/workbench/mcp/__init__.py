"""The MCP surface: Streamable HTTP, JSON responses, stateless (any request may land anywhere)."""

from workbench.mcp.app import create_mcp_app
from workbench.mcp.protocol import McpServer

__all__ = ["McpServer", "create_mcp_app"]
