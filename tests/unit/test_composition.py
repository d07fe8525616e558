"""The composition root's preload (what `workbench serve` imports on a thread at start) covers every
module a lazily built service imports, so no first request imports one on the event loop."""

from __future__ import annotations

import ast
import subprocess
import sys

from workbench import composition

from tests.support.processes import REPO


def _imported_inside_methods(class_names: set[str]) -> set[str]:
    tree = ast.parse((REPO / "shared" / "workbench" / "composition.py").read_text())
    found: set[str] = set()
    for cls in tree.body:
        if isinstance(cls, ast.ClassDef) and cls.name in class_names:
            for node in ast.walk(cls):
                if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("workbench"):
                    found.add(node.module)
    return found


def test_the_preload_list_names_every_module_a_lazy_service_imports() -> None:
    assert _imported_inside_methods({"Gateway", "_BuiltinServices"}) == set(composition.LAZY_MODULES)


def test_preload_imports_every_tool_module_and_lazy_service_module(tmp_path: object) -> None:
    code = (
        "import sys, tempfile\n"
        "from pathlib import Path\n"
        "from tests.support.gateways import make_gateway\n"
        "from workbench.composition import LAZY_MODULES\n"
        "gw = make_gateway(Path(tempfile.mkdtemp()))\n"
        "assert 'workbench.builtin.apps' not in sys.modules\n"
        "gw.preload()\n"
        "missing = [m for m in (*LAZY_MODULES, 'workbench.builtin.apps', 'workbench_plugins.github.tools')"
        " if m not in sys.modules]\n"
        "print(missing)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
