"""Built-in integrations. They live in the engine, not under plugins/, so their handlers can reach
engine services (the jot store, the vault, the browser) that no plugin context ever exposes."""

from __future__ import annotations

from workbench.registry import Registry

__all__ = ["register_builtins"]


def register_builtins(registry: Registry) -> None:
    from workbench.builtin import apps, browser, jots, vault

    registry.add(jots.MANIFEST, lambda: jots.TOOLS, allow_reserved=True)
    registry.add(vault.MANIFEST, lambda: vault.TOOLS, allow_reserved=True)
    registry.add(apps.MANIFEST, lambda: apps.TOOLS, allow_reserved=True)
    registry.add(browser.MANIFEST, lambda: browser.TOOLS, allow_reserved=True)
