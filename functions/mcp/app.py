"""MCP Lambda entry: build the app once per instance, hand each event to it."""

from workbench.lambda_runtime import lambda_handler_for
from workbench.mcp.app import create_mcp_app

handler = lambda_handler_for(create_mcp_app)
