"""AWS tests: Lambda handlers over moto-backed DynamoDB + KMS, template invariants, sam build."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from workbench.settings import Settings

from tests.support.aws import AwsEndpoint


@pytest.fixture
def aws_settings(moto_endpoint: AwsEndpoint) -> Settings:
    """Fresh tables (from template.yaml) on the session's moto server, with the moto KMS key."""
    return moto_endpoint.fresh_tables()


@pytest.fixture(autouse=True)
def _restore_workbench_logger() -> Iterator[None]:
    """The Lambda runtime routes the `workbench` logger through powertools (no propagation): undo
    that after each test, so other tests' log capture in the same session sees the engine's lines."""
    target = logging.getLogger("workbench")
    saved = (list(target.handlers), target.propagate, target.level)
    yield
    target.handlers[:] = saved[0]
    target.propagate, target.level = saved[1], saved[2]


@pytest.fixture
def lambda_env(
    moto_endpoint: AwsEndpoint, aws_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Settings]:
    """The environment template.yaml gives a function, pointed at moto; a cold instance."""
    from workbench.lambda_runtime import reset_instance

    for key, value in moto_endpoint.env(aws_settings).items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("WORKBENCH_PUBLIC_URL", "https://gw.example.test")
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", "workbench")
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "Workbench")
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "1")
    reset_instance()
    yield aws_settings
    reset_instance()
