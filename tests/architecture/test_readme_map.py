"""The README's map of shared/workbench/ names every module, so a newcomer finds each one where
the map says: a root module by its file name, a package's module by its name in the package's entry."""

from __future__ import annotations

import re
from pathlib import Path

import workbench

ROOT = Path(workbench.__file__).parent
README = Path(__file__).resolve().parents[2] / "README.md"
DESCRIPTION_COLUMN = 26  # where the map's descriptions start


def _map_entries() -> dict[str, str]:
    """Each entry of the map under shared/workbench/ (an entry's first line names it at two spaces
    of indent; its description may continue on the following lines)."""
    text = README.read_text()
    block = text[text.index("shared/workbench/ ") :]
    block = block[: block.index("\nplugins/")]
    entries: dict[str, str] = {}
    current = None
    for line in block.splitlines()[1:]:
        if line.startswith("  ") and not line.startswith(" " * DESCRIPTION_COLUMN):
            current = line[:DESCRIPTION_COLUMN].strip()
            entries[current] = line
        elif current is not None:
            entries[current] += "\n" + line
    return entries


def test_every_module_is_on_the_readme_map() -> None:
    entries = _map_entries()
    missing = []
    for path in sorted(ROOT.rglob("*.py")):
        relative = path.relative_to(ROOT)
        if len(relative.parts) == 1:
            if relative.name != "__init__.py" and not any(relative.name in name for name in entries):
                missing.append(str(relative))
            continue
        package = relative.parts[0] + "/"
        entry = entries.get(package)
        if entry is None:
            missing.append(f"{package} (the package)")
        elif path.stem != "__init__" and not re.search(rf"\b{re.escape(path.stem)}\b", entry):
            missing.append(str(relative))
    assert missing == [], "add these to the map in README.md ('How it is built')"
