"""No import cycle among workbench modules, counting the imports inside functions too (a deferred
import only hides a cycle from the interpreter's start-up; the two modules still need each other).
Imports under `if TYPE_CHECKING:` are annotations only and do not count."""

from __future__ import annotations

import ast
from pathlib import Path

import workbench

ROOT = Path(workbench.__file__).parent


def _module_name(path: Path) -> str:
    parts = ["workbench", *path.relative_to(ROOT).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _targets(module: str, node: ast.Import | ast.ImportFrom) -> set[str]:
    """The workbench modules an import statement loads (a name imported from a package is that
    package's submodule when one exists, else the package)."""
    if isinstance(node, ast.Import):
        return {a.name for a in node.names if a.name in MODULES}
    base = node.module or ""
    if node.level:
        package = module if MODULES[module].name == "__init__.py" else module.rsplit(".", 1)[0]
        for _ in range(node.level - 1):
            package = package.rsplit(".", 1)[0]
        base = f"{package}.{base}" if base else package
    found = set()
    for alias in node.names:
        sub = f"{base}.{alias.name}"
        if sub in MODULES:
            found.add(sub)
        elif base in MODULES:
            found.add(base)
    return found


def _imports(module: str) -> set[str]:
    tree = ast.parse(MODULES[module].read_text(), str(MODULES[module]))
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.update(_targets(module, node))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    found.discard(module)
    return found


def import_graph() -> dict[str, set[str]]:
    return {m: _imports(m) for m in MODULES}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return found


def test_the_graph_sees_deferred_imports() -> None:
    graph = import_graph()
    # composition builds the OAuth server inside a method: that edge must be in the graph.
    assert "workbench.oauth.service" in graph["workbench.composition"]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycle_among_workbench_modules() -> None:
    assert cycles(import_graph()) == []
