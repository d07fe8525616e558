"""IAM per action (issue 23): the functions' roles as CloudFormation gets them — template.yaml through
SAM's own transform — grant on each table only DynamoDB actions that the code calls on that table,
queries only on the indexes the code queries, and never delete or update on the audit trail.

What the code calls is read from the code itself: every DynamoDB operation of each store adapter
(workbench/stores/dynamodb.py, one class per table, and workbench/aws/signing.py for the signing
keys), found by walking their syntax trees. A new operation in an adapter needs its grant (the flows
in test_least_privilege.py fail without it); a grant whose operation the code dropped fails here."""

from __future__ import annotations

import ast
import json
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from workbench.stores.dynamodb import TABLES

from tests.support.aws import _cfn_json, dynamodb_grants, load_template
from tests.support.processes import REPO

SHARED = REPO / "shared" / "workbench"
TABLE_IDS = set(TABLES.values())
RUNTIME = (
    "McpFunction",
    "RestFunction",
    "ProxyFunction",
)  # the surfaces agents call; the web is the portal's
_OPERATIONS = {
    "get_item",
    "put_item",
    "delete_item",
    "update_item",
    "query",
    "scan",
    "batch_write_item",
    "batch_get_item",
    "transact_write_items",
    "transact_get_items",
    "describe_table",
}


# Transactions: IAM authorizes their parts (PutItem, UpdateItem, DeleteItem, ConditionCheckItem,
# GetItem), never the call itself (AWS: "Using IAM with DynamoDB transactions").
_TRANSACTIONS = {"transact_write_items", "transact_get_items"}


def _action(operation: str) -> str:
    return "".join(part.title() for part in operation.split("_"))


def _calls(tree: ast.AST) -> tuple[set[str], set[str], set[str]]:
    """(tables named via t.name("..."), DynamoDB actions called, indexes queried) below `tree`."""
    tables: set[str] = set()
    actions: set[str] = set()
    indexes: set[str] = set()
    for node in ast.walk(tree):
        if (  # params["IndexName"] = "..."
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Constant)
            and any(
                isinstance(t, ast.Subscript)
                and isinstance(t.slice, ast.Constant)
                and t.slice.value == "IndexName"
                for t in node.targets
            )
        ):
            indexes.add(str(node.value.value))
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        first = node.args[0].value if node.args and isinstance(node.args[0], ast.Constant) else None
        if node.func.attr == "name" and isinstance(first, str):
            tables.add(first)
        elif node.func.attr in _TRANSACTIONS:
            pass  # IAM has no such action: each part is authorized as its own (named as below)
        elif node.func.attr in _OPERATIONS:
            actions.add(_action(node.func.attr))
        elif node.func.attr in ("conditional", "_versioned") and isinstance(first, str):
            # t.conditional("put_item", ...); self._versioned("delete_item", ...): a write alone, or
            # a transaction's part (DynamoExternalServers: with the partition's version, a PutItem)
            actions.add(_action(first))
        for keyword in node.keywords:
            if keyword.arg == "IndexName" and isinstance(keyword.value, ast.Constant):
                indexes.add(str(keyword.value.value))
    return tables, actions, indexes


@cache
def code_actions() -> dict[str, tuple[frozenset[str], frozenset[str]]]:
    """table logical id -> (DynamoDB actions, indexes) the code's adapters call on it."""
    found: dict[str, tuple[set[str], set[str]]] = {}
    source = ast.parse((SHARED / "stores" / "dynamodb.py").read_text())
    for cls in (n for n in source.body if isinstance(n, ast.ClassDef)):
        tables, actions, indexes = _calls(cls)
        if not tables:
            # The OAuth stores share one table through _OAuthTable; DynamoTables is the helper all use.
            text = ast.unparse(cls)
            if "_OAuthTable(" in text:
                tables = {"oauth"}
            elif cls.name == "DynamoTables":
                continue
        for table in tables:  # one adapter per table, and one that batches reads across several
            into = found.setdefault(TABLES[table], (set(), set()))
            into[0].update(actions)
            into[1].update(indexes)
    _, actions, indexes = _calls(ast.parse((SHARED / "aws" / "signing.py").read_text()))
    found["SigningKeysTable"] = (actions, indexes)
    return {table: (frozenset(a), frozenset(i)) for table, (a, i) in found.items()}


def _sam_python() -> Path:
    python = REPO / ".venv-sam" / "bin" / "python"
    if not python.exists():
        pytest.skip("aws-sam-cli's venv (samtranslator) is not installed: run `make setup-test`")
    return python


