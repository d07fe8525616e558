"""The curl proxy forwards what it should, exactly, and nothing else."""

from __future__ import annotations

import json
import time

import httpx

from tests.proxy.conftest import (
    ALLOWED_EXTRA_HOST,
    CREDENTIAL,
    FRESH_ACCESS_TOKEN,
    REFRESH_TOKEN,
    STALE_ACCESS_TOKEN,
    UPSTREAM_HOST,
    Proxy,
    Recorder,
    raw_request,
)


def test_get_with_query_reaches_the_base_url_with_the_real_credential(
    proxy: Proxy, upstream: Recorder
) -> None:
    token = proxy.token("acme")
    r = httpx.get(
        f"{proxy.base}/c/acme/repos/o/r/pulls?state=open&per_page=5",
        headers={
            "Authorization": f"Bearer {token}",
            "Accept": "application/json",
            "X-GitHub-Api-Version": "1",
        },
    )
    assert r.status_code == 200
    assert r.json() == {"method": "GET", "target": "/api/repos/o/r/pulls?state=open&per_page=5", "body": ""}
    assert r.headers["x-upstream"] == "yes"
    [seen] = upstream.requests()
    assert seen.headers["authorization"] == f"Bearer {CREDENTIAL}"
    assert seen.headers["host"] == f"{UPSTREAM_HOST}:{upstream.port}"
    assert seen.headers["x-github-api-version"] == "1"
    assert token not in seen.text()


def test_methods_and_bodies_are_forwarded(proxy: Proxy, upstream: Recorder) -> None:
    token = proxy.token("acme")
    for method in ("POST", "PUT", "PATCH", "DELETE"):
        r = httpx.request(
            method,
            f"{proxy.base}/c/acme/items/1",
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
            content=b'{"name": "x"}',
        )
        assert r.status_code == 200
        assert r.json()["method"] == method
        assert r.json()["body"] == '{"name": "x"}'
    assert [s.method for s in upstream.requests()] == ["POST", "PUT", "PATCH", "DELETE"]
    assert all(s.headers["content-type"] == "application/json" for s in upstream.requests())


def test_caller_credentials_host_and_forwarding_headers_are_stripped(
    proxy: Proxy, upstream: Recorder
) -> None:
    token = proxy.token("acme")
    r = raw_request(
        proxy.port,
        "GET",
        "/c/acme/items",
        {
            "Authorization": f"Bearer {token}",
            "Cookie": "wb_session=abc; other=1",
            "X-Forwarded-Host": "evil.test",
            "X-Forwarded-For": "10.0.0.1",
            "X-Original-URL": "/admin",
            "X-Host": "evil.test",
            "Forwarded": "host=evil.test",
            "X-Smuggled-Token": token,
            "Proxy-Authorization": "Basic eA==",
            "X-Custom": "kept",
        },
    )
    assert r.status == 200
    [seen] = upstream.requests()
    assert seen.headers["authorization"] == f"Bearer {CREDENTIAL}"
    assert "cookie" not in seen.headers
    assert seen.headers["host"] == f"{UPSTREAM_HOST}:{upstream.port}"
    for dropped in (
        "x-forwarded-host",
        "x-forwarded-for",
        "x-original-url",
        "x-host",
        "forwarded",
        "x-smuggled-token",
        "proxy-authorization",
    ):
        assert dropped not in seen.headers
    assert seen.headers["x-custom"] == "kept"
    assert token not in seen.text()


def test_encoded_slashes_inside_a_segment_are_forwarded_as_sent(proxy: Proxy, upstream: Recorder) -> None:
    token = proxy.token("acme")
    r = raw_request(
        proxy.port,
        "GET",
        "/c/acme/repos/o/r/contents/docs%2Freadme.md?ref=main",
        {"Authorization": f"Bearer {token}"},
    )
    assert r.status == 200
    assert upstream.requests()[0].target == "/api/repos/o/r/contents/docs%2Freadme.md?ref=main"


