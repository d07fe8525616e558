"""template.yaml invariants, and `sam validate --lint` / `sam build` (aws-sam-cli from its own venv)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from workbench.stores.dynamodb import TABLES

from tests.support.aws import AwsEndpoint, dynamodb_grants, load_template, table_name_of
from tests.support.processes import REPO

T = load_template()
RESOURCES: dict[str, Any] = T["Resources"]
# The four surfaces (the deploy's migration hook, MigrateHookFunction, has no routes: its own test).
FUNCTIONS = {
    k: v
    for k, v in RESOURCES.items()
    if v["Type"] == "AWS::Serverless::Function" and k != "MigrateHookFunction"
}
TABLE_IDS = {k for k, v in RESOURCES.items() if v["Type"] == "AWS::DynamoDB::Table"}

# Which tables each function may touch at all (least privilege), and which only read.
ALLOWED = {
    "McpFunction": {
        "UsersTable",
        "ApiKeysTable",
        "ConnectionsTable",
        "PendingTable",
        "AuditTable",
        "VaultTable",
        "JotsTable",
        "SigningKeysTable",
        "ExternalServersTable",
        "OAuthTable",  # read only: whether a portal session was signed out
        "ApprovalsTable",
    },
    "RestFunction": {
        "UsersTable",
        "ApiKeysTable",
        "ConnectionsTable",
        "AuditTable",
        "VaultTable",
        "JotsTable",
        "SigningKeysTable",
        "ExternalServersTable",
        "ApprovalsTable",
    },
    "WebFunction": TABLE_IDS,
    "ProxyFunction": {
        "UsersTable",
        "ApiKeysTable",
        "OAuthTable",
        "ConnectionsTable",
        "AuditTable",
        "SigningKeysTable",
    },
}
READ_ONLY = {
    ("McpFunction", "UsersTable"),
    ("McpFunction", "ApiKeysTable"),
    ("McpFunction", "OAuthTable"),
    ("RestFunction", "UsersTable"),
    ("RestFunction", "ApiKeysTable"),
    ("ProxyFunction", "UsersTable"),
    # A curl_session token lives no longer than the API key or OAuth grant that minted it.
    ("ProxyFunction", "ApiKeysTable"),
    ("ProxyFunction", "OAuthTable"),
}
USER_DATA = {
    "UsersTable",
    "ApiKeysTable",
    "ConnectionsTable",
    "AuditTable",
    "VaultTable",
    "JotsTable",
    "ExternalServersTable",
    "OAuthTable",
    "SigningKeysTable",
}


def _statements(fn: dict[str, Any]) -> list[Any]:
    """The function's policy statements: written out, never SAM's policy templates (which grant
    Scan, BatchGetItem, DescribeTable, ... that no code path uses)."""
    out: list[Any] = []
    for policy in fn["Properties"].get("Policies", []):
        assert set(policy) == {"Statement"}, f"unexpected policy {set(policy)}"
        out += policy["Statement"]
    return out


def _policy_tables(fn: dict[str, Any]) -> dict[str, str]:
    """table logical id -> "read" | "crud" from the function's DynamoDB statements."""
    grants = dynamodb_grants(_statements(fn), TABLE_IDS)
    reads = {"GetItem", "BatchGetItem", "Query"}
    return {t: "read" if actions <= reads else "crud" for t, (actions, _) in grants.items()}


