"""MCP Lambda entry (POST /mcp): the gateway and app are built once per instance, on the first event."""

from workbench.lambda_runtime import lambda_handler_for

handler = lambda_handler_for("workbench.mcp.app:create_mcp_app", surface="mcp")