def test_response_headers_are_a_safe_subset_and_links_point_back_at_the_proxy(
    proxy: Proxy, upstream: Recorder
) -> None:
    r = httpx.get(f"{proxy.base}/c/acme/headers", headers={"Authorization": f"Bearer {proxy.token()}"})
    assert r.status_code == 200
    assert "set-cookie" not in r.headers
    assert "server" not in r.headers or r.headers["server"] != "recorder"
    assert r.headers["x-ratelimit-remaining"] == "4999"
    assert r.headers["link"] == f'<{proxy.base}/c/acme/items?page=2>; rel="next"'


def test_a_providers_rate_limit_comes_back_with_its_headers(proxy: Proxy) -> None:
    """The curl proxy does not retry or reword a 429: the caller gets the provider's answer and every
    header that says when to try again (issue 25)."""
    r = httpx.get(f"{proxy.base}/c/acme/limited", headers={"Authorization": f"Bearer {proxy.token()}"})
    assert r.status_code == 429 and r.json() == {"message": "API rate limit exceeded"}
    assert r.headers["retry-after"] == "30"
    assert r.headers["x-ratelimit-remaining"] == "0" and r.headers["x-ratelimit-reset"] == "1900000000"
    assert r.headers["ratelimit-policy"] == '"default";q=100;w=60'


def test_upstream_status_and_compressed_bodies_come_back(proxy: Proxy) -> None:
    h = {"Authorization": f"Bearer {proxy.token()}"}
    teapot = httpx.get(f"{proxy.base}/c/acme/status/418", headers=h)
    assert (teapot.status_code, teapot.text) == (418, "teapot")
    gz = httpx.get(f"{proxy.base}/c/acme/gzip", headers=h)
    assert gz.json() == {"compressed": True}
    assert "content-encoding" not in gz.headers


def test_a_credential_echoed_by_the_upstream_is_redacted(proxy: Proxy) -> None:
    r = httpx.get(f"{proxy.base}/c/acme/leak", headers={"Authorization": f"Bearer {proxy.token()}"})
    assert r.status_code == 200
    assert CREDENTIAL not in r.text and CREDENTIAL not in json.dumps(dict(r.headers))
    assert r.json() == {"you_sent": "[REDACTED]"}


def test_redirect_inside_the_base_url_is_rewritten_to_the_proxy(proxy: Proxy, evil: Recorder) -> None:
    h = {"Authorization": f"Bearer {proxy.token()}"}
    r = httpx.get(f"{proxy.base}/c/acme/redirect/inside", headers=h)
    assert r.status_code == 302
    assert r.headers["location"] == f"{proxy.base}/c/acme/echo?from=redirect"
    rel = httpx.get(f"{proxy.base}/c/acme/redirect/relative", headers=h)
    assert rel.headers["location"] == f"{proxy.base}/c/acme/redirect/echo?from=relative"
    assert evil.requests() == []


def test_redirect_to_an_allowed_host_is_passed_through_not_followed(proxy: Proxy, upstream: Recorder) -> None:
    r = httpx.get(
        f"{proxy.base}/c/acme/redirect/allowed", headers={"Authorization": f"Bearer {proxy.token()}"}
    )
    assert r.status_code == 302
    assert r.headers["location"] == f"https://{ALLOWED_EXTRA_HOST}/archive.tar.gz"
    assert ALLOWED_EXTRA_HOST not in proxy.dns.asked
    assert len(upstream.requests()) == 1


def test_the_vetted_address_is_the_one_connected_to(proxy: Proxy, upstream: Recorder) -> None:
    """DNS rebinding: the first answer is checked and pinned; a later answer cannot redirect it."""
    proxy.dns.sequence = [["127.0.0.1"], ["10.0.0.7"]]
    h = {"Authorization": f"Bearer {proxy.token()}"}
    first = httpx.get(f"{proxy.base}/c/acme/items", headers=h)
    assert first.status_code == 200
    assert proxy.dns.asked == [UPSTREAM_HOST]  # resolved once; the connection used that answer
    second = httpx.get(f"{proxy.base}/c/acme/items", headers=h)
    assert second.status_code == 403
    assert "private" in second.json()["error"]
    assert len(upstream.requests()) == 1


