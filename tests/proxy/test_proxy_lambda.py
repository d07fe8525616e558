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
from workbench.runtime.lambda_handler import reset_instance
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
    minted = gw.curl.mint(gw.auth.api_keys.resolve(gw.auth.mint_key(user)), ["github"], 300)
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
    api_key = env.auth.mint_key(user)
    denied = handler(_event("/c/github/user", api_key), None)
    assert denied["statusCode"] == 401
    assert (header(denied, "www-authenticate") or "").startswith("Bearer ")
    not_connected = handler(_event("/c/github/user", _token(env)), None)
    assert not_connected["statusCode"] == 403
    assert response_json(not_connected)["error"] == "NOT_CONNECTED"
    audited = [e for e in env.stores.audit.list_for(user.id) if e["action"] == "PROXY"]
    assert [(e["path"], e["status"]) for e in audited] == [("/user", 403)]


def test_a_slow_upstream_answers_504_in_the_engines_words_before_the_lambda_times_out(
    env: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The proxy's upstream limit shrinks to what the invocation has left (4.5 s, less the margin),
    and the 504 says which limit ran out, in the words an execute_tools result uses."""
    import re
    import time

    from tests.support.slowapi import connect_slowapi, slow_upstream

    class Context:
        def __init__(self, seconds: float) -> None:
            self.ends = time.monotonic() + seconds

        def get_remaining_time_in_millis(self) -> int:
            return max(0, int((self.ends - time.monotonic()) * 1000))

    with slow_upstream() as url:
        monkeypatch.setenv("WORKBENCH_EXTRA_PLUGINS", "tests.support.slowapi")
        monkeypatch.setenv("WB_SLOW_API_URL", url)
        monkeypatch.setenv("WORKBENCH_EGRESS_ALLOW", "loopback")
        reset_instance()
        gw = build_gateway(Settings.from_env())
        ada = gw.stores.users.get_or_create("ada@example.com")
        connect_slowapi(gw, ada.id)
        token = str(gw.curl.mint(gw.auth.api_keys.resolve(gw.auth.mint_key(ada)), ["slowapi"], 300)["token"])
        started = time.monotonic()
        result = load_entry("proxy").handler(_event("/c/slowapi/slow", token), Context(4.5))
        elapsed = time.monotonic() - started
    assert elapsed < 3.5, elapsed
    assert result["statusCode"] == 504, result
    assert re.fullmatch(r"Upstream timed out after \d+(\.\d)? s", response_json(result)["error"]), result
