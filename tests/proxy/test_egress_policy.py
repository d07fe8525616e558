"""The proxy's side of issue 12: the redirect policy as docs/rest-and-proxy.md states it, the decoded
body cap, every failure after the upstream answered audited, and a credential echoed back in an
encoded form redacted too."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.proxy.conftest import (
    ALLOWED_EXTRA_HOST,
    EVIL_HOST,
    Proxy,
    Recorder,
    echo_forms,
)

OUTSIDE = "Refused: the upstream redirected outside acme's allowed hosts; the redirect was not followed"
UNREADABLE = (
    "Refused: the upstream sent a redirect Location that cannot be read unambiguously; "
    "the redirect was not followed"
)


def _get(proxy: Proxy, path: str) -> httpx.Response:
    return httpx.get(f"{proxy.base}/c/acme/{path}", headers={"Authorization": f"Bearer {proxy.token()}"})


@pytest.mark.parametrize(
    ("name", "error"),
    [
        ("same-host-outside", OUTSIDE),
        ("allowed-with-userinfo", OUTSIDE),
        ("backslash-userinfo", UNREADABLE),
        ("backslash-path", UNREADABLE),
        ("unparsable", UNREADABLE),
        ("bad-port", UNREADABLE),
        ("non-ascii", UNREADABLE),
    ],
)
def test_redirects_the_docs_refuse_are_refused_audited_and_not_followed(
    proxy: Proxy, upstream: Recorder, evil: Recorder, name: str, error: str
) -> None:
    r = _get(proxy, f"redirect/{name}")
    assert (r.status_code, r.json()) == (502, {"error": error})
    assert "location" not in r.headers
    assert evil.requests() == [] and EVIL_HOST not in proxy.dns.asked
    assert ALLOWED_EXTRA_HOST not in proxy.dns.asked
    assert [s.target for s in upstream.requests()] == [f"/api/redirect/{name}"]
    [event] = proxy.audit("PROXY")[:1]
    assert (event["status"], event["success"], event["error"]) == (502, False, error)


def test_the_allowed_redirects_still_pass(proxy: Proxy) -> None:
    inside = _get(proxy, "redirect/inside")
    assert inside.status_code == 302 and inside.headers["location"].startswith(f"{proxy.base}/c/acme/")
    allowed = _get(proxy, "redirect/allowed")
    assert allowed.headers["location"] == f"https://{ALLOWED_EXTRA_HOST}/archive.tar.gz"


def test_the_decoded_body_is_capped_and_the_refusal_audited(proxy: Proxy) -> None:
    r = _get(proxy, "bomb")
    assert r.status_code == 502
    assert r.json() == {
        "error": "Refused: the upstream response is larger than 10 MiB once decoded; reading stopped there"
    }
    [event] = proxy.audit("PROXY")[:1]
    assert (event["status"], event["success"]) == (502, False)


def test_an_encoding_that_cannot_be_decoded_with_a_bound_is_refused(proxy: Proxy) -> None:
    r = _get(proxy, "brotli")
    assert r.status_code == 502
    assert "unsupported content encoding (br)" in r.json()["error"]
    assert proxy.audit("PROXY")[0]["status"] == 502


@pytest.mark.parametrize("secret", ["upstream-secret-CRED-7f3a9c1e5b", "s3cr3t/+=&?~ok 01234 ÿ"[:-2]])
def test_a_credential_echoed_encoded_is_redacted_in_every_form(proxy: Proxy, secret: str) -> None:
    proxy.gateway.credentials.save(proxy.principal.user.id, "acme", {"token": secret})
    r = _get(proxy, "echo-forms")
    assert r.status_code == 200
    forms = echo_forms(secret.encode())
    body = r.json()
    text = r.text + json.dumps(dict(r.headers))
    for name, value in forms.items():
        assert value not in text, name
        assert "[REDACTED]" in body[name], (name, body[name])
    assert r.headers["x-echo-b64"] == "[REDACTED]"


def test_a_non_ascii_response_header_comes_back_byte_for_byte(proxy: Proxy) -> None:
    """The upstream's header bytes are returned as they came (before the proxy's own HTTP/1.1
    client, any non-ASCII header value made the answer a 502)."""
    import socket
    from urllib.parse import urlsplit

    address = urlsplit(proxy.base)
    with socket.create_connection((address.hostname, address.port), timeout=10) as sock:
        sock.sendall(
            f"GET /c/acme/non-ascii-header HTTP/1.1\r\nHost: {address.netloc}\r\n"
            f"Authorization: Bearer {proxy.token()}\r\nConnection: close\r\n\r\n".encode()
        )
        raw = b""
        while chunk := sock.recv(65536):
            raw += chunk
    head = raw.split(b"\r\n\r\n", 1)[0]
    assert head.startswith(b"HTTP/1.1 200")
    assert b"\r\nx-utf8: caf\xc3\xa9" in head and b"\r\nx-latin1: caf\xe9" in head
