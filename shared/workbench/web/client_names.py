"""The MCP clients `workbench client add` writes a configuration file for (web/client_config.py) and
the portal marks as such (web/client_setup.py). Data only: the CLI builds its parser from it without
importing the portal."""

__all__ = ["WRITABLE_CLIENTS"]

WRITABLE_CLIENTS = ("claude-code", "claude-desktop", "cursor", "vscode", "windsurf")
