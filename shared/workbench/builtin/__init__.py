"""Built-in integrations. They live in the engine, not under plugins/, so their handlers can reach
engine services (the jot store, the vault, the browser) that no plugin context ever exposes.

Their manifests are declared here, with their tool names, so registering them imports nothing
else: a tool module (and its pydantic models) is imported when one of its tools is first used.
"""

from __future__ import annotations

from workbench.annotations import Hint
from workbench.engine.registry import Registry, module_loader
from workbench.manifest import Manifest, NoAuth

__all__ = ["APPS", "BROWSER", "JOTS", "VAULT", "register_builtins"]

JOTS = Manifest(
    name="jots",
    version="1.0.0",
    display_name="Jots",
    auth=NoAuth(),
    description="Notes the agent and the user keep in Workbench.",
    keywords=("notes", "notepad", "memo"),
    builtin=True,
    tool_names=frozenset({"create_jot", "get_jot", "list_jots", "update_jot", "delete_jot", "search_jots"}),
)
VAULT = Manifest(
    name="vault",
    version="1.0.0",
    display_name="Vault",
    auth=NoAuth(),
    description="Per-user secrets, usable in tool arguments as {{vault:NAME}}.",
    keywords=("secrets", "passwords", "credentials"),
    builtin=True,
    tool_names=frozenset({"vault_list", "vault_set", "vault_delete"}),
)
APPS = Manifest(
    name="apps",
    version="1.0.0",
    display_name="Custom apps",
    auth=NoAuth(),
    description="Your own external MCP tool servers, merged into your tool catalog under a prefix.",
    keywords=("custom apps", "integrations", "mcp"),
    builtin=True,
    tool_names=frozenset(
        {"apps_register_server", "apps_register_openapi", "apps_list", "apps_refresh", "apps_remove"}
    ),
    # A refresh discovers the app's tools again; it changes nothing the user made.
    tool_hints=(("apps_refresh", Hint(destructive=False)),),
)
BROWSER = Manifest(
    name="browser",
    version="1.0.0",
    display_name="Browser",
    auth=NoAuth(),
    description="A headless browser the agent drives: open pages, click, type, read and screenshot them.",
    keywords=("web", "website", "internet"),
    builtin=True,
    tool_names=frozenset(
        {
            "browser_navigate",
            "browser_click",
            "browser_type",
            "browser_read",
            "browser_screenshot",
            "browser_close",
        }
    ),
    # Closing ends the agent's own browser session; nothing outside it changes.
    tool_hints=(("browser_close", Hint(destructive=False, open_world=False)),),
)


def register_builtins(registry: Registry) -> None:
    for manifest in (JOTS, VAULT, APPS, BROWSER):
        registry.add(manifest, module_loader(f"workbench.builtin.{manifest.name}"), allow_reserved=True)
