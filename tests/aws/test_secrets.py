"""Run-time secrets from one Secrets Manager secret (moto server over HTTP), through the Lambda handlers."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from workbench.aws.secrets import SecretsManagerSecrets
from workbench.composition import build_gateway
from workbench.errors import ConfigError
from workbench.settings import Settings
from workbench.web.sessions import SessionCodec

from tests.aws.conftest import FunctionSecret
from tests.support.apigw import http_api_event, load_entry, response_json
from tests.support.aws import AwsEndpoint

pytestmark = pytest.mark.e2e


@pytest.fixture
def secret(moto_endpoint: AwsEndpoint) -> Iterator[tuple[str, Any]]:
    """(ARN, secretsmanager client) of a fresh secret holding a session secret and one plugin client."""
    client = moto_endpoint.client("secretsmanager")
    name = f"workbench/test-{uuid.uuid4().hex[:8]}"
    values = {"session_secret": "s" * 48, "TESTOAUTH_CLIENT_ID": "cid", "TESTOAUTH_CLIENT_SECRET": "csecret"}
    arn = client.create_secret(Name=name, SecretString=json.dumps(values))["ARN"]
    yield arn, client
    client.delete_secret(SecretId=arn, ForceDeleteWithoutRecovery=True)


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _source(
    moto_endpoint: AwsEndpoint, secret_id: str, ttl: int, client: Any = None, clock: Any = None
) -> SecretsManagerSecrets:
    return SecretsManagerSecrets(
        secret_id,
        settings=moto_endpoint.settings(),
        ttl_seconds=ttl,
        client=client,
        clock=clock or time.monotonic,
    )


def test_values_are_read_at_run_time_cached_per_instance_and_a_rotation_is_seen_after_the_ttl(
    moto_endpoint: AwsEndpoint, secret: tuple[str, Any]
) -> None:
    arn, client = secret
    clock = _Clock()
    source = _source(moto_endpoint, arn, ttl=300, clock=clock)
    assert source.fetches == 0  # nothing is read until a value is needed (init stays offline)
    assert source.get("TESTOAUTH_CLIENT_ID") == "cid"
    assert source.get("GITHUB_CLIENT_ID") is None  # absent: that integration is not configured
    client.put_secret_value(SecretId=arn, SecretString=json.dumps({"TESTOAUTH_CLIENT_ID": "rotated"}))
    clock.now += 299
    for _ in range(20):
        assert source.get("TESTOAUTH_CLIENT_ID") == "cid"  # the instance's cache answers within the TTL
    assert source.fetches == 1
    clock.now += 2
    assert source.get("TESTOAUTH_CLIENT_ID") == "rotated"
    assert source.get("session_secret") is None
    assert source.fetches == 2


def test_a_missing_secret_means_nothing_is_configured(moto_endpoint: AwsEndpoint) -> None:
    source = _source(moto_endpoint, "workbench/does-not-exist", ttl=60)
    assert source.get("session_secret") is None and source.get("GITHUB_CLIENT_ID") is None


class _Flaky:
    """A real Secrets Manager client that can be made to fail like an outage."""

    def __init__(self, real: Any) -> None:
        self.real, self.down, self.calls = real, False, 0

    def get_secret_value(self, **kw: Any) -> Any:
        self.calls += 1
        if self.down:
            raise ConnectionRefusedError("secretsmanager.invalid: connection refused")
        return self.real.get_secret_value(**kw)


def test_an_outage_serves_the_last_value_and_never_looks_like_not_configured(
    moto_endpoint: AwsEndpoint, secret: tuple[str, Any]
) -> None:
    arn, client = secret
    flaky = _Flaky(client)
    source = _source(moto_endpoint, arn, ttl=0, client=flaky)
    assert source.get("TESTOAUTH_CLIENT_ID") == "cid"
    flaky.down = True
    assert source.get("TESTOAUTH_CLIENT_ID") == "cid"  # stale, not None
    calls = flaky.calls
    for _ in range(5):
        assert source.get("TESTOAUTH_CLIENT_ID") == "cid"
    assert flaky.calls == calls  # held for a while: requests do not each wait on a dead endpoint

    cold = _Flaky(client)
    cold.down = True
    fresh = _source(moto_endpoint, arn, ttl=0, client=cold)
    with pytest.raises(ConfigError, match="could not be read"):
        fresh.get("TESTOAUTH_CLIENT_ID")


@pytest.fixture
def secret_env(
    lambda_env: Settings, function_secret: FunctionSecret, monkeypatch: pytest.MonkeyPatch
) -> FunctionSecret:
    """The template's function environment: a secret id, no secret values in the environment."""
    monkeypatch.setenv("WORKBENCH_SECRET_CACHE_SECONDS", "1")
    monkeypatch.setenv("WORKBENCH_EXTRA_PLUGINS", "tests.connections.plugins.testoauth")
    monkeypatch.setenv("WB_TEST_PROVIDER_URL", "http://127.0.0.1:9")  # never contacted here
    return function_secret