def test_every_store_table_is_declared_and_passed_to_the_functions() -> None:
    assert set(TABLES.values()) == TABLE_IDS
    env = T["Globals"]["Function"]["Environment"]["Variables"]
    for store, logical in TABLES.items():
        assert env[f"WORKBENCH_TABLE_{store.upper()}"] == table_name_of(logical)
        outputs = [o["Value"] for o in T["Outputs"].values()]
        assert table_name_of(logical) in outputs, f"{logical} not an output"
    assert "ApiUrl" in T["Outputs"]


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_function_has_layer_log_retention_timeout_and_only_its_tables(name: str) -> None:
    fn = FUNCTIONS[name]
    props = fn["Properties"]
    layers = props.get("Layers", T["Globals"]["Function"]["Layers"])
    assert {"Ref": "EngineLayer"} in layers
    log_group = RESOURCES[props["LoggingConfig"]["LogGroup"]["Ref"]]
    assert log_group["Type"] == "AWS::Logs::LogGroup"
    assert log_group["Properties"]["RetentionInDays"] == {"Ref": "LogRetentionDays"}
    assert T["Globals"]["Function"]["Timeout"] < 30  # API Gateway's integration limit
    assert props["Handler"] == "app.handler"
    assert (REPO / props["CodeUri"] / "app.py").exists()
    tables = _policy_tables(fn)
    assert set(tables) <= ALLOWED[name], f"{name} may not touch {set(tables) - ALLOWED[name]}"
    for table, access in tables.items():
        if (name, table) in READ_ONLY:
            assert access == "read", f"{name} should only read {table}"


def test_only_the_web_function_writes_oauth_and_the_proxy_is_narrow() -> None:
    for name, fn in FUNCTIONS.items():
        tables = _policy_tables(fn)
        # The proxy reads grants (its tokens stop when the grant is revoked), MCP reads signed-out
        # portal sessions; only the web writes.
        assert ("OAuthTable" in tables) == (name in ("WebFunction", "ProxyFunction", "McpFunction"))
        assert tables.get("OAuthTable", "read") == "read" or name == "WebFunction"
    proxy = _policy_tables(FUNCTIONS["ProxyFunction"])
    assert not {"PendingTable", "VaultTable", "JotsTable"} & set(proxy)
    assert proxy["ApiKeysTable"] == proxy["OAuthTable"] == "read"


def test_kms_is_symmetric_rotating_and_only_encrypt_decrypt_is_granted() -> None:
    key = RESOURCES["DataKey"]["Properties"]
    assert key["KeySpec"] == "SYMMETRIC_DEFAULT" and key["EnableKeyRotation"] is True
    for fn in FUNCTIONS.values():
        statements = _statements(fn)
        kms = [s for s in statements if "Action" in s and any(a.startswith("kms:") for a in s["Action"])]
        assert len(kms) == 1
        assert sorted(kms[0]["Action"]) == ["kms:Decrypt", "kms:GenerateDataKey"]
        assert kms[0]["Resource"] == {"Fn::GetAtt": "DataKey.Arn"}
        # A secret under a customer-managed key: Decrypt on that key, through Secrets Manager only.
        (conditional,) = [s["Fn::If"] for s in statements if "Fn::If" in s]
        assert conditional[0] == "HasSecretKey" and conditional[2] == {"Ref": "AWS::NoValue"}
        assert conditional[1]["Action"] == "kms:Decrypt"
        assert conditional[1]["Resource"] == {"Ref": "ExistingSecretKmsKeyArn"}
        assert conditional[1]["Condition"] == {
            "StringEquals": {"kms:ViaService": {"Fn::Sub": "secretsmanager.${AWS::Region}.${AWS::URLSuffix}"}}
        }


def test_user_data_tables_have_pitr_and_expiring_tables_have_ttl_on_the_adapters_attribute() -> None:
    for logical in TABLE_IDS:
        props = RESOURCES[logical]["Properties"]
        pitr = props.get("PointInTimeRecoverySpecification", {}).get("PointInTimeRecoveryEnabled")
        assert bool(pitr) == (logical in USER_DATA), logical
        if logical in USER_DATA:
            # Kept on delete and replacement, but not when the first create fails (no orphans).
            assert RESOURCES[logical]["DeletionPolicy"] == "RetainExceptOnCreate"
            assert RESOURCES[logical]["UpdateReplacePolicy"] == "Retain"
    for logical in ("PendingTable", "AuditTable", "OAuthTable", "ApprovalsTable"):
        spec = RESOURCES[logical]["Properties"]["TimeToLiveSpecification"]
        assert spec == {"AttributeName": "ttl", "Enabled": True}


