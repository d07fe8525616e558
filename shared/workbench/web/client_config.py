"""`workbench client add CLIENT`: write (or merge) Workbench into an MCP client's own configuration file.

Each client's file and entry follow that client's documentation:

  claude-code     ~/.claude.json ("mcpServers", user scope), or ./.mcp.json with --project
  claude-desktop  claude_desktop_config.json ("mcpServers"; a stdio bridge, mcp-remote)
  cursor          ~/.cursor/mcp.json, or ./.cursor/mcp.json with --project ("mcpServers")
  vscode          the user profile's mcp.json, or ./.vscode/mcp.json with --project ("servers")
  windsurf        ~/.codeium/windsurf/mcp_config.json ("mcpServers", "serverUrl")

The entries are the portal's snippets (web/client_setup.py), so the page and the command never
disagree. Only the one server entry is added or replaced; every other key of the file is kept. A
file that would not change is left alone (idempotent); otherwise it is first copied to
`<file>.workbench-backup`, and written whole through a temporary file (a crash never leaves half a
file). A file that is not a JSON object is refused, untouched.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.errors import WorkbenchError
from workbench.web.client_names import WRITABLE_CLIENTS
from workbench.web.client_setup import client_snippets

__all__ = ["CLIENTS", "ClientConfigError", "Written", "client_entry", "config_path", "merge", "write_config"]

CLIENTS = WRITABLE_CLIENTS
_KEY_SLOT = "@@WORKBENCH_KEY@@"


class ClientConfigError(WorkbenchError):
    """The client's file cannot be merged (not JSON, not an object); nothing was written."""


@dataclass(frozen=True, slots=True)
class Written:
    path: Path
    changed: bool
    backup: Path | None


def _home() -> Path:
    return Path(os.environ.get("HOME") or Path.home())


def config_path(client: str, *, project: bool = False, cwd: Path | None = None) -> Path:
    """Where `client` reads its MCP servers (user level, or the project's file with `project`)."""
    here = cwd or Path.cwd()
    home = _home()
    if client == "claude-code":
        return here / ".mcp.json" if project else home / ".claude.json"
    if client == "cursor":
        return (here if project else home) / ".cursor" / "mcp.json"
    if client == "vscode":
        if project:
            return here / ".vscode" / "mcp.json"
        return _app_config_dir(home, "Code") / "User" / "mcp.json"
    if client == "claude-desktop":
        if project:
            raise ClientConfigError("Claude Desktop has no project configuration; drop --project")
        return _app_config_dir(home, "Claude") / "claude_desktop_config.json"
    if client == "windsurf":
        if project:
            raise ClientConfigError("Windsurf has no project configuration; drop --project")
        return home / ".codeium" / "windsurf" / "mcp_config.json"
    raise ClientConfigError(f"unknown client {client!r}; choose one of: {', '.join(CLIENTS)}")


def _app_config_dir(home: Path, app: str) -> Path:
    if sys.platform == "darwin":
        return home / "Library" / "Application Support" / app
    if sys.platform == "win32":
        return Path(os.environ.get("APPDATA") or home / "AppData" / "Roaming") / app
    return Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config") / app


def client_entry(client: str, mcp_url: str, key: str | None) -> tuple[str, dict[str, Any]]:
    """(top-level key, server entry) for `client`: with the API key, or the OAuth variant (no key)."""
    headers = {"Authorization": f"Bearer {key}"} if key else None
    if client == "claude-code":
        entry: dict[str, Any] = {"type": "http", "url": mcp_url}
        return "mcpServers", {**entry, "headers": headers} if headers else entry
    if client == "windsurf":
        entry = {"serverUrl": mcp_url}
        return "mcpServers", {**entry, "headers": headers} if headers else entry
    snippet = next((s for s in client_snippets(mcp_url) if s.slug == client), None)
    if snippet is None:
        raise ClientConfigError(f"unknown client {client!r}; choose one of: {', '.join(CLIENTS)}")
    text = snippet.with_key.replace(_KEY_SLOT, key) if key else snippet.oauth
    document = json.loads(text)
    (top, servers), *_ = document.items()
    return top, servers["workbench"]


def merge(existing: dict[str, Any], top: str, name: str, entry: dict[str, Any]) -> dict[str, Any]:
    """`existing` with `name` set to `entry` under `top`, every other key as it was."""
    servers = existing.get(top, {})
    if not isinstance(servers, dict):
        raise ClientConfigError(f'"{top}" in the file is not an object; fix it by hand first')
    return {**existing, top: {**servers, name: entry}}


def _read(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    text = path.read_text(encoding="utf-8")
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ClientConfigError(
            f"{path} is not valid JSON ({exc.msg} at line {exc.lineno}); left as it is"
        ) from exc
    if not isinstance(value, dict):
        raise ClientConfigError(f"{path} is not a JSON object; left as it is")
    return value


def render(client: str, mcp_url: str, key: str | None, *, name: str = "workbench") -> str:
    """The whole file a fresh configuration would hold (what --print shows)."""
    top, entry = client_entry(client, mcp_url, key)
    return json.dumps({top: {name: entry}}, indent=2) + "\n"


def write_config(
    client: str, path: Path, mcp_url: str, key: str | None, *, name: str = "workbench"
) -> Written:
    existing = _read(path)
    top, entry = client_entry(client, mcp_url, key)
    merged = merge(existing, top, name, entry)
    if path.exists() and merged == existing:
        return Written(path, changed=False, backup=None)
    backup = None
    if path.exists():
        backup = path.with_name(path.name + ".workbench-backup")
        shutil.copy2(path, backup)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    # The file may hold API keys: only its owner reads it (as the client writes its own).
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(json.dumps(merged, indent=2) + "\n")
    os.replace(tmp, path)
    return Written(path, changed=True, backup=backup)
