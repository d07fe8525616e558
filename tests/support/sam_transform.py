"""template.yaml through SAM's own transform (samtranslator, from aws-sam-cli's venv), as CloudFormation
would expand it on deploy: the functions' roles with their policies, the aliases, the deployment
groups. Run as a script by that venv's Python (`python sam_transform.py < template.json`): the
project's own environment does not carry samtranslator. Parameters take their defaults; pass
`Name=value` arguments to set others."""

from __future__ import annotations

import json
import os
import sys
from typing import Any


class _NoManagedPolicies:
    """The template names no AWS managed policy by name, so no IAM lookup is needed (SAM adds
    AWSLambdaBasicExecutionRole by ARN)."""

    def load(self) -> dict[str, str]:
        return {}


def main() -> None:
    os.environ["AWS_DEFAULT_REGION"] = "us-east-1"  # names ARNs; no AWS call is made
    from samtranslator.translator.transform import transform

    template: dict[str, Any] = json.load(sys.stdin)
    for name, resource in template["Resources"].items():  # what `sam package` does: code in S3
        props = resource.get("Properties") or {}
        for key in ("CodeUri", "ContentUri"):
            if isinstance(props.get(key), str) and not props[key].startswith("s3://"):
                props[key] = f"s3://artifacts/{name}.zip"
    values = dict(arg.split("=", 1) for arg in sys.argv[1:])
    parameters = {
        "AWS::Region": "us-east-1",
        "AWS::AccountId": "123456789012",
        "AWS::Partition": "aws",
        "AWS::StackName": "wb",
        "AWS::URLSuffix": "amazonaws.com",
        **{k: v.get("Default") for k, v in template.get("Parameters", {}).items() if "Default" in v},
        **values,
    }
    out = transform(template, parameters, _NoManagedPolicies())
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