def _walk(value: Any) -> Iterator[Any]:
    yield value
    if isinstance(value, dict):
        for inner in value.values():
            yield from _walk(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _walk(inner)


def test_no_dynamic_reference_could_fail_a_deploy_and_no_secret_is_in_the_environment() -> None:
    text = (REPO / "template.yaml").read_text()
    assert "{{resolve:" not in text  # no ssm/secretsmanager dynamic reference anywhere
    assert not [v for v in _walk(T) if isinstance(v, str) and "{{resolve:" in v]
    env = dict(T["Globals"]["Function"]["Environment"]["Variables"])
    for fn in FUNCTIONS.values():
        env.update(fn["Properties"].get("Environment", {}).get("Variables", {}))
    secretish = {k for k in env if "SECRET" in k or k.endswith(("_CLIENT_ID", "_KEY", "_TOKEN", "_PASSWORD"))}
    # The secret's id and cache lifetime, the SSO client id (not a secret): nothing else.
    assert secretish == {"WORKBENCH_SECRET_ID", "WORKBENCH_SECRET_CACHE_SECONDS", "WORKBENCH_OIDC_CLIENT_ID"}
    assert env["WORKBENCH_SECRET_ID"] == {
        "Fn::If": ["HasExistingSecret", {"Ref": "ExistingSecretArn"}, {"Ref": "AppSecret"}]
    }
    for name in T["Parameters"]:
        # Names of secrets and their key, never a secret value.
        assert "secret" not in name.lower() or name in (
            "ExistingSecretArn",
            "ExistingSecretKmsKeyArn",
            "SecretCacheSeconds",
        ), name


def test_the_stack_creates_its_secret_with_a_generated_session_secret_unless_given_one() -> None:
    secret = RESOURCES["AppSecret"]
    assert secret["Condition"] == "CreateSecret"
    assert T["Conditions"]["CreateSecret"] == {"Fn::Equals": [{"Ref": "ExistingSecretArn"}, ""]}
    generated = secret["Properties"]["GenerateSecretString"]
    assert generated["GenerateStringKey"] == "session_secret" and generated["PasswordLength"] >= 32
    assert json.loads(generated["SecretStringTemplate"]) == {}
    assert secret["Properties"]["Name"] == {"Fn::Sub": "workbench/${AWS::StackName}"}
    assert T["Outputs"]["SecretArn"]["Value"] == env_secret_id()


def env_secret_id() -> Any:
    return T["Globals"]["Function"]["Environment"]["Variables"]["WORKBENCH_SECRET_ID"]


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_each_function_may_read_the_one_secret_and_nothing_else_of_secrets_manager(name: str) -> None:
    statements = [s for p in FUNCTIONS[name]["Properties"]["Policies"] for s in p.get("Statement", [])]
    secrets = [s for s in statements if str(s.get("Action")).startswith("secretsmanager:")]
    assert secrets == [
        {
            "Sid": "RunTimeSecrets",
            "Effect": "Allow",
            "Action": "secretsmanager:GetSecretValue",
            "Resource": env_secret_id(),
        }
    ]


def _routes(fn: dict[str, Any]) -> set[tuple[str, str]]:
    return {
        (e["Properties"]["Path"], e["Properties"]["Method"])
        for e in fn["Properties"]["Events"].values()
        if e["Type"] == "HttpApi"
    }


def test_routes_per_surface() -> None:
    assert _routes(FUNCTIONS["McpFunction"]) == {("/mcp", "ANY")}
    assert _routes(FUNCTIONS["RestFunction"]) == {("/rest/{integration}", "ANY")}
    assert _routes(FUNCTIONS["ProxyFunction"]) == {
        ("/c/{integration}", "ANY"),
        ("/c/{integration}/{proxy+}", "ANY"),
    }
    web = {path for path, _ in _routes(FUNCTIONS["WebFunction"])}
    assert {
        "/.well-known/{proxy+}",
        "/oauth/{proxy+}",
        "/authorize",
        "/token",
        "/register",
        "/revoke",
        "/api/auth/plugin/{integration}/callback",
        "/api/auth/apps/callback",
        "/api/connect/redeem",
        "/connect/{id}",
        "/",
        "/portal",
        "/portal/{proxy+}",
        "/jots/{proxy+}",
        "/api/auth/oidc/{proxy+}",
    } == web
    for fn in FUNCTIONS.values():
        for event in fn["Properties"]["Events"].values():
            assert event["Properties"]["ApiId"] == {"Ref": "HttpApi"}


def test_nightly_schedule_invokes_rest_with_a_schedule_event_and_failures_end_in_an_alarmed_queue() -> None:
    schedule = RESOURCES["NightlyExportSchedule"]
    assert schedule["Condition"] == "HasScheduleUser"
    target = schedule["Properties"]["Target"]
    assert target["Arn"] == {"Ref": "RestFunction.Alias"}  # the published version (SnapStart, retries)
    payload = json.loads(target["Input"]["Fn::Sub"].replace("${ScheduleUser}", "svc@example.com"))
    assert payload["source"] == "workbench.schedule"
    assert payload["user"] == "svc@example.com"
    assert payload["integration"] == "superset"
    assert payload["executions"][0]["tool"] == "superset_export_csv"
    role = RESOURCES["NightlyExportRole"]["Properties"]["Policies"][0]["PolicyDocument"]["Statement"]
    assert role == [
        {"Effect": "Allow", "Action": "lambda:InvokeFunction", "Resource": {"Ref": "RestFunction.Alias"}},
        {
            "Effect": "Allow",
            "Action": "sqs:SendMessage",
            "Resource": {"Fn::GetAtt": "ScheduleDeadLetterQueue.Arn"},
        },
    ]
    # Delivery failures: Scheduler retries, then the DLQ. A job that runs and fails raises (see
    # tests/aws/test_handlers.py): Lambda's async retries, then the same DLQ.
    assert target["RetryPolicy"]["MaximumRetryAttempts"] >= 1
    assert target["DeadLetterConfig"] == {"Arn": {"Fn::GetAtt": "ScheduleDeadLetterQueue.Arn"}}
    invoke = FUNCTIONS["RestFunction"]["Properties"]["EventInvokeConfig"]
    assert invoke["MaximumRetryAttempts"] == 2
    assert invoke["DestinationConfig"]["OnFailure"] == {
        "Type": "SQS",
        "Destination": {"Fn::GetAtt": "ScheduleDeadLetterQueue.Arn"},
    }
    alarm = RESOURCES["ScheduleDeadLetterAlarm"]["Properties"]
    assert alarm["Namespace"] == "AWS/SQS" and alarm["MetricName"] == "ApproximateNumberOfMessagesVisible"
    assert alarm["Dimensions"] == [
        {"Name": "QueueName", "Value": {"Fn::GetAtt": "ScheduleDeadLetterQueue.QueueName"}}
    ]
    assert alarm["ComparisonOperator"] == "GreaterThanThreshold" and alarm["Threshold"] == 0


def test_stateful_names_include_the_stack_and_a_failed_first_create_leaves_no_orphans() -> None:
    assert RESOURCES["DataKeyAlias"]["Properties"]["AliasName"] == {
        "Fn::Sub": "alias/workbench-${AWS::StackName}"
    }
    for logical in ("DataKey", "AppSecret", *TABLE_IDS):
        assert RESOURCES[logical]["DeletionPolicy"] == "RetainExceptOnCreate", logical
        assert RESOURCES[logical]["UpdateReplacePolicy"] == "Retain", logical
    for logical in TABLE_IDS:
        # No fixed TableName: CloudFormation names each table <stack>-<logical id>-<suffix>.
        assert "TableName" not in RESOURCES[logical]["Properties"], logical
    for logical, res in RESOURCES.items():
        if res["Type"] == "AWS::Logs::LogGroup":
            assert "${AWS::StackName}" in res["Properties"]["LogGroupName"]["Fn::Sub"], logical


def test_http_api_throttles_every_route_and_writes_json_access_logs() -> None:
    api = RESOURCES["HttpApi"]["Properties"]
    assert api["DefaultRouteSettings"] == {
        "ThrottlingRateLimit": {"Ref": "ThrottlingRateLimit"},
        "ThrottlingBurstLimit": {"Ref": "ThrottlingBurstLimit"},
    }
    for name in ("ThrottlingRateLimit", "ThrottlingBurstLimit"):
        assert T["Parameters"][name]["Type"] == "Number" and T["Parameters"][name]["Default"] > 0
    logs = api["AccessLogSettings"]
    assert logs["DestinationArn"] == {"Fn::GetAtt": "ApiAccessLogGroup.Arn"}
    # Every $context variable in a string value: the line parses as JSON whatever the values are.
    sample = json.loads(logs["Format"].replace("\n", ""))
    assert {"requestId", "routeKey", "status", "integrationError", "responseLatency"} <= set(sample)
    assert all(isinstance(v, str) and v.startswith("$context.") for v in sample.values())


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_reserved_concurrency_is_an_optional_parameter_per_function(name: str) -> None:
    stem = name.removesuffix("Function")
    param = T["Parameters"][f"{stem}ReservedConcurrency"]
    assert param["Default"] == -1 and param["MinValue"] == -1
    assert FUNCTIONS[name]["Properties"]["ReservedConcurrentExecutions"] == {
        "Fn::If": [f"Reserve{stem}", {"Ref": f"{stem}ReservedConcurrency"}, {"Ref": "AWS::NoValue"}]
    }
    assert T["Conditions"][f"Reserve{stem}"] == {
        "Fn::Not": [{"Fn::Equals": [{"Ref": f"{stem}ReservedConcurrency"}, "-1"]}]
    }


def test_custom_domain_makes_the_redirect_uris_known_before_deploy() -> None:
    domain = RESOURCES["ApiDomain"]
    assert domain["Condition"] == "HasDomain"
    config = domain["Properties"]["DomainNameConfigurations"][0]
    assert config["CertificateArn"] == {"Ref": "CertificateArn"} and config["EndpointType"] == "REGIONAL"
    mapping = RESOURCES["ApiDomainMapping"]["Properties"]
    assert mapping["ApiId"] == {"Ref": "HttpApi"} and mapping["DomainName"] == {"Ref": "ApiDomain"}
    env = T["Globals"]["Function"]["Environment"]["Variables"]
    assert env["WORKBENCH_PUBLIC_URL"] == {
        "Fn::If": ["HasDomain", {"Fn::Sub": "https://${DomainName}"}, {"Ref": "AWS::NoValue"}]
    }
    rule = T["Rules"]["DomainNeedsCertificate"]
    assert rule["Assertions"][0]["Assert"] == {"Fn::Not": [{"Fn::Equals": [{"Ref": "CertificateArn"}, ""]}]}
    outputs = T["Outputs"]
    with_domain, without = outputs["SsoRedirectUri"]["Value"]["Fn::If"][1:]
    assert with_domain == {"Fn::Sub": "https://${DomainName}/api/auth/oidc/callback"}
    assert without == {
        "Fn::Sub": "https://${HttpApi}.execute-api.${AWS::Region}.${AWS::URLSuffix}/api/auth/oidc/callback"
    }
    with_domain, without = outputs["PluginCallbackUriPattern"]["Value"]["Fn::If"][1:]
    assert with_domain == {"Fn::Sub": "https://${DomainName}/api/auth/plugin/<integration>/callback"}
    assert without["Fn::Sub"].endswith("/api/auth/plugin/<integration>/callback")
    assert outputs["CustomDomainTarget"]["Value"] == {"Fn::GetAtt": "ApiDomain.RegionalDomainName"}


def test_the_redirect_uris_in_the_outputs_are_the_ones_the_gateway_uses() -> None:
    """The outputs' paths and the code's must agree, or SSO and plugin sign-in fail at the provider."""
    from dataclasses import replace

    from workbench.connections.provider_oauth import ProviderOAuth
    from workbench.settings import Settings

    settings = replace(Settings(), public_url="https://wb.example.com")
    assert ProviderOAuth(settings).redirect_uri("google-gmail") == (
        T["Outputs"]["PluginCallbackUriPattern"]["Value"]["Fn::If"][1]["Fn::Sub"]
        .replace("${DomainName}", "wb.example.com")
        .replace("<integration>", "google-gmail")
    )
    assert "/api/auth/oidc/callback" in (REPO / "shared/workbench/web/signin.py").read_text()


def test_snapstart_is_an_option_on_published_versions() -> None:
    fn = T["Globals"]["Function"]
    assert T["Parameters"]["SnapStart"]["Default"] == "Disabled"
    assert fn["SnapStart"] == {"ApplyOn": {"Fn::If": ["UseSnapStart", "PublishedVersions", "None"]}}
    assert fn["AutoPublishAlias"] == "live"  # SnapStart only applies to published versions


# -- the real CLI ---------------------------------------------------------------------------------------


def _sam() -> str:
    found = REPO / ".venv-sam" / "bin" / "sam"
    if found.exists():
        return str(found)
    if shutil.which("sam"):
        return str(shutil.which("sam"))
    message = "aws-sam-cli is not installed: run `make setup-test` (infra/install-test-deps.sh)"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def _sam_env() -> dict[str, str]:
    """sam build needs python3.12 (the functions' runtime) on PATH: if none runs, put a pyenv-installed
    3.12's bin directory first (a pyenv shim only answers when that version is selected)."""
    env = {**os.environ, "SAM_CLI_TELEMETRY": "0", "AWS_DEFAULT_REGION": "us-east-1"}
    found = shutil.which("python3.12", path=env.get("PATH"))
    works = (
        found is not None
        and subprocess.run([found, "--version"], capture_output=True, env=env).returncode == 0
    )
    if not works:
        root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
        candidates = sorted(root.glob("versions/3.12*/bin/python3.12"))
        if candidates:
            env["PATH"] = f"{candidates[-1].parent}{os.pathsep}{env.get('PATH', '')}"
    return env


@pytest.mark.e2e
def test_sam_validate_lint() -> None:
    done = subprocess.run(
        [_sam(), "validate", "--lint", "--template-file", str(REPO / "template.yaml")],
        cwd=REPO,
        env=_sam_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "is a valid SAM Template" in done.stdout + done.stderr


@pytest.mark.e2e
def test_sam_build_makes_a_layer_with_engine_plugins_and_arm64_wheels(tmp_path: Path) -> None:
    build = tmp_path / "build"
    done = subprocess.run(
        [_sam(), "build", "--template-file", str(REPO / "template.yaml"), "--build-dir", str(build)],
        cwd=REPO,
        env=_sam_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    site = build / "EngineLayer" / "python"
    # `import workbench` / `import workbench_plugins` resolve from /opt/python in Lambda.
    assert (site / "workbench" / "runtime" / "lambda_handler.py").exists()
    assert (site / "workbench" / "stores" / "dynamodb.py").exists()
    assert (site / "workbench_plugins" / "__init__.py").exists()
    # The catalog's search index ships prebuilt (workbench/engine/catalog_index.py) and fits this catalog.
    from workbench.composition import build_registry
    from workbench.engine import catalog_index

    assert (
        catalog_index.load(build_registry(), site / "workbench" / "engine" / "catalog_index.bin") is not None
    )
    for package in (
        "starlette",
        "pydantic",
        "jwt",
        "httpx",
        "python_multipart",  # the portal's forms
        "yaml",  # OpenAPI documents in YAML
        "sniffio",  # httpcore looks it up on every new connection; missing, each lookup is a failed import
    ):
        assert (site / package).is_dir(), f"{package} missing from the layer"
    native = [p.name for p in site.rglob("*.so")]
    assert any(n.startswith("_pydantic_core.cpython-312-aarch64") for n in native), native
    assert all("x86_64" not in n for n in native), "wheels for the wrong architecture"
    _assert_compiled_for_the_runtime(site, _python312(_sam_env()))
    # Local-only packages stay out: httpx imports click whenever it can (a cold-start cost).
    assert not (site / "uvicorn").exists() and not (site / "click").exists()
    assert not (site / "httptools").exists() and not (site / "uvloop").exists()
    # The AWS SDK is the runtime's (workbench.aws.client speaks to DynamoDB/KMS/Secrets Manager/SQS).
    for sdk in ("boto3", "botocore", "s3transfer", "jmespath", "dateutil", "urllib3", "six.py"):
        assert not (site / sdk).exists(), f"{sdk} is in the layer"
    assert _size(site) <= 45 * 1024 * 1024, f"the layer unzips to {_size(site) / 2**20:.1f} MiB"
    assert not (site / "mangum").exists()  # events are adapted by workbench.aws.apigw
    assert not (site / "aws_lambda_powertools").exists()  # logs, metrics, traces: lambda_runtime/tracing
    # Traces go straight to the X-Ray daemon (workbench.observability.tracing): the X-Ray SDK is not shipped.
    assert not (site / "aws_xray_sdk").exists()
    for surface in ("Mcp", "Rest", "Web", "Proxy"):
        entry = build / f"{surface}Function" / "app.py"
        assert entry.exists()
        assert "boto3" not in entry.read_text()  # thin entries: no AWS SDK, no business rules
    built = load_template(build / "template.yaml")
    assert built["Resources"]["EngineLayer"]["Properties"]["ContentUri"] == "EngineLayer"


def _size(root: Path) -> int:
    """Bytes of every file below `root`: the layer's unzipped size, which Lambda caps at 250 MB with the
    functions' code (and which every cold start maps in)."""
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def _assert_compiled_for_the_runtime(site: Path, python: str) -> None:
    """Every module in the layer has its .pyc for CPython 3.12 (the runtime's), hash-based and
    unchecked (valid whatever mtimes the layer's zip gives the sources), and no other bytecode."""
    magic = subprocess.run(
        [python, "-c", "import importlib.util, sys; sys.stdout.write(importlib.util.MAGIC_NUMBER.hex())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    sources = [p for p in site.rglob("*.py") if "__pycache__" not in p.parts]
    assert len(sources) > 500
    missing = [p for p in sources if not (p.parent / "__pycache__" / f"{p.stem}.cpython-312.pyc").exists()]
    assert not missing, missing[:10]
    stray = [p for p in site.rglob("*.pyc") if ".cpython-312." not in p.name]
    assert not stray, stray[:10]
    for module in (
        "workbench/runtime/lambda_handler.py",
        "workbench_plugins/__init__.py",
        "pydantic/main.py",
    ):
        pyc = site / module.rsplit("/", 1)[0] / "__pycache__" / (Path(module).stem + ".cpython-312.pyc")
        header = pyc.read_bytes()[:8]
        assert header[:4].hex() == magic, module  # Python 3.12's bytecode
        assert int.from_bytes(header[4:8], "little") == 0b01, module  # hash-based, source never checked


def _python312(env: dict[str, str]) -> str:
    found = shutil.which("python3.12", path=env.get("PATH"))
    if found is None:
        message = "python3.12 (the Lambda runtime's version) is not installed"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return found


LAYER_SMOKE = """
import importlib.util, json, sys
assert sys.version_info[:2] == (3, 12), sys.version
import workbench, workbench_plugins
from workbench.composition import build_registry
names = sorted(m.name for m in build_registry().manifests())
spec = importlib.util.spec_from_file_location("app", "functions/mcp/app.py")
app = importlib.util.module_from_spec(spec); spec.loader.exec_module(app)
answers = [app.handler(event, None) for event in json.loads(sys.argv[1])]
print(json.dumps({"answers": answers, "plugins": names, "workbench": workbench.__file__}))
"""


@pytest.mark.e2e
def test_layer_contents_run_the_mcp_handler_on_python_312(tmp_path: Path, moto_endpoint: AwsEndpoint) -> None:
    """The layer recipe, built for this machine's architecture, on Python 3.12 with the layer on the
    path the way Lambda puts /opt/python there (PYTHONPATH here): the handler answers real events,
    with the layer's boto3 talking to DynamoDB and KMS (moto)."""
    from workbench.composition import build_gateway

    from tests.support.apigw import http_api_event

    env = _sam_env()
    python = _python312(env)
    built = subprocess.run(
        [
            "make",
            "-s",
            "-f",
            "infra/layer/Makefile",
            "build-EngineLayer",
            f"ARTIFACTS_DIR={tmp_path / 'layer'}",
            f"PLATFORM={os.uname().machine}-manylinux_2_28",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    layer = tmp_path / "layer" / "python"
    _assert_compiled_for_the_runtime(layer, python)
    later = time.time() + 3600  # the zip and /opt give the sources other mtimes: the .pyc still serve
    for source in layer.rglob("*.py"):
        os.utime(source, (later, later))
    settings = moto_endpoint.fresh_tables()
    gw = build_gateway(settings)
    key = gw.auth.mint_key(gw.stores.users.get_or_create("ada@example.com"))
    run_env = {
        "PATH": env["PATH"],
        "HOME": str(tmp_path),
        "PYTHONPATH": str(tmp_path / "layer" / "python"),
        **moto_endpoint.env(settings),
        "WORKBENCH_PUBLIC_URL": "https://gw.example.test",
        "POWERTOOLS_TRACE_DISABLED": "1",
    }

    def rpc(method: str, params: dict[str, Any], token: str | None) -> dict[str, Any]:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        headers = {"authorization": f"Bearer {token}"} if token else {}
        return http_api_event("POST", "/mcp", route_key="ANY /mcp", headers=headers, body=body)

    jot = {
        "executions": [
            {"tool": "create_jot", "args": {"title": "from 3.12", "body": "via the layer"}},
            # A string where an int is declared goes through the pydantic model (workbench.arguments):
            # the layer's pydantic is imported, so its .pyc can be checked below.
            {"tool": "list_jots", "args": {"limit": "5"}},
        ]
    }
    events = [rpc("ping", {}, None), rpc("tools/call", {"name": "execute_tools", "arguments": jot}, key)]
    done = subprocess.run(
        [python, "-v", "-c", LAYER_SMOKE, json.dumps(events)],  # -v: where each module's code came from
        cwd=REPO,
        env={**run_env, "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["workbench"].startswith(str(layer))  # from the layer, not the repo
    # Nothing from the layer was compiled at import: every module's code came from its .pyc.
    from_layer = [line for line in done.stderr.splitlines() if line.startswith(f"# code object from {layer}")]
    compiled = [line for line in from_layer if not line.endswith(".pyc") and not line.endswith(".pyc'")]
    assert not compiled, compiled[:10]
    from_pyc = [line for line in done.stderr.splitlines() if line.startswith(f"# code object from '{layer}")]
    # Not vacuous: the handler's own modules and its dependencies came from the layer's .pyc.
    for module in (
        "workbench/__pycache__/composition.",
        "workbench/aws/__pycache__/client.",
        "pydantic/__pycache__/main.",
    ):
        assert any(module in line for line in from_pyc), module
    assert {"github", "superset", "slack"} <= set(out["plugins"])
    unauthorized, called = out["answers"]
    assert unauthorized["statusCode"] == 401
    assert unauthorized["headers"]["www-authenticate"].startswith(
        'Bearer resource_metadata="https://gw.example.test/'
    )
    assert called["statusCode"] == 200, called
    result = json.loads(json.loads(called["body"])["result"]["content"][0]["text"])
    assert "error" not in result["results"][0], result
    assert [j["title"] for j in result["results"][1]["result"]["jots"]] == ["from 3.12"]
    user = gw.stores.users.by_email("ada@example.com")
    assert user is not None and [j.title for j in gw.stores.jots.list_for(user.id)] == ["from 3.12"]
