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
