from __future__ import annotations

from pathlib import Path

import pytest
from workbench.composition import Gateway
from workbench.identity.auth import Principal

from tests.support.aws import dynalite_endpoint, moto_endpoint
from tests.support.gateways import make_gateway, principal_for

# One moto server (DynamoDB + KMS) and one dynalite per test session, shared by every test package.
__all__ = ["dynalite_endpoint", "moto_endpoint"]


@pytest.fixture
def gateway(tmp_path: Path) -> Gateway:
    return make_gateway(tmp_path)


@pytest.fixture
def principal(gateway: Gateway) -> Principal:
    return principal_for(gateway)
