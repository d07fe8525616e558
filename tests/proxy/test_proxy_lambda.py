"""functions/proxy/app.py as Lambda runs it (API Gateway HTTP API v2 events through the adapter).

The proxy judges and forwards the path the caller sent (the event's rawPath, still percent-encoded),
never a decoded one. The refusals must hold there too."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
from workbench.composition import Gateway, build_gateway
from workbench.lambda_runtime import reset_instance
from workbench.settings import Settings

from tests.support.apigw import header, http_api_event, load_entry, response_json

PUBLIC = "https://wb.example.com"


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Gateway]:
    monkeypatch.setenv("WORKBENCH_STORE", "sqlite")
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("WORKBENCH_PUBLIC_URL", PUBLIC)
    monkeypatch.setenv("POWERTOOLS_TRACE_DISABLED", "1")
    reset_instance()
    yield build_gateway(Settings.from_env())
    reset_instance()


def _event(path: str, token: str) -> dict[str, Any]:
    event = http_api_event("GET", path, headers={"authorization": f"Bearer {token}"}, domain="wb.example.com")
    event["requestContext"]["http"]["path"] = unquote(path)  # API Gateway's decoded view
    return event


def _token(gw: Gateway) -> str:
    user = gw.stores.users.get_or_create("ada@example.com")
    minted = gw.curl_session(gw.api_keys.resolve(gw.api_keys.mint(user)), ["github"], 300)
    return str(minted["token"])


@pytest.mark.parametrize(
    "path",
    [
        "/c/github/%2e%2e/admin",
        "/c/github/%252e%252e/admin",
        "/c/github/x/..%2f..%2fadmin",
        "/c/github/%2f%2fevil.test",
    ],
)
def test_encoded_traversal_in_raw_path_is_refused(env: Gateway, path: str) -> None:
    handler = load_entry("proxy").handler
    result = handler(_event(path, _token(env)), None)
    assert result["statusCode"] == 400
    assert response_json(result)["error"].startswith("Refused: path")


def test_lambda_proxy_checks_the_token_and_the_connection(env: Gateway) -> None:
    handler = load_entry("proxy").handler
    user = env.stores.users.get_or_create("ada@example.com")
    api_key = env.api_keys.mint(user)
    denied = handler(_event("/c/github/user", api_key), None)
    assert denied["statusCode"] == 401
    assert (header(denied, "www-authenticate") or "").startswith("Bearer ")
    not_connected = handler(_event("/c/github/user", _token(env)), None)
    assert not_connected["statusCode"] == 403
    assert response_json(not_connected)["error"] == "NOT_CONNECTED"
    audited = [e for e in env.stores.audit.list_for(user.id) if e["action"] == "PROXY"]
    assert [(e["path"], e["status"]) for e in audited] == [("/user", 403)]
