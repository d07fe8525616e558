"""Integrations and their tools.

An integration is declared by a `Manifest` (cheap: plain dataclasses, no pydantic models) and its
tools live in a separate module imported only when a tool of that integration is first needed, so
a cold start pays for the manifests alone.

Plugins are the subpackages of `workbench_plugins`; each exposes `manifest` in its `__init__`.
Built-in integrations (`jots`, `vault`, `browser`) are registered by the engine itself; a plugin
that takes a reserved name is refused at load.
"""

from __future__ import annotations

import importlib
import pkgutil
import threading
from collections.abc import Callable, Iterable, Sequence

from workbench.errors import RegistryError
from workbench.manifest import Manifest
from workbench.tools import Tool

__all__ = ["RESERVED_NAMES", "Registry", "module_loader"]

RESERVED_NAMES = frozenset({"browser", "jots"})


ToolLoader = Callable[[], Sequence[Tool]]


# Plain classes, not dataclasses: every cold start builds them (a dataclass costs about 1 ms).
class _Entry:
    __slots__ = ("loader", "lock", "manifest", "tools")

    def __init__(self, manifest: Manifest, loader: ToolLoader) -> None:
        self.manifest = manifest
        self.loader = loader
        self.tools: dict[str, Tool] | None = None
        # One per integration: a caller needing one integration never waits for another's import.
        self.lock = threading.Lock()


class Registry:
    """Integrations by name; tools loaded per integration on first use (thread-safe)."""

    __slots__ = ("_entries", "_found", "_lookup_order")

    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {}
        self._lookup_order: list[_Entry] | None = None
        # Names found before (every execution looks its tool up): one dict read instead of the scan.
        self._found: dict[str, Tool] = {}

    def add(self, manifest: Manifest, loader: ToolLoader, *, allow_reserved: bool = False) -> None:
        if manifest.name in RESERVED_NAMES and not allow_reserved:
            raise RegistryError(
                f"Plugin name '{manifest.name}' is reserved for a built-in integration; rename the plugin."
            )
        if manifest.name in self._entries:
            raise RegistryError(f"Integration '{manifest.name}' is registered twice.")
        self._entries[manifest.name] = _Entry(manifest, loader)
        self._lookup_order = None
        self._found = {}

    def add_plugin_package(self, package: str = "workbench_plugins") -> None:
        """Register every subpackage of `package` that exposes a `manifest` (tools stay unimported)."""
        pkg = importlib.import_module(package)
        for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda i: i.name):
            if not info.ispkg or info.name.startswith("_"):
                continue
            dir_name = info.name.replace("_", "-")
            if dir_name in RESERVED_NAMES:
                raise RegistryError(
                    f"Plugin directory '{info.name}' uses a reserved name ({', '.join(sorted(RESERVED_NAMES))}); "
                    "it is refused at load."
                )
            module = importlib.import_module(f"{package}.{info.name}")
            manifest = getattr(module, "manifest", None)
            if not isinstance(manifest, Manifest):
                raise RegistryError(f"Plugin '{info.name}' has no `manifest` of type Manifest.")
            tools_module = manifest.tools_module or f"{package}.{info.name}.tools"
            self.add(manifest, _module_loader(tools_module))

    def add_plugin_module(self, module_name: str) -> None:
        """Register one plugin package by module path (its `manifest`; tools from `<module>.tools`)."""
        module = importlib.import_module(module_name)
        manifest = getattr(module, "manifest", None)
        if not isinstance(manifest, Manifest):
            raise RegistryError(f"Plugin '{module_name}' has no `manifest` of type Manifest.")
        self.add(manifest, _module_loader(manifest.tools_module or f"{module_name}.tools"))

    # -- lookups -----------------------------------------------------------------------------

    def manifests(self) -> list[Manifest]:
        return [e.manifest for e in self._entries.values()]

    def manifest(self, name: str) -> Manifest | None:
        entry = self._entries.get(name)
        return entry.manifest if entry else None

    def tools_of(self, integration: str) -> dict[str, Tool]:
        entry = self._entries[integration]
        if entry.tools is None:
            with entry.lock:
                if entry.tools is None:
                    entry.tools = self._load(entry)
        return entry.tools

    def load_all(self) -> None:
        """Import every integration's tools now (blocking: a long-running server calls it on a thread
        at start, so no request's first use of an integration imports it on the event loop)."""
        for name in list(self._entries):
            self.tools_of(name)

    def find(self, tool_name: str) -> Tool | None:
        """The tool with this name, loading only the integration(s) whose prefix matches."""
        known = self._found.get(tool_name)
        if known is not None:
            return known
        for entry in self._candidates(tool_name):
            found = self.tools_of(entry.manifest.name).get(tool_name)
            if found is not None:
                self._found[tool_name] = found
                return found
        return None

    def unloaded(self, tool_name: str) -> Manifest | None:
        """The plugin whose tools `find` will import for this name, by its prefix (None: the name is
        answered without importing a plugin, or no plugin's prefix matches it). Nothing is imported."""
        if tool_name in self._found:
            return None
        for entry in self._candidates(tool_name):
            if entry.tools is not None:
                if tool_name in entry.tools:
                    return None
            elif not entry.manifest.builtin:  # a built-in is a candidate for every name
                return entry.manifest
        return None

    def _candidates(self, tool_name: str) -> Iterable[_Entry]:
        """The integrations that may define this tool, in lookup order: built-ins first, then the
        longest prefix (or a manifest that names its tools and names this one)."""
        if self._lookup_order is None:
            self._lookup_order = sorted(
                self._entries.values(), key=lambda e: (not e.manifest.builtin, -len(e.manifest.prefix))
            )
        for entry in self._lookup_order:
            declared = entry.manifest.tool_names
            if declared is not None:
                if tool_name in declared:
                    yield entry
            elif entry.manifest.builtin or tool_name.startswith(entry.manifest.prefix):
                yield entry

    def all_tools(self) -> Iterable[Tool]:
        for name in list(self._entries):
            yield from self.tools_of(name).values()

    @staticmethod
    def _load(entry: _Entry) -> dict[str, Tool]:
        manifest = entry.manifest
        loaded: dict[str, Tool] = {}
        for t in entry.loader():
            if not manifest.builtin and not t.name.startswith(manifest.prefix):
                raise RegistryError(
                    f"Tool '{t.name}' of integration '{manifest.name}' must start with '{manifest.prefix}'."
                )
            if t.name in loaded:
                raise RegistryError(f"Tool '{t.name}' is defined twice in '{manifest.name}'.")
            t.integration = manifest.name
            t.annotations = manifest.annotations(t.name)
            loaded[t.name] = t
        if manifest.tool_names is not None and set(loaded) != manifest.tool_names:
            raise RegistryError(
                f"Integration '{manifest.name}' declares tools {sorted(manifest.tool_names)} "
                f"but its module defines {sorted(loaded)}."
            )
        return loaded


def module_loader(module_name: str) -> ToolLoader:
    """Loads `module_name`'s TOOLS list when the integration's tools are first needed."""
    return _module_loader(module_name)


def _module_loader(module_name: str) -> ToolLoader:
    def load() -> Sequence[Tool]:
        module = importlib.import_module(module_name)
        tools = getattr(module, "TOOLS", None)
        if tools is None:
            raise RegistryError(f"Module '{module_name}' defines no TOOLS list.")
        return list(tools)

    return load
