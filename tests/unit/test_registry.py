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
