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


# A fresh interpreter: a shipped plugin's tools module imports no pydantic; a call whose arguments
# are exactly what its declaration says imports none either; one that needs the model (a "5" for an
# int) builds that tool's model alone (with its bases'), and answers with the tool's own class.
_BUILDS = """
import json, sys
from workbench_plugins.github import tools
models = {t.name: t.input_model for t in tools.TOOLS}
built = lambda: sorted({m.__name__ for m in models.values() if "_pydantic_model" in vars(m)})
at_import = ("pydantic" in sys.modules, built())
plain = models["github_list_prs"].model_validate({"owner": "octocat", "repo": "hello-world", "state": "all"})
after_plain = ("pydantic" in sys.modules, built())
coerced = models["github_list_prs"].model_validate({"owner": "octocat", "repo": "hello-world", "perPage": "5"})
print(json.dumps({
    "at_import": at_import, "after_plain": after_plain, "after_coerced": built(), "count": len(models),
    "plain": [type(plain).__name__, plain.model_dump()], "coerced": [type(coerced).__name__, coerced.model_dump()],
}))
"""


def test_a_shipped_plugin_imports_pydantic_only_for_a_call_that_needs_its_model() -> None:
    import subprocess

    from tests.support.processes import REPO

    done = subprocess.run(
        [sys.executable, "-c", _BUILDS], cwd=REPO, capture_output=True, text=True, timeout=60, check=True
    )
    out = json.loads(done.stdout)
    assert out["count"] > 20
    assert out["at_import"] == [False, []]
    assert out["after_plain"] == [False, []]
    # ListPrs(_Repo, _Paged): its model is built on its bases' (_Repo is github_get_repo's input).
    assert out["after_coerced"] == ["ListPrs", "_Repo"]
    assert out["plain"][0] == out["coerced"][0] == "ListPrs"
    assert out["plain"][1]["state"] == "all"
    assert out["coerced"][1]["perPage"] == 5
