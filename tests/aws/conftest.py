"""AWS tests: Lambda handlers over moto-backed DynamoDB + KMS, template invariants, sam build."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from workbench.settings import Settings

from tests.support.aws import AwsEndpoint, load_template


@pytest.fixture
def aws_settings(moto_endpoint: AwsEndpoint) -> Settings:
    """Fresh tables (from template.yaml) on the session's moto server, with the moto KMS key."""
    return moto_endpoint.fresh_tables()


@pytest.fixture(autouse=True)
def _restore_workbench_logger() -> Iterator[None]:
    """The Lambda runtime routes the `workbench` logger through its JSON handler (no propagation): undo
    that after each test, so other tests' log capture in the same session sees the engine's lines."""
    target = logging.getLogger("workbench")
    saved = (list(target.handlers), target.propagate, target.level)
    yield
    target.handlers[:] = saved[0]
    target.propagate, target.level = saved[1], saved[2]


@dataclass
class FunctionSecret:
    """The stack's Secrets Manager secret as the functions see it (WORKBENCH_SECRET_ID)."""

    arn: str
    client: Any
    session_secret: str

    def put(self, values: dict[str, str], *, with_session_secret: bool = True) -> None:
        """Replace the secret's JSON (a new version, as a rotation or an operator's edit makes)."""
        body = {"session_secret": self.session_secret, **values} if with_session_secret else values
        self.client.put_secret_value(SecretId=self.arn, SecretString=json.dumps(body))


@pytest.fixture
def function_secret(moto_endpoint: AwsEndpoint, aws_settings: Settings) -> Iterator[FunctionSecret]:
    client = moto_endpoint.client("secretsmanager")
    session_secret = aws_settings.session_secret or "test-session-secret"
    arn = client.create_secret(
        Name=f"workbench/{aws_settings.table_prefix}",
        SecretString=json.dumps({"session_secret": session_secret}),
    )["ARN"]
    yield FunctionSecret(arn, client, session_secret)
    client.delete_secret(SecretId=arn, ForceDeleteWithoutRecovery=True)


@pytest.fixture
def lambda_env(
    moto_endpoint: AwsEndpoint,
    aws_settings: Settings,
    function_secret: FunctionSecret,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Settings]:
    """The environment template.yaml gives a function, pointed at moto; a cold instance. Nothing secret
    is in it: the session secret (and any plugin client a test adds) is read from Secrets Manager."""
    from workbench.runtime.lambda_handler import reset_instance

    for key, value in moto_endpoint.env(aws_settings).items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("WORKBENCH_SESSION_SECRET")
    monkeypatch.setenv("WORKBENCH_SECRET_ID", function_secret.arn)
    monkeypatch.setenv("WORKBENCH_PUBLIC_URL", "https://gw.example.test")
    template_env = load_template()["Globals"]["Function"]["Environment"]["Variables"]
    monkeypatch.setenv("WORKBENCH_MAX_RESPONSE_BYTES", template_env["WORKBENCH_MAX_RESPONSE_BYTES"])
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", "workbench")
    monkeypatch.setenv("POWERTOOLS_METRICS_NAMESPACE", "Workbench")
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "1")
    reset_instance()
    yield aws_settings
    reset_instance()
