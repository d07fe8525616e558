"""Every tool's MCP annotations, held against what the tool does.

Grants trust `readOnlyHint` (a read-only key runs only read-only tools), so a plugin tool's hints
are checked against the upstream requests its request-exact test records: a tool whose requests
all read is read-only, a tool with a request that writes is not, and a tool that deletes (a DELETE
request, or a name that says delete, archive, refund, cancel, revoke, clear, trash or overwrite)
is destructive. A POST counts as a read only where the provider uses POST to read, named here
with the reason.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from workbench.annotations import HINT_KEYS, from_declared, from_method
from workbench.composition import build_registry

from tests.plugins.catalog_support import Call
from tests.plugins.test_catalog import _cases

# POST endpoints that only read, and why the provider makes them POST.
READING_POSTS = {
    "https://www.googleapis.com/calendar/v3/freeBusy": "free/busy query takes its time ranges as a body",
    "https://api.hubapi.com/crm/v3/objects/contacts/search": "HubSpot's CRM search takes filters as a body",
    "https://api.hubapi.com/crm/v3/objects/deals/search": "HubSpot's CRM search takes filters as a body",
    "https://api.hubapi.com/crm/v3/objects/companies/search": "HubSpot's CRM search takes filters as a body",
    "https://api.hubapi.com/crm/v3/objects/tickets/search": "HubSpot's CRM search takes filters as a body",
    "https://api.notion.com/v1/search": "Notion's search takes its query as a body",
    "https://bi.example.com/api/v1/security/login": "Superset's sign-in, which every Superset tool makes first",
}
_NOTION_QUERY = re.compile(r"^https://api\.notion\.com/v1/(databases|data_sources)/[^/]+/query$")
_DESTRUCTIVE_WORDS = {
    "delete",
    "archive",
    "refund",
    "cancel",
    "revoke",
    "clear",
    "trash",
    "overwrite",
    "update",
}


def _reads(call: Call) -> bool:
    if call.method in ("GET", "HEAD", "OPTIONS"):
        return True
    if call.method != "POST":
        return False
    if call.url in READING_POSTS or _NOTION_QUERY.match(call.url):  # Notion: a database query is a POST
        return True
    if call.url == "https://api.linear.app/graphql":  # GraphQL: a query reads, a mutation writes
        text = str((call.json or {}).get("query", "")).lstrip()
        return text.startswith(("query", "{"))
    return False


def _plugin_tools() -> list[Any]:
    registry = build_registry()
    return [t for t in registry.all_tools() if not registry.manifest(t.integration).builtin]  # type: ignore[union-attr]


def test_every_tool_carries_all_five_annotations() -> None:
    registry = build_registry()
    tools = list(registry.all_tools())
    assert len(tools) > 250
    for t in tools:
        hints = t.annotations
        assert hints is not None, f"{t.name} has no annotations"
        assert set(hints) == set(HINT_KEYS), t.name
        assert isinstance(hints["title"], str) and len(hints["title"]) > 3, t.name
        for key in HINT_KEYS[1:]:
            assert isinstance(hints[key], bool), (t.name, key)
        if hints["readOnlyHint"]:
            assert not hints["destructiveHint"], f"{t.name}: read-only and destructive"
        # The same answer without importing the tools module (search hits use it).
        assert registry.manifest(t.integration).annotations(t.name) == hints  # type: ignore[union-attr]


@pytest.mark.parametrize("tool", _plugin_tools(), ids=lambda t: t.name)
def test_plugin_hints_match_the_requests_the_tool_makes(tool: Any) -> None:
    cases = _cases().get(tool.name)
    assert cases, f"{tool.name} has no request-exact case to check its annotations against"
    calls = [c for case in cases for c in case.calls]
    assert calls, tool.name
    hints = tool.annotations
    only_reads = all(_reads(c) for c in calls)
    assert hints["readOnlyHint"] is only_reads, (
        f"{tool.name}: readOnlyHint is {hints['readOnlyHint']} but its requests "
        f"{[(c.method, c.url) for c in calls]} {'only read' if only_reads else 'write'}"
    )
    words = set(tool.name.split("_"))
    if any(c.method == "DELETE" for c in calls) or words & _DESTRUCTIVE_WORDS:
        assert hints["destructiveHint"] is True, f"{tool.name} deletes or overwrites: destructive"
    assert hints["openWorldHint"] is True, f"{tool.name} reaches a third-party API"


def test_builtin_hints() -> None:
    registry = build_registry()
    got = {t.name: t.annotations for t in registry.all_tools() if registry.manifest(t.integration).builtin}  # type: ignore[union-attr]
    read_only = {n for n, h in got.items() if h and h["readOnlyHint"]}
    assert read_only == {
        "get_jot",
        "list_jots",
        "search_jots",
        "vault_list",
        "apps_list",
        "browser_navigate",
        "browser_read",
        "browser_screenshot",
    }
    destructive = {n for n, h in got.items() if h and h["destructiveHint"]}
    assert destructive == {
        "update_jot",
        "delete_jot",
        "vault_set",
        "vault_delete",
        "apps_remove",
        "browser_click",
        "browser_type",
    }
    assert not got["create_jot"]["openWorldHint"] and not got["vault_set"]["openWorldHint"]  # type: ignore[index]
    assert got["browser_read"]["openWorldHint"]  # type: ignore[index]


def test_custom_app_hints_from_method_and_declaration() -> None:
    assert from_method("get", "T")["readOnlyHint"] is True
    assert from_method("DELETE", "T") == {
        "title": "T",
        "readOnlyHint": False,
        "destructiveHint": True,
        "idempotentHint": True,
        "openWorldHint": True,
    }
    assert from_method("POST", "T")["destructiveHint"] is False
    # A server that says nothing gets MCP's defaults; a non-boolean hint is ignored.
    assert from_declared(None, "App: x") == {
        "title": "App: x",
        "readOnlyHint": False,
        "destructiveHint": True,
        "idempotentHint": False,
        "openWorldHint": True,
    }
    declared = from_declared({"readOnlyHint": True, "destructiveHint": "no", "title": "Look up"}, "App: x")
    assert declared["readOnlyHint"] is True and declared["destructiveHint"] is True
    assert declared["title"] == "Look up"


def test_docs_tool_tables_show_the_annotations() -> None:
    """docs/plugins.md and docs/plugins-b.md: every tool row's last column is its annotations."""
    from tests.plugins.annotation_tables import hints_text

    root = Path(__file__).resolve().parents[2] / "docs"
    tools = {t.name: t for t in _plugin_tools()}
    rows: dict[str, str] = {}
    for doc in ("plugins.md", "plugins-b.md"):
        for name, text in re.findall(
            r"^\| `([a-z_]+)` \| .+ \| ([a-z ,-]+) \|$", (root / doc).read_text(), re.M
        ):
            if name in tools:
                rows[name] = text
    assert rows == {name: hints_text(t.annotations) for name, t in tools.items()}
