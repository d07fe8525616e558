"""The docs' plugin tool tables carry each tool's annotations in their last column.

    python -m tests.plugins.annotation_tables   # rewrite docs/plugins.md and docs/plugins-b.md

adds the column where a table lacks it and brings every row's value up to date (test_annotations.py
fails when a row disagrees with the tool).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parents[2] / "docs"
_ROW = re.compile(r"^\| `([a-z_]+)` \| (.+?) \|(?: [a-z ,-]+ \|)?$")


def hints_text(hints: Mapping[str, Any] | None) -> str:
    """'read-only, open world' / 'write, idempotent' / 'destructive, idempotent, open world'."""
    if not hints:
        return "unknown"
    kind = "read-only" if hints["readOnlyHint"] else "destructive" if hints["destructiveHint"] else "write"
    parts = [kind]
    if hints["idempotentHint"] and not hints["readOnlyHint"]:
        parts.append("idempotent")
    if hints["openWorldHint"]:
        parts.append("open world")
    return ", ".join(parts)


def rewrite(text: str, tools: Mapping[str, Mapping[str, Any]]) -> str:
    lines = text.split("\n")
    for i, line in enumerate(lines):
        match = _ROW.match(line)
        if match is None or match.group(1) not in tools:
            continue
        lines[i] = f"| `{match.group(1)}` | {match.group(2)} | {hints_text(tools[match.group(1)])} |"
        # The table's header and rule get the column once.
        for j in range(i - 1, -1, -1):
            if lines[j] == "|---|---|":
                lines[j] = "|---|---|---|"
                if lines[j - 1].count("|") == 3:
                    lines[j - 1] = lines[j - 1] + " Annotations |"
                break
            if not lines[j].startswith("| `"):
                break
    return "\n".join(lines)


def main() -> None:
    from workbench.composition import build_registry

    registry = build_registry()
    tools = {t.name: t.annotations or {} for t in registry.all_tools()}
    for doc in ("plugins.md", "plugins-b.md"):
        path = DOCS / doc
        path.write_text(rewrite(path.read_text(), tools))


if __name__ == "__main__":
    main()
