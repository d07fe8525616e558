"""The registry imports a tools module only when one of its tools is needed (cold start)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from workbench.engine.registry import Registry
from workbench.errors import RegistryError
from workbench.manifest import Manifest, NoAuth
from workbench.tools import tool

from tests.support.processes import REPO


def _imported_after(code: str) -> set[str]:
    """The workbench.builtin / workbench_plugins modules a fresh interpreter has after `code`."""
    probe = (
        code
        + "\nimport json, sys\nprint(json.dumps(sorted(m for m in sys.modules if m.startswith(('workbench.builtin.', 'workbench_plugins.'))"
        + " and m.endswith(('.jots', '.vault', '.apps', '.browser', '.tools')))))"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def test_building_the_registry_imports_no_tools_module() -> None:
    assert _imported_after("from workbench.composition import build_registry; r = build_registry()") == set()


def test_a_lookup_imports_only_the_module_that_owns_the_tool() -> None:
    code = "from workbench.composition import build_registry; r = build_registry()"
    assert _imported_after(code + "; assert r.find('list_jots')") == {"workbench.builtin.jots"}
    assert _imported_after(code + "; assert r.find('github_list_prs')") == {"workbench_plugins.github.tools"}
    assert _imported_after(code + "; assert r.find('no_such_tool') is None") == set()


def test_declared_tool_names_must_match_the_module() -> None:
    @tool("twin_a", "A.")
    def a(args: dict, ctx: object) -> str:
        return "a"

    registry = Registry()
    manifest = Manifest(
        "twin", "1.0.0", "Twin", NoAuth(), builtin=True, tool_names=frozenset({"twin_a", "twin_b"})
    )
    registry.add(manifest, lambda: [a])
    with pytest.raises(RegistryError, match="declares tools"):
        registry.find("twin_b")


def test_one_integration_importing_never_holds_up_another() -> None:
    """A server preloads tool modules on a thread (load_all); a request needing another integration
    meanwhile loads that one at once instead of waiting for the whole preload."""
    import threading

    @tool("slow_one", "Slow.")
    def slow_one(args: dict, ctx: object) -> str:
        return "slow"

    @tool("quick_one", "Quick.")
    def quick_one(args: dict, ctx: object) -> str:
        return "quick"

    importing, release = threading.Event(), threading.Event()

    def slow_loader() -> list:
        importing.set()
        release.wait(10)
        return [slow_one]

    registry = Registry()
    registry.add(Manifest("slow", "1.0.0", "Slow", NoAuth(), builtin=True), slow_loader)
    registry.add(Manifest("quick", "1.0.0", "Quick", NoAuth(), builtin=True), lambda: [quick_one])
    preload = threading.Thread(target=registry.load_all)
    preload.start()
    try:
        assert importing.wait(10)
        found = []
        lookup = threading.Thread(target=lambda: found.append(registry.find("quick_one")))
        lookup.start()
        lookup.join(5)
        assert found == [quick_one]  # answered while "slow" is still importing
    finally:
        release.set()
        preload.join(10)
    assert set(registry.tools_of("slow")) == {"slow_one"}
