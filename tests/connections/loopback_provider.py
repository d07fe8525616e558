"""A loopback OAuth provider and API that ENFORCE one declared token-request style.

`LoopbackProvider(style)` listens on 127.0.0.1 (a thread; stopped when its context exits) and serves:

  GET  /authorize          records the PKCE challenge and redirect URI, redirects back with a code
  POST /token              authorization_code and refresh_token grants in exactly the configured
                           style; anything else is refused the way providers refuse it (400/401)
  GET  /api/whoami         a protected API: 401 (with the configured body) unless the bearer token is
                           the current one
  GET  /v1/balance         an API-key check (Stripe-like): 200 for `good_key`, 401 with a message else
  POST /test/revoke        the provider ends every live access token (a session timeout); no expiry
                           was ever announced
  GET  /.well-known/openid-configuration, /jwks
                           it is an OpenID provider too: a code whose /authorize carried a `nonce`
                           is exchanged for an ID token (RS256) naming the `login_hint` as a
                           verified email

Refresh tokens rotate; presenting a used one is a replay, refused with invalid_grant. `stats`
counts what happened, for the tests' exact assertions.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

__all__ = ["LoopbackProvider", "Style", "loopback_provider"]


@dataclass(frozen=True)
class Style:
    """What the token endpoint insists on."""

    body: Literal["form", "json"] = "form"
    client_auth: Literal["client_secret_post", "client_secret_basic"] = "client_secret_post"
    headers: tuple[tuple[str, str], ...] = ()
    # True: the code exchange must carry the right code_verifier. False: the provider knows no PKCE
    # and, like Notion, refuses any body field it does not document.
    pkce: bool = True
    # The token response: expires_in (None: not announced, like Salesforce) and extra fields.
    expires_in: int | None = 3600
    extra: tuple[tuple[str, str], ...] = ()
    # The body of a 401 from the protected API.
    rejected_body: Any = field(default_factory=lambda: {"error": "invalid_token"})


CLIENT_ID = "loopback-client"
CLIENT_SECRET = "loop/back+secret="  # characters that must be form-encoded inside HTTP Basic


@dataclass
class LoopbackProvider:
    style: Style
    good_key: str = "sk_test_good"
    url: str = ""
    stats: dict[str, int] = field(
        default_factory=lambda: {
            "code_grants": 0,
            "refresh_grants": 0,
            "refused": 0,
            "api_calls": 0,
            "api_rejected": 0,
            "key_checks": 0,
            "failed_refreshes": 0,
        }
    )
    refusals: list[str] = field(default_factory=list)
    delay: float = 0.0  # seconds the token endpoint takes (widens the race window)
    # When set, every refresh grant is answered with this (status, body): a provider that is down
    # (503) or refuses the grant (400 invalid_grant). Counted in stats["failed_refreshes"].
    fail_refresh: tuple[int, dict[str, Any]] | None = None
    _codes: dict[str, tuple[str, str]] = field(default_factory=dict)  # code -> (challenge, redirect_uri)
    _oidc: dict[str, tuple[str, str]] = field(default_factory=dict)  # code -> (nonce, login_hint)
    _live_refresh: set[str] = field(default_factory=set)
    _live_access: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def token_response(self) -> dict[str, Any]:
        access, refresh = "at-" + secrets.token_urlsafe(8), "rt-" + secrets.token_urlsafe(8)
        self._live_access.add(access)
        self._live_refresh.add(refresh)
        body: dict[str, Any] = {"access_token": access, "refresh_token": refresh, "token_type": "Bearer"}
        if self.style.expires_in is not None:
            body["expires_in"] = self.style.expires_in
        body.update(dict(self.style.extra))
        return body

    def id_token(self, nonce: str, email: str) -> str:
        import time

        import jwt

        now = int(time.time())
        claims = {"iss": self.url, "aud": CLIENT_ID, "sub": "sub-" + email, "iat": now, "exp": now + 300}
        claims.update(nonce=nonce, email=email, email_verified=True)
        return jwt.encode(claims, _signing_key(), algorithm="RS256", headers={"kid": "loop"})

    def revoke_access(self) -> None:
        with self._lock:
            self._live_access.clear()


def _handler(p: LoopbackProvider) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # quiet
            pass

        def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
            raw = json.dumps(body, separators=(",", ":")).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(raw)

        def _refuse(self, status: int, error: str, why: str) -> None:
            with p._lock:
                p.stats["refused"] += 1
                p.refusals.append(why)
            self._send(status, {"error": error, "error_description": why})

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            q = {k: v[0] for k, v in parse_qs(url.query).items()}
            if url.path == "/.well-known/openid-configuration":
                return self._send(
                    200,
                    {
                        "issuer": p.url,
                        "authorization_endpoint": f"{p.url}/authorize",
                        "token_endpoint": f"{p.url}/token",
                        "jwks_uri": f"{p.url}/jwks",
                        "id_token_signing_alg_values_supported": ["RS256"],
                        "token_endpoint_auth_methods_supported": [p.style.client_auth],
                    },
                )
            if url.path == "/jwks":
                from jwt.algorithms import RSAAlgorithm

                public = json.loads(RSAAlgorithm.to_jwk(_signing_key().public_key()))
                return self._send(200, {"keys": [{**public, "kid": "loop", "use": "sig", "alg": "RS256"}]})
            if url.path == "/authorize":
                code = "code-" + secrets.token_urlsafe(8)
                with p._lock:
                    p._codes[code] = (q.get("code_challenge", ""), q.get("redirect_uri", ""))
                    if "nonce" in q:
                        p._oidc[code] = (q["nonce"], q.get("login_hint", ""))
                target = q["redirect_uri"] + "?" + urlencode({"code": code, "state": q.get("state", "")})
                self.send_response(302)
                self.send_header("Location", target)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            token = self.headers.get("Authorization", "").removeprefix("Bearer ")
            if url.path == "/api/whoami":
                with p._lock:
                    p.stats["api_calls"] += 1
                    ok = token in p._live_access
                    if not ok:
                        p.stats["api_rejected"] += 1
                if ok:
                    self._send(200, {"sub": "ada", "token_suffix": token[-6:]})
                else:
                    self._send(401, p.style.rejected_body)
                return
            if url.path == "/v1/balance":
                with p._lock:
                    p.stats["key_checks"] += 1
                if token == p.good_key:
                    self._send(200, {"object": "balance", "available": [{"amount": 0, "currency": "usd"}]})
                else:
                    masked = token[:8] + "*" * max(0, len(token) - 12) + token[-4:]
                    self._send(
                        401,
                        {
                            "error": {
                                "message": f"Invalid API Key provided: {masked}",
                                "type": "invalid_request_error",
                            }
                        },
                    )
                return
            self._send(404, {"error": "not_found"})

        def do_POST(self) -> None:
            url = urlsplit(self.path)
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if url.path == "/test/revoke":
                p.revoke_access()
                self._send(200, {"revoked": True})
                return
            if url.path != "/token":
                self._send(404, {"error": "not_found"})
                return
            if p.delay:
                threading.Event().wait(p.delay)
            self._token(raw)

        def _token(self, raw: bytes) -> None:
            style = p.style
            ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip()
            if style.body == "json":
                if ctype != "application/json":
                    return self._refuse(400, "invalid_request", f"expected a JSON body, got {ctype!r}")
                try:
                    body = json.loads(raw)
                except ValueError:
                    return self._refuse(400, "invalid_request", "body is not JSON")
                if not isinstance(body, dict) or not all(isinstance(v, str) for v in body.values()):
                    return self._refuse(400, "invalid_request", "body is not a JSON object of strings")
            else:
                if ctype != "application/x-www-form-urlencoded":
                    return self._refuse(400, "invalid_request", f"expected a form body, got {ctype!r}")
                body = {k: v[0] for k, v in parse_qs(raw.decode(), keep_blank_values=True).items()}
            for name, value in style.headers:
                if self.headers.get(name) != value:
                    return self._refuse(400, "invalid_request", f"missing header {name}: {value}")
            basic = self.headers.get("Authorization", "")
            if style.client_auth == "client_secret_basic":
                if "client_secret" in body:
                    return self._refuse(401, "invalid_client", "client_secret in the body; Basic expected")
                try:
                    pair = base64.b64decode(basic.removeprefix("Basic "), validate=True).decode()
                except ValueError:
                    return self._refuse(401, "invalid_client", "no HTTP Basic client authentication")
                cid, _, secret = pair.partition(":")
                if not basic.startswith("Basic ") or (unquote(cid), unquote(secret)) != (
                    CLIENT_ID,
                    CLIENT_SECRET,
                ):
                    return self._refuse(401, "invalid_client", "wrong HTTP Basic client credentials")
            else:
                if basic:
                    return self._refuse(
                        401, "invalid_client", "Authorization header; body credentials expected"
                    )
                if (body.get("client_id"), body.get("client_secret")) != (CLIENT_ID, CLIENT_SECRET):
                    return self._refuse(401, "invalid_client", "wrong client credentials in the body")
            grant = body.get("grant_type")
            if grant == "authorization_code":
                allowed = {"grant_type", "code", "redirect_uri", "client_id", "client_secret"}
                if style.pkce:
                    allowed.add("code_verifier")
                unknown = set(body) - allowed
                if unknown:
                    return self._refuse(400, "invalid_request", f"unknown fields {sorted(unknown)}")
                with p._lock:
                    found = p._codes.pop(str(body.get("code")), None)
                if found is None:
                    return self._refuse(400, "invalid_grant", "unknown or used code")
                challenge, redirect_uri = found
                if body.get("redirect_uri") != redirect_uri:
                    return self._refuse(400, "invalid_grant", "redirect_uri differs")
                if style.pkce:
                    verifier = str(body.get("code_verifier") or "")
                    digest = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=")
                    if not challenge or digest.decode() != challenge:
                        return self._refuse(400, "invalid_grant", "PKCE verification failed")
                with p._lock:
                    p.stats["code_grants"] += 1
                    answer = p.token_response()
                    signed_in = p._oidc.pop(str(body.get("code")), None)
                if signed_in is not None:
                    answer["id_token"] = p.id_token(*signed_in)
                return self._send(200, answer)
            if grant == "refresh_token" and p.fail_refresh is not None:
                with p._lock:
                    p.stats["failed_refreshes"] += 1
                return self._send(*p.fail_refresh)
            if grant == "refresh_token":
                with p._lock:
                    token = str(body.get("refresh_token"))
                    if token not in p._live_refresh:
                        p.stats["refused"] += 1
                        p.refusals.append("refresh token replayed or unknown")
                        p._live_refresh.clear()  # a replay revokes the whole grant
                        return self._send(400, {"error": "invalid_grant", "error_description": "replayed"})
                    p._live_refresh.discard(token)  # rotation
                    p.stats["refresh_grants"] += 1
                    answer = p.token_response()
                return self._send(200, answer)
            return self._refuse(400, "unsupported_grant_type", f"grant_type {grant!r}")

    return Handler


class _Server(ThreadingHTTPServer):
    request_queue_size = 128  # tests open dozens of connections at once; the default backlog is 5


_KEY_LOCK = threading.Lock()


def _signing_key() -> Any:
    """The provider's ID-token key: made once, on first use (its request threads may ask at once)."""
    with _KEY_LOCK:
        return _make_key()


@functools.cache
def _make_key() -> Any:
    from cryptography.hazmat.primitives.asymmetric import rsa

    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@contextmanager
def loopback_provider(style: Style, **kw: Any) -> Iterator[LoopbackProvider]:
    provider = LoopbackProvider(style, **kw)
    server = _Server(("127.0.0.1", 0), _handler(provider))
    server.daemon_threads = True
    provider.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield provider
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
