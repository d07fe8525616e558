"""The data's schema version and forward migrations (issue 23), on every store backend: the version
lives in the data, migrations apply in order exactly once however often and from however many places
`migrate` runs, and the deploy hook reports to CodeDeploy whether they worked."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from workbench.stores import Stores
from workbench.stores.dynamodb import dynamodb_stores
from workbench.stores.memory import memory_stores
from workbench.stores.migrations import MIGRATIONS, SCHEMA_VERSION, Migration, migrate
from workbench.stores.sqlite import sqlite_stores

from tests.support.aws import AwsEndpoint
from tests.support.processes import REPO

pytestmark = pytest.mark.e2e


@pytest.fixture(params=["memory", "sqlite", "dynamodb"])
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Stores]:
    if request.param == "memory":
        yield memory_stores()
    elif request.param == "sqlite":
        yield sqlite_stores(tmp_path / "wb.sqlite3")
    else:
        endpoint: AwsEndpoint = request.getfixturevalue("moto_endpoint")
        yield dynamodb_stores(endpoint.fresh_tables())


def _counting(n: int) -> tuple[tuple[Migration, ...], list[int]]:
    runs: list[int] = []
    lock = threading.Lock()

    def step(version: int) -> Any:
        def apply(stores: Stores) -> None:
            with lock:
                runs.append(version)

        return apply

    return tuple(Migration(v, f"step {v}", step(v)) for v in range(1, n + 1)), runs


def test_the_version_lives_in_the_data_and_each_step_runs_once(stores: Stores) -> None:
    assert stores.schema is not None and stores.schema.version() == 0
    assert migrate(stores) == list(range(1, SCHEMA_VERSION + 1))
    assert stores.schema.version() == SCHEMA_VERSION == MIGRATIONS[-1].version
    assert migrate(stores) == []  # idempotent: nothing left to do

    three, runs = _counting(3)
    assert migrate(stores, three[:2]) == [2] and runs == [2]  # step 1 is recorded already
    assert migrate(stores, three) == [3] and runs == [2, 3]
    assert migrate(stores, three[:1]) == [] and stores.schema.version() == 3  # never backwards


def test_concurrent_runners_record_each_step_once(stores: Stores) -> None:
    steps, _ = _counting(4)
    applied: list[list[int]] = []
    runners = [threading.Thread(target=lambda: applied.append(migrate(stores, steps))) for _ in range(4)]
    for runner in runners:
        runner.start()
    for runner in runners:
        runner.join()
    assert sorted(v for run in applied for v in run) == [1, 2, 3, 4]  # each step recorded by one runner
    assert stores.schema is not None and stores.schema.version() == 4


def test_the_version_survives_a_restart_of_the_local_gateway(tmp_path: Path) -> None:
    path = tmp_path / "wb.sqlite3"
    migrate(sqlite_stores(path))
    again = sqlite_stores(path)
    assert again.schema is not None and again.schema.version() == SCHEMA_VERSION


def test_the_deploy_hook_migrates_and_reports_to_codedeploy(moto_endpoint: AwsEndpoint) -> None:
    from workbench.runtime.migrate_hook import handler

    calls: list[dict[str, Any]] = []

    class CodeDeploy:
        def put_lifecycle_event_hook_execution_status(self, **params: Any) -> dict[str, Any]:
            calls.append(params)
            return {"lifecycleEventHookExecutionId": params["lifecycleEventHookExecutionId"]}

    stores = dynamodb_stores(moto_endpoint.fresh_tables())
    event = {"DeploymentId": "d-123", "LifecycleEventHookExecutionId": "hook-1"}
    assert handler(event, None, codedeploy=CodeDeploy(), stores=stores) == {
        "status": "Succeeded",
        "applied": list(range(1, SCHEMA_VERSION + 1)),
    }
    assert handler(event, None, codedeploy=CodeDeploy(), stores=stores)["applied"] == []  # the next deploy
    assert [c["status"] for c in calls] == ["Succeeded", "Succeeded"]
    assert calls[0] == {
        "deploymentId": "d-123",
        "lifecycleEventHookExecutionId": "hook-1",
        "status": "Succeeded",
    }

    class Broken:
        schema = None  # no way to read the version: the hook fails and CodeDeploy stops the deploy

    answer = handler(event, None, codedeploy=CodeDeploy(), stores=Broken())
    assert answer["status"] == "Failed" and calls[-1]["status"] == "Failed"


def test_workbench_migrate_on_the_local_data(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "WORKBENCH_DATA_DIR": str(tmp_path / "data")}
    run = [sys.executable, "-m", "workbench.cli", "migrate"]
    first = subprocess.run(run, cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == f"schema version 0 -> {SCHEMA_VERSION} (applied {SCHEMA_VERSION})"
    second = subprocess.run(run, cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert (
        second.stdout.strip()
        == f"schema version {SCHEMA_VERSION}: up to date (this version writes {SCHEMA_VERSION})"
    )
