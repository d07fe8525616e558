"""MCP tool annotations for every tool: a title and the four behaviour hints.

Grants rely on them (a read-only key runs only read-only tools), so every tool carries all five,
resolved once per tool:

- a tool's own `annotations` (what its author declared, MCP key names) win, key by key;
- an OpenAPI custom app's operation: from its HTTP method (GET/HEAD/OPTIONS read; DELETE and PUT
  overwrite; POST adds);
- an MCP custom app or operator server's tool: as the server declares them, with MCP's defaults
  for what it leaves out (not read-only, destructive, not idempotent, open world);
- a built-in or plugin tool: from the verb its name starts with (`list_`, `get_`, `search_` read;
  `delete_`, `archive_`, `refund`, `cancel_`, `update_`, `write_` … change or remove what exists;
  `create_`, `add_`, `send_` … add). A verb the table does not know is treated as a destructive
  write: the safe side for a grant.

tests/plugins/test_annotations.py holds every plugin tool's hints against the requests its
request-exact test records (a tool that only reads is read-only; a tool that deletes is destructive).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "HINT_KEYS",
    "Hint",
    "from_declared",
    "from_method",
    "hints_for",
    "is_read_only",
    "title_for",
]

HINT_KEYS = ("title", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")


@dataclass(frozen=True, slots=True)
class Hint:
    """A manifest's override of what a tool's name says about it (None: keep the derived value)."""

    read_only: bool | None = None
    destructive: bool | None = None
    idempotent: bool | None = None
    open_world: bool | None = None
    title: str | None = None

    def as_mcp(self) -> dict[str, Any]:
        pairs = (
            ("title", self.title),
            ("readOnlyHint", self.read_only),
            ("destructiveHint", self.destructive),
            ("idempotentHint", self.idempotent),
            ("openWorldHint", self.open_world),
        )
        return {k: v for k, v in pairs if v is not None}


# Verbs whose tools only read.
_READ = frozenset(
    {
        "list",
        "get",
        "search",
        "read",
        "find",
        "query",
        "describe",
        "download",
        "fetch",
        "view",
        "whoami",
        "navigate",
        "screenshot",
    }
)
# Verbs whose tools add something new and change nothing that exists (calling twice adds twice).
_ADD = frozenset(
    {
        "create",
        "add",
        "send",
        "post",
        "append",
        "upload",
        "invite",
        "join",
        "open",
        "comment",
        "register",
        "reply",
        "quick",
        "rerun",
        "copy",
        "duplicate",
        "link",
        "associate",
        "review",
    }
)
# Verbs whose tools change or remove what exists, where calling twice does what calling once did.
_OVERWRITE = frozenset(
    {
        "update",
        "set",
        "write",
        "modify",
        "move",
        "merge",
        "transition",
        "assign",
        "delete",
        "remove",
        "trash",
        "archive",
        "cancel",
        "revoke",
        "clear",
        "close",
        "finalize",
        "respond",
        "upsert",
        "share",
        "refresh",
        "apply",
    }
)
# Integrations whose tools never leave Workbench (their data is the user's own, in its stores).
_CLOSED_WORLD = frozenset({"jots", "vault"})

_WORDS = {
    "pr": "PR",
    "prs": "PRs",
    "csv": "CSV",
    "sql": "SQL",
    "dm": "DM",
    "id": "ID",
    "url": "URL",
    "jql": "JQL",
    "openapi": "OpenAPI",
}


def _verb(name: str, prefix: str) -> list[str]:
    words = (name[len(prefix) :] if prefix and name.startswith(prefix) else name).split("_")
    if words and words[0] == "batch" and len(words) > 1:  # batch_read, batch_write
        words = words[1:]
    return words


def title_for(name: str, prefix: str, display_name: str) -> str:
    """'github_list_prs' of GitHub -> 'GitHub: List PRs'."""
    words = (name[len(prefix) :] if prefix and name.startswith(prefix) else name).split("_")
    text = " ".join(_WORDS.get(w, w) for w in words if w)
    text = text[:1].upper() + text[1:]
    return f"{display_name}: {text}" if display_name else text


def _by_verb(name: str, prefix: str, integration: str) -> dict[str, Any]:
    words = _verb(name, prefix)
    verb = words[0] if words else ""
    open_world = integration not in _CLOSED_WORLD
    if verb in _READ:
        return {
            "readOnlyHint": True,
            "destructiveHint": False,
            "idempotentHint": True,
            "openWorldHint": open_world,
        }
    if verb in _ADD:
        return {
            "readOnlyHint": False,
            "destructiveHint": False,
            "idempotentHint": False,
            "openWorldHint": open_world,
        }
    if verb in _OVERWRITE:
        return {
            "readOnlyHint": False,
            "destructiveHint": True,
            "idempotentHint": True,
            "openWorldHint": open_world,
        }
    # Unknown: assume the worst a write can do (the MCP defaults).
    return {
        "readOnlyHint": False,
        "destructiveHint": True,
        "idempotentHint": False,
        "openWorldHint": open_world,
    }


def hints_for(
    name: str,
    *,
    prefix: str,
    integration: str,
    display_name: str,
    declared: Hint | None = None,
) -> dict[str, Any]:
    """The five annotations of a built-in or plugin tool: derived from its name, `declared` wins."""
    out: dict[str, Any] = {
        "title": title_for(name, prefix, display_name),
        **_by_verb(name, prefix, integration),
    }
    if declared is not None:
        out.update(declared.as_mcp())
        if declared.read_only:  # a tool that only reads changes nothing
            out["destructiveHint"] = False
    return out


def from_method(method: str, title: str) -> dict[str, Any]:
    """An HTTP operation's annotations (an OpenAPI custom app's tool)."""
    method = method.upper()
    if method in ("GET", "HEAD", "OPTIONS"):
        hints = (True, False, True)
    elif method in ("PUT", "DELETE"):
        hints = (False, True, True)
    elif method == "POST":
        hints = (False, False, False)
    else:  # PATCH and anything else: changes what exists
        hints = (False, True, False)
    read_only, destructive, idempotent = hints
    return {
        "title": title,
        "readOnlyHint": read_only,
        "destructiveHint": destructive,
        "idempotentHint": idempotent,
        "openWorldHint": True,
    }


def from_declared(declared: Any, title: str) -> dict[str, Any]:
    """A server-declared tool's annotations (MCP `annotations`, `title`), with MCP's defaults for
    anything missing or not a boolean: not read-only, destructive, not idempotent, open world."""
    got = declared if isinstance(declared, Mapping) else {}

    def flag(key: str, default: bool) -> bool:
        value = got.get(key)
        return value if isinstance(value, bool) else default

    label = got.get("title")
    return {
        "title": label if isinstance(label, str) and label.strip() else title,
        "readOnlyHint": flag("readOnlyHint", False),
        "destructiveHint": flag("destructiveHint", True),
        "idempotentHint": flag("idempotentHint", False),
        "openWorldHint": flag("openWorldHint", True),
    }


def is_read_only(annotations: Mapping[str, Any] | None) -> bool:
    return bool(annotations) and annotations.get("readOnlyHint") is True  # type: ignore[union-attr]