def transformed(**parameters: str) -> dict[str, Any]:
    """template.yaml after SAM's transform (tests/support/sam_transform.py), with `parameters` set."""
    done = subprocess.run(
        [str(_sam_python()), str(REPO / "tests" / "support" / "sam_transform.py")]
        + [f"{k}={v}" for k, v in parameters.items()],
        input=json.dumps(_cfn_json(load_template())),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out: dict[str, Any] = json.loads(done.stdout)
    return out


@cache
def _roles() -> dict[str, list[Any]]:
    """function logical id -> every statement of its role after the transform."""
    resources = transformed()["Resources"]
    roles: dict[str, list[Any]] = {}
    for name, resource in resources.items():
        if resource["Type"] != "AWS::Lambda::Function":
            continue
        role = resource["Properties"]["Role"]["Fn::GetAtt"][0]
        props = resources[role]["Properties"]
        roles[name] = [s for p in props.get("Policies", []) for s in p["PolicyDocument"]["Statement"]]
        # Managed policies: only what SAM adds for logs and (Tracing: Active) X-Ray segments.
        assert props["ManagedPolicyArns"] == [
            "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole",
            "arn:aws:iam::aws:policy/AWSXrayWriteOnlyAccess",
        ]
    assert set(roles) == {
        "McpFunction",
        "RestFunction",
        "WebFunction",
        "ProxyFunction",
        "MigrateHookFunction",
    }
    return roles


def test_the_code_reading_finds_every_tables_adapter() -> None:
    found = code_actions()
    assert set(found) == TABLE_IDS
    assert found["AuditTable"] == ({"BatchWriteItem", "Query"}, {"by_user_integration"})
    assert found["JotsTable"][1] == {"by_share_token"}
    assert "Scan" not in set().union(*(a for a, _ in found.values()))


@pytest.mark.parametrize(
    "function", ["McpFunction", "RestFunction", "WebFunction", "ProxyFunction", "MigrateHookFunction"]
)
def test_each_role_grants_only_what_the_code_calls_on_each_table(function: str) -> None:
    statements = _roles()[function]
    for statement in statements:
        text = json.dumps(statement)
        assert '"dynamodb:*"' not in text and "table/*" not in text and "/index/*" not in text, statement
    code = code_actions()
    for table, (actions, indexes) in dynamodb_grants(statements, TABLE_IDS).items():
        used, queried = code[table]
        assert actions <= used, f"{function} is granted {sorted(actions - used)} on {table}: no code calls it"
        assert indexes <= queried, (
            f"{function} may query {sorted(indexes - queried)} of {table}: no code does"
        )


@pytest.mark.parametrize("function", RUNTIME)
def test_the_runtime_functions_only_append_to_the_audit_trail(function: str) -> None:
    grants = dynamodb_grants(_roles()[function], TABLE_IDS)
    assert grants["AuditTable"] == ({"BatchWriteItem"}, set())  # no delete, no update, no overwrite


def test_only_the_portal_reads_the_audit_trail_and_never_changes_it() -> None:
    grants = dynamodb_grants(_roles()["WebFunction"], TABLE_IDS)
    assert grants["AuditTable"] == ({"Query"}, {"by_user_integration"})


def test_the_migration_hook_only_records_the_schema_version() -> None:
    statements = _roles()["MigrateHookFunction"]
    assert dynamodb_grants(statements, TABLE_IDS) == {"UsersTable": ({"GetItem", "PutItem"}, set())}
    (schema,) = [s for s in statements if s.get("Sid") == "SchemaVersion"]
    assert schema["Condition"] == {"ForAllValues:StringEquals": {"dynamodb:LeadingKeys": ["meta#schema"]}}
    actions = {
        a for s in statements for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
    }
    assert actions == {
        "dynamodb:GetItem",
        "dynamodb:PutItem",
        "codedeploy:PutLifecycleEventHookExecutionStatus",
    }


def test_a_secret_under_a_customer_managed_key_can_be_decrypted_through_secrets_manager() -> None:
    key = "arn:aws:kms:us-east-1:123456789012:key/11111111-2222-3333-4444-555555555555"
    for name, statements in _roles().items():
        if name == "MigrateHookFunction":
            continue  # reads no secret
        (conditional,) = [s["Fn::If"] for s in statements if "Fn::If" in s]
        condition, grant, otherwise = conditional
        assert condition == "HasSecretKey" and otherwise == {"Ref": "AWS::NoValue"}
        assert grant["Action"] == "kms:Decrypt" and grant["Resource"] == {"Ref": "ExistingSecretKmsKeyArn"}
        assert "kms:ViaService" in grant["Condition"]["StringEquals"]
    conditions = transformed(ExistingSecretKmsKeyArn=key)["Conditions"]
    assert conditions["HasSecretKey"] == {
        "Fn::Not": [{"Fn::Equals": [{"Ref": "ExistingSecretKmsKeyArn"}, ""]}]
    }
