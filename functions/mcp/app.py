"""MCP Lambda entry (POST /mcp): the gateway and app are built once per instance, on the first event."""

from workbench.runtime.lambda_handler import lambda_handler_for

handler = lambda_handler_for("workbench.mcp.app:create_mcp_app", surface="mcp")
