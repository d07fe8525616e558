"""Settings for a deployed stack, from its CloudFormation outputs: what the admin commands
(`workbench keys create EMAIL --stack NAME`, ...) use to reach the stack's tables and KMS key with
nothing but AWS credentials — before SSO is set up, there is no other way in.

The outputs are the template's documented interface (template.yaml, Outputs): one `<Table>Name`
per table, `DataKeyArn`, `SecretArn` and `ApiUrl`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from workbench.aws.clients import client_error_code, make_client
from workbench.errors import ConfigError
from workbench.settings import Settings
from workbench.stores.dynamodb import TABLES

__all__ = ["stack_outputs", "stack_settings"]


def stack_outputs(stack: str, settings: Settings, *, client: Any | None = None) -> dict[str, str]:
    """The stack's outputs (OutputKey -> OutputValue); ConfigError if the stack cannot be read."""
    cfn = client or make_client("cloudformation", settings)
    try:
        found = cfn.describe_stacks(StackName=stack)["Stacks"]
    except Exception as exc:
        code = client_error_code(exc)
        if code is None:
            raise ConfigError(f"cannot reach CloudFormation in {settings.aws_region}: {exc}") from exc
        if code == "ValidationError":  # CloudFormation's answer for a stack that does not exist
            raise ConfigError(f"no stack {stack!r} in {settings.aws_region}") from exc
        raise ConfigError(f"cannot read stack {stack!r} ({code})") from exc
    if not found:
        raise ConfigError(f"no stack {stack!r} in {settings.aws_region}")
    return {o["OutputKey"]: o["OutputValue"] for o in found[0].get("Outputs") or []}


def stack_settings(stack: str, settings: Settings, *, client: Any | None = None) -> Settings:
    """`settings` pointed at the stack's DynamoDB tables, KMS key and secret."""
    outputs = stack_outputs(stack, settings, client=client)
    wanted = {store: f"{logical}Name" for store, logical in TABLES.items()}
    missing = sorted(k for k in (*wanted.values(), "DataKeyArn") if not outputs.get(k))
    if missing:
        raise ConfigError(
            f"stack {stack!r} has no output {', '.join(missing)}: is it a Workbench stack, deployed from "
            "this version's template.yaml?"
        )
    return replace(
        settings,
        store="dynamodb",
        key_backend="kms",
        kms_key_id=outputs["DataKeyArn"],
        tables={store: outputs[key] for store, key in wanted.items()},
        secret_id=outputs.get("SecretArn") or settings.secret_id,
        public_url=outputs.get("ApiUrl") or settings.public_url,
    )