def test_not_connected_user_gets_the_engine_shape_and_nothing_is_sent(
    proxy: Proxy, upstream: Recorder
) -> None:
    token = proxy.token("acme")
    proxy.gateway.stores.connections.delete(proxy.principal.user.id, "acme")
    r = httpx.get(f"{proxy.base}/c/acme/items", headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 403
    assert r.json() == {
        "error": "NOT_CONNECTED",
        "integration": "acme",
        "message": "acme not connected. Use connect('acme') to connect.",
    }
    assert upstream.requests() == []


def test_every_proxied_call_is_audited_without_secrets(proxy: Proxy) -> None:
    token = proxy.token("acme")
    h = {"Authorization": f"Bearer {token}"}
    httpx.get(f"{proxy.base}/c/acme/items?secret_param=x", headers=h)
    raw_request(proxy.port, "GET", "/c/acme/%2e%2e/admin", h)
    events = proxy.audit("PROXY")
    assert [(e["method"], e["path"], e["status"], e["success"]) for e in reversed(events)] == [
        ("GET", "/items", 200, True),
        ("GET", "/%2e%2e/admin", 400, False),
    ]
    session = proxy.gateway.tokens.verify(token, audience=f"{proxy.base}/c")["jti"]
    assert all(
        e["session"] == session and e["integration"] == "acme" and e["via"] == "curl_session" for e in events
    )
    dumped = json.dumps(events)
    assert token not in dumped and CREDENTIAL not in dumped and "secret_param" not in dumped


def test_a_stale_oauth_credential_is_refreshed_before_it_is_injected(
    proxy: Proxy, upstream: Recorder
) -> None:
    r = httpx.get(
        f"{proxy.base}/c/oauthy/items", headers={"Authorization": f"Bearer {proxy.token('oauthy')}"}
    )
    assert r.status_code == 200
    token_call, api_call = upstream.requests()
    assert token_call.target == "/token"
    assert f"refresh_token={REFRESH_TOKEN}" in token_call.body.decode()
    assert api_call.headers["authorization"] == f"Bearer {FRESH_ACCESS_TOKEN}"
    assert STALE_ACCESS_TOKEN not in api_call.text()
    again = httpx.get(
        f"{proxy.base}/c/oauthy/items", headers={"Authorization": f"Bearer {proxy.token('oauthy')}"}
    )
    assert again.status_code == 200
    assert [s.target for s in upstream.requests()] == [
        "/token",
        "/api/items",
        "/api/items",
    ]  # stored, not re-refreshed


def test_a_token_the_provider_rejects_is_refreshed_once_and_the_request_resent(
    proxy: Proxy, upstream: Recorder
) -> None:
    """The same refresh-on-rejection as tool calls: a token with an hour left that the provider has
    ended is refreshed (once) and the request sent again; the new token is redacted too."""
    user = proxy.principal.user.id
    proxy.gateway.credentials.save(
        user,
        "oauthy",
        {"access_token": STALE_ACCESS_TOKEN, "refresh_token": REFRESH_TOKEN, "token_type": "bearer"},
        expires_at=time.time() + 3600,
    )
    h = {"Authorization": f"Bearer {proxy.token('oauthy')}"}
    r = httpx.post(f"{proxy.base}/c/oauthy/only-fresh", headers=h, content=b'{"note": "kept"}')
    assert r.status_code == 200
    assert FRESH_ACCESS_TOKEN not in r.text and "[REDACTED]" in r.text
    first, token_call, again = upstream.requests()
    assert (first.target, token_call.target, again.target) == ("/api/only-fresh", "/token", "/api/only-fresh")
    assert first.headers["authorization"] == f"Bearer {STALE_ACCESS_TOKEN}"
    assert again.headers["authorization"] == f"Bearer {FRESH_ACCESS_TOKEN}"
    assert first.body == again.body == b'{"note": "kept"}'
    stored = proxy.gateway.stores.connections.get(user, "oauthy")
    assert stored is not None and proxy.gateway.credentials.load(stored)["access_token"] == FRESH_ACCESS_TOKEN