def _connect(handler: Any, key: str, integration: str) -> dict[str, Any]:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "connect", "arguments": {"integration": integration}},
    }
    headers = {"authorization": f"Bearer {key}", "accept": "application/json, text/event-stream"}
    result = handler(http_api_event("POST", "/mcp", route_key="ANY /mcp", headers=headers, body=body), None)
    assert result["statusCode"] == 200, result
    answer: dict[str, Any] = json.loads(response_json(result)["result"]["content"][0]["text"])
    return answer


def test_a_gateway_with_no_plugin_secrets_starts_and_connect_says_not_configured(
    secret_env: FunctionSecret,
) -> None:
    gw = build_gateway(Settings.from_env())
    key = gw.auth.mint_key(gw.stores.users.get_or_create("ada@example.com"))
    handler = load_entry("mcp").handler
    answer = _connect(handler, key, "github")
    assert answer == {
        "error": "NOT_CONFIGURED",
        "integration": "github",
        "message": "github is not configured on this gateway: it has no OAuth client. The operator sets "
        "GITHUB_CLIENT_ID (and GITHUB_CLIENT_SECRET for a confidential client) in the gateway's Secrets "
        "Manager secret (stack output SecretArn).",
    }
    assert _connect(handler, key, "testoauth")["error"] == "NOT_CONFIGURED"

    # The operator adds the plugin's client to the secret: no redeploy, picked up after the cache TTL.
    secret_env.put({"TESTOAUTH_CLIENT_ID": "cid"})
    time.sleep(1.1)
    started = _connect(handler, key, "testoauth")
    assert started["type"] == "oauth2" and started["url"].startswith("https://gw.example.test/connect/")


def test_the_portal_session_is_signed_with_the_secrets_session_secret(secret_env: FunctionSecret) -> None:
    from workbench.runtime.lambda_handler import instance_gateway

    load_entry("web").handler(http_api_event("GET", "/portal/signin", route_key="ANY /portal/{proxy+}"), None)
    gw = instance_gateway()
    assert gw.settings.session_secret is None  # nothing secret came from the environment
    forged = SessionCodec(b"some-other-secret").issue("u1")
    assert gw.sessions.read(forged) is None
    assert gw.sessions.read(SessionCodec(secret_env.session_secret.encode()).issue("u1")) == "u1"


def test_without_a_session_secret_sign_in_fails_clearly_and_reading_cookies_finds_no_session(
    secret_env: FunctionSecret,
) -> None:
    secret_env.put({}, with_session_secret=False)
    gw = build_gateway(Settings.from_env())
    assert gw.sessions.read("u1.9999999999.abc") is None
    with pytest.raises(ConfigError, match="session_secret in the gateway's Secrets Manager secret"):
        gw.sessions.issue("u1")
