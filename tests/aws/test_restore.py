"""The restore drill of docs/deploy.md ("Restore and upgrade") on moto's CloudFormation (issue 23):
template.yaml's stateful part is deployed as a stack, the audit table is restored to a point in time
under a new name, and a stack update with AdoptAuditTable makes the stack use it. The stack's outputs
(what the functions' environment and the admin commands read) then name the restored table, the
gateway reads the restored rows from it, the other tables stay, and the table the stack created is
retained with everything it held."""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from workbench.aws.stack import stack_settings
from workbench.composition import build_gateway
from workbench.stores.dynamodb import TABLES

from tests.support.aws import AwsEndpoint, stateful_template

pytestmark = pytest.mark.e2e


def _cloudformation(moto_endpoint: AwsEndpoint) -> Any:
    import boto3
    from botocore.config import Config

    config = Config(read_timeout=120, retries={"total_max_attempts": 1}, region_name="us-east-1")
    return boto3.client("cloudformation", endpoint_url=moto_endpoint.url, config=config)


def _status(cfn: Any, name: str) -> str:
    for _ in range(120):
        status = str(cfn.describe_stacks(StackName=name)["Stacks"][0]["StackStatus"])
        if not status.endswith("IN_PROGRESS"):
            return status
        time.sleep(0.25)
    return status


@pytest.fixture
def stack(moto_endpoint: AwsEndpoint) -> Iterator[tuple[Any, str]]:
    cfn = _cloudformation(moto_endpoint)
    name = f"wb-restore-{uuid.uuid4().hex[:8]}"
    cfn.create_stack(StackName=name, TemplateBody=json.dumps(stateful_template()))  # tables protected
    assert _status(cfn, name) == "CREATE_COMPLETE"
    created = [
        r["PhysicalResourceId"]
        for r in cfn.describe_stack_resources(StackName=name)["StackResources"]
        if r["ResourceType"] == "AWS::DynamoDB::Table"
    ]
    yield cfn, name
    # Clean up: every table the stack made (retained ones included) and the restored one.
    ddb = moto_endpoint.client("dynamodb")
    tables = [*created, f"{name}-audit-restored"]
    for table in tables:
        with contextlib.suppress(Exception):
            ddb.update_table(TableName=table, DeletionProtectionEnabled=False)
    cfn.delete_stack(StackName=name)
    for table in tables:
        with contextlib.suppress(Exception):
            ddb.delete_table(TableName=table)


def _row(user: str, label: str) -> dict[str, Any]:
    return {
        "action": "EXECUTE",
        "user": user,
        "integration": "demo",
        "tool": label,
        "success": True,
        "ts": time.time(),
    }


def test_a_point_in_time_restored_audit_table_is_adopted_by_a_stack_update(
    moto_endpoint: AwsEndpoint, stack: tuple[Any, str]
) -> None:
    cfn, name = stack
    before = stack_settings(name, moto_endpoint.settings(), client=cfn)
    gw = build_gateway(before)
    user = gw.stores.users.get_or_create("ada@example.com")
    gw.stores.audit.append(_row(user.id, "before_the_incident"))

    ddb = moto_endpoint.client("dynamodb")
    source = before.table_name("audit")
    assert ddb.describe_table(TableName=source)["Table"]["DeletionProtectionEnabled"] is True
    # The template enables PITR on the table (test_template.py); moto's CloudFormation does not apply
    # PointInTimeRecoverySpecification, so it is switched on here as AWS would have it.
    ddb.update_continuous_backups(
        TableName=source, PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True}
    )
    restored = f"{name}-audit-restored"
    ddb.restore_table_to_point_in_time(
        SourceTableName=source, TargetTableName=restored, UseLatestRestorableTime=True
    )
    gw.stores.audit.append(_row(user.id, "the_incident"))  # after the restore point: not restored

    template = json.dumps(stateful_template())
    cfn.update_stack(
        StackName=name,
        TemplateBody=template,
        Parameters=[{"ParameterKey": "AdoptAuditTable", "ParameterValue": restored}],
    )
    assert _status(cfn, name) == "UPDATE_COMPLETE"

    after = stack_settings(name, moto_endpoint.settings(), client=cfn)
    assert after.table_name("audit") == restored
    for store in TABLES:  # every other table is the one the stack created
        if store != "audit":
            assert after.table_name(store) == before.table_name(store)
    adopted = build_gateway(after)
    assert [e["tool"] for e in adopted.stores.audit.list_for(user.id)] == ["before_the_incident"]
    assert adopted.stores.users.get(user.id) is not None  # the same users table
    # The table the stack created is retained, with everything it held.
    assert ddb.describe_table(TableName=source)["Table"]["TableStatus"] == "ACTIVE"
    assert sorted(e["tool"] for e in gw.stores.audit.list_for(user.id)) == [
        "before_the_incident",
        "the_incident",
    ]
