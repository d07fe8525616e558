"""What the engine relies on inside its libraries, pinned so that an upgrade that moves it fails here
rather than silently changing behaviour.

- No module imports a library's private module (`httpx._transports`, `httpcore._async`) or reaches
  a private attribute through a library's module (`httpx._config`); the egress door's transport is
  our own, on httpcore's public API (tests/egress/test_pinned_transport.py holds it to httpx's).
- The one subclass of a library's protocol, `workbench serve`'s strict httptools protocol
  (workbench.runtime.uvicorn_server), overrides `HttpToolsProtocol.on_headers_complete` and reads
  the request target from `self.url`, which `on_url` fills: if uvicorn renames either, the override
  would be skipped (fragments and absolute-form targets reach the app again) or refuse everything.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from tests.support.processes import REPO

LIBRARIES = {"httpx", "httpcore", "uvicorn", "starlette", "anyio", "h11", "httptools", "botocore", "boto3"}
# Private attributes set on another object than self, each on an object of our own (the test below
# refuses any other: `transport._pool = ...` on httpx's transport was how egress once pinned it).
OWN_OBJECTS = {
    ("shared/workbench/engine/search.py", "index"),  # SearchIndex.from_bytes filling a fresh instance
    ("shared/workbench/browser/pool.py", "self._lock"),  # our tag on the lock: the loop it belongs to
}
SOURCES = sorted([*(REPO / "shared" / "workbench").rglob("*.py"), *(REPO / "plugins").rglob("*.py")])


def _private(part: str) -> bool:
    return part.startswith("_") and not part.startswith("__")


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(REPO)))
def test_no_private_module_or_attribute_of_a_library_is_used(path: Path) -> None:
    tree = ast.parse(path.read_text())
    library_names: set[str] = set()
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] in LIBRARIES:
                    library_names.add(alias.asname or parts[0])
                    if any(_private(p) for p in parts):
                        found.append(f"line {node.lineno}: import {alias.name}")
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            parts = node.module.split(".")
            if parts[0] in LIBRARIES and (
                any(_private(p) for p in parts) or any(_private(a.name) for a in node.names)
            ):
                found.append(f"line {node.lineno}: from {node.module} import ...")
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and _private(node.attr)
            and isinstance(node.value, ast.Name)
            and node.value.id in library_names
        ):
            found.append(f"line {node.lineno}: {node.value.id}.{node.attr}")
    assert not found, found


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(REPO)))
def test_no_private_attribute_of_another_object_is_assigned(path: Path) -> None:
    where = str(path.relative_to(REPO))
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        for target in targets:
            for part in ast.walk(target):
                if not (isinstance(part, ast.Attribute) and _private(part.attr)):
                    continue
                owner = ast.unparse(part.value)
                if owner not in ("self", "cls") and (where, owner) not in OWN_OBJECTS:
                    found.append(f"line {node.lineno}: {owner}.{part.attr} = ...")
    assert not found, found


def test_the_uvicorn_internals_the_strict_protocol_relies_on_are_where_it_expects() -> None:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    assert "on_headers_complete" in vars(HttpToolsProtocol), "uvicorn moved on_headers_complete"
    on_url = inspect.getsource(HttpToolsProtocol.on_url)
    assert "self.url += url" in on_url, "uvicorn no longer collects the request target in self.url"
    reset = inspect.getsource(HttpToolsProtocol.on_message_begin)
    assert 'self.url = b""' in reset, "uvicorn no longer resets self.url per request"
