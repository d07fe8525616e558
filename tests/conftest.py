from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.gateways import make_gateway, principal_for
from workbench.auth import Principal
from workbench.composition import Gateway


@pytest.fixture
def gateway(tmp_path: Path) -> Gateway:
    return make_gateway(tmp_path)


@pytest.fixture
def principal(gateway: Gateway) -> Principal:
    return principal_for(gateway)
