"""Workbench: a tool gateway for AI agents (one MCP endpoint, nine meta-tools)."""

# The one version number: pyproject reads it (hatch dynamic version), the CLI and MCP serverInfo print it.
__version__ = "0.1.0"
