"""The curl proxy: /c/<integration>/<path> with a curl_session token, forwarded to the integration's
base URL with the user's real credential injected.

Order of checks (each refusal is final, nothing is sent upstream):
  1. the Workbench token: signature, expiry, audience "<public_url>/c", type, the integration in it;
  2. the path: decoded fully, it must stay below the base URL (see guard.py);
  3. the user's credential (refreshed if stale);
  4. the destination: through workbench.guard.egress (the base URL's host resolved once, every answer
     public, connected to by the checked address; the decoded body capped).
Redirects are never followed. A Location below the base URL is rewritten to the proxy URL; an https
one on another of the integration's allowed hosts is passed through (the credential never goes
there); anything else, including an unreadable Location, is refused.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import functools
import hashlib
import json
import re
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, cast, overload
from urllib.parse import quote, quote_plus, urljoin, urlsplit

import httpx

from workbench.connections.credentials import token_of
from workbench.errors import AuthError, CredentialError, UpstreamTimeout, WorkbenchError, upstream_timeout
from workbench.guard import deadline
from workbench.guard.bodylimit import BodyLimit, BodyRule, BodyTooLarge, guarded_app, json_413
from workbench.guard.egress import CheckedUrl, EgressRefused, Resolver
from workbench.guard.http1 import Http1Client, Reply
from workbench.guard.outage import OutageGuard
from workbench.identity.es256 import unverified_header
from workbench.observability import log_event
from workbench.proxy.guard import Refused, check_path, location_inside
from workbench.services.curl import TOKEN_TYPE

if TYPE_CHECKING:
    from starlette.routing import Route
    from starlette.types import Message, Receive, Scope, Send

    from workbench.composition import Gateway
    from workbench.manifest import Manifest
    from workbench.settings import Settings
    from workbench.stores import Connection, User

__all__ = ["BODY_RULES", "CurlProxy", "DirectProxy", "ProxyApp", "create_proxy_app", "proxy_routes"]

METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
MAX_REQUEST_BYTES = 6 * 1024 * 1024  # the Lambda payload limit
MAX_RESPONSE_BYTES = 10 * 1024 * 1024  # decoded: a compressed body counts at its inflated size
# Per upstream call, shrunk to what is left of the request's deadline (workbench/guard/deadline.py).
UPSTREAM_SECONDS, UPSTREAM_CONNECT_SECONDS = 25.0, 5.0
_TOO_LARGE = {"error": "Request body too large for the proxy"}
# A body over the cap is refused while it streams in (BodyLimit); after the token check it is an
# audited refusal (_read_body), before it (no valid token) this shape answers.
BODY_RULES = [BodyRule("/c/", MAX_REQUEST_BYTES, json_413(lambda exc: _TOO_LARGE))]
_RAW_TARGET = re.compile(r"^/c/([a-z0-9][a-z0-9_-]{0,63})(/.*)?$")

# Request headers a caller may pass through; everything else (Authorization, Cookie, Host,
# Forwarded, hop-by-hop, ...) is dropped. Provider-specific `X-*` and `*-Version` headers pass.
_FORWARD_REQUEST = frozenset(
    {
        "accept",
        "accept-language",
        "content-type",
        "content-language",
        "if-match",
        "if-none-match",
        "if-modified-since",
        "if-unmodified-since",
        "range",
        "prefer",
        "user-agent",
    }
)
_FORWARD_REQUEST_PATTERN = re.compile(r"^(x-[a-z0-9-]+|[a-z0-9]+-version)$")
# Routing hints some upstream front ends honour (path/host overrides) never pass through.
_NEVER_FORWARD_PREFIXES = (
    "x-forwarded-",
    "x-real-ip",
    "x-amz",
    "x-workbench",
    "x-original-",
    "x-rewrite-",
    "x-host",
    "x-http-host-override",
    "x-envoy-",
)
_RETURN_RESPONSE = frozenset(
    {
        "content-type",
        "content-language",
        "content-disposition",
        "content-range",
        "accept-ranges",
        "cache-control",
        "etag",
        "last-modified",
        "expires",
        "vary",
        "retry-after",
        "link",
    }
)
_RETURN_RESPONSE_PATTERN = re.compile(r"^(x-[a-z0-9-]+|ratelimit-[a-z-]+)$")
_JWT = re.compile(r"eyJ[A-Za-z0-9_-]+\.eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*")
_API_KEY = re.compile(r"wb_[A-Za-z0-9]{12}_[A-Za-z0-9_-]{43}")
_MIN_SECRET_LEN = 8
_MAX_VERIFIED = 4096  # curl_session tokens whose signature this instance checked moments ago
_NOT_SECRET_KEYS = frozenset(
    {"token_type", "scope", "expires_in", "expires_at", "name", "domain", "path", "expires", "sameSite"}
)


@dataclasses.dataclass(slots=True)
class _Found:
    """The user's connection to the requested integration, as one store trip found it."""

    conn: Connection | None
    connected: bool
    # Decrypted, when usable without a refresh (kept out of the repr).
    credential: dict[str, Any] | None = dataclasses.field(default=None, repr=False)
    problem: CredentialError | None = None  # why the stored credential cannot be used


