"""The catalog's search index prebuilt by the layer build: same answers, used only when it fits."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from workbench.composition import build_registry
from workbench.engine import catalog_index
from workbench.engine.search import SearchIndex, catalog_docs

from tests.support.processes import REPO

QUERIES = ("create jira issue", "send a slack message", "list my notes", "refund a payment", "下载文件")


def test_the_prebuilt_index_answers_exactly_as_a_fresh_one(tmp_path: Path) -> None:
    registry = build_registry()
    path = tmp_path / "catalog_index.bin"
    path.write_bytes(catalog_index.build(registry))
    loaded = catalog_index.load(build_registry(), path)
    assert loaded is not None
    fresh = SearchIndex(catalog_docs(registry))
    for query in QUERIES:
        assert [(h.doc.name, round(h.score, 6)) for h in loaded.search(query, 10)] == [
            (h.doc.name, round(h.score, 6)) for h in fresh.search(query, 10)
        ]


def test_it_is_not_used_for_another_catalog_or_a_damaged_file(tmp_path: Path) -> None:
    path = tmp_path / "catalog_index.bin"
    path.write_bytes(catalog_index.build(build_registry()))
    # A gateway with an extra plugin: the prebuilt index does not know its tools.
    assert catalog_index.load(build_registry(extra=("tests.support.slow_plugin",)), path) is None
    assert catalog_index.load(build_registry(), tmp_path / "missing.bin") is None
    damaged = tmp_path / "damaged.bin"
    damaged.write_bytes(b"\x00not marshal")
    assert catalog_index.load(build_registry(), damaged) is None


def test_the_first_search_with_the_prebuilt_index_imports_no_tools_module(tmp_path: Path) -> None:
    path = tmp_path / "catalog_index.bin"
    path.write_bytes(catalog_index.build(build_registry()))
    code = f"""
import asyncio, json, sys, tempfile
from pathlib import Path
from workbench.engine import catalog_index
catalog_index.INDEX_PATH = Path({str(path)!r})
from workbench.identity.auth import Principal
from workbench.composition import build_gateway
from workbench.settings import Settings
gw = build_gateway(Settings(store="memory", data_dir=Path(tempfile.mkdtemp()), local_key="A" * 43 + "="))
user = gw.stores.users.get_or_create("ada@example.com")
hits = asyncio.run(gw.catalog.search_tools(Principal(user=user, via="api_key"), "create jira issue", 3))
tools = sorted(m for m in sys.modules if m.startswith("workbench_plugins.") and m.endswith(".tools"))
print(json.dumps({{"first": hits[0]["name"], "tools_modules": tools}}))
"""
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out == {"first": "jira_create_issue", "tools_modules": []}
