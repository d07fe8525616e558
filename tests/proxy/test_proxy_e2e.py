"""The curl proxy inside a real `workbench serve`: curl_session over /mcp, then `curl` (a real
process) through /c/... to a recording upstream on loopback."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator

import httpx
import pytest
from workbench.composition import build_gateway
from workbench.settings import Settings

from tests.proxy.conftest import Recorder, serving
from tests.support.processes import local_gateway

pytestmark = pytest.mark.e2e

SECRET = "loopback-api-secret-0123456789"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, Recorder]]:
    data = tmp_path_factory.mktemp("gw")
    with serving(Recorder()) as upstream:
        env = {
            "WORKBENCH_EXTRA_PLUGINS": "tests.proxy.e2e_plugin",
            "WORKBENCH_EGRESS_ALLOW": "loopback",
            "PROXY_E2E_UPSTREAM_URL": f"http://127.0.0.1:{upstream.port}",
        }
        with local_gateway(data, extra_env=env) as (base, key):
            # Connect the local user the way the portal would: the credential, encrypted, in SQLite.
            gw = build_gateway(Settings.from_env({"WORKBENCH_DATA_DIR": str(data), **env}))
            user = gw.stores.users.by_email("you@localhost")
            assert user is not None
            gw.credentials.save(user.id, "loopback-api", {"token": SECRET})
            yield base, key, upstream


def _mint(base: str, key: str) -> str:
    rpc = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "curl_session",
            "arguments": {"integrations": ["loopback-api"], "expiresInSeconds": 60},
        },
    }
    r = httpx.post(f"{base}/mcp", json=rpc, headers={"Authorization": f"Bearer {key}"})
    payload = json.loads(r.json()["result"]["content"][0]["text"])
    assert payload["proxyBaseUrl"] == f"{base}/c" and payload["expiresIn"] == 60
    return str(payload["token"])


def _curl(*args: str) -> tuple[int, str]:
    out = subprocess.run(
        ["curl", "-sS", "--max-time", "20", "-o", "-", "-w", "\n%{http_code}", *args],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout
    body, _, status = out.rpartition("\n")
    return int(status), body


def test_curl_through_the_proxy_reaches_the_upstream_with_the_credential(
    served: tuple[str, str, Recorder],
) -> None:
    base, key, upstream = served
    token = _mint(base, key)
    status, body = _curl(
        "-X",
        "POST",
        f"{base}/c/loopback-api/things?limit=2",
        "-H",
        f"Authorization: Bearer {token}",
        "-H",
        "Content-Type: application/json",
        "-H",
        "Cookie: wb=1",
        "-d",
        '{"a":1}',
    )
    assert status == 200
    assert json.loads(body) == {"method": "POST", "target": "/api/things?limit=2", "body": '{"a":1}'}
    seen = upstream.requests()[-1]
    assert seen.headers["authorization"] == f"Bearer {SECRET}"
    assert "cookie" not in seen.headers
    assert token not in seen.text()


def test_curl_traversal_is_refused_and_nothing_reaches_the_upstream(
    served: tuple[str, str, Recorder],
) -> None:
    base, key, upstream = served
    token = _mint(base, key)
    before = len(upstream.requests())
    for target in (
        "/c/loopback-api/../../admin",
        "/c/loopback-api/%2e%2e/admin",
        "/c/loopback-api/%252e%252e/x",
    ):
        status, body = _curl("--path-as-is", f"{base}{target}", "-H", f"Authorization: Bearer {token}")
        assert status == 400, (target, body)
    status, _ = _curl(f"{base}/c/loopback-api/things", "-H", f"Authorization: Bearer {key}")
    assert status == 401  # an API key is not a curl_session token
    assert len(upstream.requests()) == before
