"""The plugin API: what a plugin author imports, pinned (httpx's test_exported_members shape).
Renaming or dropping one of these names breaks every plugin that uses it; adding one is a decision
this list records. docs/plugins.md shows them; the plugins import nothing else from workbench."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import workbench
import workbench.sdk
import workbench.tools
import workbench_plugins

TOOLS = {
    "ApiKeyAuth",
    "Arg",
    "ArgsModel",
    "Arguments",
    "ApiKeyField",
    "CancelSignal",
    "CookieAuth",
    "EmitFn",
    "Field",
    "Hint",
    "LoginHosts",
    "Manifest",
    "NoAuth",
    "OAuth2Auth",
    "Probe",
    "TokenKind",
    "TokenRejected",
    "Tool",
    "ToolContext",
    "ToolResult",
    "argument_text",
    "error_text",
    "tool",
}
SDK = {
    "ToolError",
    "UpstreamError",
    "api",
    "api_response",
    "compact",
    "error_detail",
    "next_link",
    "pick",
    "pick_many",
    "query_param",
    "trim",
}
PUBLIC = {"workbench.tools": TOOLS, "workbench.sdk": SDK}
REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("module", "names"), [(workbench.tools, TOOLS), (workbench.sdk, SDK)])
def test_exported_members(module: object, names: set[str]) -> None:
    exported = module.__all__
    assert sorted(exported) == sorted(names) and len(exported) == len(set(exported))
    for name in exported:
        assert getattr(module, name) is not None, name


def _imports_from_workbench(path: Path) -> list[tuple[str, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "workbench":
            found += [(node.module or "", a.name) for a in node.names]
        elif isinstance(node, ast.Import):
            found += [(a.name, "*") for a in node.names if a.name.split(".")[0] == "workbench"]
    return found


def test_plugins_use_only_the_public_api() -> None:
    plugins = sorted(Path(workbench_plugins.__file__).parent.rglob("*.py"))
    assert plugins
    outside = [
        f"{p.relative_to(REPO)}: {module}.{name}"
        for p in plugins
        for module, name in _imports_from_workbench(p)
        if name not in PUBLIC.get(module, set())
    ]
    assert outside == []


def test_shipped_plugins_never_import_pydantic_themselves() -> None:
    """Their models are ArgsModels with workbench.tools.Field: a tool's first call on a cold start
    imports pydantic only when its arguments need the model (docs/plugins.md)."""
    plugins = sorted(Path(workbench_plugins.__file__).parent.rglob("*.py"))
    direct = [
        f"{p.relative_to(REPO)}:{node.lineno}"
        for p in plugins
        for node in ast.walk(ast.parse(p.read_text(), str(p)))
        if (isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "pydantic")
        or (isinstance(node, ast.Import) and any(a.name.split(".")[0] == "pydantic" for a in node.names))
    ]
    assert direct == []


def test_plugin_docs_show_only_the_public_api() -> None:
    docs = [REPO / "docs" / n for n in ("plugins.md", "plugins-b.md", "browser.md")]
    outside = []
    for doc in docs:
        for line in doc.read_text().splitlines():
            words = line.split()
            if line.startswith("from workbench") and len(words) >= 4 and words[2] == "import":
                names = [n.strip(",()") for n in words[3:] if n.strip(",()")]
                outside += [
                    f"{doc.name}: {words[1]}.{n}" for n in names if n not in PUBLIC.get(words[1], set())
                ]
    assert outside == []


def test_at_most_twelve_modules_at_the_package_root() -> None:
    root = Path(workbench.__file__).parent
    assert len(list(root.glob("*.py"))) <= 12
