"""Refresh on a rejected token: the provider answers a request with what the manifest declares as
"token rejected" (401; Salesforce's 401 INVALID_SESSION_ID; Slack's 200 {"ok": false, "error":
"token_expired"}); the engine refreshes once, through the same lease single flight as the expiry
path, and retries the request once.

In process with an exact fake upstream (httpx.MockTransport), then across two gateway instances
that share only their store (one SQLite file; DynamoDB over HTTP), against the loopback provider
(rotating refresh tokens, no expiry announced): exactly one refresh at the provider.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import BaseModel
from workbench.composition import Gateway, build_gateway, build_registry
from workbench.identity.auth import Principal
from workbench.identity.crypto import LocalKeyProvider
from workbench.manifest import Manifest, OAuth2Auth, TokenRejected
from workbench.sdk import api
from workbench.settings import Settings
from workbench.stores import Stores
from workbench.tools import ToolContext, tool

from tests.connections.loopback_provider import CLIENT_ID, CLIENT_SECRET, Style, loopback_provider
from tests.support.aws import AwsEndpoint
from tests.support.gateways import make_gateway, principal_for

SESSION_EXPIRED = [{"message": "Session expired or invalid", "errorCode": "INVALID_SESSION_ID"}]


class Echo(BaseModel):
    text: str = "hi"


@tool("rt_whoami", "Who the provider says the connected account is.", None)
async def whoami(args: Any, ctx: ToolContext) -> Any:
    return await api(ctx, "GET", "/api/whoami")


@tool("rt_post", "Post a note (a request with a JSON body).", Echo)
async def post_note(args: Echo, ctx: ToolContext) -> Any:
    return await api(ctx, "POST", "/api/notes", json={"text": args.text})


def manifest(base: str, *rules: TokenRejected) -> Manifest:
    auth = OAuth2Auth(authorize_url=f"{base}/authorize", token_url=f"{base}/token")
    if rules:
        auth = OAuth2Auth(authorize_url=f"{base}/authorize", token_url=f"{base}/token", token_rejected=rules)
    return Manifest("rt", "1.0.0", "Rejecting Service", auth, base_url=base, tool_prefix="rt_")


class Upstream:
    """The provider's token endpoint and API in one MockTransport: the API accepts only the current
    access token and answers others with `rejected` (status, body)."""

    def __init__(
        self, rejected: tuple[int, Any] = (401, {"error": "invalid_token"}), *, refresh: str = "ok"
    ) -> None:
        self.current = "at-0"
        self.rejected = rejected
        self.refresh = refresh  # "ok" | "invalid_grant" | "down"
        self.refuse_all = False  # the API refuses even a freshly refreshed token
        self.refreshes: list[str] = []
        self.api: list[tuple[str, str, bytes]] = []  # (path, token, body)

    def handler(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == "/token":
            form = dict(httpx.QueryParams(request.content.decode()))
            self.refreshes.append(form["refresh_token"])
            if self.refresh == "invalid_grant":
                return httpx.Response(400, json={"error": "invalid_grant", "error_description": "revoked"})
            if self.refresh == "down":
                return httpx.Response(503, text="maintenance")
            self.current = f"at-{len(self.refreshes)}"
            return httpx.Response(
                200, json={"access_token": self.current, "refresh_token": f"rt-{len(self.refreshes)}"}
            )
        token = request.headers.get("authorization", "").removeprefix("Bearer ")
        self.api.append((request.url.path, token, request.content))
        if token != self.current or self.refuse_all:
            status, body = self.rejected
            return httpx.Response(status, json=body)
        return httpx.Response(200, json={"token": token, "echo": json.loads(request.content or b"null")})


def gateway(tmp_path: Path, m: Manifest, upstream: Upstream) -> Gateway:
    registry = build_registry(plugins=False)
    registry.add(m, lambda: [whoami, post_note])
    return make_gateway(
        tmp_path,
        registry=registry,
        transport=httpx.MockTransport(upstream.handler),
        plugin_env={"RT_CLIENT_ID": "cid", "RT_CLIENT_SECRET": "sec"},
    )


def connect(gw: Gateway, principal: Principal, refresh_token: str | None = "rt-0") -> None:
    cred = {"access_token": "at-0", **({"refresh_token": refresh_token} if refresh_token else {})}
    gw.credentials.save(principal.user.id, "rt", cred)  # no expiry announced


def ended(
    tmp_path: Path, upstream: Upstream, *rules: TokenRejected, refresh_token: str | None = "rt-0"
) -> tuple[Gateway, Principal]:
    """A gateway connected with at-0, which the provider has already ended (it wants another token)."""
    upstream.current = "at-elsewhere"
    gw = gateway(tmp_path, manifest("https://api.rt.test", *rules), upstream)
    principal = principal_for(gw)
    connect(gw, principal, refresh_token)
    return gw, principal


async def run(gw: Gateway, principal: Principal, tool_name: str = "rt_whoami", **args: Any) -> dict[str, Any]:
    out = await gw.runs.execute(principal, [{"tool": tool_name, "args": args, "ref_id": None}])
    result: dict[str, Any] = out["results"][0]
    return result


async def test_a_401_refreshes_once_and_the_request_is_retried_with_the_new_token(tmp_path: Path) -> None:
    upstream = Upstream()
    gw, principal = ended(tmp_path, upstream)  # the provider ended the session early: at-0 is refused
    before = gw.stores.connections.get(principal.user.id, "rt")
    assert before is not None

    assert await run(gw, principal, "rt_post", text="hello") == {
        "result": {"token": "at-1", "echo": {"text": "hello"}}
    }
    assert upstream.refreshes == ["rt-0"]
    # The same request twice, the body intact: first with the refused token, then with the new one.
    assert upstream.api == [
        ("/api/notes", "at-0", b'{"text":"hello"}'),
        ("/api/notes", "at-1", b'{"text":"hello"}'),
    ]
    stored = gw.stores.connections.get(principal.user.id, "rt")
    assert stored is not None and stored.version == before.version + 1 and stored.status == "connected"
    assert gw.credentials.load(stored) == {"access_token": "at-1", "refresh_token": "rt-1"}
    assert stored.expires_at is None


async def test_twenty_concurrent_rejections_in_one_process_make_one_refresh(tmp_path: Path) -> None:
    upstream = Upstream()
    gw, principal = ended(tmp_path, upstream)
    out = await gw.runs.execute(
        principal, [{"tool": "rt_whoami", "args": {}, "ref_id": None} for _ in range(8)]
    )
    results = [r["result"]["token"] for r in out["results"]]
    more = await asyncio.gather(*(run(gw, principal) for _ in range(12)))
    assert results + [r["result"]["token"] for r in more] == ["at-1"] * 20
    assert upstream.refreshes == ["rt-0"]


async def test_a_second_refusal_after_the_refresh_is_the_tools_answer(tmp_path: Path) -> None:
    upstream = Upstream(rejected=(401, {"message": "no"}))
    upstream.refuse_all = True
    gw = gateway(tmp_path, manifest("https://api.rt.test"), upstream)
    principal = principal_for(gw)
    connect(gw, principal)
    assert await run(gw, principal) == {"error": "rt API error 401: no"}
    assert upstream.refreshes == ["rt-0"]  # refreshed once, retried once, no loop
    assert [token for _, token, _ in upstream.api] == ["at-0", "at-1"]


async def test_a_401_the_manifest_does_not_declare_is_not_refreshed(tmp_path: Path) -> None:
    upstream = Upstream(rejected=(401, [{"message": "No such column", "errorCode": "INVALID_FIELD"}]))
    gw, principal = ended(tmp_path, upstream, TokenRejected(401, "INVALID_SESSION_ID"))
    assert (await run(gw, principal))["error"].startswith("rt API error 401")
    assert upstream.refreshes == []


async def test_salesforce_style_rule_matches_the_body(tmp_path: Path) -> None:
    upstream = Upstream(rejected=(401, SESSION_EXPIRED))
    gw, principal = ended(tmp_path, upstream, TokenRejected(401, "INVALID_SESSION_ID"))
    assert await run(gw, principal) == {"result": {"token": "at-1", "echo": None}}
    assert upstream.refreshes == ["rt-0"]


async def test_slack_style_rule_refreshes_on_a_200_error_body(tmp_path: Path) -> None:
    upstream = Upstream(rejected=(200, {"ok": False, "error": "token_expired"}))
    slack = build_registry().manifest("slack")
    assert slack is not None and isinstance(slack.auth, OAuth2Auth)
    gw, principal = ended(tmp_path, upstream, *slack.auth.token_rejected)
    assert await run(gw, principal) == {"result": {"token": "at-1", "echo": None}}
    assert upstream.refreshes == ["rt-0"]


async def test_rejected_with_no_refresh_token_needs_reconnecting_and_says_so(tmp_path: Path) -> None:
    upstream = Upstream()
    gw, principal = ended(tmp_path, upstream, refresh_token=None)
    refused = {
        "error": "NOT_CONNECTED",
        "integration": "rt",
        "message": "rt must be connected again: the provider refused the access token and no refresh token is "
        "stored. Use connect('rt') to reconnect.",
    }
    assert await run(gw, principal) == refused
    stored = gw.stores.connections.get(principal.user.id, "rt")
    assert stored is not None and stored.status == "reconnect_required"
    assert stored.last_error == "the provider refused the access token and no refresh token is stored"
    assert stored.last_error_at is not None
    assert await run(gw, principal) == refused  # the same words until the user connects again
    assert upstream.refreshes == []


async def test_refused_refresh_needs_reconnecting_and_keeps_the_reason(tmp_path: Path) -> None:
    upstream = Upstream(refresh="invalid_grant")
    gw, principal = ended(tmp_path, upstream)
    assert await run(gw, principal) == {
        "error": "NOT_CONNECTED",
        "integration": "rt",
        "message": "rt must be connected again: the provider refused the refresh (invalid_grant). "
        "Use connect('rt') to reconnect.",
    }
    stored = gw.stores.connections.get(principal.user.id, "rt")
    assert stored is not None and stored.status == "reconnect_required"
    assert stored.last_error == "the provider refused the refresh (invalid_grant)"
    assert upstream.refreshes == ["rt-0"]


async def test_provider_down_during_the_refresh_keeps_the_connection_and_records_the_error(
    tmp_path: Path,
) -> None:
    upstream = Upstream(refresh="down")
    gw, principal = ended(tmp_path, upstream)
    assert await run(gw, principal) == {
        "error": "rt token refresh failed (http_503); try the call again shortly."
    }
    stored = gw.stores.connections.get(principal.user.id, "rt")
    assert stored is not None and stored.status == "connected"
    assert stored.last_error == "token refresh failed (http_503)"
    # The next attempt (after the 2 s backoff) that works clears it again.
    upstream.refresh = "ok"
    clock = gw.credentials.clock
    gw.credentials.clock = lambda: clock() + 3
    assert (await run(gw, principal))["result"]["token"] == "at-2"
    cleared = gw.stores.connections.get(principal.user.id, "rt")
    assert cleared is not None and (cleared.last_error, cleared.last_error_at) == ("", None)


# -- two instances, real HTTP to the loopback provider ---------------------------------------------


KEY = os.urandom(32)


def _instance(settings: Settings, stores: Stores, m: Manifest) -> Gateway:
    registry = build_registry(plugins=False)
    registry.add(m, lambda: [whoami])
    object.__setattr__(settings, "plugin_env", {"RT_CLIENT_ID": CLIENT_ID, "RT_CLIENT_SECRET": CLIENT_SECRET})
    object.__setattr__(settings, "egress_allow", "loopback")  # the provider listens on loopback
    return build_gateway(
        settings, stores=stores, registry=registry, key_provider=LocalKeyProvider.from_secret(KEY)
    )


def race_after_rejection(new_instance: Callable[[Manifest], Gateway]) -> None:
    """Two gateway instances (own store client, own event loop, own thread), ten calls each, all
    holding a token the provider has just ended; the provider must see exactly one refresh."""
    style = Style(expires_in=None, rejected_body=SESSION_EXPIRED)  # Salesforce-like
    with loopback_provider(style, delay=0.3) as provider:
        m = manifest(provider.url, TokenRejected(401, "INVALID_SESSION_ID"))
        first = new_instance(m)
        principal = principal_for(first)

        async def connect_for_real() -> None:
            assert first.provider_oauth is not None
            async with httpx.AsyncClient() as http:
                url = first.provider_oauth.consent_url(m, state="s", verifier="v" * 43)
                code = httpx.URL((await http.get(url)).headers["location"]).params["code"]
            tokens = await first.provider_oauth.exchange_code(m, code=code, verifier="v" * 43)
            first.credentials.save(principal.user.id, "rt", tokens.credential)
            assert (await run(first, principal))["result"]["sub"] == "ada"

        asyncio.run(connect_for_real())
        provider.revoke_access()  # the session ends at the provider; nothing local says so
        seen: list[dict[str, Any]] = []
        errors: list[BaseException] = []
        barrier = threading.Barrier(2)

        def instance(gw: Gateway) -> None:
            async def calls() -> list[dict[str, Any]]:
                barrier.wait()
                return await asyncio.gather(*(run(gw, principal) for _ in range(10)))

            try:
                seen.extend(asyncio.run(calls()))
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=instance, args=(gw,)) for gw in (first, new_instance(m))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert errors == []
        assert len(seen) == 20 and all("result" in r for r in seen), seen
        assert (
            len({r["result"]["token_suffix"] for r in seen}) == 1
        )  # everyone retried with the one new token
        assert provider.stats["refresh_grants"] == 1, provider.stats
        assert provider.refusals == []  # no replayed refresh token
        assert provider.stats["api_rejected"] >= 1


FAILURES = {
    "down": (
        (503, {"error": "temporarily_unavailable"}),
        {"error": "rt token refresh failed (temporarily_unavailable); try the call again shortly."},
    ),
    "revoked": (
        (400, {"error": "invalid_grant", "error_description": "revoked"}),
        {
            "error": "NOT_CONNECTED",
            "integration": "rt",
            "message": "rt must be connected again: the provider refused the refresh (invalid_grant). "
            "Use connect('rt') to reconnect.",
        },
    ),
}


def failed_refresh_burst(new_instance: Callable[[Manifest], Gateway], failure: str) -> None:
    """Three instances, ten calls each, all holding a token the provider has just ended, and the
    provider's token endpoint failing: one refresh attempt reaches it, and all thirty calls, and
    the next one, get the same answer with the provider's reason."""
    answer, expected = FAILURES[failure]
    style = Style(expires_in=None, rejected_body=SESSION_EXPIRED)
    with loopback_provider(style, delay=0.3) as provider:
        m = manifest(provider.url, TokenRejected(401, "INVALID_SESSION_ID"))
        first = new_instance(m)
        principal = principal_for(first)
        issued = provider.token_response()
        first.credentials.save(principal.user.id, "rt", issued)
        provider.revoke_access()
        provider.fail_refresh = answer
        seen: list[dict[str, Any]] = []
        errors: list[BaseException] = []
        barrier = threading.Barrier(3)

        def instance(gw: Gateway) -> None:
            async def calls() -> list[dict[str, Any]]:
                barrier.wait()
                return await asyncio.gather(*(run(gw, principal) for _ in range(10)))

            try:
                seen.extend(asyncio.run(calls()))
            except BaseException as exc:
                errors.append(exc)

        gateways = (first, new_instance(m), new_instance(m))
        threads = [threading.Thread(target=instance, args=(gw,)) for gw in gateways]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert errors == []
        assert seen == [expected] * 30
        assert asyncio.run(run(gateways[2], principal)) == expected  # and the next call, on any instance
        assert provider.stats["failed_refreshes"] == 1, provider.stats
        stored = first.stores.connections.get(principal.user.id, "rt")
        assert stored is not None
        assert stored.status == ("reconnect_required" if failure == "revoked" else "connected")


