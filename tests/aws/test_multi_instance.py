"""Two gateway processes share one DynamoDB (+ KMS) endpoint and nothing else: a connect started on
one is redeemed and completed through the other, and the first sees it CONNECTED; then a token
refresh raced by 20 calls across both instances happens once at the provider.

Real parts: moto_server (DynamoDB + KMS over HTTP, tables created from template.yaml), two
`workbench serve` processes with WORKBENCH_STORE=dynamodb, oidc-provider as the SSO IdP and as the
plugin's OAuth provider, the official MCP SDK as the agent, Debian Chromium as the person.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from workbench.settings import Settings

from tests.connections.support import oauth_server, provider_stats
from tests.connections.test_e2e_connect import (
    IDP_CLIENT,
    PLUGIN_CLIENT,
    agent,
    call,
    person_connects,
    stack_env,
    wait_connected,
)
from tests.support.aws import AwsEndpoint
from tests.support.processes import free_port, local_gateway

pytestmark = pytest.mark.e2e


async def test_connect_on_one_instance_completes_through_the_other(
    moto_endpoint: AwsEndpoint, tmp_path: Path
) -> None:
    settings = moto_endpoint.fresh_tables()
    idp_port, provider_port = free_port(), free_port()
    idp_url, provider_url = f"http://127.0.0.1:{idp_port}", f"http://127.0.0.1:{provider_port}"
    env = {**moto_endpoint.env(settings), **stack_env(idp_url, provider_url, wait_block_seconds=3)}
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    # Separate data directories: no shared file, no shared memory; only the DynamoDB endpoint.
    with (
        local_gateway(tmp_path / "one", extra_env=env) as (one, key),
        local_gateway(tmp_path / "two", extra_env=env) as (two, _),
        oauth_server(
            "idp",
            client_id=IDP_CLIENT[0],
            client_secret=IDP_CLIENT[1],
            redirect_uris=[f"{two}/api/auth/oidc/callback"],
            port=idp_port,
            log=tmp_path / "idp.log",
        ),
        oauth_server(
            "provider",
            client_id=PLUGIN_CLIENT[0],
            client_secret=PLUGIN_CLIENT[1],
            redirect_uris=[f"{two}/api/auth/plugin/testoauth/callback"],
            port=provider_port,
            log=tmp_path / "provider.log",
        ),
    ):
        assert key, "the first instance printed no first-run API key"
        async with agent(one, key) as session:
            started = await call(session, "connect", {"integration": "testoauth"})
            connection_id = started["connectionId"]
            assert started["url"] == f"{one}/connect/{connection_id}"

            # One bounded wait on instance one while nobody has connected: PENDING, not reaped.
            first = await call(
                session, "wait_for_connection", {"connectionId": connection_id, "timeoutSec": 120}
            )
            assert first["status"] == "PENDING"

            waiting = asyncio.create_task(wait_connected(session, connection_id))
            # The person opens the same connect link on instance two, signs in there and consents.
            link_on_two = f"{two}/connect/{connection_id}"
            final_url = await asyncio.to_thread(person_connects, link_on_two, "you@localhost", False)
            assert final_url.startswith(f"{two}/portal/integrations")
            assert await asyncio.wait_for(waiting, 60) == {"status": "CONNECTED"}

            # Instance one uses the credential instance two stored (KMS-wrapped, in DynamoDB).
            ran = await call(
                session, "execute_tools", {"executions": [{"tool": "testoauth_whoami", "args": {}}]}
            )
        who = ran["results"][0]["result"]
        assert who["sub"] == "you@localhost" and who["client_id"] == PLUGIN_CLIENT[0]
        assert provider_stats(provider_url)["code_grants"] == 1

        # The access token now expires within the refresh margin; 20 concurrent calls across both
        # instances: exactly one refresh at the provider (the rotating refresh token survives), and
        # every call uses the one new token.
        moto_endpoint.client().update_item(
            TableName=settings.table_name("connections"),
            Key={"user_id": {"S": _user_of(moto_endpoint, settings)}, "integration": {"S": "testoauth"}},
            UpdateExpression="SET expires_at = :soon",
            ExpressionAttributeValues={":soon": {"N": str(int(time.time()) + 10)}},
        )
        whoami = {"executions": [{"tool": "testoauth_whoami", "args": {}}]}
        async with agent(one, key) as a, agent(two, key) as b:
            answers = await asyncio.gather(
                *(call(s, "execute_tools", whoami) for s in (a, b) for _ in range(10))
            )
        results = [answer["results"][0] for answer in answers]
        assert all("result" in r for r in results), results
        suffixes = {r["result"]["token_suffix"] for r in results}
        assert len(suffixes) == 1 and who["token_suffix"] not in suffixes
        stats = provider_stats(provider_url)
        assert stats["refresh_grants"] == 1, stats
        assert stats["refresh_errors"] == 0 and stats["api_rejected"] == 0

    client = moto_endpoint.client()
    rows = client.scan(TableName=settings.table_name("connections"))["Items"]
    rows = [r for r in rows if r["integration"]["S"] == "testoauth"]  # (the refresh lease has a row too)
    assert len(rows) == 1
    assert b"access_token" not in bytes(rows[0]["credential"]["B"])
    pending = client.scan(TableName=settings.table_name("pending"))["Items"]
    # The OAuth state was taken (the first run's one-time local sign-in link is a state row of its own).
    states = [p for p in pending if p["pk"]["S"].startswith("state#") and "local-signin" not in p["pk"]["S"]]
    assert states == [], states


def _user_of(endpoint: AwsEndpoint, settings: Settings) -> str:
    """The id of the (only) user who connected testoauth."""
    items = endpoint.client().scan(TableName=settings.table_name("connections"))["Items"]
    (user,) = {i["user_id"]["S"] for i in items if i["integration"]["S"] == "testoauth"}
    return user
