"""A table of hostile requests against a real proxy: every one is refused, nothing reaches an upstream
(so the credential never leaves), and no name is resolved for requests refused on their face."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from workbench.identity.tokens import TokenService

from tests.proxy.conftest import (
    CREDENTIAL,
    EVIL_HOST,
    OTHER_CREDENTIAL,
    UPSTREAM_HOST,
    Proxy,
    Stack,
    raw_request,
)


def _claims(p: Proxy, **over: object) -> dict[str, object]:
    bind = {"via": "api_key", "id": p.principal.credential_id}
    return {"sub": p.principal.user.id, "typ": "curl_session", "integrations": ["acme"], "bind": bind, **over}


def _aud(p: Proxy) -> str:
    return f"{p.base}/c"


def _shifted(p: Proxy, seconds: float, issuer: str | None = None) -> TokenService:
    return TokenService(
        p.gateway.tokens.source, issuer or p.gateway.tokens.issuer, clock=lambda: time.time() + seconds
    )


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _kid(p: Proxy) -> str:
    return p.gateway.tokens.source.signing_keys()[0].kid


def _full_claims(p: Proxy) -> dict[str, object]:
    now = int(time.time())
    return {**_claims(p), "iss": p.gateway.tokens.issuer, "aud": _aud(p), "iat": now, "exp": now + 600}


def forged_same_kid(p: Proxy) -> str:
    other_key = ec.generate_private_key(ec.SECP256R1())
    return jwt.encode(_full_claims(p), other_key, algorithm="ES256", headers={"kid": _kid(p)})


def alg_none(p: Proxy) -> str:
    header = _b64(json.dumps({"alg": "none", "typ": "JWT", "kid": _kid(p)}).encode())
    return f"{header}.{_b64(json.dumps(_full_claims(p)).encode())}."


def hs256_with_public_key(p: Proxy) -> str:
    public = (
        p.gateway.tokens.source.signing_keys()[0]
        .private_key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    signing_input = (
        _b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": _kid(p)}).encode())
        + "."
        + _b64(json.dumps(_full_claims(p)).encode())
    )
    sig = hmac.new(public, signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{_b64(sig)}"


def tampered_integrations(p: Proxy) -> str:
    header, _, sig = p.token("other").split(".")
    payload = jwt.decode(p.token("other"), options={"verify_signature": False})
    payload["integrations"] = ["acme"]
    return f"{header}.{_b64(json.dumps(payload).encode())}.{sig}"


def bearer(make: Callable[[Proxy], str]) -> Callable[[Proxy], dict[str, str]]:
    return lambda p: {"Authorization": f"Bearer {make(p)}"}


def valid(p: Proxy) -> dict[str, str]:
    return {"Authorization": f"Bearer {p.token('acme')}"}


@dataclass
class Case:
    name: str
    target: str
    status: int
    headers: Callable[[Proxy], dict[str, str]] = valid
    dns: dict[str, list[str]] | None = None
    method: str = "GET"
    resolves: bool = False  # the refusal comes after resolving the (legitimate) upstream name
    drop: list[str] = field(default_factory=list)  # names removed from DNS


TOKEN_CASES = [
    Case("no token", "/c/acme/items", 401, headers=lambda p: {}),
    Case("basic scheme", "/c/acme/items", 401, headers=lambda p: {"Authorization": "Basic dXNlcjpwYXNz"}),
    Case("garbage token", "/c/acme/items", 401, headers=bearer(lambda p: "not.a.jwt")),
    Case(
        "expired token",
        "/c/acme/items",
        401,
        headers=bearer(lambda p: _shifted(p, -3600).mint(_claims(p), audience=_aud(p), ttl_seconds=60)),
    ),
    Case(
        "not yet valid token",
        "/c/acme/items",
        401,
        headers=bearer(lambda p: _shifted(p, 3600).mint(_claims(p), audience=_aud(p), ttl_seconds=600)),
    ),
    Case("forged signature, real kid", "/c/acme/items", 401, headers=bearer(forged_same_kid)),
    Case("alg none", "/c/acme/items", 401, headers=bearer(alg_none)),
    Case("HS256 keyed with the public key", "/c/acme/items", 401, headers=bearer(hs256_with_public_key)),
    Case(
        "payload swapped to another integration", "/c/acme/items", 401, headers=bearer(tampered_integrations)
    ),
    Case(
        "MCP audience instead of the proxy's",
        "/c/acme/items",
        401,
        headers=bearer(
            lambda p: p.gateway.tokens.mint(_claims(p), audience=f"{p.base}/mcp", ttl_seconds=600)
        ),
    ),
    Case(
        "another issuer",
        "/c/acme/items",
        401,
        headers=bearer(
            lambda p: _shifted(p, 0, "https://evil.test").mint(_claims(p), audience=_aud(p), ttl_seconds=600)
        ),
    ),
    Case(
        "not a curl_session token",
        "/c/acme/items",
        401,
        headers=bearer(
            lambda p: p.gateway.tokens.mint(_claims(p, typ="access"), audience=_aud(p), ttl_seconds=600)
        ),
    ),
    Case(
        "token of a user that does not exist",
        "/c/acme/items",
        401,
        headers=bearer(
            lambda p: p.gateway.tokens.mint(_claims(p, sub="usr_ghost"), audience=_aud(p), ttl_seconds=600)
        ),
    ),
    Case("token for another integration", "/c/acme/items", 403, headers=bearer(lambda p: p.token("other"))),
    Case(
        "integration without curl proxy",
        "/c/noproxy/items",
        403,
        headers=bearer(
            lambda p: p.gateway.tokens.mint(
                _claims(p, integrations=["noproxy"]), audience=_aud(p), ttl_seconds=600
            )
        ),
    ),
    Case(
        "a Workbench API key",
        "/c/acme/items",
        401,
        headers=bearer(lambda p: p.gateway.auth.mint_key(p.principal.user)),
    ),
    Case("token only in the query", "/c/acme/items?access_token={token}", 401, headers=lambda p: {}),
    Case("a curl token also sent in the query", "/c/acme/items?t={token}", 400),
    Case(
        "an API key sent in the query",
        "/c/acme/items?key={apikey}",
        400,
    ),
]

PATH_CASES = [
    Case("dot-dot", "/c/acme/../secret", 400),
    Case("dot-dot at the end", "/c/acme/items/..", 400),
    Case("single dot", "/c/acme/./items", 400),
    Case("%2e%2e", "/c/acme/%2e%2e/secret", 400),
    Case("%2E%2E upper case", "/c/acme/%2E%2E/secret", 400),
    Case("mixed .%2e", "/c/acme/.%2e/secret", 400),
    Case("%252e%252e double-encoded", "/c/acme/%252e%252e/secret", 400),
    Case("%25252e triple-encoded", "/c/acme/%25252e%25252e/secret", 400),
    Case("..%2f encoded slash", "/c/acme/..%2fsecret", 400),
    Case("%2e%2e%2f all encoded", "/c/acme/%2e%2e%2fsecret", 400),
    Case("..;/ tomcat", "/c/acme/..;/secret", 400),
    Case("double slash", "/c/acme//evil.test/x", 400),
    Case("%2f%2f encoded double slash", "/c/acme/%2f%2fevil.test/x", 400),
    Case("backslash", "/c/acme/..\\secret", 400),
    Case("%5c encoded backslash", "/c/acme/%5c%5cevil.test/x", 400),
    Case("@ userinfo", "/c/acme/@evil.test/x", 400),
    Case("%40 encoded @", "/c/acme/%40evil.test/x", 400),
    Case("absolute URL", "/c/acme/http://evil.test/x", 400),
    Case("absolute URL encoded", "/c/acme/http%3a%2f%2fevil.test/x", 400),
    Case("scheme without slashes", "/c/acme/https:evil.test", 400),
    Case("NUL byte", "/c/acme/items%00.json", 400),
    # Starlette does not route a path with a line break at all: refused before the proxy runs.
    Case("CRLF header injection", "/c/acme/items%0d%0aHost:%20evil.test", 404),
    Case("tab", "/c/acme/items%09x", 400),
    Case("raw DEL", "/c/acme/items\x7f", 400),  # refused by the HTTP server itself
    Case("overlong UTF-8 dots", "/c/acme/%c0%ae%c0%ae/secret", 400),
    Case("fullwidth dots (NFKC)", "/c/acme/%ef%bc%8e%ef%bc%8e/secret", 400),
    Case("IIS %u dots", "/c/acme/%u002e%u002e/secret", 400),
    Case("encoded fragment", "/c/acme/items%23/../x", 400),
    Case("encoded question mark", "/c/acme/%3f/../x", 400),
    Case("raw fragment in the request target", "/c/acme/items#/../../admin", 400),
    # The local server takes origin-form targets only (workbench.runtime.uvicorn_server): refused before routing.
    Case("absolute-form request target", "http://evil.test/c/acme/items", 400),
    Case("integration with userinfo", "/c/acme@evil.test/x", 400),
    Case("integration with port", "/c/acme:80/x", 400),
    Case("encoded integration", "/c/%61cme/items", 400),
    Case("integration traversal", "/c/acme%2f..%2fother/items", 400),
]

DNS_CASES = [
    Case("DNS: RFC 1918 10/8", "/c/acme/items", 403, dns={UPSTREAM_HOST: ["10.0.0.5"]}, resolves=True),
    Case(
        "DNS: RFC 1918 192.168/16", "/c/acme/items", 403, dns={UPSTREAM_HOST: ["192.168.1.10"]}, resolves=True
    ),
    Case("DNS: RFC 1918 172.16/12", "/c/acme/items", 403, dns={UPSTREAM_HOST: ["172.20.0.1"]}, resolves=True),
    Case(
        "DNS: cloud metadata", "/c/acme/items", 403, dns={UPSTREAM_HOST: ["169.254.169.254"]}, resolves=True
    ),
    Case("DNS: link-local", "/c/acme/items", 403, dns={UPSTREAM_HOST: ["169.254.1.1"]}, resolves=True),
    Case("DNS: carrier-grade NAT", "/c/acme/items", 403, dns={UPSTREAM_HOST: ["100.64.0.1"]}, resolves=True),
    Case("DNS: unspecified", "/c/acme/items", 403, dns={UPSTREAM_HOST: ["0.0.0.0"]}, resolves=True),
    Case(
        "DNS: IPv4-mapped private",
        "/c/acme/items",
        403,
        dns={UPSTREAM_HOST: ["::ffff:10.0.0.1"]},
        resolves=True,
    ),
    Case(
        "DNS: IPv6 unique local", "/c/acme/items", 403, dns={UPSTREAM_HOST: ["fd12:3456::1"]}, resolves=True
    ),
    Case("DNS: IPv6 link-local", "/c/acme/items", 403, dns={UPSTREAM_HOST: ["fe80::1"]}, resolves=True),
    Case(
        "DNS: AWS IPv6 metadata", "/c/acme/items", 403, dns={UPSTREAM_HOST: ["fd00:ec2::254"]}, resolves=True
    ),
    Case(
        "DNS: 6to4 wrapping private",
        "/c/acme/items",
        403,
        dns={UPSTREAM_HOST: ["2002:a00:1::1"]},
        resolves=True,
    ),
    Case(
        "DNS: one good, one private answer",
        "/c/acme/items",
        403,
        dns={UPSTREAM_HOST: ["127.0.0.1", "10.1.2.3"]},
        resolves=True,
    ),
    Case("DNS: multicast", "/c/acme/items", 403, dns={UPSTREAM_HOST: ["224.0.0.1"]}, resolves=True),
    Case("DNS: does not resolve", "/c/acme/items", 502, drop=[UPSTREAM_HOST], resolves=True),
]

ALL = TOKEN_CASES + PATH_CASES + DNS_CASES


def test_the_table_is_large_enough() -> None:
    assert len(ALL) >= 30
    assert len({c.name for c in ALL}) == len(ALL)


@pytest.mark.parametrize("case", ALL, ids=[c.name for c in ALL])
def test_hostile_request_is_refused(stack: Stack, case: Case) -> None:
    stack.reset()
    p = stack.proxy
    headers = case.headers(p)
    target = case.target
    if "{token}" in target:
        target = target.replace("{token}", p.token("acme"))
    if "{apikey}" in target:
        target = target.replace("{apikey}", p.gateway.auth.mint_key(p.principal.user))
    if case.dns:
        p.dns.answers.update(case.dns)
    for name in case.drop:
        p.dns.answers.pop(name, None)
    before = len(p.audit("PROXY"))

    r = raw_request(p.port, case.method, target, headers)

    assert r.status == case.status, (r.status, r.body)
    assert stack.upstream.requests() == [] and stack.evil.requests() == []
    assert not stack.upstream.saw_credential() and not stack.evil.saw_credential()
    assert CREDENTIAL.encode() not in r.body and OTHER_CREDENTIAL.encode() not in r.body
    assert "location" not in r.headers
    if r.status == 401:
        assert r.headers["www-authenticate"].startswith("Bearer ")
    assert p.dns.asked == ([UPSTREAM_HOST] if case.resolves else [])
    is_json = r.headers.get("content-type") == "application/json"
    if is_json:
        assert r.json()["error"]
    if case in DNS_CASES or (case in PATH_CASES and is_json and "Expected" not in r.json()["error"]):
        # refused after authentication: audited as a failed PROXY call
        latest = p.audit("PROXY")
        assert len(latest) == before + 1 and latest[0]["success"] is False and latest[0]["status"] == r.status


REDIRECTS = ["evil", "evil-https", "scheme-relative", "outside-base", "userinfo"]


@pytest.mark.parametrize("name", REDIRECTS)
def test_redirect_off_the_integration_is_refused_and_not_followed(stack: Stack, name: str) -> None:
    stack.reset()
    p = stack.proxy
    r = raw_request(p.port, "GET", f"/c/acme/redirect/{name}", valid(p))
    assert r.status == 502
    assert "not followed" in r.json()["error"]
    assert "location" not in r.headers
    assert stack.evil.requests() == []
    assert EVIL_HOST not in p.dns.asked
    assert [s.target for s in stack.upstream.requests()] == [f"/api/redirect/{name}"]


def test_loopback_is_refused_unless_explicitly_allowed(
    tmp_path_factory: pytest.TempPathFactory, stack: Stack
) -> None:
    from tests.proxy.conftest import start_proxy

    stack.reset()
    for scheme, message in (("https", "loopback"), ("http", "must use https")):
        strict, server = start_proxy(
            tmp_path_factory.mktemp("strict"), stack.upstream.port, allow_loopback=False, scheme=scheme
        )
        with server:
            r = raw_request(strict.port, "GET", "/c/acme/items", valid(strict))
        assert r.status == 403
        assert message in r.json()["error"]
    assert stack.upstream.requests() == []
