"""What every shipped plugin tool publishes, pinned: its JSON Schema (get_tool_schema, tools/list),
the argument names the audit redacts, and the argument text search indexes.

How a plugin declares its arguments may change (a base class, when the pydantic model is built);
what it publishes may not, unless on purpose: then regenerate the pin and read the diff,
`uv run python -m tests.plugins.test_shipped_schemas --write`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from workbench.composition import build_registry

PIN = Path(__file__).with_name("shipped_schemas.json")


def published() -> dict[str, Any]:
    registry = build_registry()
    out: dict[str, Any] = {}
    for manifest in registry.manifests():
        if manifest.builtin:
            continue
        for name, t in registry.tools_of(manifest.name).items():
            out[name] = {
                "schema": t.json_schema(),
                "secret": sorted(t.secret_argument_names()),
                "search_text": t.argument_text(),
            }
    return out


def _lines(tools: dict[str, Any]) -> str:
    """One tool a line, so a change reads as the tools it changed."""
    rows = [f"{json.dumps(name)}: {json.dumps(tools[name])}" for name in sorted(tools)]
    return "{\n" + ",\n".join(rows) + "\n}\n"


def test_every_shipped_tool_publishes_what_it_did() -> None:
    pinned = json.loads(PIN.read_text())
    now = published()
    assert sorted(now) == sorted(pinned)
    # Compared as serialised, so the order of properties (what a client reads first) counts too.
    changed = [name for name in sorted(now) if json.dumps(now[name]) != json.dumps(pinned[name])]
    assert changed == []


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    PIN.write_text(_lines(published()))


# A fresh interpreter: a shipped plugin's tools module builds none of its models when imported;
# validating one tool's arguments builds that tool's model alone.
_BUILDS = """
import json
from workbench_plugins.github import tools
models = {t.name: t.input_model for t in tools.TOOLS}
built = lambda: sorted(n for n, m in models.items() if m.__pydantic_complete__)
at_import = built()
models["github_get_repo"].model_validate({"owner": "octocat", "repo": "hello-world"})
print(json.dumps({"at_import": at_import, "after_one_call": built(), "count": len(models)}))
"""


def test_a_shipped_plugin_builds_the_model_of_the_tool_it_runs_only() -> None:
    import subprocess

    from tests.support.processes import REPO

    done = subprocess.run(
        [sys.executable, "-c", _BUILDS], cwd=REPO, capture_output=True, text=True, timeout=60, check=True
    )
    out = json.loads(done.stdout)
    assert out["count"] > 20
    assert out["at_import"] == []
    assert out["after_one_call"] == ["github_get_repo"]
