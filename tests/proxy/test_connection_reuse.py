"""The curl proxy keeps upstream connections and reuses them per (host, checked address) (issue 14),
within the egress rules: every request still resolves its host and checks every answer, and goes
out on a kept connection only to an address of that answer."""

from __future__ import annotations

import httpx

from tests.proxy.conftest import UPSTREAM_HOST, Proxy, Recorder, serving


def _get(proxy: Proxy, token: str, path: str = "items") -> httpx.Response:
    return httpx.get(f"{proxy.base}/c/acme/{path}", headers={"Authorization": f"Bearer {token}"})


def test_requests_to_one_host_share_a_kept_connection(proxy: Proxy, upstream: Recorder) -> None:
    token = proxy.token("acme")
    assert [_get(proxy, token).status_code for _ in range(5)] == [200] * 5
    peers = {seen.peer for seen in upstream.requests()}
    assert len(upstream.requests()) == 5 and len(peers) == 1  # one TCP connection for all five
    assert proxy.dns.asked == [UPSTREAM_HOST] * 5  # yet the host was resolved and checked each time


def test_a_connection_is_reused_only_for_an_address_of_the_current_answer(
    proxy: Proxy, upstream: Recorder
) -> None:
    """The name moves to another (allowed) address: the next request connects there, never on the
    connection kept for the old address; moved to a refused address, nothing is sent at all."""
    token = proxy.token("acme")
    with serving(Recorder(("127.0.0.2", upstream.port))) as moved:
        assert _get(proxy, token).status_code == 200
        proxy.dns.answers[UPSTREAM_HOST] = ["127.0.0.2"]
        assert _get(proxy, token).status_code == 200
        assert len(upstream.requests()) == 1 and len(moved.requests()) == 1
        proxy.dns.answers[UPSTREAM_HOST] = ["10.0.0.7"]  # rebinding to a private address
        refused = _get(proxy, token)
        assert refused.status_code == 403 and "private" in refused.json()["error"]
        proxy.dns.answers[UPSTREAM_HOST] = ["127.0.0.1"]  # back: the kept connection serves again
        assert _get(proxy, token).status_code == 200
        assert len(upstream.requests()) == 2 and len(moved.requests()) == 1
        assert len({seen.peer for seen in upstream.requests()}) == 1


def test_each_request_carries_only_its_own_credential_on_a_shared_connection(
    proxy: Proxy, upstream: Recorder
) -> None:
    """Two integrations on the same host share the kept connection; each request has its own
    credential and nothing the upstream set (cookies) travels from one request to the next."""
    from tests.proxy.conftest import CREDENTIAL, OTHER_CREDENTIAL

    acme, other = proxy.token("acme"), proxy.token("other")
    assert _get(proxy, acme, "headers").status_code == 200  # the upstream sets a cookie here
    r = httpx.get(f"{proxy.base}/c/other/items", headers={"Authorization": f"Bearer {other}"})
    assert r.status_code == 200
    first, second = upstream.requests()
    assert first.peer == second.peer
    assert first.headers["authorization"] == f"Bearer {CREDENTIAL}"
    assert second.headers["authorization"] == f"Bearer {OTHER_CREDENTIAL}"
    assert "cookie" not in second.headers
