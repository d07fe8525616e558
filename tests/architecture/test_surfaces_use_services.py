"""Surfaces receive services, never stores (ARCHITECTURE.md example 16): the rules — the auth
cache and revocation, audit, leases, ownership — live in workbench.services and no door goes
around them. A surface may name a store's record types (`User`, `Jot`), never reach a store."""

from __future__ import annotations

import ast
from pathlib import Path

import workbench

ROOT = Path(workbench.__file__).parent
SURFACES = ("mcp", "rest", "web", "oauth", "proxy", "builtin", "runtime", "cli.py")
# The OAuth authorization server itself (its ports are its own: clients, codes, refresh tokens,
# rates) and the portal's session codec (its sign-out record), built by the composition root like
# the services; `oauth/routes.py` and the portal pages are their surface.
SERVICES_INSIDE_SURFACES = ("oauth/service.py", "oauth/clients.py", "web/sessions.py")
ADAPTERS = ("workbench.stores.memory", "workbench.stores.sqlite", "workbench.stores.dynamodb")


def _surface_modules() -> list[Path]:
    found: list[Path] = []
    for name in SURFACES:
        path = ROOT / name
        found += [path] if path.suffix == ".py" else sorted(path.rglob("*.py"))
    return [p for p in found if str(p.relative_to(ROOT)) not in SERVICES_INSIDE_SURFACES]


def test_the_surfaces_are_where_this_test_looks() -> None:
    assert len(_surface_modules()) > 30  # a moved package must move this list, not empty it


def test_no_surface_reaches_a_store() -> None:
    reaches = []
    for path in _surface_modules():
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            where = f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.Attribute) and node.attr == "stores":
                reaches.append(f"{where} .stores")
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(ADAPTERS):
                reaches.append(f"{where} imports {node.module}")
            elif isinstance(node, ast.ImportFrom) and node.module == "workbench.stores":
                stores = [a.name for a in node.names if a.name.endswith("Store") or a.name == "Stores"]
                if stores:
                    reaches.append(f"{where} imports {', '.join(stores)}")
    assert reaches == []
