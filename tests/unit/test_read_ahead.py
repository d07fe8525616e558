"""A plugin's first call imports its tools module on the loop (on a cold start: the plugin and
pydantic, 100 ms or more). The user's connection and the data key of its credential are read in the
store pool meanwhile, so their round trips (DynamoDB, KMS) overlap the import; the call then makes
no more reads than before, and a read ahead that fails changes nothing of the answer."""

from __future__ import annotations

import importlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from workbench.composition import Gateway, build_registry
from workbench.guard import deadline
from workbench.guard.deadline import Deadline

from tests.support.gateways import make_gateway, principal_for
from tests.support.slowapi import connect_slowapi, make_manifest, slow_upstream


@pytest.fixture(scope="module")
def upstream() -> Iterator[str]:
    with slow_upstream(keep_alive=True) as url:
        yield url


def _gateway(
    tmp_path: Path, url: str, during_import: list[str], wait: float = 5.0
) -> tuple[Gateway, list[str]]:
    """slowapi, whose tools module's import lasts until the data key was unwrapped (at most `wait`), and
    a record of every connection read and data-key unwrap, in order."""
    unwrapped = threading.Event()
    seen: list[str] = []

    def load() -> Any:
        during_import.append("import started")
        if unwrapped.wait(wait):
            during_import.append("the key was unwrapped during the import")
        return importlib.import_module("tests.support.slowapi.tools").TOOLS

    registry = build_registry(plugins=False)
    registry.add(make_manifest(url), load)
    gw = make_gateway(tmp_path, registry=registry, egress_allow="loopback")
    connect_slowapi(gw, principal_for(gw).user.id)
    store, provider = gw.credentials.store, gw.cipher.provider
    get, unwrap = store.get, provider.decrypt_data_key

    def counted_get(*args: Any) -> Any:
        seen.append("connection read")
        return get(*args)

    def counted_unwrap(*args: Any) -> Any:
        seen.append("data key unwrapped")
        key = unwrap(*args)
        unwrapped.set()
        return key

    store.get = counted_get  # type: ignore[method-assign]
    provider.decrypt_data_key = counted_unwrap  # type: ignore[method-assign]
    gw.cipher._by_wrapped.clear()  # the save above cached its data key: unwrap it again, as a cold start does
    return gw, seen


async def _fast(gw: Gateway, *, within: float | None = None) -> dict[str, Any]:
    """One slowapi_fast call; `within`: under a request deadline of that many seconds (as on Lambda,
    where the engine looks the tool up for the audit before the pipeline runs)."""
    calls = [{"tool": "slowapi_fast", "args": {}, "ref_id": None}]
    with deadline.scope(Deadline(time.monotonic() + within) if within is not None else None):
        out = await gw.runs.execute(principal_for(gw), calls)
    result: dict[str, Any] = out["results"][0]
    return result


@pytest.mark.parametrize("within", [None, 20.0], ids=["no deadline", "a request deadline"])
async def test_the_connection_and_its_data_key_are_read_while_the_plugin_imports(
    tmp_path: Path, upstream: str, within: float | None
) -> None:
    during_import: list[str] = []
    gw, seen = _gateway(tmp_path, upstream, during_import)
    assert await _fast(gw, within=within) == {"result": {"fast": True}}
    assert during_import == ["import started", "the key was unwrapped during the import"]
    assert seen == ["connection read", "data key unwrapped"]  # once each, as without the read ahead
    # The tools are loaded now: the next call reads its connection (a new batch) and nothing ahead.
    assert await _fast(gw, within=within) == {"result": {"fast": True}}
    assert seen == ["connection read", "data key unwrapped", "connection read"]


async def test_a_read_ahead_that_fails_leaves_the_answer_to_the_pipelines_own_read(
    tmp_path: Path, upstream: str
) -> None:
    during_import: list[str] = []
    gw, seen = _gateway(tmp_path, upstream, during_import, wait=0.5)
    store = gw.credentials.store
    get = store.get
    failures = [ConnectionError("the store did not answer")]

    def flaky(*args: Any) -> Any:
        if failures:
            raise failures.pop()
        return get(*args)

    store.get = flaky  # type: ignore[method-assign]
    # The read ahead fails (the import then waits its 0.5 s for a key that never comes); the
    # pipeline reads again, and the call goes through as if nothing had been read ahead.
    assert await _fast(gw) == {"result": {"fast": True}}
    assert during_import == ["import started"]
    assert seen == ["connection read", "data key unwrapped"]
