"""The refresh lease on the production store: DynamoDB over HTTP (moto server, dynalite), two
independent store clients standing in for two Lambda instances."""

from __future__ import annotations

from typing import Any

import pytest

from tests.connections.test_refresh import MANIFEST, Provider, _Interleaved, creds, race_two_instances
from tests.support.aws import AwsEndpoint

pytestmark = pytest.mark.e2e


@pytest.fixture(params=["moto", "dynalite"])
def endpoint(request: pytest.FixtureRequest) -> AwsEndpoint:
    fixture = "moto_endpoint" if request.param == "moto" else "dynalite_endpoint"
    found: AwsEndpoint = request.getfixturevalue(fixture)
    return found


def test_two_instances_on_dynamodb_make_one_refresh_call(endpoint: AwsEndpoint) -> None:
    from workbench.stores.dynamodb import dynamodb_stores

    settings = endpoint.fresh_tables()
    provider = race_two_instances(lambda: dynamodb_stores(settings).connections, join_seconds=60)
    assert provider.calls == ["rt-0"]


def test_lease_conditional_write_on_dynamodb(endpoint: AwsEndpoint) -> None:
    from workbench.stores.dynamodb import dynamodb_stores

    settings = endpoint.fresh_tables()
    inner = dynamodb_stores(settings).connections
    mine = _Interleaved(inner)
    me, other = creds(mine, Provider()), creds(dynamodb_stores(settings).connections, Provider())
    taken: list[Any] = []
    mine.between = lambda: taken.append(other._take_lease("u1", MANIFEST.name))
    assert me._take_lease("u1", MANIFEST.name) is None
    assert taken[0] is not None
    other._release_lease(taken[0])
    assert me._take_lease("u1", MANIFEST.name) is not None
