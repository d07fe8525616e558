"""AWS tests: Lambda handlers over moto-backed DynamoDB + KMS, template invariants, sam build."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from workbench.settings import Settings

from tests.support.aws import AwsEndpoint


@pytest.fixture
def aws_settings(moto_endpoint: AwsEndpoint) -> Settings:
    """Fresh tables (from template.yaml) on the session's moto server, with the moto KMS key."""
    return moto_endpoint.fresh_tables()


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