@pytest.mark.parametrize("failure", sorted(FAILURES))
def test_three_instances_share_one_failed_refresh_on_sqlite(tmp_path: Path, failure: str) -> None:
    from workbench.stores.sqlite import sqlite_stores

    def new_instance(m: Manifest) -> Gateway:
        settings = Settings(store="sqlite", data_dir=tmp_path, public_url="http://127.0.0.1:8787")
        return _instance(settings, sqlite_stores(tmp_path / "shared.sqlite3"), m)

    failed_refresh_burst(new_instance, failure)


# Both DynamoDB implementations: moto, and dynalite (stricter about names and shapes).
DYNAMODB = pytest.mark.parametrize("server", ["moto_endpoint", "dynalite_endpoint"])


@pytest.mark.e2e
@DYNAMODB
@pytest.mark.parametrize("failure", sorted(FAILURES))
def test_three_instances_share_one_failed_refresh_on_dynamodb(
    request: pytest.FixtureRequest, server: str, failure: str
) -> None:
    from workbench.stores.dynamodb import dynamodb_stores

    endpoint: AwsEndpoint = request.getfixturevalue(server)
    tables = endpoint.fresh_tables()

    def new_instance(m: Manifest) -> Gateway:
        settings = endpoint.settings(table_prefix=tables.table_prefix)
        return _instance(settings, dynamodb_stores(settings), m)

    failed_refresh_burst(new_instance, failure)


