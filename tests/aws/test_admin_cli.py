"""`workbench keys ... --stack NAME`: the admin path into a deployed stack with AWS credentials only.

template.yaml's stateful resources (tables, KMS key, alias) are deployed by moto's CloudFormation on
the session's moto server; the real CLI, in its own process, finds them from the stack's outputs,
mints a key into those tables, and the MCP Lambda handler — with the environment the template gives
it — accepts that key.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.apigw import http_api_event, load_entry, response_json
from tests.support.aws import AWS_ENV, AwsEndpoint, stateful_template
from tests.support.processes import REPO

pytestmark = pytest.mark.e2e


def _cloudformation(moto_endpoint: AwsEndpoint) -> Any:
    """moto creates a stack's resources inside CreateStack: no 5 s read timeout, no retry that would
    find the stack it just created."""
    import boto3
    from botocore.config import Config

    config = Config(read_timeout=120, retries={"total_max_attempts": 1}, region_name="us-east-1")
    return boto3.client("cloudformation", endpoint_url=moto_endpoint.url, config=config)


@pytest.fixture(scope="module")
def stack(moto_endpoint: AwsEndpoint) -> Iterator[tuple[str, dict[str, str]]]:
    """(stack name, outputs) of template.yaml's stateful part deployed through CloudFormation."""
    cfn = _cloudformation(moto_endpoint)
    name = f"wb-admin-{uuid.uuid4().hex[:8]}"
    cfn.create_stack(
        StackName=name,
        TemplateBody=json.dumps(stateful_template()),
        # The test deletes the stack with its tables when done (a deployment keeps them protected).
        Parameters=[{"ParameterKey": "DeletionProtection", "ParameterValue": "Disabled"}],
    )
    described = cfn.describe_stacks(StackName=name)["Stacks"][0]
    assert described["StackStatus"] == "CREATE_COMPLETE", described
    outputs = {o["OutputKey"]: o["OutputValue"] for o in described["Outputs"]}
    yield name, outputs
    cfn.delete_stack(StackName=name)


def _cli(moto_endpoint: AwsEndpoint, *args: str, home: str) -> subprocess.CompletedProcess[str]:
    """The installed CLI in a process of its own: AWS credentials and the endpoint, nothing else."""
    env = {
        "PATH": os.environ["PATH"],
        "HOME": home,
        **AWS_ENV,
        "WORKBENCH_AWS_ENDPOINT_URL": moto_endpoint.url,
        "WORKBENCH_DATA_DIR": os.path.join(home, "no-local-data"),
    }
    return subprocess.run(
        [sys.executable, "-m", "workbench.cli", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _whoami(key: str) -> dict[str, Any]:
    event = http_api_event(
        "POST",
        "/mcp",
        route_key="ANY /mcp",
        headers={"authorization": f"Bearer {key}", "accept": "application/json, text/event-stream"},
        body={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "whoami", "arguments": {}},
        },
    )
    result = load_entry("mcp").handler(event, None)
    body: dict[str, Any] = {"status": result["statusCode"], **response_json(result)}
    return body


@pytest.fixture
def deployed_function_env(
    moto_endpoint: AwsEndpoint, stack: tuple[str, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """The environment template.yaml gives the MCP function, with the stack's real resource names."""
    from workbench.runtime.lambda_handler import reset_instance
    from workbench.stores.dynamodb import TABLES

    _, outputs = stack
    for key, value in AWS_ENV.items():
        monkeypatch.setenv(key, value)
    for var in [v for v in os.environ if v.startswith("WORKBENCH_")]:
        monkeypatch.delenv(var)
    monkeypatch.setenv("WORKBENCH_STORE", "dynamodb")
    monkeypatch.setenv("WORKBENCH_KEY_BACKEND", "kms")
    monkeypatch.setenv("WORKBENCH_KMS_KEY_ID", outputs["DataKeyArn"])
    monkeypatch.setenv("WORKBENCH_AWS_ENDPOINT_URL", moto_endpoint.url)
    monkeypatch.setenv("WORKBENCH_PUBLIC_URL", "https://gw.example.test")
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "1")
    for store, logical in TABLES.items():
        monkeypatch.setenv(f"WORKBENCH_TABLE_{store.upper()}", outputs[f"{logical}Name"])
    reset_instance()
    yield
    reset_instance()


def test_keys_create_with_only_aws_credentials_reaches_mcp_on_the_deployed_tables(
    moto_endpoint: AwsEndpoint,
    stack: tuple[str, dict[str, str]],
    deployed_function_env: None,
    tmp_path: Any,
) -> None:
    name, outputs = stack
    assert outputs["UsersTableName"].startswith(f"{name}-UsersTable")  # names carry the stack's
    done = _cli(moto_endpoint, "keys", "create", "ops@example.com", "--stack", name, home=str(tmp_path))
    assert done.returncode == 0, done.stderr
    key = done.stdout.strip()
    assert key.startswith("wb_") and len(done.stdout.splitlines()) == 1  # stdout: the key alone
    assert f"API key for ops@example.com on stack {name}" in done.stderr
    assert not (tmp_path / "no-local-data").exists()  # nothing was written locally

    # The MCP function, configured as the template configures it, knows the key and its user.
    answer = _whoami(key)
    assert answer["status"] == 200, answer
    assert json.loads(answer["result"]["content"][0]["text"])["email"] == "ops@example.com"

    listed = _cli(moto_endpoint, "keys", "list", "ops@example.com", "--stack", name, home=str(tmp_path))
    assert listed.returncode == 0, listed.stderr
    key_id = key.split("_")[1]
    assert f"wb_{key_id}_…" in listed.stdout and "active" in listed.stdout

    revoked = _cli(moto_endpoint, "keys", "revoke", key, "--stack", name, home=str(tmp_path))
    assert revoked.returncode == 0, revoked.stderr
    from workbench.runtime.lambda_handler import reset_instance

    reset_instance()
    assert _whoami(key)["status"] == 401


def test_a_stack_that_is_not_there_or_not_workbench_is_a_clear_error(
    moto_endpoint: AwsEndpoint, tmp_path: Any
) -> None:
    missing = _cli(moto_endpoint, "keys", "create", "ops@example.com", "--stack", "nope", home=str(tmp_path))
    assert missing.returncode == 1 and missing.stdout == ""
    assert missing.stderr.strip() == "workbench: no stack 'nope' in us-east-1"

    cfn = _cloudformation(moto_endpoint)
    other = f"other-{uuid.uuid4().hex[:8]}"
    queue = {"Q": {"Type": "AWS::SQS::Queue", "Properties": {}}}
    cfn.create_stack(StackName=other, TemplateBody=json.dumps({"Resources": queue}))
    wrong = _cli(moto_endpoint, "keys", "create", "ops@example.com", "--stack", other, home=str(tmp_path))
    assert wrong.returncode == 1
    assert f"stack '{other}' has no output ApiKeysTableName" in wrong.stderr
    cfn.delete_stack(StackName=other)
