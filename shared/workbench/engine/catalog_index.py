"""The shipped catalog's search index, built when the Lambda layer is built.

The first `search_tools` of an instance otherwise pays for importing every plugin's tools module
(about 270 pydantic models) and indexing them: a few hundred milliseconds on a cold instance. The
layer build (infra/layer/Makefile) runs `python -m workbench.cli catalog-index <path>` and ships the
result beside this module; an instance loads it instead, importing no tools module at all.

It is used only when it describes this registry: the same integrations (extra plugins configured on
the gateway, or a catalog changed since the build, and the index is built as before) and the same
engine version (`SearchIndex.from_bytes` refuses another). Locally there is no file: the index is
built on the first search.

    python -m workbench.cli catalog-index OUT_PATH
"""

from __future__ import annotations

import marshal
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from workbench.engine.registry import Registry
    from workbench.engine.search import SearchIndex

__all__ = ["INDEX_PATH", "build", "load"]

INDEX_PATH = Path(__file__).with_name("catalog_index.bin")


def _integrations(registry: Registry) -> list[str]:
    return sorted(m.name for m in registry.manifests())


def build(registry: Registry) -> bytes:
    from workbench.engine.search import SearchIndex, catalog_docs

    return marshal.dumps((_integrations(registry), SearchIndex(catalog_docs(registry)).to_bytes()))


def load(registry: Registry, path: Path | None = None) -> SearchIndex | None:
    """The prebuilt index, if there is one and it is this registry's; else None."""
    from workbench.engine.search import SearchIndex

    path = path or INDEX_PATH
    try:
        integrations, data = marshal.loads(path.read_bytes())  # noqa: S302 - our own build artefact
    except (OSError, ValueError, EOFError, TypeError):
        return None
    if integrations != _integrations(registry):
        return None
    try:
        return SearchIndex.from_bytes(data)
    except ValueError:
        return None