def test_two_instances_on_one_sqlite_file_refresh_once_after_a_rejection(tmp_path: Path) -> None:
    from workbench.stores.sqlite import sqlite_stores

    def new_instance(m: Manifest) -> Gateway:
        settings = Settings(store="sqlite", data_dir=tmp_path, public_url="http://127.0.0.1:8787")
        return _instance(settings, sqlite_stores(tmp_path / "shared.sqlite3"), m)

    race_after_rejection(new_instance)


@pytest.mark.e2e
@DYNAMODB
def test_two_instances_on_dynamodb_refresh_once_after_a_rejection(
    request: pytest.FixtureRequest, server: str
) -> None:
    from workbench.stores.dynamodb import dynamodb_stores

    endpoint: AwsEndpoint = request.getfixturevalue(server)
    tables = endpoint.fresh_tables()

    def new_instance(m: Manifest) -> Gateway:
        settings = endpoint.settings(table_prefix=tables.table_prefix)
        return _instance(settings, dynamodb_stores(settings), m)

    race_after_rejection(new_instance)


async def test_a_200_rule_never_reads_a_download_into_memory() -> None:
    """A body rule on status 200 (Slack's) only looks at JSON or text answers."""
    slack = build_registry().manifest("slack")
    assert slack is not None
    from workbench.connections.credentials import Credentials

    download = httpx.Response(200, content=b'"error":"token_expired"', headers={"content-type": "image/png"})
    assert await Credentials.rejects(slack, download) is False
    error = httpx.Response(200, json={"ok": False, "error": "token_expired"})
    assert await Credentials.rejects(slack, error) is True