class _Denied(WorkbenchError):
    """A refusal after authentication: JSON body, status, audited."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        super().__init__(body.get("error"))
        self.status = status
        self.body = body


class Request:
    """What the proxy reads of a request, on the ASGI scope and receive it came with: the method,
    the headers, the body. The proxy's requests are served without Starlette (its import is a good
    part of a cold start); `handle` takes Starlette's Request too (the routes of a local gateway),
    which this one answers like (tests/proxy/test_light_asgi.py holds them to each other)."""

    __slots__ = ("_body", "_receive", "headers", "scope")

    def __init__(self, scope: Scope, receive: Receive) -> None:
        self.scope = scope
        self._receive = receive
        self._body: bytes | None = None
        self.headers = _Headers(scope["headers"])

    @property
    def method(self) -> str:
        return str(self.scope["method"])

    async def body(self) -> bytes:
        if self._body is None:
            chunks: list[bytes] = []
            while True:
                message: Message = await self._receive()
                if message["type"] == "http.disconnect":
                    from starlette.requests import ClientDisconnect

                    raise ClientDisconnect()
                if message["type"] == "http.request":
                    chunks.append(message.get("body", b""))
                    if not message.get("more_body", False):
                        break
            self._body = b"".join(chunks)
        return self._body


class _Headers:
    """A request's headers as Starlette's `Headers` gives them: names as sent (ASGI: lower case),
    Latin-1, repeated ones kept; `get` finds the first, whatever the case asked for."""

    __slots__ = ("raw",)

    def __init__(self, raw: list[tuple[bytes, bytes]]) -> None:
        self.raw = raw

    @overload
    def get(self, key: str) -> str | None: ...
    @overload
    def get(self, key: str, default: str) -> str: ...
    def get(self, key: str, default: str | None = None) -> str | None:
        wanted = key.lower().encode("latin-1")
        for name, value in self.raw:
            if name == wanted:
                return value.decode("latin-1")
        return default

    def items(self) -> list[tuple[str, str]]:
        return [(name.decode("latin-1"), value.decode("latin-1")) for name, value in self.raw]


class Response:
    """An answer as Starlette's `Response(content, status, headers, media_type)` sends it: the
    headers given (names lower-cased, Latin-1), then Content-Length unless given (none for 1xx,
    204, 304) and Content-Type when `media_type` is set and none was given (text/* with UTF-8)."""

    __slots__ = ("body", "raw_headers", "status_code")

    def __init__(
        self,
        content: bytes | str,
        status_code: int = 200,
        headers: dict[str, str] | None = None,
        media_type: str | None = None,
    ) -> None:
        self.status_code = status_code
        self.body = content.encode() if isinstance(content, str) else content
        raw = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in (headers or {}).items()]
        names = {name for name, _ in raw}
        if b"content-length" not in names and not (status_code < 200 or status_code in (204, 304)):
            raw.append((b"content-length", str(len(self.body)).encode("latin-1")))
        if media_type is not None and b"content-type" not in names:
            if media_type.startswith("text/") and "charset=" not in media_type.lower():
                media_type += "; charset=utf-8"
            raw.append((b"content-type", media_type.encode("latin-1")))
        self.raw_headers = raw

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        await send({"type": "http.response.body", "body": self.body})


def _json(status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> Response:
    return Response(json.dumps(body), status, headers=headers, media_type="application/json")


def _unauthorized(detail: str, integration: str = "") -> Response:
    log_event("proxy_refused", integration=integration, reason=detail)
    return _json(
        401,
        {"error": "Unauthorized", "message": detail},
        {"WWW-Authenticate": 'Bearer realm="workbench-curl-proxy", error="invalid_token"'},
    )


def _raw_target(request: Request) -> str:
    """The request path as the caller sent it (still percent-encoded)."""
    raw = request.scope.get("raw_path")
    if isinstance(raw, bytes):
        return raw.decode("latin-1").split("?", 1)[0]
    event = request.scope.get("aws.event")  # an adapter without raw_path: the event keeps rawPath
    if isinstance(event, dict) and isinstance(event.get("rawPath"), str):
        path: str = event["rawPath"]
        at = path.find("/c/")
        return path[at:] if at > 0 else path
    return quote(request.scope["path"], safe="/:;=,+!$&'()*~@")


def _secrets_in(value: Any) -> Iterable[str]:
    """Credential values worth scrubbing from what comes back (not token types, scopes, cookie names)."""
    if isinstance(value, str):
        if len(value) >= _MIN_SECRET_LEN:
            yield value
    elif isinstance(value, dict):
        for key, v in value.items():
            if key not in _NOT_SECRET_KEYS:
                yield from _secrets_in(v)
    elif isinstance(value, list):
        for v in value:
            yield from _secrets_in(v)


def _redactions(cred: Any, injected: dict[str, str], *, also: Iterable[bytes] = ()) -> list[bytes]:
    """Every form of every credential value to scrub from what goes back to the caller, longest first."""
    plain = frozenset({s.encode() for s in (*_secrets_in(cred), *_secrets_in(injected))}) | {
        p.encode() for v in injected.values() for p in v.split() if len(p) >= _MIN_SECRET_LEN
    }
    forms = _forms_of(plain)
    if not also:
        return forms
    return sorted(set(forms) | set(also), key=len, reverse=True)


# The encodings of a credential's values are the same on every request that uses it: worked out
# once per set of values (a few dozen regex/base64 passes) and kept for the few credentials in use.
_FORMS_KEPT = 256
_forms_cache: dict[frozenset[bytes], list[bytes]] = {}


def _forms_of(plain: frozenset[bytes]) -> list[bytes]:
    known = _forms_cache.get(plain)
    if known is None:
        known = sorted({form for s in plain for form in secret_forms(s)}, key=len, reverse=True)
        if len(_forms_cache) >= _FORMS_KEPT:
            _forms_cache.pop(next(iter(_forms_cache)))  # the oldest entry: dicts keep insertion order
        _forms_cache[plain] = known
    return list(known)  # the caller's own copy


def secret_forms(secret: bytes) -> set[bytes]:
    """The ways an upstream may echo `secret` back: as is, percent-encoded (either hex case,
    `+` for space or not), and base64 (standard and URL-safe alphabets, padded or not, and
    also the characters that only the secret decides when it sits at any offset inside a
    longer base64 text, such as the password in a Basic header)."""
    forms = {secret}
    for encoded in (quote(secret, safe=""), quote_plus(secret, safe="")):
        forms.add(encoded.encode())
        forms.add(re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), encoded).encode())
    for offset in range(3):
        raw = base64.b64encode(b"\0" * offset + secret)
        start = -(-8 * offset // 6)  # the first character with no bit from the padding bytes
        end = 8 * (offset + len(secret)) // 6  # the last character with no bit from what follows
        core = raw[start:end]
        if offset == 0:
            forms.update({raw, raw.rstrip(b"=")})
        if len(core) >= _MIN_SECRET_LEN:
            forms.add(core)
    forms |= {f.translate(_URLSAFE) for f in forms if b"+" in f or b"/" in f}
    return {f for f in forms if len(f) >= _MIN_SECRET_LEN}


_URLSAFE = bytes.maketrans(b"+/", b"-_")


def _scrub(data: bytes, secrets: list[bytes]) -> bytes:
    for secret in secrets:
        data = data.replace(secret, b"[REDACTED]")
    return data


class CurlProxy:
    def __init__(self, gateway: Gateway, resolver: Resolver | None = None) -> None:
        self.gw = gateway
        policy = (
            gateway.egress if resolver is None else dataclasses.replace(gateway.egress, resolver=resolver)
        )
        self.policy = policy
        # Upstream connections are kept and reused per (host, checked address): every request still
        # resolves its host and checks every answer, and goes out on a kept connection only to an
        # address of that answer (workbench.guard.http1, the rules of egress's per_address). An idle
        # connection the upstream wrote to is closed, never reused. What a request carries (its
        # credential headers) is its own: no client object, so no cookie jar to share.
        self.upstream = Http1Client(policy, max_response_bytes=MAX_RESPONSE_BYTES)
        # A token's signature is checked once per instance for a few seconds (the auth cache's
        # time, never past its expiry); who minted it is checked on every request (`_holder`).
        self._verified: dict[bytes, tuple[dict[str, Any], float]] = {}
        self._bases: dict[str, CheckedUrl] = {}

    async def handle(self, request: Request) -> Response:
        started = time.perf_counter()
        raw_target = _raw_target(request)
        match = _RAW_TARGET.match(raw_target)
        if match is None:
            return _json(400, {"error": "Expected /c/<integration>/<path>"})
        integration, raw_rest = match.group(1), match.group(2) or ""
        token = _bearer(request)
        if token is None:
            return _unauthorized(
                "a curl_session token is required (Authorization: Bearer <token>)", integration
            )
        try:
            claims = self._claims(token)
        except AuthError as exc:
            return _unauthorized(str(exc), integration)
        granted = claims.get("integrations")
        if claims.get("typ") != TOKEN_TYPE or not isinstance(granted, list):
            return _unauthorized("not a curl_session token", integration)
        user, revoked, found = await self.gw.store_io.run(
            self._holder, claims, integration if integration in granted else None
        )
        if user is None:
            return _unauthorized("not a curl_session token", integration)
        if revoked is not None:
            return _unauthorized(revoked, integration)
        audit: dict[str, Any] = {
            "action": "PROXY",
            "user": user.id,
            "integration": integration,
            "method": request.method,
            "path": raw_rest or "/",
            "via": "curl_session",
            "session": claims.get("jti"),
        }
        try:
            if integration not in granted:
                raise _Denied(403, {"error": f"This curl session does not grant {integration}"})
            methods = claims.get("methods")
            if methods is not None and request.method not in methods:
                raise _Denied(
                    403,
                    {
                        "error": f"This curl session is {claims.get('grant') or 'read-only'}: it allows only "
                        f"{', '.join(methods) if isinstance(methods, list) else 'reads'}, not {request.method}. "
                        "The user can change the grant of the key or client that minted it."
                    },
                )
            response = await self._forward(request, integration, raw_rest, token, user.id, found)
            await self._audit(audit, started, response.status_code, None)
            return response
        except _Denied as exc:
            await self._audit(audit, started, exc.status, str(exc.body.get("message") or exc.body["error"]))
            return _json(exc.status, exc.body)
        except Exception as exc:  # never a bare 500, and never unaudited
            log_event("proxy_failed", integration=integration, error=type(exc).__name__)
            body = {
                "error": f"Proxy failure: the upstream answer could not be processed ({type(exc).__name__})"
            }
            await self._audit(audit, started, 502, body["error"])
            return _json(502, body)

    def _claims(self, token: str) -> dict[str, Any]:
        key = hashlib.sha256(token.encode()).digest()
        now = self.gw.clock()
        hit = self._verified.get(key)
        if hit is not None and hit[1] > now:
            return hit[0]
        claims = self.gw.curl.verify(token)
        keep = min(float(claims["exp"]), now + self.gw.settings.auth_cache_seconds)
        if keep > now:
            if len(self._verified) >= _MAX_VERIFIED:
                self._verified = {k: v for k, v in self._verified.items() if v[1] > now}
                if len(self._verified) >= _MAX_VERIFIED:
                    self._verified.clear()
            self._verified[key] = (claims, keep)
        return claims

    def _holder(
        self, claims: dict[str, Any], integration: str | None
    ) -> tuple[User | None, str | None, _Found | None]:
        """The store reads of a request in one round trip (CurlSessions.read_holder), on the store
        pool: the token's user; why its minting credential no longer stands behind it; and, for an
        integration the token grants, the user's connection, whether it is usable, and its
        credential decrypted when it needs no refresh."""
        manifest = self.gw.registry.manifest(integration) if integration else None
        found_now = self.gw.curl.read_holder(claims, manifest.name if manifest is not None else None)
        user = found_now.user
        if user is None:
            return None, None, None
        revoked = self.gw.curl.binding_problem(
            claims, api_key=found_now.api_key, grant_live=found_now.refresh_token
        )
        if manifest is None or revoked is not None:
            return user, revoked, None
        conn = found_now.connection
        found = _Found(conn, self.gw.credentials.is_connected(manifest, conn))
        if found.connected and conn is not None:
            try:
                found.credential = self.gw.credentials.ready(manifest, conn)
            except CredentialError as exc:
                found.problem = exc
        return user, revoked, found

    async def _audit(self, event: dict[str, Any], started: float, status: int, error: str | None) -> None:
        success = error is None and status < 400
        duration = time.perf_counter() - started
        await self.gw.runs.audit(
            {
                **event,
                "status": status,
                "success": success,
                "error": error,
                "duration_ms": round(duration * 1000, 3),
                "ts": self.gw.clock(),
            }
        )
        labels = {"integration": event["integration"], "status": str(status)}
        self.gw.metrics.inc("workbench_proxy_requests_total", labels)
        log_event(
            "proxy_request", **{k: v for k, v in event.items() if k != "action"}, status=status, error=error
        )

    async def _forward(
        self,
        request: Request,
        integration: str,
        raw_rest: str,
        token: str,
        user_id: str,
        found: _Found | None,
    ) -> Response:
        manifest = self.gw.registry.manifest(integration)
        if manifest is None or not manifest.curl_proxy or not manifest.base_url:
            raise _Denied(403, {"error": f"{integration} does not have curl proxy enabled"})
        try:
            check_path(raw_rest)
            base = self._base(manifest)
        except Refused as exc:
            raise _Denied(exc.status, {"error": f"Refused: {exc}"}) from exc

        if found is None or not found.connected:
            raise _Denied(403, _not_connected(integration))
        conn = found.conn
        try:
            if found.problem is not None:
                raise found.problem
            cred = found.credential
            if cred is None:  # none stored (no auth), or it must be refreshed first
                cred = await self.gw.credentials.access(manifest, user_id, conn) if conn is not None else {}
        except CredentialError as exc:
            raise _Denied(
                403, {"error": "NOT_CONNECTED", "integration": integration, "message": str(exc)}
            ) from exc
        injected = self.gw.credentials.headers_for(manifest, cred) if conn is not None else {}
        secrets = _redactions(cred, injected)

        body = await _read_body(request)
        query = request.scope.get("query_string", b"").decode("latin-1")
        kids = self._kids()
        if self._carries_workbench_secret(query, kids) or self._carries_workbench_secret(
            body.decode("latin-1"), kids
        ):
            raise _Denied(400, {"error": "Refused: Workbench tokens and API keys must not be sent upstream"})
        headers = {
            name: value
            for name, value in request.headers.items()
            if _forwardable(name) and token not in value and not self._carries_workbench_secret(value, kids)
        }
        lowered = {k.lower() for k in injected}
        headers = {k: v for k, v in headers.items() if k.lower() not in lowered}
        headers.update(injected)

        target = _target(base.url, raw_rest, query)
        timeout = deadline.upstream_timeout(UPSTREAM_SECONDS, connect=UPSTREAM_CONNECT_SECONDS)
        budget = timeout.read or UPSTREAM_SECONDS
        try:
            # The httpx limits bound each connect and each read; this bounds the whole upstream
            # stage (every send, the whole body however slowly it trickles in, its decoding, a
            # refresh and the retry after it) by the same number of seconds, so an upstream that
            # keeps sending, or sends gzip that decodes to nothing, is cut when the request's time
            # is up. Leaving the block closes the upstream connection: nothing of it runs on.
            async with asyncio.timeout(budget):
                upstream = await self._send(request.method, base, target, headers, body, timeout)
                # The provider says the token is no longer valid: refresh once (the engine's single
                # flight) and send the request once more with the new token.
                sent = token_of(cred, "access") if conn is not None else None
                if sent is not None and await self.gw.credentials.rejects(manifest, upstream.response()):
                    cred = await self.gw.credentials.after_rejection(manifest, user_id, sent)
                    if token_of(cred, "access") not in (None, sent):
                        injected = self.gw.credentials.headers_for(manifest, cred)
                        headers.update(injected)
                        secrets = _redactions(cred, injected, also=secrets)
                        upstream = await self._send(request.method, base, target, headers, body, timeout)
        except TimeoutError as exc:  # the stage as a whole ran out: the same words, the same limit
            raise _Denied(504, {"error": str(UpstreamTimeout(budget))}) from exc
        except CredentialError as exc:  # the refresh after a rejection failed
            raise _Denied(
                403, {"error": "NOT_CONNECTED", "integration": integration, "message": str(exc)}
            ) from exc
        except EgressRefused as exc:
            text = str(exc)
            raise _Denied(
                exc.status, {"error": text if text.startswith("Refused") else f"Refused: {text}"}
            ) from exc
        except httpx.TimeoutException as exc:  # the engine's wording: which limit, how many seconds
            raise _Denied(504, {"error": str(upstream_timeout(exc) or UpstreamTimeout(None))}) from exc
        except httpx.HTTPError as exc:
            raise _Denied(502, {"error": f"Upstream unreachable ({type(exc).__name__})"}) from exc
        return self._response(upstream, manifest, integration, base.url, target, secrets)

    async def _send(
        self,
        method: str,
        base: CheckedUrl,
        target: bytes,
        headers: dict[str, str],
        body: bytes,
        limits: httpx.Timeout,
    ) -> Reply:
        """One request, read whole, on the proxy's own HTTP/1.1 client (workbench.guard.http1: the
        egress rules of EgressTransport(per_address=True), which stays its differential oracle).
        No client object in between: no redirect is followed or parsed before the proxy applies its
        own, documented redirect policy, and no cookie jar is shared between requests."""
        fields = [(name.encode("ascii"), value.encode("ascii")) for name, value in headers.items()]
        if b"user-agent" not in {name.lower() for name, _ in fields}:
            fields.insert(0, (b"User-Agent", b"workbench/0.1"))
        return await self.upstream.send(method, base, target, fields, body, limits)

    def _kids(self) -> frozenset[str]:
        """The key ids Workbench signs with now (read once per request: keys rotate)."""
        return self.gw.curl.signing_kids()

    def _carries_workbench_secret(self, text: str, kids: frozenset[str]) -> bool:
        """A Workbench API key, or a JWT signed by one of Workbench's keys, anywhere in `text`."""
        if _API_KEY.search(text):
            return True
        for match in _JWT.finditer(text):
            try:
                if unverified_header(match.group(0)).get("kid") in kids:
                    return True
            except AuthError:
                continue
        return False

    def _base(self, manifest: Manifest) -> CheckedUrl:
        """The manifest's base URL once it passed the policy's URL checks (no DNS: those are the
        upstream client's, on every request); remembered, since a manifest's base URL never changes."""
        known = self._bases.get(manifest.base_url)
        if known is not None:
            return known
        try:
            base = self.policy.check_url(manifest.base_url)
        except EgressRefused as exc:
            raise Refused(f"{manifest.name}'s base URL is refused ({exc})", 403) from exc
        self._bases[manifest.base_url] = base
        return base

    def _response(
        self,
        upstream: Reply,
        manifest: Manifest,
        integration: str,
        origin: httpx.URL,
        target: bytes,
        secrets: list[bytes],
    ) -> Response:
        proxy_prefix = f"{self.gw.curl.audience}/{integration}"
        headers: dict[str, str] = {}
        for name, value in upstream.headers():
            lname = name.lower()
            if lname in _RETURN_RESPONSE or (
                _RETURN_RESPONSE_PATTERN.match(lname) and not lname.startswith(_NEVER_FORWARD_PREFIXES)
            ):
                # A repeated header is one, its values joined (as httpx's Headers.items() gave it).
                headers[lname] = f"{headers[lname]}, {value}" if lname in headers else value
        if "link" in headers:
            headers["link"] = headers["link"].replace(
                f"<{manifest.base_url.rstrip('/')}/", f"<{proxy_prefix}/"
            )
        location = upstream.header("location")
        if location is not None:
            moved = self._location(location, manifest, str(origin.copy_with(raw_path=target)), proxy_prefix)
            if moved is not None:
                headers["location"] = moved
            elif 300 <= upstream.status < 400:
                raise _Denied(502, {"error": _redirect_refusal(location, integration)})
        for name, value in list(headers.items()):
            cleaned = _scrub(value.encode("latin-1", "replace"), secrets).decode("latin-1")
            headers[name] = cleaned
        return Response(_scrub(upstream.content, secrets), upstream.status, headers=headers)

    def _location(self, location: str, manifest: Manifest, target: str, proxy_prefix: str) -> str | None:
        """What the caller gets as Location: the proxy URL for a place below the base URL, the URL
        itself for an https place on one of the integration's OTHER allowed hosts, else None."""
        if _unreadable(location):
            return None
        inside = location_inside(urljoin(target, location), manifest.base_url)
        if inside is not None:
            return proxy_prefix + inside
        extra = {h.lower().rstrip(".") for h in manifest.allowed_hosts}
        try:
            checked = self.policy.check_url(location)
        except EgressRefused:
            return None
        if checked.scheme == "https" and checked.host.rstrip(".") in extra:
            return str(checked.url)
        return None


def _unreadable(location: str) -> bool:
    """A Location that parsers may read differently (or not at all): never interpreted. Raw
    non-ASCII counts: the proxy reads header bytes as Latin-1, a browser as UTF-8."""
    if any(ord(c) <= 0x20 or ord(c) >= 0x7F or c == "\\" for c in location):
        return True
    try:
        urlsplit(location).port  # noqa: B018  (parses the authority and port)
    except ValueError:
        return True
    return False


def _redirect_refusal(location: str, integration: str) -> str:
    if _unreadable(location):
        return (
            "Refused: the upstream sent a redirect Location that cannot be read unambiguously; "
            "the redirect was not followed"
        )
    return f"Refused: the upstream redirected outside {integration}'s allowed hosts; the redirect was not followed"


# What httpx sends unchanged in a path and in a query (it percent-encodes `"<>` and, in a path,
# backtick and braces; it removes dot segments, which check_path refuses): a target made only of
# these, with no `/.` in its path, goes as it is; any other is normalised by httpx.URL as before.
# tests/proxy/test_upstream_http1.py holds the two to each other.
_PLAIN_TARGET = re.compile(rb"[-!$%&'()*+,./0-9:;=?@A-Z\[\\\]^_a-z|~]+")


def _target(base: httpx.URL, raw_rest: str, query: str) -> bytes:
    """The request target sent upstream: the base URL's path, the caller's path below it (as the
    caller encoded it) and the caller's query, in the form httpx gives them."""
    target = (base.raw_path.rstrip(b"/") + raw_rest.encode("ascii") or b"/") + (
        b"?" + query.encode("latin-1") if query else b""
    )
    if _PLAIN_TARGET.fullmatch(target) and b"/." not in target.partition(b"?")[0]:
        return target
    return base.copy_with(raw_path=target).raw_path


def _forwardable(name: str) -> bool:
    lname = name.lower()
    if lname.startswith(_NEVER_FORWARD_PREFIXES):
        return False
    return lname in _FORWARD_REQUEST or bool(_FORWARD_REQUEST_PATTERN.match(lname))


def _not_connected(integration: str) -> dict[str, Any]:
    return {
        "error": "NOT_CONNECTED",
        "integration": integration,
        "message": f"{integration} not connected. Use connect('{integration}') to connect.",
    }


def _bearer(request: Request) -> str | None:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


async def _read_body(request: Request) -> bytes:
    try:
        return await request.body()  # at most MAX_REQUEST_BYTES: BodyLimit stops the read past it
    except BodyTooLarge as exc:
        raise _Denied(413, _TOO_LARGE) from exc


def proxy_routes(
    gateway: Gateway, *, resolver: Resolver | None = None, proxy: CurlProxy | None = None
) -> list[Route]:
    from starlette.routing import Route

    proxy = proxy or CurlProxy(gateway, resolver)
    return [
        Route("/c/{integration}", proxy.handle, methods=METHODS),
        Route("/c/{integration}/{rest:path}", proxy.handle, methods=METHODS),
    ]


# What the two routes above match (Starlette's `{integration}` is `[^/]+`, `{rest:path}` is `.*`).
_ROUTED = re.compile(r"^/c/[^/]+(?:/.*)?$")  # no DOTALL, as Starlette compiles them
_METHODS = frozenset(METHODS)


class DirectProxy:
    """The proxy's requests straight to `CurlProxy.handle`, inside the same request deadline and
    body cap as its routes (`proxy_routes` in a `guarded_app`), without the router and the
    exception layers: a request the routes would take (a proxy method on /c/<integration>[/...])
    goes here; `takes(scope)` says which. Everything else (404, 405, the lifespan) is the
    routes' app's."""

    def __init__(self, proxy: CurlProxy, settings: Settings) -> None:
        self.proxy = proxy
        self._app: Any = OutageGuard(
            deadline.DeadlineMiddleware(
                BodyLimit(self._handle, BODY_RULES),
                budget=settings.request_deadline_seconds,
                margin=settings.deadline_margin_seconds,
            )
        )

    @staticmethod
    def takes(scope: Scope) -> bool:
        return (
            scope["type"] == "http"
            and not scope.get("root_path")  # a mounted app: the routes work out the path
            and scope["path"].startswith("/c/")
            and scope["method"] in _METHODS
            and _ROUTED.match(scope["path"]) is not None
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._app(scope, receive, send)

    async def _handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        try:
            response = await self.proxy.handle(request)
        except BodyTooLarge as exc:  # as guarded_app's handler answers it (the proxy reads the body itself)
            # Starlette's JSON answer (imported only then); the renderer reads nothing of the request.
            await BODY_RULES[0].render(cast(Any, request), exc)(scope, receive, send)
            return
        await response(scope, receive, send)


class ProxyApp:
    """The curl proxy's ASGI app: its requests through `DirectProxy`, the rest to the Starlette app
    of its routes (same proxy, same deadline and body cap), built the first time one comes."""

    def __init__(self, proxy: CurlProxy, settings: Settings) -> None:
        self.direct = DirectProxy(proxy, settings)
        self._proxy, self._settings = proxy, settings

    @functools.cached_property
    def app(self) -> Any:
        return guarded_app(
            proxy_routes(self._proxy.gw, proxy=self._proxy),
            BODY_RULES,
            middleware=deadline.middleware(self._settings),
        )

    @property
    def routes(self) -> list[Any]:
        return list(self.app.routes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.direct.takes(scope):
            await self.direct(scope, receive, send)
        else:
            await self.app(scope, receive, send)


def create_proxy_app(gateway: Gateway, *, resolver: Resolver | None = None) -> ProxyApp:
    return ProxyApp(CurlProxy(gateway, resolver), gateway.settings)
