"""OpenAPI documents are read by a child process (external/document_worker.py): the same answer as
reading them in-process, within a time and a memory limit that fail one registration only."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from workbench.errors import InvalidInput
from workbench.external.document_worker import DocumentWorker
from workbench.external.documents import DOCUMENT_SECONDS, read_document
from workbench.external.openapi import security_schemes

from tests.support.processes import REPO

EXAMPLES = REPO / "node_modules" / "@readme" / "oas-examples" / "3.0" / "json"


def _large_yaml(ops: int = 600, filler_lines: int = 8_000) -> str:
    paths = "\n".join(
        f"  /items{i}/{{id}}:\n    get:\n      operationId: get{i}\n      summary: {'word ' * 20}\n"
        f"      parameters: [{{name: id, in: path, required: true, schema: {{type: string}}}}]"
        for i in range(ops)
    )
    filler = "x-notes: |\n" + "".join(f"  {'lorem ipsum ' * 20}\n" for _ in range(filler_lines))
    return f"openapi: 3.0.0\ninfo: {{title: big, version: '1'}}\n{filler}paths:\n{paths}\n"


@pytest.fixture
def worker() -> Any:
    w = DocumentWorker(document_seconds=DOCUMENT_SECONDS)
    yield w
    w.close()


@pytest.mark.parametrize("name", ["petstore.json", "security.json", "parameters-style.json", "circular.json"])
def test_a_child_reads_a_document_exactly_as_the_process_would(worker: DocumentWorker, name: str) -> None:
    document = (EXAMPLES / name).read_text()
    compiled, schemes = worker.read(document, None)
    assert worker.answered == 1  # a child answered, not the fallback
    parsed, expected = read_document(document, None)
    assert [op.as_json() for op in compiled.operations] == [op.as_json() for op in expected.operations]
    assert (compiled.title, compiled.version, compiled.base_url) == (
        expected.title,
        expected.version,
        expected.base_url,
    )
    assert compiled.dropped == expected.dropped
    assert schemes == security_schemes(parsed)


def test_a_refused_document_is_the_same_clear_error_and_the_child_goes_on(worker: DocumentWorker) -> None:
    with pytest.raises(InvalidInput, match="expands to more than 1000000 nodes"):
        worker.read(
            'a0: &a0 ["lol"]\n'
            + "".join(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]\n" for i in range(1, 9)),
            None,
        )
    compiled, _ = worker.read(
        json.dumps({"openapi": "3.0.0", "paths": {"/x": {"get": {"operationId": "x"}}}}), {"x"}
    )
    assert [op.name for op in compiled.operations] == ["x"]
    assert worker.answered == 2


def test_a_child_over_its_time_is_stopped_and_the_next_document_gets_a_new_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    worker = DocumentWorker(document_seconds=DOCUMENT_SECONDS)
    try:
        monkeypatch.setattr(DocumentWorker, "wall_seconds", property(lambda self: 0.3))
        first = worker._start()
        assert first is not None
        started = time.monotonic()
        with pytest.raises(InvalidInput, match="took longer than"):
            worker.read(_large_yaml(), None)
        assert time.monotonic() - started < 3.0
        assert first.poll() is not None  # killed
        monkeypatch.undo()
        compiled, _ = worker.read("openapi: 3.0.0\npaths: {/y: {get: {operationId: y}}}\n", None)
        assert [op.name for op in compiled.operations] == ["y"]
    finally:
        worker.close()


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="the memory cap is Linux's RLIMIT_AS")
def test_a_document_over_the_memory_limit_fails_alone() -> None:
    worker = DocumentWorker(document_seconds=DOCUMENT_SECONDS, memory_mb=16)
    many = json.dumps({"openapi": "3.0.0", "paths": {}, "x-many": [f"s{i}" for i in range(350_000)]})
    try:
        with pytest.raises(InvalidInput, match="more memory than a registration may use"):
            worker.read(many, None)
        assert os.getpid()  # this process goes on; a small document is read by a fresh child
        compiled, _ = worker.read("openapi: 3.0.0\npaths: {/z: {get: {operationId: z}}}\n", None)
        assert [op.name for op in compiled.operations] == ["z"]
    finally:
        worker.close()
